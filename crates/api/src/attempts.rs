//! The attempts log at the HTTP edge: a layer on every verification route gives the request a
//! [`Trace`] (the `Authed` extractors mark it once the caller passed authentication and the
//! rate limit; services note what they learn on it), and after the handler answers writes the
//! record — before the answer leaves. The outcome comes from the answer: error answers carry
//! theirs in the response's extensions ([`Ended`]), set where they are built.

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use domain::attempt::{Channel, Outcome, SlipKind};
use services::attempts::Trace;
use services::Services;
use std::time::Instant;

/// How an error answer ended the request, for the log: the outcome and the code the client got.
#[derive(Debug, Clone)]
pub(crate) struct Ended(pub Outcome, pub &'static str);

// One middleware function per route family (`axum::middleware::from_fn` takes functions):
// `.layer(from_fn(attempts::v2_bank))`.

pub(crate) async fn v2_bank(req: Request, next: Next) -> Response {
    record(Channel::V2, SlipKind::Bank, req, next).await
}

pub(crate) async fn v2_wallet(req: Request, next: Next) -> Response {
    record(Channel::V2, SlipKind::Truewallet, req, next).await
}

pub(crate) async fn v1_bank(req: Request, next: Next) -> Response {
    record(Channel::V1, SlipKind::Bank, req, next).await
}

pub(crate) async fn v1_wallet(req: Request, next: Next) -> Response {
    record(Channel::V1, SlipKind::Truewallet, req, next).await
}

pub(crate) async fn async_bank(req: Request, next: Next) -> Response {
    record(Channel::Async, SlipKind::Bank, req, next).await
}

async fn record(channel: Channel, kind: SlipKind, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let trace = Trace::new(channel, kind);
    req.extensions_mut().insert(trace.clone());
    let svc = req.extensions().get::<Services>().cloned();
    let request_id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    trace.request_id(request_id.clone());
    let resp = next.run(req).await;
    let Some(svc) = svc else { return resp };
    if !trace.is_authenticated() {
        return resp;
    }
    let ended = match resp.extensions().get::<Ended>() {
        Some(Ended(outcome, code)) => Some((*outcome, Some(code.to_string()))),
        // An async submission is logged by its jobs when they end.
        None if resp.status() == StatusCode::ACCEPTED => return resp,
        None if resp.status().is_success() => None,
        // Refused before a handler ran (a body limit of the framework, say).
        None => Some((Outcome::Error, None)),
    };
    let ms = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    svc.attempts()
        .log_attempt(trace.record(svc.now(), ended, ms, request_id, None))
        .await;
    resp
}
