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

mod examples;
mod request_rules;

use crate::routing::Routes;
use axum::http::header;
use axum::response::{Html, IntoResponse};
use examples::{ErrorExamples, SuccessExamples};
use serde_json::Value;
use std::sync::OnceLock;
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{OpenApi as Document, RefOr, Response};
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
        request_rules::field_formats(&mut doc);
        request_rules::parameter_formats(&mut doc);
        request_rules::request_rules(&mut doc);
        doc
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
pub(super) fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
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
