//! The HTTP interface. Handlers are thin: authenticate, parse the body into a request value,
//! call a domain service, wrap the answer. Every failure leaves through `error::ApiError`.

mod accounts;
mod admin;
mod attempts;
mod authed;
mod b2b;
mod body;
mod cors;
mod error;
mod form;
mod form_guard;
#[doc(hidden)]
pub mod golden;
#[cfg(test)]
mod golden_errors;
mod idempotency;
mod jobs;
mod line;
mod observe;
mod openapi;
mod path;
mod request;
mod responses;
mod routing;
mod slow;
mod submitted;
mod v1;
mod v2;
mod verifications;
pub mod views;
mod wallet;
pub mod wire;

use axum::http::Request;
use axum::Router;
use services::Services;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

pub use cors::BadOrigin;
pub use error::ApiError;
pub use openapi::document;
pub use routing::Registered;
pub use verifications::{csv as verifications_csv, page as verifications_page};

/// The largest request body read (JSON with a Base64 image of 4 MB fits with room to spare).
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// [`router`] with browser access for `cors_origins` (`[server] cors_origins`; empty: exactly
/// [`router`]). Fails on an origin that is not a header value.
pub fn router_with_cors(services: Services, cors_origins: &[String]) -> Result<Router, BadOrigin> {
    cors::with_cors(router(services), cors_origins)
}

/// The whole service as one router. Serve it with
/// `into_make_service_with_connect_info::<SocketAddr>()`: the IP allow-list needs the peer.
pub fn router(services: Services) -> Router {
    let trace = TraceLayer::new_for_http()
        // Path only: queries may carry slip payloads, which are not logged.
        .make_span_with(|req: &Request<_>| {
            let id = req
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %id)
        });
    let (routes, _, _) = all_routes().into_parts();
    routes
        .fallback(error::not_found)
        .method_not_allowed_fallback(error::not_found)
        .with_state(services.clone())
        // For the attempts log's layer, which runs around handlers and has no state.
        .layer(axum::Extension(services.clone()))
        .layer(CatchPanicLayer::custom(error::panic_response))
        // Outside the panic catcher, so a panic's 500 is counted too; inside the router, so
        // the matched route pattern is known.
        .layer(axum::middleware::from_fn_with_state(
            services.metrics().clone(),
            observe::http,
        ))
        .layer(trace)
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
        // Outermost: a client's id reaches logs and answers only if it is plainly safe.
        .layer(axum::middleware::map_request(safe_request_id))
}

/// Every route, each registered with its documentation (see `routing.rs`).
fn all_routes() -> routing::Routes {
    use utoipa_axum::routes;
    routing::Routes::new()
        .api(routes!(health))
        .merge(openapi::routes())
        .nest(
            "/v2",
            v2::routes()
                .merge(jobs::routes())
                .merge(accounts::routes())
                .merge(wallet::routes())
                .merge(b2b::routes()),
        )
        .nest("/api/v1", v1::routes())
        .nest("/line", line::routes())
        .nest("/admin", admin::routes().merge(verifications::routes()))
}

/// Every route the server answers, documented or not (the test that compares them with the
/// document asks here rather than reading the source).
pub fn routes_registered() -> Vec<Registered> {
    all_routes().into_parts().2
}

/// Longest client `X-Request-Id` kept.
const MAX_REQUEST_ID: usize = 128;

/// Drops a client's `X-Request-Id` unless it is one line of at most 128 of `[A-Za-z0-9._:-]`,
/// so nobody can forge log fields through it; the request then gets a fresh id.
async fn safe_request_id(mut req: axum::extract::Request) -> axum::extract::Request {
    let ids = req.headers().get_all("x-request-id");
    let mut it = ids.iter();
    let safe = match (it.next(), it.next()) {
        (Some(v), None) => {
            let b = v.as_bytes();
            !b.is_empty()
                && b.len() <= MAX_REQUEST_ID
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || b"._:-".contains(c))
        }
        _ => true,
    };
    if !safe || ids.iter().count() > 1 {
        req.headers_mut().remove("x-request-id");
    }
    req
}

/// Liveness: answers without touching the database or needing a key.
#[utoipa::path(get, path = "/health", tag = "health",
    summary = "Liveness (no key, no database access)",
    responses((status = 200, description = "The process is up", body = wire::Plain<wire::Health>,
        example = json!({"success": true, "data": {"status": "ok"}}))))]
async fn health() -> axum::Json<wire::Plain<wire::Health>> {
    wire::Plain::json(wire::Health { status: "ok" })
}
