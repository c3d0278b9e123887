//! `slipverify_http_requests_total` and `slipverify_http_request_duration_seconds`: every
//! answer by api family, route pattern and status. The pattern (`/v2/verify/bank/jobs/{id}`),
//! never the path: a path carries ids.

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;

/// The route family of a pattern, by its prefix (`/v2/b2b` is the partner API).
fn api_of(route: &str) -> &'static str {
    let under = |p: &str| route == p || route.starts_with(&format!("{p}/"));
    if under("/v2/b2b") {
        "partner"
    } else if under("/v2") {
        "v2"
    } else if under("/api/v1") {
        "v1"
    } else if under("/admin") {
        "admin"
    } else {
        "other"
    }
}

pub(crate) async fn http(
    State(metrics): State<metrics::Metrics>,
    req: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let resp = next.run(req).await;
    let (api, route) = match &route {
        Some(r) => (api_of(r), r.as_str()),
        None => ("other", "unmatched"),
    };
    metrics.http_request(api, route, resp.status().as_u16(), started.elapsed());
    resp
}

#[cfg(test)]
mod tests {
    use super::api_of;

    #[test]
    fn families_by_prefix() {
        for (route, family) in [
            ("/v2/verify/bank", "v2"),
            ("/v2/b2b/branch/quota", "partner"),
            ("/api/v1/verify", "v1"),
            ("/admin/services/{id}", "admin"),
            ("/health", "other"),
            ("/v2x", "other"),
        ] {
            assert_eq!(api_of(route), family, "{route}");
        }
    }
}
