//! The attempts log: one record per verification request that passed authentication and the
//! rate limit, whatever its answer. Pure: what a record holds, how an answer's error becomes
//! its outcome, and what a search asks.

use crate::{BranchId, Error, JobId, Satang, ServiceId};
use time::OffsetDateTime;

/// How a verification ended, exactly one per record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Verified,
    /// Answered as a slip verified before (`isDuplicate: true`, v1's `duplicate_slip`).
    Duplicate,
    NotFound,
    Pending,
    /// An image without any QR code.
    NoQr,
    /// A QR that is not a slip of the route's kind (bad CRC, a payment QR, ...).
    InvalidQr,
    /// Refused by policy after authentication: quota, the service's or branch's state, a busy
    /// decoder or an `Idempotency-Key` in use.
    Refused,
    /// The bank, wallet or billing could not answer.
    Unavailable,
    /// Anything else: a malformed request, an unusable image or URL, an internal error.
    Error,
}

impl Outcome {
    pub const ALL: [Outcome; 9] = [
        Outcome::Verified,
        Outcome::Duplicate,
        Outcome::NotFound,
        Outcome::Pending,
        Outcome::NoQr,
        Outcome::InvalidQr,
        Outcome::Refused,
        Outcome::Unavailable,
        Outcome::Error,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Verified => "verified",
            Outcome::Duplicate => "duplicate",
            Outcome::NotFound => "not_found",
            Outcome::Pending => "pending",
            Outcome::NoQr => "no_qr",
            Outcome::InvalidQr => "invalid_qr",
            Outcome::Refused => "refused",
            Outcome::Unavailable => "unavailable",
            Outcome::Error => "error",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        Self::ALL.into_iter().find(|o| o.as_str() == s)
    }

    /// The outcome of a request answered with `e`. Exhaustive on purpose: a new error must be
    /// given its outcome here.
    pub fn of_error(e: &Error) -> Outcome {
        match e {
            Error::SlipNotFound(_) | Error::SlipExpired => Outcome::NotFound,
            Error::NotASlip(_) => Outcome::InvalidQr,
            Error::NoQrInImage => Outcome::NoQr,
            Error::SlipPending => Outcome::Pending,
            Error::ApiServerError | Error::RenewalTemporarilyUnavailable => Outcome::Unavailable,
            Error::QuotaExceeded
            | Error::BranchInactive
            | Error::ServiceExpired
            | Error::ServiceBanned
            | Error::ServiceDeleted
            | Error::UserBanned
            | Error::AccountNotVerified
            | Error::IpNotAllowed
            | Error::MissingApiKey
            | Error::InvalidApiKey
            | Error::RateLimited { .. }
            | Error::IdempotencyKeyInUse { .. }
            | Error::IdempotencyKeyReused
            | Error::PermissionDenied(_)
            | Error::BranchAccessDenied => Outcome::Refused,
            Error::Validation(_)
            | Error::Unknown(_)
            | Error::UrlProtocolNotAllowed
            | Error::UrlInvalidIpRange
            | Error::ImageUrlUnreachable(_)
            | Error::ImageSizeTooLarge
            | Error::InvalidImageType
            | Error::InvalidImageFormat
            | Error::NotFound
            | Error::JobNotFound
            | Error::JobStillRunning
            | Error::InvalidBankCode
            | Error::InvalidExtraVerify(_)
            | Error::BankAccountNotFound
            | Error::BankAccountDuplicate
            | Error::InvalidCallbackUrl
            | Error::InvalidTimestamp
            | Error::InvalidNonce
            | Error::InvalidSignature
            | Error::QuotaBelowUsage(_)
            | Error::Internal(_) => Outcome::Error,
        }
    }
}

