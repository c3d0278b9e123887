//! SCB's wire format (banks.md section 2): `POST /v1/oauth/token` and
//! `GET /v1/payment/billpayment/transactions/{transRef}?sendingBank=NNN`, answered from the
//! same fixture file as the v2 routes (a rawSlip is rewritten into SCB's `data`).
//!
//! The token route wants `resourceOwnerId` (the API key) and `requestUId` headers and a JSON
//! body `{"applicationKey","applicationSecret"}`; [`SimConfig::client_id`](crate::SimConfig) /
//! `client_secret` fix the accepted pair (any non-empty pair otherwise, with
//! `resourceOwnerId == applicationKey`). Header names are matched case-insensitively, as the
//! bank's own examples vary their case (banks.md 2.2).
//!
//! SCB's "not found" code is not documented (banks.md 2.4, [U]); [`ScbSim`] sets what the
//! simulator answers for an unknown reference, so both a configured and an unknown code can
//! be tried.

use crate::{lock, Route, Shared};
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// SCB-specific behaviour of the simulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScbSim {
    /// HTTP status of the answer for an unknown reference.
    pub not_found_status: u16,
    /// `status.code` of that answer. 1104 ("Requested entity record does not exist") is the
    /// generic SCB code that fits best; the endpoint's real one is unknown (banks.md 2.4).
    pub not_found_code: u32,
}

impl Default for ScbSim {
    fn default() -> Self {
        Self {
            not_found_status: 404,
            not_found_code: 1104,
        }
    }
}

pub(crate) fn routes() -> Router<Arc<Shared>> {
    Router::new().route("/v1/oauth/token", post(token)).route(
        "/v1/payment/billpayment/transactions/{trans_ref}",
        get(verify),
    )
}

fn status_body(status: u16, code: u32, description: &str) -> Response {
    let s = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        s,
        axum::Json(json!({"status": {"code": code, "description": description}})),
    )
        .into_response()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    // `HeaderMap` keys are lower-case already; lookups by a lower-case name ignore case.
    headers
        .get(name.to_ascii_lowercase())
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

async fn token(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    sh.count(Route::ScbToken);
    let (status, lifetime) = sh.token_switches();
    if let Some(s) = status {
        return status_body(s, 9700, "Generic server error");
    }
    let (Some(owner), Some(_)) = (
        header_str(&headers, "resourceOwnerId"),
        header_str(&headers, "requestUId"),
    ) else {
        return status_body(400, 9100, "Required standard headers not found");
    };
    let creds: Option<(String, String)> =
        serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
            let key = v.get("applicationKey")?.as_str()?.to_owned();
            let secret = v.get("applicationSecret")?.as_str()?.to_owned();
            Some((key, secret))
        });
    let ok = creds
        .as_ref()
        .is_some_and(|(key, secret)| key == owner && sh.accepts(key, secret));
    if !ok {
        return status_body(401, 9500, "Invalid apikey / credentials");
    }
    let n = sh.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let value = format!("simtok-{n}");
    lock(&sh.live_tokens).insert(value.clone());
    let lifetime = lifetime.unwrap_or(sh.config.token_lifetime_s);
    axum::Json(json!({
        "status": {"code": 1000, "description": "Success"},
        "data": {"accessToken": value, "tokenType": "Bearer", "expiresIn": lifetime,
                 "expiresAt": 0}
    }))
    .into_response()
}

/// `None` when the bearer token is live; revocation as on the v2 routes.
fn authorize(sh: &Shared, headers: &HeaderMap) -> Option<Response> {
    let Some(bearer) = header_str(headers, "authorization").and_then(|v| v.strip_prefix("Bearer "))
    else {
        return Some(status_body(
            401,
            9100,
            "Missing/required authorization credentials",
        ));
    };
    let mut sw = lock(&sh.switches);
    let mut live = lock(&sh.live_tokens);
    if sw.revoke_once {
        sw.revoke_once = false;
        live.clear();
    }
    (!live.contains(bearer)).then(|| status_body(401, 9300, "Invalid/expired temporary token"))
}

async fn verify(
    State(sh): State<Arc<Shared>>,
    Path(trans_ref): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    sh.count(Route::ScbVerify);
    let mut held = sh.hold.subscribe();
    // Err only if the sender is gone, which cannot happen while `sh` lives.
    let _ = held.wait_for(|h| !*h).await;
    let latency = lock(&sh.switches).latency;
    if let Some(d) = latency {
        tokio::time::sleep(d).await;
    }
    if let Some(r) = authorize(&sh, &headers) {
        return r;
    }
    let status = lock(&sh.switches).status;
    if let Some(s) = status {
        return status_body(s, 9900, "Service unavailable");
    }
    let owner_ok = header_str(&headers, "resourceOwnerId")
        .is_some_and(|o| sh.config.client_id.as_deref().is_none_or(|c| c == o));
    if !owner_ok || header_str(&headers, "requestUId").is_none() {
        return status_body(400, 9100, "Required standard headers not found");
    }
    let Some(bank) = query.get("sendingBank") else {
        return status_body(400, 1101, "Missing required parameters");
    };
    let found = sh.config.fixtures.bank.iter().find(|s| {
        s.get("transRef").and_then(Value::as_str) == Some(trans_ref.as_str())
            && s.pointer("/sender/bank/id").and_then(Value::as_str) == Some(bank.as_str())
    });
    let Some(slip) = found else {
        let nf = &sh.config.scb;
        return status_body(nf.not_found_status, nf.not_found_code, "Not found");
    };
    let mut data = scb_data(slip);
    {
        let s = lock(&sh.switches);
        if s.other_reference {
            data["transRef"] = Value::String(format!("{trans_ref}X"));
        }
        if s.other_bank {
            data["sendingBank"] = Value::String("999".into());
        }
    }
    answer(&sh, data)
}

