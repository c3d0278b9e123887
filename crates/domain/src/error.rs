//! One error enum for the whole service. Every code of the spec (§5.1, §7.2) is a variant that
//! knows its HTTP status and its wire spelling; the HTTP layer builds envelopes from it in one
//! place and never shows internal detail.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Every field that failed, in order; the message is `field: reason; field: reason`
    /// (spec 7.1), v1 lists them as `{field, message}`.
    #[error("{}", join_fields(.0))]
    Validation(Vec<FieldError>),
    /// A well-formed request naming something that does not exist (an id in the path, a
    /// service, user, plan or package named in the body): `NOT_FOUND` (404), worded like a
    /// validation failure (`service: no such service`).
    #[error("{}", join_fields(.0))]
    Unknown(Vec<FieldError>),
    #[error("the image URL must use http or https")]
    UrlProtocolNotAllowed,
    #[error("the image URL points to a private or internal address")]
    UrlInvalidIpRange,
    #[error("{0}")]
    ImageUrlUnreachable(String),
    #[error("the image is too large (at most 4 MB and 40 megapixels)")]
    ImageSizeTooLarge,
    #[error("the URL's content is not a JPEG, PNG, GIF or WebP image")]
    InvalidImageType,
    #[error("the file is not a valid JPEG, PNG, GIF or WebP image")]
    InvalidImageFormat,
    #[error("Authorization header with a Bearer API key is required")]
    MissingApiKey,
    #[error("API key is invalid or has been revoked")]
    InvalidApiKey,
    #[error("your IP address is not in this branch's allow-list")]
    IpNotAllowed,
    #[error("this branch is inactive")]
    BranchInactive,
    #[error("quota for this period has been reached")]
    QuotaExceeded,
    #[error("the subscription of this service has expired")]
    ServiceExpired,
    #[error("this service has been banned")]
    ServiceBanned,
    #[error("this service has been deleted")]
    ServiceDeleted,
    #[error("the owner of this service has been banned")]
    UserBanned,
    /// The message says why (not a slip, a payment QR, unknown to the bank...).
    #[error("{0}")]
    SlipNotFound(String),
    /// A QR that is not a slip of the route's kind (bad CRC, a payment QR, another kind of
    /// slip): spelled `SLIP_NOT_FOUND` like an unknown slip; the attempts log tells them apart.
    #[error("{0}")]
    NotASlip(String),
    /// An image held no QR code at all: v2 `SLIP_NOT_FOUND`, but v1 has its own code for it.
    #[error("no QR code was found in the image")]
    NoQrInImage,
    #[error("the bank has not confirmed this transfer yet (Bangkok Bank slips are pending for 5 minutes); retry later")]
    SlipPending,
    #[error("no such endpoint")]
    NotFound,
    #[error("job not found")]
    JobNotFound,
    /// The job is still verifying or delivering its callback: nothing to send again yet.
    #[error("the job is still running (verifying or delivering its callback); it can be redelivered once it has finished")]
    JobStillRunning,
    #[error("the verification of this service's owner is incomplete")]
    AccountNotVerified,
    /// The bank no longer keeps the transfer (v1 `slip_expired`; v2 spells it SLIP_NOT_FOUND).
    #[error("the bank no longer keeps this slip: it is older than the bank's retention")]
    SlipExpired,
    #[error("bankCode is not one of the banks of GET /banks")]
    InvalidBankCode,
    /// Why the option is refused (not one of the bank's, or required and missing).
    #[error("{0}")]
    InvalidExtraVerify(String),
    #[error("bank account not found")]
    BankAccountNotFound,
    #[error(
        "an active bank account with this bankCode and bankNumber already exists in this service"
    )]
    BankAccountDuplicate,
    /// Async submission: the callback URL is not HTTPS or resolves to a non-public address.
    #[error("callbackUrl must be an https URL whose host resolves only to public addresses")]
    InvalidCallbackUrl,
    /// Renewing the package needs the billing system, which cannot answer right now.
    #[error("the subscription could not be renewed right now because billing is unavailable; retry later")]
    RenewalTemporarilyUnavailable,
    #[error("the bank's service is unavailable; retry later")]
    ApiServerError,
    /// More requests per second than the plan allows (spec 7.1: 429 with rate headers).
    #[error("too many requests; retry after {retry_after_secs} s")]
    RateLimited {
        limit: u32,
        retry_after_secs: u64,
        /// Unix seconds when the full allowance is back.
        reset_at: i64,
    },
    /// Partner API: `X-Timestamp` missing, not Unix seconds, or more than 300 s away.
    #[error("X-Timestamp must be Unix seconds within 300 seconds of the server's time")]
    InvalidTimestamp,
    /// Partner API: `X-Nonce` missing, not a UUID, or already used.
    #[error("X-Nonce must be a UUID not used before")]
    InvalidNonce,
    /// Partner API: `X-Signature` missing or not the HMAC of this request.
    #[error("X-Signature does not match the request")]
    InvalidSignature,
    /// Partner API: the partner lacks the permission the operation needs.
    #[error("the partner lacks the permission {0}")]
    PermissionDenied(&'static str),
    /// Partner API: the branch is unknown or not in a service the partner manages.
    #[error("the partner may not manage this branch")]
    BranchAccessDenied,
    /// Partner API: an adjustment would put the limit below this cycle's usage.
    #[error("{0}")]
    QuotaBelowUsage(String),
    /// `Idempotency-Key`: the request that holds this key is still running; retry later.
    #[error("a request with this Idempotency-Key is still in progress; retry later")]
    IdempotencyKeyInUse {
        /// When the holder's lease ends (`Retry-After`).
        retry_after_secs: u64,
    },
    /// `Idempotency-Key`: this key was used for a different request (fields or image).
    #[error("this Idempotency-Key was used for a different request")]
    IdempotencyKeyReused,
    /// What went wrong and where, for the operator's log only; the client sees a generic
    /// message. Built with [`Error::internal`], which records the caller's location.
    #[error("internal server error")]
    Internal(Internal),
}

