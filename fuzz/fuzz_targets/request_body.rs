//! The request-body limits the handlers apply before any parser buffers a byte: the multipart
//! stream guard (whole-stream and per-part-header limits; `crates/api/src/form_guard.rs`,
//! included as it is) checked against a plain reference on the joined bytes, however the
//! stream is cut into chunks; and the hand-written JSON object reading. No panic, and the
//! guard never lets through a stream the reference refuses (nor refuses one it accepts).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/api/src/form_guard.rs"]
#[allow(dead_code)]
mod form_guard;

use form_guard::{FormGuard, Tripped};

const MAX_STREAM: usize = 4096;
const MAX_HEADER: usize = 64;

/// The same rule on the whole stream at once.
fn reference(stream: &[u8], boundary: &str) -> Result<(), Tripped> {
    let mut s = b"\r\n".to_vec();
    s.extend_from_slice(stream);
    let delim = [b"\r\n--".as_slice(), boundary.as_bytes()].concat();
    let find = |h: &[u8], n: &[u8]| h.windows(n.len()).position(|w| w == n);
    let mut i = 0;
    let mut header = false;
    let mut result = Ok(());
    loop {
        let pat: &[u8] = if header { b"\r\n\r\n" } else { &delim };
        match find(&s[i..], pat) {
            Some(p) => {
                if header && p > MAX_HEADER {
                    result = Err(Tripped::HeaderTooLong);
                    break;
                }
                header = !header;
                i += p + pat.len();
            }
            None => {
                // An unterminated header longer than the limit, less what could still be
                // the start of its blank line.
                if header && s.len() - i > MAX_HEADER + 3 {
                    result = Err(Tripped::HeaderTooLong);
                }
                break;
            }
        }
    }
    if stream.len() > MAX_STREAM {
        // Whichever comes first in the stream; only "refused at all" is compared below.
        return Err(Tripped::StreamTooLong);
    }
    result
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let cut = usize::from(data[0]).max(1);
    let boundary = ["XyZ", "----b", "a"][usize::from(data[1]) % 3];
    let stream = &data[2..];
    let mut g = FormGuard::new(boundary, MAX_STREAM, MAX_HEADER);
    let guarded = stream.chunks(cut).try_for_each(|c| g.feed(c));
    let expected = reference(stream, boundary);
    assert_eq!(guarded.is_ok(), expected.is_ok(), "cut {cut}: {guarded:?} vs {expected:?}");

    // JSON bodies: any bytes parse to an object or a clean error, never a panic.
    if let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(stream) {
        let _ = m.get("base64").and_then(serde_json::Value::as_str).map(str::len);
    }
    let _ = form_guard::boundary(&String::from_utf8_lossy(stream));
});
