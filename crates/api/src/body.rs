//! Reading request bodies: a JSON object within the body cap (U+0000 refused anywhere), the
//! multipart stream's guard, upload slots and the body deadline, so every problem becomes
//! `VALIDATION_ERROR` with `field: reason` (spec 7.1) instead of a framework's own rejection
//! text. What the fields mean is each request type's (`request.rs`).

use crate::MAX_BODY_BYTES;
use axum::body::Body;
use domain::{Error, Validation};
use serde_json::{Map, Value};

/// Reads at most `MAX_BODY_BYTES` and parses a JSON object. An empty body is an empty object,
/// so the message names the missing fields rather than the body.
pub(crate) async fn json_object(body: Body) -> Result<Map<String, Value>, Error> {
    parse_object(&read_at_most(body, MAX_BODY_BYTES).await?)
}

/// The whole body, refused (`body: must be at most … bytes`) past `max` bytes; a body cut off
/// at its deadline gets the deadline's error instead.
pub(crate) async fn read_at_most(body: Body, max: usize) -> Result<axum::body::Bytes, Error> {
    axum::body::to_bytes(body, max).await.map_err(|e| {
        let size = Error::invalid("body", format!("must be at most {max} bytes"));
        crate::slow::read_failed(&e, size)
    })
}

/// A JSON object from bytes already read; whitespace only is an empty object.
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => {
            let mut v = Validation::new();
            for (k, val) in &m {
                find_nul(k, val, &mut v);
            }
            v.into_result().map(|()| m)
        }
        Ok(_) => Err(Error::invalid("body", "must be a JSON object")),
        Err(_) => Err(Error::invalid("body", "is not valid JSON")),
    }
}

/// Bodies at most this large never carry an image (a QR payload and a few fields).
const SMALL_BODY: u64 = 16 * 1024;

/// An upload slot for a request that may carry an image (multipart, large or of unknown
/// length), held until its image is decoded; `None` for small bodies, which need none. A burst
/// of uploads then waits for slots instead of holding every 4 MB body in memory at once.
pub(crate) async fn upload_slot(
    svc: &services::Services,
    c: &services::auth::Caller,
    headers: &axum::http::HeaderMap,
) -> Option<services::budget::UploadSlot> {
    let small = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n <= SMALL_BODY);
    if small {
        return None;
    }
    // Fair per service: one customer's slow uploads (all its branch keys together) hold at
    // most its share of the slots.
    svc.uploads().acquire(&c.service.id).await
}

/// The capacity to reserve for an uploaded image: the body's declared length, at most 4 MB.
pub(crate) fn image_size_hint(headers: &axum::http::HeaderMap) -> usize {
    headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0)
        .min(services::input::MAX_IMAGE_BYTES)
}

/// `Content-Type: multipart/form-data` (any case, any boundary).
pub(crate) fn is_multipart(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("multipart/form-data"))
}

/// How long a client may take to send the body of a slip request. Upload slots are held while
/// bodies arrive, so a client that trickles its bytes must not keep one for ever.
pub(crate) const BODY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// `body: ...` when the body is not in within `BODY_DEADLINE`.
pub(crate) fn body_too_slow() -> Error {
    Error::invalid(
        "body",
        format!(
            "was not received within {} seconds",
            BODY_DEADLINE.as_secs()
        ),
    )
}

/// The slip of a POST within `BODY_DEADLINE`: a multipart form read by `multipart`, else a JSON
/// object read by `json`. A failure the request's own body deadline caused says so.
pub(crate) async fn multipart_or_json<T, E, M>(
    req: axum::extract::Request,
    multipart: impl FnOnce(axum::extract::Request) -> M,
    json: impl FnOnce(&Map<String, Value>) -> Result<T, E>,
) -> Result<T, E>
where
    M: std::future::Future<Output = Result<T, E>>,
    E: From<Error>,
{
    let deadline = req.extensions().get::<edge::BodyDeadline>().cloned();
    let read = async {
        if is_multipart(req.headers()) {
            multipart(req).await
        } else {
            json(&json_object(req.into_body()).await?)
        }
    };
    tokio::time::timeout(BODY_DEADLINE, read)
        .await
        .map_err(|_| E::from(body_too_slow()))?
        .map_err(|e| crate::slow::explain(deadline.as_ref(), e))
}

