//! The interface as an OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]`
//! attributes, served at `GET /openapi.json`, with a self-contained page at `GET /docs`.
//!
//! Handlers parse their bodies by hand (`body.rs`), so the request and response shapes below
//! are schema-only types: they describe the wire, nothing constructs them. The error codes of
//! each operation are written in its attribute as `(status = N, description = "CODE, CODE",
//! body = ErrorBody)`; [`ErrorExamples`] turns every listed code into an example built from
//! `domain::Error` itself (same message, same status — a code listed under the wrong status
//! makes the document fail to build), and adds the codes every operation of a family shares
//! (authentication, state, rate limit, internal error) so they are not repeated per handler.

#![allow(dead_code)] // schema-only types: read by the derive, never constructed

use crate::routing::Routes;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use domain::Error;
use serde_json::{json, Value};
use std::sync::OnceLock;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, RefOr, Response};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::routes;

/// `GET /openapi.json` and `GET /docs` (a page, not an operation), without authentication.
pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(routes!(openapi_json))
        .page("/docs", docs_page)
}

/// The document, built once (it is the same for every request): the frame below, the
/// operations of every registered route, then the modifiers.
pub fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.merge(crate::all_routes().into_parts().1);
        for m in [
            &SecuritySchemes as &dyn Modify,
            &IdempotencyKeys,
            &ErrorExamples,
            &SuccessExamples,
        ] {
            m.modify(&mut doc);
        }
        serde_json::to_value(doc).expect("the document serialises")
    })
}

#[utoipa::path(get, path = "/openapi.json", tag = "documentation",
    summary = "This document (OpenAPI 3.1)",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json")))]
async fn openapi_json() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document().to_string(),
    )
}

/// Self-contained HTML (no external assets): a small script fetches `/openapi.json` and
/// lists every path.
async fn docs_page() -> Html<&'static str> {
    Html(include_str!("docs.html"))
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "slipverify",
        description = "Verifies Thai bank-transfer slips. `/v2` (Bearer API key) is the main interface, `/v2/b2b` the signed partner API, `/api/v1` the older interface (its own envelope), `/admin` the operator API (off unless the server has an admin token). Errors: v2 `{success:false,error:{code,message}}`, v1 `{status,message:<code>,data?}`; each response lists its codes with an example.",
        license(name = "MIT OR Apache-2.0"),
    ),
    components(schemas(ErrorBody, V1ErrorBody)),
    tags(
        (name = "health", description = "Liveness"),
        (name = "v2", description = "Verification (Bearer API key of a branch)"),
        (name = "v2 async", description = "Asynchronous and batch verification with webhooks"),
        (name = "v2 bank accounts", description = "Receiving accounts of the calling key's branch"),
        (name = "partner", description = "Signed partner API: X-API-Key, X-Branch-Key, X-Timestamp, X-Nonce, X-Signature = hex HMAC-SHA256(secret, METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nSHA256_HEX(body)), PATH without /v2"),
        (name = "v1", description = "The older interface: `{status: 200, data}` / `{status, message: <code>, data?}`"),
        (name = "admin", description = "Operator API; 404 unless the server has an admin token (`SLIPVERIFY_ADMIN_TOKEN` or `server.admin_token_file`)"),
        (name = "documentation", description = "This document"),
    ),
)]
struct ApiDoc;

// ---- security -----------------------------------------------------------------------------

/// Names used in the handlers' `security(...)`.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, doc: &mut Document) {
        let c = doc.components.get_or_insert_with(Default::default);
        let bearer = |what: &str| {
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(what))
                    .build(),
            )
        };
        c.add_security_scheme(
            "bearerAuth",
            bearer("A branch's API key (UUID v4): `Authorization: Bearer <key>`"),
        );
        c.add_security_scheme(
            "adminToken",
            bearer(
                "The server's admin token (`SLIPVERIFY_ADMIN_TOKEN` or `server.admin_token_file`)",
            ),
        );
        for (name, header, what) in [
            ("partnerKey", "X-API-Key", "Partner key (64 hex characters)"),
            ("branchKey", "X-Branch-Key", "The branch id (UUID)"),
            (
                "partnerTimestamp",
                "X-Timestamp",
                "Unix seconds, within 300 s of the server",
            ),
            ("partnerNonce", "X-Nonce", "UUID v4, each accepted once"),
            (
                "partnerSignature",
                "X-Signature",
                "Lower-case hex HMAC-SHA256 with the partner secret of METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nSHA256_HEX(body); PATH without /v2",
            ),
        ] {
            c.add_security_scheme(
                name,
                SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                    header, what,
                ))),
            );
        }
    }
}

