//! The `scb` kind: SCB's slip verification through `billpayment/transactions` (banks.md 2).
//!
//! Token: `POST {base}/v1/oauth/token` with `resourceOwnerId` (the API key) and `requestUId`
//! headers and `{"applicationKey","applicationSecret"}` → `status.code == 1000`,
//! `data.accessToken`, `data.expiresIn`. Verify: `GET {base}/v1/payment/billpayment/
//! transactions/{transRef}?sendingBank=NNN` with the bearer token and the same two headers →
//! `status.code == 1000` and KBank's `data` shape, mapped by [`crate::bankwire`] (shared with KBank).
//!
//! SCB's "not found" code for this endpoint is unknown (banks.md 2.4, [U]): only the codes the
//! operator lists in `not_found_codes` mean not found; every other non-1000 code is
//! unavailable, so the router asks the next connector rather than deny a real payment.

use crate::http::{join, send, status_cause, Answer};
use crate::outcome::{Cause, Outcome, Unavailable};
use crate::spec::{ConnectorSpec, Secret};
use crate::token::{Token, TokenRequest, TokenSource};
use crate::{Connector, SlipQuery, WalletQuery};
use async_trait::async_trait;
use domain::model::{Transfer, WalletTransfer};
use domain::Clock;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// SCB's success code, on the token and the verify answers alike.
const SUCCESS: &str = "1000";

pub struct Scb {
    client: reqwest::Client,
    base_url: String,
    api_key: Secret,
    tokens: TokenSource,
    timeout: Duration,
    not_found_codes: Vec<String>,
}

partial_debug!(Scb { not_found_codes });

/// SCB's token request (not OAuth client credentials).
struct ScbToken {
    client: reqwest::Client,
    url: String,
    api_key: Secret,
    api_secret: Secret,
    timeout: Duration,
}

#[derive(Deserialize)]
struct Status {
    /// An Integer per SCB's tables; a string is accepted too.
    code: serde_json::Value,
}

#[derive(Deserialize)]
struct Envelope<D> {
    status: Option<Status>,
    data: Option<D>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenData {
    access_token: Option<String>,
    expires_in: Option<serde_json::Value>,
}

/// `status.code` as text; only short numbers are repeated into logs.
fn code_text(v: &serde_json::Value) -> String {
    let s = match v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.trim().to_string(),
        _ => String::new(),
    };
    if !s.is_empty() && s.len() <= 8 && s.bytes().all(|b| b.is_ascii_digit()) {
        s
    } else {
        "unreadable code".into()
    }
}

fn status_code_of(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(code_text(v.get("status")?.get("code")?))
}

