//! Charging quota and recording slips, group-committed.
//!
//! Every verification of a service updates the same two counter rows, so verifications of one
//! service are serialised by the database whatever we do. Instead of one transaction (and one
//! commit, and on SQLite one fight for the write lock) per request, a writer task per process
//! takes whatever charges are queued and applies them in one transaction, each charge with the
//! same conditional statements as alone. The database still decides every race: another
//! process (node) runs its own writer against the same rows and unique key.

use crate::sql::{on_pool, placeholders, Pool};
use crate::{ChargeOutcome, Result, StoreError, VerificationRecord};
use domain::clock::{from_millis, to_millis};
use domain::cycle::{cycle_start, effective};
use domain::quota::{grant, Quota};
use sqlx::Row;
use tokio::sync::{mpsc, oneshot};

/// Most charges applied in one transaction; bounds the time locks are held.
const MAX_BATCH: usize = 128;
/// Queued charges beyond this make callers wait (back-pressure instead of unbounded memory).
const QUEUE: usize = 4096;

type Reply = oneshot::Sender<Result<ChargeOutcome>>;

#[derive(Clone)]
pub(crate) struct ChargeWriter {
    tx: mpsc::Sender<(VerificationRecord, Reply)>,
}

impl ChargeWriter {
    pub(crate) fn spawn(pool: Pool) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(run(pool, rx));
        Self { tx }
    }

    /// Queues a charge and waits for its outcome. If the caller stops waiting (the client went
    /// away), the charge is still applied or refused as a whole: nothing is half-written.
    pub(crate) async fn charge(&self, rec: VerificationRecord) -> Result<ChargeOutcome> {
        let (reply, outcome) = oneshot::channel();
        self.tx
            .send((rec, reply))
            .await
            .map_err(|_| StoreError::WriteFailed("charge writer stopped".into()))?;
        outcome
            .await
            .map_err(|_| StoreError::WriteFailed("charge writer stopped".into()))?
    }
}

