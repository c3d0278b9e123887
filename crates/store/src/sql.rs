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

/// `$from, $from+1, …` for `n` parameters of a statement built for a batch.
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
