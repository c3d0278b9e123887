//! The SQL of the store, written once and run on either backend. The statements are plain
//! SQL that SQLite (3.35+) and PostgreSQL both accept (`$n` parameters, `ON CONFLICT`,
//! partial indexes); `on_pool!` expands each body once per concrete driver, so there is no
//! dynamic `Any` layer on the hot path.

use crate::charge::ChargeWriter;
use crate::migrate::{self, Migration};
use crate::{
    BranchPatch, ChargeOutcome, Result, ServicePatch, Store, StoreError, VerificationRecord,
};
use async_trait::async_trait;
use domain::clock::{from_millis, to_millis};
use domain::ip::AllowList;
use domain::model::{
    AuditEntry, Branch, Partner, Party, Plan, Service, ServiceState, Transfer, User,
};
use domain::partner::Permission;
use domain::quota::Quota;
use domain::quota::{QuotaOp, QuotaOpError};
use domain::rate::{Decision, Gcra};
use domain::{BankAccountId, BranchId, JobId, PartnerId, Satang, ServiceId, UserId};
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::Row;
use std::str::FromStr;
use std::time::Duration;
use time::OffsetDateTime;

#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Pg(PgPool),
}

/// SQLite has one writer at a time: this process's group-committing writers (charges, the
/// attempts log) take turns here instead of meeting at the database's lock, where the loser
/// sleeps in SQLite's busy handler. PostgreSQL locks rows: no turn is taken.
#[derive(Clone, Default)]
pub(crate) struct WriteGate(std::sync::Arc<tokio::sync::Mutex<()>>);

impl WriteGate {
    pub(crate) async fn turn(&self, pool: &Pool) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match pool {
            Pool::Sqlite(_) => Some(self.0.lock().await),
            Pool::Pg(_) => None,
        }
    }
}

pub struct SqlStore {
    pool: Pool,
    writer: ChargeWriter,
    attempts: crate::attempts::AttemptWriter,
}

macro_rules! on_pool {
    (pool: $pool:expr, $p:ident => $body:expr) => {
        match $pool {
            $crate::sql::Pool::Sqlite($p) => $body,
            $crate::sql::Pool::Pg($p) => $body,
        }
    };
    ($self:expr, $p:ident => $body:expr) => {
        on_pool!(pool: &$self.pool, $p => $body)
    };
}
pub(crate) use on_pool;

// Column lists are macros so every statement is one `&'static str` built by `concat!`.
macro_rules! service_cols {
    () => {
        "s.id AS s_id, s.name AS s_name, s.limit_quota AS s_limit, \
     s.used_quota AS s_used, s.total_used_quota AS s_total, s.created_at AS s_created, \
     s.state AS s_state, s.expires_at AS s_expires, s.owner_id AS s_owner, \
     COALESCE(u.banned, false) AS s_owner_banned, s.owner_verified AS s_owner_verified, \
     s.billing_anchor AS s_anchor, \
     s.cycle_start AS s_cycle, s.plan AS s_plan, s.rate_limit_rps AS s_rate, \
     COALESCE(pl.rps, 10) AS s_plan_rps, COALESCE(pl.burst, 100) AS s_plan_burst, \
     s.package_id AS s_package, s.subscribed_at AS s_subscribed, \
     s.auto_renew_expiry AS s_renew_expiry, s.auto_renew_quota AS s_renew_quota, \
     s.renewal_seq AS s_renewal_seq, s.credit_satang AS s_credit"
    };
}

macro_rules! branch_cols {
    () => {
        "b.id AS b_id, b.service_id AS b_service, b.name AS b_name, \
     b.is_main AS b_main, b.active AS b_active, b.allow_ips AS b_ips, b.webhook_url AS b_url, \
     b.webhook_secret AS b_secret, b.biller_id AS b_biller, b.limit_quota AS b_limit, b.used_quota AS b_used, \
     b.total_used_quota AS b_total, b.created_at AS b_created, b.cycle_start AS b_cycle, \
     b.sandbox AS b_sandbox"
    };
}

macro_rules! transfer_cols {
    () => {
        "sending_bank, trans_ref, payload, occurred_at, country_code, \
     amount_satang, fee_satang, ref1, ref2, ref3, sender_name_th, sender_name_en, \
     sender_acc_type, sender_account, receiving_bank, receiver_name_th, receiver_name_en, \
     receiver_acc_type, receiver_account, merchant_id"
    };
}

