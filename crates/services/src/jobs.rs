//! Async verification (spec 3, 6): submitting jobs, polling them, and the worker that runs
//! them. The decisions (what happens after an attempt or a delivery) are the pure rules of
//! `domain::job`; this module does the I/O around them. Jobs live in the database, claimed
//! with leases, so any node can run any job and a crashed node's jobs are taken over.

use crate::attempts::Trace;
use crate::auth::Caller;
use crate::input::SlipInput;
use crate::verify::VerifyRequest;
use crate::Services;
use domain::attempt::Outcome;
use domain::job::{Attempt, Delivery, Job, NewJob, Stage};
use domain::{BatchId, BranchId, Error, JobId, Satang};
use egress::EgressError;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// Branch id → the branch and its service (or why they could not be read).
type Owners = std::collections::HashMap<
    BranchId,
    Result<
        (
            Option<domain::model::Branch>,
            Option<domain::model::Service>,
        ),
        String,
    >,
>;

/// Most slips in one batch (compat.md).
pub const MAX_BATCH: usize = 100;

/// One slip of a submission, as the client sent it.
#[derive(Debug, Clone)]
pub struct SubmitSlip {
    pub input: SlipInput,
    pub check_duplicate: bool,
    pub match_account: bool,
    pub match_amount: Option<Satang>,
    pub remark: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub batch_id: Option<BatchId>,
    /// In request order.
    pub job_ids: Vec<JobId>,
}

