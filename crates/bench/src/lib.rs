//! Benchmark helpers for slipverify. Nothing here runs in the test suite: the HTTP benchmark is
//! `scripts/bench-http`, which drives the release `slipverify` binary and the `bare-endpoint`
//! baseline of this crate with `wrk` (see `docs/benchmarks.md`).
//!
//! The baseline lives in the library so it can be reasoned about (and reused) on its own.

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// The "bare axum JSON endpoint": the same axum (version and features, from the workspace) as
/// the service, a POST that parses the same kind of JSON body into a `serde_json::Value` and
/// answers a small JSON object. No middleware, no state, no database.
pub fn bare_router() -> Router {
    Router::new().route("/v2/verify/bank", post(bare_verify))
}

async fn bare_verify(Json(body): Json<Value>) -> (StatusCode, Json<Value>) {
    // Touch the parsed body like a handler would, so the parse cannot be optimised away.
    let payload_len = body
        .get("payload")
        .and_then(Value::as_str)
        .map_or(0, str::len);
    let check_duplicate = body
        .get("checkDuplicate")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    (
        StatusCode::OK,
        Json(json!({
            "success": true,
            "message": "ok",
            "data": { "payloadLength": payload_len, "checkDuplicate": check_duplicate },
        })),
    )
}
