//! `POST /line/{branchId}/webhook`: the URL a shop enters in the LINE Developers console. The
//! body is capped (1 MB) before anything else; the signature is checked over the raw bytes
//! (`services::line::webhook`); each event is queued as a job and the answer is 200 at once.

use crate::error::ApiError;
use crate::path::Path;
use crate::routing::Routes;
use crate::wire::Plain;
use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use domain::BranchId;
use services::line::webhook::MAX_WEBHOOK_BYTES;
use services::Services;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new().api(routes!(webhook).layer(axum::extract::DefaultBodyLimit::disable()))
}

/// What the webhook answers: how many events were queued.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct LineAck {
    pub queued: usize,
}

#[utoipa::path(post, path = "/{branchId}/webhook", tag = "line",
    summary = "LINE Messaging API webhook of a branch's Official Account (the slip bot)",
    description = "Authenticated by `X-Line-Signature` (Base64 HMAC-SHA256 of the raw body with the branch's channel secret); the branch's IP allow-list does not apply, its rate limit does. Each event is processed once, also when LINE redelivers it.",
    params(
        ("branchId" = String, Path, description = "The branch id"),
        ("X-Line-Signature" = String, Header, description = "Base64 HMAC-SHA256 of the body")),
    request_body(content = String, content_type = "application/json", description = "LINE's webhook body `{destination, events}`"),
    responses(
        (status = 200, description = "Accepted (events queued)", body = Plain<LineAck>),
        (status = 400, description = "VALIDATION_ERROR"),
        (status = 401, description = "INVALID_SIGNATURE"),
        (status = 429, description = "RATE_LIMIT_EXCEEDED")))]
async fn webhook(
    State(svc): State<Services>,
    Path(branch): Path<BranchId>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Plain<LineAck>>, ApiError> {
    let bytes = crate::body::read_at_most(body, MAX_WEBHOOK_BYTES).await?;
    let signature = headers
        .get("x-line-signature")
        .and_then(|v| v.to_str().ok());
    let queued = svc.line().line_webhook(&branch, signature, &bytes).await?;
    Ok(Plain::json(LineAck { queued }))
}
