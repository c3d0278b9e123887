//! The attempts log: every verification that passed authentication and the rate limit leaves
//! one record, committed before its answer is sent. What a request learns on its way (how the
//! slip came, its bank and reference, who answered, the amount) is noted on its [`Trace`]
//! where it is learnt; the HTTP layer (or the job worker) ends the trace with the answer's
//! outcome. Search, export and retention are here too.

pub use crate::handles::Attempts;
use domain::attempt::{
    Attempt, AttemptDraft, AttemptQuery, AttemptRow, Channel, InputKind, Outcome, SlipKind,
    MAX_ROWS_PER_QUERY,
};
use domain::{BranchId, Error, JobId, Satang, ServiceId};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use time::OffsetDateTime;

/// What one verification noted about itself; shared by the request's layers. A detached trace
/// (the default: routes without a log, the CLI) notes nothing.
#[derive(Debug, Clone, Default)]
pub struct Trace(Option<Arc<Mutex<Notes>>>);

#[derive(Debug)]
struct Notes {
    channel: Channel,
    kind: SlipKind,
    /// Set once the caller passed authentication and the rate limit: only then is it logged.
    caller: Option<(ServiceId, BranchId)>,
    input: Option<InputKind>,
    sending_bank: Option<String>,
    trans_ref: Option<String>,
    amount: Option<Satang>,
    asked_amount: Option<Satang>,
    source: Option<String>,
    mismatches: Vec<String>,
    duplicate: bool,
    /// A stored `Idempotency-Key` answer: the attempt was recorded when it first ran.
    replayed: bool,
    /// The QR that was no slip failed its checksum (damaged or altered), for the metrics.
    bad_crc: bool,
    /// The record was committed with the charge (`Trace::draft`); the end only counts it.
    stored: bool,
    request_id: Option<String>,
    started: Instant,
}

impl Notes {
    /// The record as noted so far, ended as verified (`None` before authentication): the one
    /// place that turns notes into a record, for `Trace::draft` and `Trace::record`.
    fn attempt(
        &self,
        at: OffsetDateTime,
        latency_ms: u32,
        request_id: Option<String>,
        job_id: Option<JobId>,
    ) -> Option<Attempt> {
        let (service_id, branch_id) = self.caller.clone()?;
        Some(Attempt {
            at,
            service_id,
            branch_id,
            channel: self.channel,
            kind: self.kind,
            input: self.input,
            sending_bank: self.sending_bank.clone(),
            trans_ref: self.trans_ref.clone(),
            amount: self.amount.or(self.asked_amount),
            outcome: Outcome::Verified,
            error_code: None,
            mismatches: self.mismatches.clone(),
            source: self.source.clone(),
            latency_ms,
            request_id,
            job_id,
        })
    }
}

impl Trace {
    /// A trace that will be recorded.
    pub fn new(channel: Channel, kind: SlipKind) -> Trace {
        Trace(Some(Arc::new(Mutex::new(Notes {
            channel,
            kind,
            caller: None,
            input: None,
            sending_bank: None,
            trans_ref: None,
            amount: None,
            asked_amount: None,
            source: None,
            mismatches: Vec::new(),
            duplicate: false,
            replayed: false,
            bad_crc: false,
            stored: false,
            request_id: None,
            started: Instant::now(),
        }))))
    }

    /// An async job's verification: logged under the job's branch whatever happens.
    pub fn for_job(service: &ServiceId, branch: &BranchId) -> Trace {
        let t = Trace::new(Channel::Async, SlipKind::Bank);
        t.note(|n| n.caller = Some((service.clone(), branch.clone())));
        t
    }

    fn note(&self, f: impl FnOnce(&mut Notes)) {
        if let Some(n) = &self.0 {
            if let Ok(mut n) = n.lock() {
                f(&mut n);
            }
        }
    }

