//! Charging quota and recording slips, group-committed.
//!
//! Every verification of a service updates the same two counter rows, so verifications of one
//! service are serialised by the database whatever we do. Instead of one transaction (and one
//! commit, and on SQLite one fight for the write lock) per request, a writer task per process
//! takes whatever charges are queued and applies them in one transaction, each charge with the
//! same conditional statements as alone. The database still decides every race: another
//! process (node) runs its own writer against the same rows and unique key.

use crate::sql::{on_pool, Pool};
use crate::{ChargeOutcome, Result, StoreError, VerificationRecord};
use domain::clock::to_millis;
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

/// Applies the charges in one transaction; the outer error means nothing was committed.
async fn apply(pool: &Pool, recs: &[&VerificationRecord]) -> Result<Vec<Result<ChargeOutcome>>> {
    on_pool!(pool: pool, p => {
        let mut tx = p.begin().await?;
        let mut out = Vec::with_capacity(recs.len());
        for rec in recs {
            let s = sqlx::query(
                "UPDATE services SET used_quota = used_quota + 1, \
                 total_used_quota = total_used_quota + 1 \
                 WHERE id = $1 AND (limit_quota IS NULL OR used_quota < limit_quota)",
            )
            .bind(&rec.service_id)
            .execute(&mut *tx)
            .await?;
            if s.rows_affected() != 1 {
                out.push(Err(StoreError::QuotaExceeded));
                continue;
            }
            let b = sqlx::query(
                "UPDATE branches SET used_quota = used_quota + 1, \
                 total_used_quota = total_used_quota + 1 \
                 WHERE id = $1 AND service_id = $2 \
                 AND (limit_quota IS NULL OR used_quota < limit_quota)",
            )
            .bind(&rec.branch_id)
            .bind(&rec.service_id)
            .execute(&mut *tx)
            .await?;
            if b.rows_affected() != 1 {
                // Undo this charge's service unit inside the same transaction.
                sqlx::query(
                    "UPDATE services SET used_quota = used_quota - 1, \
                     total_used_quota = total_used_quota - 1 WHERE id = $1",
                )
                .bind(&rec.service_id)
                .execute(&mut *tx)
                .await?;
                out.push(Err(StoreError::QuotaExceeded));
                continue;
            }
            let ins = sqlx::query(
                "INSERT INTO verifications (service_id, sending_bank, trans_ref, branch_id, \
                 amount_satang, transferred_at, verified_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (service_id, sending_bank, trans_ref) DO NOTHING",
            )
            .bind(&rec.service_id)
            .bind(&rec.sending_bank)
            .bind(&rec.trans_ref)
            .bind(&rec.branch_id)
            .bind(rec.amount.0)
            .bind(to_millis(rec.transferred_at))
            .bind(to_millis(rec.verified_at))
            .execute(&mut *tx)
            .await?;
            out.push(Ok(ChargeOutcome {
                first_verification: ins.rows_affected() == 1,
            }));
        }
        tx.commit().await?;
        Ok(out)
    })
}