/// The detail of an internal error: the text and the source location it arose at (the
/// caller of [`Error::internal`], or the `?` that converted a store error), so the log line
/// names the place without a backtrace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Internal {
    pub detail: String,
    pub at: &'static std::panic::Location<'static>,
}

impl fmt::Display for Internal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at {})", self.detail, self.at)
    }
}

impl Error {
    pub fn code(&self) -> &'static str {
        match self {
            Error::Validation(_) => "VALIDATION_ERROR",
            Error::UrlProtocolNotAllowed => "URL_PROTOCOL_NOT_ALLOWED",
            Error::UrlInvalidIpRange => "URL_INVALID_IP_RANGE",
            Error::ImageUrlUnreachable(_) => "IMAGE_URL_UNREACHABLE",
            Error::ImageSizeTooLarge => "IMAGE_SIZE_TOO_LARGE",
            Error::InvalidImageType => "INVALID_IMAGE_TYPE",
            Error::InvalidImageFormat => "INVALID_IMAGE_FORMAT",
            Error::MissingApiKey => "MISSING_API_KEY",
            Error::InvalidApiKey => "INVALID_API_KEY",
            Error::IpNotAllowed => "IP_NOT_ALLOWED",
            Error::BranchInactive => "BRANCH_INACTIVE",
            Error::QuotaExceeded => "QUOTA_EXCEEDED",
            Error::ServiceExpired => "SERVICE_EXPIRED",
            Error::ServiceBanned => "SERVICE_BANNED",
            Error::ServiceDeleted => "SERVICE_DELETED",
            Error::UserBanned => "USER_BANNED",
            Error::SlipNotFound(_) | Error::NotASlip(_) | Error::NoQrInImage => "SLIP_NOT_FOUND",
            Error::SlipPending => "SLIP_PENDING",
            Error::NotFound | Error::Unknown(_) => "NOT_FOUND",
            Error::JobNotFound => "JOB_NOT_FOUND",
            Error::JobStillRunning => "JOB_STILL_RUNNING",
            Error::InvalidCallbackUrl => "INVALID_CALLBACK_URL",
            Error::InvalidBankCode => "INVALID_BANK_CODE",
            Error::AccountNotVerified => "ACCOUNT_NOT_VERIFIED",
            Error::SlipExpired => "SLIP_NOT_FOUND",
            Error::InvalidExtraVerify(_) => "INVALID_EXTRA_VERIFY",
            Error::BankAccountNotFound => "BANK_ACCOUNT_NOT_FOUND",
            Error::BankAccountDuplicate => "BANK_ACCOUNT_DUPLICATE",
            Error::ApiServerError => "API_SERVER_ERROR",
            Error::RenewalTemporarilyUnavailable => "RENEWAL_TEMPORARILY_UNAVAILABLE",
            Error::RateLimited { .. } => "RATE_LIMIT_EXCEEDED",
            Error::InvalidTimestamp => "INVALID_TIMESTAMP",
            Error::InvalidNonce => "INVALID_NONCE",
            Error::InvalidSignature => "INVALID_SIGNATURE",
            Error::PermissionDenied(_) => "PERMISSION_DENIED",
            Error::BranchAccessDenied => "BRANCH_ACCESS_DENIED",
            Error::QuotaBelowUsage(_) => "QUOTA_BELOW_USAGE",
            Error::IdempotencyKeyInUse { .. } => "IDEMPOTENCY_KEY_IN_USE",
            Error::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            Error::Internal(_) => "INTERNAL_SERVER_ERROR",
        }
    }

    pub fn http_status(&self) -> u16 {
        match self {
            Error::Validation(_)
            | Error::QuotaBelowUsage(_)
            | Error::UrlProtocolNotAllowed
            | Error::UrlInvalidIpRange
            | Error::ImageUrlUnreachable(_)
            | Error::ImageSizeTooLarge
            | Error::InvalidImageType
            | Error::InvalidImageFormat
            | Error::InvalidCallbackUrl
            | Error::InvalidBankCode
            | Error::InvalidExtraVerify(_) => 400,
            Error::BankAccountDuplicate
            | Error::IdempotencyKeyInUse { .. }
            | Error::JobStillRunning => 409,
            Error::IdempotencyKeyReused => 422,
            Error::MissingApiKey
            | Error::InvalidApiKey
            | Error::InvalidTimestamp
            | Error::InvalidNonce
            | Error::InvalidSignature => 401,
            Error::PermissionDenied(_) | Error::BranchAccessDenied => 403,
            Error::IpNotAllowed
            | Error::BranchInactive
            | Error::QuotaExceeded
            | Error::ServiceExpired
            | Error::ServiceBanned
            | Error::ServiceDeleted
            | Error::UserBanned
            | Error::AccountNotVerified => 403,
            Error::SlipNotFound(_)
            | Error::NotASlip(_)
            | Error::NoQrInImage
            | Error::SlipPending
            | Error::NotFound
            | Error::Unknown(_)
            | Error::JobNotFound
            | Error::BankAccountNotFound
            | Error::SlipExpired => 404,
            Error::RateLimited { .. } => 429,
            Error::ApiServerError | Error::Internal(_) => 500,
            // Not the client's fault and not ours to retry blindly: "come back later"
            // (docs/decisions.md).
            Error::RenewalTemporarilyUnavailable => 503,
        }
    }

    /// The text a client may see. Never contains internal detail.
    pub fn public_message(&self) -> String {
        self.to_string()
    }

    /// An internal error that remembers where it was made: called through a closure
    /// (`.map_err(|e| Error::internal(e))`), not as a path (`.map_err(Error::internal)`), which
    /// would record the inside of `map_err` instead.
    #[track_caller]
    pub fn internal(detail: impl fmt::Display) -> Self {
        Error::Internal(Internal {
            detail: detail.to_string(),
            at: std::panic::Location::caller(),
        })
    }

    /// A `NOT_FOUND` naming what the request referred to.
    pub fn unknown(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Unknown(vec![FieldError::new(field, reason)])
    }

    /// A `VALIDATION_ERROR` naming one field.
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Validation(vec![FieldError::new(field, reason)])
    }
}

