//! The `verify` kind (spec 3, 6): verify a slip with the same `verify_bank` as the sync path
//! (with the job id, so the charge happens at most once per job), then post the result. Its
//! data is `domain::job::NewJob`; its retry budgets and callback body are
//! `Job::after_attempt`'s.

use super::{JobContext, JobKind, Owner};
use crate::auth::Caller;
use crate::verify::VerifyRequest;
use domain::job::{Attempt, Job, VERIFY};
use domain::Error;

pub struct Verify;

#[async_trait::async_trait]
impl JobKind for Verify {
    fn name(&self) -> &'static str {
        VERIFY
    }

    async fn run(&self, cx: &JobContext<'_>, mut job: Job) -> Job {
        let (attempt, secret) = attempt(cx, &job).await;
        job.after_attempt(attempt, cx.svc.now(), cx.svc.schedules(), secret.as_deref());
        job
    }
}

/// One verification attempt of a job. Policy is re-checked now: a branch deactivated or a
/// service expired since submission fails the job. Returns the outcome and the branch's
/// webhook secret (to sign the callback if the job finishes now).
async fn attempt(cx: &JobContext<'_>, job: &Job) -> (Attempt, Option<String>) {
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
    let service = match svc.usable_service_for(service, &branch).await {
        Ok(s) => s,
        Err(e @ Error::RenewalTemporarilyUnavailable) => return (billing_down(e), secret),
        Err(e @ Error::Internal(_)) => return (outage(e), secret),
        Err(e) => return (refused(e), secret),
    };
    let caller = Caller {
        service,
        branch,
        idempotency: None,
    };
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
            };
            svc.verify_bank(&caller, &req).await
        }
        Err(e) => Err(e),
    };
    let attempt = match verified {
        Ok(data) => match serde_json::to_value(data) {
            Ok(v) => Attempt::Verified(v),
            Err(e) => outage(Error::internal(e)),
        },
        Err(Error::SlipNotFound(why)) => Attempt::NotFound(why),
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
