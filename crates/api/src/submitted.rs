//! A slip request as a handler receives it, whichever route, body form and envelope it came
//! through: the wire types of `wire/` decode into it, the handlers of `/v2`, the jobs and
//! `/api/v1` take it from there.

use crate::idempotency::Fingerprint;
use domain::Satang;
use services::input::SlipInput;
use services::verify::VerifyRequest;

/// A verification request before the slip's payload is known.
pub(crate) struct Submitted {
    pub input: SlipInput,
    pub options: SlipOptions,
    /// The image came as Base64 text (the attempts log tells it from an upload).
    pub base64: bool,
}

/// What a slip request asks besides the slip.
#[derive(Default)]
pub(crate) struct SlipOptions {
    pub check_duplicate: bool,
    pub match_account: bool,
    pub match_amount: Option<Satang>,
    pub remark: Option<String>,
    /// Async submissions only (ignored by the synchronous endpoint).
    pub callback_url: Option<String>,
}

impl SlipOptions {
    /// `slip` with these options: the parsed slip of a synchronous verification, or the input
    /// of a job submission.
    pub(crate) fn verify<S>(self, slip: S) -> VerifyRequest<S> {
        VerifyRequest {
            slip,
            check_duplicate: self.check_duplicate,
            match_amount: self.match_amount,
            remark: self.remark,
            match_account: self.match_account,
            job_id: None,
            idempotency: None,
        }
    }
}

impl Submitted {
    /// The slip and its options, but the callback, as the idempotency key compares them.
    pub(crate) fn add_to(&self, f: &mut Fingerprint) {
        let o = &self.options;
        f.input(&self.input)
            .flag("checkDuplicate", o.check_duplicate)
            .flag("matchAccount", o.match_account)
            .amount("matchAmount", o.match_amount)
            .opt("remark", o.remark.as_deref());
    }
}
