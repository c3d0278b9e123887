//! The job queue's SQL. A job row is claimed by pushing its `due_at` out by a lease and
//! stamping a fresh `lease_token`; every write-back is `WHERE id = ? AND lease_token = ?`, so a
//! worker that lost its lease (it was too slow, or presumed dead) cannot overwrite the work of
//! the one that took over. No transaction spans a bank or webhook call.

use crate::sql::{execute, fetch_optional, on_pool, placeholders, Pool};
use crate::SqlStore;
use crate::{NewAudit, Result, StoreError};
use domain::clock::{from_millis, to_millis};
use domain::job::{Job, JobStatus, Stage, Webhook, WebhookState};
use domain::BatchId;
use domain::JobId;
use sqlx::Row;
use time::OffsetDateTime;

const COLS: &str = "id, batch_id, service_id, branch_id, kind, data, callback_url, status, stage, due_at, attempts, not_found_retries, \
    outage_retries, result, error_code, error_message, webhook_state, webhook_body, \
    webhook_signature, webhook_attempts, webhook_last_status, webhook_last_error, \
    webhook_first_at, webhook_last_at, created_at, updated_at, finished_at, expires_at, \
    billing_retries";

macro_rules! job_from_row {
    ($r:expr) => {{
        let r = &$r;
        let status: String = r.try_get("status")?;
        let stage: String = r.try_get("stage")?;
        let wstate: String = r.try_get("webhook_state")?;
        let result: Option<String> = r.try_get("result")?;
        let data: String = r.try_get("data")?;
        let corrupt = |what: &str, v: &str| StoreError::Corrupt(format!("job {what} {v}"));
        let count = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
        Job {
            id: r.try_get::<String, _>("id")?.into(),
            batch_id: r
                .try_get::<Option<String>, _>("batch_id")?
                .map(BatchId::from),
            service_id: r.try_get::<String, _>("service_id")?.into(),
            branch_id: r.try_get::<String, _>("branch_id")?.into(),
            kind: r.try_get("kind")?,
            data: serde_json::from_str(&data).map_err(|_| corrupt("data", "not JSON"))?,
            callback_url: r.try_get("callback_url")?,
            status: JobStatus::parse(&status).ok_or_else(|| corrupt("status", &status))?,
            stage: Stage::parse(&stage).ok_or_else(|| corrupt("stage", &stage))?,
            due_at: from_millis(r.try_get("due_at")?),
            attempts: count(r.try_get("attempts")?),
            not_found_retries: count(r.try_get("not_found_retries")?),
            outage_retries: count(r.try_get("outage_retries")?),
            billing_retries: count(r.try_get("billing_retries")?),
            result: match result {
                Some(text) => {
                    Some(serde_json::from_str(&text).map_err(|_| corrupt("result", "not JSON"))?)
                }
                None => None,
            },
            error_code: r.try_get("error_code")?,
            error_message: r.try_get("error_message")?,
            webhook: Webhook {
                state: WebhookState::parse(&wstate)
                    .ok_or_else(|| corrupt("webhook state", &wstate))?,
                body: r.try_get("webhook_body")?,
                signature: r.try_get("webhook_signature")?,
                attempts: count(r.try_get("webhook_attempts")?),
                last_status: r
                    .try_get::<Option<i64>, _>("webhook_last_status")?
                    .and_then(|s| u16::try_from(s).ok()),
                last_error: r.try_get("webhook_last_error")?,
                first_at: r
                    .try_get::<Option<i64>, _>("webhook_first_at")?
                    .map(from_millis),
                last_at: r
                    .try_get::<Option<i64>, _>("webhook_last_at")?
                    .map(from_millis),
            },
            created_at: from_millis(r.try_get("created_at")?),
            updated_at: from_millis(r.try_get("updated_at")?),
            finished_at: r.try_get::<Option<i64>, _>("finished_at")?.map(from_millis),
            expires_at: from_millis(r.try_get("expires_at")?),
        }
    }};
}

/// Rows per multi-row INSERT (`PARAMS` each, well under SQLite's 32766 parameters).
const INSERT_CHUNK: usize = 200;
const PARAMS: usize = 15;

/// PostgreSQL: this transaction's commit does not wait for its WAL flush. Used for claims and
/// write-backs only: losing the last of them in a database crash makes those jobs run again
/// (a claim or a result is redone; the quota charge, committed durably and keyed by the job,
/// is not repeated; a webhook may be sent twice, which at-least-once delivery allows).
/// Submissions and charges stay fully durable.
macro_rules! relaxed_commit {
    ($pool:expr, $tx:expr) => {
        if let Pool::Pg(_) = $pool {
            sqlx::query("SET LOCAL synchronous_commit TO OFF")
                .execute(&mut *$tx)
                .await?;
        }
    };
}