macro_rules! service_from_row {
    ($r:expr) => {{
        let r = &$r;
        Service {
            id: r.try_get::<String, _>("s_id")?.into(),
            name: r.try_get("s_name")?,
            quota: Quota {
                limit: r.try_get("s_limit")?,
                used: r.try_get("s_used")?,
                total_used: r.try_get("s_total")?,
            },
            created_at: from_millis(r.try_get("s_created")?),
            state: {
                let st: String = r.try_get("s_state")?;
                ServiceState::parse(&st)
                    .ok_or_else(|| StoreError::Corrupt(format!("service state {st}")))?
            },
            expires_at: r.try_get::<Option<i64>, _>("s_expires")?.map(from_millis),
            owner_id: r
                .try_get::<Option<String>, _>("s_owner")?
                .map(domain::UserId::from),
            owner_banned: r.try_get("s_owner_banned")?,
            owner_verified: r.try_get("s_owner_verified")?,
            billing_anchor: from_millis(r.try_get("s_anchor")?),
            cycle_start: from_millis(r.try_get("s_cycle")?),
            plan: Plan {
                name: r.try_get("s_plan")?,
                rps: u32::try_from(r.try_get::<i64, _>("s_plan_rps")?).unwrap_or(1),
                burst: u32::try_from(r.try_get::<i64, _>("s_plan_burst")?).unwrap_or(1),
            },
            rate_limit_rps: r
                .try_get::<Option<i64>, _>("s_rate")?
                .and_then(|v| u32::try_from(v).ok()),
            subscription: domain::billing::Subscription {
                package_id: r
                    .try_get::<Option<String>, _>("s_package")?
                    .map(domain::PackageId::from),
                started_at: r
                    .try_get::<Option<i64>, _>("s_subscribed")?
                    .map(from_millis),
                auto_renew: domain::billing::AutoRenew {
                    on_expiry: r.try_get("s_renew_expiry")?,
                    on_quota: r.try_get("s_renew_quota")?,
                },
                renewal_seq: r.try_get("s_renewal_seq")?,
                credit: r.try_get("s_credit")?,
            },
        }
    }};
}

pub(crate) use {service_cols, service_from_row};

macro_rules! branch_from_row {
    ($r:expr) => {{
        let r = &$r;
        let ips: String = r.try_get("b_ips")?;
        Branch {
            id: r.try_get::<String, _>("b_id")?.into(),
            service_id: r.try_get::<String, _>("b_service")?.into(),
            name: r.try_get("b_name")?,
            is_main: r.try_get("b_main")?,
            active: r.try_get("b_active")?,
            allow_ips: decode_ips(&ips)?,
            webhook_url: r.try_get("b_url")?,
            webhook_secret: r.try_get("b_secret")?,
            biller_id: r.try_get("b_biller")?,
            sandbox: r.try_get("b_sandbox")?,
            quota: Quota {
                limit: r.try_get("b_limit")?,
                used: r.try_get("b_used")?,
                total_used: r.try_get("b_total")?,
            },
            created_at: from_millis(r.try_get("b_created")?),
            cycle_start: from_millis(r.try_get("b_cycle")?),
        }
    }};
}

macro_rules! transfer_from_row {
    ($r:expr) => {{
        let r = &$r;
        Transfer {
            trans_ref: r.try_get("trans_ref")?,
            payload: r.try_get("payload")?,
            occurred_at: from_millis(r.try_get("occurred_at")?),
            country_code: r.try_get("country_code")?,
            amount: Satang(r.try_get("amount_satang")?),
            fee: Satang(r.try_get("fee_satang")?),
            ref1: r.try_get("ref1")?,
            ref2: r.try_get("ref2")?,
            ref3: r.try_get("ref3")?,
            sender: Party {
                bank_code: r.try_get("sending_bank")?,
                name_th: r.try_get("sender_name_th")?,
                name_en: r.try_get("sender_name_en")?,
                account_type: r.try_get("sender_acc_type")?,
                account: r.try_get("sender_account")?,
            },
            receiver: Party {
                bank_code: r.try_get("receiving_bank")?,
                name_th: r.try_get("receiver_name_th")?,
                name_en: r.try_get("receiver_name_en")?,
                account_type: r.try_get("receiver_acc_type")?,
                account: r.try_get("receiver_account")?,
            },
            receiver_merchant_id: r.try_get("merchant_id")?,
            bank_data: None,
        }
    }};
}

fn encode_ips(l: &AllowList) -> String {
    l.to_strings().join(",")
}

fn decode_ips(s: &str) -> Result<AllowList> {
    let parts: Vec<&str> = s.split(',').filter(|p| !p.is_empty()).collect();
    AllowList::parse(&parts).map_err(StoreError::Corrupt)
}

/// `$from, $from+1, …` for `n` parameters of a statement built for a batch.
pub(crate) fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `Option<Option<T>>` patch field → (whether to set it, the new value).
fn split<T: Clone>(field: &Option<Option<T>>) -> (bool, Option<T>) {
    match field {
        Some(v) => (true, v.clone()),
        None => (false, None),
    }
}

pub(crate) fn unique_violation(e: sqlx::Error, what: &'static str) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict(what),
        _ => StoreError::Db(e),
    }
}

