//! Helpers the test modules share: reading a v2 error code, slip images, and the independent
//! partner-request signer.

use serde_json::{json, Value};
use testkit::TestApp;

/// A v2 error's code (`<none>` when the body has none).
pub fn code(v: &Value) -> &str {
    testkit::error_code(v)
}

/// A sandbox slip's QR as a PNG.
pub fn png(payload: &str) -> Vec<u8> {
    server::slip_image::png_bytes(payload, "004").unwrap()
}

/// A plain picture without any QR code.
pub fn blank_png() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(200, 200, image::Rgb([255, 255, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// Signs a partner request with Python's hmac/hashlib (`partner_sign.py`), not with the code
/// under test.
pub fn partner_sign(
    method: &str,
    path: &str,
    ts: &str,
    nonce: &str,
    secret: &str,
    body: &str,
) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/partner_sign.py");
    let mut child = Command::new("python3")
        .args([script, method, path, ts, nonce, secret])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is needed for the independent signer");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A v1 error's code: its `message` (`<none>` when the body has none).
pub fn v1_code(v: &Value) -> &str {
    v["message"].as_str().unwrap_or("<none>")
}

/// A v2 `400 VALIDATION_ERROR` whose message starts with `prefix`.
#[track_caller]
pub fn assert_validation(s: u16, v: &Value, prefix: &str) {
    assert_eq!((s, code(v)), (400, "VALIDATION_ERROR"), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.starts_with(prefix), "{v}");
}

/// A v2 error with this status and code, whose message contains `part`.
#[track_caller]
pub fn assert_error(s: u16, v: &Value, status: u16, error_code: &str, part: &str) {
    assert_eq!((s, code(v)), (status, error_code), "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains(part), "{v}");
}

/// Creates a record through the admin API (`POST` to a collection such as `/admin/branches`)
/// with `token`, asserting a 200; returns the created record (`data`).
pub async fn admin_create(t: &TestApp, token: &str, collection: &str, body: Value) -> Value {
    let v = t.call_ok("POST", collection, token, Some(body)).await;
    v["data"].clone()
}

/// A record's `id`.
pub fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("an id").to_string()
}

/// Creates the service `Shop` (quota 5) through the admin API with `token`; returns its id.
pub async fn new_service(t: &TestApp, token: &str) -> String {
    let shop = json!({"name": "Shop", "quota": 5});
    id_of(&admin_create(t, token, "/admin/services", shop).await)
}

/// Whether `program --version` runs and succeeds (the program is installed and on `PATH`).
pub fn on_path(program: &str) -> bool {
    use std::process::{Command, Stdio};
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The string `field` of each record in the array `list`.
pub fn strings<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    let items = list.as_array().expect("an array");
    let text = |item: &'a Value| item[field].as_str().expect("a string");
    items.iter().map(text).collect()
}

/// The record in the array `list` whose `field` is `value`.
pub fn record_with<'a>(list: &'a Value, field: &str, value: &str) -> &'a Value {
    let items = list.as_array().expect("an array");
    let found = items.iter().find(|r| r[field] == value);
    found.unwrap_or_else(|| panic!("no {field} {value} in {list}"))
}

/// Sends `req`, asserting `status` with `Retry-After: retry_after`; returns the JSON body.
pub async fn refused_retry_after(
    req: reqwest::RequestBuilder,
    status: u16,
    retry_after: &str,
) -> Value {
    let r = req.send().await.unwrap();
    assert_eq!(r.status().as_u16(), status);
    assert_eq!(r.headers()["retry-after"], retry_after);
    r.json().await.unwrap()
}
