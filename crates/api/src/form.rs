//! The one multipart/form-data reader (v1 and v2 slip uploads): the stream guarded as it
//! arrives (`body::guard_multipart`), at most 20 parts, each capped while it streams, files
//! kept as bytes and text fields as a JSON object, so a form is then read by the same
//! [`crate::request::Fields`] as a JSON body. What the two families spell differently is a
//! [`FormRules`] value.

use domain::Error;
use serde_json::{Map, Value};
use services::input::MAX_IMAGE_BYTES;

/// How one family's forms are read.
pub(crate) struct FormRules {
    /// The names a file part may have.
    pub files: &'static [&'static str],
    /// Text fields that carry a Base64 image (too long: `IMAGE_SIZE_TOO_LARGE`).
    pub base64: &'static [&'static str],
    /// The longest value of a text field, by name, in bytes (UTF-8: up to 4 a character).
    pub cap: fn(&str) -> usize,
    /// A text field sent twice is refused (v1) rather than the last one kept (v2).
    pub unique_text: bool,
    /// A second file is refused with this failure (v1) rather than counted (v2).
    pub second_file: Option<fn() -> Error>,
    /// The failure for a text field that is not UTF-8.
    pub not_utf8: fn(&str) -> Error,
}

/// A form as read: its files in order, its text fields by name.
pub(crate) struct Form {
    pub files: Vec<Vec<u8>>,
    pub text: Map<String, Value>,
}

/// Most parts a form may have.
const MAX_PARTS: usize = 20;

/// Reads a multipart request under `rules`. The file is capped while it streams in: no more
/// than 4 MB is ever held.
pub(crate) async fn read(req: axum::extract::Request, rules: &FormRules) -> Result<Form, Error> {
    use axum::extract::FromRequest;
    let size_hint = crate::body::image_size_hint(req.headers());
    let (req, trip) = crate::body::guard_multipart(req);
    let invalid = || {
        let (field, why) = crate::body::multipart_failure(&trip);
        Error::invalid(field, why)
    };
    let mut mp = axum::extract::Multipart::from_request(req, &())
        .await
        .map_err(|_| invalid())?;
    let mut form = Form {
        files: Vec::new(),
        text: Map::new(),
    };
    let mut parts = 0;
    while let Some(mut field) = mp.next_field().await.map_err(|_| invalid())? {
        parts += 1;
        if parts > MAX_PARTS {
            return Err(Error::invalid("body", "has too many fields"));
        }
        let name = field.name().unwrap_or("").to_string();
        let is_file = rules.files.contains(&name.as_str());
        // Each name once where the family says so: repeats would multiply what one request holds.
        if rules.unique_text && !is_file && form.text.contains_key(&name) {
            return Err(Error::invalid(name, "is sent more than once"));
        }
        let is_base64 = rules.base64.contains(&name.as_str());
        let cap = if is_file {
            MAX_IMAGE_BYTES
        } else {
            (rules.cap)(&name)
        };
        // Sized once from Content-Length: growing by doubling would hold up to twice the image.
        let mut buf = Vec::with_capacity(if is_file { size_hint } else { 0 });
        while let Some(chunk) = field.chunk().await.map_err(|_| invalid())? {
            if buf.len() + chunk.len() > cap {
                return Err(if is_file || is_base64 {
                    Error::ImageSizeTooLarge
                } else {
                    Error::invalid(name, "is too long")
                });
            }
            buf.extend_from_slice(&chunk);
        }
        if is_file {
            if let (Some(refuse), false) = (rules.second_file, form.files.is_empty()) {
                return Err(refuse());
            }
            form.files.push(buf);
        } else {
            let s = String::from_utf8(buf).map_err(|_| (rules.not_utf8)(&name))?;
            crate::body::no_nul(&name, &s)?;
            form.text.insert(name, Value::String(s));
        }
    }
    Ok(form)
}