/// Where a verification came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    V2,
    V1,
    /// An async job (`/v2/verify/bank/async`, `/batch`): refused submissions and each job's
    /// final outcome.
    Async,
    /// A slip sent in a LINE chat to the branch's Official Account.
    Line,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::V2 => "v2",
            Channel::V1 => "v1",
            Channel::Async => "async",
            Channel::Line => "line",
        }
    }

    pub fn parse(s: &str) -> Option<Channel> {
        [Channel::V2, Channel::V1, Channel::Async, Channel::Line]
            .into_iter()
            .find(|c| c.as_str() == s)
    }
}

/// What was verified: a bank slip or a TrueMoney Wallet slip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlipKind {
    Bank,
    Truewallet,
}

impl SlipKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SlipKind::Bank => "bank",
            SlipKind::Truewallet => "truewallet",
        }
    }

    pub fn parse(s: &str) -> Option<SlipKind> {
        match s {
            "bank" => Some(SlipKind::Bank),
            "truewallet" => Some(SlipKind::Truewallet),
            _ => None,
        }
    }
}

/// How the slip was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    Payload,
    Image,
    Base64,
    Url,
}

impl InputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            InputKind::Payload => "payload",
            InputKind::Image => "image",
            InputKind::Base64 => "base64",
            InputKind::Url => "url",
        }
    }

    pub fn parse(s: &str) -> Option<InputKind> {
        [
            InputKind::Payload,
            InputKind::Image,
            InputKind::Base64,
            InputKind::Url,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// One record of the log. No image bytes, no key, no secret, no personal data: the transfer's
/// names stay with the stored verification.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub at: OffsetDateTime,
    pub service_id: ServiceId,
    pub branch_id: BranchId,
    pub channel: Channel,
    pub kind: SlipKind,
    /// `None` when the request failed before its input was read.
    pub input: Option<InputKind>,
    pub sending_bank: Option<String>,
    pub trans_ref: Option<String>,
    /// The transfer's amount when a bank or the stored verification told it, else the
    /// `matchAmount` asked (so a search by amount finds refused slips too).
    pub amount: Option<Satang>,
    pub outcome: Outcome,
    /// The answer's error code (the v2 spelling; v1-only codes as v1 spells them).
    pub error_code: Option<String>,
    /// `amount_not_match`, `account_not_match`.
    pub mismatches: Vec<String>,
    /// Who answered: a connector's name, `local` (a stored verification) or `sandbox`.
    pub source: Option<String>,
    pub latency_ms: u32,
    pub request_id: Option<String>,
    pub job_id: Option<JobId>,
}

/// A verification's record written in the transaction that charges it, so the request waits
/// for one commit, not two: everything is known before the charge except whether the slip was
/// this service's first verification, which the charge decides.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptDraft {
    /// The record as a first verification (`outcome: Verified`).
    pub attempt: Attempt,
    /// The caller asked for the duplicate check: a repeat is answered `isDuplicate: true`.
    pub duplicate_when_repeat: bool,
}

impl AttemptDraft {
    /// The record once the charge has said whether the slip was verified before.
    pub fn finish(&self, first_verification: bool) -> Attempt {
        let mut a = self.attempt.clone();
        a.outcome = if self.duplicate_when_repeat && !first_verification {
            Outcome::Duplicate
        } else {
            Outcome::Verified
        };
        a
    }
}

/// A stored record: the log's own id (the search cursor's tie-break) and the record.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRow {
    pub id: i64,
    pub attempt: Attempt,
}

/// `q`: a transRef or a part of one, or an amount.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TextQuery {
    /// Matched anywhere in the reference: 3 letters or digits or more (no bank's reference is
    /// shorter, and shorter text is not worth a look-up without an index of its own).
    pub reference: Option<String>,
    /// `q` read as baht (`1250`, `1250.50`, `1,250.50`).
    pub amount: Option<Satang>,
    /// A `q` was given: when it can mean neither, nothing matches (rather than everything).
    pub given: bool,
}