// ---- Idempotency-Key ------------------------------------------------------------------------

/// The routes that take `Idempotency-Key` (docs/idempotency.md).
pub(crate) const IDEMPOTENT_ROUTES: [&str; 5] = [
    "/v2/verify/bank",
    "/v2/verify/truewallet",
    "/v2/verify/bank/async",
    "/v2/verify/bank/batch",
    "/api/v1/verify",
];

/// Adds the `Idempotency-Key` header and its 409 / 422 answers to the POSTs of
/// `IDEMPOTENT_ROUTES`, in one place rather than in five attributes.
struct IdempotencyKeys;

impl Modify for IdempotencyKeys {
    fn modify(&self, doc: &mut Document) {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        use utoipa::openapi::Required;
        for path in IDEMPOTENT_ROUTES {
            let Some(op) = doc.paths.paths.get_mut(path).and_then(|i| i.post.as_mut()) else {
                panic!("openapi: {path} has no POST to take Idempotency-Key");
            };
            let param = ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(Required::False)
                .description(Some(
                    "1-255 visible ASCII characters, per branch, kept 24 h. The same key with the same request (compared on the parsed fields and image bytes) answers the stored answer (2xx and 4xx; header `Idempotent-Replayed: true`) without a new charge; while the first still runs → 409; the same key with another request → 422.",
                ))
                .schema(Some(
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .min_length(Some(1))
                        .max_length(Some(255)),
                ))
                .build();
            op.parameters.get_or_insert_with(Vec::new).push(param);
            let v1 = path.starts_with("/api/v1/");
            for (status, code) in [
                (409, "IDEMPOTENCY_KEY_IN_USE"),
                (422, "IDEMPOTENCY_KEY_REUSED"),
            ] {
                let code = if v1 {
                    code.to_ascii_lowercase()
                } else {
                    code.to_string()
                };
                let entry = op
                    .responses
                    .responses
                    .entry(status.to_string())
                    .or_insert_with(|| RefOr::T(Response::new("")));
                if let RefOr::T(r) = entry {
                    if !r.description.is_empty() {
                        r.description.push_str(", ");
                    }
                    r.description.push_str(&code);
                }
            }
        }
    }
}

// ---- error examples -----------------------------------------------------------------------

