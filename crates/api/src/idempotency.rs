//! `Idempotency-Key` on the verification routes (docs/idempotency.md): the handler parses the
//! request, hashes the parsed form (`Fingerprint`), and runs its work through `once`, which
//! answers a stored answer, 409 or 422 instead when the key says so, and stores the answer.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use domain::{Error, Satang};
use services::auth::Caller;
use services::idempotency::{Claimed, IdemClaim};
use services::input::SlipInput;
use services::Services;
use sha2::{Digest, Sha256};
use std::future::Future;

/// The header's value; absent is `None`, a bad value a `VALIDATION_ERROR`. Read before the
/// body, so a bad key costs no upload.
pub(crate) fn key(headers: &HeaderMap) -> Result<Option<String>, Error> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let text = v.to_str().unwrap_or("\u{0}");
    services::idempotency::check_key(text)?;
    Ok(Some(text.to_string()))
}

/// SHA-256 over the parsed request: the route and each field, length-prefixed, so the same
/// request matches however it was sent (JSON or multipart, any boundary, Base64 or a file).
pub(crate) struct Fingerprint(Sha256);

impl Fingerprint {
    pub fn new(route: &str) -> Self {
        let mut f = Fingerprint(Sha256::new());
        f.part("route", route.as_bytes());
        f
    }

    pub fn part(&mut self, name: &str, value: &[u8]) -> &mut Self {
        for bytes in [name.as_bytes(), value] {
            self.0.update((bytes.len() as u64).to_be_bytes());
            self.0.update(bytes);
        }
        self
    }

    pub fn opt(&mut self, name: &str, value: Option<&str>) -> &mut Self {
        match value {
            // Absent and present differ even from an empty string.
            None => self.part(name, b"\xff-none"),
            Some(v) => self.part(name, v.as_bytes()),
        }
    }

    pub fn flag(&mut self, name: &str, value: bool) -> &mut Self {
        self.part(name, if value { b"1" } else { b"0" })
    }

    pub fn amount(&mut self, name: &str, value: Option<Satang>) -> &mut Self {
        let text = value.map(|a| a.0.to_string());
        self.opt(name, text.as_deref())
    }

    /// The slip: its kind and its text or the image's bytes.
    pub fn input(&mut self, input: &SlipInput) -> &mut Self {
        match input {
            SlipInput::Payload(p) => self.part("payload", p.as_bytes()),
            SlipInput::Url(u) => self.part("url", u.as_bytes()),
            SlipInput::Image(bytes) => self.part("image", bytes),
        }
    }

    pub fn finish(self) -> String {
        hex::encode(self.0.finalize())
    }
}

/// Runs `work` once per key (`key`: the key and the request's fingerprint): without a key,
/// just runs it. With one, the key is claimed first
/// (`IDEMPOTENCY_KEY_IN_USE`, `IDEMPOTENCY_KEY_REUSED`, or the stored answer with
/// `Idempotent-Replayed: true`), `work` runs with the claim beside its caller (its charge is
/// recorded on the key), and the answer is stored (2xx, 4xx) or the key given back (5xx).
pub(crate) async fn once<T, E, Fut>(
    svc: &Services,
    caller: Caller,
    key: Option<(String, String)>,
    work: impl FnOnce(Caller, Option<IdemClaim>) -> Fut,
) -> Response
where
    Fut: Future<Output = Result<T, E>>,
    T: IntoResponse,
    E: IntoResponse + From<Error>,
{
    let Some((key, fingerprint)) = key else {
        return work(caller, None).await.into_response();
    };
    let claim = match svc
        .verify()
        .idempotency_begin(&caller, &key, &fingerprint)
        .await
    {
        Ok(Claimed::Run(c)) => c,
        Ok(Claimed::Stored { status, body }) => {
            // Logged when it first ran.
            caller.trace.replayed();
            return replay(status, body);
        }
        Err(e) => return E::from(e).into_response(),
    };
    // A client that hangs up cancels the work: the key is given back at once rather than
    // held until its lease ends (a charge already made stays recorded on the key).
    let mut guard = Release {
        svc: svc.clone(),
        caller: caller.clone(),
        claim: Some(claim.clone()),
    };
    let resp = work(caller, Some(claim)).await.into_response();
    let (parts, body) = resp.into_parts();
    // Our own JSON answers, already in memory.
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    if let Some(claim) = guard.claim.take() {
        let text = std::str::from_utf8(&bytes).unwrap_or("");
        svc.verify()
            .idempotency_finish(&guard.caller, &claim, (parts.status.as_u16(), text))
            .await;
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// The stored answer, marked as a replay.
fn replay(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut resp = (status, body).into_response();
    let h = resp.headers_mut();
    h.insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}

/// Gives the key back if the work is dropped before its answer is stored.
struct Release {
    svc: Services,
    caller: Caller,
    claim: Option<IdemClaim>,
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(claim) = self.claim.take() {
            let (svc, caller) = (self.svc.clone(), self.caller.clone());
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    svc.verify()
                        .idempotency_finish(&caller, &claim, (500, ""))
                        .await;
                });
            }
        }
    }
}