impl TextQuery {
    /// What `q` can mean: a part of a reference, an amount, or both (`1250` is either).
    pub fn parse(q: &str) -> TextQuery {
        let q = q.trim();
        if q.is_empty() {
            return TextQuery::default();
        }
        let amount = Satang::parse(&q.replace(',', "")).ok();
        let looks_like_ref = q.len() >= 3 && q.chars().all(|c| c.is_ascii_alphanumeric());
        TextQuery {
            reference: looks_like_ref.then(|| q.to_string()),
            amount,
            given: true,
        }
    }
}

/// Where a search starts: the last item of the previous page, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub at_ms: i64,
    pub id: i64,
}

impl Cursor {
    /// Opaque on the wire: `<millis>.<id>`.
    pub fn encode(self) -> String {
        format!("{}.{}", self.at_ms, self.id)
    }

    pub fn decode(s: &str) -> Option<Cursor> {
        let (at, id) = s.split_once('.')?;
        Some(Cursor {
            at_ms: at.parse().ok()?,
            id: id.parse().ok()?,
        })
    }
}

/// A search of the log, newest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttemptQuery {
    pub text: TextQuery,
    pub service_id: Option<ServiceId>,
    pub branch_id: Option<BranchId>,
    pub outcome: Option<Outcome>,
    /// Inclusive.
    pub from: Option<OffsetDateTime>,
    /// Exclusive.
    pub to: Option<OffsetDateTime>,
    pub limit: u32,
    pub after: Option<Cursor>,
}

/// Most records one page of the search answers.
pub const MAX_PAGE: u32 = 500;
/// Most records one query of the store returns (an export reads page by page).
pub const MAX_ROWS_PER_QUERY: u32 = 1000;
/// Most records one CSV export holds.
pub const MAX_EXPORT: u32 = 100_000;

/// A date or a time as a search bound: an RFC 3339 time, or a bare date meaning that day in
/// Asia/Bangkok (`from` its start, `to` its end, exclusive: the next day's start).
pub fn parse_bound(s: &str, end_of_day: bool) -> Option<OffsetDateTime> {
    use time::format_description::well_known::Rfc3339;
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Some(t);
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(s, &format).ok()?;
    let date = if end_of_day { date.next_day()? } else { date };
    Some(
        date.midnight()
            .assume_offset(time::macros::offset!(+7))
            .to_offset(time::UtcOffset::UTC),
    )
}

