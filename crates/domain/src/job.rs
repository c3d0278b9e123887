//! Background jobs (spec 3, 6): their states and the pure rules that move them. A job has a
//! `kind` (`VERIFY`: verify a slip, then post its callback; `REDELIVER`: post a finished job's
//! callback again; more to come) and the kind's own input as JSON (`data`); the states, the
//! lease, the callback and its delivery are the same for every kind. The worker does the I/O
//! (ask the bank, POST the webhook) and hands each outcome to `Job::after_attempt` /
//! `Job::resend` / `Job::after_delivery`, which decide the next state, when the next step is
//! due, and the exact webhook bytes. The store persists the result.

use crate::clock::format_bangkok;
use crate::ids::{BatchId, BranchId, JobId, ServiceId};
use crate::Satang;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use std::time::Duration;
use time::OffsetDateTime;

/// What a poller sees (spec 3: `done`, `not_found`, `failed`; the waiting ones are ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Accepted, first attempt not started.
    Queued,
    /// A worker holds it now.
    Processing,
    /// Waiting for a verification retry (not found yet, Bangkok Bank pending, bank outage).
    Retrying,
    Done,
    NotFound,
    Failed,
}

impl JobStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Processing => "processing",
            JobStatus::Retrying => "retrying",
            JobStatus::Done => "done",
            JobStatus::NotFound => "not_found",
            JobStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => JobStatus::Queued,
            "processing" => JobStatus::Processing,
            "retrying" => JobStatus::Retrying,
            "done" => JobStatus::Done,
            "not_found" => JobStatus::NotFound,
            "failed" => JobStatus::Failed,
            _ => return None,
        })
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Done | JobStatus::NotFound | JobStatus::Failed
        )
    }

    /// The callback's `status` (spec 6.2) for a terminal job.
    fn callback_status(self) -> &'static str {
        match self {
            JobStatus::Done => "success",
            JobStatus::NotFound => "not_found",
            _ => "failed",
        }
    }
}

/// The kind that verifies a slip and posts its result (spec 3).
pub const VERIFY: &str = "verify";
/// The kind that posts a finished job's callback again (an operator's redelivery).
pub const REDELIVER: &str = "redeliver";
/// The LINE slip bot's kind: one webhook event (download → read → verify → reply or push).
pub const LINE: &str = "line";

/// A `line` job's data: the webhook event as LINE sent it, when it arrived, and how far the
/// work got (saved with the job, so a step that runs again after a crash knows).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineJob {
    pub event: Value,
    pub received_at_ms: i64,
    /// Times a pending slip was checked again.
    #[serde(default)]
    pub pending_checks: u32,
    /// The customer was answered (reply or push) about this slip.
    #[serde(default)]
    pub answered: bool,
}

/// What the worker does with the job next: one queue, two kinds of step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// The kind's own work (for `VERIFY`: a verification attempt).
    Run,
    /// POST the callback the run produced.
    Deliver,
    /// Nothing left to do; kept for polling until it expires.
    Idle,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Run => "run",
            Stage::Deliver => "deliver",
            Stage::Idle => "idle",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "run" => Stage::Run,
            "deliver" => Stage::Deliver,
            "idle" => Stage::Idle,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookState {
    /// No target (polling only) or not produced yet.
    None,
    Pending,
    Delivered,
    /// Every attempt failed (spec 3: `error.webhook: failed`).
    Failed,
}

impl WebhookState {
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookState::None => "none",
            WebhookState::Pending => "pending",
            WebhookState::Delivered => "delivered",
            WebhookState::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "none" => WebhookState::None,
            "pending" => WebhookState::Pending,
            "delivered" => WebhookState::Delivered,
            "failed" => WebhookState::Failed,
            _ => return None,
        })
    }
}

/// Delays in seconds and the other knobs of background work. Defaults are the spec's values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedules {
    /// Retries after "not found" or Bangkok Bank "pending" (spec 3: 30, 60, 120, 240).
    pub verify: Vec<u64>,
    /// Retries after a bank outage or an internal failure: a budget of their own.
    pub outage: Vec<u64>,
    /// Retries while billing cannot renew the subscription: a budget of its own, so a
    /// billing outage neither eats the bank-outage budget nor fails the job early.
    pub billing: Vec<u64>,
    /// Webhook retries after the first attempt (spec 6.1: about 10, 30, 120).
    pub webhook: Vec<u64>,
    pub webhook_timeout: Duration,
    /// How long a claimed job is reserved for its worker; a crashed worker's jobs come back
    /// after this.
    pub lease: Duration,
    /// How long a job can be polled (spec 3: about 7 days).
    pub retention: Duration,
}

