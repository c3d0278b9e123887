//! The SQL plumbing every file of the store shares: the pool over either driver, `on_pool!`
//! (a statement written once, expanded once per concrete driver, so there is no dynamic `Any`
//! layer on the hot path) and the one-statement shapes built on it (`execute!`,
//! `fetch_optional!`, `fetch_all!`), batch placeholders, the unique-violation mapping and
//! SQLite's write gate. The statements are plain SQL that SQLite (3.35+) and PostgreSQL both accept
//! (`$n` parameters, `ON CONFLICT`, partial indexes). Nothing here knows a table.

use crate::StoreError;
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

/// The pool of the backend a URL named.
#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Pg(PgPool),
}

impl Pool {
    /// How a transaction that reads rows and then writes them begins, and what ends its
    /// `SELECT`s: SQLite takes its one write lock at `BEGIN IMMEDIATE`, so what it reads stays
    /// as read until the commit; PostgreSQL locks the rows it reads (`FOR UPDATE`).
    pub(crate) fn read_for_update(&self) -> (&'static str, &'static str) {
        match self {
            Pool::Sqlite(_) => ("BEGIN IMMEDIATE", ""),
            Pool::Pg(_) => ("BEGIN", " FOR UPDATE"),
        }
    }
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

/// Runs `$body` with `$p` bound to the concrete pool (`on_pool!(self, p => …)` inside
/// `SqlStore`, `on_pool!(pool: &pool, p => …)` elsewhere).
macro_rules! on_pool {
    (pool: $pool:expr, $p:ident => $body:expr) => {
        match $pool {
            $crate::sql::Pool::Sqlite($p) => $body,
            $crate::sql::Pool::Pg($p) => $body,
        }
    };
    ($self:expr, $p:ident => $body:expr) => {
        $crate::sql::on_pool!(pool: &$self.pool, $p => $body)
    };
}

/// Runs `$sql` with `$bind`s (in order) on the pool, on either driver: the rows it touched
/// (`Result<u64, sqlx::Error>`, so a caller can map a unique violation).
macro_rules! execute {
    ($pool:expr, $sql:expr, [$($bind:expr),* $(,)?]) => {
        $crate::sql::on_pool!(pool: $pool, p => {
            sqlx::query($sql)$(.bind($bind))*.execute(p).await.map(|d| d.rows_affected())
        })
    };
}

/// Runs the query `$sql` with `$bind`s on the pool: its first row as `$map` (with `$row`
/// bound to it; `?` returns from the caller), or `None`.
macro_rules! fetch_optional {
    ($pool:expr, $sql:expr, [$($bind:expr),* $(,)?], |$row:ident| $map:expr) => {
        $crate::sql::on_pool!(pool: $pool, p => {
            match sqlx::query($sql)$(.bind($bind))*.fetch_optional(p).await? {
                Some($row) => Ok(Some($map)),
                None => Ok(None),
            }
        })
    };
}

/// Runs the query `$sql` with `$bind`s on the pool: every row as `$map` (with `$row` bound
/// to it; `?` returns from the caller).
macro_rules! fetch_all {
    ($pool:expr, $sql:expr, [$($bind:expr),* $(,)?], |$row:ident| $map:expr) => {
        $crate::sql::on_pool!(pool: $pool, p => {
            let mut out = Vec::new();
            for $row in sqlx::query($sql)$(.bind($bind))*.fetch_all(p).await? {
                out.push($map);
            }
            Ok(out)
        })
    };
}
pub(crate) use {execute, fetch_all, fetch_optional, on_pool};

/// A connection a writer task keeps between its cycles. Every connection handed back to a sqlx
/// pool is pinged by a spawned task before it can be taken again (sqlx-core 0.8,
/// `PoolConnection::return_to_pool`): a writer taking one per cycle waited for that ping, and
/// for the task to be scheduled, at the start of every cycle — about a third of the cycle under
/// load. Detached from the pool, so closing the pool does not wait for it; dropped (closed)
/// after a failed cycle, so the next one starts on a fresh connection.
#[derive(Default)]
pub(crate) struct Held {
    sqlite: Option<sqlx::SqliteConnection>,
    pg: Option<sqlx::PgConnection>,
}

/// The slot of `Held` for one driver (so `on_pool!` bodies can call `held.conn(p)`).
pub(crate) trait HeldSlot<DB: sqlx::Database> {
    fn slot(&mut self) -> &mut Option<DB::Connection>;
}
impl HeldSlot<sqlx::Sqlite> for Held {
    fn slot(&mut self) -> &mut Option<sqlx::SqliteConnection> {
        &mut self.sqlite
    }
}
impl HeldSlot<sqlx::Postgres> for Held {
    fn slot(&mut self) -> &mut Option<sqlx::PgConnection> {
        &mut self.pg
    }
}

impl Held {
    /// The kept connection, taken from `pool` when there is none.
    pub(crate) async fn conn<DB: sqlx::Database>(
        &mut self,
        pool: &sqlx::Pool<DB>,
    ) -> Result<&mut DB::Connection, sqlx::Error>
    where
        Self: HeldSlot<DB>,
    {
        let slot = self.slot();
        if slot.is_none() {
            *slot = Some(pool.acquire().await?.detach());
        }
        Ok(slot.as_mut().expect("just filled"))
    }

    /// Gives the connection back (after a failed cycle).
    pub(crate) fn release(&mut self) {
        self.sqlite = None;
        self.pg = None;
    }
}

/// `$from, $from+1, …` for `n` parameters of a statement built for a batch.
/// `placeholders` for a statement whose parameters are all bound in order: on SQLite plain
/// `?`s. `sqlx-sqlite` looks each `$n` up by name (`sqlite3_bind_parameter_name`, a walk of
/// the statement's list): a cost that grows with the square of the parameters, 1–2 % of the
/// process in the charge writer's multi-row inserts (docs/benchmarks.md).
pub(crate) fn placeholders_on(pool: &Pool, from: usize, n: usize) -> String {
    match pool {
        Pool::Sqlite(_) => vec!["?"; n].join(", "),
        Pool::Pg(_) => placeholders(from, n),
    }
}

pub(crate) fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A unique index refused the write: `Conflict(what)`; any other error as it is.
pub(crate) fn unique_violation(e: sqlx::Error, what: &'static str) -> StoreError {
    match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => StoreError::Conflict(what),
        _ => StoreError::Db(e),
    }
}
