//! The attempts log (migration 0014): group-committed inserts, the search, and retention.
//!
//! Every verification writes one row before its answer leaves. Like charges, rows queued by
//! concurrent requests are written by one task in one transaction, so a request does not pay a
//! commit of its own.

use crate::sql::{on_pool, Pool};
use crate::{Result, StoreError};
use domain::attempt::{Attempt, AttemptQuery, AttemptRow, Channel, InputKind, Outcome, SlipKind};
use domain::clock::{from_millis, to_millis};
use domain::Satang;
use sqlx::Row;
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot};

/// Most rows written in one transaction.
const MAX_BATCH: usize = 256;
/// Rows in one INSERT statement (16 parameters each: within SQLite's and PostgreSQL's
/// limits). SQLite binds by looking each `$n` up in a list (`sqlite3_bind_parameter_name`), a
/// cost that grows with the square of a statement's parameters: there, fewer rows a statement
/// (the profile under `scripts/bench-http` showed it at 2.5 % with 64).
pub(crate) fn rows_per_statement(pool: &Pool) -> usize {
    match pool {
        Pool::Sqlite(_) => 16,
        Pool::Pg(_) => 64,
    }
}
/// Queued rows beyond this make callers wait (back-pressure instead of unbounded memory).
const QUEUE: usize = 4096;
/// Rows deleted or blanked per statement: a purge never holds a long transaction.
const PURGE_CHUNK: i64 = 2000;

type Reply = oneshot::Sender<Result<()>>;

#[derive(Clone)]
pub(crate) struct AttemptWriter {
    tx: mpsc::Sender<(Attempt, Reply)>,
}

impl AttemptWriter {
    pub(crate) fn spawn(pool: Pool, gate: crate::sql::WriteGate) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, gate, rx));
        Self { tx }
    }

    /// Queues a record and waits until it is committed.
    pub(crate) async fn log(&self, a: Attempt) -> Result<()> {
        let (reply, done) = oneshot::channel();
        let stopped = || StoreError::WriteFailed("attempts writer stopped".into());
        self.tx.send((a, reply)).await.map_err(|_| stopped())?;
        done.await.map_err(|_| stopped())?
    }
}

async fn run(pool: Pool, gate: crate::sql::WriteGate, mut rx: mpsc::Receiver<(Attempt, Reply)>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let rows: Vec<&Attempt> = batch.iter().map(|(a, _)| a).collect();
        // A busy database (a lock held by another writer past the busy timeout, a pool out of
        // connections) is worth two more tries before the records are given up.
        let turn = gate.turn(&pool).await;
        let mut result = insert(&pool, &rows, Table::Inbox).await;
        drop(turn);
        for wait_ms in [50, 250] {
            if result.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
            result = insert(&pool, &rows, Table::Inbox).await;
        }
        if let Err(e) = &result {
            tracing::warn!(error = %e, size = batch.len(), "attempts batch failed");
        }
        for (_, reply) in batch.drain(..) {
            let _ = reply.send(match &result {
                Ok(()) => Ok(()),
                Err(e) => Err(StoreError::WriteFailed(e.to_string())),
            });
        }
    }
}

/// The log's upkeep, on a task of its own so that neither writer waits for it: every quarter
/// second (short turns at SQLite's lock rather than one long one a second) the inbox is moved
/// into the log and SQLite's trigram index catches up. Ends with the writers' pool.
pub(crate) fn spawn_upkeep(pool: Pool, gate: crate::sql::WriteGate) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(MOVE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if on_pool!(pool: &pool, p => p.is_closed()) {
                return;
            }
            // A chunk a turn at the lock: a backlog (after an outage, say) is moved in
            // bounded transactions with the writers' turns in between.
            let mut moved = 0;
            for _ in 0..MOVE_CHUNKS_A_TURN {
                let turn = gate.turn(&pool).await;
                let n = move_some(&pool, MOVE_AT_MOST).await;
                drop(turn);
                match n {
                    Ok(n) => {
                        moved += n;
                        if n < MOVE_AT_MOST {
                            break;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "attempts: moving the inbox failed; retried");
                        break;
                    }
                }
            }
            // Busy: leave the index alone until the backlog is worth a turn at the lock.
            let keep = if moved < QUIET_ROWS {
                0
            } else {
                BACKLOG_WHEN_BUSY
            };
            let turn = gate.turn(&pool).await;
            if let Err(e) = index_refs(&pool, Some(INDEX_AT_MOST), keep).await {
                tracing::warn!(error = %e, "attempts: indexing references failed; retried");
            }
            drop(turn);
        }
    });
}

