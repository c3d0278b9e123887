//! The interface as an OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]`
//! attributes, served at `GET /openapi.json`, with a self-contained page at `GET /docs`.
//!
//! This file holds only the document's frame; the operations come from the routes as they are
//! registered (`routing.rs`) and the schemas from the wire types (`wire/`). The error codes of
//! each operation are written in its attribute as `(status = N, description = "CODE, CODE",
//! body = ErrorBody)`, or by a type of `responses.rs` that several operations share;
//! [`ErrorExamples`] turns every listed code into an example built from
//! `domain::Error` itself (same message, same status — a code listed under the wrong status
//! makes the document fail to build), and adds the codes every operation of a family shares
//! (authentication, state, rate limit, internal error) so they are not repeated per handler.
//! Likewise each family's security requirement is set here ([`family_security`]).

use crate::routing::Routes;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use domain::Error;
use serde_json::{json, Value};
use std::sync::OnceLock;
use utoipa::openapi::example::ExampleBuilder;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, RefOr, Response};
use utoipa::{Modify, OpenApi};
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
        let mut doc = serde_json::to_value(doc).expect("the document serialises");
        request_rules(&mut doc);
        doc
    })
}

// ---- request rules --------------------------------------------------------------------------
// What the hand checks (`body.rs`) enforce beyond types and lengths, written into the request
// schemas so that a request valid by the document is not refused as malformed (scripts/api-fuzz
// checks exactly that). Done on the finished JSON: utoipa's attributes cannot say "exactly
// one of" or give array items a pattern.