/// An image URL is fetched and decoded like an upload: it needs a slot too, even though its
/// request body is small. Keeps the slot a large body already holds (never two per request).
pub(crate) async fn slot_for_url(
    svc: &services::Services,
    c: &services::auth::Caller,
    slot: Option<services::budget::UploadSlot>,
    is_url: bool,
) -> Option<services::budget::UploadSlot> {
    match slot {
        Some(s) => Some(s),
        None if is_url => svc.uploads().acquire(&c.service.id).await,
        None => None,
    }
}

/// Longest header block of one multipart part, in bytes (a `Content-Disposition` with a long
/// file name and a `Content-Type` fit many times over).
pub(crate) const MAX_PART_HEADER_BYTES: usize = 8 * 1024;

/// What stopped a multipart stream early, shared between the body and the handler.
pub(crate) type Trip = std::sync::Arc<std::sync::Mutex<Option<crate::form_guard::Tripped>>>;

/// The request with its multipart body limited as it streams: at most `MAX_BODY_BYTES` in all
/// (part headers, text fields and file alike) and `MAX_PART_HEADER_BYTES` per part header.
pub(crate) fn guard_multipart(req: axum::extract::Request) -> (axum::extract::Request, Trip) {
    use futures_util::StreamExt;
    let trip = Trip::default();
    let boundary = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::form_guard::boundary)
        .unwrap_or("")
        .to_string();
    let mut guard =
        crate::form_guard::FormGuard::new(&boundary, MAX_BODY_BYTES, MAX_PART_HEADER_BYTES);
    let seen = trip.clone();
    let (parts, body) = req.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        if let Err(t) = guard.feed(&chunk) {
            *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
            return Err(axum::Error::new(format!("{t:?}")));
        }
        Ok(chunk)
    });
    (
        axum::extract::Request::from_parts(parts, Body::from_stream(stream)),
        trip,
    )
}

/// The failure of a guarded multipart body: a limit it passed, or not a valid form.
pub(crate) fn multipart_failure(trip: &Trip) -> (&'static str, String) {
    match *trip.lock().unwrap_or_else(|e| e.into_inner()) {
        Some(crate::form_guard::Tripped::StreamTooLong) => {
            ("body", format!("must be at most {MAX_BODY_BYTES} bytes"))
        }
        Some(crate::form_guard::Tripped::HeaderTooLong) => (
            "body",
            format!("a part's headers must be at most {MAX_PART_HEADER_BYTES} bytes"),
        ),
        None => ("body", "is not a valid multipart/form-data body".into()),
    }
}

/// Why a text holding U+0000 is refused: PostgreSQL text cannot store it, and no field needs it.
pub(crate) const NUL_REASON: &str = "must not contain the character U+0000";

/// `name: must not contain ...` when `text` holds U+0000 (path ids, query and form fields).
pub(crate) fn no_nul(name: &str, text: &str) -> Result<(), Error> {
    if text.contains('\0') {
        return Err(Error::invalid(name, NUL_REASON));
    }
    Ok(())
}

/// Every string (and key) of a JSON body, at any depth, checked for U+0000 in one place, so no
/// field can reach the database with it; failures name the field (`accounts[0].name`).
fn find_nul(path: &str, value: &Value, v: &mut Validation) {
    if path.contains('\0') {
        v.fail("body", "field names must not contain the character U+0000");
        return;
    }
    match value {
        Value::String(s) if s.contains('\0') => v.fail(path, NUL_REASON),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                find_nul(&format!("{path}[{i}]"), item, v);
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                find_nul(&format!("{path}.{k}"), item, v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::parse_object;

    #[test]
    fn nul_anywhere_names_the_field() {
        let e = parse_object(br#"{"name":"x\u0000","a":[{"b":"\u0000"}],"ok":"y"}"#).unwrap_err();
        let msg = e.public_message();
        assert!(
            msg.contains("name: must not contain the character U+0000"),
            "{msg}"
        );
        assert!(msg.contains("a[0].b: must not contain"), "{msg}");
        assert!(!msg.contains("ok:"), "{msg}");
        assert!(parse_object(br#"{"k\u0000":1}"#).is_err());
        assert!(parse_object(br#"{"name":"x"}"#).is_ok());
    }
}
