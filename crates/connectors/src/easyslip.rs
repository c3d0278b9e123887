//! The `easyslip` kind: any service speaking our own v2 interface (spec 4.1, 2.1).
//!
//! `POST {base}/v2/verify/bank` `{"payload": ..}` → `data.rawSlip`; `SLIP_NOT_FOUND` → not
//! found, `SLIP_PENDING` → pending, anything else → unavailable. `checkDuplicate` is never
//! sent: duplicates are ours to decide. Auth is `Bearer {api_key}`, or an OAuth token when the
//! spec has a client id and secret instead.

use crate::http::{join, send, status_cause, Answer};
use crate::outcome::{Cause, Outcome, Unavailable};
use crate::spec::{ConnectorSpec, Secret};
use crate::token::{Token, TokenSource};
use crate::{Connector, SlipQuery, WalletQuery};
use async_trait::async_trait;
use domain::model::{Party, Transfer, WalletTransfer};
use domain::{Clock, Satang};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

enum Auth {
    Key(Secret),
    Token(Box<TokenSource>),
    None,
}

pub struct EasySlip {
    client: reqwest::Client,
    base_url: String,
    auth: Auth,
    timeout: Duration,
}

partial_debug!(EasySlip {});

impl EasySlip {
    pub fn new(spec: &ConnectorSpec, client: reqwest::Client, clock: Arc<dyn Clock>) -> Self {
        let auth = match (&spec.api_key, &spec.client_id, &spec.client_secret) {
            (Some(k), _, _) => Auth::Key(k.clone()),
            (None, Some(id), Some(secret)) => Auth::Token(Box::new(TokenSource::new(
                client.clone(),
                &spec.base_url,
                &spec.token,
                id.clone(),
                secret.clone(),
                spec.timeout,
                clock,
            ))),
            _ => Auth::None,
        };
        Self {
            client,
            base_url: spec.base_url.clone(),
            auth,
            timeout: spec.timeout,
        }
    }

    /// Token requests sent so far (0 with an API key).
    pub fn token_requests(&self) -> u64 {
        match &self.auth {
            Auth::Token(t) => t.requests(),
            _ => 0,
        }
    }

    /// POST JSON with our credentials; a 401 on a token causes one refresh and one retry.
    async fn post(&self, path: &str, body: &serde_json::Value) -> Result<Answer, Unavailable> {
        let url = join(&self.base_url, path);
        let build = |bearer: Option<&str>| {
            let mut r = self
                .client
                .post(&url)
                .timeout(self.timeout)
                .header("accept", "application/json")
                .json(body);
            if let Some(b) = bearer {
                r = r.bearer_auth(b);
            }
            r
        };
        match &self.auth {
            Auth::None => send(build(None)).await,
            Auth::Key(k) => send(build(Some(k.expose()))).await,
            Auth::Token(src) => {
                let token: Token = src.get().await?;
                let ans = send(build(Some(token.value.expose()))).await?;
                if ans.status != 401 {
                    return Ok(ans);
                }
                let fresh = src.refresh(&token).await?;
                send(build(Some(fresh.value.expose()))).await
            }
        }
    }

    /// The shared envelope handling of both verify routes.
    fn read<D: DeserializeOwned>(ans: &Answer) -> Outcome<D> {
        if let Some(cause) = status_cause(ans.status) {
            return Outcome::unavailable(cause, error_code(&ans.body).unwrap_or_default());
        }
        let env: Envelope<D> = match serde_json::from_slice(&ans.body) {
            Ok(e) => e,
            Err(e) => {
                // An error envelope whose data we cannot read is still an error envelope.
                return match error_code(&ans.body) {
                    Some(code) => map_error(ans.status, &code),
                    None => Outcome::unavailable(Cause::Malformed, format!("answer: {e}")),
                };
            }
        };
        if let Some(err) = env.error {
            return map_error(ans.status, &err.code.unwrap_or_default());
        }
        match (ans.status, env.success, env.data) {
            (200..=299, Some(true), Some(data)) => Outcome::Found(data),
            (200..=299, _, _) => Outcome::unavailable(Cause::Malformed, "success without data"),
            (s, _, _) => Outcome::unavailable(Cause::Status(s), "no error code"),
        }
    }
}

fn map_error<T>(status: u16, code: &str) -> Outcome<T> {
    match code {
        "SLIP_NOT_FOUND" => Outcome::NotFound,
        "SLIP_PENDING" => Outcome::Pending,
        _ if (200..300).contains(&status) => Outcome::unavailable(Cause::Malformed, code),
        _ => Outcome::unavailable(Cause::Status(status), code.to_string()),
    }
}