/// A CSV cell: quoted when it must be, and a leading `= + - @` (or tab, CR) defused with `'`
/// so a spreadsheet never reads the cell as a formula.
pub fn csv_cell(s: &str) -> String {
    let defused = match s.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{s}"),
        _ => s.to_string(),
    };
    if defused.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", defused.replace('"', "\"\""))
    } else {
        defused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_outcome_round_trips() {
        for o in Outcome::ALL {
            assert_eq!(Outcome::parse(o.as_str()), Some(o));
        }
        assert_eq!(Outcome::parse("ok"), None);
    }

    #[test]
    fn slip_errors_have_their_own_outcomes() {
        assert_eq!(
            Outcome::of_error(&Error::SlipNotFound("x".into())),
            Outcome::NotFound
        );
        assert_eq!(
            Outcome::of_error(&Error::NotASlip("x".into())),
            Outcome::InvalidQr
        );
        assert_eq!(Outcome::of_error(&Error::NoQrInImage), Outcome::NoQr);
        assert_eq!(Outcome::of_error(&Error::QuotaExceeded), Outcome::Refused);
        assert_eq!(
            Outcome::of_error(&Error::ApiServerError),
            Outcome::Unavailable
        );
        assert_eq!(
            Outcome::of_error(&Error::invalid("payload", "is required")),
            Outcome::Error
        );
    }

    #[test]
    fn a_draft_is_a_duplicate_only_when_checked_and_repeated() {
        let attempt = Attempt {
            at: OffsetDateTime::UNIX_EPOCH,
            service_id: "s".into(),
            branch_id: "b".into(),
            channel: Channel::V2,
            kind: SlipKind::Bank,
            input: None,
            sending_bank: None,
            trans_ref: None,
            amount: None,
            outcome: Outcome::Verified,
            error_code: None,
            mismatches: vec![],
            source: None,
            latency_ms: 0,
            request_id: None,
            job_id: None,
        };
        for (checked, first, outcome) in [
            (true, true, Outcome::Verified),
            (true, false, Outcome::Duplicate),
            (false, false, Outcome::Verified),
            (false, true, Outcome::Verified),
        ] {
            let d = AttemptDraft {
                attempt: attempt.clone(),
                duplicate_when_repeat: checked,
            };
            assert_eq!(d.finish(first).outcome, outcome);
        }
    }

    #[test]
    fn q_is_a_reference_an_amount_or_both() {
        let t = TextQuery::parse("1250.50");
        assert_eq!(t.amount, Some(Satang(125_050)));
        assert_eq!(t.reference, None);
        let t = TextQuery::parse("1250");
        assert_eq!(t.amount, Some(Satang(125_000)));
        assert_eq!(t.reference.as_deref(), Some("1250"));
        let t = TextQuery::parse("1,250.50");
        assert_eq!(t.amount, Some(Satang(125_050)));
        let t = TextQuery::parse("016A1B2C");
        assert_eq!(t.amount, None);
        assert_eq!(t.reference.as_deref(), Some("016A1B2C"));
        assert_eq!(TextQuery::parse("  "), TextQuery::default());
        // Nothing a LIKE pattern could misread gets through as a reference.
        assert_eq!(TextQuery::parse("a%_b").reference, None);
        assert!(TextQuery::parse("a%_b").given);
        // Under three characters: an amount or nothing.
        let t = TextQuery::parse("12");
        assert_eq!((t.reference, t.amount), (None, Some(Satang(1200))));
        assert_eq!(TextQuery::parse("AB").reference, None);
    }

    #[test]
    fn a_bare_date_is_a_day_in_bangkok() {
        let from = parse_bound("2026-11-27", false).unwrap();
        let to = parse_bound("2026-11-27", true).unwrap();
        assert_eq!(from.to_string(), "2026-11-26 17:00:00.0 +00:00:00");
        assert_eq!(to - from, time::Duration::days(1));
        let t = parse_bound("2026-11-27T14:05:00+07:00", false).unwrap();
        assert_eq!(t.unix_timestamp(), from.unix_timestamp() + 14 * 3600 + 300);
        assert_eq!(parse_bound("27/11/2026", false), None);
    }

    #[test]
    fn cursor_round_trips() {
        let c = Cursor {
            at_ms: 1_790_000_000_123,
            id: 42,
        };
        assert_eq!(Cursor::decode(&c.encode()), Some(c));
        assert_eq!(Cursor::decode("x.1"), None);
        assert_eq!(Cursor::decode("12"), None);
    }

    #[test]
    fn csv_cells_are_never_formulas() {
        for (cell, written) in [
            ("=SUM(A1)", "'=SUM(A1)"),
            ("+66", "'+66"),
            ("-1", "'-1"),
            ("@x", "'@x"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("=a,b", "\"'=a,b\""),
            ("สาขา", "สาขา"),
        ] {
            assert_eq!(csv_cell(cell), written, "{cell:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn no_csv_cell_starts_a_formula(s in "\\PC*") {
            let c = csv_cell(&s);
            // What a spreadsheet reads: a quoted cell without its quotes.
            let value = match c.strip_prefix('"').and_then(|c| c.strip_suffix('"')) {
                Some(inner) => inner.replace("\"\"", "\""),
                None => c.clone(),
            };
            let first = value.chars().next();
            proptest::prop_assert!(!matches!(first, Some('=' | '+' | '-' | '@')));
        }
    }
}
