//! The v1 envelope (spec 7.1, 7.3): `{status, message: <code>, data?}` with the same HTTP
//! status. Every `domain::Error` becomes a v1 code in one function, [`v1_error`]; the few codes
//! that only v1 has (`invalid_check_duplicate`, `invalid_payload`, `duplicate_slip`, the
//! QR-generation codes) are built by the v1 handlers with [`V1Error::code`].

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use domain::attempt::Outcome;
use domain::{Error, FieldError};
use serde_json::{json, Map, Value};

/// An answer in the v1 error envelope (boxed: it travels in every `Result` of the handlers).
#[derive(Debug)]
pub(crate) struct V1Error(Box<Inner>);

#[derive(Debug)]
struct Inner {
    status: u16,
    code: &'static str,
    data: Option<Value>,
    /// 429 only: the rate headers (limit, retry-after seconds, reset Unix seconds).
    rate: Option<(u32, u64, i64)>,
    /// 500 `server_error` only: what the operator's log gets.
    internal: Option<domain::Internal>,
    /// 409 `idempotency_key_in_use` only: `Retry-After` seconds.
    retry_after: Option<u64>,
    /// How the request ended, for the attempts log.
    outcome: Outcome,
}

impl V1Error {
    /// A v1-only code.
    pub(crate) fn code(status: u16, code: &'static str, data: Option<Value>) -> Self {
        V1Error(Box::new(Inner {
            status,
            code,
            data,
            rate: None,
            internal: None,
            retry_after: None,
            outcome: Outcome::Error,
        }))
    }

    /// The same answer, logged with `outcome` (v1-only codes default to `error`).
    pub(crate) fn with_outcome(mut self, outcome: Outcome) -> Self {
        self.0.outcome = outcome;
        self
    }
}

/// `{errors: [{field, message}]}`.
pub(crate) fn errors_data(errors: &[FieldError]) -> Value {
    let list: Vec<Value> = errors
        .iter()
        .map(|e| json!({ "field": e.field, "message": e.reason }))
        .collect();
    json!({ "errors": list })
}

/// The one mapping of domain errors to v1: HTTP status, v1 code and `data`. Exhaustive on
/// purpose: a new domain error must be given its v1 spelling here.
pub(crate) fn v1_error(e: &Error) -> (u16, &'static str, Option<Value>) {
    match e {
        Error::Validation(fields) => (400, "invalid_request", Some(errors_data(fields))),
        // The URL cannot be used: bad scheme, internal address, unreachable, or what it
        // serves is not an image.
        Error::UrlProtocolNotAllowed
        | Error::UrlInvalidIpRange
        | Error::ImageUrlUnreachable(_)
        | Error::InvalidImageType
        | Error::InvalidCallbackUrl => (400, "invalid_url", None),
        Error::ImageSizeTooLarge => (400, "image_size_too_large", None),
        Error::InvalidImageFormat => (400, "invalid_image", None),
        // Bank-account management is v2 only; spelled here so the match stays exhaustive.
        Error::InvalidBankCode => (
            400,
            "invalid_request",
            Some(errors_data(&[FieldError::new("bankCode", e.to_string())])),
        ),
        Error::InvalidExtraVerify(m) => (
            400,
            "invalid_request",
            Some(errors_data(&[FieldError::new("extraVerify", m.clone())])),
        ),
        Error::BankAccountDuplicate => (
            400,
            "invalid_request",
            Some(errors_data(&[FieldError::new("bankNumber", e.to_string())])),
        ),
        Error::BankAccountNotFound => (404, "not_found", None),
        Error::QuotaBelowUsage(m) => (
            400,
            "invalid_request",
            Some(errors_data(&[FieldError::new("amount", m.clone())])),
        ),
        Error::MissingApiKey
        | Error::InvalidApiKey
        | Error::InvalidTimestamp
        | Error::InvalidNonce
        | Error::InvalidSignature => (401, "unauthorized", None),
        Error::IpNotAllowed => (403, "access_denied", None),
        Error::BranchInactive
        | Error::ServiceBanned
        | Error::ServiceDeleted
        | Error::UserBanned => (403, "application_deactivated", None),
        Error::ServiceExpired => (403, "application_expired", None),
        Error::AccountNotVerified => (403, "account_not_verified", None),
        // spec 7.3 gives no status ("n/a"): 404, like the other "no such slip" answers.
        Error::SlipExpired => (404, "slip_expired", None),
        Error::QuotaExceeded => (403, "quota_exceeded", None),
        Error::PermissionDenied(_) | Error::BranchAccessDenied => (403, "forbidden", None),
        // An image without any QR has its own v1 code; every other "no slip" is `slip_not_found`.
        Error::NoQrInImage => (404, "qrcode_not_found", None),
        Error::SlipNotFound(_) | Error::NotASlip(_) => (404, "slip_not_found", None),
        Error::SlipPending => (404, "slip_pending", None),
        Error::NotFound | Error::JobNotFound | Error::Unknown(_) => (404, "not_found", None),
        Error::RateLimited { .. } => (429, "rate_limit_exceeded", None),
        Error::ApiServerError => (500, "api_server_error", None),
        // v1 has no renewal code: "backend issue, retry later", with v2's 503.
        Error::RenewalTemporarilyUnavailable => (503, "api_server_error", None),
        // v1 spells codes in lower case; the statuses are v2's.
        Error::IdempotencyKeyInUse { .. } => (409, "idempotency_key_in_use", None),
        Error::IdempotencyKeyReused => (422, "idempotency_key_reused", None),
        Error::JobStillRunning => (409, "job_still_running", None),
        Error::Internal(_) => (500, "server_error", None),
    }
}

