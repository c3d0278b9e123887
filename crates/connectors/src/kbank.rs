//! The `kbank` kind: KBank's slip verification API ("verslip", banks.md 1).
//!
//! Token: `POST {base}{token.path}` (default `/v2/oauth/token`), Basic auth, form
//! `grant_type=client_credentials` (the shared [`TokenSource`]). Verify:
//! `POST {base}/v1/verslip/kbank/verify`, Bearer,
//! `{"rqUID", "rqDt", "data": {"sendingBank", "transRef"}}` → HTTP 200 with `statusCode`:
//! `"0000"` found (`data` mapped by [`crate::bankwire`]), one of `not_found_codes` not found,
//! anything else unavailable (verslip's codes are undocumented: never refuse on a guess).
//! Production wants mTLS; the client identity lives in the `reqwest::Client` given here.

use crate::bankwire::transfer_from_bank_data;
use crate::http::{join, send, status_cause, Answer};
use crate::outcome::{Cause, Outcome, Unavailable};
use crate::spec::ConnectorSpec;
use crate::token::TokenSource;
use crate::{Connector, SlipQuery, WalletQuery};
use async_trait::async_trait;
use domain::model::{Transfer, WalletTransfer};
use domain::Clock;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

pub const VERIFY_PATH: &str = "/v1/verslip/kbank/verify";

pub struct KBank {
    client: reqwest::Client,
    url: String,
    token: TokenSource,
    timeout: Duration,
    not_found_codes: Vec<String>,
    headers: Vec<(String, String)>,
    clock: Arc<dyn Clock>,
    client_certificate: bool,
}

partial_debug!(KBank {
    url,
    client_certificate
});

impl KBank {
    /// `client` must already carry the client identity when `client_certificate` is true
    /// (see `egress::operator::operator_client_with_identity`); the flag is for reports only.
    pub fn new(
        spec: &ConnectorSpec,
        client: reqwest::Client,
        clock: Arc<dyn Clock>,
        client_certificate: bool,
    ) -> Self {
        let token = TokenSource::new(
            client.clone(),
            &spec.base_url,
            &spec.token,
            spec.client_id.clone().unwrap_or_default(),
            spec.client_secret
                .clone()
                .unwrap_or_else(|| crate::Secret::new("")),
            spec.timeout,
            clock.clone(),
        );
        Self {
            client,
            url: join(&spec.base_url, VERIFY_PATH),
            token,
            timeout: spec.timeout,
            not_found_codes: spec.not_found_codes.clone(),
            headers: spec.headers.clone(),
            clock,
            client_certificate,
        }
    }

    pub fn token_requests(&self) -> u64 {
        self.token.requests()
    }

    async fn post(&self, body: &Value) -> Result<Answer, Unavailable> {
        let build = |bearer: &str| {
            let mut r = self
                .client
                .post(&self.url)
                .timeout(self.timeout)
                .header("accept", "application/json")
                .bearer_auth(bearer)
                .json(body);
            for (k, v) in &self.headers {
                r = r.header(k.as_str(), v.as_str());
            }
            r
        };
        let token = self.token.get().await?;
        let ans = send(build(token.value.expose())).await?;
        if ans.status != 401 {
            return Ok(ans);
        }
        // One refresh shared by every caller that saw this token refused, then one retry.
        let fresh = self.token.refresh(&token).await?;
        send(build(fresh.value.expose())).await
    }