/// `error.code` of an error envelope, when the body is one. Codes are short upper-case words;
/// anything else is not repeated into logs.
fn error_code(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let code = v.get("error")?.get("code")?.as_str()?;
    let clean = code.len() <= 64
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    Some(if clean { code } else { "unreadable error code" }.to_string())
}

#[derive(Deserialize)]
struct Envelope<D> {
    success: Option<bool>,
    data: Option<D>,
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    code: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BankData {
    raw_slip: WireSlip,
}

/// Spec 2.1 `rawSlip` as we accept it: optional what the spec marks optional or what other
/// v2 services leave out.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSlip {
    #[serde(default)]
    payload: Option<String>,
    trans_ref: String,
    date: String,
    #[serde(default)]
    country_code: Option<String>,
    amount: WireAmount,
    #[serde(default)]
    fee: Option<f64>,
    #[serde(default)]
    ref1: Option<String>,
    #[serde(default)]
    ref2: Option<String>,
    #[serde(default)]
    ref3: Option<String>,
    sender: WireParty,
    receiver: WireParty,
}

#[derive(Deserialize)]
struct WireAmount {
    amount: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireParty {
    bank: WireBank,
    #[serde(default)]
    account: Option<WireAccount>,
    #[serde(default)]
    merchant_id: Option<String>,
}

#[derive(Deserialize)]
struct WireBank {
    id: String,
}

#[derive(Deserialize)]
struct WireAccount {
    #[serde(default)]
    name: Option<WireName>,
    #[serde(default)]
    bank: Option<WireAccountBank>,
}

#[derive(Deserialize)]
struct WireName {
    #[serde(default)]
    th: Option<String>,
    #[serde(default)]
    en: Option<String>,
}

#[derive(Deserialize)]
struct WireAccountBank {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    account: Option<String>,
}

fn party(p: WireParty) -> Party {
    let account = p.account.unwrap_or(WireAccount {
        name: None,
        bank: None,
    });
    let name = account.name.unwrap_or(WireName { th: None, en: None });
    let bank = account.bank.unwrap_or(WireAccountBank {
        kind: None,
        account: None,
    });
    Party {
        bank_code: p.bank.id,
        name_th: name.th.unwrap_or_default(),
        name_en: name.en.filter(|s| !s.is_empty()),
        account_type: bank.kind.unwrap_or_default(),
        account: bank.account.unwrap_or_default(),
    }
}

fn amount(v: f64, what: &str) -> Result<Satang, Unavailable> {
    Satang::from_baht_f64(v).map_err(|e| Unavailable::new(Cause::Malformed, format!("{what} {e}")))
}

fn date(s: &str) -> Result<OffsetDateTime, Unavailable> {
    OffsetDateTime::parse(s, &Rfc3339)
        .map_err(|_| Unavailable::new(Cause::Malformed, "date is not ISO 8601 with an offset"))
}

fn to_transfer(w: WireSlip, asked_payload: &str) -> Result<Transfer, Unavailable> {
    let receiver_merchant_id = w.receiver.merchant_id.clone().filter(|s| !s.is_empty());
    Ok(Transfer {
        occurred_at: date(&w.date)?,
        amount: amount(w.amount.amount, "amount")?,
        fee: amount(w.fee.unwrap_or(0.0), "fee")?,
        trans_ref: w.trans_ref,
        payload: w
            .payload
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| asked_payload.to_string()),
        country_code: w.country_code.unwrap_or_else(|| "TH".into()),
        ref1: w.ref1.unwrap_or_default(),
        ref2: w.ref2.unwrap_or_default(),
        ref3: w.ref3.unwrap_or_default(),
        sender: party(w.sender),
        receiver: party(w.receiver),
        receiver_merchant_id,
        bank_data: None,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WalletData {
    raw_slip: WireWalletSlip,
}

/// `RawWalletSlip` of `/v2/verify/truewallet` (domain::model).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireWalletSlip {
    #[serde(default)]
    payload: Option<String>,
    transaction_id: String,
    #[serde(default)]
    event: Option<String>,
    date: String,
    amount: f64,
    #[serde(default)]
    sender: Option<WireWalletParty>,
    #[serde(default)]
    receiver: Option<WireWalletParty>,
}

#[derive(Deserialize, Default)]
struct WireWalletParty {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    phone: Option<String>,
}

fn to_wallet(w: WireWalletSlip, asked_payload: &str) -> Result<WalletTransfer, Unavailable> {
    let s = w.sender.unwrap_or_default();
    let r = w.receiver.unwrap_or_default();
    Ok(WalletTransfer {
        occurred_at: date(&w.date)?,
        amount: amount(w.amount, "amount")?,
        transaction_id: w.transaction_id,
        event: w.event.unwrap_or_default(),
        payload: w
            .payload
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| asked_payload.to_string()),
        sender_name: s.name.unwrap_or_default(),
        sender_phone: s.phone.unwrap_or_default(),
        receiver_name: r.name.unwrap_or_default(),
        receiver_phone: r.phone.unwrap_or_default(),
    })
}

fn settle<D, T>(o: Outcome<D>, f: impl FnOnce(D) -> Result<T, Unavailable>) -> Outcome<T> {
    match o {
        Outcome::Found(d) => match f(d) {
            Ok(t) => Outcome::Found(t),
            Err(u) => Outcome::Unavailable(u),
        },
        Outcome::NotFound => Outcome::NotFound,
        Outcome::Pending => Outcome::Pending,
        Outcome::Expired => Outcome::Expired,
        Outcome::Unavailable(u) => Outcome::Unavailable(u),
    }
}

#[async_trait]
impl Connector for EasySlip {
    fn kind(&self) -> &'static str {
        "easyslip"
    }

    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer> {
        if q.payload.is_empty() {
            return Outcome::unavailable(Cause::Unsupported, "no payload to send");
        }
        let body = serde_json::json!({ "payload": q.payload });
        let ans = match self.post("/v2/verify/bank", &body).await {
            Ok(a) => a,
            Err(u) => return Outcome::Unavailable(u),
        };
        settle(Self::read::<BankData>(&ans), |d| {
            to_transfer(d.raw_slip, &q.payload)
        })
    }