/// How often the inbox is moved into the log.
const MOVE_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// Records moved in one transaction: a turn at SQLite's write lock stays short (a few
/// milliseconds) whatever waits in the inbox. 250 rather than 1,000: the charge writer gets
/// its turns between chunks (`scripts/bench-http` on SQLite: median +6 % req/s in six runs).
const MOVE_AT_MOST: u64 = 250;
/// Chunks an upkeep turn moves at most (80,000 records a second, eight times the benchmark's
/// peak): a turn ends, and the index gets its turn, even while records arrive faster.
const MOVE_CHUNKS_A_TURN: usize = 80;

/// Moves everything in the inbox into the log, `MOVE_AT_MOST` records a transaction. Every
/// read of the log calls it first, so a search never misses a committed record. Returns the
/// records moved.
pub(crate) async fn move_inbox(pool: &Pool) -> Result<u64> {
    let p = match pool {
        Pool::Pg(p) => p,
        // One writer at a time: a move beside this one has committed before it starts.
        Pool::Sqlite(_) => {
            let mut total = 0;
            loop {
                let n = move_some(pool, MOVE_AT_MOST).await?;
                total += n;
                if n < MOVE_AT_MOST {
                    return Ok(total);
                }
            }
        }
    };
    // PostgreSQL: what was committed when the read began (the inbox's ids come from the log's
    // sequence) is moved, waiting for a mover beside us (the upkeep, another node) to commit
    // the rows it holds: with `SKIP LOCKED` the read would pass them by and miss them.
    let upto: Option<i64> = sqlx::query_scalar("SELECT MAX(id) FROM attempts_inbox")
        .fetch_one(p)
        .await?;
    let Some(upto) = upto else {
        return Ok(0);
    };
    let sql = pg_move_sql("WHERE id <= $2", "FOR UPDATE");
    let most = i64::try_from(MOVE_AT_MOST).unwrap_or(i64::MAX);
    let mut total = 0;
    loop {
        let n: i64 = sqlx::query_scalar(&sql)
            .bind(most)
            .bind(upto)
            .fetch_one(p)
            .await?;
        total += u64::try_from(n).unwrap_or(0);
        // Rows another mover held are gone from our chunk once it commits: look again.
        let left: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM attempts_inbox WHERE id <= $1)")
                .bind(upto)
                .fetch_one(p)
                .await?;
        if !left {
            return Ok(total);
        }
    }
}

/// Moves at most `most` records committed with their charges or by the log's writer
/// (`attempts_inbox`, migration 0018) into the log, atomically: on SQLite the oldest, in one
/// write transaction; on PostgreSQL one `DELETE … RETURNING` feeding the insert, its rows
/// locked with `SKIP LOCKED`, so nodes moving at once each move different rows. Cheap when
/// the inbox is empty (one read). Returns the records taken from the inbox (a crashed job's
/// second record among them is dropped, not logged).
pub(crate) async fn move_some(pool: &Pool, most: u64) -> Result<u64> {
    const WAITING: &str = "SELECT EXISTS (SELECT 1 FROM attempts_inbox)";
    on_pool!(pool: pool, p => {
        let waiting: bool = sqlx::query(WAITING).fetch_one(p).await?.try_get(0)?;
        if !waiting {
            return Ok(0);
        }
    });
    let most = i64::try_from(most).unwrap_or(i64::MAX);
    let moved = match pool {
        Pool::Sqlite(p) => {
            let mut tx = p.begin_with("BEGIN IMMEDIATE").await?;
            let upto: Option<i64> = sqlx::query_scalar(
                "SELECT MAX(rowid) FROM (SELECT rowid FROM attempts_inbox ORDER BY rowid LIMIT $1)",
            )
            .bind(most)
            .fetch_one(&mut *tx)
            .await?;
            let Some(upto) = upto else {
                return Ok(0);
            };
            // `WHERE`: SQLite's upsert after a SELECT needs one to parse.
            let sql = format!(
                "INSERT INTO attempts ({COLUMNS}) SELECT {COLUMNS} FROM attempts_inbox \
                 WHERE rowid <= $1 ORDER BY rowid {ONCE_PER_JOB}"
            );
            sqlx::query(&sql).bind(upto).execute(&mut *tx).await?;
            let moved = sqlx::query("DELETE FROM attempts_inbox WHERE rowid <= $1")
                .bind(upto)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            moved
        }
        Pool::Pg(p) => {
            let sql = pg_move_sql("", "FOR UPDATE SKIP LOCKED");
            let n: i64 = sqlx::query_scalar(&sql).bind(most).fetch_one(p).await?;
            u64::try_from(n).unwrap_or(0)
        }
    };
    Ok(moved)
}