/// The component schemas a request body uses, directly or through other components.
fn request_schemas(doc: &Value) -> std::collections::BTreeSet<String> {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                for (k, v) in o {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => {
                            out.extend(r.rsplit('/').next().map(String::from))
                        }
                        _ => refs(v, out),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut todo = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for op in paths
            .values()
            .filter_map(Value::as_object)
            .flat_map(|i| i.values())
        {
            refs(&op["requestBody"], &mut todo);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    while let Some(name) = todo.pop() {
        if seen.insert(name.clone()) {
            refs(&doc["components"]["schemas"][&name], &mut todo);
        }
    }
    seen
}

/// `["string", "null"]` → `"string"`; `oneOf: [{type: null}, X]` → `X`.
fn strip_null(p: &mut Value) {
    if let Some(Value::Array(ts)) = p.get("type") {
        let kept: Vec<Value> = ts.iter().filter(|t| *t != "null").cloned().collect();
        p["type"] = match kept.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(kept),
        };
    }
    if let Some(Value::Array(variants)) = p.get("oneOf") {
        let kept: Vec<Value> = variants
            .iter()
            .filter(|v| v.get("type").is_none_or(|t| t != "null"))
            .cloned()
            .collect();
        if let [one] = kept.as_slice() {
            let one = one.clone();
            if let Some(o) = p.as_object_mut() {
                o.remove("oneOf");
            }
            if let (Some(o), Value::Object(inner)) = (p.as_object_mut(), one) {
                o.extend(inner);
            }
        }
    }
}

/// `POST /api/v1/qr/generate`: PROMPTPAY takes exactly one of `msisdn`, `natId`, `eWalletId`;
/// the merchant types take `ref1` (and a `billerId` unless the branch has one).
fn qr_rules(schema: &mut Value) {
    let not_null =
        |f: &str| json!({ "required": [f], "properties": { f: { "not": { "type": "null" } } } });
    schema["oneOf"] = json!([
        {
            "properties": { "type": { "const": "PROMPTPAY" } },
            "oneOf": [not_null("msisdn"), not_null("natId"), not_null("eWalletId")],
        },
        {
            "properties": { "type": { "enum": ["KSHOP", "MAE_MANEE", "TUNGNGERN"] } },
            "allOf": [not_null("ref1")],
        },
    ]);
    let props = &mut schema["properties"];
    for (field, pattern) in [
        ("msisdn", "^0[0-9]{9}$"),
        ("natId", "^[0-9]{13}$"),
        ("eWalletId", "^[0-9]{15}$"),
        ("ref1", "^[A-Z0-9]{1,20}$"),
        ("ref2", "^[A-Z0-9]{1,20}$"),
        ("billerId", "^[0-9]{15}$"),
        ("merchantName", "^[!-~]([ -~]{0,23}[!-~])?$"),
    ] {
        if props.get(field).is_some() {
            props[field]["pattern"] = json!(pattern);
        }
    }
}

/// Request schemas with several inputs of which exactly one must be sent (`null` is absent).
const EXACTLY_ONE: &[(&str, &[&str])] = &[
    ("VerifyBody", &["payload", "base64", "url"]),
    ("VerifyForm", &["image", "payload", "base64", "url"]),
    ("V1VerifyRequest", &["payload", "url", "data", "image"]),
    ("V1VerifyForm", &["file", "payload", "url", "data"]),
];

/// Patterns of particular fields (schema, property, pattern).
const PATTERNS: &[(&str, &str, &str)] = &[
    ("BranchChange", "billerId", "^[0-9]{15}$"),
    (
        "BranchChange",
        "webhookUrl",
        "^https?://[a-z0-9]+(\\.[a-z0-9]+)*(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~-]*)*$",
    ),
    ("NewBankAccount", "bankNumber", "^[ -]*([0-9][ -]*){10,15}$"),
];

/// Amounts in baht: at most 2 decimals.
const AMOUNTS: &[(&str, &str)] = &[
    ("VerifyBody", "matchAmount"),
    ("V1QrRequest", "amount"),
    ("PackageChange", "price"),
    ("CreditMove", "amount"),
];

/// Base64 as `decode_base64` reads it (an optional `data:` prefix, padded standard alphabet).
const BASE64: &str =
    "^(data:image/[a-z]+;base64,)?([A-Za-z0-9+/]{4})+([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

fn request_rules(doc: &mut Value) {
    let requests = request_schemas(doc);
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (name, schema) in schemas.iter_mut() {
        // Answers are described as they are; these rules are about what a client may send.
        if !requests.contains(name) {
            continue;
        }
        let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (prop, p) in props.iter_mut() {
            let is_string = match p.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            // Strings are trimmed before their length is checked: at least one non-space.
            if is_string
                && p.get("minLength").and_then(Value::as_u64).unwrap_or(0) >= 1
                && p.get("pattern").is_none()
            {
                p["pattern"] = json!("\\S");
            }
            if let Some((_, _, pattern)) = PATTERNS.iter().find(|(s, f, _)| s == name && f == prop)
            {
                p["pattern"] = json!(pattern);
            }
            if AMOUNTS.iter().any(|(s, f)| s == name && f == prop) {
                p["multipleOf"] = json!(0.01);
            }
            if matches!(prop.as_str(), "base64" | "data" | "image")
                && is_string
                && p.get("format").is_none()
            {
                p["pattern"] = json!(BASE64);
            }
            if prop == "allowIps" {
                p["minItems"] = json!(1);
                let ips = "`*`, IPv4 or IPv6 addresses, IPv4 CIDR blocks; IPv6 CIDR blocks \
                           (`2001:db8::/32`) are accepted too.";
                p["description"] = match p["description"].as_str() {
                    Some(d) => json!(format!("{d} {ips}")),
                    None => json!(ips),
                };
                p["items"] = json!({"anyOf": [
                    {"type": "string", "const": "*"},
                    {"type": "string", "format": "ipv4"},
                    {"type": "string", "format": "ipv6"},
                    {"type": "string", "pattern": "^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])/(3[0-2]|[12]?[0-9])$"},
                ]});
            }
        }
        if name == "V1QrRequest" {
            qr_rules(schema);
        }
        // A form's fields are its documented ones: a part that is not one of them (or not
        // valid form data at all) is outside the interface, though well-formed extras are
        // ignored.
        let form = matches!(name.as_str(), "VerifyForm" | "V1VerifyForm");
        if form {
            schema["additionalProperties"] = json!(false);
            // A form field is text or absent; it cannot be null.
            if let Some(props) = schema["properties"].as_object_mut() {
                for p in props.values_mut() {
                    strip_null(p);
                    // OpenAPI 3.1 spelling of a file part (`format: binary` is 3.0's).
                    if p.get("format").is_some_and(|f| f == "binary") {
                        if let Some(o) = p.as_object_mut() {
                            o.remove("format");
                        }
                        p["contentMediaType"] = json!("application/octet-stream");
                    }
                }
                if let Some(amount) = props.get_mut("matchAmount") {
                    amount["pattern"] = json!("^[0-9]{1,12}(\\.[0-9]{1,2})?$");
                }
            }
        }
        match name.as_str() {
            "RotateKey" => schema["properties"]["graceSeconds"]["maximum"] = json!(7 * 24 * 3600),
            "PackageChange" => schema["properties"]["price"]["maximum"] = json!(100_000_000),
            "NewBankAccount" => schema["properties"]["bankNumber"]["maxLength"] = json!(32),
            "AdjustQuota" => {
                let amount = &mut schema["properties"]["amount"];
                amount["not"] = json!({ "const": 0 });
                amount["minimum"] = json!(-1_000_000_000);
                amount["maximum"] = json!(1_000_000_000);
            }
            // At least one trigger.
            "AutoRenewChange" => {
                schema["anyOf"] = json!(["enabled", "onExpiry", "onQuota"]
                    .iter()
                    .map(
                        |f| json!({ "required": [f], "properties": { *f: { "type": "boolean" } } })
                    )
                    .collect::<Vec<_>>())
            }
            // A top-up adds (amount > 0); an adjustment moves either way (amount ≠ 0).
            "CreditMove" => {
                schema["oneOf"] = json!([
                    { "properties": {
                        "kind": { "enum": [null, "topup"] },
                        "amount": { "exclusiveMinimum": 0 } } },
                    { "required": ["kind"], "properties": {
                        "kind": { "const": "adjustment" },
                        "amount": { "not": { "const": 0 } } } },
                ])
            }
            _ => {}
        }
        if name == "CreditMove" {
            schema["properties"]["amount"]["maximum"] = json!(100_000_000);
            schema["properties"]["amount"]["minimum"] = json!(-100_000_000);
        }
        if let (true, Some((_, inputs))) = (form, EXACTLY_ONE.iter().find(|(s, _)| s == name)) {
            // A form as one complete object per input (the generator of multipart bodies
            // honours variants of whole objects, not constraints beside `properties`).
            let props = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let variants: Vec<Value> = inputs
                .iter()
                .map(|input| {
                    let own: serde_json::Map<String, Value> = props
                        .iter()
                        .filter(|(k, _)| k == input || !inputs.contains(&k.as_str()))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    json!({
                        "type": "object",
                        "properties": own,
                        "required": [input],
                        "additionalProperties": false,
                    })
                })
                .collect();
            let description = schema.get("description").cloned();
            *schema = json!({ "oneOf": variants });
            if let Some(d) = description {
                schema["description"] = d;
            }
            continue;
        }
        if let Some((_, inputs)) = EXACTLY_ONE.iter().find(|(s, _)| s == name) {
            // Forms have no nulls (and a file part must not be type-checked as JSON).
            let variants: Vec<Value> = inputs
                .iter()
                .map(|f| match form {
                    true => json!({ "required": [f] }),
                    false => json!({
                        "required": [f],
                        "properties": { *f: { "not": { "type": "null" } } },
                    }),
                })
                .collect();
            schema["oneOf"] = Value::Array(variants);
        }
    }
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
        description = "Verifies Thai bank-transfer slips. `/v2` (Bearer API key) is the main interface, `/v2/b2b` the signed partner API, `/api/v1` the older interface (its own envelope), `/admin` the operator API (off unless the server has an admin token). Errors: v2 `{success:false,error:{code,message}}`, v1 `{status,message:<code>,data?}`; each response lists its codes with an example. No text anywhere may contain U+0000 (refused with `VALIDATION_ERROR`: PostgreSQL text cannot hold it); strings are trimmed before their lengths are checked.",
        license(name = "MIT OR Apache-2.0"),
    ),
    components(schemas(crate::wire::ErrorBody, crate::wire::V1ErrorBody)),
    tags(
        (name = "health", description = "Liveness"),
        (name = "v2", description = "Verification (Bearer API key of a branch)"),
        (name = "v2 async", description = "Asynchronous and batch verification with webhooks"),
        (name = "v2 bank accounts", description = "Receiving accounts of the calling key's branch"),
        (name = "partner", description = "Signed partner API: X-API-Key, X-Timestamp, X-Nonce, X-Signature = hex HMAC-SHA256(secret, METHOD\\nPATH\\nTIMESTAMP\\nNONCE\\nSHA256_HEX(body)), PATH without /v2 and without the query; X-Branch-Key in the header form (/b2b/branch/…), the branch in the path in the published form (/b2b/branches/{branchId}/…)"),
        (name = "v1", description = "The older interface: `{status: 200, data}` / `{status, message: <code>, data?}`"),
        (name = "admin", description = "Operator API; 404 unless the server has an admin token (`SLIPVERIFY_ADMIN_TOKEN` or `server.admin_token_file`)"),
        (name = "documentation", description = "This document"),
    ),
)]
struct ApiDoc;

