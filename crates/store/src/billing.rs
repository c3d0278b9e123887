//! Packages, subscriptions, the credit ledger and renewal. A period starts (subscription or
//! renewal) in one transaction with the service row locked: it re-checks that a renewal is
//! still due, draws the credit, appends the ledger row, resets the quota and writes the audit
//! entry, so concurrent requests on any number of nodes renew once and the balance never goes
//! below zero (the CHECK constraints say so too).

use crate::rows::{service_cols, service_from_row, service_joins};
use crate::sql::{fetch_all, on_pool, unique_violation, Pool};
use crate::SqlStore;
use crate::{Result, StoreError};
use domain::billing::{
    apply_credit, period, renewal_due, AutoRenew, CreditKind, LedgerEntry, Package, Payment,
    RenewReason,
};
use domain::clock::{format_bangkok, from_millis, to_millis};
use domain::model::Service;
use domain::ServiceId;
use domain::{PackageId, Satang};
use sqlx::Row;
use time::OffsetDateTime;

/// What starts a new period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeriodStart {
    /// An operator subscribes the service to a package (also to switch packages).
    Subscribe {
        package_id: PackageId,
        auto_renew: Option<AutoRenew>,
    },
    /// Auto-renewal of the current package, decided on the service as it stood at
    /// `expected_seq` renewals: if another request renewed first, nothing happens.
    Renew { expected_seq: i64 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeriodOutcome {
    Started {
        reason: Option<RenewReason>,
    },
    /// Someone else renewed first, or the service no longer needs it.
    NotDue,
    InsufficientCredit,
    NoService,
    NoPackage,
}

/// What a credit movement came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreditMove {
    /// Moved: the ledger row written.
    Moved(LedgerEntry),
    /// It would leave a negative balance; nothing moved.
    Insufficient,
    /// No such service.
    NoService,
}

const PACKAGE_COLS: &str = "id, name, quota, duration_days, price_satang, created_at";

macro_rules! package_from_row {
    ($r:expr) => {{
        let r = &$r;
        Package {
            id: r.try_get::<String, _>("id")?.into(),
            name: r.try_get("name")?,
            quota: r.try_get("quota")?,
            duration_days: u32::try_from(r.try_get::<i64, _>("duration_days")?)
                .map_err(|_| StoreError::Corrupt("package duration".into()))?,
            price: Satang(r.try_get("price_satang")?),
            created_at: from_millis(r.try_get("created_at")?),
        }
    }};
}

macro_rules! ledger_from_row {
    ($r:expr) => {{
        let r = &$r;
        let kind: String = r.try_get("kind")?;
        LedgerEntry {
            id: r.try_get("id")?,
            service_id: r.try_get::<String, _>("service_id")?.into(),
            at: from_millis(r.try_get("at")?),
            kind: CreditKind::parse(&kind)
                .ok_or_else(|| StoreError::Corrupt(format!("ledger kind {kind}")))?,
            amount: r.try_get("amount_satang")?,
            balance_after: r.try_get("balance_after")?,
            actor: r.try_get("actor")?,
            note: r.try_get("note")?,
        }
    }};
}

