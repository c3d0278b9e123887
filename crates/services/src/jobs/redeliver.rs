//! The `redeliver` kind: an operator sends a finished job's callback again
//! (`POST /admin/jobs/{id}/redeliver`, `slipverify admin job redeliver`). The redelivery is a
//! job of its own (data `domain::job::Redelivery`), so it retries like any callback and
//! survives restarts. Its run reads the original job, takes its callback bytes unchanged (same
//! `jobId`, same body) and signs them with the branch's secret as it is *now* (a rotated
//! secret signs the redelivery); the worker then posts it to the original target through
//! `egress`, like every callback.

use super::{JobContext, JobKind, Jobs, Owner};
use crate::Services;
use domain::job::{Job, Redelivery, REDELIVER, VERIFY};
use domain::{Error, JobId};

pub struct Redeliver;

#[async_trait::async_trait]
impl JobKind for Redeliver {
    async fn run(&self, cx: &JobContext<'_>, mut job: Job) -> Job {
        let svc = cx.svc;
        let now = svc.now();
        let gone = |mut job: Job, why: &str| {
            job.fail_quietly(Error::JobNotFound.code(), why, now);
            job
        };
        let Some(Redelivery { job_id }) = job.redelivery() else {
            return gone(job, "the redelivery does not name a job");
        };
        let original = match svc.store.get_job(&job_id).await {
            Ok(o) => o,
            Err(e) => return retry(svc, job, &e.to_string()),
        };
        let Some(body) = original
            .filter(|o| o.expires_at > now)
            .and_then(|o| o.webhook.body)
        else {
            return gone(job, "the job to redeliver no longer exists");
        };
        let secret = match cx.owner(&job) {
            Owner::Found(branch, _) => branch.webhook_secret.clone(),
            Owner::NoBranch => None,
            Owner::Unavailable(e) => return retry(svc, job, e),
        };
        job.resend(body, secret.as_deref(), now);
        job
    }
}

/// Our storage could not answer: again on the outage budget, then failed.
fn retry(svc: &Services, mut job: Job, error: &str) -> Job {
    tracing::warn!(job = %job.id, error, "redelivery could not run");
    let now = svc.now();
    if !job.retry_outage(now, svc.schedules()) {
        let e = Error::internal("");
        job.fail_quietly(e.code(), &e.public_message(), now);
    }
    job
}

impl Jobs<'_> {
    /// Queues a redelivery of job `id`'s callback (audited as `actor`) and returns the
    /// redelivery job. `JOB_NOT_FOUND`: no such job, expired, or not a verification job;
    /// `JOB_STILL_RUNNING`: it is still verifying or delivering; a job that finished without
    /// a callback target has nothing to send (`VALIDATION_ERROR`).
    pub async fn redeliver_job(&self, id: &JobId, actor: &str) -> Result<Job, Error> {
        let now = self.clock.now();
        let original = match self.store.get_job(&JobId::from(id.as_str().trim())).await? {
            Some(j) if j.expires_at > now && j.kind == VERIFY => j,
            _ => return Err(Error::JobNotFound),
        };
        if original.is_running() {
            return Err(Error::JobStillRunning);
        }
        if original.webhook.body.is_none() || original.callback_url.is_none() {
            return Err(Error::invalid("job", "finished without a callback to send"));
        }
        let data = serde_json::to_value(Redelivery {
            job_id: original.id.clone(),
        })
        .map_err(|e| Error::internal(e))?;
        let job = Job::of_kind(
            JobId::new(uuid::Uuid::new_v4().to_string()),
            REDELIVER,
            data,
            original.service_id.clone(),
            original.branch_id.clone(),
            original.callback_url.clone(),
            now,
            self.schedules.retention,
        );
        let detail = serde_json::json!({
            "jobId": original.id,
            "redeliveryId": job.id,
            "callbackUrl": original.callback_url,
        });
        let audit = store::NewAudit {
            at: now,
            actor,
            action: "job.redeliver",
            service_id: Some(&original.service_id),
            branch_id: Some(&original.branch_id),
            detail: detail.to_string(),
        };
        self.queue
            .enqueue_audited(std::slice::from_ref(&job), &audit)
            .await?;
        Ok(job)
    }
}