    /// The caller passed authentication and the rate limit: from now on it is logged.
    pub(crate) fn authenticated(&self, service: &ServiceId, branch: &BranchId) {
        self.note(|n| n.caller = Some((service.clone(), branch.clone())));
    }

    pub fn input(&self, kind: InputKind) {
        self.note(|n| n.input = Some(kind));
    }

    pub(crate) fn slip(&self, sending_bank: &str, trans_ref: &str) {
        self.note(|n| {
            n.sending_bank = Some(sending_bank.into());
            n.trans_ref = Some(trans_ref.into());
        });
    }

    pub(crate) fn asked_amount(&self, amount: Option<Satang>) {
        self.note(|n| n.asked_amount = amount);
    }

    pub(crate) fn source(&self, source: &str) {
        self.note(|n| n.source = Some(source.into()));
    }

    /// The verified answer: its amount, failed checks and whether it was a duplicate.
    pub(crate) fn answered(&self, amount: Satang, mismatches: &[&str], duplicate: bool) {
        self.note(|n| {
            n.amount = Some(amount);
            n.mismatches = mismatches.iter().map(|m| m.to_string()).collect();
            n.duplicate = duplicate;
        });
    }

    /// Answered as a duplicate (v1's `duplicate_slip`).
    pub fn duplicate(&self) {
        self.note(|n| n.duplicate = true);
    }

    /// The `X-Request-Id` the answer carries.
    pub fn request_id(&self, id: Option<String>) {
        self.note(|n| n.request_id = id);
    }

    /// The record of a verified slip of `amount`, to be committed with its charge so that the
    /// request waits for one commit, not two (`Store::charge_and_log`): an HTTP request's
    /// (v1, v2) only. Jobs and LINE events keep their record apart, written once per job
    /// however often it runs. `None` when the trace is not to be logged.
    pub(crate) fn draft(
        &self,
        at: OffsetDateTime,
        amount: Satang,
        mismatches: &[&str],
        check_duplicate: bool,
    ) -> Option<AttemptDraft> {
        let n = self.0.as_ref()?.lock().ok()?;
        if n.replayed || !matches!(n.channel, Channel::V1 | Channel::V2) {
            return None;
        }
        let latency_ms = u32::try_from(n.started.elapsed().as_millis()).unwrap_or(u32::MAX);
        let mut attempt = n.attempt(at, latency_ms, n.request_id.clone(), None)?;
        // Noted by `answered` only after the charge: known already, given here.
        attempt.amount = Some(amount);
        attempt.mismatches = mismatches.iter().map(|m| m.to_string()).collect();
        Some(AttemptDraft {
            attempt,
            duplicate_when_repeat: check_duplicate,
        })
    }

    /// The draft was committed with the charge.
    pub(crate) fn logged(&self) {
        self.note(|n| n.stored = true);
    }

    pub fn replayed(&self) {
        self.note(|n| n.replayed = true);
    }

    /// The QR sent was no slip because its CRC did not match its content.
    pub(crate) fn bad_crc(&self) {
        self.note(|n| n.bad_crc = true);
    }

    /// The record of this trace, ended with `outcome` (`None` for a success: verified, or
    /// duplicate when so answered); `None` when it is not to be logged (detached, not
    /// authenticated, or a replay).
    pub fn record(
        &self,
        at: OffsetDateTime,
        ended: Option<(Outcome, Option<String>)>,
        latency_ms: u32,
        request_id: Option<String>,
        job_id: Option<JobId>,
    ) -> Option<Record> {
        let n = self.0.as_ref()?.lock().ok()?;
        if n.replayed {
            return None;
        }
        let (outcome, error_code) = match ended {
            Some((Outcome::Verified, code)) => (dup_or_verified(n.duplicate), code),
            Some(e) => e,
            None => (dup_or_verified(n.duplicate), None),
        };
        let source = n.source.as_deref();
        // Answered without asking a bank: what the metrics call a local decision.
        let local = match outcome {
            Outcome::Verified | Outcome::Duplicate if source == Some("local") => {
                Some("known_duplicate")
            }
            Outcome::InvalidQr if n.bad_crc => Some("bad_crc"),
            Outcome::InvalidQr => Some("not_a_slip"),
            _ => None,
        };
        let mut attempt = n.attempt(at, latency_ms, request_id, job_id)?;
        attempt.outcome = outcome;
        attempt.error_code = error_code;
        Some(Record {
            attempt,
            local,
            stored: n.stored,
        })
    }