/// PostgreSQL: one statement moving at most `$1` inbox rows (those `filter` keeps, locked with
/// `lock`) into the log and counting them; the upkeep skips rows another mover holds, a read
/// waits for them (`move_inbox`).
fn pg_move_sql(filter: &str, lock: &str) -> String {
    format!(
        "WITH moved AS (DELETE FROM attempts_inbox WHERE ctid = ANY(ARRAY(\
         SELECT ctid FROM attempts_inbox {filter} LIMIT $1 {lock})) RETURNING *), \
         logged AS (INSERT INTO attempts ({COLUMNS}) SELECT {COLUMNS} FROM moved \
         ORDER BY id {ONCE_PER_JOB}) \
         SELECT COUNT(*) FROM moved"
    )
}

/// References indexed per upkeep turn (SQLite): 20,000 a second, twice the benchmark's peak
/// rate; a larger backlog is worked off over several turns (searches read it unindexed).
const INDEX_AT_MOST: i64 = 5_000;

/// A turn that moved fewer records than this (1,000 a second) finds the service quiet enough
/// to catch the trigram index up. Busier, the index waits until more than
/// `BACKLOG_WHEN_BUSY` records are unindexed: filling it is the log's largest cost at SQLite's
/// one write lock, so a burst of verifications does not pay it; a quiet moment or a sustained
/// load past the backlog does, `INDEX_AT_MOST` a turn. A search reads the backlog directly
/// (100,000 unindexed: ~15 ms of CPU, docs/benchmarks.md), so nothing is missed meanwhile.
const QUIET_ROWS: u64 = 250;
const BACKLOG_WHEN_BUSY: i64 = 100_000;

