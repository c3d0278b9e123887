//! OAuth client-credentials tokens: one cache per connector per node, reused until shortly
//! before expiry; concurrent callers share one refresh (the mutex is held across the request).

use crate::http::{join, send, status_cause};
use crate::outcome::{Cause, Unavailable};
use crate::spec::{ClientAuth, Secret, TokenSpec};
use base64::Engine;
use domain::Clock;
use serde::Deserialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;
use tokio::sync::Mutex;

/// A bearer token and the generation it belongs to (to refresh only once after a 401).
#[derive(Clone)]
pub struct Token {
    pub value: Secret,
    pub generation: u64,
}

struct Cached {
    token: Token,
    /// Renew from here on: expiry minus a margin of min(60 s, 10% of the lifetime).
    renew_at: OffsetDateTime,
}

pub struct TokenSource {
    client: reqwest::Client,
    url: String,
    client_id: String,
    client_secret: Secret,
    auth: ClientAuth,
    headers: Vec<(String, String)>,
    timeout: Duration,
    clock: Arc<dyn Clock>,
    cached: Mutex<Option<Cached>>,
    generation: AtomicU64,
    /// Token requests sent (for status and tests).
    requests: AtomicU64,
    /// A bank's own token request instead of OAuth client credentials (SCB).
    custom: Option<Box<dyn TokenRequest>>,
}

/// A token request that is not OAuth client credentials (SCB wants JSON credentials and its
/// own headers). The cache, single flight and 401 refresh stay [`TokenSource`]'s.
#[async_trait::async_trait]
pub trait TokenRequest: Send + Sync + 'static {
    /// One request: the token, and its lifetime in seconds when the answer names one.
    async fn request(&self) -> Result<(Secret, Option<i64>), Unavailable>;
}

partial_debug!(TokenSource { client_id, auth });

/// Lifetime when the answer names none. Short, so a wrong guess costs little.
const DEFAULT_LIFETIME_S: i64 = 300;

/// A token answer's token (present, not empty) and its lifetime in seconds when named
/// (`expires_in`: a number, or a string as KBank sends it).
pub(crate) fn token_and_lifetime(
    token: Option<String>,
    expires_in: Option<serde_json::Value>,
) -> Result<(Secret, Option<i64>), Unavailable> {
    let value = token
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Unavailable::new(Cause::Malformed, "token answer without a token"))?;
    let lifetime = match expires_in {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse::<i64>().ok(),
        _ => None,
    };
    Ok((Secret::new(value), lifetime))
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: Option<String>,
    /// KBank sends a string ("1799"), others a number (banks.md 1.2).
    expires_in: Option<serde_json::Value>,
}

impl TokenSource {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        client: reqwest::Client,
        base_url: &str,
        spec: &TokenSpec,
        client_id: String,
        client_secret: Secret,
        timeout: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            client,
            url: join(base_url, &spec.path),
            client_id,
            client_secret,
            auth: spec.client_auth,
            headers: spec.headers.clone(),
            timeout,
            clock,
            cached: Mutex::new(None),
            generation: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            custom: None,
        }
    }

    /// A cache around a bank's own token request.
    pub fn custom(
        client: reqwest::Client,
        request: impl TokenRequest,
        timeout: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let mut s = Self::new(
            client,
            "",
            &TokenSpec::default(),
            String::new(),
            Secret::new(""),
            timeout,
            clock,
        );
        s.custom = Some(Box::new(request));
        s
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// A token good for a while: the cached one, or a new one.
    pub async fn get(&self) -> Result<Token, Unavailable> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            if self.clock.now() < c.renew_at {
                return Ok(c.token.clone());
            }
        }
        self.fetch_into(&mut cached).await
    }

    /// After the API refused `stale` (401): a new token, unless another caller already got one.
    pub async fn refresh(&self, stale: &Token) -> Result<Token, Unavailable> {
        let mut cached = self.cached.lock().await;
        if let Some(c) = cached.as_ref() {
            if c.token.generation != stale.generation && self.clock.now() < c.renew_at {
                return Ok(c.token.clone());
            }
        }
        self.fetch_into(&mut cached).await
    }

    /// A connector's health check: a fresh token ([`Self::force`]), or why there is none.
    pub async fn check(&self) -> Result<(), crate::CheckFailed> {
        self.force()
            .await
            .map(|_| ())
            .map_err(|u| crate::CheckFailed(u.to_string()))
    }

    /// A token request now, whatever is cached (the operator's `check`).
    pub async fn force(&self) -> Result<Token, Unavailable> {
        let mut cached = self.cached.lock().await;
        self.fetch_into(&mut cached).await
    }

    async fn fetch_into(&self, slot: &mut Option<Cached>) -> Result<Token, Unavailable> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let (value, lifetime) = match &self.custom {
            Some(r) => r.request().await?,
            None => self.client_credentials().await?,
        };
        let lifetime = lifetime
            .filter(|s| *s > 0)
            .unwrap_or(DEFAULT_LIFETIME_S)
            .min(86_400 * 365);
        let margin = (lifetime / 10).min(60);
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let token = Token { value, generation };
        *slot = Some(Cached {
            token: token.clone(),
            renew_at: self.clock.now() + time::Duration::seconds(lifetime - margin),
        });
        Ok(token)
    }

    /// The OAuth client-credentials request: the token and the lifetime it names.
    async fn client_credentials(&self) -> Result<(Secret, Option<i64>), Unavailable> {
        let mut req = self
            .client
            .post(&self.url)
            .timeout(self.timeout)
            .header("accept", "application/json");
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let mut form = vec![("grant_type", "client_credentials")];
        match self.auth {
            ClientAuth::Basic => {
                let raw = format!("{}:{}", self.client_id, self.client_secret.expose());
                let b64 = base64::engine::general_purpose::STANDARD.encode(raw);
                req = req.header("authorization", format!("Basic {b64}"));
            }
            ClientAuth::Form => {
                form.push(("client_id", &self.client_id));
                form.push(("client_secret", self.client_secret.expose()));
            }
        }
        let body = form
            .iter()
            .map(|(k, v)| format!("{}={}", k, form_escape(v)))
            .collect::<Vec<_>>()
            .join("&");
        let req = req
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        let ans = send(req).await?;
        if let Some(cause) = status_cause(ans.status) {
            return Err(Unavailable::new(cause, "token request"));
        }
        if !(200..300).contains(&ans.status) {
            return Err(Unavailable::new(
                Cause::Status(ans.status),
                "token request refused",
            ));
        }
        let parsed: TokenAnswer = serde_json::from_slice(&ans.body)
            .map_err(|e| Unavailable::new(Cause::Malformed, format!("token answer: {e}")))?;
        token_and_lifetime(parsed.access_token, parsed.expires_in)
    }
}

/// `application/x-www-form-urlencoded` value escaping (reqwest's `form` needs a feature we
/// do not enable).
fn form_escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn form_escape_escapes_reserved() {
        assert_eq!(super::form_escape("a b&c=d"), "a+b%26c%3Dd");
    }
}
