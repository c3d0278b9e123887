//! `Idempotency-Key` rows (migration 0013): the database decides which request of a key runs.
//! `begin` forgets the key's own row if it is past its 24 h, then `INSERT … ON CONFLICT DO
//! NOTHING`; a request that finds a
//! row gets its stored answer, "running", or "reused" (another request); a running row whose
//! lease passed (its node died) is taken over by one retry, decided by a guarded UPDATE.

use crate::sql::{execute, on_pool};
use crate::Result;
use crate::SqlStore;
use domain::clock::to_millis;
use domain::BranchId;
use sqlx::Row;
use time::OffsetDateTime;

/// What a request with an `Idempotency-Key` should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdemBegin {
    /// Run it. `takeover`: a request before it ran under this key and its node died; it may
    /// have been charged (the charge writer looks at `charged_first`). `first_used_ms`: when
    /// this use of the key began (the row's `created_at`), the same for a takeover: ids derived
    /// from the key include it, so a key reused after it was forgotten never names old rows.
    Run { takeover: bool, first_used_ms: i64 },
    /// The answer of the request that ran under this key.
    Stored { status: u16, body: String },
    /// The request that holds the key is still running; its lease ends at this time
    /// (milliseconds; 0 when unknown).
    Running { lease_until_ms: i64 },
    /// The key was used for a different request.
    Reused,
}

/// The key's row as `begin` needs it.
pub struct IdemKey<'a> {
    pub branch_id: &'a domain::BranchId,
    pub key: &'a str,
    pub fingerprint: &'a str,
}

impl SqlStore {
    /// `Idempotency-Key`: forgets this key if it was first used before `forget_before`, then
    /// claims it for this request (lease until `lease_until`) or says why not (`IdemBegin`).
    pub async fn idempotency_begin(
        &self,
        key: &IdemKey<'_>,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<IdemBegin> {
        let pool = &self.pool;
        let k = key;
        on_pool!(pool: pool, p => {
            // Keys are kept 24 h: this key's own row, if older, is forgotten now (by its primary
            // key); the other old rows are the periodic sweep's (`sweep`), off the request path.
            sqlx::query(
                "DELETE FROM idempotency_keys WHERE branch_id = $1 AND idem_key = $2 AND created_at < $3",
            )
            .bind(k.branch_id.as_str())
            .bind(k.key)
            .bind(to_millis(forget_before))
            .execute(p)
            .await?;
            let inserted = sqlx::query(
                "INSERT INTO idempotency_keys (branch_id, idem_key, fingerprint, created_at, lease_until) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (branch_id, idem_key) DO NOTHING",
            )
            .bind(k.branch_id.as_str())
            .bind(k.key)
            .bind(k.fingerprint)
            .bind(to_millis(now))
            .bind(to_millis(lease_until))
            .execute(p)
            .await?
            .rows_affected();
            if inserted == 1 {
                return Ok(IdemBegin::Run { takeover: false, first_used_ms: to_millis(now) });
            }
            let Some(row) = sqlx::query(
                "SELECT fingerprint, status, body, lease_until, created_at FROM idempotency_keys \
                 WHERE branch_id = $1 AND idem_key = $2",
            )
            .bind(k.branch_id.as_str())
            .bind(k.key)
            .fetch_optional(p)
            .await?
            else {
                // Swept between the two statements: as good as running; the client retries.
                return Ok(IdemBegin::Running { lease_until_ms: 0 });
            };
            let fingerprint: String = row.try_get(0)?;
            if fingerprint != k.fingerprint {
                return Ok(IdemBegin::Reused);
            }
            let status: Option<i64> = row.try_get(1)?;
            let body: Option<String> = row.try_get(2)?;
            if let (Some(status), Some(body)) = (status, body) {
                return Ok(IdemBegin::Stored { status: status as u16, body });
            }
            let lease: i64 = row.try_get(3)?;
            let first_used_ms: i64 = row.try_get(4)?;
            if lease > to_millis(now) {
                return Ok(IdemBegin::Running { lease_until_ms: lease });
            }
            // The holder died (or gave its lease back after a 5xx): one retry takes over, the
            // lease it read being the guard.
            let taken = sqlx::query(
                "UPDATE idempotency_keys SET lease_until = $3 \
                 WHERE branch_id = $1 AND idem_key = $2 AND status IS NULL AND lease_until = $4",
            )
            .bind(k.branch_id.as_str())
            .bind(k.key)
            .bind(to_millis(lease_until))
            .bind(lease)
            .execute(p)
            .await?
            .rows_affected();
            Ok(if taken == 1 {
                IdemBegin::Run { takeover: true, first_used_ms }
            } else {
                IdemBegin::Running { lease_until_ms: to_millis(lease_until) }
            })
        })
    }

    /// Stores the answer (`Some`), or gives the lease back at once (`None`, a 5xx: not stored, the
    /// client may retry now; the row keeps `charged_first`).
    pub async fn idempotency_finish(
        &self,
        branch_id: &BranchId,
        key: &str,
        answer: Option<(u16, &str)>,
    ) -> Result<()> {
        let pool = &self.pool;
        let branch_id = branch_id.as_str();
        on_pool!(pool: pool, p => {
            match answer {
                Some((status, body)) => {
                    sqlx::query(
                        "UPDATE idempotency_keys SET status = $3, body = $4 \
                         WHERE branch_id = $1 AND idem_key = $2",
                    )
                    .bind(branch_id)
                    .bind(key)
                    .bind(i64::from(status))
                    .bind(body)
                    .execute(p)
                    .await?;
                }
                None => {
                    sqlx::query(
                        "UPDATE idempotency_keys SET lease_until = 0 \
                         WHERE branch_id = $1 AND idem_key = $2 AND status IS NULL",
                    )
                    .bind(branch_id)
                    .bind(key)
                    .execute(p)
                    .await?;
                }
            }
            Ok(())
        })
    }

    /// Forgets every key first used before `forget_before` (the periodic job
    /// `idempotency-keys`; the index on `created_at` keeps it cheap).
    pub async fn sweep_idempotency_keys(&self, forget_before: OffsetDateTime) -> Result<u64> {
        Ok(execute!(
            &self.pool,
            "DELETE FROM idempotency_keys WHERE created_at < $1",
            [to_millis(forget_before)]
        )?)
    }
}