/// SQLite: adds the references of the records after the mark (at most `most` of them: the
/// upkeep's turn at the write lock stays short whatever the backlog, e.g. after an upgrade) to
/// the trigram index and moves the mark, in one transaction; nothing when no more than `keep`
/// records wait.
pub(crate) async fn index_refs(pool: &Pool, most: Option<i64>, keep: i64) -> Result<()> {
    const MARKS: &str = "SELECT (SELECT upto FROM attempt_refs_mark WHERE only = 1), \
         (SELECT COALESCE(MAX(id), 0) FROM attempts)";
    let Pool::Sqlite(p) = pool else {
        return Ok(());
    };
    // Looked at outside a write transaction first: a turn that leaves the backlog takes no lock.
    let (upto, last): (i64, i64) = sqlx::query_as(MARKS).fetch_one(p).await?;
    if last.saturating_sub(upto) <= keep {
        return Ok(());
    }
    let mut tx = p.begin_with("BEGIN IMMEDIATE").await?;
    let (upto, last): (i64, i64) = sqlx::query_as(MARKS).fetch_one(&mut *tx).await?;
    let last = most.map_or(last, |n| last.min(upto.saturating_add(n)));
    if last > upto {
        sqlx::query(
            "INSERT INTO attempt_refs (rowid, trans_ref) SELECT id, trans_ref FROM attempts \
             WHERE id > $1 AND id <= $2 AND trans_ref IS NOT NULL",
        )
        .bind(upto)
        .bind(last)
        .execute(&mut *tx)
        .await?;
        sqlx::query("UPDATE attempt_refs_mark SET upto = $1 WHERE only = 1")
            .bind(last)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(())
}

const COLUMNS: &str = "at, service_id, branch_id, channel, kind, input, sending_bank, trans_ref, \
     amount_satang, outcome, error_code, mismatches, source, latency_ms, request_id, job_id";
const PER_ROW: usize = 16;

/// Inserts `rows` (`&[&Attempt]`) on `tx`, a transaction of either driver (inside `on_pool!`):
/// the log's own writer and the charge writer, which commits a charge's record with it.
macro_rules! insert_rows {
    ($pool:expr, $tx:ident, $rows:expr, $table:expr) => {{
        let rows: &[&domain::attempt::Attempt] = $rows;
        for chunk in rows.chunks($crate::attempts::rows_per_statement($pool)) {
            let sql = $crate::attempts::insert_sql($pool, $table, chunk.len());
            let mut q = sqlx::query(&sql);
            for a in chunk {
                q = q
                    .bind(domain::clock::to_millis(a.at))
                    .bind(a.service_id.as_str())
                    .bind(a.branch_id.as_str())
                    .bind(a.channel.as_str())
                    .bind(a.kind.as_str())
                    .bind(a.input.map(domain::attempt::InputKind::as_str))
                    .bind(a.sending_bank.as_deref())
                    .bind(a.trans_ref.as_deref())
                    .bind(a.amount.map(|s| s.0))
                    .bind(a.outcome.as_str())
                    .bind(a.error_code.as_deref())
                    .bind(a.mismatches.join(","))
                    .bind(a.source.as_deref())
                    .bind(i64::from(a.latency_ms))
                    .bind(a.request_id.as_deref())
                    .bind(a.job_id.as_ref().map(domain::JobId::as_str));
            }
            q.execute(&mut *$tx).await?;
        }
    }};
}
pub(crate) use insert_rows;

/// Where records are inserted: the log itself, or the inbox (a charge's transaction).
#[derive(Clone, Copy)]
pub(crate) enum Table {
    Log,
    Inbox,
}

/// A job's record is written once, also when a crashed worker's job runs again.
const ONCE_PER_JOB: &str = "ON CONFLICT (job_id) WHERE job_id IS NOT NULL DO NOTHING";

/// The INSERT of `n` records.
pub(crate) fn insert_sql(pool: &Pool, into: Table, n: usize) -> String {
    let values: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "({})",
                crate::sql::placeholders_on(pool, i * PER_ROW + 1, PER_ROW)
            )
        })
        .collect();
    let values = values.join(", ");
    match into {
        Table::Log => format!("INSERT INTO attempts ({COLUMNS}) VALUES {values} {ONCE_PER_JOB}"),
        Table::Inbox => format!("INSERT INTO attempts_inbox ({COLUMNS}) VALUES {values}"),
    }
}

/// Inserts `rows` in one transaction, `into` the log (bulk loads) or its inbox (the writer:
/// one unindexed table under the write lock while requests wait; the upkeep moves records
/// into the indexed log in bulk, as it does a charge's).
pub(crate) async fn insert(pool: &Pool, rows: &[&Attempt], into: Table) -> Result<()> {
    // SQLite: take the write lock up front (a deferred transaction that upgrades can fail at
    // once with "database is locked" instead of waiting its busy timeout).
    let begin = match pool {
        Pool::Sqlite(_) => "BEGIN IMMEDIATE",
        Pool::Pg(_) => "BEGIN",
    };
    on_pool!(pool: pool, p => {
        let mut tx = p.begin_with(begin).await?;
        if let Pool::Pg(_) = pool {
            // The log is not money: its commit need not wait for the WAL flush (it is visible
            // at once; a crash of the database may lose the last fraction of a second of it).
            sqlx::query("SET LOCAL synchronous_commit = off")
                .execute(&mut *tx)
                .await?;
        }
        insert_rows!(pool, tx, rows, into);
        tx.commit().await?;
        Ok(())
    })
}

enum Param {
    Text(String),
    Int(i64),
}

