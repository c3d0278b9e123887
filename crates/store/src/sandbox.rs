//! Test branches' verifications: recorded apart from production (`sandbox_verifications`),
//! never charged. The primary key decides first vs duplicate within a service's test space,
//! as `verifications` does for production; no counter of the charge writer is touched.

use crate::charge::bind_record;
use crate::sql::on_pool;
use crate::SqlStore;
use crate::{ChargeOutcome, Result, StoreError, VerificationRecord};
use domain::clock::from_millis;
use domain::Satang;
use domain::{BranchId, ServiceId};
use sqlx::Row;

/// Which table holds a space's verifications: production's charged `verifications`, or the
/// test branches' `sandbox_verifications`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Production,
    Sandbox,
}

impl SqlStore {
    /// The recorded (first) verification of a slip in a service and space, if any.
    pub async fn get_verification(
        &self,
        space: Space,
        service_id: &ServiceId,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>> {
        let pool = &self.pool;
        let sql = match space {
            Space::Production => {
                "SELECT branch_id, amount_satang, transferred_at, verified_at, transfer_json, \
                 source FROM verifications \
                 WHERE service_id = $1 AND sending_bank = $2 AND trans_ref = $3"
            }
            Space::Sandbox => {
                "SELECT branch_id, amount_satang, transferred_at, verified_at, transfer_json, \
                 source FROM sandbox_verifications \
                 WHERE service_id = $1 AND sending_bank = $2 AND trans_ref = $3"
            }
        };
        on_pool!(pool: pool, p => {
            let row = sqlx::query(sql)
                .bind(service_id.as_str())
                .bind(sending_bank)
                .bind(trans_ref)
                .fetch_optional(p)
                .await?;
            match row {
                Some(r) => Ok(Some(VerificationRecord {
                    service_id: service_id.clone(),
                    branch_id: r.try_get::<String, _>(0)?.into(),
                    sending_bank: sending_bank.to_string(),
                    trans_ref: trans_ref.to_string(),
                    amount: Satang(r.try_get(1)?),
                    transferred_at: from_millis(r.try_get(2)?),
                    verified_at: from_millis(r.try_get(3)?),
                    job_id: None,
                    idempotency_key: None,
                    transfer: match r.try_get::<Option<String>, _>(4)? {
                        Some(j) => Some(domain::model::VerifiedTransfer::from_json(&j).map_err(
                            |e| StoreError::Corrupt(format!("transfer_json: {e}")),
                        )?),
                        None => None,
                    },
                    source: r.try_get(5)?,
                })),
                None => Ok(None),
            }
        })
    }

    /// Records a test branch's verification in the test space (`sandbox_verifications`),
    /// charging nothing; `first_verification` is true for exactly one test verification of a
    /// slip within a service. A job is counted once however often it runs. Production's
    /// `verifications` is neither read nor written.
    pub async fn record_sandbox_verification(
        &self,
        rec: &VerificationRecord,
    ) -> Result<ChargeOutcome> {
        let pool = &self.pool;
        // Lock order as in the charge writer: branch row, then job row.
        let (begin, lock) = pool.read_for_update();
        let branch_sql = format!("SELECT id FROM branches WHERE id = $1 AND service_id = $2{lock}");
        let job_sql = format!("SELECT charged_first FROM jobs WHERE id = $1{lock}");
        on_pool!(pool: pool, p => {
            let mut tx = p.begin_with(begin).await?;
            if sqlx::query(&branch_sql)
                .bind(rec.branch_id.as_str())
                .bind(rec.service_id.as_str())
                .fetch_optional(&mut *tx)
                .await?
                .is_none()
            {
                return Err(StoreError::Conflict("no such branch in the service"));
            }
            if let Some(job) = &rec.job_id {
                let before: Option<Option<bool>> = sqlx::query(&job_sql)
                    .bind(job.as_str())
                    .fetch_optional(&mut *tx)
                    .await?
                    .map(|r| r.try_get(0))
                    .transpose()?;
                if let Some(Some(first)) = before {
                    return Ok(ChargeOutcome {
                first_verification: first,
                attempt_logged: false,
            });
                }
            }
            let insert = sqlx::query(
                "INSERT INTO sandbox_verifications (service_id, sending_bank, trans_ref, branch_id, \
                 amount_satang, transferred_at, verified_at, transfer_json, source) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                 ON CONFLICT (service_id, sending_bank, trans_ref) DO NOTHING RETURNING service_id",
            );
            let first = bind_record!(insert, rec)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            sqlx::query("UPDATE branches SET sandbox_used = sandbox_used + 1 WHERE id = $1")
                .bind(rec.branch_id.as_str())
                .execute(&mut *tx)
                .await?;
            if let Some(job) = &rec.job_id {
                sqlx::query("UPDATE jobs SET charged_first = $2 WHERE id = $1")
                    .bind(job.as_str())
                    .bind(first)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(ChargeOutcome {
                first_verification: first,
                attempt_logged: false,
            })
        })
    }

    /// Test verifications of the whole service and of one of its branches, duplicates included.
    pub async fn sandbox_used(
        &self,
        service_id: &ServiceId,
        branch_id: &BranchId,
    ) -> Result<(i64, i64)> {
        let pool = &self.pool;
        let service_id = service_id.as_str();
        let branch_id = branch_id.as_str();
        on_pool!(pool: pool, p => {
            // SUM of BIGINT is NUMERIC on PostgreSQL: cast back.
            let r = sqlx::query(
                "SELECT CAST(COALESCE(SUM(sandbox_used), 0) AS BIGINT), \
                 CAST(COALESCE(SUM(CASE WHEN id = $2 THEN sandbox_used ELSE 0 END), 0) AS BIGINT) \
                 FROM branches WHERE service_id = $1",
            )
            .bind(service_id)
            .bind(branch_id)
            .fetch_one(p)
            .await?;
            Ok((r.try_get(0)?, r.try_get(1)?))
        })
    }
}
