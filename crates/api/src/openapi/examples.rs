//! The examples of the document: every error code a response lists becomes a named example
//! built from `domain::Error` itself (same message, same status — a code listed under the wrong
//! status makes the document fail to build), with the codes every operation of a family shares
//! added; and the success examples too long for an attribute.

use super::operations;
use domain::Error;
use serde_json::{json, Value};
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::{ContentBuilder, OpenApi as Document, RefOr, Response};
use utoipa::Modify;

// ---- error examples -----------------------------------------------------------------------

/// One sample of every domain error, by code: the source of the v2 examples (and, through
/// `v1_error`, of the v1 ones).
fn samples() -> Vec<Error> {
    vec![
        Error::invalid("payload", "is required"),
        Error::UrlProtocolNotAllowed,
        Error::UrlInvalidIpRange,
        Error::ImageUrlUnreachable("the image URL could not be fetched".into()),
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
        Error::AccountNotVerified,
        Error::SlipExpired,
        Error::SlipNotFound("the bank has no transfer with this reference".into()),
        // v1 `qrcode_not_found`.
        Error::NoQrInImage,
        Error::SlipPending,
        Error::NotFound,
        Error::JobNotFound,
        Error::InvalidBankCode,
        Error::InvalidExtraVerify("extraVerify: must be one of NAME, NUMBER, NAME_NUMBER".into()),
        Error::BankAccountNotFound,
        Error::BankAccountDuplicate,
        Error::InvalidCallbackUrl,
        Error::ApiServerError,
        Error::RenewalTemporarilyUnavailable,
        Error::RateLimited {
            limit: 10,
            retry_after_secs: 1,
            reset_at: 1_767_225_600,
        },
        Error::InvalidTimestamp,
        Error::InvalidNonce,
        Error::InvalidSignature,
        Error::PermissionDenied("quota:write"),
        Error::BranchAccessDenied,
        Error::QuotaBelowUsage(
            "the new limit 5 would be below the used quota 7 of this cycle".into(),
        ),
        Error::IdempotencyKeyInUse {
            retry_after_secs: 120,
        },
        Error::IdempotencyKeyReused,
        Error::JobStillRunning,
        Error::internal(""),
    ]
}

fn v2_example(code: &str, status: u16) -> Value {
    let e = samples()
        .into_iter()
        .find(|e| e.code() == code)
        .unwrap_or_else(|| panic!("openapi: unknown v2 error code {code}"));
    assert_eq!(
        e.http_status(),
        status,
        "openapi: {code} is documented under {status} but answers {}",
        e.http_status()
    );
    json!({ "success": false, "error": { "code": code, "message": e.public_message() } })
}

/// v1 codes the v1 handlers make themselves (not through `v1_error`): status and `data`.
fn v1_only(code: &str) -> Option<(u16, Option<Value>)> {
    let errors = |field: &str, message: &str| {
        Some(json!({ "errors": [{ "field": field, "message": message }] }))
    };
    Some(match code {
        "invalid_check_duplicate" | "invalid_payload" | "invalid_url" => (400, None),
        "duplicate_slip" => (
            400,
            Some(json!({
                "transRef": "015073100416AQR06491",
                "date": "2026-03-14T10:04:16.000+07:00",
                "amount": 150.5,
                "verifiedAt": "2026-03-14T10:05:02.000+07:00",
                "sendingBank": "004",
            })),
        ),
        "invalid_type" => (
            400,
            errors(
                "type",
                "must be one of PROMPTPAY, KSHOP, MAE_MANEE, TUNGNGERN",
            ),
        ),
        "invalid_msisdn" => (400, errors("msisdn", "must be 10 digits starting with 0")),
        "invalid_natId" => (
            400,
            errors("natId", "must be 13 digits with a valid check digit"),
        ),
        "invalid_ref1" => (
            400,
            errors("ref1", "must be 1 to 20 upper-case letters or digits"),
        ),
        _ => return None,
    })
}