async fn insert(pool: &Pool, jobs: &[Job], audit: Option<&NewAudit<'_>>) -> Result<()> {
    on_pool!(pool: pool, p => {
        let mut tx = p.begin().await?;
        for (chunk_no, chunk) in jobs.chunks(INSERT_CHUNK).enumerate() {
            let values = (0..chunk.len())
                .map(|i| format!("({})", placeholders(i * PARAMS + 1, PARAMS)))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "INSERT INTO jobs (id, batch_id, seq, service_id, branch_id, kind, data, \
                 callback_url, status, stage, due_at, created_at, expires_at, webhook_state, \
                 updated_at) VALUES {values} ON CONFLICT (id) DO NOTHING"
            );
            let mut q = sqlx::query(&sql);
            for (i, j) in chunk.iter().enumerate() {
                q = q
                    .bind(j.id.as_str())
                    .bind(j.batch_id.as_ref().map(BatchId::as_str))
                    .bind((chunk_no * INSERT_CHUNK + i) as i64)
                    .bind(j.service_id.as_str())
                    .bind(j.branch_id.as_str())
                    .bind(&j.kind)
                    .bind(j.data.to_string())
                    .bind(&j.callback_url)
                    .bind(j.status.as_str())
                    .bind(j.stage.as_str())
                    .bind(to_millis(j.due_at))
                    .bind(to_millis(j.created_at))
                    .bind(to_millis(j.expires_at))
                    .bind(j.webhook.state.as_str())
                    .bind(to_millis(j.updated_at));
            }
            q.execute(&mut *tx).await?;
        }
        if let Some(a) = audit {
            sqlx::query(
                "INSERT INTO audit_log (id, at, actor, action, service_id, branch_id, detail) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(uuid::Uuid::new_v4().to_string())
            .bind(to_millis(a.at))
            .bind(a.actor)
            .bind(a.action)
            .bind(a.service_id.map(domain::ServiceId::as_str))
            .bind(a.branch_id.map(domain::BranchId::as_str))
            .bind(&a.detail)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    })
}

impl SqlStore {
    /// Inserts submitted jobs (of any kind) in one transaction: all of a batch or none; a job
    /// whose id exists is skipped.
    pub async fn insert_jobs(&self, jobs: &[Job]) -> Result<()> {
        insert(&self.pool, jobs, None).await
    }

    /// `insert_jobs` with the audit entry of the operation that made them, in one transaction.
    pub async fn insert_jobs_audited(&self, jobs: &[Job], audit: &NewAudit<'_>) -> Result<()> {
        insert(&self.pool, jobs, Some(audit)).await
    }

    /// Claims up to `limit` jobs due at `now` for a lease until `lease_until`, stamped with
    /// `token`. Several nodes claiming at once never get the same job (PostgreSQL: `FOR
    /// UPDATE SKIP LOCKED`; SQLite: one writer).
    pub async fn claim_jobs(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        token: &str,
        limit: u32,
    ) -> Result<Vec<domain::job::Job>> {
        let pool = &self.pool;
        // PostgreSQL: rows another node is claiming at this instant are skipped, not waited for;
        // the CTE is materialised so the LIMIT is applied once, whatever the plan.
        // SQLite: one writer at a time, so the sub-select and the update are already atomic.
        let set = "due_at = $2, lease_token = $3, updated_at = $1, \
                   status = CASE WHEN stage = 'run' THEN 'processing' ELSE status END";
        let due =
            "SELECT id FROM jobs WHERE stage <> 'idle' AND due_at <= $1 ORDER BY due_at LIMIT $4";
        let sql = match pool {
            Pool::Sqlite(_) => {
                format!("UPDATE jobs SET {set} WHERE id IN ({due}) RETURNING {COLS}")
            }
            Pool::Pg(_) => {
                let cols = COLS
                    .split(", ")
                    .map(|c| format!("jobs.{}", c.trim()))
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "WITH c AS MATERIALIZED ({due} FOR UPDATE SKIP LOCKED) \
                     UPDATE jobs SET {set} FROM c WHERE jobs.id = c.id RETURNING {cols}"
                )
            }
        };
        on_pool!(pool: pool, p => {
            let mut tx = p.begin().await?;
            relaxed_commit!(pool, tx);
            let rows = sqlx::query(&sql)
                .bind(to_millis(now))
                .bind(to_millis(lease_until))
                .bind(token)
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            rows.iter().map(|r| Ok(job_from_row!(r))).collect()
        })
    }

    /// Writes a claimed job back and ends its lease; false if `token` no longer holds it
    /// (the lease ran out and another worker took the job): then nothing is written.
    pub async fn save_job(&self, job: &domain::job::Job, token: &str) -> Result<bool> {
        self.write_job(job, token, None).await
    }

    /// Saves a claimed job's finished step but keeps the lease (due again at `until`, for
    /// any node, only if this one dies): a step's result is on record before its callback
    /// is posted, so a receiver that polls the job on the callback reads it.
    pub async fn hold_job(
        &self,
        job: &domain::job::Job,
        token: &str,
        until: OffsetDateTime,
    ) -> Result<bool> {
        self.write_job(job, token, Some(until)).await
    }

    /// `hold`: keep the lease until then instead of handing the job back.
    async fn write_job(
        &self,
        job: &domain::job::Job,
        token: &str,
        hold: Option<OffsetDateTime>,
    ) -> Result<bool> {
        let pool = &self.pool;
        let j = job;
        let due_at = to_millis(hold.unwrap_or(j.due_at));
        let keep_token = hold.map(|_| token);
        let result = j.result.as_ref().map(|v| v.to_string());
        on_pool!(pool: pool, p => {
            let mut tx = p.begin().await?;
            relaxed_commit!(pool, tx);
            let done = sqlx::query(
                "UPDATE jobs SET status = $3, stage = $4, due_at = $5, attempts = $6, \
                 not_found_retries = $7, outage_retries = $8, result = $9, error_code = $10, \
                 error_message = $11, webhook_state = $12, webhook_body = $13, \
                 webhook_signature = $14, webhook_attempts = $15, webhook_last_status = $16, \
                 webhook_last_error = $17, webhook_first_at = $18, webhook_last_at = $19, \
                 updated_at = $20, finished_at = $21, billing_retries = $22, data = $23, \
                 lease_token = $24 WHERE id = $1 AND lease_token = $2",
            )
            .bind(j.id.as_str())
            .bind(token)
            .bind(j.status.as_str())
            .bind(j.stage.as_str())
            .bind(due_at)
            .bind(i64::from(j.attempts))
            .bind(i64::from(j.not_found_retries))
            .bind(i64::from(j.outage_retries))
            .bind(&result)
            .bind(&j.error_code)
            .bind(&j.error_message)
            .bind(j.webhook.state.as_str())
            .bind(&j.webhook.body)
            .bind(&j.webhook.signature)
            .bind(i64::from(j.webhook.attempts))
            .bind(j.webhook.last_status.map(i64::from))
            .bind(&j.webhook.last_error)
            .bind(j.webhook.first_at.map(to_millis))
            .bind(j.webhook.last_at.map(to_millis))
            .bind(to_millis(j.updated_at))
            .bind(j.finished_at.map(to_millis))
            .bind(i64::from(j.billing_retries))
            .bind(j.data.to_string())
            .bind(keep_token)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(done.rows_affected() == 1)
        })
    }

    /// Hands back every job claimed with `token`, due at `now` (graceful shutdown).
    pub async fn release_jobs(&self, token: &str, now: OffsetDateTime) -> Result<u64> {
        Ok(execute!(
            &self.pool,
            "UPDATE jobs SET due_at = $2, lease_token = NULL, \
             status = CASE WHEN status = 'processing' THEN 'queued' ELSE status END \
             WHERE lease_token = $1",
            [token, to_millis(now)]
        )?)
    }

    pub async fn get_job(&self, id: &JobId) -> Result<Option<domain::job::Job>> {
        let pool = &self.pool;
        let id = id.as_str();
        let sql = format!("SELECT {COLS} FROM jobs WHERE id = $1");
        fetch_optional!(pool, &sql, [id], |r| job_from_row!(r))
    }

    /// Deletes jobs past their retention whose work is finished (an expired job still being
    /// delivered is left for its last attempt). Run by the periodic job `expire-jobs`.
    pub async fn sweep_jobs(&self, now: OffsetDateTime) -> Result<u64> {
        Ok(execute!(
            &self.pool,
            "DELETE FROM jobs WHERE expires_at < $1 AND stage = 'idle'",
            [to_millis(now)]
        )?)
    }

    /// Counts per status, for the operator (`slipverify jobs stats`) and the crash script.
    pub async fn job_counts(&self) -> Result<Vec<(String, String, i64)>> {
        let pool = &self.pool;
        on_pool!(pool: pool, p => {
            let rows = sqlx::query(
                "SELECT kind, status, COUNT(*) FROM jobs GROUP BY kind, status ORDER BY kind, status",
            )
            .fetch_all(p)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok((
                        r.try_get::<String, _>(0)?,
                        r.try_get::<String, _>(1)?,
                        r.try_get::<i64, _>(2)?,
                    ))
                })
                .collect()
        })
    }
}