impl Services {
    /// Accepts slips for background verification. Everything that can be refused is refused
    /// here, before any job exists: the callback target, each slip's input (an image is read
    /// now, so the job keeps only the QR text), and its QR. `batch`: the slips share a batch id,
    /// and a bad slip refuses the whole batch (`slips[i]: ...`), so a batch is all or nothing.
    pub async fn submit_jobs(
        &self,
        caller: &Caller,
        slips: Vec<SubmitSlip>,
        callback_url: Option<String>,
        batch: bool,
    ) -> Result<Submitted, Error> {
        let target = callback_url
            .or_else(|| caller.branch.webhook_url.clone())
            .ok_or_else(|| {
                Error::invalid(
                    "callbackUrl",
                    "is required when the branch has no default webhook URL",
                )
            })?;
        let egress = self
            .egress
            .as_ref()
            .ok_or_else(|| Error::internal("egress not configured"))?;
        egress
            .check_url(&target, true)
            .await
            .map_err(|_| Error::InvalidCallbackUrl)?;

        let now = self.clock.now();
        // Under an `Idempotency-Key` the ids derive from the key: a retry after a crash
        // between the insert and the answer inserts nothing new (`ON CONFLICT (id)`) and
        // answers with the same ids.
        let id_for = |what: &str, i: usize| match &caller.idempotency {
            Some(c) => keyed_id(&caller.branch.id, &c.key, c.first_used_ms, what, i),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let batch_id = batch.then(|| BatchId::new(id_for("batch", 0)));
        let mut jobs = Vec::with_capacity(slips.len());
        for (i, slip) in slips.into_iter().enumerate() {
            // Async is for bank slips only; the job keeps the slip's QR text.
            let payload = match self.bank_slip(caller, slip.input).await {
                Ok(s) => s.payload,
                Err(e) if batch => {
                    return Err(Error::invalid(
                        format!("slips[{i}]"),
                        format!("{}: {}", e.code(), e.public_message()),
                    ))
                }
                Err(e) => return Err(e),
            };
            jobs.push(Job::new(
                JobId::new(id_for("job", i)),
                batch_id.clone(),
                caller.service.id.clone(),
                caller.branch.id.clone(),
                NewJob {
                    payload,
                    check_duplicate: slip.check_duplicate,
                    match_account: slip.match_account,
                    match_amount: slip.match_amount,
                    remark: slip.remark,
                },
                Some(target.clone()),
                now,
                self.schedules.retention,
            ));
        }
        self.store.insert_jobs(&jobs).await?;
        self.jobs_wake.notify_one();
        Ok(Submitted {
            batch_id,
            job_ids: jobs.into_iter().map(|j| j.id).collect(),
        })
    }

    /// A job of the caller's branch, while it is retained; otherwise `JOB_NOT_FOUND`.
    pub async fn job(&self, caller: &Caller, id: &JobId) -> Result<Job, Error> {
        match self.store.get_job(&JobId::from(id.as_str().trim())).await? {
            Some(j) if j.branch_id == caller.branch.id && j.expires_at > self.clock.now() => Ok(j),
            _ => Err(Error::JobNotFound),
        }
    }

    /// One verification attempt of a job, as the worker sees it. Policy is re-checked now:
    /// a branch deactivated or a service expired since submission fails the job.
    /// The branches of a claimed batch's jobs, with their services: read once per branch
    /// rather than per job.
    async fn load_owners(&self, jobs: &[Job]) -> Owners {
        let mut owners = Owners::new();
        for j in jobs.iter().filter(|j| j.stage == Stage::Verify) {
            if owners.contains_key(&j.branch_id) {
                continue;
            }
            let loaded = async {
                let branch = self.store.get_branch(&j.branch_id).await?;
                let service = match &branch {
                    Some(b) => self.store.get_service(&b.service_id).await?,
                    None => None,
                };
                Ok::<_, store::StoreError>((branch, service))
            }
            .await
            .map_err(|e| e.to_string());
            owners.insert(j.branch_id.clone(), loaded);
        }
        owners
    }

    async fn attempt(
        &self,
        job: &Job,
        owners: &Owners,
        trace: &Trace,
    ) -> (Attempt, Option<String>) {
        let outage = |e: Error| {
            tracing::warn!(job = %job.id, error = %e, "job attempt could not complete");
            Attempt::Outage {
                code: "INTERNAL_SERVER_ERROR".into(),
                message: Error::internal("").public_message(),
            }
        };
        let refused = |e: Error| Attempt::Refused {
            code: e.code().into(),
            message: e.public_message(),
        };
        let (branch, service) = match owners.get(&job.branch_id) {
            Some(Ok((Some(b), s))) => (b.clone(), s.clone()),
            Some(Ok((None, _))) => return (refused(Error::BranchInactive), None),
            Some(Err(e)) => return (outage(Error::internal(e)), None),
            None => return (outage(Error::internal("branch not loaded")), None),
        };
        let secret = branch.webhook_secret.clone();
        let Some(service) = service else {
            return (refused(Error::ServiceDeleted), secret);
        };
        if !branch.active {
            return (refused(Error::BranchInactive), secret);
        }
        let billing_down = |e: Error| Attempt::BillingUnavailable {
            message: e.public_message(),
        };
        let service = match self.usable_service_for(service, &branch).await {
            Ok(s) => s,
            Err(e @ Error::RenewalTemporarilyUnavailable) => return (billing_down(e), secret),
            Err(e @ Error::Internal(_)) => return (outage(e), secret),
            Err(e) => return (refused(e), secret),
        };
        let caller = Caller {
            service,
            branch,
            idempotency: None,
            trace: trace.clone(),
        };
        // The stored QR text was a bank slip at submission; it enters again here.
        let verified = match crate::input::parse_bank_slip(&job.payload) {
            Ok(slip) => {
                let req = VerifyRequest {
                    slip,
                    check_duplicate: job.check_duplicate,
                    match_account: job.match_account,
                    match_amount: job.match_amount,
                    remark: job.remark.clone(),
                    job_id: Some(job.id.clone()),
                };
                self.verify_bank(&caller, &req).await
            }
            Err(e) => Err(e),
        };
        let attempt = match verified {
            Ok(data) => match serde_json::to_value(data) {
                Ok(v) => Attempt::Verified(v),
                Err(e) => outage(Error::internal(e)),
            },
            Err(Error::SlipNotFound(why) | Error::NotASlip(why)) => Attempt::NotFound(why),
            Err(e @ Error::NoQrInImage) => Attempt::NotFound(e.public_message()),
            Err(Error::SlipPending) => Attempt::Pending,
            Err(e @ Error::SlipExpired) => Attempt::Gone(e.public_message()),
            Err(e @ Error::ApiServerError) => Attempt::Outage {
                code: e.code().into(),
                message: e.public_message(),
            },
            Err(e @ Error::Internal(_)) => outage(e),
            Err(e @ Error::RenewalTemporarilyUnavailable) => billing_down(e),
            Err(e) => refused(e),
        };
        (attempt, secret)
    }

    /// POSTs the job's callback once. Each attempt goes through egress, which resolves the
    /// host again, refuses non-public addresses and connects only to the address it vetted.
    async fn deliver(&self, job: &Job) -> Delivery {
        let (Some(url), Some(body), Some(egress)) =
            (&job.callback_url, &job.webhook.body, &self.egress)
        else {
            return Delivery::Failed {
                status: None,
                error: Some("no callback target".into()),
            };
        };
        let mut headers = vec![("user-agent", "Service-Webhook/2.0".to_string())];
        if let Some(sig) = &job.webhook.signature {
            headers.push(("x-service-signature", sig.clone()));
        }
        let started = std::time::Instant::now();
        let sent = egress
            .post_bytes(
                url,
                body.clone().into_bytes(),
                &headers,
                self.schedules.webhook_timeout,
            )
            .await;
        self.count_delivery(&sent, started.elapsed());
        match sent {
            Ok(status) if (200..300).contains(&status) => Delivery::Delivered(status),
            Ok(status) => Delivery::Failed {
                status: Some(status),
                error: None,
            },
            // Shown to the branch when polling: the kind of failure, not our internals.
            Err(e) => Delivery::Failed {
                status: None,
                error: Some(
                    match e {
                        EgressError::InvalidIpRange => "the URL resolves to a non-public address",
                        EgressError::ProtocolNotAllowed | EgressError::InvalidUrl => {
                            "the URL is not a valid https URL"
                        }
                        EgressError::Timeout => "timed out",
                        // Named one by one: a new kind of failure must be placed here.
                        EgressError::Unreachable(_)
                        | EgressError::Status(_)
                        | EgressError::TooLarge
                        | EgressError::TooManyRedirects
                        | EgressError::Setup(_) => "connection failed",
                    }
                    .into(),
                ),
            },
        }
    }

    /// Runs one claimed job's due step and writes it back (if the lease still holds). A
    /// verification that ends the job is delivered at once, under the same lease.
    async fn run_job(&self, mut job: Job, token: &str, owners: &Owners) {
        if job.stage == Stage::Verify {
            let started = std::time::Instant::now();
            let trace = Trace::for_job(&job.service_id, &job.branch_id);
            let (attempt, secret) = self.attempt(&job, owners, &trace).await;
            let ended = attempt_outcome(&attempt);
            job.after_attempt(
                attempt,
                self.clock.now(),
                &self.schedules,
                secret.as_deref(),
            );
            // The verification's final outcome, once (the log keeps one record per job even
            // when a crashed worker's job runs again).
            if job.stage != Stage::Verify {
                let ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
                let record = trace.record(
                    self.clock.now(),
                    Some(ended),
                    ms,
                    None,
                    Some(job.id.clone()),
                );
                self.log_attempt(record).await;
            }
        }
        // A claimed job's step is due (the claim moved `due_at` out by the lease); a job that
        // just finished its verification is delivered at once.
        if job.stage == Stage::Deliver {
            let d = self.deliver(&job).await;
            job.after_delivery(d, self.clock.now(), &self.schedules);
        }
        match self.store.save_job(&job, token).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!(job = %job.id, "job lease lost; another worker has it"),
            // The lease runs out and the job runs again: at least once, charged once.
            Err(e) => tracing::error!(job = %job.id, error = %e, "cannot save job"),
        }
    }
}

