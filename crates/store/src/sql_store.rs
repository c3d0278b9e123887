//! `SqlStore`: the pool and the two group-committing writers (charges, the attempts log);
//! opening, migrating, closing. Its query methods are written once each, in the file of their
//! concern (`services.rs`, `branches.rs`, `jobs.rs`, …); the writer-backed ones stay here.

use crate::charge::ChargeWriter;
use crate::migrate::{self, Backend};
use crate::sql::{on_pool, Pool, WriteGate};
use crate::{ChargeOutcome, Result, StoreError, VerificationRecord};
use domain::clock::to_millis;
use sqlx::postgres::PgPoolOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::Row;
use std::str::FromStr;
use std::time::Duration;
use time::OffsetDateTime;

/// The store on SQLite or PostgreSQL; every statement runs on either (`on_pool!`).
pub struct SqlStore {
    pub(crate) pool: Pool,
    writers: Pool,
    writer: ChargeWriter,
    attempts: crate::attempts::AttemptWriter,
    gate: WriteGate,
    upkeep: std::sync::Once,
}

impl SqlStore {
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
                .connect_with(opts.clone())
                .await?;
            // The writers' own connections (the charge writer keeps one, detached; the attempts
            // writer and the log's upkeep (`attempts::spawn_upkeep`) take turns on the others): see `with_pools`.
            let writers = SqlitePoolOptions::new()
                .max_connections(2)
                .test_before_acquire(false)
                .connect_with(opts)
                .await?;
            Ok(Self::with_pools(Pool::Sqlite(pool), Pool::Sqlite(writers)))
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(pool.unwrap_or(16))
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(10))
                .connect(url)
                .await?;
            // The charge writer keeps one (detached), the attempts writer takes another (opened
            // on first use), so neither waits behind requests' reads for one.
            let writers = PgPoolOptions::new()
                .max_connections(2)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(10))
                .connect_lazy(url)?;
            Ok(Self::with_pools(Pool::Pg(pool), Pool::Pg(writers)))
        } else {
            Err(StoreError::BadUrl)
        }
    }

    /// `writers`: the group-committing writers' own connections. Every verification waits
    /// for the charge writer's cycle, so that cycle is the service's throughput limit; taking
    /// its connection from the requests' pool made it queue behind their reads on every batch.
    fn with_pools(pool: Pool, writers: Pool) -> Self {
        let gate = WriteGate::default();
        let writer = ChargeWriter::spawn(writers.clone(), gate.clone());
        let attempts = crate::attempts::AttemptWriter::spawn(writers.clone(), gate.clone());
        Self {
            pool,
            writers,
            writer,
            attempts,
            gate,
            upkeep: std::sync::Once::new(),
        }
    }

    /// Applies every migration, then starts the attempts log's upkeep (`attempts::spawn_upkeep`)
    /// — not before: its turns at SQLite's write lock would refuse a migration's transaction.
    pub async fn migrate(&self) -> Result<()> {
        self.migrate_up_to(i64::MAX).await?;
        self.upkeep.call_once(|| {
            crate::attempts::spawn_upkeep(self.writers.clone(), self.gate.clone());
        });
        Ok(())
    }

    /// Applies the migrations up to version `last` only: for tests of a migration on rows
    /// written in the schema before it.
    #[doc(hidden)]
    pub async fn migrate_up_to(&self, last: i64) -> Result<()> {
        match &self.pool {
            Pool::Sqlite(p) => {
                let mut conn = p.acquire().await?;
                sqlx::raw_sql(migrate::CREATE_TABLE)
                    .execute(&mut *conn)
                    .await?;
                apply(&mut conn, Backend::Sqlite, last).await
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
                    apply(&mut conn, Backend::Postgres, last).await
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
        on_pool!(self, p => p.close().await);
        on_pool!(pool: &self.writers, p => p.close().await)
    }
}

/// Applies each missing migration up to version `last`, each in its own transaction.
async fn apply<DB>(
    conn: &mut sqlx::pool::PoolConnection<DB>,
    backend: Backend,
    last: i64,
) -> Result<()>
where
    DB: sqlx::Database,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    i64: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
{
    use sqlx::Connection;
    for m in migrate::ALL.iter().take_while(|m| m.version <= last) {
        let mut tx = conn.begin().await?;
        let done: Option<(i64,)> =
            sqlx::query_as("SELECT version FROM schema_migrations WHERE version = $1")
                .bind(m.version)
                .fetch_optional(&mut *tx)
                .await?;
        if done.is_none() {
            let sql = m.sql(backend);
            // A version of the other backend alone still gets its row, so both count alike.
            if !sql.is_empty() {
                sqlx::raw_sql(&sql).execute(&mut *tx).await?;
            }
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

impl SqlStore {
    /// Which backend this is, for logs and `/health`.
    pub fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Pg(_) => "postgres",
        }
    }

    /// Charges one unit to the service and the branch and records the slip, atomically.
    /// `QuotaExceeded` when either has no room; then nothing is charged or recorded.
    pub async fn charge_and_record(&self, rec: &VerificationRecord) -> Result<ChargeOutcome> {
        self.writer.charge(rec.clone(), None).await
    }

    /// `charge_and_record`, and when the charge is granted, the request's attempts-log record
    /// (`draft` finished with the charge's first-verification flag) in the same transaction
    /// (`ChargeOutcome::attempt_logged`). A refused charge logs nothing.
    pub async fn charge_and_log(
        &self,
        rec: &VerificationRecord,
        draft: domain::attempt::AttemptDraft,
    ) -> Result<ChargeOutcome> {
        self.writer.charge(rec.clone(), Some(draft)).await
    }

    /// Records one verification attempt; returns once it is committed (group-committed with
    /// other requests' records).
    pub async fn log_attempt(&self, a: &domain::attempt::Attempt) -> Result<()> {
        self.attempts.log(a.clone()).await
    }

    /// Inserts records in one transaction, without the writer (bulk loads, benchmarks).
    pub async fn insert_attempts(&self, rows: &[domain::attempt::Attempt]) -> Result<()> {
        let rows: Vec<&domain::attempt::Attempt> = rows.iter().collect();
        crate::attempts::insert(&self.pool, &rows, crate::attempts::Table::Log).await?;
        // A bulk load is indexed at once (the upkeep task indexes the others a few thousand at a time).
        crate::attempts::index_refs(&self.pool, None, 0).await
    }

    /// The attempts matching the query, newest first.
    pub async fn search_attempts(
        &self,
        q: &domain::attempt::AttemptQuery,
    ) -> Result<Vec<domain::attempt::AttemptRow>> {
        crate::attempts::search(&self.pool, q).await
    }

    /// Every record, counted (the search benchmark's reference: one pass over the table).
    pub async fn count_attempts(&self) -> Result<i64> {
        crate::attempts::move_inbox(&self.pool).await?;
        on_pool!(self, p => Ok(sqlx::query("SELECT COUNT(*) FROM attempts")
            .fetch_one(p)
            .await?
            .try_get(0)?))
    }

    /// Deletes the attempts older than `before`; how many.
    pub async fn purge_attempts(&self, before: OffsetDateTime) -> Result<u64> {
        crate::attempts::purge(&self.pool, before).await
    }

    /// Blanks the personal fields of transfers verified before `before`; how many.
    pub async fn blank_personal_data(
        &self,
        before: OffsetDateTime,
        now: OffsetDateTime,
    ) -> Result<u64> {
        crate::attempts::blank_personal(&self.pool, before, now).await
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