async fn run(pool: Pool, mut rx: mpsc::Receiver<(VerificationRecord, Reply)>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // One lock order for every transaction of every node: by service, then branch (a
        // service's row is always locked before its branches'), so batches never deadlock.
        batch.sort_by(|(a, _), (b, _)| {
            (&a.service_id, &a.branch_id, &a.sending_bank, &a.trans_ref).cmp(&(
                &b.service_id,
                &b.branch_id,
                &b.sending_bank,
                &b.trans_ref,
            ))
        });
        let recs: Vec<&VerificationRecord> = batch.iter().map(|(r, _)| r).collect();
        match apply(&pool, &recs).await {
            Ok(outcomes) => {
                for ((_, reply), outcome) in batch.drain(..).zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(e) if batch.len() == 1 => {
                if let Some((_, reply)) = batch.pop() {
                    let _ = reply.send(Err(e));
                }
            }
            Err(e) => {
                // One bad charge must not fail its neighbours: retry each on its own.
                tracing::warn!(error = %e, size = batch.len(), "charge batch failed; retrying singly");
                for (rec, reply) in batch.drain(..) {
                    let outcome = match apply(&pool, &[&rec]).await {
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
/// statements: lock and read the counters, decide with `domain::quota::grant` (the same rule
/// as one conditional UPDATE per charge), write the counters, insert the granted slips.
/// The outer error means nothing was committed.
async fn apply(pool: &Pool, recs: &[&VerificationRecord]) -> Result<Vec<Result<ChargeOutcome>>> {
    let mut service_ids: Vec<&str> = recs.iter().map(|r| r.service_id.as_str()).collect();
    service_ids.dedup(); // sorted by the caller
                         // "Now" for cycle boundaries: the latest verification time in the batch (all are within
                         // the batching delay of each other).
    let now = recs
        .iter()
        .map(|r| r.verified_at)
        .max()
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut branch_ids: Vec<&str> = recs.iter().map(|r| r.branch_id.as_str()).collect();
    branch_ids.sort_unstable();
    branch_ids.dedup();
    // SQLite: take the write lock up front, so the reads below see what we then update.
    // PostgreSQL: row locks in id order (`FOR UPDATE` after `ORDER BY`), services first.
    let (begin, lock) = match pool {
        Pool::Sqlite(_) => ("BEGIN IMMEDIATE", ""),
        Pool::Pg(_) => ("BEGIN", " FOR UPDATE"),
    };
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
    on_pool!(pool: pool, p => {
        let mut tx = p.begin_with(begin).await?;

        let mut q = sqlx::query(&svc_sql);
        for id in &service_ids {
            q = q.bind(*id);
        }
        // Counters as they stand in the current cycle: usage stored for an earlier cycle is 0.
        let mut services: Vec<(String, Quota, i64)> = Vec::new();
        for r in q.fetch_all(&mut *tx).await? {
            let stored = Quota { limit: r.try_get(1)?, used: r.try_get(2)?, total_used: r.try_get(3)? };
            let cycle = cycle_start(from_millis(r.try_get(4)?), now);
            let q = effective(stored, from_millis(r.try_get(5)?), cycle);
            services.push((r.try_get(0)?, q, to_millis(cycle)));
        }
        let mut q = sqlx::query(&br_sql);
        for id in &branch_ids {
            q = q.bind(*id);
        }
        let mut branches: Vec<(String, String, Quota)> = Vec::new();
        for r in q.fetch_all(&mut *tx).await? {
            let service_id: String = r.try_get(1)?;
            let stored = Quota { limit: r.try_get(2)?, used: r.try_get(3)?, total_used: r.try_get(4)? };
            // A branch's cycle is its service's; a branch whose service is not in this batch
            // cannot be charged anyway.
            let cycle = services
                .iter()
                .find(|(id, _, _)| *id == service_id)
                .map(|(_, _, c)| from_millis(*c))
                .unwrap_or(now);
            let q = effective(stored, from_millis(r.try_get(5)?), cycle);
            branches.push((r.try_get(0)?, service_id, q));
        }

        // Jobs charged before (their worker crashed after the charge) are not charged again:
        // they get the outcome recorded then. The service rows are locked, so this read
        // cannot race another charge of the same job.
        let job_ids: Vec<&str> = recs.iter().filter_map(|r| r.job_id.as_deref()).collect();
        let mut charged_before: Vec<(String, bool)> = Vec::new();
        if !job_ids.is_empty() {
            let sql = format!(
                "SELECT id, charged_first FROM jobs WHERE id IN ({}) AND charged_first IS NOT NULL",
                placeholders(1, job_ids.len())
            );
            let mut q = sqlx::query(&sql);
            for id in &job_ids {
                q = q.bind(*id);
            }
            for r in q.fetch_all(&mut *tx).await? {
                charged_before.push((r.try_get(0)?, r.try_get(1)?));
            }
        }
        // The same for requests under an `Idempotency-Key` (a node died after charging one).
        let keyed: Vec<(&str, &str)> = recs
            .iter()
            .filter_map(|r| Some((r.branch_id.as_str(), r.idempotency_key.as_deref()?)))
            .collect();
        let mut keyed_before: Vec<(String, String, bool)> = Vec::new();
        if !keyed.is_empty() {
            let cond = (0..keyed.len())
                .map(|i| format!("(branch_id = ${} AND idem_key = ${})", 2 * i + 1, 2 * i + 2))
                .collect::<Vec<_>>()
                .join(" OR ");
            let sql = format!(
                "SELECT branch_id, idem_key, charged_first FROM idempotency_keys \
                 WHERE ({cond}) AND charged_first IS NOT NULL"
            );
            let mut q = sqlx::query(&sql);
            for (b, k) in &keyed {
                q = q.bind(*b).bind(*k);
            }
            for r in q.fetch_all(&mut *tx).await? {
                keyed_before.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
            }
        }
        let before_outcome = |rec: &VerificationRecord| {
            let job = rec.job_id.as_deref().and_then(|j| {
                charged_before.iter().find(|(id, _)| id == j).map(|(_, f)| *f)
            });
            job.or_else(|| {
                let k = rec.idempotency_key.as_deref()?;
                keyed_before
                    .iter()
                    .find(|(b, kk, _)| *b == rec.branch_id && kk == k)
                    .map(|(_, _, f)| *f)
            })
        };

        // Charges whose service or branch is missing, or whose branch belongs to another
        // service, are refused like an exhausted quota (as the conditional UPDATEs would).
        // The same job twice in one batch (its lease ran out while its first charge was
        // queued, and another worker queued it again): only the first is charged; the others
        // get its outcome.
        let first_of_job: Vec<Option<usize>> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                recs[..i].iter().position(|o| charged_once_together(o, r))
            })
            .collect();
        let mut charges = Vec::with_capacity(recs.len());
        let mut valid = Vec::with_capacity(recs.len());
        for (i, rec) in recs.iter().enumerate() {
            if before_outcome(rec).is_some() || first_of_job[i].is_some() {
                valid.push(false);
                continue;
            }
            let s = services.iter().position(|(id, _, _)| *id == rec.service_id);
            let b = branches
                .iter()
                .position(|(id, sid, _)| *id == rec.branch_id && *sid == rec.service_id);
            match (s, b) {
                (Some(s), Some(b)) => {
                    charges.push((s, b));
                    valid.push(true);
                }
                _ => valid.push(false),
            }
        }
        let before_s: Vec<i64> = services.iter().map(|(_, q, _)| q.used).collect();
        let before_b: Vec<i64> = branches.iter().map(|(_, _, q)| q.used).collect();
        let mut sq: Vec<Quota> = services.iter().map(|(_, q, _)| *q).collect();
        let mut bq: Vec<Quota> = branches.iter().map(|(_, _, q)| *q).collect();
        let granted_valid = grant(&charges, &mut sq, &mut bq);

        // The rows are locked: writing the new absolute `used` (and the cycle it counts) is safe.
        for (i, (id, _, cycle)) in services.iter().enumerate() {
            let n = sq[i].used - before_s[i];
            if n > 0 {
                sqlx::query(
                    "UPDATE services SET used_quota = $2, \
                     total_used_quota = total_used_quota + $3, cycle_start = $4 WHERE id = $1",
                )
                .bind(id)
                .bind(sq[i].used)
                .bind(n)
                .bind(cycle)
                .execute(&mut *tx)
                .await?;
            }
        }
        for (i, (id, service_id, _)) in branches.iter().enumerate() {
            let n = bq[i].used - before_b[i];
            let cycle = services.iter().find(|(sid, _, _)| sid == service_id).map(|(_, _, c)| *c);
            if let (true, Some(cycle)) = (n > 0, cycle) {
                sqlx::query(
                    "UPDATE branches SET used_quota = $2, \
                     total_used_quota = total_used_quota + $3, cycle_start = $4 WHERE id = $1",
                )
                .bind(id)
                .bind(bq[i].used)
                .bind(n)
                .bind(cycle)
                .execute(&mut *tx)
                .await?;
            }
        }

        let mut granted_iter = granted_valid.into_iter();
        let granted: Vec<bool> = valid
            .iter()
            .map(|v| *v && granted_iter.next().unwrap_or(false))
            .collect();
        let to_insert: Vec<&VerificationRecord> = recs
            .iter()
            .zip(&granted)
            .filter(|(_, g)| **g)
            .map(|(r, _)| *r)
            .collect();
        // The inserted rows come back: a slip inserted here is its service's first
        // verification; the first charge for it in this batch is the one that gets it.
        let mut inserted: Vec<(String, String, String)> = Vec::new();
        if !to_insert.is_empty() {
            let values = (0..to_insert.len())
                .map(|i| format!("({})", placeholders(i * 9 + 1, 9)))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "INSERT INTO verifications (service_id, sending_bank, trans_ref, branch_id, \
                 amount_satang, transferred_at, verified_at, transfer_json, source) VALUES {values} \
                 ON CONFLICT (service_id, sending_bank, trans_ref) DO NOTHING \
                 RETURNING service_id, sending_bank, trans_ref"
            );
            let mut q = sqlx::query(&sql);
            for rec in &to_insert {
                q = q
                    .bind(&rec.service_id)
                    .bind(&rec.sending_bank)
                    .bind(&rec.trans_ref)
                    .bind(&rec.branch_id)
                    .bind(rec.amount.0)
                    .bind(to_millis(rec.transferred_at))
                    .bind(to_millis(rec.verified_at))
                    .bind(rec.transfer.as_ref().map(|t| t.to_json()))
                    .bind(&rec.source);
            }
            for r in q.fetch_all(&mut *tx).await? {
                inserted.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
            }
        }
        let mut outcomes: Vec<Result<ChargeOutcome>> = recs
            .iter()
            .zip(&granted)
            .map(|(rec, g)| {
                if let Some(first) = before_outcome(rec) {
                    return Ok(ChargeOutcome { first_verification: first });
                }
                if !*g {
                    return Err(StoreError::QuotaExceeded);
                }
                let key = (&rec.service_id, &rec.sending_bank, &rec.trans_ref);
                let first = match inserted.iter().position(|(s, b, t)| (s, b, t) == key) {
                    Some(i) => {
                        inserted.swap_remove(i);
                        true
                    }
                    None => false,
                };
                Ok(ChargeOutcome { first_verification: first })
            })
            .collect();
        for (i, first) in first_of_job.iter().enumerate() {
            if let (Some(f), None) = (first, before_outcome(recs[i])) {
                outcomes[i] = match &outcomes[*f] {
                    Ok(o) => Ok(*o),
                    Err(_) => Err(StoreError::QuotaExceeded),
                };
            }
        }
        // One statement for the batch's jobs: a round trip per job here would be paid while
        // every other charge waits for this transaction.
        let charged_jobs: Vec<(&str, bool)> = recs
            .iter()
            .zip(&granted)
            .zip(&outcomes)
            .filter_map(|((rec, g), outcome)| match (&rec.job_id, *g, outcome) {
                (Some(job), true, Ok(o)) => Some((job.as_str(), o.first_verification)),
                _ => None,
            })
            .collect();
        for ((rec, g), outcome) in recs.iter().zip(&granted).zip(&outcomes) {
            if let (Some(key), true, Ok(o)) = (&rec.idempotency_key, *g, outcome) {
                sqlx::query(
                    "UPDATE idempotency_keys SET charged_first = $3 \
                     WHERE branch_id = $1 AND idem_key = $2",
                )
                .bind(&rec.branch_id)
                .bind(key)
                .bind(o.first_verification)
                .execute(&mut *tx)
                .await?;
            }
        }
        if !charged_jobs.is_empty() {
            let cases = (0..charged_jobs.len())
                .map(|i| format!("WHEN ${} THEN CAST(${} AS BOOLEAN)", 2 * i + 1, 2 * i + 2))
                .collect::<Vec<_>>()
                .join(" ");
            let ids = (0..charged_jobs.len())
                .map(|i| format!("${}", 2 * i + 1))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "UPDATE jobs SET charged_first = CASE id {cases} END WHERE id IN ({ids})"
            );
            let mut q = sqlx::query(&sql);
            for (job, first) in &charged_jobs {
                q = q.bind(*job).bind(*first);
            }
            q.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(outcomes)
    })
}

/// Two charges that may happen only once between them: the same job, or the same branch's
/// `Idempotency-Key`.
fn charged_once_together(a: &VerificationRecord, b: &VerificationRecord) -> bool {
    let same_job = a.job_id.is_some() && a.job_id == b.job_id;
    let same_key = a.idempotency_key.is_some()
        && a.idempotency_key == b.idempotency_key
        && a.branch_id == b.branch_id;
    same_job || same_key
}