// ---- security -----------------------------------------------------------------------------

/// The partner API's headers, all required together.
const PARTNER_SCHEMES: [&str; 5] = [
    "partnerKey",
    "branchKey",
    "partnerTimestamp",
    "partnerNonce",
    "partnerSignature",
];

/// The scheme every operation of a family needs (what its extractor checks), said once here
/// rather than in each handler's attribute.
fn family_security(path: &str) -> Option<SecurityRequirement> {
    let none: [&str; 0] = [];
    if path.starts_with("/v2/b2b/") {
        // The branch-in-path form names its branch in the path, not in `X-Branch-Key`.
        let header_form = path.starts_with("/v2/b2b/branch/");
        Some(
            PARTNER_SCHEMES
                .into_iter()
                .filter(|s| header_form || *s != "branchKey")
                .fold(SecurityRequirement::default(), |r, name| r.add(name, none)),
        )
    } else if path.starts_with("/v2/") || path.starts_with("/api/v1/") {
        Some(SecurityRequirement::new("bearerAuth", none))
    } else if path.starts_with("/admin/") {
        Some(SecurityRequirement::new("adminToken", none))
    } else if path.starts_with("/line/") {
        Some(SecurityRequirement::new("lineSignature", none))
    } else {
        None
    }
}

/// The security schemes, and each operation's requirement ([`family_security`]).
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
                "lineSignature",
                "X-Line-Signature",
                "Base64 HMAC-SHA256 of the raw body with the branch's LINE channel secret",
            ),
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
        for (path, item) in doc.paths.paths.iter_mut() {
            let Some(required) = family_security(path) else {
                continue;
            };
            for op in operations(item) {
                op.security = Some(vec![required.clone()]);
            }
        }
    }
}

