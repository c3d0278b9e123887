//! Golden bytes of every `domain::Error` in both envelopes (v2 `ApiError`, v1 `V1Error`):
//! status, the headers the envelope sets, and the body exactly as sent. A refactor that changes
//! one byte of an error answer fails here. `GOLDEN_UPDATE=1` rewrites `golden/errors.txt`
//! (for a deliberate change, reviewed in the diff).

use crate::error::ApiError;
use crate::v1::error::V1Error;
use axum::response::{IntoResponse, Response};
use domain::Error;

/// One value of every variant. The `match` makes a new variant a compile error here until it
/// has its golden entry.
fn every_error() -> Vec<Error> {
    let all = vec![
        Error::Validation(vec![
            domain::FieldError::new("payload", "is required"),
            domain::FieldError::new("amount", "must be a number"),
        ]),
        Error::UrlProtocolNotAllowed,
        Error::UrlInvalidIpRange,
        Error::ImageUrlUnreachable("the image URL answered HTTP 404".into()),
        Error::ImageSizeTooLarge,
        Error::InvalidImageType,
        Error::InvalidImageFormat,
        Error::MissingApiKey,
        Error::InvalidApiKey,
        Error::IpNotAllowed,
        Error::BranchInactive,
        Error::QuotaExceeded,
        Error::ServiceExpired,
        Error::ServiceBanned,
        Error::ServiceDeleted,
        Error::UserBanned,
        Error::NoQrInImage,
        Error::SlipNotFound("the bank does not know this transfer".into()),
        Error::NotASlip("this is a payment QR (a request to pay), not a TrueMoney slip".into()),
        Error::SlipPending,
        Error::NotFound,
        Error::JobNotFound,
        Error::JobStillRunning,
        Error::AccountNotVerified,
        Error::SlipExpired,
        Error::InvalidBankCode,
        Error::InvalidExtraVerify("NAME is required for this bank".into()),
        Error::BankAccountNotFound,
        Error::BankAccountDuplicate,
        Error::InvalidCallbackUrl,
        Error::RenewalTemporarilyUnavailable,
        Error::ApiServerError,
        Error::RateLimited {
            limit: 10,
            retry_after_secs: 2,
            reset_at: 1_795_000_000,
        },
        Error::InvalidTimestamp,
        Error::InvalidNonce,
        Error::InvalidSignature,
        Error::PermissionDenied("quota:write"),
        Error::BranchAccessDenied,
        Error::QuotaBelowUsage("limit 5 is below this cycle's usage 7".into()),
        Error::IdempotencyKeyInUse {
            retry_after_secs: 120,
        },
        Error::IdempotencyKeyReused,
        Error::internal("database is down: secret detail"),
        Error::Unknown(vec![
            domain::FieldError::new("plan", "no plan named 'gold'"),
            domain::FieldError::new("owner", "no such user"),
        ]),
    ];
    for e in &all {
        match e {
            Error::Validation(_)
            | Error::Unknown(_)
            | Error::UrlProtocolNotAllowed
            | Error::UrlInvalidIpRange
            | Error::ImageUrlUnreachable(_)
            | Error::ImageSizeTooLarge
            | Error::InvalidImageType
            | Error::InvalidImageFormat
            | Error::MissingApiKey
            | Error::InvalidApiKey
            | Error::IpNotAllowed
            | Error::BranchInactive
            | Error::QuotaExceeded
            | Error::ServiceExpired
            | Error::ServiceBanned
            | Error::ServiceDeleted
            | Error::UserBanned
            | Error::SlipNotFound(_)
            | Error::NotASlip(_)
            | Error::NoQrInImage
            | Error::SlipPending
            | Error::NotFound
            | Error::JobNotFound
            | Error::JobStillRunning
            | Error::AccountNotVerified
            | Error::SlipExpired
            | Error::InvalidBankCode
            | Error::InvalidExtraVerify(_)
            | Error::BankAccountNotFound
            | Error::BankAccountDuplicate
            | Error::InvalidCallbackUrl
            | Error::RenewalTemporarilyUnavailable
            | Error::ApiServerError
            | Error::RateLimited { .. }
            | Error::InvalidTimestamp
            | Error::InvalidNonce
            | Error::InvalidSignature
            | Error::PermissionDenied(_)
            | Error::BranchAccessDenied
            | Error::QuotaBelowUsage(_)
            | Error::IdempotencyKeyInUse { .. }
            | Error::IdempotencyKeyReused
            | Error::Internal(_) => {}
        }
    }
    all
}

/// Status line, every header but `content-length`, a blank line, the body.
async fn render(resp: Response) -> String {
    let mut out = format!("{}\n", resp.status().as_u16());
    let mut headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .filter(|(n, _)| n.as_str() != "content-length")
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("?").to_string()))
        .collect();
    headers.sort();
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\n"));
    }
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("body");
    out.push_str(&String::from_utf8_lossy(&body));
    out.push('\n');
    out
}

#[tokio::test]
async fn every_error_in_both_envelopes_keeps_its_bytes() {
    let mut got = String::new();
    for (i, e) in every_error().into_iter().enumerate() {
        got.push_str(&format!("### {i} {}\n-- v2\n", e.code()));
        got.push_str(&render(ApiError(e.clone()).into_response()).await);
        got.push_str("-- v1\n");
        got.push_str(&render(V1Error::from(e).into_response()).await);
        got.push('\n');
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/golden/errors.txt");
    crate::golden::check(path, &got, "error bytes");
}
