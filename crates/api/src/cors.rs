//! Browser access (`[server] cors_origins`). Off unless origins are listed: keys belong on
//! servers (spec 5.1), so by default no `Access-Control-*` header is ever sent and a browser
//! page cannot read an answer. When listed, only the client APIs (`/v2` without the partner
//! API, and `/api/v1`) get the layer; `/admin` and `/v2/b2b` never do.

use axum::extract::Request;
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::Router;
use std::time::Duration;
use tower::ServiceExt;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Whether a path belongs to the APIs a browser may call.
fn browser_path(path: &str) -> bool {
    (path.starts_with("/v2/") && !path.starts_with("/v2/b2b")) || path.starts_with("/api/v1/")
}

/// A listed origin that cannot be a header value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server.cors_origins: {origin:?}: {reason}")]
pub struct BadOrigin {
    pub origin: String,
    pub reason: String,
}

/// The layer for exact origins. tower-http answers any preflight with the allowed methods
/// and headers, but `Access-Control-Allow-Origin` only ever names a listed origin (never `*`),
/// so another origin's page cannot read an answer.
fn layer(origins: &[String]) -> Result<CorsLayer, BadOrigin> {
    let list = origins
        .iter()
        .map(|o| {
            HeaderValue::from_str(o).map_err(|e| BadOrigin {
                origin: o.clone(),
                reason: e.to_string(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CorsLayer::new()
        .allow_origin(AllowOrigin::list(list))
        .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE])
        // What clients send: the key, JSON or multipart, and retries' idempotency keys.
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("idempotency-key"),
        ])
        // What a page needs to read back: when to retry, and the id to quote in a report.
        .expose_headers([
            header::RETRY_AFTER,
            HeaderName::from_static("x-request-id"),
            HeaderName::from_static("x-ratelimit-limit"),
            HeaderName::from_static("x-ratelimit-remaining"),
            HeaderName::from_static("x-ratelimit-reset"),
        ])
        .max_age(Duration::from_secs(600)))
}

/// `router` as it is when `origins` is empty (not even wrapped); otherwise the browser paths
/// go through a copy of it behind the CORS layer and every other path through it unchanged.
pub(crate) fn with_cors(router: Router, origins: &[String]) -> Result<Router, BadOrigin> {
    if origins.is_empty() {
        return Ok(router);
    }
    let browsers = router.clone().layer(layer(origins)?);
    Ok(router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let browsers = browsers.clone();
            async move {
                if browser_path(req.uri().path()) {
                    // `Router`'s error type is `Infallible`.
                    browsers.oneshot(req).await.unwrap_or_else(|e| match e {})
                } else {
                    next.run(req).await
                }
            }
        },
    )))
}

#[cfg(test)]
mod tests {
    use super::browser_path;

    #[test]
    fn never_admin_nor_partner() {
        for (path, open_to_browsers) in [
            ("/v2/verify/bank", true),
            ("/api/v1/verify", true),
            ("/v2/b2b/branch/quota", false),
            ("/v2/b2b/branches", false),
            ("/admin/services", false),
            ("/health", false),
            ("/openapi.json", false),
        ] {
            assert_eq!(browser_path(path), open_to_browsers, "{path}");
        }
    }
}
