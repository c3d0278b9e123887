//! The `line` kind: one LINE webhook event (issue 32). An image (or a typed slip payload) is
//! read and verified with the duplicate check on (and `matchAccount` when the branch has
//! accounts), and the verdict goes back into the chat: a reply while the reply token is fresh
//! (free), else a push if the branch allows pushes and has some left today (they cost money).
//! A pending slip is checked again later and its result pushed once. Every verification leaves
//! its attempts-log record (channel `line`).
//!
//! A step may run again after a crash: the verification is charged once per job, a reply
//! token is single-use (LINE refuses a second reply), and a push carries a retry key derived
//! from the job, so LINE accepts it once. Before a reply token is handed to LINE the job
//! marks it in the database (`line_events`, `reply <job id>`, kept 24 h): a later run that
//! finds the mark reads LINE's 400 as "an earlier run replied", not as "too old, push".

use super::{JobContext, JobKind, Owner};
use crate::attempts::Trace;
use crate::input::SlipInput;
use crate::line::client::{LineClient, LineError};
use crate::verify::VerifyRequest;
use crate::Services;
use domain::attempt::{Channel, Outcome, SlipKind};
use domain::job::{Job, LineJob};
use domain::line::{
    text_message, verdict_messages, Event, GroupMode, LineSettings, SlipCard, Verdict,
};
use domain::Error;
use serde_json::Value;

/// A pending slip is checked again this often, this many times, then answered "not found".
const PENDING_EVERY_SECS: u64 = 120;
const PENDING_CHECKS: u32 = 5;

/// How long a reply mark is kept (`periodic::SweepLineReplies`); a reply token lives a minute.
pub const REPLY_MARK_KEPT: time::Duration = time::Duration::hours(24);

pub struct Line;

#[async_trait::async_trait]
impl JobKind for Line {
    async fn run(&self, cx: &JobContext<'_>, mut job: Job) -> Job {
        let svc = cx.svc;
        let now = svc.now();
        let Ok(mut data) = serde_json::from_value::<LineJob>(job.data.clone()) else {
            job.fail_quietly("INTERNAL_SERVER_ERROR", "a line job without its event", now);
            return job;
        };
        let Ok(event) = serde_json::from_value::<Event>(data.event.clone()) else {
            job.done_quietly(now);
            return job;
        };
        let (branch, service) = match cx.owner(&job) {
            Owner::Found(b, s) => (b.clone(), s.cloned()),
            Owner::NoBranch => {
                job.done_quietly(now);
                return job;
            }
            Owner::Unavailable(_) => return again(svc, job),
        };
        let settings = match svc.store.get_line_settings(&branch.id).await {
            Ok(Some(s)) if s.credentials().is_some() => s,
            Ok(_) => {
                job.done_quietly(now);
                return job;
            }
            Err(_) => return again(svc, job),
        };
        let Some(client) = svc.line_client() else {
            job.done_quietly(now);
            return job;
        };
        let bot = Bot {
            svc,
            client: &client,
            settings: &settings,
            event: &event,
            job_id: job.id.as_str(),
            branch_id: job.branch_id.clone(),
            received_at_ms: data.received_at_ms,
        };
        match bot.work(branch, service, &mut data).await {
            Step::Done => job.done_quietly(now),
            Step::CheckAgain => job.again_in(PENDING_EVERY_SECS, now),
            Step::Retry => return again(svc, job),
        }
        job.data = serde_json::to_value(&data).unwrap_or(job.data);
        job
    }
}

/// Our storage or LINE could not answer: the step runs again on the outage budget.
fn again(svc: &Services, mut job: Job) -> Job {
    let now = svc.now();
    if !job.retry_outage(now, svc.schedules()) {
        let e = Error::internal("");
        job.fail_quietly(e.code(), &e.public_message(), now);
    }
    job
}

enum Step {
    Done,
    /// A pending slip: verify again later.
    CheckAgain,
    /// A transient failure before anything was answered.
    Retry,
}

struct Bot<'a> {
    svc: &'a Services,
    client: &'a LineClient,
    settings: &'a LineSettings,
    event: &'a Event,
    job_id: &'a str,
    branch_id: domain::BranchId,
    received_at_ms: i64,
}