impl SqlStore {
    /// Audit entries matching `filter` (one `$1` parameter), in commit order.
    async fn audit_where(&self, filter: &str, key: &str) -> Result<Vec<AuditEntry>> {
        let sql = format!(
            "SELECT id, at, actor, action, service_id, branch_id, detail FROM audit_log \
             WHERE {filter} ORDER BY seq"
        );
        on_pool!(self, p => {
            let rows = sqlx::query(&sql).bind(key).fetch_all(p).await?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                out.push(AuditEntry {
                    id: r.try_get("id")?,
                    at: from_millis(r.try_get("at")?),
                    actor: r.try_get("actor")?,
                    action: r.try_get("action")?,
                    service_id: r.try_get::<Option<String>, _>("service_id")?.map(ServiceId::from),
                    branch_id: r.try_get::<Option<String>, _>("branch_id")?.map(BranchId::from),
                    detail: r.try_get("detail")?,
                });
            }
            Ok(out)
        })
    }

    /// `sqlite://FILE` (created if missing, 0600; WAL) or `postgres://...`, with `pool`
    /// connections (`None`: 8 for SQLite, 16 for PostgreSQL).
    pub async fn open(url: &str, pool: Option<u32>) -> Result<Self> {
        if url.starts_with("sqlite:") {
            let opts = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                // NORMAL is durable across application crashes in WAL mode; only an OS crash
                // can lose the last commits.
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(10))
                .foreign_keys(true);
            create_private(opts.get_filename())?;
            // No ping before each acquire: a broken connection fails its query and is replaced;
            // the ping would cost a round trip on every statement.
            let pool = SqlitePoolOptions::new()
                .max_connections(pool.unwrap_or(8))
                .test_before_acquire(false)
                .connect_with(opts)
                .await?;
            Ok(Self::with_pool(Pool::Sqlite(pool)))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(pool.unwrap_or(16))
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
                .await?;
            Ok(Self::with_pool(Pool::Pg(pool)))
        } else {
            Err(StoreError::BadUrl)
        }
    }

    fn with_pool(pool: Pool) -> Self {
        let gate = WriteGate::default();
        let writer = ChargeWriter::spawn(pool.clone(), gate.clone());
        let attempts = crate::attempts::AttemptWriter::spawn(pool.clone(), gate);
        Self {
            pool,
            writer,
            attempts,
        }
    }

    pub async fn migrate(&self) -> Result<()> {
        self.migrate_up_to(i64::MAX).await
    }

    /// Applies the migrations up to version `last` only: for tests of a migration on rows
    /// written in the schema before it.
    #[doc(hidden)]
    pub async fn migrate_up_to(&self, last: i64) -> Result<()> {
        let upto = |list: &'static [Migration]| {
            let n = list.iter().take_while(|m| m.version <= last).count();
            &list[..n]
        };
        match &self.pool {
            Pool::Sqlite(p) => {
                let mut conn = p.acquire().await?;
                sqlx::raw_sql(migrate::CREATE_TABLE)
                    .execute(&mut *conn)
                    .await?;
                apply(&mut conn, upto(migrate::SQLITE)).await
            }
            Pool::Pg(p) => {
                let mut conn = p.acquire().await?;
                sqlx::query("SELECT pg_advisory_lock($1)")
                    .bind(migrate::PG_LOCK_KEY)
                    .execute(&mut *conn)
                    .await?;
                let res = async {
                    sqlx::raw_sql(migrate::CREATE_TABLE)
                        .execute(&mut *conn)
                        .await?;
                    apply(&mut conn, upto(migrate::POSTGRES)).await
                }
                .await;
                sqlx::query("SELECT pg_advisory_unlock($1)")
                    .bind(migrate::PG_LOCK_KEY)
                    .execute(&mut *conn)
                    .await?;
                res
            }
        }
    }

    pub async fn close(&self) {
        on_pool!(self, p => p.close().await)
    }
}

/// Applies each missing migration in its own transaction.
async fn apply<DB>(conn: &mut sqlx::pool::PoolConnection<DB>, list: &[Migration]) -> Result<()>
where
    DB: sqlx::Database,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    i64: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    use sqlx::Connection;
    for m in list {
        let mut tx = conn.begin().await?;
        let done: Option<(i64,)> =
            sqlx::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                .bind(m.version)
                .fetch_optional(&mut *tx)
                .await?;
        if done.is_none() {
            sqlx::raw_sql(m.sql).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)")
                .bind(m.version)
                .bind(to_millis(time::OffsetDateTime::now_utc()))
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
    }
    Ok(())
}