/// The operations of a path.
fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.patch,
        &mut item.delete,
    ]
    .into_iter()
    .flatten()
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
                        .max_length(Some(255))
                        // Visible ASCII only (`services::idempotency::check_key`).
                        .pattern(Some("^[\\x21-\\x7E]{1,255}$")),
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

#[cfg(test)]
mod tests {
    use super::document;
    use serde_json::Value;

    fn schema(name: &str) -> &'static Value {
        &document()["components"]["schemas"][name]
    }

    #[test]
    fn request_rules_reach_the_document() {
        // Exactly one input: one variant per input, each requiring it.
        let body = schema("VerifyBody");
        let required: Vec<&str> = body["oneOf"]
            .as_array()
            .expect("VerifyBody oneOf")
            .iter()
            .map(|v| v["required"][0].as_str().unwrap())
            .collect();
        assert_eq!(required, ["payload", "base64", "url"]);
        // Forms: one whole object per input, no other fields, no nulls, files as 3.1 spells them.
        let form = schema("VerifyForm")["oneOf"]
            .as_array()
            .expect("VerifyForm oneOf");
        assert_eq!(form.len(), 4);
        for v in form {
            assert_eq!(v["additionalProperties"], false);
            assert!(
                v["properties"]["checkDuplicate"].get("oneOf").is_none(),
                "{v}"
            );
        }
        assert_eq!(
            form[0]["properties"]["image"]["contentMediaType"],
            "application/octet-stream"
        );
        assert!(form[0]["properties"].get("payload").is_none());
        // Trimmed strings need a non-space; amounts two decimals; patterns where the checks have them.
        assert_eq!(schema("NewService")["properties"]["name"]["pattern"], "\\S");
        assert_eq!(
            schema("VerifyBody")["properties"]["matchAmount"]["multipleOf"],
            0.01
        );
        assert_eq!(
            schema("BranchChange")["properties"]["billerId"]["pattern"],
            "^[0-9]{15}$"
        );
        assert_eq!(
            schema("V1QrRequest")["oneOf"].as_array().map(Vec::len),
            Some(2)
        );
        assert!(schema("AutoRenewChange")["anyOf"].is_array());
        // Answers are left as they are.
        assert!(schema("BranchView")["properties"]["allowIps"]["items"]
            .get("anyOf")
            .is_none());
        assert!(schema("V1Qr")["properties"]["image"]
            .get("pattern")
            .is_none());
    }
}
