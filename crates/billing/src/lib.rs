//! The billing boundary: who approves (and pays for) a renewal. The built-in credit ledger
//! pays inside the renewal's own database transaction, so it only says "draw from the
//! ledger"; an external billing endpoint is asked over HTTP, signed, with a timeout, and
//! either approves with a reference, declines, or cannot be reached (then the caller answers
//! `RENEWAL_TEMPORARILY_UNAVAILABLE` and nothing changes).

use async_trait::async_trait;
use domain::billing::{sign_billing_request, Package, Payment, RenewReason};
use std::time::Duration;

/// One renewal to approve.
#[derive(Debug, Clone)]
pub struct RenewalRequest {
    pub service_id: domain::ServiceId,
    pub service_name: String,
    pub package: Package,
    pub reason: RenewReason,
    /// `<service id>:<renewal seq>`: the same for every request that sees this period end, so
    /// an endpoint approves (and charges) one renewal however often it is asked.
    pub idempotency_key: String,
    pub requested_at: time::OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approved(Payment),
    /// No renewal (e.g. no funds): the caller's normal refusal stands.
    Declined(String),
    /// Billing cannot answer now; nothing was renewed.
    Unavailable(String),
}

#[async_trait]
pub trait Billing: Send + Sync + 'static {
    /// `ledger` or `external`, for logs and `/v2/info`-adjacent admin views.
    fn kind(&self) -> &'static str;
    async fn approve(&self, req: &RenewalRequest) -> Decision;
}

/// The default: renewals draw the package price from the service's own credit balance, in
/// the renewal's transaction (which declines when the balance is short).
#[derive(Debug, Default, Clone, Copy)]
pub struct LedgerBilling;

#[async_trait]
impl Billing for LedgerBilling {
    fn kind(&self) -> &'static str {
        "ledger"
    }

    async fn approve(&self, _req: &RenewalRequest) -> Decision {
        Decision::Approved(Payment::Ledger)
    }
}

/// An operator's billing endpoint (`billing.url` in the configuration).
///
/// Request: `POST <url>` with a JSON body (`idempotencyKey`, `serviceId`, `serviceName`,
/// `reason`, `package{id,name,quota,durationDays,price}` with the price in baht,
/// `requestedAt`), headers `X-Billing-Timestamp` (Unix seconds) and `X-Billing-Signature:
/// sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`.
/// Answer: 2xx `{"approved": true, "reference": "..."}` approves; 2xx `{"approved": false}`
/// or 402 declines; anything else (other statuses, bad JSON, timeout, no connection) is
/// "unavailable". Redirects are not followed.
#[derive(Clone)]
pub struct HttpBilling {
    url: String,
    secret: String,
    client: reqwest::Client,
}

/// By hand: the signing secret must never reach a log line.
impl std::fmt::Debug for HttpBilling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpBilling")
            .field("url", &self.url)
            .field("secret", &"[redacted]")
            .finish_non_exhaustive()
    }
}

/// Why an external billing endpoint cannot be set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("billing URL: {0}")]
    Url(egress::SetupError),
    #[error("billing secret must be at least 16 characters")]
    ShortSecret,
    #[error("billing client: {0}")]
    Client(egress::SetupError),
}

impl HttpBilling {
    /// [`HttpBilling::with_outbound`] without an outbound proxy.
    pub fn new(url: &str, secret: &str, timeout: Duration) -> Result<Self, SetupError> {
        Self::with_outbound(
            url,
            secret,
            timeout,
            &egress::operator::OutboundSettings::default(),
        )
    }

    /// The URL is operator configuration (like the database URL), so it is not put through
    /// the SSRF guard (a billing service on the operator's private network is normal), but it
    /// follows the rule for every operator-configured URL: https unless the host is loopback,
    /// sent through the configured outbound proxy.
    pub fn with_outbound(
        url: &str,
        secret: &str,
        timeout: Duration,
        outbound: &egress::operator::OutboundSettings,
    ) -> Result<Self, SetupError> {
        let parsed = egress::operator::check_operator_url(url).map_err(SetupError::Url)?;
        if secret.len() < 16 {
            return Err(SetupError::ShortSecret);
        }
        let client =
            egress::operator::operator_client(outbound, timeout).map_err(SetupError::Client)?;
        Ok(Self {
            url: parsed.to_string(),
            secret: secret.to_string(),
            client,
        })
    }

    fn body(req: &RenewalRequest) -> Vec<u8> {
        let p = &req.package;
        serde_json::json!({
            "idempotencyKey": req.idempotency_key,
            "serviceId": req.service_id,
            "serviceName": req.service_name,
            "reason": req.reason.as_str(),
            "package": {
                "id": p.id,
                "name": p.name,
                "quota": p.quota,
                "durationDays": p.duration_days,
                "price": p.price.as_baht(),
            },
            "requestedAt": domain::clock::format_bangkok(req.requested_at),
        })
        .to_string()
        .into_bytes()
    }
}

#[async_trait]
impl Billing for HttpBilling {
    fn kind(&self) -> &'static str {
        "external"
    }

    async fn approve(&self, req: &RenewalRequest) -> Decision {
        let body = Self::body(req);
        // Wall time, not the service clock: the endpoint checks freshness against its own.
        let ts = time::OffsetDateTime::now_utc().unix_timestamp();
        let sig = sign_billing_request(&self.secret, ts, &body);
        let sent = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("user-agent", "slipverify-billing/1")
            .header("x-billing-timestamp", ts.to_string())
            .header("x-billing-signature", sig)
            .header("idempotency-key", &req.idempotency_key)
            .body(body)
            .send()
            .await;
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                let why = if e.is_timeout() {
                    "timeout"
                } else {
                    "no connection"
                };
                tracing::warn!(error = %e, "billing endpoint unreachable");
                return Decision::Unavailable(why.into());
            }
        };
        let status = resp.status().as_u16();
        if status == 402 {
            return Decision::Declined("billing declined (402)".into());
        }
        if !(200..300).contains(&status) {
            tracing::warn!(status, "billing endpoint answered with an error");
            return Decision::Unavailable(format!("status {status}"));
        }
        let answer: serde_json::Value = match resp.json().await {
            Ok(v) => v,
            Err(_) => return Decision::Unavailable("answer is not JSON".into()),
        };
        match answer.get("approved").and_then(|v| v.as_bool()) {
            Some(true) => match answer.get("reference").and_then(|v| v.as_str()) {
                Some(r) if !r.is_empty() && r.len() <= 200 => {
                    Decision::Approved(Payment::External {
                        reference: r.to_string(),
                    })
                }
                _ => Decision::Unavailable("approval without a reference".into()),
            },
            Some(false) => Decision::Declined("billing declined".into()),
            None => Decision::Unavailable("answer has no approved field".into()),
        }
    }
}

#[cfg(test)]
mod debug_tests {
    #[test]
    fn debug_never_shows_the_secret() {
        let b = super::HttpBilling::new(
            "https://billing.example.com/approve",
            "billing-secret-value",
            std::time::Duration::from_secs(1),
        )
        .unwrap();
        let text = format!("{b:?}");
        assert!(!text.contains("billing-secret-value"), "{text}");
        assert!(text.contains("[redacted]"));
    }
}