pub const SPEC_VERIFY_SCHEDULE: [u64; 4] = [30, 60, 120, 240];
pub const SPEC_WEBHOOK_SCHEDULE: [u64; 3] = [10, 30, 120];

impl Default for Schedules {
    fn default() -> Self {
        Self {
            verify: SPEC_VERIFY_SCHEDULE.to_vec(),
            outage: vec![15, 30, 60, 120, 240],
            billing: vec![30, 60, 120, 300, 600, 900],
            webhook: SPEC_WEBHOOK_SCHEDULE.to_vec(),
            webhook_timeout: Duration::from_secs(5),
            lease: Duration::from_secs(60),
            retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// `"30,60,120,240"` → delays in seconds. At most 20 entries, each 1 s to 1 day; an empty
/// string means no retries.
pub fn parse_schedule(text: &str) -> Result<Vec<u64>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let list = text
        .split(',')
        .map(|p| match p.trim().parse::<u64>() {
            Ok(n) if (1..=86_400).contains(&n) => Ok(n),
            _ => Err(format!(
                "{:?} is not a whole number of seconds from 1 to 86400",
                p.trim()
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if list.len() > 20 {
        return Err("at most 20 retries".into());
    }
    Ok(list)
}

/// The outcome of one verification attempt, as the worker saw it.
#[derive(Debug, Clone, PartialEq)]
pub enum Attempt {
    /// The verification data (spec 2.1), ready for the callback.
    Verified(Value),
    /// The bank does not know the slip (yet): retried on the verification budget.
    NotFound(String),
    /// Bangkok Bank "pending": the same budget as not found (spec 3).
    Pending,
    /// The bank will never find it (the slip is older than the bank keeps): `not_found`
    /// at once, without retries.
    Gone(String),
    /// The bank or our own storage could not answer: retried on the outage budget, then
    /// failed with this code.
    Outage { code: String, message: String },
    /// The subscription must renew and billing cannot answer: retried on the billing budget,
    /// then failed with `RENEWAL_TEMPORARILY_UNAVAILABLE` (no callback before that).
    BillingUnavailable { message: String },
    /// A policy restriction or a permanent error: failed at once.
    Refused { code: String, message: String },
}

/// What a webhook POST came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// Any 2xx.
    Delivered(u16),
    /// Another status (redirects included: they are not followed), or no answer.
    Failed {
        status: Option<u16>,
        error: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    pub state: WebhookState,
    /// The exact bytes POSTed on every attempt (and signed).
    pub body: Option<String>,
    /// `sha256=<hex>`, only when the branch has a secret.
    pub signature: Option<String>,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub first_at: Option<OffsetDateTime>,
    pub last_at: Option<OffsetDateTime>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: JobId,
    pub batch_id: Option<BatchId>,
    pub service_id: ServiceId,
    pub branch_id: BranchId,
    /// Which kind of work (`VERIFY`, `REDELIVER`, ...): the worker runs it with that kind.
    pub kind: String,
    /// The kind's input, as JSON (`VERIFY`: a `NewJob`; `REDELIVER`: `Redelivery`).
    pub data: Value,
    /// Where the result goes: the request's `callbackUrl`, else the branch default at submit.
    pub callback_url: Option<String>,
    pub status: JobStatus,
    pub stage: Stage,
    /// When the next step may run. A claim pushes it out by the lease.
    pub due_at: OffsetDateTime,
    /// Verification attempts made.
    pub attempts: u32,
    pub not_found_retries: u32,
    pub outage_retries: u32,
    /// Retries spent waiting for billing to renew the subscription (its own budget).
    pub billing_retries: u32,
    pub result: Option<Value>,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub webhook: Webhook,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub finished_at: Option<OffsetDateTime>,
    pub expires_at: OffsetDateTime,
}

/// A submitted slip, before it becomes a job: the `data` of a `VERIFY` job.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewJob {
    pub payload: String,
    pub check_duplicate: bool,
    #[serde(default)]
    pub match_account: bool,
    /// In satang.
    #[serde(default)]
    pub match_amount: Option<Satang>,
    #[serde(default)]
    pub remark: Option<String>,
}

/// The `data` of a `REDELIVER` job: whose callback is sent again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Redelivery {
    pub job_id: JobId,
}

impl Job {
    /// A `VERIFY` job: verify `slip`, then post the result to `callback_url`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: JobId,
        batch_id: Option<BatchId>,
        service_id: ServiceId,
        branch_id: BranchId,
        slip: NewJob,
        callback_url: Option<String>,
        now: OffsetDateTime,
        retention: Duration,
    ) -> Self {
        // A struct of strings, booleans and an integer always serialises.
        let data = serde_json::to_value(&slip).unwrap_or(Value::Null);
        let mut job = Self::of_kind(
            id,
            VERIFY,
            data,
            service_id,
            branch_id,
            callback_url,
            now,
            retention,
        );
        job.batch_id = batch_id;
        job
    }

    /// A job of any kind, queued now: its first step (`Stage::Run`) is due at once.
    #[allow(clippy::too_many_arguments)]
    pub fn of_kind(
        id: JobId,
        kind: &str,
        data: Value,
        service_id: ServiceId,
        branch_id: BranchId,
        callback_url: Option<String>,
        now: OffsetDateTime,
        retention: Duration,
    ) -> Self {
        Self {
            id,
            batch_id: None,
            service_id,
            branch_id,
            kind: kind.to_string(),
            data,
            callback_url,
            status: JobStatus::Queued,
            stage: Stage::Run,
            due_at: now,
            attempts: 0,
            not_found_retries: 0,
            outage_retries: 0,
            billing_retries: 0,
            result: None,
            error_code: None,
            error_message: None,
            webhook: Webhook {
                state: WebhookState::None,
                body: None,
                signature: None,
                attempts: 0,
                last_status: None,
                last_error: None,
                first_at: None,
                last_at: None,
            },
            created_at: now,
            updated_at: now,
            finished_at: None,
            expires_at: now + retention,
        }
    }

    /// Applies one verification attempt's outcome at `now`. `secret` is the branch's webhook
    /// secret, used if the job finishes now.
    pub fn after_attempt(
        &mut self,
        attempt: Attempt,
        now: OffsetDateTime,
        s: &Schedules,
        secret: Option<&str>,
    ) {
        self.attempts += 1;
        self.updated_at = now;
        match attempt {
            Attempt::Verified(data) => {
                self.finish(JobStatus::Done, Some(data), None, now, secret);
            }
            Attempt::NotFound(_) | Attempt::Pending
                if (self.not_found_retries as usize) < s.verify.len() =>
            {
                self.retry_in(s.verify[self.not_found_retries as usize], now);
                self.not_found_retries += 1;
            }
            Attempt::NotFound(reason) => {
                let context = self.not_found_context(&reason);
                self.finish(JobStatus::NotFound, Some(context), None, now, secret);
            }
            Attempt::Gone(reason) => {
                let context = self.not_found_context(&reason);
                self.finish(JobStatus::NotFound, Some(context), None, now, secret);
            }
            Attempt::Pending => {
                let context = self.not_found_context(
                    "the bank still reports the transfer as pending (Bangkok Bank)",
                );
                self.finish(JobStatus::NotFound, Some(context), None, now, secret);
            }
            Attempt::Outage { .. } if (self.outage_retries as usize) < s.outage.len() => {
                self.retry_in(s.outage[self.outage_retries as usize], now);
                self.outage_retries += 1;
            }
            Attempt::BillingUnavailable { .. }
                if (self.billing_retries as usize) < s.billing.len() =>
            {
                self.retry_in(s.billing[self.billing_retries as usize], now);
                self.billing_retries += 1;
            }
            Attempt::BillingUnavailable { message } => {
                let code = "RENEWAL_TEMPORARILY_UNAVAILABLE".to_string();
                self.finish(JobStatus::Failed, None, Some((code, message)), now, secret);
            }
            Attempt::Outage { code, message } | Attempt::Refused { code, message } => {
                self.finish(JobStatus::Failed, None, Some((code, message)), now, secret);
            }
        }
    }

    /// A `VERIFY` job's slip (`None` for another kind, or data that is not a slip).
    pub fn slip(&self) -> Option<NewJob> {
        if self.kind != VERIFY {
            return None;
        }
        serde_json::from_value(self.data.clone()).ok()
    }

    /// A `REDELIVER` job's input.
    pub fn redelivery(&self) -> Option<Redelivery> {
        if self.kind != REDELIVER {
            return None;
        }
        serde_json::from_value(self.data.clone()).ok()
    }

    /// Whether the job is still at work: running its step or delivering its callback.
    pub fn is_running(&self) -> bool {
        self.stage != Stage::Idle
    }

    /// A redelivery's run: `body` (the original callback's bytes, unchanged) is to be sent,
    /// signed with `secret` (the branch's secret *now*: a redelivery re-signs), then
    /// delivered with the usual retries.
    pub fn resend(&mut self, body: String, secret: Option<&str>, now: OffsetDateTime) {
        self.attempts += 1;
        self.updated_at = now;
        self.status = JobStatus::Done;
        self.finished_at = Some(now);
        self.due_at = now;
        self.webhook.signature = secret.map(|k| sign_webhook(k, body.as_bytes()));
        self.webhook.body = Some(body);
        self.webhook.state = WebhookState::Pending;
        self.stage = Stage::Deliver;
    }

    /// Ends the job `failed` at once without a callback (a redelivery whose original is
    /// gone: there is nothing to send).
    pub fn fail_quietly(&mut self, code: &str, message: &str, now: OffsetDateTime) {
        self.attempts += 1;
        self.updated_at = now;
        self.status = JobStatus::Failed;
        self.error_code = Some(code.into());
        self.error_message = Some(message.into());
        self.finished_at = Some(now);
        self.due_at = now;
        self.stage = Stage::Idle;
    }

    /// A run that could not complete (our storage): retried on the outage budget; `false`
    /// when the budget is spent (then the caller ends the job).
    pub fn retry_outage(&mut self, now: OffsetDateTime, s: &Schedules) -> bool {
        match s.outage.get(self.outage_retries as usize) {
            Some(secs) => {
                self.attempts += 1;
                self.updated_at = now;
                self.retry_in(*secs, now);
                self.outage_retries += 1;
                true
            }
            None => false,
        }
    }

    /// Ends the job `done` without a callback (the LINE bot answers in the chat).
    pub fn done_quietly(&mut self, now: OffsetDateTime) {
        self.attempts += 1;
        self.updated_at = now;
        self.status = JobStatus::Done;
        self.finished_at = Some(now);
        self.due_at = now;
        self.stage = Stage::Idle;
    }

    /// Runs the job's step again in `secs` (a pending slip checked again later).
    pub fn again_in(&mut self, secs: u64, now: OffsetDateTime) {
        self.attempts += 1;
        self.updated_at = now;
        self.retry_in(secs, now);
    }

    fn retry_in(&mut self, secs: u64, now: OffsetDateTime) {
        self.status = JobStatus::Retrying;
        self.stage = Stage::Run;
        self.due_at = now + Duration::from_secs(secs);
    }

    /// `data` of a `not_found` result (spec 6.2: failure context, no verified slip).
    fn not_found_context(&self, reason: &str) -> Value {
        json!({
            "payload": self.data.get("payload").cloned().unwrap_or(Value::Null),
            "reason": reason,
            "attempts": self.attempts,
        })
    }

    fn finish(
        &mut self,
        status: JobStatus,
        data: Option<Value>,
        error: Option<(String, String)>,
        now: OffsetDateTime,
        secret: Option<&str>,
    ) {
        self.status = status;
        self.result = data;
        (self.error_code, self.error_message) = match error {
            Some((c, m)) => (Some(c), Some(m)),
            None => (None, None),
        };
        self.finished_at = Some(now);
        self.due_at = now;
        match &self.callback_url {
            Some(_) => {
                let body = self.callback_body(now);
                self.webhook.signature = secret.map(|k| sign_webhook(k, body.as_bytes()));
                self.webhook.body = Some(body);
                self.webhook.state = WebhookState::Pending;
                self.stage = Stage::Deliver;
            }
            None => self.stage = Stage::Idle,
        }
    }

    /// The callback (spec 2.3) as compact JSON: these bytes are sent and signed unchanged.
    fn callback_body(&self, now: OffsetDateTime) -> String {
        let mut body = json!({
            "jobId": self.id,
            "batchId": self.batch_id,
            "status": self.status.callback_status(),
            "data": if self.status == JobStatus::Failed { Value::Null } else { self.result.clone().unwrap_or(Value::Null) },
        });
        if let (Some(code), Some(message)) = (&self.error_code, &self.error_message) {
            body["error"] = json!({ "code": code, "message": message });
        }
        body["timestamp"] = Value::String(format_bangkok(now));
        body.to_string()
    }

    /// Applies one webhook attempt's outcome at `now`.
    pub fn after_delivery(&mut self, d: Delivery, now: OffsetDateTime, s: &Schedules) {
        let w = &mut self.webhook;
        w.attempts += 1;
        w.first_at.get_or_insert(now);
        w.last_at = Some(now);
        self.updated_at = now;
        match d {
            Delivery::Delivered(status) => {
                w.last_status = Some(status);
                w.last_error = None;
                w.state = WebhookState::Delivered;
                self.stage = Stage::Idle;
            }
            Delivery::Failed { status, error } => {
                w.last_status = status;
                w.last_error = error;
                // Attempt n (1-based) failed: retry after the n-th delay, if there is one.
                match s.webhook.get(w.attempts as usize - 1) {
                    Some(secs) => self.due_at = now + Duration::from_secs(*secs),
                    None => {
                        w.state = WebhookState::Failed;
                        self.stage = Stage::Idle;
                    }
                }
            }
        }
    }
}

/// `sha256=<lowercase hex HMAC-SHA256(secret, body)>` (spec 6.3).
pub fn sign_webhook(secret: &str, body: &[u8]) -> String {
    // HMAC accepts keys of any length; `new_from_slice` cannot fail for it.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t0() -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_790_000_000).unwrap()
    }

    fn job(callback: bool) -> Job {
        Job::new(
            "11111111-1111-4111-8111-111111111111".into(),
            None,
            "svc".into(),
            "br".into(),
            NewJob {
                payload: "P".into(),
                check_duplicate: true,
                match_account: false,
                match_amount: None,
                remark: None,
            },
            callback.then(|| "https://example.com/hook".to_string()),
            t0(),
            Duration::from_secs(7 * 86400),
        )
    }

    #[test]
    fn schedule_parsing() {
        assert_eq!(
            parse_schedule("30,60, 120,240").unwrap(),
            vec![30, 60, 120, 240]
        );
        assert_eq!(parse_schedule("").unwrap(), Vec::<u64>::new());
        assert!(parse_schedule("0").is_err());
        assert!(parse_schedule("10,x").is_err());
        assert!(parse_schedule("-5").is_err());
        assert!(parse_schedule(&"1,".repeat(21)).is_err());
    }

    #[test]
    fn not_found_retries_follow_the_spec_schedule_then_not_found() {
        let s = Schedules::default();
        let mut j = job(true);
        let mut now = t0();
        for delay in SPEC_VERIFY_SCHEDULE {
            j.after_attempt(Attempt::NotFound("no".into()), now, &s, None);
            assert_eq!(j.status, JobStatus::Retrying);
            assert_eq!(j.due_at, now + Duration::from_secs(delay));
            now = j.due_at;
        }
        j.after_attempt(Attempt::Pending, now, &s, None);
        assert_eq!(j.status, JobStatus::NotFound);
        assert_eq!(j.attempts, 5);
        assert_eq!(j.stage, Stage::Deliver);
        let body: Value = serde_json::from_str(j.webhook.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["status"], "not_found");
        assert_eq!(body["data"]["attempts"], 5);
        assert!(body.get("error").is_none());
    }

    #[test]
    fn outage_has_its_own_budget_and_never_finishes_early() {
        let s = Schedules::default();
        let mut j = job(true);
        j.after_attempt(Attempt::NotFound("no".into()), t0(), &s, None);
        for _ in 0..s.outage.len() {
            let o = Attempt::Outage {
                code: "API_SERVER_ERROR".into(),
                message: "m".into(),
            };
            j.after_attempt(o, t0(), &s, None);
            assert_eq!(j.status, JobStatus::Retrying);
            assert_eq!(
                j.webhook.state,
                WebhookState::None,
                "no callback in between"
            );
        }
        assert_eq!(j.not_found_retries, 1);
        let o = Attempt::Outage {
            code: "API_SERVER_ERROR".into(),
            message: "m".into(),
        };
        j.after_attempt(o, t0(), &s, None);
        assert_eq!(j.status, JobStatus::Failed);
        assert_eq!(j.error_code.as_deref(), Some("API_SERVER_ERROR"));
    }

    #[test]
    fn success_body_is_compact_signed_and_ordered() {
        let s = Schedules::default();
        let mut j = job(true);
        j.after_attempt(Attempt::Verified(json!({"a": 1})), t0(), &s, Some("sek"));
        let body = j.webhook.body.clone().unwrap();
        assert!(body.starts_with(
            r#"{"jobId":"11111111-1111-4111-8111-111111111111","batchId":null,"status":"success","data":{"a":1},"timestamp":""#
        ));
        assert_eq!(
            j.webhook.signature.as_deref(),
            Some(sign_webhook("sek", body.as_bytes()).as_str())
        );
        // Known answer (RFC 4231-style check of our formatting): HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog").
        assert_eq!(
            sign_webhook("key", b"The quick brown fox jumps over the lazy dog"),
            "sha256=f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
        );
    }

    #[test]
    fn refused_fails_at_once_with_null_data_and_no_target_means_idle() {
        let s = Schedules::default();
        let mut j = job(false);
        j.after_attempt(
            Attempt::Refused {
                code: "QUOTA_EXCEEDED".into(),
                message: "q".into(),
            },
            t0(),
            &s,
            Some("k"),
        );
        assert_eq!(j.status, JobStatus::Failed);
        assert_eq!(j.stage, Stage::Idle);
        assert_eq!(j.webhook.body, None);
        let mut j = job(true);
        j.after_attempt(
            Attempt::Refused {
                code: "QUOTA_EXCEEDED".into(),
                message: "q".into(),
            },
            t0(),
            &s,
            None,
        );
        let body: Value = serde_json::from_str(j.webhook.body.as_deref().unwrap()).unwrap();
        assert_eq!(body["data"], Value::Null);
        assert_eq!(body["error"]["code"], "QUOTA_EXCEEDED");
        assert_eq!(j.webhook.signature, None);
    }

    #[test]
    fn a_slip_the_bank_no_longer_keeps_is_not_found_at_once() {
        let s = Schedules::default();
        let mut j = job(true);
        j.after_attempt(Attempt::Gone("expired".into()), t0(), &s, None);
        assert_eq!(j.status, JobStatus::NotFound);
        assert_eq!(j.attempts, 1);
        assert_eq!(j.not_found_retries, 0);
    }

    #[test]
    fn webhook_retries_then_fails() {
        let s = Schedules::default();
        let mut j = job(true);
        j.after_attempt(Attempt::Verified(json!({})), t0(), &s, None);
        let mut now = t0();
        for delay in SPEC_WEBHOOK_SCHEDULE {
            j.after_delivery(
                Delivery::Failed {
                    status: Some(500),
                    error: None,
                },
                now,
                &s,
            );
            assert_eq!(j.stage, Stage::Deliver);
            assert_eq!(j.due_at, now + Duration::from_secs(delay));
            now = j.due_at;
        }
        j.after_delivery(
            Delivery::Failed {
                status: None,
                error: Some("timeout".into()),
            },
            now,
            &s,
        );
        assert_eq!(j.webhook.state, WebhookState::Failed);
        assert_eq!(j.webhook.attempts, 4);
        assert_eq!(j.stage, Stage::Idle);
        assert_eq!(
            j.status,
            JobStatus::Done,
            "a failed delivery does not change the result"
        );
    }

    #[test]
    fn a_verify_jobs_data_is_its_slip_and_survives_json() {
        let j = job(true);
        assert_eq!(j.kind, VERIFY);
        assert_eq!(
            j.data,
            json!({"payload": "P", "checkDuplicate": true, "matchAccount": false,
                   "matchAmount": null, "remark": null})
        );
        let slip = j.slip().unwrap();
        assert_eq!(slip.payload, "P");
        assert!(slip.check_duplicate);
        assert_eq!(j.redelivery(), None, "not a redelivery");
        // Rows migrated from the old columns carry every field; a missing optional is absent.
        let old: NewJob = serde_json::from_value(
            json!({"payload": "Q", "checkDuplicate": false, "matchAmount": 150}),
        )
        .unwrap();
        assert_eq!(old.match_amount, Some(Satang(150)));
        assert!(!old.match_account);
    }

    #[test]
    fn a_redelivery_resends_the_same_bytes_signed_with_the_secret_given() {
        let s = Schedules::default();
        let mut original = job(true);
        original.after_attempt(Attempt::Verified(json!({"a": 1})), t0(), &s, Some("old"));
        let body = original.webhook.body.clone().unwrap();
        let mut r = Job::of_kind(
            "22222222-2222-4222-8222-222222222222".into(),
            REDELIVER,
            serde_json::to_value(Redelivery {
                job_id: original.id.clone(),
            })
            .unwrap(),
            "svc".into(),
            "br".into(),
            original.callback_url.clone(),
            t0(),
            Duration::from_secs(86400),
        );
        assert_eq!(r.redelivery().unwrap().job_id, original.id);
        assert_eq!(r.slip(), None);
        assert!(r.is_running());
        r.resend(body.clone(), Some("new"), t0());
        assert_eq!(r.stage, Stage::Deliver);
        assert_eq!(r.webhook.state, WebhookState::Pending);
        assert_eq!(r.webhook.body.as_deref(), Some(body.as_str()));
        assert_eq!(
            r.webhook.signature.as_deref(),
            Some(sign_webhook("new", body.as_bytes()).as_str())
        );
        assert_ne!(r.webhook.signature, original.webhook.signature);
        // Delivery then follows the usual rules.
        r.after_delivery(Delivery::Delivered(200), t0(), &s);
        assert_eq!(r.stage, Stage::Idle);
        assert!(!r.is_running());
        let mut unsigned = r.clone();
        unsigned.resend(body, None, t0());
        assert_eq!(unsigned.webhook.signature, None);
    }

    #[test]
    fn a_run_that_cannot_complete_retries_on_the_outage_budget_then_fails_quietly() {
        let s = Schedules::default();
        let mut j = job(true);
        for secs in s.outage.clone() {
            assert!(j.retry_outage(t0(), &s));
            assert_eq!(j.status, JobStatus::Retrying);
            assert_eq!(j.due_at, t0() + Duration::from_secs(secs));
        }
        assert!(!j.retry_outage(t0(), &s), "budget spent");
        j.fail_quietly("JOB_NOT_FOUND", "gone", t0());
        assert_eq!(j.status, JobStatus::Failed);
        assert_eq!(j.stage, Stage::Idle);
        assert_eq!(j.webhook.body, None, "no callback");
        assert_eq!(j.error_code.as_deref(), Some("JOB_NOT_FOUND"));
    }

    fn attempt() -> impl Strategy<Value = Attempt> {
        prop_oneof![
            Just(Attempt::Verified(json!({}))),
            Just(Attempt::NotFound("n".into())),
            Just(Attempt::Pending),
            Just(Attempt::Outage {
                code: "API_SERVER_ERROR".into(),
                message: "m".into()
            }),
            Just(Attempt::Refused {
                code: "QUOTA_EXCEEDED".into(),
                message: "m".into()
            }),
        ]
    }

    proptest! {
        /// Whatever the banks answer, a job ends within its budgets, and once terminal it
        /// has exactly one callback body and no further verification step.
        #[test]
        fn attempts_are_bounded(answers in proptest::collection::vec(attempt(), 1..40)) {
            let s = Schedules::default();
            let mut j = job(true);
            for a in answers {
                if j.status.is_terminal() { break; }
                j.after_attempt(a, t0(), &s, None);
            }
            prop_assert!(j.attempts as usize <= 1 + s.verify.len() + s.outage.len());
            prop_assert!(j.not_found_retries as usize <= s.verify.len());
            prop_assert!(j.outage_retries as usize <= s.outage.len());
            if j.status.is_terminal() {
                prop_assert_eq!(j.stage, Stage::Deliver);
                prop_assert!(j.webhook.body.is_some());
            } else {
                prop_assert_eq!(j.stage, Stage::Run);
                prop_assert!(j.webhook.body.is_none());
            }
        }

        #[test]
        fn signature_changes_with_any_byte(body in proptest::collection::vec(any::<u8>(), 1..200), i in any::<usize>()) {
            let sig = sign_webhook("secret", &body);
            let mut other = body.clone();
            let i = i % other.len();
            other[i] ^= 1;
            prop_assert_ne!(sig, sign_webhook("secret", &other));
        }
    }
}