    fn read(&self, ans: &Answer, payload: &str) -> Outcome<Transfer> {
        if let Some(cause) = status_cause(ans.status) {
            return Outcome::unavailable(cause, itmx_code(&ans.body).unwrap_or_default());
        }
        if !(200..300).contains(&ans.status) {
            return Outcome::unavailable(
                Cause::Status(ans.status),
                itmx_code(&ans.body).unwrap_or_else(|| "no error code".into()),
            );
        }
        let v: Value = match serde_json::from_slice(&ans.body) {
            Ok(v) => v,
            Err(e) => return Outcome::unavailable(Cause::Malformed, format!("answer: {e}")),
        };
        let Some(code) = v.get("statusCode").and_then(code_text) else {
            return Outcome::unavailable(Cause::Malformed, "answer without statusCode");
        };
        if code == "0000" {
            let Some(data) = v.get("data").filter(|d| d.is_object()) else {
                return Outcome::unavailable(Cause::Malformed, "success without data");
            };
            return match transfer_from_bank_data(data, payload) {
                Ok(t) => Outcome::Found(t),
                Err(e) => Outcome::unavailable(Cause::Malformed, e),
            };
        }
        if self.not_found_codes.contains(&code) {
            return Outcome::NotFound;
        }
        Outcome::unavailable(Cause::Malformed, format!("statusCode {code}"))
    }
}

/// A status code as text (string or number), only if it looks like one: it goes into logs.
fn code_text(v: &Value) -> Option<String> {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let clean = !s.is_empty() && s.len() <= 16 && s.bytes().all(|b| b.is_ascii_alphanumeric());
    Some(if clean { s } else { "unreadable".into() })
}

/// The code of an ITMX-style error body `{"status": {"code": "NNNN"}}` (banks.md 1.5), or of
/// a KBank envelope's `statusCode`.
fn itmx_code(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.pointer("/status/code")
        .or_else(|| v.get("statusCode"))
        .and_then(code_text)
}

#[async_trait]
impl Connector for KBank {
    fn kind(&self) -> &'static str {
        "kbank"
    }

    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer> {
        let body = json!({
            // Unique per request (banks.md 1.3); KBank echoes it.
            "rqUID": uuid::Uuid::new_v4().simple().to_string(),
            "rqDt": domain::clock::format_bangkok(self.clock.now()),
            "data": {"sendingBank": q.sending_bank, "transRef": q.trans_ref},
        });
        match self.post(&body).await {
            Ok(ans) => self.read(&ans, &q.payload),
            Err(u) => Outcome::Unavailable(u),
        }
    }

    async fn lookup_wallet(&self, _q: &WalletQuery) -> Outcome<WalletTransfer> {
        Outcome::unavailable(Cause::Unsupported, "kbank verifies bank slips only")
    }

    async fn check(&self) -> Result<(), crate::CheckFailed> {
        self.token.check().await
    }

    fn client_certificate(&self) -> bool {
        self.client_certificate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Kind;

    fn kb() -> KBank {
        let spec = ConnectorSpec::new("k", Kind::KBank, "https://x").with_client("i", "s");
        let clock: Arc<dyn Clock> =
            Arc::new(domain::ManualClock::new(time::OffsetDateTime::UNIX_EPOCH));
        KBank::new(&spec, reqwest::Client::new(), clock, false)
    }

    #[test]
    fn codes_map() {
        let k = kb();
        let l = |s, b| k.read(&Answer::text(s, b), "P").label();
        assert_eq!(l(200, r#"{"statusCode":"8404"}"#), "not_found");
        assert_eq!(l(200, r#"{"statusCode":"6501"}"#), "malformed");
        assert_eq!(l(200, r#"{"statusCode":"0000"}"#), "malformed");
        assert_eq!(l(200, r#"{"statusCode":"0000","data":{}}"#), "malformed");
        assert_eq!(l(200, r#"{"rqUID":"x"}"#), "malformed");
        assert_eq!(l(200, "<html>"), "malformed");
        assert_eq!(l(400, r#"{"status":{"code":"8400"}}"#), "status");
        assert_eq!(l(429, ""), "rate_limited");
        assert_eq!(l(503, ""), "server_error");
    }

    #[test]
    fn codes_in_logs_are_clean() {
        assert_eq!(
            itmx_code(br#"{"status":{"code":"a b<script>"}}"#).as_deref(),
            Some("unreadable")
        );
        assert_eq!(
            itmx_code(br#"{"statusCode":6501}"#).as_deref(),
            Some("6501")
        );
    }
}
