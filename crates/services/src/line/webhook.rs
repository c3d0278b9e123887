//! `POST /line/{branchId}/webhook`: LINE's calls into the shop's server. The signature over
//! the raw body is the only authentication (LINE publishes no addresses: the branch's IP
//! allow-list does not apply); the branch's rate limit does. Each event becomes a durable job
//! of kind `line` whose id derives from (branch, `webhookEventId`): a redelivered event
//! inserts nothing new (`ON CONFLICT (id) DO NOTHING`), so it is processed once, and a node
//! that dies after the answer loses nothing.

use crate::auth::branch_with_service;
pub use crate::handles::LineWebhook;
use domain::job::{Job, LineJob, LINE};
use domain::line::Callback;
use domain::{BranchId, Error, JobId};

/// Largest webhook body read (LINE's are a few KB; the API caps at 1 MB before anything else).
pub const MAX_WEBHOOK_BYTES: usize = 1024 * 1024;

/// Event kinds the bot acts on; others are answered 200 and dropped.
const HANDLED: [&str; 2] = ["message", "join"];

impl LineWebhook<'_> {
    /// Checks the signature, then queues each event the bot handles; `INVALID_SIGNATURE` (401)
    /// for a bad or missing signature, a branch without LINE, or no such branch (one answer
    /// for all: the URL tells nothing).
    pub async fn line_webhook(
        &self,
        branch_id: &BranchId,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<usize, Error> {
        let settings = self.store.get_line_settings(branch_id).await?;
        let Some((secret, _)) = settings.as_ref().and_then(|s| s.credentials()) else {
            return Err(Error::InvalidSignature);
        };
        if !domain::line::signature_ok(secret, body, signature.unwrap_or("")) {
            return Err(Error::InvalidSignature);
        }
        let callback: Callback = serde_json::from_slice(body)
            .map_err(|_| Error::invalid("body", "is not a LINE webhook body"))?;
        if callback.events.is_empty() {
            return Ok(0); // the console's "Verify" button
        }
        let (service, branch) = branch_with_service(self.store, branch_id, |_| true)
            .await?
            .ok_or(Error::InvalidSignature)?;
        // The branch's rate limit applies (one token per webhook call).
        let caller = self.auth.caller_as_read(service, branch);
        self.auth.rate_check(&caller).await?;
        let now = self.clock.now();
        let raw: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| Error::invalid("body", "is not JSON"))?;
        let mut jobs = Vec::new();
        for (i, event) in callback.events.iter().enumerate() {
            if !HANDLED.contains(&event.kind.as_str()) || event.webhook_event_id.is_empty() {
                continue;
            }
            let data = LineJob {
                event: raw["events"][i].clone(),
                received_at_ms: domain::clock::to_millis(now),
                pending_checks: 0,
                answered: false,
            };
            jobs.push(Job::of_kind(
                event_job_id(branch_id, &event.webhook_event_id),
                LINE,
                serde_json::to_value(data).map_err(|e| Error::internal(e))?,
                caller.service.id.clone(),
                caller.branch.id.clone(),
                None,
                now,
                self.schedules.retention,
            ));
        }
        let n = jobs.len();
        if n > 0 {
            self.queue.enqueue(&jobs).await?;
        }
        // Counted once the call is accepted: LINE redelivers only what it did not see
        // answered 200, so each event counts once (twice only if our 200 was lost).
        for event in &callback.events {
            self.metrics
                .line_event(event.type_label(), event.source_label());
        }
        Ok(n)
    }
}

/// The job id of a branch's webhook event: the same event (a redelivery) gives the same id.
fn event_job_id(branch: &BranchId, event_id: &str) -> JobId {
    JobId::new(crate::jobs::derived_uuid(&[
        "line-event",
        branch.as_str(),
        event_id,
    ]))
}