impl Bot<'_> {
    fn token(&self) -> &str {
        self.settings
            .credentials()
            .map(|(_, t)| t)
            .unwrap_or_default()
    }

    fn in_group(&self) -> bool {
        self.event.source.as_ref().is_some_and(|s| s.is_group())
    }

    async fn work(
        &self,
        branch: domain::model::Branch,
        service: Option<domain::model::Service>,
        data: &mut LineJob,
    ) -> Step {
        let e = self.event;
        let message = e.message.as_ref();
        match (e.kind.as_str(), message.map(|m| m.kind.as_str())) {
            ("join", _) => {
                // The group's id, so staff can set `--line-notify-to`.
                if let Some(id) = e.source.as_ref().and_then(|s| s.chat_id()) {
                    let text = domain::line::join_text(id);
                    self.answer(&[text_message(&text)], data, "join").await;
                }
                Step::Done
            }
            ("message", Some("image")) | ("message", Some("text")) => {
                let Some(m) = message else { return Step::Done };
                let input = if m.kind == "image" {
                    match self.image(m).await {
                        Ok(i) => i,
                        Err(e) if e.is_transient() => return Step::Retry,
                        Err(_) => SlipInput::Image(Vec::new()),
                    }
                } else {
                    let text = m.text.as_deref().unwrap_or("").trim();
                    if matches!(text, "สรุป" | "summary") {
                        self.summary(&branch, data).await;
                        return Step::Done;
                    }
                    // Only a text that is a slip's QR payload is verified; chat is ignored.
                    if slip_qr::parse_bank_slip(text).is_err() {
                        return Step::Done;
                    }
                    SlipInput::Payload(text.to_string())
                };
                if m.kind == "image" && !self.in_group() {
                    if let Some(chat) = e.source.as_ref().and_then(|s| s.chat_id()) {
                        if !data.answered && data.pending_checks == 0 {
                            self.client.loading(self.token(), chat).await;
                        }
                    }
                }
                self.verify(branch, service, input, data).await
            }
            _ => Step::Done,
        }
    }

    /// The image: from LINE's content host, or an external URL through the image-URL guard.
    async fn image(&self, m: &domain::line::Message) -> Result<SlipInput, LineError> {
        match &m.content_provider {
            Some(p) if p.kind == "external" => Ok(SlipInput::Url(
                p.original_content_url.clone().unwrap_or_default(),
            )),
            _ => self
                .client
                .content(self.token(), &m.id)
                .await
                .map(SlipInput::Image),
        }
    }

    async fn verify(
        &self,
        branch: domain::model::Branch,
        service: Option<domain::model::Service>,
        input: SlipInput,
        data: &mut LineJob,
    ) -> Step {
        let svc = self.svc;
        let started = std::time::Instant::now();
        let trace = Trace::new(Channel::Line, SlipKind::Bank);
        let verdict = 'v: {
            let Some(service) = service else {
                break 'v Err(Error::ServiceDeleted);
            };
            if !branch.active {
                break 'v Err(Error::BranchInactive);
            }
            let caller = match svc.auth().caller(service, branch.clone()).await {
                Ok(c) => c.traced(trace.clone()),
                Err(e) => break 'v Err(e),
            };
            trace.input(input.kind(false));
            let slip = match svc.slips().bank_slip(&caller, input).await {
                Ok(s) => s,
                Err(e) => break 'v Err(e),
            };
            let accounts = match svc.store.list_bank_accounts(&branch.id).await {
                Ok(a) => a,
                Err(e) => break 'v Err(e.into()),
            };
            let req = VerifyRequest {
                slip: slip.clone(),
                check_duplicate: true,
                match_amount: None,
                remark: None,
                match_account: !accounts.is_empty(),
                job_id: Some(domain::JobId::from(self.job_id)),
                idempotency: None,
            };
            match svc.verify().verify_bank(&caller, &req).await {
                Ok(d) => {
                    let card = card(&d);
                    if d.is_duplicate {
                        let first = svc
                            .verify()
                            .recorded_verification(&caller, &slip.sending_bank, &slip.trans_ref)
                            .await
                            .ok()
                            .flatten()
                            .map(|r| r.verified_at)
                            .unwrap_or_else(|| svc.now());
                        Ok(Verdict::Duplicate(card, first))
                    } else if d.mismatches.contains(&"account_not_match") {
                        Ok(Verdict::WrongAccount(card))
                    } else {
                        Ok(Verdict::Verified(card))
                    }
                }
                Err(e) => Err(e),
            }
        };
        let ended = match &verdict {
            Ok(_) => None,
            Err(e) => Some(crate::attempts::ended_with(e)),
        };
        // A pending slip is logged once, with its final outcome.
        let pending = matches!(verdict, Err(Error::SlipPending));
        if pending && data.pending_checks < PENDING_CHECKS {
            if data.pending_checks == 0 {
                self.answer_verdict(&Verdict::Pending, data, "pending")
                    .await;
            }
            data.pending_checks += 1;
            return Step::CheckAgain;
        }
        if matches!(&verdict, Err(Error::ApiServerError | Error::Internal(_))) && !data.answered {
            // The bank or our storage could not answer: try again before saying anything.
            return Step::Retry;
        }
        let ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        svc.attempts()
            .log_attempt(trace.record(
                svc.now(),
                ended,
                ms,
                None,
                Some(domain::JobId::from(self.job_id)),
            ))
            .await;
        let v = match verdict {
            Ok(v) => v,
            Err(e) => match Outcome::of_error(&e) {
                Outcome::NoQr | Outcome::InvalidQr | Outcome::Error => Verdict::NoQr,
                Outcome::NotFound | Outcome::Pending => Verdict::NotFound,
                _ => {
                    self.notice(&domain::line::notice_unchecked(e.code())).await;
                    Verdict::StaffWillConfirm
                }
            },
        };
        let what = if data.pending_checks > 0 {
            "result"
        } else {
            "verdict"
        };
        self.answer_verdict(&v, data, what).await;
        if let Verdict::Verified(c) = &v {
            self.notice(&domain::line::notice_paid(c.amount, self.settings.language))
                .await;
        }
        Step::Done
    }

    /// The verdict, unless this is a group in silent mode and all is well, or a picture with
    /// no slip in a group.
    async fn answer_verdict(&self, v: &Verdict, data: &mut LineJob, what: &str) {
        if self.in_group() {
            let silent = self.settings.group_mode == GroupMode::Silent;
            if (silent && !v.is_problem()) || matches!(v, Verdict::NoQr) {
                return;
            }
        }
        // The customer's image is quoted in the chat it came from (quote tokens work only
        // there; a push to the same chat may use it too).
        let quote = self
            .event
            .message
            .as_ref()
            .and_then(|m| m.quote_token.as_deref());
        let messages = verdict_messages(v, self.settings.language, quote);
        self.answer(&messages, data, what).await;
    }

    /// Reply while the token is fresh (free); otherwise push, if allowed and within today's
    /// allowance, with a retry key derived from this job and `what`.
    async fn answer(&self, messages: &[Value], data: &mut LineJob, what: &str) {
        let svc = self.svc;
        let age_ms = domain::clock::to_millis(svc.now()) - self.received_at_ms;
        let fresh = age_ms < (svc.line_reply_window().as_millis() as i64);
        if fresh && !data.answered {
            if let Some(token) = self.event.reply_token.as_deref() {
                // Marked before the call, so a run after a crash knows the token may be spent.
                // A mark that cannot be written counts as found: a lost push is better than a
                // verdict sent twice.
                let now = svc.now();
                let first = svc
                    .store
                    .claim_line_event(
                        &self.branch_id,
                        &format!("reply {}", self.job_id),
                        now,
                        now - REPLY_MARK_KEPT,
                    )
                    .await
                    .unwrap_or_else(|e| {
                        tracing::warn!(job = self.job_id, error = %e, "cannot mark a LINE reply");
                        false
                    });
                match self.client.reply(self.token(), token, messages).await {
                    Ok(()) => {
                        svc.metrics.line_message("reply", "sent");
                        data.answered = true;
                        return;
                    }
                    // An earlier run of this job (it replied, then died before saving) used
                    // the token: answered. Without its mark, the token was too old: push.
                    Err(LineError::Status(400)) if !first => {
                        data.answered = true;
                        return;
                    }
                    Err(e) => {
                        svc.metrics.line_message("reply", "failed");
                        tracing::warn!(job = self.job_id, error = ?e, "LINE reply failed")
                    }
                }
            }
        }
        let Some(to) = self.event.source.as_ref().and_then(|s| s.chat_id()) else {
            return;
        };
        if self.push(to, messages, what).await {
            data.answered = true;
        }
    }

    /// A push, if the branch allows pushes and has one left today; true when sent.
    async fn push(&self, to: &str, messages: &[Value], what: &str) -> bool {
        let svc = self.svc;
        if !self.settings.push {
            return false;
        }
        let day = domain::clock::bangkok(svc.now()).date().to_string();
        match svc
            .store
            .take_line_push(&self.branch_id, &day, self.settings.push_daily_limit)
            .await
        {
            Ok(true) => {}
            _ => {
                svc.metrics.line_message("push", "over_limit");
                tracing::info!(job = self.job_id, "LINE push allowance used up for today");
                return false;
            }
        }
        let key = retry_key(self.job_id, what);
        for wait_ms in [0u64, 500, 2000] {
            if wait_ms > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
            }
            match self.client.push(self.token(), to, messages, &key).await {
                Ok(()) => {
                    svc.metrics.line_message("push", "sent");
                    return true;
                }
                Err(e) if e.is_transient() => continue,
                Err(e) => {
                    svc.metrics.line_message("push", "failed");
                    tracing::warn!(job = self.job_id, error = ?e, "LINE push refused");
                    return false;
                }
            }
        }
        svc.metrics.line_message("push", "failed");
        false
    }

    /// A notice to the staff chat (`notify_to`), by push.
    async fn notice(&self, text: &str) {
        if let Some(to) = self.settings.notify_to.clone() {
            self.push(&to, &[text_message(text)], &format!("notice-{text}"))
                .await;
        }
    }

    /// Today's verified total for the branch (Thai day), in the staff chat only.
    async fn summary(&self, branch: &domain::model::Branch, data: &mut LineJob) {
        let chat = self.event.source.as_ref().and_then(|s| s.chat_id());
        if chat.is_none() || chat != self.settings.notify_to.as_deref() {
            return;
        }
        let now = domain::clock::bangkok(self.svc.now());
        let from = now.date().midnight().assume_offset(now.offset());
        let mut q = domain::attempt::AttemptQuery {
            branch_id: Some(branch.id.clone()),
            outcome: Some(Outcome::Verified),
            from: Some(from),
            limit: domain::attempt::MAX_ROWS_PER_QUERY,
            ..Default::default()
        };
        // Page by page: a busy day has more records than one query returns.
        let (mut count, mut total) = (0usize, 0i64);
        loop {
            let Ok(rows) = self.svc.attempts().search_attempts(q.clone()).await else {
                return; // no total rather than a wrong one
            };
            count += rows.len();
            total += rows
                .iter()
                .filter_map(|r| r.attempt.amount.map(|a| a.0))
                .sum::<i64>();
            match rows.last() {
                Some(last) if rows.len() as u32 == q.limit => {
                    q.after = Some(domain::attempt::Cursor {
                        at_ms: domain::clock::to_millis(last.attempt.at),
                        id: last.id,
                    });
                }
                _ => break,
            }
        }
        let text = domain::line::summary_text(count, domain::Satang(total), self.settings.language);
        self.answer(&[text_message(&text)], data, "summary").await;
    }
}

/// `X-Line-Retry-Key`: a UUID from the job and what is sent, so a retried push lands once.
fn retry_key(job_id: &str, what: &str) -> String {
    super::derived_uuid(&["line-push", job_id, what])
}

/// The card of a verified slip: only what the bank sent.
fn card(d: &domain::model::VerifyBankData) -> SlipCard {
    let r = &d.raw_slip;
    let v = serde_json::to_value(r).unwrap_or(Value::Null);
    let s = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let amount = (d.amount_in_slip * 100.0).round() as i64;
    SlipCard {
        amount: domain::Satang(amount),
        sender_name: s("/sender/account/name/th"),
        sender_bank: s("/sender/bank/short"),
        sender_account: s("/sender/account/bank/account"),
        receiver_name: s("/receiver/account/name/th"),
        receiver_bank: s("/receiver/bank/short"),
        receiver_account: s("/receiver/account/bank/account"),
        occurred_at: time::OffsetDateTime::parse(
            &s("/date"),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
        trans_ref: s("/transRef"),
    }
}