/// The rows matching `q`, newest first, at most `q.limit`.
pub(crate) async fn search(pool: &Pool, q: &AttemptQuery) -> Result<Vec<AttemptRow>> {
    move_inbox(pool).await?;
    let mut params: Vec<Param> = Vec::new();
    let next = |p: Param, params: &mut Vec<Param>| {
        params.push(p);
        format!("${}", params.len())
    };
    let mut clauses: Vec<String> = Vec::new();
    let mut text: Vec<String> = Vec::new();
    if let Some(part) = &q.text.reference {
        // A part of three characters or more is looked up in the trigram index (the domain
        // reads nothing shorter as a reference); a shorter one can only be a whole reference.
        if part.chars().count() >= 3 {
            let n = next(Param::Text(format!("%{part}%")), &mut params);
            text.push(match pool {
                // The index, and the records written since it last caught up (`index_refs`),
                // as one list of ids: written as two ORed conditions, SQLite walked the whole
                // log newest first testing each row (70 ms on 1,000,000; one list: 0.5 ms).
                Pool::Sqlite(_) => format!(
                    "id IN (SELECT rowid FROM attempt_refs WHERE attempt_refs.trans_ref LIKE {n} \
                     UNION ALL SELECT id FROM attempts \
                     WHERE id > (SELECT upto FROM attempt_refs_mark WHERE only = 1) \
                     AND trans_ref LIKE {n})"
                ),
                Pool::Pg(_) => format!("trans_ref ILIKE {n}"),
            });
        } else {
            let n = next(Param::Text(part.clone()), &mut params);
            text.push(format!("trans_ref = {n}"));
        }
    }
    if let Some(amount) = q.text.amount {
        let n = next(Param::Int(amount.0), &mut params);
        text.push(format!("amount_satang = {n}"));
    }
    if !text.is_empty() {
        clauses.push(format!("({})", text.join(" OR ")));
    } else if q.text.given {
        // A `q` that can be neither a reference nor an amount matches nothing.
        clauses.push("1 = 0".into());
    }
    if let Some(s) = &q.service_id {
        let n = next(Param::Text(s.as_str().into()), &mut params);
        clauses.push(format!("service_id = {n}"));
    }
    if let Some(b) = &q.branch_id {
        let n = next(Param::Text(b.as_str().into()), &mut params);
        clauses.push(format!("branch_id = {n}"));
    }
    if let Some(o) = q.outcome {
        let n = next(Param::Text(o.as_str().into()), &mut params);
        clauses.push(format!("outcome = {n}"));
    }
    if let Some(from) = q.from {
        let n = next(Param::Int(to_millis(from)), &mut params);
        clauses.push(format!("at >= {n}"));
    }
    if let Some(to) = q.to {
        let n = next(Param::Int(to_millis(to)), &mut params);
        clauses.push(format!("at < {n}"));
    }
    if let Some(c) = q.after {
        let a = next(Param::Int(c.at_ms), &mut params);
        let i = next(Param::Int(c.id), &mut params);
        clauses.push(format!("(at < {a} OR (at = {a} AND id < {i}))"));
    }
    let limit = next(Param::Int(i64::from(q.limit)), &mut params);
    let filter = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    let sql = format!(
        "SELECT id, {COLUMNS} FROM attempts {filter} ORDER BY at DESC, id DESC LIMIT {limit}"
    );
    on_pool!(pool: pool, p => {
        let mut query = sqlx::query(&sql);
        for param in &params {
            query = match param {
                Param::Text(s) => query.bind(s.as_str()),
                Param::Int(i) => query.bind(*i),
            };
        }
        let rows = query.fetch_all(p).await?;
        rows.iter().map(|r| {
            let corrupt = |what: &str, v: &str| StoreError::Corrupt(format!("attempts.{what} {v}"));
            let channel: String = r.try_get("channel")?;
            let kind: String = r.try_get("kind")?;
            let outcome: String = r.try_get("outcome")?;
            let input: Option<String> = r.try_get("input")?;
            let mismatches: String = r.try_get("mismatches")?;
            Ok(AttemptRow {
                id: r.try_get("id")?,
                attempt: Attempt {
                    at: from_millis(r.try_get("at")?),
                    service_id: r.try_get::<String, _>("service_id")?.into(),
                    branch_id: r.try_get::<String, _>("branch_id")?.into(),
                    channel: Channel::parse(&channel).ok_or_else(|| corrupt("channel", &channel))?,
                    kind: SlipKind::parse(&kind).ok_or_else(|| corrupt("kind", &kind))?,
                    input: match input {
                        Some(i) => Some(InputKind::parse(&i).ok_or_else(|| corrupt("input", &i))?),
                        None => None,
                    },
                    sending_bank: r.try_get("sending_bank")?,
                    trans_ref: r.try_get("trans_ref")?,
                    amount: r.try_get::<Option<i64>, _>("amount_satang")?.map(Satang),
                    outcome: Outcome::parse(&outcome).ok_or_else(|| corrupt("outcome", &outcome))?,
                    error_code: r.try_get("error_code")?,
                    mismatches: mismatches
                        .split(',')
                        .filter(|m| !m.is_empty())
                        .map(str::to_string)
                        .collect(),
                    source: r.try_get("source")?,
                    latency_ms: u32::try_from(r.try_get::<i64, _>("latency_ms")?).unwrap_or(u32::MAX),
                    request_id: r.try_get("request_id")?,
                    job_id: r.try_get::<Option<String>, _>("job_id")?.map(domain::JobId::from),
                },
            })
        }).collect()
    })
}