fn v1_example(code: &str, status: u16) -> Value {
    let (st, data) = v1_only(code)
        .or_else(|| {
            // Several domain errors share a v1 code (api_server_error is 500 or 503): the
            // one documented under this status.
            samples().iter().find_map(|e| {
                let (st, c, data) = crate::v1::error::v1_error(e);
                (c == code && st == status).then_some((st, data))
            })
        })
        .unwrap_or_else(|| panic!("openapi: unknown v1 error code {code}"));
    assert_eq!(
        st, status,
        "openapi: v1 {code} is documented under {status} but answers {st}"
    );
    let mut v = json!({ "status": status, "message": code });
    if let Some(d) = data {
        v["data"] = d;
    }
    v
}

/// The codes every operation of a family can answer besides its own.
fn shared_codes(path: &str) -> &'static [(u16, &'static str)] {
    const BEARER: &[(u16, &str)] = &[
        (401, "MISSING_API_KEY"),
        (401, "INVALID_API_KEY"),
        (403, "IP_NOT_ALLOWED"),
        (403, "BRANCH_INACTIVE"),
        (403, "SERVICE_EXPIRED"),
        (403, "SERVICE_BANNED"),
        (403, "SERVICE_DELETED"),
        (403, "USER_BANNED"),
        (403, "ACCOUNT_NOT_VERIFIED"),
        (429, "RATE_LIMIT_EXCEEDED"),
        (500, "INTERNAL_SERVER_ERROR"),
    ];
    const PARTNER: &[(u16, &str)] = &[
        (400, "VALIDATION_ERROR"),
        (401, "MISSING_API_KEY"),
        (401, "INVALID_API_KEY"),
        (401, "INVALID_TIMESTAMP"),
        (401, "INVALID_NONCE"),
        (401, "INVALID_SIGNATURE"),
        (403, "PERMISSION_DENIED"),
        (403, "BRANCH_ACCESS_DENIED"),
        (500, "INTERNAL_SERVER_ERROR"),
    ];
    const ADMIN: &[(u16, &str)] = &[
        (401, "MISSING_API_KEY"),
        (401, "INVALID_API_KEY"),
        (404, "NOT_FOUND"),
        (500, "INTERNAL_SERVER_ERROR"),
    ];
    const V1: &[(u16, &str)] = &[
        (401, "unauthorized"),
        (403, "access_denied"),
        (403, "application_deactivated"),
        (403, "application_expired"),
        (403, "account_not_verified"),
        (429, "rate_limit_exceeded"),
        (500, "server_error"),
    ];
    if path.starts_with("/v2/b2b/") {
        PARTNER
    } else if path.starts_with("/v2/") {
        BEARER
    } else if path.starts_with("/api/v1/") {
        V1
    } else if path.starts_with("/admin/") {
        ADMIN
    } else {
        &[]
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Rejected request",
        401 => "Not authenticated",
        403 => "Not allowed",
        404 => "Not found",
        409 => "Conflict",
        422 => "Unprocessable request",
        429 => "Too many requests (`Retry-After`, `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset`)",
        _ => "Server or bank error",
    }
}

/// Adds the shared codes, then makes every error response's codes into named examples.
pub(super) struct ErrorExamples;

impl Modify for ErrorExamples {
    fn modify(&self, doc: &mut Document) {
        for (path, item) in doc.paths.paths.iter_mut() {
            let v1 = path.starts_with("/api/v1/");
            let schema = if v1 { "V1ErrorBody" } else { "ErrorBody" };
            for op in operations(item) {
                let responses = &mut op.responses.responses;
                for (status, code) in shared_codes(path) {
                    let entry = responses
                        .entry(status.to_string())
                        .or_insert_with(|| RefOr::T(Response::new("")));
                    if let RefOr::T(r) = entry {
                        if !r.description.split(", ").any(|c| c == *code) {
                            if !r.description.is_empty() {
                                r.description.push_str(", ");
                            }
                            r.description.push_str(code);
                        }
                    }
                }
                for (status, entry) in responses.iter_mut() {
                    let Ok(status) = status.parse::<u16>() else {
                        continue;
                    };
                    let RefOr::T(r) = entry else { continue };
                    if status < 400 {
                        continue;
                    }
                    let codes: Vec<String> = r
                        .description
                        .split(", ")
                        .map(str::trim)
                        .filter(|c| !c.is_empty())
                        .map(String::from)
                        .collect();
                    let mut content = ContentBuilder::new()
                        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                            schema,
                        ))))
                        .build();
                    for code in &codes {
                        let value = if v1 {
                            v1_example(code, status)
                        } else {
                            v2_example(code, status)
                        };
                        content.examples.insert(
                            code.clone(),
                            RefOr::T(ExampleBuilder::new().value(Some(value)).build()),
                        );
                    }
                    r.content.clear();
                    r.content.insert("application/json".into(), content);
                    r.description = format!(
                        "{}: {}",
                        reason(status),
                        codes
                            .iter()
                            .map(|c| format!("`{c}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                }
            }
        }
    }
}