/// The attempts-log outcome of a job's verification attempt (its last, when it ends the job).
fn attempt_outcome(a: &Attempt) -> (Outcome, Option<String>) {
    let code = |c: &str| Some(c.to_string());
    match a {
        Attempt::Verified(_) => (Outcome::Verified, None),
        Attempt::NotFound(_) | Attempt::Gone(_) => (Outcome::NotFound, code("SLIP_NOT_FOUND")),
        Attempt::Pending => (Outcome::Pending, code("SLIP_PENDING")),
        Attempt::Outage { code: c, .. } if c == "INTERNAL_SERVER_ERROR" => {
            (Outcome::Error, code(c))
        }
        Attempt::Outage { code: c, .. } => (Outcome::Unavailable, code(c)),
        Attempt::BillingUnavailable { .. } => (
            Outcome::Unavailable,
            code("RENEWAL_TEMPORARILY_UNAVAILABLE"),
        ),
        Attempt::Refused { code: c, .. } => (Outcome::Refused, code(c)),
    }
}

/// How this node's worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs handled at once; 0 turns the worker off (a node that only serves HTTP).
    pub concurrency: usize,
    /// How often an idle worker looks for due jobs (also woken at once by a submission).
    pub poll: Duration,
    /// How long shutdown waits for jobs in hand before handing them back.
    pub drain: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 64,
            poll: Duration::from_millis(500),
            drain: Duration::from_secs(10),
        }
    }
}