/// Deletes the records older than `before`, a chunk per statement; how many went.
pub(crate) async fn purge(pool: &Pool, before: OffsetDateTime) -> Result<u64> {
    // What waits in the inbox is part of the log (old only on a clock moved by hand).
    move_inbox(pool).await?;
    let sql = "DELETE FROM attempts WHERE id IN \
               (SELECT id FROM attempts WHERE at < $1 ORDER BY at LIMIT $2)";
    let mut total = 0;
    loop {
        let n = on_pool!(pool: pool, p => sqlx::query(sql)
            .bind(to_millis(before))
            .bind(PURGE_CHUNK)
            .execute(p)
            .await?
            .rows_affected());
        total += n;
        if n < PURGE_CHUNK as u64 {
            return Ok(total);
        }
    }
}

/// Blanks the personal fields of the stored transfers verified before `before`, in both
/// spaces (production and test); how many rows were blanked. Bank, reference, amount and time
/// stay: the duplicate check keeps working.
pub(crate) async fn blank_personal(
    pool: &Pool,
    before: OffsetDateTime,
    now: OffsetDateTime,
) -> Result<u64> {
    let mut total = 0;
    for table in ["verifications", "sandbox_verifications"] {
        let select = format!(
            "SELECT service_id, sending_bank, trans_ref, transfer_json FROM {table} \
             WHERE personal_blanked_at IS NULL AND verified_at < $1 LIMIT $2"
        );
        let update = format!(
            "UPDATE {table} SET transfer_json = $4, personal_blanked_at = $5 \
             WHERE service_id = $1 AND sending_bank = $2 AND trans_ref = $3"
        );
        loop {
            let n: u64 = on_pool!(pool: pool, p => {
                let rows = sqlx::query(&select)
                    .bind(to_millis(before))
                    .bind(PURGE_CHUNK)
                    .fetch_all(p)
                    .await?;
                let mut tx = p.begin().await?;
                for r in &rows {
                    let json: Option<String> = r.try_get(3)?;
                    let blanked = match json {
                        Some(j) => Some(
                            domain::model::VerifiedTransfer::from_json(&j)
                                .map_err(|e| StoreError::Corrupt(format!("transfer_json: {e}")))?
                                .without_personal()
                                .to_json(),
                        ),
                        None => None,
                    };
                    sqlx::query(&update)
                        .bind(r.try_get::<String, _>(0)?)
                        .bind(r.try_get::<String, _>(1)?)
                        .bind(r.try_get::<String, _>(2)?)
                        .bind(blanked)
                        .bind(to_millis(now))
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                rows.len() as u64
            });
            total += n;
            if n < PURGE_CHUNK as u64 {
                break;
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: usize) -> Attempt {
        Attempt {
            at: OffsetDateTime::now_utc(),
            service_id: "svc".into(),
            branch_id: "br".into(),
            channel: Channel::V2,
            kind: SlipKind::Bank,
            input: Some(InputKind::Payload),
            sending_bank: Some("004".into()),
            trans_ref: Some(format!("REFXYZ{n:04}")),
            amount: Some(Satang(100)),
            outcome: Outcome::Verified,
            error_code: None,
            mismatches: vec![],
            source: Some("sandbox".into()),
            latency_ms: 1,
            request_id: None,
            job_id: None,
        }
    }

    async fn mark(pool: &Pool) -> i64 {
        let Pool::Sqlite(p) = pool else {
            unreachable!()
        };
        sqlx::query_scalar("SELECT upto FROM attempt_refs_mark")
            .fetch_one(p)
            .await
            .unwrap()
    }

    async fn found(pool: &Pool, part: &str) -> usize {
        let q = AttemptQuery {
            text: domain::attempt::TextQuery::parse(part),
            limit: 50,
            ..AttemptQuery::default()
        };
        search(pool, &q).await.unwrap().len()
    }

    /// A fresh SQLite store with its migrations only: no upkeep task, a test takes the turns
    /// itself. Its file, to remove.
    async fn migrated() -> (crate::SqlStore, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!("sv-attempts-{}.db", uuid::Uuid::new_v4()));
        let store = crate::SqlStore::open(&format!("sqlite://{}", path.display()), None)
            .await
            .unwrap();
        store.migrate_up_to(i64::MAX).await.unwrap();
        (store, path)
    }

    /// A busy turn leaves the trigram index until the backlog passes `keep`, a quiet one (or a
    /// backlog past it) catches up at most `most` references; searches find the records either way.
    #[tokio::test]
    async fn the_index_waits_while_busy_and_searches_read_the_backlog() {
        let (store, path) = migrated().await;
        let pool = &store.pool;
        let rows: Vec<Attempt> = (0..3).map(record).collect();
        insert(pool, &rows.iter().collect::<Vec<_>>(), Table::Log)
            .await
            .unwrap();

        index_refs(pool, Some(INDEX_AT_MOST), 3).await.unwrap();
        assert_eq!(
            mark(pool).await,
            0,
            "a backlog of 3 is kept when 3 may wait"
        );
        assert_eq!(found(pool, "XYZ0001").await, 1, "found unindexed");
        index_refs(pool, Some(2), 2).await.unwrap();
        assert_eq!(
            mark(pool).await,
            2,
            "past the backlog: at most two references a turn"
        );
        index_refs(pool, Some(INDEX_AT_MOST), 0).await.unwrap();
        assert_eq!(mark(pool).await, 3);
        assert_eq!(found(pool, "XYZ0001").await, 1, "found indexed, once");
        assert_eq!(found(pool, "REFXYZ").await, 3);
        drop(store);
        let _ = std::fs::remove_file(&path);
    }

    /// A move takes at most `most` records, the oldest; `move_inbox` takes the rest in chunks.
    #[tokio::test]
    async fn a_move_is_bounded_and_takes_the_oldest_first() {
        let (store, path) = migrated().await;
        let pool = &store.pool;
        let rows: Vec<Attempt> = (0..5).map(record).collect();
        insert(pool, &rows.iter().collect::<Vec<_>>(), Table::Inbox)
            .await
            .unwrap();
        assert_eq!(move_some(pool, 2).await.unwrap(), 2);
        let Pool::Sqlite(p) = pool else {
            unreachable!()
        };
        let logged: Vec<String> = sqlx::query_scalar("SELECT trans_ref FROM attempts ORDER BY id")
            .fetch_all(p)
            .await
            .unwrap();
        assert_eq!(logged, ["REFXYZ0000", "REFXYZ0001"]);
        assert_eq!(move_inbox(pool).await.unwrap(), 3);
        let waiting: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM attempts_inbox")
            .fetch_one(p)
            .await
            .unwrap();
        assert_eq!(waiting, 0);
        assert_eq!(found(pool, "REFXYZ").await, 5);
        drop(store);
        let _ = std::fs::remove_file(&path);
    }
}