// ---- success examples too long for an attribute --------------------------------------------

/// v1 leaves `receiver.merchantId` out when there is none.
fn v1_slip_example() -> Value {
    let mut slip = raw_slip_example();
    if let Some(r) = slip["receiver"].as_object_mut() {
        r.remove("merchantId");
    }
    slip
}

fn raw_slip_example() -> Value {
    let party = |id: &str, short: &str, name: &str, (th, en): (&str, &str), acct: &str| {
        json!({
            "bank": { "id": id, "name": name, "short": short },
            "account": { "name": { "th": th, "en": en }, "bank": { "type": "BANKAC", "account": acct } },
        })
    };
    let mut receiver = party(
        "014",
        "SCB",
        "ธนาคารไทยพาณิชย์",
        ("บริษัท ตัวอย่าง จำกัด", "EXAMPLE CO LTD"),
        "xxx-x-x5678-x",
    );
    receiver["merchantId"] = Value::Null;
    json!({
        "payload": "0041000600000101030040220015073100416AQR064915102TH91049C3B",
        "transRef": "015073100416AQR06491",
        "date": "2026-03-14T10:04:16.000+07:00",
        "countryCode": "TH",
        "amount": { "amount": 150.5, "local": { "amount": 150.5, "currency": "THB" } },
        "fee": 0.0,
        "ref1": "",
        "ref2": "",
        "ref3": "",
        "sender": party(
            "004",
            "KBANK",
            "ธนาคารกสิกรไทย",
            ("นาย สมชาย ใจดี", "SOMCHAI JAIDEE"),
            "xxx-x-x1234-x",
        ),
        "receiver": receiver,
    })
}

/// `(path, method, status, value)` for the success examples kept here.
fn success_examples() -> Vec<(&'static str, &'static str, &'static str, Value)> {
    vec![
        (
            "/v2/verify/bank",
            "post",
            "200",
            json!({
                "success": true,
                "message": "Slip verified",
                "data": {
                    "remark": "",
                    "isDuplicate": false,
                    "amountInSlip": 150.5,
                    "matchedAccount": null,
                    "mismatches": [],
                    "rawSlip": raw_slip_example(),
                },
            }),
        ),
        (
            "/api/v1/verify",
            "get",
            "200",
            json!({ "status": 200, "data": v1_slip_example() }),
        ),
        (
            "/api/v1/qr/generate",
            "post",
            "200",
            json!({ "status": 200, "data": {
                "image": "iVBORw0KGgoAAAANSUhEUgAA...",
                "mime": "image/png",
                "payload": "00020101021129370016A000000677010111011300668123456785802TH530376463044F8B",
            }}),
        ),
    ]
}

pub(super) struct SuccessExamples;

impl Modify for SuccessExamples {
    fn modify(&self, doc: &mut Document) {
        for (path, method, status, value) in success_examples() {
            let item = doc
                .paths
                .paths
                .get_mut(path)
                .unwrap_or_else(|| panic!("openapi: no path {path}"));
            let op = match method {
                "get" => item.get.as_mut(),
                _ => item.post.as_mut(),
            }
            .unwrap_or_else(|| panic!("openapi: no {method} {path}"));
            if let Some(RefOr::T(r)) = op.responses.responses.get_mut(status) {
                for c in r.content.values_mut() {
                    c.example = Some(value.clone());
                }
            }
        }
    }
}
