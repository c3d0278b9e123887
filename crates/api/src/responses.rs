//! The error answers that several operations document alike, as `utoipa::IntoResponses` types:
//! a handler's `responses(...)` names its success tuple, its own error tuples, and one of these.
//! Only the codes are written here, by status (`"CODE, CODE"`, as in a tuple's description):
//! `openapi.rs`'s `ErrorExamples` gives every error response its body schema and one example
//! per code, and adds the codes a whole family shares.
//!
//! One type per status set: `responses(...)` takes each status once (a later type's status
//! replaces an earlier one's).

use std::collections::BTreeMap;
use utoipa::openapi::{RefOr, Response};

type Responses = BTreeMap<String, RefOr<Response>>;

/// Error responses with only their codes.
fn codes(by_status: &[(u16, &str)]) -> Responses {
    by_status
        .iter()
        .map(|(status, codes)| (status.to_string(), RefOr::T(Response::new(*codes))))
        .collect()
}

/// `name => responses;`: a unit type whose `IntoResponses` is the expression.
macro_rules! error_responses {
    ($($(#[$doc:meta])* $name:ident => $responses:expr;)+) => {$(
        $(#[$doc])*
        pub(crate) struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> Responses {
                $responses
            }
        }
    )+};
}

/// v2: what can be wrong with a slip sent as an image, Base64 or URL (besides the fields).
const IMAGE_INPUTS: &str = "URL_PROTOCOL_NOT_ALLOWED, URL_INVALID_IP_RANGE, \
     IMAGE_URL_UNREACHABLE, IMAGE_SIZE_TOO_LARGE, INVALID_IMAGE_TYPE, INVALID_IMAGE_FORMAT";

/// A synchronous v2 verification: the inputs, the charge, the bank; `not_found` its 404 codes.
fn v2_verify(not_found: &str) -> Responses {
    codes(&[
        (400, &format!("VALIDATION_ERROR, {IMAGE_INPUTS}")),
        (403, "QUOTA_EXCEEDED, SERVICE_EXPIRED"),
        (404, not_found),
        (500, "API_SERVER_ERROR"),
        (503, "RENEWAL_TEMPORARILY_UNAVAILABLE"),
    ])
}

/// v1: a slip sent as its QR text.
const V1_PAYLOAD: &str =
    "invalid_request, invalid_check_duplicate, invalid_payload, duplicate_slip";
/// v1: a slip sent as a URL, Base64 or a file, besides `V1_PAYLOAD`.
const V1_IMAGE: &str = "invalid_url, invalid_image, image_size_too_large";

/// A v1 verification: `bad_request` and `not_found` its 400 and 404 codes.
fn v1_verify(bad_request: &str, not_found: &str) -> Responses {
    codes(&[
        (400, bad_request),
        (403, "quota_exceeded"),
        (404, not_found),
        (500, "api_server_error"),
        (503, "api_server_error"),
    ])
}

error_responses! {
    /// `POST /v2/verify/bank`.
    VerifyBankErrors => v2_verify("SLIP_NOT_FOUND, SLIP_PENDING");
    /// `POST /v2/verify/truewallet`.
    VerifyWalletErrors => v2_verify("SLIP_NOT_FOUND");
    /// `POST /v2/verify/bank/async`: the slip is read at submission, the callback checked.
    SubmitErrors => codes(&[
        (400, &format!("VALIDATION_ERROR, INVALID_CALLBACK_URL, {IMAGE_INPUTS}")),
        (404, "SLIP_NOT_FOUND"),
    ]);
    /// `GET /api/v1/verify` (a payload only).
    V1VerifyErrors => v1_verify(V1_PAYLOAD, "slip_not_found, slip_pending, slip_expired");
    /// `POST /api/v1/verify`.
    V1UploadErrors => v1_verify(
        &format!("{V1_PAYLOAD}, {V1_IMAGE}"),
        "slip_not_found, slip_pending, slip_expired, qrcode_not_found",
    );
    /// `POST /api/v1/verify/truewallet`.
    V1WalletErrors => v1_verify(
        &format!("{V1_PAYLOAD}, {V1_IMAGE}"),
        "slip_not_found, qrcode_not_found",
    );
    /// `/v2/bank-accounts/{id}` and the partner API's: no account of the branch with this id.
    AccountNotFound => codes(&[(404, "BANK_ACCOUNT_NOT_FOUND")]);
    /// A new receiving account (v2 and the partner API's two forms).
    NewAccountErrors => codes(&[
        (400, "VALIDATION_ERROR, INVALID_BANK_CODE, INVALID_EXTRA_VERIFY"),
        (409, "BANK_ACCOUNT_DUPLICATE"),
    ]);
    /// A refused body and nothing else to document (partner API operations).
    ValidationError => codes(&[(400, "VALIDATION_ERROR")]);
    /// An admin operation: a refused body, an unknown id (`NOT_FOUND` is also every admin
    /// operation's answer while the admin API is off).
    AdminErrors => codes(&[(400, "VALIDATION_ERROR"), (404, "NOT_FOUND")]);
    /// `POST /admin/jobs/{id}/redeliver`: an unknown or expired job (`NOT_FOUND`: the admin API
    /// is off), a job still running, a body with fields.
    RedeliverErrors => codes(&[
        (400, "VALIDATION_ERROR"),
        (404, "JOB_NOT_FOUND, NOT_FOUND"),
        (409, "JOB_STILL_RUNNING"),
    ]);
}
