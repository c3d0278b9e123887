//! Background work. Jobs of any kind live in one table (`domain::job::Job`: a `kind`, the
//! kind's own `data`, states, a lease, an optional callback), claimed with leases, so any node
//! can run any job and a crashed node's jobs are taken over. The decisions (what happens after
//! a step or a delivery) are the pure rules of `domain::job`; this module does the I/O:
//!
//! - here: submitting and polling verify jobs, the `JobKind` trait and the registry of kinds
//!   (`Kinds::builtin`), enqueueing a job of any kind, and posting a callback (`deliver`);
//! - `worker`: the loop that claims due jobs and runs each with its kind (claim → run →
//!   deliver → save);
//! - one file per kind: `verify` (verify a slip, then its callback), `redeliver` (a finished
//!   job's callback again, re-signed);
//! - `periodic`: work that runs once per period on one node at a time (expiry of old jobs,
//!   the `Idempotency-Key` sweep), decided by the database.

pub mod line;
pub mod periodic;
pub mod redeliver;
pub mod verify;
pub mod worker;

pub use worker::{run_worker, WorkerConfig};

use crate::auth::Caller;
pub use crate::handles::Jobs;
use crate::input::SlipInput;
use crate::verify::VerifyRequest;
use crate::Services;
use domain::job::{Delivery, Job, NewJob, Stage};
use domain::{BatchId, BranchId, Error, JobId};
use egress::EgressError;
use std::collections::HashMap;
use std::sync::Arc;
use store::SqlStore;

/// One kind of background job, in the spirit of crates.io's `BackgroundJob`: the step it
/// runs. The kind's input is the row's `data` (JSON: a serde type of the kind's own, e.g.
/// `domain::job::NewJob`); its states, retry rules and callback body are pure functions in
/// `domain::job`. Register it in `Kinds::builtin` under the name its rows carry in
/// `jobs.kind`.
#[async_trait::async_trait]
pub trait JobKind: Send + Sync + 'static {
    /// Runs the kind's own step (`Stage::Run`) of a claimed job and returns the job in its
    /// next state, decided by `domain::job`'s rules: due again later (`Retrying`), finished
    /// with a callback to post (`Stage::Deliver`: the worker posts it in the same claim, with
    /// the webhook retries after), or finished (`Stage::Idle`). Nothing is written here: the
    /// worker saves the returned job if its lease still holds, so a step may run again after
    /// a crash and must be safe to repeat (a charge keyed by the job id, ...).
    async fn run(&self, cx: &JobContext<'_>, job: Job) -> Job;
}

/// What a kind's `run` may use: the services and the owners of the claimed jobs.
pub struct JobContext<'a> {
    pub svc: &'a Services,
    owners: &'a Owners,
}

/// The branch of a job with its service, as read when the job was claimed.
pub enum Owner<'a> {
    Found(
        &'a domain::model::Branch,
        Option<&'a domain::model::Service>,
    ),
    /// The branch does not exist (any more).
    NoBranch,
    /// They could not be read (the database); the job should retry.
    Unavailable(&'a str),
}

impl<'a> JobContext<'a> {
    /// The job's branch and its service, read once per branch for a claim.
    pub fn owner(&self, job: &Job) -> Owner<'a> {
        match self.owners.get(&job.branch_id) {
            Some(Ok((Some(b), s))) => Owner::Found(b, s.as_ref()),
            Some(Ok((None, _))) => Owner::NoBranch,
            Some(Err(e)) => Owner::Unavailable(e),
            None => Owner::Unavailable("branch not loaded"),
        }
    }
}

/// The job kinds this node runs, by name.
#[derive(Clone)]
pub struct Kinds(HashMap<&'static str, Arc<dyn JobKind>>);

impl Kinds {
    /// Every kind of this build. A new kind: its file beside `verify.rs`, one line here.
    pub fn builtin() -> Self {
        Kinds(HashMap::new())
            .with(domain::job::VERIFY, verify::Verify)
            .with(domain::job::REDELIVER, redeliver::Redeliver)
            .with(domain::job::LINE, line::Line)
    }

    /// Adds (or replaces) a kind, run for the rows whose `jobs.kind` is `name` (never renamed
    /// once rows exist).
    pub fn with(mut self, name: &'static str, kind: impl JobKind) -> Self {
        self.0.insert(name, Arc::new(kind));
        self
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn JobKind>> {
        self.0.get(name)
    }

    pub fn names(&self) -> Vec<&'static str> {
        let mut n: Vec<_> = self.0.keys().copied().collect();
        n.sort_unstable();
        n
    }
}

impl Default for Kinds {
    fn default() -> Self {
        Self::builtin()
    }
}

/// Branch id → the branch and its service (or why they could not be read).
pub(crate) type Owners = HashMap<
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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub batch_id: Option<BatchId>,
    /// In request order.
    pub job_ids: Vec<JobId>,
}

/// Queueing jobs (any kind): the job table and this node's worker's wake-up.
#[derive(Clone, Copy)]
pub(crate) struct Queue<'a> {
    store: &'a SqlStore,
    wake: &'a tokio::sync::Notify,
}

impl<'a> Queue<'a> {
    pub(crate) fn of(svc: &'a Services) -> Self {
        Queue {
            store: &svc.store,
            wake: &svc.jobs_wake,
        }
    }