/// The success body, honouring the malformed and truncated switches.
fn answer(sh: &Shared, data: Value) -> Response {
    let body =
        json!({"status": {"code": 1000, "description": "Success"}, "data": data}).to_string();
    crate::answer_body(sh, body)
}

/// A 200 whose body breaks off halfway (the declared length is the full one). Yields between
/// the half and the error so the client sees a cut body, not a refused connection.
pub(crate) fn cut_off(body: String) -> Response {
    let full = body.len();
    let half = Bytes::from(body.into_bytes()).slice(..full / 2);
    let stream = futures_util::stream::unfold(0u8, move |step| {
        let half = half.clone();
        async move {
            match step {
                0 => Some((Ok(half), 1)),
                1 => {
                    tokio::task::yield_now().await;
                    Some((Err(std::io::Error::other("simulated cut-off")), 2))
                }
                _ => None,
            }
        }
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(header::CONTENT_LENGTH, full.into());
    r
}

fn text(slip: &Value, pointer: &str) -> Value {
    slip.pointer(pointer)
        .and_then(Value::as_str)
        .map_or(Value::Null, |s| Value::String(s.to_owned()))
}

/// A rawSlip party → SCB's `{displayName, name, proxy, account}`. Empty proxies come as
/// nulls for the sender and empty strings for the receiver: both are seen (banks.md 1.4).
fn party(slip: &Value, who: &str) -> Value {
    let p = |s: &str| format!("/{who}/account/{s}");
    let th = text(slip, &p("name/th"));
    let en = text(slip, &p("name/en"));
    let empty = if who == "sender" {
        Value::Null
    } else {
        Value::String(String::new())
    };
    let or_empty = |v: Value| if v.is_null() { empty.clone() } else { v };
    json!({
        "displayName": if th.is_null() { en.clone() } else { th },
        "name": if en.is_null() { Value::String(String::new()) } else { en },
        "proxy": {"type": or_empty(text(slip, &p("proxy/type"))),
                  "value": or_empty(text(slip, &p("proxy/account")))},
        "account": {"type": or_empty(text(slip, &p("bank/type"))),
                    "value": or_empty(text(slip, &p("bank/account")))},
    })
}

/// SCB's `data` for a fixture rawSlip. The fixture's date is read as Thai local time.
/// Amounts are strings, as SCB's field list types them (banks.md 2.3), unless the fixture
/// says `"wireAmounts": "number"`.
pub(crate) fn scb_data(slip: &Value) -> Value {
    let date = slip.get("date").and_then(Value::as_str).unwrap_or("");
    let trans_date = match (date.get(0..4), date.get(5..7), date.get(8..10)) {
        (Some(y), Some(m), Some(d)) => format!("{y}{m}{d}"),
        _ => String::new(),
    };
    let trans_time = date.get(11..19).unwrap_or("").to_owned();
    let amount = slip
        .pointer("/amount/amount")
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let as_number = slip.get("wireAmounts").and_then(Value::as_str) == Some("number");
    let amount = if as_number {
        json!(amount)
    } else {
        Value::String(format!("{amount:.2}"))
    };
    let s = |k: &str| text(slip, k);
    json!({
        "transRef": s("/transRef"),
        "sendingBank": s("/sender/bank/id"),
        "receivingBank": s("/receiver/bank/id"),
        "transDate": trans_date,
        "transTime": trans_time,
        "sender": party(slip, "sender"),
        "receiver": party(slip, "receiver"),
        "amount": amount.clone(),
        "paidLocalAmount": amount,
        "paidLocalCurrency": "764",
        "countryCode": slip.get("countryCode").and_then(Value::as_str).unwrap_or("TH"),
        "ref1": slip.get("ref1").and_then(Value::as_str).unwrap_or(""),
        "ref2": slip.get("ref2").and_then(Value::as_str).unwrap_or(""),
        "ref3": slip.get("ref3").and_then(Value::as_str).unwrap_or(""),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_slip_becomes_scb_data() {
        let f = crate::Fixtures::example();
        let d = scb_data(&f.bank[0]);
        assert_eq!(d["transDate"], "20261122");
        assert_eq!(d["transTime"], "10:15:07");
        assert_eq!(d["amount"], "1500.50");
        assert_eq!(d["sender"]["name"], "MR. THANAKARN K");
        assert_eq!(d["sender"]["proxy"]["type"], Value::Null);
        assert_eq!(d["receiver"]["proxy"]["type"], "");
        assert_eq!(d["receiver"]["account"]["value"], "xxx-x-x3109-x");
    }
}
