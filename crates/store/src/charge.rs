//! Charging quota and recording slips, group-committed.
//!
//! Every verification of a service updates the same two counter rows, so verifications of one
//! service are serialised by the database whatever we do. Instead of one transaction (and one
//! commit, and on SQLite one fight for the write lock) per request, a writer task per process
//! takes whatever charges are queued and applies them in one transaction, each charge with the
//! same conditional statements as alone. The database still decides every race: another
//! process (node) runs its own writer against the same rows and unique key.

mod plan;

use crate::sql::{on_pool, placeholders, Held, Pool};
use crate::{ChargeOutcome, Result, StoreError, VerificationRecord};
use domain::attempt::{Attempt, AttemptDraft};
use domain::quota::Quota;
use plan::{batch_now, branch_row, decide, service_row, Snapshot};
use sqlx::Row;
use tokio::sync::{mpsc, oneshot};

/// Most charges applied in one transaction; bounds the time locks are held.
const MAX_BATCH: usize = 128;
/// Queued charges beyond this make callers wait (back-pressure instead of unbounded memory).
const QUEUE: usize = 4096;

type Reply = oneshot::Sender<Result<ChargeOutcome>>;
/// A queued charge: the slip, its attempts-log record to commit with it, and who waits.
type Queued = (VerificationRecord, Option<AttemptDraft>, Reply);

#[derive(Clone)]
pub(crate) struct ChargeWriter {
    tx: mpsc::Sender<Queued>,
}

impl ChargeWriter {
    pub(crate) fn spawn(pool: Pool, gate: crate::sql::WriteGate) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, gate, rx));
        Self { tx }
    }

    /// Queues a charge and waits for its outcome. If the caller stops waiting (the client went
    /// away), the charge is still applied or refused as a whole: nothing is half-written.
    pub(crate) async fn charge(
        &self,
        rec: VerificationRecord,
        draft: Option<AttemptDraft>,
    ) -> Result<ChargeOutcome> {
        let (reply, outcome) = oneshot::channel();
        self.tx
            .send((rec, draft, reply))
            .await
            .map_err(|_| StoreError::WriteFailed("charge writer stopped".into()))?;
        outcome
            .await
            .map_err(|_| StoreError::WriteFailed("charge writer stopped".into()))?
    }
}

async fn run(pool: Pool, gate: crate::sql::WriteGate, mut rx: mpsc::Receiver<Queued>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut held = Held::default();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // One lock order for every transaction of every node: by service, then branch (a
        // service's row is always locked before its branches'), so batches never deadlock.
        batch.sort_by(|(a, ..), (b, ..)| {
            (&a.service_id, &a.branch_id, &a.sending_bank, &a.trans_ref).cmp(&(
                &b.service_id,
                &b.branch_id,
                &b.sending_bank,
                &b.trans_ref,
            ))
        });
        let recs: Vec<&VerificationRecord> = batch.iter().map(|(r, ..)| r).collect();
        let drafts: Vec<Option<&AttemptDraft>> = batch.iter().map(|(_, d, _)| d.as_ref()).collect();
        let turn = gate.turn(&pool).await;
        let applied = apply(&pool, &mut held, &recs, &drafts).await;
        if applied.is_err() {
            held.release();
        }
        drop(turn);
        match applied {
            Ok(outcomes) => {
                for ((.., reply), outcome) in batch.drain(..).zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some((.., reply)) = batch.pop() {
                    let _ = reply.send(Err(e));
                }
            }
            Err(e) => {
                // One bad charge must not fail its neighbours: retry each on its own.
                tracing::warn!(error = %e, size = batch.len(), "charge batch failed; retrying singly");
                for (rec, draft, reply) in batch.drain(..) {
                    let single = apply(&pool, &mut held, &[&rec], &[draft.as_ref()]).await;
                    if single.is_err() {
                        held.release();
                    }
                    let outcome = match single {
                        Ok(mut v) => v.pop().unwrap_or_else(|| {
                            Err(StoreError::WriteFailed("empty outcome".into()))
                        }),
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(outcome);
                }
            }
        }
    }
}