    async fn lookup_wallet(&self, q: &WalletQuery) -> Outcome<WalletTransfer> {
        let Some(payload) = q.payload.as_deref().filter(|p| !p.is_empty()) else {
            return Outcome::unavailable(Cause::Unsupported, "no payload to send");
        };
        let body = serde_json::json!({ "payload": payload });
        let ans = match self.post("/v2/verify/truewallet", &body).await {
            Ok(a) => a,
            Err(u) => return Outcome::Unavailable(u),
        };
        settle(Self::read::<WalletData>(&ans), |d| {
            to_wallet(d.raw_slip, payload)
        })
    }

    async fn check(&self) -> Result<(), crate::CheckFailed> {
        if let Auth::Token(src) = &self.auth {
            return src
                .force()
                .await
                .map(|_| ())
                .map_err(|u| crate::CheckFailed(u.to_string()));
        }
        let mut req = self
            .client
            .get(join(&self.base_url, "/v2/info"))
            .timeout(self.timeout);
        if let Auth::Key(k) = &self.auth {
            req = req.bearer_auth(k.expose());
        }
        let ans = send(req)
            .await
            .map_err(|u| crate::CheckFailed(u.to_string()))?;
        match ans.status {
            200..=299 => Ok(()),
            s => Err(crate::CheckFailed(format!(
                "status {s}{}",
                error_code(&ans.body)
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_raw_slip_without_optional_fields() {
        let body = r#"{"success":true,"data":{"rawSlip":{"transRef":"R1","date":"2026-11-22T10:15:00.000+07:00",
            "amount":{"amount":150.5},"sender":{"bank":{"id":"004"},"account":{"name":{"th":"ก"}}},
            "receiver":{"bank":{"id":"014"}}}}}"#;
        let o = settle(EasySlip::read::<BankData>(&Answer::text(200, body)), |d| {
            to_transfer(d.raw_slip, "P")
        });
        let Outcome::Found(t) = o else {
            panic!("{o:?}")
        };
        assert_eq!(t.amount, Satang(15050));
        assert_eq!(t.payload, "P");
        assert_eq!(t.sender.name_en, None);
        assert_eq!(t.receiver_merchant_id, None);
    }

    #[test]
    fn error_codes_map() {
        let nf = r#"{"success":false,"error":{"code":"SLIP_NOT_FOUND","message":"x"}}"#;
        let pe = r#"{"success":false,"error":{"code":"SLIP_PENDING","message":"x"}}"#;
        let q = r#"{"success":false,"error":{"code":"QUOTA_EXCEEDED","message":"x"}}"#;
        assert_eq!(
            EasySlip::read::<BankData>(&Answer::text(404, nf)).label(),
            "not_found"
        );
        assert_eq!(
            EasySlip::read::<BankData>(&Answer::text(404, pe)).label(),
            "pending"
        );
        assert_eq!(
            EasySlip::read::<BankData>(&Answer::text(403, q)).label(),
            "status"
        );
        assert_eq!(
            EasySlip::read::<BankData>(&Answer::text(200, "{\"succ")).label(),
            "malformed"
        );
        assert_eq!(
            EasySlip::read::<BankData>(&Answer::text(503, "")).label(),
            "server_error"
        );
    }
}