#[async_trait]
impl Store for SqlStore {
    fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Pg(_) => "postgres",
        }
    }

    async fn create_service(&self, s: &Service) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query(
                "INSERT INTO services (id, name, limit_quota, used_quota, total_used_quota, created_at, \
                 state, expires_at, owner_id, billing_anchor, cycle_start, plan, rate_limit_rps, \
                 owner_verified) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            )
            .bind(s.id.as_str())
            .bind(&s.name)
            .bind(s.quota.limit)
            .bind(s.quota.used)
            .bind(s.quota.total_used)
            .bind(to_millis(s.created_at))
            .bind(s.state.as_str())
            .bind(s.expires_at.map(to_millis))
            .bind(s.owner_id.as_ref().map(UserId::as_str))
            .bind(to_millis(s.billing_anchor))
            .bind(to_millis(s.cycle_start))
            .bind(&s.plan.name)
            .bind(s.rate_limit_rps.map(i64::from))
            .bind(s.owner_verified)
            .execute(p)
            .await
            .map_err(|e| unique_violation(e, "service id exists"))?;
        });
        Ok(())
    }

    async fn get_service(&self, id: &ServiceId) -> Result<Option<Service>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            " FROM services s LEFT JOIN users u ON u.id = s.owner_id LEFT JOIN plans pl ON pl.name = s.plan WHERE s.id = $1"
        );
        on_pool!(self, p => {
            match sqlx::query(sql).bind(id.as_str()).fetch_optional(p).await? {
                Some(r) => Ok(Some(service_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    async fn find_service_by_name(&self, name: &str) -> Result<Option<Service>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            " FROM services s LEFT JOIN users u ON u.id = s.owner_id LEFT JOIN plans pl ON pl.name = s.plan \
             WHERE s.name = $1 ORDER BY s.created_at LIMIT 1"
        );
        on_pool!(self, p => {
            match sqlx::query(sql).bind(name).fetch_optional(p).await? {
                Some(r) => Ok(Some(service_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    async fn update_service(
        &self,
        id: &ServiceId,
        patch: &ServicePatch,
    ) -> Result<Option<Service>> {
        let (set_limit, limit) = split(&patch.limit_quota);
        let (set_exp, exp) = split(&patch.expires_at);
        let (set_owner, owner) = split(&patch.owner_id);
        let (set_rate, rate) = split(&patch.rate_limit_rps);
        on_pool!(self, p => {
            sqlx::query(
                "UPDATE services SET name = COALESCE($2, name), \
                 limit_quota = CASE WHEN $3 THEN $4 ELSE limit_quota END, \
                 state = COALESCE($5, state), \
                 expires_at = CASE WHEN $6 THEN $7 ELSE expires_at END, \
                 owner_id = CASE WHEN $8 THEN $9 ELSE owner_id END, \
                 plan = COALESCE($10, plan), \
                 rate_limit_rps = CASE WHEN $11 THEN $12 ELSE rate_limit_rps END, \
                 owner_verified = COALESCE($13, owner_verified) \
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(&patch.name)
            .bind(set_limit)
            .bind(limit)
            .bind(patch.state.map(ServiceState::as_str))
            .bind(set_exp)
            .bind(exp.map(to_millis))
            .bind(set_owner)
            .bind(owner.as_ref().map(UserId::as_str))
            .bind(&patch.plan)
            .bind(set_rate)
            .bind(rate.map(i64::from))
            .bind(patch.owner_verified)
            .execute(p)
            .await?;
        });
        self.get_service(id).await
    }

    async fn create_user(&self, u: &User) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query("INSERT INTO users (id, name, banned, created_at) VALUES ($1, $2, $3, $4)")
                .bind(u.id.as_str())
                .bind(&u.name)
                .bind(u.banned)
                .bind(to_millis(u.created_at))
                .execute(p)
                .await
                .map_err(|e| unique_violation(e, "user id exists"))?;
        });
        Ok(())
    }

    async fn get_user(&self, id: &UserId) -> Result<Option<User>> {
        on_pool!(self, p => {
            match sqlx::query("SELECT id, name, banned, created_at FROM users WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(p)
                .await?
            {
                Some(r) => Ok(Some(User {
                    id: r.try_get::<String, _>("id")?.into(),
                    name: r.try_get("name")?,
                    banned: r.try_get("banned")?,
                    created_at: from_millis(r.try_get("created_at")?),
                })),
                None => Ok(None),
            }
        })
    }

    async fn set_user_banned(&self, id: &UserId, banned: bool) -> Result<bool> {
        on_pool!(self, p => {
            let r = sqlx::query("UPDATE users SET banned = $2 WHERE id = $1")
                .bind(id.as_str())
                .bind(banned)
                .execute(p)
                .await?;
            Ok(r.rows_affected() == 1)
        })
    }

    async fn create_branch(&self, b: &Branch, api_key_hash: &str) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query(
                "INSERT INTO branches (id, service_id, name, is_main, active, api_key_hash, \
                 allow_ips, webhook_url, webhook_secret, limit_quota, used_quota, \
                 total_used_quota, created_at, cycle_start, sandbox) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            )
            .bind(b.id.as_str())
            .bind(b.service_id.as_str())
            .bind(&b.name)
            .bind(b.is_main)
            .bind(b.active)
            .bind(api_key_hash)
            .bind(encode_ips(&b.allow_ips))
            .bind(&b.webhook_url)
            .bind(&b.webhook_secret)
            .bind(b.quota.limit)
            .bind(b.quota.used)
            .bind(b.quota.total_used)
            .bind(to_millis(b.created_at))
            .bind(to_millis(b.cycle_start))
            .bind(b.sandbox)
            .execute(p)
            .await
            .map_err(|e| unique_violation(e, "the service already has a main branch"))?;
        });
        Ok(())
    }

    async fn get_branch(&self, id: &BranchId) -> Result<Option<Branch>> {
        let sql = concat!(
            "SELECT ",
            branch_cols!(),
            " FROM branches b WHERE b.id = $1"
        );
        on_pool!(self, p => {
            match sqlx::query(sql).bind(id.as_str()).fetch_optional(p).await? {
                Some(r) => Ok(Some(branch_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    async fn list_branches(&self, service_id: &ServiceId) -> Result<Vec<Branch>> {
        let sql = concat!(
            "SELECT ",
            branch_cols!(),
            " FROM branches b WHERE b.service_id = $1 \
             ORDER BY b.is_main DESC, b.created_at, b.id"
        );
        on_pool!(self, p => {
            let rows = sqlx::query(sql).bind(service_id.as_str()).fetch_all(p).await?;
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                out.push(branch_from_row!(r));
            }
            Ok(out)
        })
    }

    async fn update_branch(&self, id: &BranchId, patch: &BranchPatch) -> Result<Option<Branch>> {
        let (set_url, url) = split(&patch.webhook_url);
        let (set_secret, secret) = split(&patch.webhook_secret);
        let (set_limit, limit) = split(&patch.limit_quota);
        let (set_biller, biller) = split(&patch.biller_id);
        on_pool!(self, p => {
            sqlx::query(
                "UPDATE branches SET name = COALESCE($2, name), active = COALESCE($3, active), \
                 allow_ips = COALESCE($4, allow_ips), \
                 webhook_url = CASE WHEN $5 THEN $6 ELSE webhook_url END, \
                 webhook_secret = CASE WHEN $7 THEN $8 ELSE webhook_secret END, \
                 limit_quota = CASE WHEN $9 THEN $10 ELSE limit_quota END, \
                 biller_id = CASE WHEN $11 THEN $12 ELSE biller_id END, \
                 sandbox = COALESCE($13, sandbox) \
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(&patch.name)
            .bind(patch.active)
            .bind(patch.allow_ips.as_ref().map(encode_ips))
            .bind(set_url)
            .bind(url)
            .bind(set_secret)
            .bind(secret)
            .bind(set_limit)
            .bind(limit)
            .bind(set_biller)
            .bind(biller)
            .bind(patch.sandbox)
            .execute(p)
            .await?;
        });
        self.get_branch(id).await
    }

    async fn set_api_key_hash(
        &self,
        branch_id: &BranchId,
        hash: &str,
        keep_old_until: Option<OffsetDateTime>,
    ) -> Result<bool> {
        on_pool!(self, p => {
            // Right-hand sides see the old row: the previous hash is the one being replaced.
            let r = sqlx::query(
                "UPDATE branches SET api_key_hash = $2, \
                 prev_api_key_hash = CASE WHEN $3 THEN api_key_hash ELSE NULL END, \
                 prev_key_expires_at = $4 WHERE id = $1",
            )
                .bind(branch_id.as_str())
                .bind(hash)
                .bind(keep_old_until.is_some())
                .bind(keep_old_until.map(to_millis))
                .execute(p)
                .await
                .map_err(|e| unique_violation(e, "key hash in use"))?;
            Ok(r.rows_affected() == 1)
        })
    }

    async fn find_by_api_key_hash(
        &self,
        hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<(Service, Branch)>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            ", ",
            branch_cols!(),
            " FROM branches b JOIN services s ON s.id = b.service_id \
             LEFT JOIN users u ON u.id = s.owner_id LEFT JOIN plans pl ON pl.name = s.plan WHERE b.api_key_hash = $1 \
             OR (b.prev_api_key_hash = $1 AND b.prev_key_expires_at > $2)"
        );
        on_pool!(self, p => {
            match sqlx::query(sql).bind(hash).bind(to_millis(now)).fetch_optional(p).await? {
                Some(r) => Ok(Some((service_from_row!(r), branch_from_row!(r)))),
                None => Ok(None),
            }
        })
    }

    async fn charge_and_record(&self, rec: &VerificationRecord) -> Result<ChargeOutcome> {
        self.writer.charge(rec.clone(), None).await
    }

    async fn charge_and_log(
        &self,
        rec: &VerificationRecord,
        draft: domain::attempt::AttemptDraft,
    ) -> Result<ChargeOutcome> {
        self.writer.charge(rec.clone(), Some(draft)).await
    }

    async fn modify_branch_quota(
        &self,
        branch_id: &BranchId,
        op: QuotaOp,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<Option<std::result::Result<(Service, Branch), QuotaOpError>>> {
        match crate::quota_ops::modify(&self.pool, branch_id.as_str(), op, now, actor).await? {
            None => Ok(None),
            Some(Err(e)) => Ok(Some(Err(e))),
            Some(Ok(())) => {
                let b = self.get_branch(branch_id).await?;
                let s = match &b {
                    Some(b) => self.get_service(&b.service_id).await?,
                    None => None,
                };
                Ok(s.zip(b).map(Ok))
            }
        }
    }

    async fn upsert_package(
        &self,
        p: &domain::billing::Package,
    ) -> Result<domain::billing::Package> {
        crate::billing::upsert_package(&self.pool, p).await
    }

    async fn list_packages(&self) -> Result<Vec<domain::billing::Package>> {
        crate::billing::list_packages(&self.pool).await
    }

    async fn get_package(&self, key: &str) -> Result<Option<domain::billing::Package>> {
        crate::billing::get_package(&self.pool, key).await
    }

    async fn start_period(
        &self,
        service_id: &ServiceId,
        start: &crate::PeriodStart,
        payment: Option<&domain::billing::Payment>,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<crate::PeriodOutcome> {
        crate::billing::start_period(&self.pool, service_id.as_str(), start, payment, now, actor)
            .await
    }

    async fn move_credit(
        &self,
        service_id: &ServiceId,
        kind: domain::billing::CreditKind,
        amount: i64,
        note: Option<&str>,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<Option<std::result::Result<domain::billing::LedgerEntry, ()>>> {
        crate::billing::move_credit(
            &self.pool,
            service_id.as_str(),
            kind,
            amount,
            note,
            now,
            actor,
        )
        .await
    }

    async fn credit_history(
        &self,
        service_id: &ServiceId,
    ) -> Result<Vec<domain::billing::LedgerEntry>> {
        crate::billing::credit_history(&self.pool, service_id.as_str()).await
    }

    async fn set_auto_renew(
        &self,
        service_id: &ServiceId,
        auto: domain::billing::AutoRenew,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<bool> {
        crate::billing::set_auto_renew(&self.pool, service_id.as_str(), auto, now, actor).await
    }

    async fn list_service_audit(&self, service_id: &ServiceId) -> Result<Vec<AuditEntry>> {
        self.audit_where("service_id = $1 AND branch_id IS NULL", service_id.as_str())
            .await
    }

    async fn list_audit(&self, branch_id: &BranchId) -> Result<Vec<AuditEntry>> {
        self.audit_where("branch_id = $1", branch_id.as_str()).await
    }

    async fn create_partner(&self, partner: &Partner, api_key_hash: &str) -> Result<()> {
        let perms = partner
            .permissions
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(",");
        on_pool!(self, p => {
            let mut tx = p.begin().await?;
            sqlx::query(
                "INSERT INTO partners (id, name, api_key_hash, secret, permissions, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(partner.id.as_str())
            .bind(&partner.name)
            .bind(api_key_hash)
            .bind(&partner.secret)
            .bind(&perms)
            .bind(to_millis(partner.created_at))
            .execute(&mut *tx)
            .await
            .map_err(|e| unique_violation(e, "partner key exists"))?;
            for sid in &partner.service_ids {
                sqlx::query("INSERT INTO partner_services (partner_id, service_id) VALUES ($1, $2)")
                    .bind(partner.id.as_str())
                    .bind(sid.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| unique_violation(e, "service listed twice"))?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    async fn find_partner_by_key_hash(&self, hash: &str) -> Result<Option<Partner>> {
        on_pool!(self, p => {
            let Some(r) = sqlx::query(
                "SELECT id, name, secret, permissions, created_at FROM partners WHERE api_key_hash = $1",
            )
            .bind(hash)
            .fetch_optional(p)
            .await?
            else {
                return Ok(None);
            };
            let id: String = r.try_get("id")?;
            let perms: String = r.try_get("permissions")?;
            let services: Vec<(String,)> = sqlx::query_as(
                "SELECT service_id FROM partner_services WHERE partner_id = $1 ORDER BY service_id",
            )
            .bind(&id)
            .fetch_all(p)
            .await?;
            Ok(Some(Partner {
                id: PartnerId::from(id),
                name: r.try_get("name")?,
                secret: r.try_get("secret")?,
                permissions: perms.split(',').filter_map(Permission::parse).collect(),
                service_ids: services.into_iter().map(|(s,)| ServiceId::from(s)).collect(),
                created_at: from_millis(r.try_get("created_at")?),
            }))
        })
    }

    async fn use_nonce(
        &self,
        partner_id: &PartnerId,
        nonce: &str,
        now: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<bool> {
        on_pool!(self, p => {
            sqlx::query("DELETE FROM partner_nonces WHERE partner_id = $1 AND seen_at < $2")
                .bind(partner_id.as_str())
                .bind(to_millis(forget_before))
                .execute(p)
                .await?;
            let r = sqlx::query(
                "INSERT INTO partner_nonces (partner_id, nonce, seen_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (partner_id, nonce) DO NOTHING",
            )
            .bind(partner_id.as_str())
            .bind(nonce)
            .bind(to_millis(now))
            .execute(p)
            .await?;
            Ok(r.rows_affected() == 1)
        })
    }

    async fn upsert_plan(&self, plan: &Plan) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query(
                "INSERT INTO plans (name, rps, burst) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET rps = excluded.rps, burst = excluded.burst",
            )
            .bind(&plan.name)
            .bind(i64::from(plan.rps))
            .bind(i64::from(plan.burst))
            .execute(p)
            .await?;
        });
        Ok(())
    }

    async fn list_plans(&self) -> Result<Vec<Plan>> {
        on_pool!(self, p => {
            let rows: Vec<(String, i64, i64)> =
                sqlx::query_as("SELECT name, rps, burst FROM plans ORDER BY name")
                    .fetch_all(p)
                    .await?;
            Ok(rows
                .into_iter()
                .map(|(name, rps, burst)| Plan {
                    name,
                    rps: u32::try_from(rps).unwrap_or(1),
                    burst: u32::try_from(burst).unwrap_or(1),
                })
                .collect())
        })
    }

    async fn rate_take(&self, branch_id: &BranchId, limit: &Gcra, now_us: i64) -> Result<Decision> {
        // One statement decides: the row is created or moved forward only when allowed.
        let greatest = match self.pool {
            Pool::Sqlite(_) => "MAX",
            Pool::Pg(_) => "GREATEST",
        };
        let take = format!(
            "INSERT INTO rate_limit_state (branch_id, tat) VALUES ($1, $2 + $3) \
             ON CONFLICT (branch_id) DO UPDATE \
             SET tat = {greatest}(rate_limit_state.tat, $2) + $3 \
             WHERE {greatest}(rate_limit_state.tat, $2) - $2 <= $4 \
             RETURNING tat"
        );
        on_pool!(self, p => {
            let row: Option<(i64,)> = sqlx::query_as(&take)
                .bind(branch_id.as_str())
                .bind(now_us)
                .bind(limit.interval_us)
                .bind(limit.tolerance_us)
                .fetch_optional(p)
                .await?;
            match row {
                Some((tat,)) => Ok(Decision::Allowed {
                    new_tat_us: tat,
                    remaining: limit.remaining(tat, now_us),
                }),
                None => {
                    let (tat,): (i64,) =
                        sqlx::query_as("SELECT tat FROM rate_limit_state WHERE branch_id = $1")
                            .bind(branch_id.as_str())
                            .fetch_one(p)
                            .await?;
                    Ok(limit.check(Some(tat), now_us))
                }
            }
        })
    }

    async fn create_bank_account(&self, a: &domain::model::BankAccount) -> Result<()> {
        crate::accounts::create(&self.pool, a).await
    }

    async fn list_bank_accounts(
        &self,
        branch_id: &BranchId,
    ) -> Result<Vec<domain::model::BankAccount>> {
        crate::accounts::list(&self.pool, branch_id.as_str()).await
    }

    async fn get_bank_account(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
    ) -> Result<Option<domain::model::BankAccount>> {
        crate::accounts::get(&self.pool, branch_id.as_str(), id.as_str()).await
    }

    async fn set_bank_account_extra_verify(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
        extra: Option<&str>,
    ) -> Result<bool> {
        crate::accounts::set_extra_verify(&self.pool, branch_id.as_str(), id.as_str(), extra).await
    }

    async fn delete_bank_account(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
        now: OffsetDateTime,
    ) -> Result<bool> {
        crate::accounts::delete(&self.pool, branch_id.as_str(), id.as_str(), now).await
    }

    async fn insert_wallet_transfer(&self, t: &domain::model::WalletTransfer) -> Result<()> {
        crate::accounts::insert_wallet(&self.pool, t).await
    }

    async fn get_wallet_transfer(
        &self,
        transaction_id: &str,
    ) -> Result<Option<domain::model::WalletTransfer>> {
        crate::accounts::get_wallet(&self.pool, transaction_id).await
    }

    async fn get_verification(
        &self,
        service_id: &ServiceId,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>> {
        use crate::sandbox::{get, Space};
        get(
            &self.pool,
            Space::Production,
            service_id,
            sending_bank,
            trans_ref,
        )
        .await
    }

    async fn idempotency_begin(
        &self,
        key: &crate::IdemKey<'_>,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<crate::IdemBegin> {
        crate::idempotency::begin(&self.pool, key, now, lease_until, forget_before).await
    }

    async fn idempotency_finish(
        &self,
        branch_id: &BranchId,
        key: &str,
        answer: Option<(u16, &str)>,
    ) -> Result<()> {
        crate::idempotency::finish(&self.pool, branch_id.as_str(), key, answer).await
    }

    async fn log_attempt(&self, a: &domain::attempt::Attempt) -> Result<()> {
        self.attempts.log(a.clone()).await
    }

    async fn insert_attempts(&self, rows: &[domain::attempt::Attempt]) -> Result<()> {
        let rows: Vec<&domain::attempt::Attempt> = rows.iter().collect();
        crate::attempts::insert(&self.pool, &rows).await?;
        // A bulk load is indexed at once (the writer indexes its own records about once a second).
        crate::attempts::index_refs(&self.pool).await
    }

    async fn search_attempts(
        &self,
        q: &domain::attempt::AttemptQuery,
    ) -> Result<Vec<domain::attempt::AttemptRow>> {
        crate::attempts::search(&self.pool, q).await
    }

    async fn get_line_settings(
        &self,
        branch: &BranchId,
    ) -> Result<Option<domain::line::LineSettings>> {
        crate::line::get(&self.pool, branch).await
    }

    async fn set_line_settings(
        &self,
        branch: &BranchId,
        patch: &domain::line::LinePatch,
    ) -> Result<domain::line::LineSettings> {
        crate::line::set(&self.pool, branch, patch).await
    }

    async fn claim_line_event(
        &self,
        branch: &BranchId,
        event_id: &str,
        now: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<bool> {
        crate::line::claim_event(&self.pool, branch, event_id, now, forget_before).await
    }

    async fn take_line_push(&self, branch: &BranchId, day: &str, limit: u32) -> Result<bool> {
        crate::line::take_push(&self.pool, branch, day, limit).await
    }

    async fn sweep_line_events(&self, before: OffsetDateTime) -> Result<u64> {
        crate::line::sweep_events(&self.pool, before).await
    }

    async fn count_attempts(&self) -> Result<i64> {
        on_pool!(self, p => Ok(sqlx::query("SELECT COUNT(*) FROM attempts")
            .fetch_one(p)
            .await?
            .try_get(0)?))
    }

    async fn purge_attempts(&self, before: OffsetDateTime) -> Result<u64> {
        crate::attempts::purge(&self.pool, before).await
    }

    async fn blank_personal_data(
        &self,
        before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<u64> {
        crate::attempts::blank_personal(&self.pool, before, now).await
    }

    async fn record_sandbox_verification(&self, rec: &VerificationRecord) -> Result<ChargeOutcome> {
        crate::sandbox::record(&self.pool, rec).await
    }

    async fn get_sandbox_verification(
        &self,
        service_id: &ServiceId,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>> {
        use crate::sandbox::{get, Space};
        get(
            &self.pool,
            Space::Sandbox,
            service_id,
            sending_bank,
            trans_ref,
        )
        .await
    }

    async fn sandbox_used(
        &self,
        service_id: &ServiceId,
        branch_id: &BranchId,
    ) -> Result<(i64, i64)> {
        crate::sandbox::used(&self.pool, service_id.as_str(), branch_id.as_str()).await
    }

    async fn insert_jobs_audited(
        &self,
        jobs: &[domain::job::Job],
        audit: &crate::NewAudit<'_>,
    ) -> Result<()> {
        crate::jobs::insert(&self.pool, jobs, Some(audit)).await
    }

    async fn insert_jobs(&self, jobs: &[domain::job::Job]) -> Result<()> {
        crate::jobs::insert(&self.pool, jobs, None).await
    }

    async fn claim_jobs(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        token: &str,
        limit: u32,
    ) -> Result<Vec<domain::job::Job>> {
        crate::jobs::claim(&self.pool, now, lease_until, token, limit).await
    }

    async fn save_job(&self, job: &domain::job::Job, token: &str) -> Result<bool> {
        crate::jobs::save(&self.pool, job, token).await
    }

    async fn release_jobs(&self, token: &str, now: OffsetDateTime) -> Result<u64> {
        crate::jobs::release(&self.pool, token, now).await
    }

    async fn get_job(&self, id: &JobId) -> Result<Option<domain::job::Job>> {
        crate::jobs::get(&self.pool, id.as_str()).await
    }

    async fn sweep_jobs(&self, now: OffsetDateTime) -> Result<u64> {
        crate::jobs::sweep(&self.pool, now).await
    }

    async fn sweep_idempotency_keys(&self, forget_before: OffsetDateTime) -> Result<u64> {
        crate::idempotency::sweep(&self.pool, forget_before).await
    }

    async fn claim_periodic(
        &self,
        name: &str,
        period_start: i64,
        holder: &str,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
    ) -> Result<crate::PeriodicClaim> {
        crate::periodic::claim(&self.pool, name, period_start, holder, now, lease_until).await
    }

    async fn renew_periodic(
        &self,
        name: &str,
        holder: &str,
        lease_until: OffsetDateTime,
    ) -> Result<bool> {
        crate::periodic::renew(&self.pool, name, holder, lease_until).await
    }

    async fn finish_periodic(
        &self,
        name: &str,
        holder: &str,
        done: bool,
        now: OffsetDateTime,
        not_before: OffsetDateTime,
        outcome: &str,
    ) -> Result<bool> {
        crate::periodic::finish(&self.pool, name, holder, done, now, not_before, outcome).await
    }

    async fn periodic_jobs(&self) -> Result<Vec<crate::PeriodicState>> {
        crate::periodic::list(&self.pool).await
    }

    async fn job_counts(&self) -> Result<Vec<(String, String, i64)>> {
        crate::jobs::counts(&self.pool).await
    }

    async fn insert_sandbox_transfer(&self, t: &Transfer) -> Result<()> {
        let sql = concat!(
            "INSERT INTO sandbox_transfers (", transfer_cols!(), ") VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"
        );
        on_pool!(self, p => {
            sqlx::query(sql)
                .bind(&t.sender.bank_code)
                .bind(&t.trans_ref)
                .bind(&t.payload)
                .bind(to_millis(t.occurred_at))
                .bind(&t.country_code)
                .bind(t.amount.0)
                .bind(t.fee.0)
                .bind(&t.ref1)
                .bind(&t.ref2)
                .bind(&t.ref3)
                .bind(&t.sender.name_th)
                .bind(&t.sender.name_en)
                .bind(&t.sender.account_type)
                .bind(&t.sender.account)
                .bind(&t.receiver.bank_code)
                .bind(&t.receiver.name_th)
                .bind(&t.receiver.name_en)
                .bind(&t.receiver.account_type)
                .bind(&t.receiver.account)
                .bind(&t.receiver_merchant_id)
                .execute(p)
                .await
                .map_err(|e| unique_violation(e, "sandbox transfer exists"))?;
        });
        Ok(())
    }

    async fn get_sandbox_transfer(
        &self,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<Transfer>> {
        let sql = concat!(
            "SELECT ",
            transfer_cols!(),
            " FROM sandbox_transfers WHERE sending_bank = $1 AND trans_ref = $2"
        );
        on_pool!(self, p => {
            match sqlx::query(sql)
                .bind(sending_bank)
                .bind(trans_ref)
                .fetch_optional(p)
                .await?
            {
                Some(r) => Ok(Some(transfer_from_row!(r))),
                None => Ok(None),
            }
        })
    }
}

/// Creates a missing SQLite database file readable by its owner only (it holds partner and
/// webhook secrets), whatever the umask. SQLite gives the `-wal` and `-shm` files the mode of
/// the database file, so they are 0600 too. An existing file is left as the operator set it.
fn create_private(path: &std::path::Path) -> Result<()> {
    let name = path.to_string_lossy();
    if name.is_empty() || name == ":memory:" || path.exists() {
        return Ok(());
    }
    let mut open = std::fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        open.mode(0o600);
        match open.open(path) {
            Ok(_) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| StoreError::Io(e.to_string())),
            // Another process created it first: fine, SQLite opens it.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(StoreError::Io(e.to_string())),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = open;
        Ok(())
    }
}