#[async_trait]
impl TokenRequest for ScbToken {
    async fn request(&self) -> Result<(Secret, Option<i64>), Unavailable> {
        let body = serde_json::json!({
            "applicationKey": self.api_key.expose(),
            "applicationSecret": self.api_secret.expose(),
        });
        let req = self
            .client
            .post(&self.url)
            .timeout(self.timeout)
            .header("accept", "application/json")
            .header("resourceOwnerId", self.api_key.expose())
            .header("requestUId", uuid::Uuid::new_v4().to_string())
            .json(&body);
        let ans = send(req).await?;
        let code = status_code_of(&ans.body).unwrap_or_default();
        if let Some(cause) = status_cause(ans.status) {
            return Err(Unavailable::new(cause, format!("token request {code}")));
        }
        if !(200..300).contains(&ans.status) {
            return Err(Unavailable::new(
                Cause::Status(ans.status),
                format!("token request refused {code}"),
            ));
        }
        let env: Envelope<TokenData> = serde_json::from_slice(&ans.body)
            .map_err(|e| Unavailable::new(Cause::Malformed, format!("token answer: {e}")))?;
        let code = env.status.map(|s| code_text(&s.code)).unwrap_or_default();
        if code != SUCCESS {
            return Err(Unavailable::new(
                Cause::Malformed,
                format!("token answer code {code}"),
            ));
        }
        let data = env
            .data
            .ok_or_else(|| Unavailable::new(Cause::Malformed, "token answer without data"))?;
        crate::token::token_and_lifetime(data.access_token, data.expires_in)
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so a reference can never
/// add a path segment or a query. `None` for values a URL parser would still read as a dot
/// segment (`.`, `..`, even encoded).
fn path_segment(v: &str) -> Option<String> {
    if v.is_empty() || v.bytes().all(|b| b == b'.') {
        return None;
    }
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' | b'.' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    Some(out)
}

impl Scb {
    pub fn new(spec: &ConnectorSpec, client: reqwest::Client, clock: Arc<dyn Clock>) -> Self {
        let api_key = spec.api_key.clone().unwrap_or_else(|| Secret::new(""));
        let api_secret = spec.api_secret.clone().unwrap_or_else(|| Secret::new(""));
        let request = ScbToken {
            client: client.clone(),
            url: join(&spec.base_url, "/v1/oauth/token"),
            api_key: api_key.clone(),
            api_secret,
            timeout: spec.timeout,
        };
        Self {
            tokens: TokenSource::custom(client.clone(), request, spec.timeout, clock),
            client,
            base_url: spec.base_url.clone(),
            api_key,
            timeout: spec.timeout,
            not_found_codes: spec.not_found_codes.clone(),
        }
    }

    /// Token requests sent so far.
    pub fn token_requests(&self) -> u64 {
        self.tokens.requests()
    }

    /// GET with a token; a 401 causes one refresh and one retry.
    async fn get(&self, url: &str) -> Result<Answer, Unavailable> {
        let build = |token: &Token| {
            self.client
                .get(url)
                .timeout(self.timeout)
                .header("accept", "application/json")
                .bearer_auth(token.value.expose())
                .header("resourceOwnerId", self.api_key.expose())
                .header("requestUId", uuid::Uuid::new_v4().to_string())
        };
        let token = self.tokens.get().await?;
        let ans = send(build(&token)).await?;
        if ans.status != 401 {
            return Ok(ans);
        }
        let fresh = self.tokens.refresh(&token).await?;
        send(build(&fresh)).await
    }

    fn read(&self, ans: &Answer) -> Outcome<serde_json::Value> {
        let code = status_code_of(&ans.body);
        if let Some(cause) = status_cause(ans.status) {
            return Outcome::unavailable(cause, code.unwrap_or_default());
        }
        let Some(code) = code else {
            return if (200..300).contains(&ans.status) {
                Outcome::unavailable(Cause::Malformed, "answer without status.code")
            } else {
                Outcome::unavailable(Cause::Status(ans.status), "no status code")
            };
        };
        // SCB answers errors with matching HTTP statuses (404/1104, ...); the code decides.
        if self.not_found_codes.iter().any(|c| c.trim() == code) {
            return Outcome::NotFound;
        }
        if code != SUCCESS || !(200..300).contains(&ans.status) {
            let cause = if (200..300).contains(&ans.status) {
                Cause::Malformed
            } else {
                Cause::Status(ans.status)
            };
            return Outcome::unavailable(cause, format!("code {code}"));
        }
        match serde_json::from_slice::<Envelope<serde_json::Value>>(&ans.body) {
            Ok(Envelope {
                data: Some(d @ serde_json::Value::Object(_)),
                ..
            }) => Outcome::Found(d),
            _ => Outcome::unavailable(Cause::Malformed, "success without data"),
        }
    }
}

#[async_trait]
impl Connector for Scb {
    fn kind(&self) -> &'static str {
        "scb"
    }

    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer> {
        let (Some(r), Some(bank)) = (path_segment(&q.trans_ref), path_segment(&q.sending_bank))
        else {
            return Outcome::unavailable(Cause::Unsupported, "reference cannot be asked");
        };
        let url = format!(
            "{}/{r}?sendingBank={bank}",
            join(&self.base_url, "/v1/payment/billpayment/transactions")
        );
        let ans = match self.get(&url).await {
            Ok(a) => a,
            Err(u) => return Outcome::Unavailable(u),
        };
        match self.read(&ans) {
            Outcome::Found(data) => {
                match crate::bankwire::transfer_from_bank_data(&data, &q.payload) {
                    Ok(t) => Outcome::Found(t),
                    Err(e) => Outcome::unavailable(Cause::Malformed, e),
                }
            }
            Outcome::NotFound => Outcome::NotFound,
            Outcome::Pending => Outcome::Pending,
            Outcome::Expired => Outcome::Expired,
            Outcome::Unavailable(u) => Outcome::Unavailable(u),
        }
    }

    async fn lookup_wallet(&self, _q: &WalletQuery) -> Outcome<WalletTransfer> {
        Outcome::unavailable(Cause::Unsupported, "SCB verifies bank slips only")
    }

    async fn check(&self) -> Result<(), crate::CheckFailed> {
        self.tokens.check().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_cannot_leave_their_path_segment() {
        assert_eq!(
            path_segment("A/B?c=d#e").as_deref(),
            Some("A%2FB%3Fc%3Dd%23e")
        );
        assert_eq!(path_segment("50%").as_deref(), Some("50%25"));
        assert_eq!(path_segment("2021AbC.1").as_deref(), Some("2021AbC.1"));
        assert_eq!(path_segment(".."), None);
        assert_eq!(path_segment(""), None);
    }

    #[test]
    fn codes_are_read_as_numbers_or_strings() {
        assert_eq!(code_text(&serde_json::json!(1000)), "1000");
        assert_eq!(code_text(&serde_json::json!(" 1104")), "1104");
        assert_eq!(code_text(&serde_json::json!("<script>")), "unreadable code");
    }
}