    /// Whether the request has come far enough to be logged.
    pub fn is_authenticated(&self) -> bool {
        self.0
            .as_ref()
            .and_then(|n| n.lock().ok().map(|n| n.caller.is_some() && !n.replayed))
            .unwrap_or(false)
    }
}

/// An attempt to write, with what the metrics count about it beyond its fields.
#[derive(Debug, Clone)]
pub struct Record {
    pub attempt: Attempt,
    /// `slipverify_local_decisions`' reason when no bank or provider was asked.
    local: Option<&'static str>,
    /// Already committed with its charge: only counted.
    stored: bool,
}

fn dup_or_verified(duplicate: bool) -> Outcome {
    if duplicate {
        Outcome::Duplicate
    } else {
        Outcome::Verified
    }
}

/// How a request ended, as its answer said: `Ok` (a verified slip) or the domain error.
pub fn ended_with(e: &Error) -> (Outcome, Option<String>) {
    (Outcome::of_error(e), Some(e.code().to_string()))
}

impl Attempts<'_> {
    /// Writes a record (group-committed) and returns once it is stored. A failure is logged
    /// for the operator and does not change the answer: the verification itself stands.
    /// Every record, and only a record, counts once in `slipverify_verifications_total`
    /// (counted before the write: the verification happened whether or not its log line is
    /// stored).
    pub async fn log_attempt(&self, r: Option<Record>) {
        let Some(Record {
            attempt: a,
            local,
            stored,
        }) = r
        else {
            return;
        };
        self.metrics.verification(
            a.kind.as_str(),
            a.input.map_or("none", |i| i.as_str()),
            a.outcome.as_str(),
            local,
        );
        if stored {
            return;
        }
        if let Err(e) = self.store.log_attempt(&a).await {
            self.metrics.attempts_log_failed();
            tracing::error!(error = %e, "attempts log write failed");
        }
    }

    /// One page of the log, newest first (`limit` clamped to 1..=1000).
    pub async fn search_attempts(&self, mut q: AttemptQuery) -> Result<Vec<AttemptRow>, Error> {
        q.limit = q.limit.clamp(1, MAX_ROWS_PER_QUERY);
        Ok(self.store.search_attempts(&q).await?)
    }

    /// Retention (`[retention]`): deletes attempts older than `attempts_days` and blanks the
    /// personal fields of transfers verified more than `personal_data_days` ago (0: never).
    /// Idempotent, so several nodes running it at once is harmless.
    pub async fn purge_retention(
        &self,
        attempts_days: u32,
        personal_data_days: u32,
    ) -> Result<(u64, u64), Error> {
        let now = self.clock.now();
        let days = |d: u32| now - time::Duration::days(i64::from(d));
        let purged = match attempts_days {
            0 => 0,
            d => self.store.purge_attempts(days(d)).await?,
        };
        let blanked = match personal_data_days {
            0 => 0,
            d => self.store.blank_personal_data(days(d), now).await?,
        };
        if purged + blanked > 0 {
            tracing::info!(purged, blanked, "retention purge");
        }
        Ok((purged, blanked))
    }

    /// Inserts records directly (bulk loads and the search benchmark).
    pub async fn insert_attempts(&self, rows: &[Attempt]) -> Result<(), Error> {
        Ok(self.store.insert_attempts(rows).await?)
    }
}
