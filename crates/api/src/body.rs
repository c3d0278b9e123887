//! Reading and checking JSON bodies by hand, so every problem becomes `VALIDATION_ERROR` with
//! `field: reason` (spec 7.1) instead of a framework's own rejection text.

use crate::MAX_BODY_BYTES;
use axum::body::Body;
use domain::{Error, Satang, Validation};
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

/// Typed access to optional fields; `null` counts as absent. Failures accumulate in `v`.
pub(crate) struct Fields<'a> {
    pub map: &'a Map<String, Value>,
    pub v: Validation,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            v: Validation::new(),
        }
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    pub fn present(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// A string of `min..=max` characters (after trimming surrounding whitespace).
    pub fn string(&mut self, name: &str, min: usize, max: usize) -> Option<String> {
        match self.get(name)? {
            Value::String(s) => {
                let t = s.trim();
                let n = t.chars().count();
                if n < min || n > max {
                    self.v
                        .fail(name, format!("must be {min} to {max} characters"));
                    None
                } else {
                    Some(t.to_string())
                }
            }
            _ => {
                self.v.fail(name, "must be a string");
                None
            }
        }
    }

    /// The collected failures as one `VALIDATION_ERROR`, if any.
    pub fn finish(&mut self) -> Result<(), Error> {
        std::mem::take(&mut self.v).into_result()
    }

    /// Present with an explicit `null` (a PATCH that clears the field).
    pub fn is_null(&self, name: &str) -> bool {
        matches!(self.map.get(name), Some(Value::Null))
    }

    /// A whole number of at least `min`. `3.0` is the whole number 3 (JSON Schema's `integer`;
    /// some JSON encoders write every number as a float).
    pub fn whole(&mut self, name: &str, min: i64) -> Option<i64> {
        let n = match self.get(name)? {
            Value::Number(n) => n.as_i64().or_else(|| whole_float(n)),
            _ => None,
        };
        match n {
            Some(n) if n >= min => Some(n),
            _ => {
                self.v
                    .fail(name, format!("must be a whole number of at least {min}"));
                None
            }
        }
    }

    /// A list of strings.
    pub fn strings(&mut self, name: &str) -> Option<Vec<String>> {
        let list = self.get(name)?.as_array().and_then(|a| {
            a.iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
        });
        if list.is_none() {
            self.v.fail(name, "must be a list of strings");
        }
        list
    }

    pub fn boolean(&mut self, name: &str) -> Option<bool> {
        match self.get(name)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.v.fail(name, "must be a boolean");
                None
            }
        }
    }

    pub fn amount(&mut self, name: &str) -> Option<Satang> {
        match self.get(name)? {
            Value::Number(n) => match n.as_f64().map(Satang::from_baht_f64) {
                Some(Ok(s)) => Some(s),
                Some(Err(reason)) => {
                    self.v.fail(name, reason);
                    None
                }
                None => {
                    self.v.fail(name, "must be a number");
                    None
                }
            },
            _ => {
                self.v.fail(name, "must be a number");
                None
            }
        }
    }
}

/// A float that is a whole number (`3.0`) as that number; exact below 2^53.
pub(crate) fn whole_float(n: &serde_json::Number) -> Option<i64> {
    n.as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
        .map(|f| f as i64)
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
    use super::{parse_object, Fields};

    #[test]
    fn whole_numbers_may_be_written_as_floats() {
        let map = parse_object(br#"{"a":3.0,"b":3.5,"c":-2,"d":1e300,"e":"3"}"#).unwrap();
        let mut f = Fields::new(&map);
        assert_eq!(f.whole("a", 0), Some(3));
        assert_eq!(f.whole("b", 0), None);
        assert_eq!(f.whole("c", -5), Some(-2));
        assert_eq!(f.whole("d", 0), None);
        assert_eq!(f.whole("e", 0), None);
        let msg = f.finish().unwrap_err().public_message();
        assert!(msg.starts_with("b: must be a whole number"), "{msg}");
        assert!(msg.contains("d: ") && msg.contains("e: "), "{msg}");
    }

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