/// How `start_period`'s transaction begins, and its read of the service that locks the row
/// (the service's only: users and plans are joined for reading).
fn lock_service(pool: &Pool) -> (&'static str, String) {
    let (begin, lock) = pool.read_for_update();
    let of = if lock.is_empty() { "" } else { " OF s" };
    let sql = format!(
        "SELECT {} FROM services s{} WHERE s.id = $1{lock}{of}",
        service_cols!(),
        service_joins!()
    );
    (begin, sql)
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// Appends a ledger row inside the caller's transaction; evaluates to the entry.
macro_rules! insert_ledger {
    ($tx:expr, $service_id:expr, $now:expr, $kind:expr, $amount:expr, $after:expr, $actor:expr, $note:expr) => {{
        let e = LedgerEntry {
            id: uuid::Uuid::new_v4().to_string(),
            service_id: domain::ServiceId::from($service_id),
            at: $now,
            kind: $kind,
            amount: $amount,
            balance_after: $after,
            actor: $actor.to_string(),
            note: $note,
        };
        sqlx::query(
            "INSERT INTO credit_ledger (id, service_id, at, kind, amount_satang, \
             balance_after, actor, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&e.id)
        .bind(e.service_id.as_str())
        .bind(to_millis(e.at))
        .bind(e.kind.as_str())
        .bind(e.amount)
        .bind(e.balance_after)
        .bind(&e.actor)
        .bind(&e.note)
        .execute(&mut *$tx)
        .await?;
        e
    }};
}

/// Appends an audit entry for the service inside the caller's transaction.
macro_rules! audit {
    ($tx:expr, $now:expr, $actor:expr, $action:expr, $service_id:expr, $detail:expr) => {
        sqlx::query(
            "INSERT INTO audit_log (id, at, actor, action, service_id, branch_id, detail) \
             VALUES ($1, $2, $3, $4, $5, NULL, $6)",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(to_millis($now))
        .bind($actor)
        .bind($action)
        .bind($service_id)
        .bind($detail)
        .execute(&mut *$tx)
        .await?
    };
}

impl SqlStore {
    /// Creates a package, or changes the quota, duration and price of the one with this name
    /// (services keep their current period; the next one uses the new terms).
    pub async fn upsert_package(
        &self,
        p: &domain::billing::Package,
    ) -> Result<domain::billing::Package> {
        let pool = &self.pool;
        on_pool!(pool: pool, q => {
            sqlx::query(
                "INSERT INTO packages (id, name, quota, duration_days, price_satang, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO UPDATE SET \
                 quota = excluded.quota, duration_days = excluded.duration_days, \
                 price_satang = excluded.price_satang",
            )
            .bind(p.id.as_str())
            .bind(&p.name)
            .bind(p.quota)
            .bind(i64::from(p.duration_days))
            .bind(p.price.0)
            .bind(to_millis(p.created_at))
            .execute(q)
            .await
            .map_err(|e| unique_violation(e, "package id exists"))?;
        });
        self.get_package(&p.name)
            .await?
            .ok_or_else(|| StoreError::WriteFailed("package vanished".into()))
    }

    pub async fn list_packages(&self) -> Result<Vec<domain::billing::Package>> {
        let sql = format!("SELECT {PACKAGE_COLS} FROM packages ORDER BY name");
        fetch_all!(&self.pool, &sql, [], |r| package_from_row!(r))
    }

    /// By id or by name.
    pub async fn get_package(&self, key: &str) -> Result<Option<domain::billing::Package>> {
        let pool = &self.pool;
        let sql = format!("SELECT {PACKAGE_COLS} FROM packages WHERE id = $1 OR name = $1 LIMIT 1");
        on_pool!(pool: pool, q => {
            match sqlx::query(&sql).bind(key).fetch_optional(q).await? {
                Some(r) => Ok(Some(package_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    /// Starts a period (subscription or renewal) atomically with the service row locked:
    /// re-checks a renewal is still due, draws `Payment::Ledger` credit (never below zero),
    /// resets the quota and cycle, and audits it. See `billing`.
    pub async fn start_period(
        &self,
        service_id: &ServiceId,
        start: &PeriodStart,
        payment: Option<&domain::billing::Payment>,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<PeriodOutcome> {
        let pool = &self.pool;
        let service_id = service_id.as_str();
        let (begin, svc_sql) = lock_service(pool);
        let pkg_sql = format!("SELECT {PACKAGE_COLS} FROM packages WHERE id = $1");
        on_pool!(pool: pool, q => {
            let mut tx = q.begin_with(begin).await?;
            let Some(r) = sqlx::query(&svc_sql).bind(service_id).fetch_optional(&mut *tx).await? else {
                tx.rollback().await?;
                return Ok(PeriodOutcome::NoService);
            };
            let s: Service = service_from_row!(r);
            let (package_id, reason) = match start {
                PeriodStart::Subscribe { package_id, .. } => (Some(package_id.clone()), None),
                PeriodStart::Renew { expected_seq } => {
                    let due = renewal_due(&s, now);
                    if s.subscription.renewal_seq != *expected_seq || due.is_none() {
                        tx.rollback().await?;
                        return Ok(PeriodOutcome::NotDue);
                    }
                    (s.subscription.package_id.clone(), due)
                }
            };
            let Some(package_id) = package_id else {
                tx.rollback().await?;
                return Ok(PeriodOutcome::NoPackage);
            };
            let Some(pr) = sqlx::query(&pkg_sql).bind(package_id.as_str()).fetch_optional(&mut *tx).await? else {
                tx.rollback().await?;
                return Ok(PeriodOutcome::NoPackage);
            };
            let pkg: Package = package_from_row!(pr);
            let mut credit = s.subscription.credit;
            let paid = match payment {
                Some(Payment::Ledger) => {
                    let Some(after) = apply_credit(credit, -pkg.price.0) else {
                        tx.rollback().await?;
                        return Ok(PeriodOutcome::InsufficientCredit);
                    };
                    credit = after;
                    let note = format!(
                        "{} of package {}",
                        if reason.is_some() { "renewal" } else { "subscription" },
                        pkg.name
                    );
                    insert_ledger!(tx, service_id, now, CreditKind::Renewal, -pkg.price.0, after, actor, Some(note));
                    "\"ledger\"".to_string()
                }
                Some(Payment::External { reference }) => json_str(&format!("external:{reference}")),
                None => "null".to_string(),
            };
            let per = period(&pkg, now);
            let auto = match start {
                PeriodStart::Subscribe { auto_renew: Some(a), .. } => *a,
                _ => s.subscription.auto_renew,
            };
            sqlx::query(
                "UPDATE services SET package_id = $2, subscribed_at = $3, limit_quota = $4, \
                 used_quota = 0, cycle_start = $3, billing_anchor = $3, expires_at = $5, \
                 renewal_seq = renewal_seq + 1, credit_satang = $6, auto_renew_expiry = $7, \
                 auto_renew_quota = $8 WHERE id = $1",
            )
            .bind(service_id)
            .bind(pkg.id.as_str())
            .bind(to_millis(per.starts))
            .bind(per.limit)
            .bind(to_millis(per.expires))
            .bind(credit)
            .bind(auto.on_expiry)
            .bind(auto.on_quota)
            .execute(&mut *tx)
            .await?;
            let before = s.quota_at(now);
            let detail = format!(
                r#"{{"package":{},"reason":{},"payment":{paid},"price":{},"before":{{"limitQuota":{},"usedQuota":{},"expiresAt":{}}},"after":{{"limitQuota":{},"usedQuota":0,"expiresAt":{}}},"renewal":{}}}"#,
                json_str(&pkg.name),
                reason.map_or("null".to_string(), |r| json_str(r.as_str())),
                pkg.price.as_baht(),
                before.limit.map_or("null".to_string(), |l| l.to_string()),
                before.used,
                s.expires_at.map_or("null".to_string(), |t| json_str(&format_bangkok(t))),
                per.limit,
                json_str(&format_bangkok(per.expires)),
                s.subscription.renewal_seq + 1,
            );
            let action = if reason.is_some() { "subscription.renew" } else { "subscription.start" };
            audit!(tx, now, actor, action, service_id, detail);
            tx.commit().await?;
            Ok(PeriodOutcome::Started { reason })
        })
    }

    /// Moves credit (negative draws) with a ledger row.
    pub async fn move_credit(
        &self,
        service_id: &ServiceId,
        kind: domain::billing::CreditKind,
        amount: i64,
        note: Option<&str>,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<CreditMove> {
        let pool = &self.pool;
        let service_id = service_id.as_str();
        let (begin, lock) = pool.read_for_update();
        let sql = format!("SELECT credit_satang FROM services WHERE id = $1{lock}");
        on_pool!(pool: pool, q => {
            let mut tx = q.begin_with(begin).await?;
            let Some(r) = sqlx::query(&sql).bind(service_id).fetch_optional(&mut *tx).await? else {
                tx.rollback().await?;
                return Ok(CreditMove::NoService);
            };
            let balance: i64 = r.try_get(0)?;
            let Some(after) = apply_credit(balance, amount) else {
                tx.rollback().await?;
                return Ok(CreditMove::Insufficient);
            };
            sqlx::query("UPDATE services SET credit_satang = $2 WHERE id = $1")
                .bind(service_id)
                .bind(after)
                .execute(&mut *tx)
                .await?;
            let e = insert_ledger!(tx, service_id, now, kind, amount, after, actor, note.map(str::to_string));
            tx.commit().await?;
            Ok(CreditMove::Moved(e))
        })
    }

    /// The service's credit ledger, oldest first.
    pub async fn credit_history(
        &self,
        service_id: &ServiceId,
    ) -> Result<Vec<domain::billing::LedgerEntry>> {
        fetch_all!(
            &self.pool,
            "SELECT id, service_id, at, kind, amount_satang, balance_after, actor, note \
             FROM credit_ledger WHERE service_id = $1 ORDER BY seq",
            [service_id.as_str()],
            |r| ledger_from_row!(r)
        )
    }

    /// Turns auto-renewal on or off, audited. False if no such service.
    pub async fn set_auto_renew(
        &self,
        service_id: &ServiceId,
        auto: domain::billing::AutoRenew,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<bool> {
        let pool = &self.pool;
        let service_id = service_id.as_str();
        on_pool!(pool: pool, q => {
            let mut tx = q.begin().await?;
            let r = sqlx::query(
                "UPDATE services SET auto_renew_expiry = $2, auto_renew_quota = $3 WHERE id = $1",
            )
            .bind(service_id)
            .bind(auto.on_expiry)
            .bind(auto.on_quota)
            .execute(&mut *tx)
            .await?;
            if r.rows_affected() != 1 {
                tx.rollback().await?;
                return Ok(false);
            }
            let detail = format!(
                r#"{{"onExpiry":{},"onQuota":{}}}"#,
                auto.on_expiry, auto.on_quota
            );
            audit!(tx, now, actor, "subscription.auto_renew", service_id, detail);
            tx.commit().await?;
            Ok(true)
        })
    }
}