    /// Queues jobs in one transaction and wakes this node's worker; a job whose id exists
    /// is left as it is.
    pub(crate) async fn enqueue(&self, jobs: &[Job]) -> Result<(), Error> {
        self.store.insert_jobs(jobs).await?;
        self.wake.notify_one();
        Ok(())
    }

    /// `enqueue` with the audit entry of the operation that made the jobs, in the same
    /// transaction.
    pub(crate) async fn enqueue_audited(
        &self,
        jobs: &[Job],
        audit: &store::NewAudit<'_>,
    ) -> Result<(), Error> {
        self.store.insert_jobs_audited(jobs, audit).await?;
        self.wake.notify_one();
        Ok(())
    }
}

impl Jobs<'_> {
    /// Accepts slips for background verification. Everything that can be refused is refused
    /// here, before any job exists: the callback target, each slip's input (an image is read
    /// now, so the job keeps only the QR text), and its QR. `batch`: the slips share a batch id,
    /// and a bad slip refuses the whole batch (`slips[i]: ...`), so a batch is all or nothing.
    /// `claim`: the request's `Idempotency-Key`, whose ids the jobs derive from. `slips`: each
    /// input as the client sent it, with its options (`job_id` and `idempotency` unused: the
    /// jobs do not exist yet, and the claim is the request's).
    pub async fn submit_jobs(
        &self,
        caller: &Caller,
        claim: Option<crate::idempotency::IdemClaim>,
        slips: Vec<VerifyRequest<SlipInput>>,
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
            .ok_or_else(|| Error::internal("egress not configured"))?;
        egress
            .check_url(&target, true)
            .await
            .map_err(|_| Error::InvalidCallbackUrl)?;

        let now = self.clock.now();
        // Under an `Idempotency-Key` the ids derive from the key: a retry after a crash
        // between the insert and the answer inserts nothing new (`ON CONFLICT (id)`) and
        // answers with the same ids.
        let id_for = |what: &str, i: usize| match &claim {
            Some(c) => keyed_id(&caller.branch.id, &c.key, c.first_used_ms, what, i),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let batch_id = batch.then(|| BatchId::new(id_for("batch", 0)));
        let mut jobs = Vec::with_capacity(slips.len());
        for (i, req) in slips.into_iter().enumerate() {
            // Async is for bank slips only; the job keeps the slip's QR text.
            let payload = match self.slips.bank_slip(caller, req.slip).await {
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
                    check_duplicate: req.check_duplicate,
                    match_account: req.match_account,
                    match_amount: req.match_amount,
                    remark: req.remark,
                },
                Some(target.clone()),
                now,
                self.schedules.retention,
            ));
        }
        self.enqueue(&jobs).await?;
        Ok(Submitted {
            batch_id,
            job_ids: jobs.into_iter().map(|j| j.id).collect(),
        })
    }

    /// Queues jobs of any kind (built with `Job::new` / `Job::of_kind`) in one transaction and
    /// wakes this node's worker; a job whose id exists is left as it is.
    pub async fn enqueue(&self, jobs: &[Job]) -> Result<(), Error> {
        self.queue.enqueue(jobs).await
    }

    /// A verify job of the caller's branch, while it is retained; otherwise `JOB_NOT_FOUND`
    /// (jobs of other kinds are not a branch's to poll).
    pub async fn job(&self, caller: &Caller, id: &JobId) -> Result<Job, Error> {
        match self.store.get_job(&JobId::from(id.as_str().trim())).await? {
            Some(j)
                if j.branch_id == caller.branch.id
                    && j.expires_at > self.clock.now()
                    && j.kind == domain::job::VERIFY =>
            {
                Ok(j)
            }
            _ => Err(Error::JobNotFound),
        }
    }

    /// The branches of claimed jobs that have a step to run, with their services: read once
    /// per branch rather than per job.
    async fn load_owners(&self, jobs: &[Job]) -> Owners {
        let mut owners = Owners::new();
        for j in jobs.iter().filter(|j| j.stage == Stage::Run) {
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

    /// POSTs the job's callback once. Each attempt goes through egress, which resolves the
    /// host again, refuses non-public addresses and connects only to the address it vetted.
    pub(crate) async fn deliver(&self, job: &Job) -> Delivery {
        let (Some(url), Some(body), Some(egress)) =
            (&job.callback_url, &job.webhook.body, self.egress)
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
        crate::metrics::count_delivery(self.metrics, &sent, started.elapsed());
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
}

/// A UUID (v4 layout) derived from a branch's idempotency key and when that use of it began:
/// the same use of a key (a retry, a takeover), the same ids; the key used again after it was
/// forgotten, new ones.
fn keyed_id(branch_id: &BranchId, key: &str, first_used_ms: i64, what: &str, i: usize) -> String {
    let first_used = first_used_ms.to_string();
    derived_uuid(&[branch_id.as_str(), key, &first_used, what, &i.to_string()])
}

/// A UUID (v4 layout) derived from `parts` (each length-prefixed, so no two lists collide):
/// the same parts give the same id (keyed jobs, LINE events, LINE push retry keys).
pub(crate) fn derived_uuid(parts: &[&str]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in parts {
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