/// One sample of every domain error, by code: the source of the v2 examples (and, through
/// `v1_error`, of the v1 ones).
fn samples() -> Vec<Error> {
    vec![
        Error::Validation("payload: is required".into()),
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
        Error::SlipNotFound(crate::v1::NO_QR_IN_IMAGE.into()),
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
        Error::IdempotencyKeyInUse,
        Error::IdempotencyKeyReused,
        Error::Internal(String::new()),
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
                let (st, c, data) = crate::v1::v1_error(e);
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
struct ErrorExamples;

impl Modify for ErrorExamples {
    fn modify(&self, doc: &mut Document) {
        for (path, item) in doc.paths.paths.iter_mut() {
            let v1 = path.starts_with("/api/v1/");
            let schema = if v1 { "V1ErrorBody" } else { "ErrorBody" };
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
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

struct SuccessExamples;

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

// ---- envelopes ----------------------------------------------------------------------------

/// v2 error envelope: `{success: false, error: {code, message}}`.
#[derive(ToSchema)]
pub(crate) struct ErrorBody {
    /// Always `false`.
    success: bool,
    error: ErrorDetail,
}

#[derive(ToSchema)]
pub(crate) struct ErrorDetail {
    /// One of the codes listed for the response (e.g. `VALIDATION_ERROR`).
    code: String,
    /// Human-readable; for `VALIDATION_ERROR` `field: reason; field: reason`.
    message: String,
}

/// v1 error envelope: `{status, message: <code>, data?}`, `status` equal to the HTTP status.
#[derive(ToSchema)]
pub(crate) struct V1ErrorBody {
    status: u16,
    /// The v1 code (e.g. `unauthorized`, `invalid_request`).
    message: String,
    /// `invalid_request` and the QR codes: `{errors: [{field, message}]}`; `duplicate_slip`:
    /// the earlier slip `{transRef, date, amount, verifiedAt, sendingBank}`.
    #[schema(value_type = Option<Object>)]
    data: Option<Value>,
}

macro_rules! v2_envelope {
    ($name:ident, $data:ty, $what:literal) => {
        #[doc = concat!("`{success: true, message, data}` with ", $what, ".")]
        #[derive(ToSchema)]
        pub(crate) struct $name {
            success: bool,
            message: String,
            data: $data,
        }
    };
}

macro_rules! plain_envelope {
    ($name:ident, $data:ty, $what:literal) => {
        #[doc = concat!("`{success: true, data}` with ", $what, ".")]
        #[derive(ToSchema)]
        pub(crate) struct $name {
            success: bool,
            data: $data,
        }
    };
}

macro_rules! v1_envelope {
    ($name:ident, $data:ty, $what:literal) => {
        #[doc = concat!("`{status: 200, data}` with ", $what, ".")]
        #[derive(ToSchema)]
        pub(crate) struct $name {
            status: u16,
            data: $data,
        }
    };
}

// ---- health -------------------------------------------------------------------------------

#[derive(ToSchema)]
pub(crate) struct HealthStatus {
    /// `ok`
    status: String,
}
plain_envelope!(HealthResponse, HealthStatus, "`{status: \"ok\"}`");

// ---- /v2 ----------------------------------------------------------------------------------

#[derive(ToSchema)]
pub(crate) struct ExtraVerifyOption {
    value: String,
    label: String,
}

/// A bank of `GET /v2/banks`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Bank {
    /// Bank of Thailand code (`004`) or `PROMPTPAY`.
    code: String,
    name_en: String,
    name_th: String,
    short_code: String,
    swift_code: Option<String>,
    /// The options a bank account of this bank may carry, or null.
    extra_verify: Option<Vec<ExtraVerifyOption>>,
    extra_verify_required: bool,
}
v2_envelope!(
    BanksResponse,
    Vec<Bank>,
    "the banks, by code, `PROMPTPAY` last"
);

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Quota {
    used: i64,
    /// null: no limit.
    max: Option<i64>,
    /// null: no limit.
    remaining: Option<i64>,
    total_used: i64,
}

/// `/v2/info`'s counters: the cycle's `Quota` plus `sandboxUsed` (our addition).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfoQuota {
    used: i64,
    /// null: no limit.
    max: Option<i64>,
    /// null: no limit.
    remaining: Option<i64>,
    total_used: i64,
    /// Verifications by test branches, duplicates included, ever: never charged, so not in
    /// `used` or `totalUsed` (for the application: all its test branches).
    sandbox_used: i64,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfoApplication {
    name: String,
    quota: InfoQuota,
    /// The subscribed package, or null when the service has none.
    package: Option<InfoPackage>,
    /// End of the current period; null never expires.
    expires_at: Option<String>,
    auto_renew: InfoAutoRenew,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfoPackage {
    name: String,
    /// Verifications per billing cycle.
    quota: i64,
    duration_days: u32,
}

/// Auto-renewal: `expired` renews at expiry, `quota` when the service quota is used up;
/// `createdAt`/`expiresAt` bound the current period.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfoAutoRenew {
    expired: bool,
    quota: bool,
    created_at: Option<String>,
    expires_at: Option<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InfoBranch {
    name: String,
    is_active: bool,
    is_main: bool,
    /// A test branch: verifies on the sandbox ledger, never charged (our addition).
    sandbox: bool,
    quota: InfoQuota,
}

/// The account behind the service: no email is kept (always null); credit in baht.
#[derive(ToSchema)]
pub(crate) struct InfoAccount {
    #[schema(required = true)]
    email: Option<String>,
    credit: f64,
}

/// The product: the subscribed package's name, or null.
#[derive(ToSchema)]
pub(crate) struct InfoProduct {
    #[schema(required = true)]
    name: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct Info {
    application: InfoApplication,
    account: InfoAccount,
    product: InfoProduct,
    branch: InfoBranch,
}
v2_envelope!(
    InfoResponse,
    Info,
    "the service's and the branch's quota in the current billing cycle"
);

/// One slip: exactly one of `payload`, `base64`, `url` (an image upload uses multipart).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VerifyBody {
    /// The slip's QR text, 1–128 characters after trimming.
    payload: Option<String>,
    /// The slip image as Base64 (optional `data:image/...;base64,` prefix), at most 4 MB decoded.
    base64: Option<String>,
    /// An http(s) image URL on a public address, 1–255 characters.
    url: Option<String>,
    /// Report whether this service verified the slip before (`isDuplicate`).
    check_duplicate: Option<bool>,
    /// Expected amount in baht, ≥ 0, at most 2 decimals.
    match_amount: Option<f64>,
    /// 1–255 characters, echoed in `data.remark`.
    remark: Option<String>,
    /// Compare the receiver with the branch's bank accounts (`data.matchedAccount`).
    match_account: Option<bool>,
}

/// The same fields as the JSON body, as text fields, with the file in `image`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VerifyForm {
    /// JPEG, PNG, GIF or WebP, at most 4 MB.
    #[schema(value_type = Option<String>, format = Binary)]
    image: Option<Vec<u8>>,
    payload: Option<String>,
    base64: Option<String>,
    url: Option<String>,
    /// `true` or `false`.
    check_duplicate: Option<String>,
    /// e.g. `150.5`.
    match_amount: Option<String>,
    remark: Option<String>,
    /// `true` or `false`.
    match_account: Option<String>,
}

/// An async submission: one slip as for `POST /v2/verify/bank`, plus `callbackUrl`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AsyncRequest {
    payload: Option<String>,
    base64: Option<String>,
    url: Option<String>,
    check_duplicate: Option<bool>,
    match_amount: Option<f64>,
    remark: Option<String>,
    match_account: Option<bool>,
    /// https URL on a public address; defaults to the branch's webhook URL.
    callback_url: Option<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BatchSlip {
    payload: Option<String>,
    base64: Option<String>,
    url: Option<String>,
    check_duplicate: Option<bool>,
    match_amount: Option<f64>,
    remark: Option<String>,
}

/// 1–100 slips, one JSON body of at most 6 MB; all or nothing.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BatchRequest {
    callback_url: Option<String>,
    slips: Vec<BatchSlip>,
}

#[derive(ToSchema)]
pub(crate) struct RawBank {
    id: String,
    /// Thai name.
    name: String,
    short: String,
}

#[derive(ToSchema)]
pub(crate) struct RawName {
    th: String,
    /// Absent when the bank gives none.
    en: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct RawAccountBank {
    /// e.g. `BANKAC`.
    #[serde(rename = "type")]
    kind: String,
    /// Masked, e.g. `xxx-x-x1234-x`.
    account: String,
}

#[derive(ToSchema)]
pub(crate) struct RawAccount {
    name: RawName,
    bank: RawAccountBank,
}

#[derive(ToSchema)]
pub(crate) struct RawParty {
    bank: RawBank,
    account: RawAccount,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawReceiver {
    bank: RawBank,
    account: RawAccount,
    /// v2: always present (null when none, spec 2.1); v1: left out when none.
    merchant_id: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct LocalAmount {
    amount: f64,
    /// `THB`.
    currency: String,
}

#[derive(ToSchema)]
pub(crate) struct RawAmount {
    amount: f64,
    local: LocalAmount,
}

/// The slip as the bank reports it (spec 2.1).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawSlip {
    payload: String,
    trans_ref: String,
    /// ISO 8601 with milliseconds, `+07:00`.
    date: String,
    country_code: String,
    amount: RawAmount,
    fee: f64,
    ref1: String,
    ref2: String,
    ref3: String,
    sender: RawParty,
    receiver: RawReceiver,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MatchedBank {
    name_th: String,
    name_en: String,
    code: String,
    short_code: String,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MatchedAccount {
    id: String,
    bank: MatchedBank,
    name_th: String,
    name_en: String,
    /// `PERSONAL` or `JURISTIC`.
    #[serde(rename = "type")]
    kind: String,
    bank_number: String,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VerifyData {
    remark: String,
    is_duplicate: bool,
    amount_in_slip: f64,
    /// Present only when `matchAmount` was sent: whether it equals the slip's amount.
    #[schema(required = false)]
    is_amount_matched: Option<bool>,
    /// Present when `matchAmount` was sent.
    amount_in_order: Option<f64>,
    /// Always present: with `matchAccount: true` the matched account, otherwise null.
    #[schema(required = true)]
    matched_account: Option<MatchedAccount>,
    /// Requested checks that failed: `amount_not_match`, `account_not_match`.
    mismatches: Vec<String>,
    raw_slip: RawSlip,
}
v2_envelope!(VerifyResponse, VerifyData, "the verified slip");

#[derive(ToSchema)]
pub(crate) struct WalletParty {
    name: String,
    phone: String,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RawWalletSlip {
    payload: String,
    transaction_id: String,
    /// e.g. `P2P`.
    event: String,
    date: String,
    amount: f64,
    currency: String,
    sender: WalletParty,
    receiver: WalletParty,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WalletData {
    remark: String,
    is_duplicate: bool,
    amount_in_slip: f64,
    /// Present only when `matchAmount` was sent.
    #[schema(required = false)]
    is_amount_matched: Option<bool>,
    amount_in_order: Option<f64>,
    mismatches: Vec<String>,
    raw_slip: RawWalletSlip,
}
v2_envelope!(WalletResponse, WalletData, "the verified TrueMoney slip");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JobAccepted {
    job_id: String,
    /// null for a single submission.
    batch_id: Option<String>,
    /// `queued`.
    status: String,
}
v2_envelope!(JobAcceptedResponse, JobAccepted, "the job id (HTTP 202)");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BatchAccepted {
    batch_id: String,
    /// In request order.
    job_ids: Vec<String>,
    count: u32,
}
v2_envelope!(
    BatchAcceptedResponse,
    BatchAccepted,
    "the job ids (HTTP 202)"
);

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Delivery {
    /// `pending`, `delivered` or `failed`.
    state: String,
    attempts: u32,
    last_status: Option<u16>,
    last_error: Option<String>,
    first_attempt_at: Option<String>,
    last_attempt_at: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct JobError {
    code: String,
    message: String,
    /// `failed` when every callback was refused (then `delivery` is set).
    webhook: Option<String>,
    delivery: Option<Delivery>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Job {
    job_id: String,
    batch_id: Option<String>,
    /// `queued`, `processing`, `retrying`, `done`, `not_found`, `failed`.
    status: String,
    /// `done`: the verification data; `not_found`: `{payload, reason, attempts}`.
    #[schema(value_type = Option<Object>)]
    data: Option<Value>,
    error: Option<JobError>,
    attempts: u32,
    callback_url: Option<String>,
    webhook: Option<Delivery>,
    next_attempt_at: Option<String>,
    created_at: String,
    updated_at: String,
    finished_at: Option<String>,
    expires_at: String,
}
v2_envelope!(JobResponse, Job, "the job");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewBankAccount {
    /// A code of `GET /v2/banks`.
    bank_code: String,
    bank_number: String,
    name_th: String,
    name_en: String,
    /// `PERSONAL` or `JURISTIC`.
    #[serde(rename = "type")]
    kind: String,
    /// One of the bank's `extraVerify` options (required for some banks).
    extra_verify: Option<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BankAccountUpdate {
    /// Required: a string, or null to clear it.
    extra_verify: Option<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AccountBank {
    code: String,
    name_th: Option<String>,
    name_en: Option<String>,
    short_code: Option<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BankAccount {
    id: String,
    bank_code: String,
    bank_number: String,
    name_th: String,
    name_en: String,
    #[serde(rename = "type")]
    kind: String,
    extra_verify: Option<String>,
    bank: AccountBank,
    created_at: String,
}
v2_envelope!(BankAccountResponse, BankAccount, "the account");
v2_envelope!(
    BankAccountsResponse,
    Vec<BankAccount>,
    "the branch's accounts"
);

#[derive(ToSchema)]
pub(crate) struct Deleted {
    id: String,
}
v2_envelope!(DeletedResponse, Deleted, "the deleted id");

// ---- partner ------------------------------------------------------------------------------

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartnerBranch {
    id: String,
    name: String,
    /// null: no branch limit.
    limit_quota: Option<i64>,
    used_quota: i64,
    total_used_quota: i64,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartnerService {
    limit_quota: Option<i64>,
    used_quota: i64,
    total_used_quota: i64,
}

#[derive(ToSchema)]
pub(crate) struct PartnerQuota {
    branch: PartnerBranch,
    service: PartnerService,
}
plain_envelope!(
    PartnerQuotaResponse,
    PartnerQuota,
    "the branch's and the service's counters"
);
plain_envelope!(
    PartnerBranchResponse,
    PartnerBranch,
    "the branch's counters"
);

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetQuota {
    /// Required: a whole number ≥ the used quota, or null for no branch limit.
    limit_quota: Option<i64>,
}

#[derive(ToSchema)]
pub(crate) struct AdjustQuota {
    /// A non-zero whole number added to the branch limit.
    amount: i64,
}

// ---- v1 -----------------------------------------------------------------------------------

/// Exactly one of `payload`, `url`, `data` (Base64) or `image` (Base64, older clients).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct V1VerifyRequest {
    payload: Option<String>,
    url: Option<String>,
    data: Option<String>,
    image: Option<String>,
    /// A boolean, or the text `true`/`false`.
    check_duplicate: Option<bool>,
}

/// The file in `file`, or one of `payload`, `url`, `data` as text; `checkDuplicate` as text.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct V1VerifyForm {
    #[schema(value_type = Option<String>, format = Binary)]
    file: Option<Vec<u8>>,
    payload: Option<String>,
    url: Option<String>,
    data: Option<String>,
    check_duplicate: Option<String>,
}
v1_envelope!(V1VerifyResponse, RawSlip, "the slip (v2's `rawSlip`)");
v1_envelope!(
    V1WalletResponse,
    RawWalletSlip,
    "the TrueMoney slip (v2's `rawSlip`)"
);

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct V1Me {
    /// The service's name.
    application: String,
    used_quota: i64,
    max_quota: Option<i64>,
    remaining_quota: Option<i64>,
    /// ISO 8601 `+07:00`, or null.
    expired_at: Option<String>,
    /// The service's prepaid credit in baht.
    current_credit: f64,
}
v1_envelope!(V1MeResponse, V1Me, "the service's quota");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct V1QrRequest {
    /// `PROMPTPAY`, `KSHOP`, `MAE_MANEE` or `TUNGNGERN`.
    #[serde(rename = "type")]
    kind: String,
    /// PROMPTPAY: exactly one of `msisdn`, `natId`, `eWalletId`.
    msisdn: Option<String>,
    nat_id: Option<String>,
    e_wallet_id: Option<String>,
    /// Merchant types: 1–20 upper-case letters or digits.
    ref1: Option<String>,
    ref2: Option<String>,
    /// Merchant types: 15 digits (until branches carry one).
    biller_id: Option<String>,
    /// > 0, ≤ 9,999,999.99, at most 2 decimals (number or text).
    amount: Option<f64>,
    /// 1–25 printable ASCII characters.
    merchant_name: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct V1Qr {
    /// Base64 PNG (no `data:` prefix).
    image: String,
    /// `image/png`.
    mime: String,
    /// The EMVCo text.
    payload: String,
}
v1_envelope!(V1QrResponse, V1Qr, "the QR");

// ---- admin --------------------------------------------------------------------------------

#[derive(ToSchema)]
pub(crate) struct NewService {
    name: String,
    /// Quota per billing cycle; absent: unlimited.
    quota: Option<i64>,
}

/// Every field optional; null clears `quota`, `expiresAt`, `ownerId`, `rateLimit`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServiceChange {
    name: Option<String>,
    quota: Option<i64>,
    /// RFC 3339.
    expires_at: Option<String>,
    /// `active`, `banned` or `deleted`.
    state: Option<String>,
    owner_id: Option<String>,
    plan: Option<String>,
    rate_limit: Option<u32>,
    /// false: every verification is refused with `ACCOUNT_NOT_VERIFIED`.
    owner_verified: Option<bool>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServiceView {
    id: String,
    name: String,
    state: String,
    limit_quota: Option<i64>,
    expires_at: Option<String>,
    owner_id: Option<String>,
    billing_anchor: String,
    plan: String,
    rate_limit: u32,
    owner_verified: bool,
    /// The subscribed package's id, or null.
    package: Option<String>,
    /// Start of the current period (subscription or last renewal), or null.
    subscribed_at: Option<String>,
    auto_renew: AutoRenewView,
    /// Prepaid credit in baht.
    credit: f64,
}
plain_envelope!(ServiceResponse, ServiceView, "the service");

/// When the package renews by itself (drawing its price from the credit).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AutoRenewView {
    /// At the expiry.
    on_expiry: bool,
    /// When the service's quota of the cycle is used up.
    on_quota: bool,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewBranchRequest {
    service_id: String,
    name: String,
    main: Option<bool>,
    allow_ips: Option<Vec<String>>,
    limit_quota: Option<i64>,
    /// A test branch: sandbox ledger, never charged, duplicates apart (default false).
    sandbox: Option<bool>,
}

/// Every field optional; null clears `webhookUrl`, `webhookSecret`, `billerId`, `limitQuota`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BranchChange {
    name: Option<String>,
    active: Option<bool>,
    allow_ips: Option<Vec<String>>,
    webhook_url: Option<String>,
    webhook_secret: Option<String>,
    /// The merchant biller id for v1 merchant QRs (15 digits).
    biller_id: Option<String>,
    limit_quota: Option<i64>,
    /// Make it a test branch (`true`) or a production one (`false`).
    sandbox: Option<bool>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BranchView {
    id: String,
    service_id: String,
    name: String,
    is_main: bool,
    active: bool,
    allow_ips: Vec<String>,
    webhook_url: Option<String>,
    has_webhook_secret: bool,
    biller_id: Option<String>,
    limit_quota: Option<i64>,
    /// A test branch: sandbox ledger, never charged, duplicates apart.
    sandbox: bool,
    /// Only when the branch is created (shown once).
    api_key: Option<String>,
}
plain_envelope!(BranchResponse, BranchView, "the branch");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RotateKey {
    /// The old key keeps working this long (at most 7 days); absent: it stops at once.
    grace_seconds: Option<i64>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RotatedKey {
    id: String,
    api_key: String,
}
plain_envelope!(RotatedKeyResponse, RotatedKey, "the new key (shown once)");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AuditEntry {
    at: String,
    /// `partner:<id>`.
    actor: String,
    /// `quota.set`, `quota.adjust`, `quota.reset`.
    action: String,
    service_id: Option<String>,
    branch_id: Option<String>,
    /// `{before, after}`.
    #[schema(value_type = Object)]
    detail: Value,
}
plain_envelope!(AuditResponse, Vec<AuditEntry>, "the branch's audit entries");

#[derive(ToSchema)]
pub(crate) struct NewUser {
    name: String,
}

#[derive(ToSchema)]
pub(crate) struct UserChange {
    banned: bool,
}

#[derive(ToSchema)]
pub(crate) struct UserView {
    id: String,
    name: String,
    banned: bool,
}
plain_envelope!(UserResponse, UserView, "the user");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NewPartner {
    name: String,
    service_ids: Vec<String>,
    /// `quota:read`, `quota:write`.
    permissions: Vec<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartnerView {
    id: String,
    name: String,
    /// Shown once.
    api_key: String,
    /// Shown once.
    secret: String,
    permissions: Vec<String>,
    services: Vec<String>,
}
plain_envelope!(
    PartnerResponse,
    PartnerView,
    "the partner and its credentials"
);

#[derive(ToSchema)]
pub(crate) struct PlanChange {
    rps: u32,
    /// Defaults to half the rate.
    burst: Option<u32>,
}

#[derive(ToSchema)]
pub(crate) struct PlanView {
    name: String,
    rps: u32,
    burst: u32,
}
plain_envelope!(PlanResponse, PlanView, "the plan");
plain_envelope!(PlansResponse, Vec<PlanView>, "every plan");

/// One connector as this node sees it (counts since it started).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConnectorView {
    name: String,
    /// `sandbox`, `easyslip`, ...
    kind: String,
    /// `closed` (in use), `open` (skipped after consecutive failures), `half-open` (one probe).
    state: String,
    /// Cause and detail of the last failure; never a secret or a URL.
    last_error: Option<String>,
    calls: u64,
    failures: u64,
    median_latency_ms: Option<u64>,
}
plain_envelope!(ConnectorsResponse, Vec<ConnectorView>, "every connector");

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PackageChange {
    /// Verifications per billing cycle (at least 0).
    quota: i64,
    /// 1 to 3650.
    duration_days: u32,
    /// Baht, at most 2 decimals (e.g. 990.00).
    price: f64,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PackageView {
    id: String,
    name: String,
    quota: i64,
    duration_days: u32,
    /// Baht.
    price: f64,
}
plain_envelope!(PackageResponse, PackageView, "the package");
plain_envelope!(PackagesResponse, Vec<PackageView>, "every package");

/// `true` / `false` sets both triggers; an object sets each (absent: false).
#[derive(ToSchema)]
#[serde(untagged)]
pub(crate) enum AutoRenewSetting {
    Both(bool),
    Each(AutoRenewView),
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SubscribeRequest {
    /// Package id or name.
    package: String,
    /// Absent: the current setting stays.
    auto_renew: Option<AutoRenewSetting>,
    /// Draw the price from the service's credit (refused when short). Default false.
    pay_from_credit: Option<bool>,
}

/// At least one field; a trigger not given keeps its current value.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AutoRenewChange {
    /// Both triggers at once.
    enabled: Option<bool>,
    on_expiry: Option<bool>,
    on_quota: Option<bool>,
}

#[derive(ToSchema)]
pub(crate) struct CreditMove {
    /// Baht, at most 2 decimals; positive for `topup`, either sign for `adjustment`.
    amount: f64,
    /// `topup` (default) or `adjustment`.
    kind: Option<String>,
    /// Up to 255 characters.
    note: Option<String>,
}

#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LedgerEntryView {
    id: String,
    at: String,
    /// `topup`, `renewal` or `adjustment`.
    kind: String,
    /// Baht; negative draws.
    amount: f64,
    /// Baht.
    balance_after: f64,
    /// `cli`, `admin-api`, `renewal`...
    actor: String,
    note: Option<String>,
}
plain_envelope!(LedgerEntryResponse, LedgerEntryView, "the credit movement");

#[derive(ToSchema)]
pub(crate) struct CreditHistory {
    /// Baht.
    balance: f64,
    /// Oldest first.
    entries: Vec<LedgerEntryView>,
}
plain_envelope!(
    CreditHistoryResponse,
    CreditHistory,
    "the balance and every movement"
);
plain_envelope!(
    ServiceAuditResponse,
    Vec<AuditEntry>,
    "the service's audit entries (`subscription.start`, `subscription.renew`, `subscription.auto_renew`...)"
);
