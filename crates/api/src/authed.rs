//! Who is calling, as extractors: [`Authed`] (v2 envelope) and [`AuthedV1`] (v1 envelope) run
//! `authenticate` then `rate_check` from the request's head, so a refused request is answered
//! before its body is read; [`Admin`] checks the admin token. Place them after a `Path`
//! extractor: a bad path id is refused before the key is looked at, as it always was.

use crate::error::ApiError;
use crate::v1::error::V1Error;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use services::auth::Caller;
use services::Services;
use std::net::SocketAddr;

/// The authenticated, rate-checked caller of a `/v2` route.
pub(crate) struct Authed(pub Caller);

/// The same for `/api/v1`: refusals in the v1 envelope.
pub(crate) struct AuthedV1(pub Caller);

/// The admin API's token was given (`Authorization: Bearer <token>`).
pub(crate) struct Admin;

impl FromRequestParts<Services> for Authed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, svc: &Services) -> Result<Self, Response> {
        caller::<ApiError>(parts, svc).await.map(Authed)
    }
}

impl FromRequestParts<Services> for AuthedV1 {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, svc: &Services) -> Result<Self, Response> {
        caller::<V1Error>(parts, svc).await.map(AuthedV1)
    }
}

impl FromRequestParts<Services> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, svc: &Services) -> Result<Self, ApiError> {
        let auth = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap_or(""));
        svc.auth().authenticate_admin(auth)?;
        vouch(parts);
        Ok(Admin)
    }
}

/// Authenticates (key, IP allow-list, account state), then takes a rate token; a failure is
/// answered in the envelope `E`.
async fn caller<E>(parts: &mut Parts, svc: &Services) -> Result<Caller, Response>
where
    E: From<domain::Error> + IntoResponse,
{
    let ConnectInfo(peer) = ConnectInfo::<SocketAddr>::from_request_parts(parts, svc)
        .await
        .map_err(IntoResponse::into_response)?;
    let refuse = |e: domain::Error| E::from(e).into_response();
    let auth = parts
        .headers
        .get(axum::http::header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    let forwarded_for = forwarded_for(&parts.headers);
    let c = svc
        .auth()
        .authenticate(auth, peer.ip(), forwarded_for.as_deref())
        .await
        .map_err(refuse)?;
    // Before any body is read: a refused request costs nothing but this check.
    svc.auth().rate_check(&c).await.map_err(refuse)?;
    vouch(parts);
    // A verification route's trace (its attempts-log layer): from here on it is logged.
    Ok(match parts.extensions.get::<services::attempts::Trace>() {
        Some(trace) => c.traced(trace.clone()),
        None => c,
    })
}

/// Tells the accept loop the request's caller is known: at the connection cap it is then not
/// among the first to be shed (`edge`'s module comment).
pub(crate) fn vouch(parts: &Parts) {
    if let Some(mark) = parts.extensions.get::<edge::AuthMark>() {
        mark.mark();
    }
}

/// Every `X-Forwarded-For` line as one list, in order (RFC 9110 5.3): a proxy that appends
/// its own line must not leave the client's line to be read alone. A line that is not text
/// becomes a malformed hop, which stops the walk from the right there.
fn forwarded_for(headers: &HeaderMap) -> Option<String> {
    let lines: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .map(|v| v.to_str().unwrap_or("?"))
        .collect();
    (!lines.is_empty()).then(|| lines.join(","))
}