/// Runs the job worker until `shutdown` turns true; then stops claiming, lets jobs in hand
/// finish for up to `drain`, and hands back the rest (due at once, for any node).
pub async fn run_worker(svc: Services, cfg: WorkerConfig, mut shutdown: watch::Receiver<bool>) {
    if cfg.concurrency == 0 {
        tracing::info!("job worker off on this node (jobs.concurrency = 0)");
        return;
    }
    let slots = Arc::new(Semaphore::new(cfg.concurrency));
    let mut tasks = JoinSet::new();
    let mut tokens: Vec<String> = Vec::new();
    let mut last_sweep = std::time::Instant::now();
    loop {
        if *shutdown.borrow() {
            break;
        }
        // Reap finished tasks so the set does not grow.
        while tasks.try_join_next().is_some() {}
        let first = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = shutdown.changed() => continue,
        };
        let want = slots.available_permits() + 1;
        let now = svc.clock.now();
        let token = uuid::Uuid::new_v4().to_string();
        let claimed = match svc
            .store
            .claim_jobs(
                now,
                now + svc.schedules.lease,
                &token,
                u32::try_from(want).unwrap_or(u32::MAX),
            )
            .await
        {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::error!(error = %e, "cannot claim jobs");
                Vec::new()
            }
        };
        // About once a minute, busy or not: finished jobs past their retention are deleted.
        if last_sweep.elapsed() > Duration::from_secs(60) {
            last_sweep = std::time::Instant::now();
            match svc.store.sweep_jobs(svc.clock.now()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "expired jobs swept"),
                Err(e) => tracing::warn!(error = %e, "cannot sweep jobs"),
            }
        }
        if claimed.is_empty() {
            drop(first);
            tokio::select! {
                _ = svc.jobs_wake.notified() => {}
                _ = tokio::time::sleep(cfg.poll) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        tokens.push(token.clone());
        if tokens.len() > 4096 {
            tokens.drain(..2048);
        }
        let owners = Arc::new(svc.load_owners(&claimed).await);
        let mut permit = Some(first);
        for job in claimed {
            let p = match permit.take() {
                Some(p) => p,
                // Counted as available above; only this loop takes them.
                None => match slots.clone().acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let svc = svc.clone();
            let token = token.clone();
            let owners = owners.clone();
            tasks.spawn(async move {
                svc.run_job(job, &token, &owners).await;
                drop(p);
            });
        }
    }
    // Graceful shutdown: finish what is in hand, within the drain time.
    let drained = tokio::time::timeout(cfg.drain, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tasks.abort_all();
        let now = svc.clock.now();
        for t in &tokens {
            if let Err(e) = svc.store.release_jobs(t, now).await {
                tracing::warn!(error = %e, "cannot hand back jobs");
            }
        }
    }
}

/// A UUID (v4 layout) derived from a branch's idempotency key and when that use of it began:
/// the same use of a key (a retry, a takeover), the same ids; the key used again after it was
/// forgotten, new ones.
fn keyed_id(branch_id: &BranchId, key: &str, first_used_ms: i64, what: &str, i: usize) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let first_used = first_used_ms.to_string();
    for part in [branch_id.as_str(), key, &first_used, what, &i.to_string()] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    let digest = h.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}
