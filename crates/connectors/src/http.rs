//! Sending a request and reading its answer within bounds, with failures sorted by cause.

use crate::outcome::{Cause, Unavailable};
use crate::spec::BODY_CAP;

/// A response whose body was read in full (at most [`BODY_CAP`] bytes).
pub(crate) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

#[cfg(test)]
impl Answer {
    /// An answer with a text body, for the wire-format tests.
    pub(crate) fn text(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
        }
    }
}

/// `base` + `path` without doubling or dropping the slash.
pub(crate) fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// reqwest errors name the URL; the URL may carry userinfo, so it is dropped before logging.
pub(crate) fn classify(e: reqwest::Error) -> Unavailable {
    let cause = if e.is_timeout() {
        Cause::Timeout
    } else if e.is_connect() || e.is_request() {
        Cause::Connect
    } else if e.is_body() || e.is_decode() {
        Cause::Malformed
    } else {
        Cause::Connect
    };
    let e = e.without_url();
    // The source chain says what went wrong (refused, reset, ...); the top level rarely does.
    let mut detail = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        src = s.source();
    }
    Unavailable::new(cause, detail)
}

pub(crate) async fn send(req: reqwest::RequestBuilder) -> Result<Answer, Unavailable> {
    let mut resp = req.send().await.map_err(classify)?;
    let status = resp.status().as_u16();
    if resp.content_length().is_some_and(|n| n > BODY_CAP as u64) {
        return Err(Unavailable::new(Cause::Malformed, "body over the size cap"));
    }
    let mut body = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > BODY_CAP {
                    return Err(Unavailable::new(Cause::Malformed, "body over the size cap"));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) if e.is_timeout() => return Err(classify(e)),
            // The headers came; a body that breaks off is a broken answer, not a refused call.
            Err(e) => {
                let u = classify(e);
                return Err(Unavailable::new(
                    Cause::Malformed,
                    format!("body cut short: {}", u.detail),
                ));
            }
        }
    }
    Ok(Answer { status, body })
}

/// The causes every HTTP kind shares: 429 and 5xx.
pub(crate) fn status_cause(status: u16) -> Option<Cause> {
    match status {
        429 => Some(Cause::RateLimited),
        500..=599 => Some(Cause::ServerError(status)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_keeps_base_path() {
        assert_eq!(
            join("https://x/api", "/v2/verify/bank"),
            "https://x/api/v2/verify/bank"
        );
        assert_eq!(
            join("https://x/api/", "v2/verify/bank"),
            "https://x/api/v2/verify/bank"
        );
    }
}
