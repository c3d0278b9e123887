//! The one place where domain errors become HTTP responses (spec 7.1 v2 envelope).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use domain::Error;
use serde_json::json;

#[derive(Debug)]
pub struct ApiError(pub Error);

/// A v2 handler's answer whose status or body is chosen as it runs (a verification, a
/// submission: the stored answer of an `Idempotency-Key`, or `202 Accepted`).
pub(crate) type Answer = Result<Response, ApiError>;

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        if let Error::Internal(i) = &e {
            // Logged for the operator; the client only sees the generic message.
            tracing::error!(detail = %i.detail, at = %i.at, "internal error");
        }
        let status =
            StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = json!({
            "success": false,
            "error": { "code": e.code(), "message": e.public_message() },
        });
        let mut resp = (status, axum::Json(body)).into_response();
        resp.extensions_mut().insert(crate::attempts::Ended(
            domain::attempt::Outcome::of_error(&e),
            e.code(),
        ));
        if e == Error::RenewalTemporarilyUnavailable {
            // Billing outages are usually short; ask clients to come back in half a minute.
            resp.headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("30"));
        }
        if let Error::RateLimited {
            limit,
            retry_after_secs,
            reset_at,
        } = e
        {
            rate_limit_headers(&mut resp, limit, retry_after_secs, reset_at);
        }
        if let Error::IdempotencyKeyInUse { retry_after_secs } = e {
            retry_after(&mut resp, retry_after_secs);
        }
        resp
    }
}

/// `Retry-After` in seconds (409 `IDEMPOTENCY_KEY_IN_USE`: when the holder's lease ends).
pub(crate) fn retry_after(resp: &mut Response, secs: u64) {
    if let Ok(v) = secs.to_string().parse() {
        resp.headers_mut().insert("retry-after", v);
    }
}

/// The four headers of a 429 (spec 7.1), in either envelope.
pub(crate) fn rate_limit_headers(resp: &mut Response, limit: u32, retry_after: u64, reset_at: i64) {
    let h = resp.headers_mut();
    for (name, value) in [
        ("retry-after", retry_after.to_string()),
        ("x-ratelimit-limit", limit.to_string()),
        ("x-ratelimit-remaining", "0".to_string()),
        ("x-ratelimit-reset", reset_at.to_string()),
    ] {
        if let Ok(v) = value.parse() {
            h.insert(name, v);
        }
    }
}

pub(crate) async fn not_found() -> ApiError {
    ApiError(Error::NotFound)
}

pub(crate) fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ApiError(Error::internal("handler panicked")).into_response()
}