/// One field that failed validation and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// `field: reason; field: reason`.
fn join_fields(fields: &[FieldError]) -> String {
    fields
        .iter()
        .map(FieldError::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Collects `field: reason` failures so one response names all of them (spec 7.1).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Validation {
    failures: Vec<FieldError>,
}

impl Validation {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn fail(&mut self, field: impl Into<String>, reason: impl Into<String>) {
        self.failures.push(FieldError::new(field, reason));
    }

    pub fn is_empty(&self) -> bool {
        self.failures.is_empty()
    }

    pub fn into_result(self) -> Result<(), Error> {
        if self.failures.is_empty() {
            Ok(())
        } else {
            Err(self.into_error())
        }
    }

    pub fn into_error(self) -> Error {
        Error::Validation(self.failures)
    }

    /// Like `into_result`, for failures that name what does not exist (`NOT_FOUND`).
    pub fn into_unknown(self) -> Result<(), Error> {
        if self.failures.is_empty() {
            Ok(())
        } else {
            Err(Error::Unknown(self.failures))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_message_joins_fields() {
        let mut v = Validation::new();
        v.fail("payload", "is required");
        v.fail("checkDuplicate", "must be a boolean");
        let e = v.into_error();
        assert_eq!(
            e.public_message(),
            "payload: is required; checkDuplicate: must be a boolean"
        );
        assert_eq!(
            e,
            Error::Validation(vec![
                FieldError::new("payload", "is required"),
                FieldError::new("checkDuplicate", "must be a boolean"),
            ])
        );
        assert_eq!(
            Error::invalid("url", "is not a valid URL").public_message(),
            "url: is not a valid URL"
        );
    }

    #[test]
    fn internal_detail_is_not_public() {
        let e = Error::internal("connection refused at 10.0.0.3:5432");
        assert_eq!(e.public_message(), "internal server error");
        assert_eq!(e.code(), "INTERNAL_SERVER_ERROR");
        assert_eq!(e.http_status(), 500);
    }

    #[test]
    fn internal_errors_know_where_they_arose() {
        let line = line!() + 1;
        let e = Error::internal("disk full");
        let Error::Internal(i) = &e else {
            panic!("{e:?}")
        };
        assert_eq!((i.at.file(), i.at.line()), (file!(), line));
        assert_eq!(
            i.to_string(),
            format!("disk full (at {}:{line}:17)", file!())
        );
        // The client's text does not change.
        assert_eq!(e.to_string(), "internal server error");
    }
}
