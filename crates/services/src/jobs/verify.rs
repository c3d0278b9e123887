//! The `verify` kind (spec 3, 6): verify a slip with the same `verify_bank` as the sync path
//! (with the job id, so the charge happens at most once per job), then post the result. Its
//! data is `domain::job::NewJob`; its retry budgets and callback body are
//! `Job::after_attempt`'s.

use super::{JobContext, JobKind, Owner};
use crate::attempts::Trace;
use crate::verify::VerifyRequest;
use domain::attempt::Outcome;
use domain::job::{Attempt, Job, Stage};
use domain::Error;

pub struct Verify;

#[async_trait::async_trait]
impl JobKind for Verify {
    async fn run(&self, cx: &JobContext<'_>, mut job: Job) -> Job {
        let started = std::time::Instant::now();
        let trace = Trace::for_job(&job.service_id, &job.branch_id);
        let (attempt, secret) = attempt(cx, &job, &trace).await;
        let ended = attempt_outcome(&attempt);
        job.after_attempt(attempt, cx.svc.now(), cx.svc.schedules(), secret.as_deref());
        // The verification's final outcome, once (the log keeps one record per job even when
        // a crashed worker's job runs again).
        if job.stage != Stage::Run {
            let ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
            let record = trace.record(cx.svc.now(), Some(ended), ms, None, Some(job.id.clone()));
            cx.svc.attempts().log_attempt(record).await;
        }
        job
    }
}

/// One verification attempt of a job. Policy is re-checked now: a branch deactivated or a
/// service expired since submission fails the job. Returns the outcome and the branch's
/// webhook secret (to sign the callback if the job finishes now).
async fn attempt(cx: &JobContext<'_>, job: &Job, trace: &Trace) -> (Attempt, Option<String>) {
    let svc = cx.svc;
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
    let (branch, service) = match cx.owner(job) {
        Owner::Found(b, s) => (b.clone(), s.cloned()),
        Owner::NoBranch => return (refused(Error::BranchInactive), None),
        Owner::Unavailable(e) => return (outage(Error::internal(e)), None),
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
    let mut caller = match svc.auth().caller(service, branch).await {
        Ok(c) => c,
        Err(e @ Error::RenewalTemporarilyUnavailable) => return (billing_down(e), secret),
        Err(e @ Error::Internal(_)) => return (outage(e), secret),
        Err(e) => return (refused(e), secret),
    };
    // The job's trace is logged whatever happens (`Trace::for_job`).
    caller.trace = trace.clone();
    let Some(input) = job.slip() else {
        return (
            outage(Error::internal("a verify job without a slip")),
            secret,
        );
    };
    // The stored QR text was a bank slip at submission; it enters again here.
    let verified = match crate::input::parse_bank_slip(&input.payload) {
        Ok(slip) => {
            let req = VerifyRequest {
                slip,
                check_duplicate: input.check_duplicate,
                match_account: input.match_account,
                match_amount: input.match_amount,
                remark: input.remark,
                job_id: Some(job.id.clone()),
                idempotency: None,
            };
            svc.verify().verify_bank(&caller, &req).await
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