impl From<Error> for V1Error {
    fn from(e: Error) -> Self {
        let (status, code, data) = v1_error(&e);
        let rate = match e {
            Error::RateLimited {
                limit,
                retry_after_secs,
                reset_at,
            } => Some((limit, retry_after_secs, reset_at)),
            _ => None,
        };
        let retry_after = match e {
            Error::IdempotencyKeyInUse { retry_after_secs } => Some(retry_after_secs),
            _ => None,
        };
        let internal = match &e {
            Error::Internal(detail) => Some(detail.clone()),
            _ => None,
        };
        V1Error(Box::new(Inner {
            status,
            code,
            data,
            rate,
            internal,
            retry_after,
            outcome: Outcome::of_error(&e),
        }))
    }
}

/// Shared helpers (`v2::caller`) answer in the domain's terms; v1 re-spells them.
impl From<crate::error::ApiError> for V1Error {
    fn from(e: crate::error::ApiError) -> Self {
        e.0.into()
    }
}

impl IntoResponse for V1Error {
    fn into_response(self) -> Response {
        let e = *self.0;
        if let Some(i) = &e.internal {
            // Logged for the operator; the client only sees `server_error`.
            tracing::error!(detail = %i.detail, at = %i.at, "internal error");
        }
        let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut body = Map::new();
        body.insert("status".into(), json!(e.status));
        body.insert("message".into(), json!(e.code));
        if let Some(data) = e.data {
            body.insert("data".into(), data);
        }
        let mut resp = (status, axum::Json(Value::Object(body))).into_response();
        resp.extensions_mut()
            .insert(crate::attempts::Ended(e.outcome, e.code));
        if let Some((limit, retry_after, reset_at)) = e.rate {
            // The same four headers as v2 (spec 7.1).
            crate::error::rate_limit_headers(&mut resp, limit, retry_after, reset_at);
        }
        if let Some(secs) = e.retry_after {
            crate::error::retry_after(&mut resp, secs);
        }
        resp
    }
}

/// Unknown paths and wrong methods under `/api/v1`.
pub(crate) async fn not_found() -> V1Error {
    Error::NotFound.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_fields_become_a_list() {
        let e = Error::Validation(vec![
            FieldError::new("payload", "is required"),
            FieldError::new("url", "must be a string"),
        ]);
        assert_eq!(
            v1_error(&e),
            (
                400,
                "invalid_request",
                Some(json!({ "errors": [
                    { "field": "payload", "message": "is required" },
                    { "field": "url", "message": "must be a string" },
                ] }))
            )
        );
    }

    #[test]
    fn no_qr_is_its_own_code() {
        assert_eq!(
            v1_error(&Error::NoQrInImage),
            (404, "qrcode_not_found", None)
        );
        // The same text as a plain "not found" reason is not the v1 code.
        assert_eq!(
            v1_error(&Error::SlipNotFound(Error::NoQrInImage.to_string())).1,
            "slip_not_found"
        );
    }
}