/// Applies the charges (sorted as in `run`) in one transaction with a fixed number of
/// statements: lock and read the counters (`Snapshot`), decide with `plan::decide` (the same
/// rule as one conditional UPDATE per charge), write the counters, insert the granted slips,
/// record the charged jobs and keys (`Plan::settle`), and the granted charges' attempts-log
/// records (`drafts`, one per charge). The outer error means nothing was committed.
async fn apply(
    pool: &Pool,
    held: &mut Held,
    recs: &[&VerificationRecord],
    drafts: &[Option<&AttemptDraft>],
) -> Result<Vec<Result<ChargeOutcome>>> {
    let mut service_ids: Vec<&str> = recs.iter().map(|r| r.service_id.as_str()).collect();
    service_ids.dedup(); // sorted by the caller
    let now = batch_now(recs);
    let mut branch_ids: Vec<&str> = recs.iter().map(|r| r.branch_id.as_str()).collect();
    branch_ids.sort_unstable();
    branch_ids.dedup();
    let job_ids: Vec<&str> = recs
        .iter()
        .filter_map(|r| r.job_id.as_ref().map(domain::JobId::as_str))
        .collect();
    let keyed: Vec<(&str, &str)> = recs
        .iter()
        .filter_map(|r| Some((r.branch_id.as_str(), r.idempotency_key.as_deref()?)))
        .collect();
    // SQLite: take the write lock up front, so the reads below see what we then update.
    // PostgreSQL: row locks in id order (`FOR UPDATE` after `ORDER BY`), services first.
    let (begin, lock) = pool.read_for_update();
    let svc_sql = format!(
        "SELECT id, limit_quota, used_quota, total_used_quota, billing_anchor, cycle_start \
         FROM services WHERE id IN ({}) ORDER BY id{lock}",
        placeholders(1, service_ids.len())
    );
    let br_sql = format!(
        "SELECT id, service_id, limit_quota, used_quota, total_used_quota, cycle_start \
         FROM branches WHERE id IN ({}) ORDER BY id{lock}",
        placeholders(1, branch_ids.len())
    );
    // The service rows are locked before these reads, so they cannot race another charge of
    // the same job or key.
    let jobs_sql = format!(
        "SELECT id, charged_first FROM jobs WHERE id IN ({}) AND charged_first IS NOT NULL",
        placeholders(1, job_ids.len())
    );
    let keys_sql = format!(
        "SELECT branch_id, idem_key, charged_first FROM idempotency_keys \
         WHERE ({}) AND charged_first IS NOT NULL",
        (0..keyed.len())
            .map(|i| format!("(branch_id = ${} AND idem_key = ${})", 2 * i + 1, 2 * i + 2))
            .collect::<Vec<_>>()
            .join(" OR ")
    );
    let one_query = matches!(pool, Pool::Sqlite(_));
    // Only the statements run on a driver's own connection type are inside `on_pool!`.
    on_pool!(pool: pool, p => {
        let mut tx = sqlx::Connection::begin_with(held.conn(p).await?, begin).await?;

        // Read.
        let mut snap = Snapshot::default();
        let mut q = sqlx::query(&svc_sql);
        for id in &service_ids {
            q = q.bind(*id);
        }
        for r in q.fetch_all(&mut *tx).await? {
            let stored = Quota { limit: r.try_get(1)?, used: r.try_get(2)?, total_used: r.try_get(3)? };
            snap.services.push(service_row(r.try_get(0)?, stored, r.try_get(4)?, r.try_get(5)?, now));
        }
        let mut q = sqlx::query(&br_sql);
        for id in &branch_ids {
            q = q.bind(*id);
        }
        for r in q.fetch_all(&mut *tx).await? {
            let stored = Quota { limit: r.try_get(2)?, used: r.try_get(3)?, total_used: r.try_get(4)? };
            let row = branch_row(r.try_get(0)?, r.try_get(1)?, stored, r.try_get(5)?, &snap.services, now);
            snap.branches.push(row);
        }
        if !job_ids.is_empty() {
            let mut q = sqlx::query(&jobs_sql);
            for id in &job_ids {
                q = q.bind(*id);
            }
            for r in q.fetch_all(&mut *tx).await? {
                snap.jobs_before.push((r.try_get(0)?, r.try_get(1)?));
            }
        }
        if !keyed.is_empty() {
            let mut q = sqlx::query(&keys_sql);
            for (b, k) in &keyed {
                q = q.bind(*b).bind(*k);
            }
            for r in q.fetch_all(&mut *tx).await? {
                snap.keys_before.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
            }
        }

        // Decide.
        let plan = decide(recs, &snap);

        // Write. The rows are locked: writing the new absolute `used` (and the cycle it
        // counts) is safe.
        let updates: Vec<_> = plan.service_updates.iter().map(|u| ("services", u))
            .chain(plan.branch_updates.iter().map(|u| ("branches", u)))
            .collect();
        if one_query {
            // SQLite: every counter in one multi-statement query, one round trip to the
            // driver's thread (each statement would be one, inside the writer's turn).
            if !updates.is_empty() {
                let sql = updates
                    .iter()
                    .enumerate()
                    .map(|(i, (table, _))| update_sql(table, 4 * i))
                    .collect::<Vec<_>>()
                    .join("; ");
                let mut q = sqlx::query(&sql);
                for (_, u) in &updates {
                    q = q.bind(&u.id).bind(u.used).bind(u.added).bind(u.cycle);
                }
                q.execute(&mut *tx).await?;
            }
        } else {
            for (table, u) in &updates {
                sqlx::query(&update_sql(table, 0))
                    .bind(&u.id)
                    .bind(u.used)
                    .bind(u.added)
                    .bind(u.cycle)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        let to_insert = plan.to_insert(recs);
        let mut inserted: Vec<(String, String, String)> = Vec::new();
        if !to_insert.is_empty() {
            let sql = insert_sql(pool, to_insert.len());
            let mut q = sqlx::query_as(&sql);
            for rec in &to_insert {
                q = bind_record!(q, rec);
            }
            inserted = q.fetch_all(&mut *tx).await?;
        }
        let mut settled = plan.settle(recs, inserted);
        // A charge granted here (not one recorded earlier for its job or key) logs its record.
        let mut logged: Vec<Attempt> = Vec::new();
        for ((draft, outcome), granted) in drafts.iter().zip(&mut settled.outcomes).zip(&plan.granted) {
            if let (Some(draft), Ok(o), true) = (draft, outcome, *granted) {
                logged.push(draft.finish(o.first_verification));
                o.attempt_logged = true;
            }
        }
        let logged: Vec<&Attempt> = logged.iter().collect();
        crate::attempts::insert_rows!(pool, tx, &logged, crate::attempts::Table::Inbox);
        for (branch, key, first) in &settled.keys {
            sqlx::query(UPDATE_KEY)
                .bind(*branch)
                .bind(*key)
                .bind(*first)
                .execute(&mut *tx)
                .await?;
        }
        // One statement for the batch's jobs: a round trip per job here would be paid while
        // every other charge waits for this transaction.
        if !settled.jobs.is_empty() {
            let sql = jobs_update_sql(settled.jobs.len());
            let mut q = sqlx::query(&sql);
            for (job, first) in &settled.jobs {
                q = q.bind(*job).bind(*first);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(settled.outcomes)
    })
}

/// A counter row's new `used`, the units added to its total and the cycle it counts, in
/// `services` or `branches`; its parameters numbered from `off + 1` (id, used, added, cycle).
fn update_sql(table: &str, off: usize) -> String {
    format!(
        "UPDATE {table} SET used_quota = ${}, total_used_quota = total_used_quota + ${}, \
         cycle_start = ${} WHERE id = ${}",
        off + 2,
        off + 3,
        off + 4,
        off + 1
    )
}
const UPDATE_KEY: &str =
    "UPDATE idempotency_keys SET charged_first = $3 WHERE branch_id = $1 AND idem_key = $2";

/// Binds a [`VerificationRecord`]'s nine columns in the order the inserts name them
/// (`service_id, sending_bank, trans_ref, branch_id, amount_satang, transferred_at,
/// verified_at, transfer_json, source`): `verifications` here, `sandbox_verifications` in
/// `sandbox.rs`. A macro, as the query is one of either driver's (inside `on_pool!`).
macro_rules! bind_record {
    ($q:expr, $rec:expr) => {{
        let rec: &$crate::VerificationRecord = $rec;
        $q.bind(rec.service_id.as_str())
            .bind(&rec.sending_bank)
            .bind(&rec.trans_ref)
            .bind(rec.branch_id.as_str())
            .bind(rec.amount.0)
            .bind(domain::clock::to_millis(rec.transferred_at))
            .bind(domain::clock::to_millis(rec.verified_at))
            .bind(rec.transfer.as_ref().map(|t| t.to_json()))
            .bind(&rec.source)
    }};
}
pub(crate) use bind_record;

/// Inserts `n` slips; the rows inserted (not already there) come back.
fn insert_sql(pool: &Pool, n: usize) -> String {
    let values = (0..n)
        .map(|i| format!("({})", crate::sql::placeholders_on(pool, i * 9 + 1, 9)))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO verifications (service_id, sending_bank, trans_ref, branch_id, \
         amount_satang, transferred_at, verified_at, transfer_json, source) VALUES {values} \
         ON CONFLICT (service_id, sending_bank, trans_ref) DO NOTHING \
         RETURNING service_id, sending_bank, trans_ref"
    )
}

/// Marks `n` jobs charged, each with its own first-verification flag.
fn jobs_update_sql(n: usize) -> String {
    let cases = (0..n)
        .map(|i| format!("WHEN ${} THEN CAST(${} AS BOOLEAN)", 2 * i + 1, 2 * i + 2))
        .collect::<Vec<_>>()
        .join(" ");
    let ids = (0..n)
        .map(|i| format!("${}", 2 * i + 1))
        .collect::<Vec<_>>()
        .join(", ");
    format!("UPDATE jobs SET charged_first = CASE id {cases} END WHERE id IN ({ids})")
}
