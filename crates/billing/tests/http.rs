//! `HttpBilling` against a real endpoint on loopback: every kind of answer maps to the
//! right decision, and the request is signed over its exact bytes.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use billing::{Billing, Decision, HttpBilling, RenewalRequest};
use domain::billing::{Package, Payment, RenewReason};
use domain::Satang;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "0123456789abcdef-secret";

#[derive(Clone)]
struct Script {
    /// Status and body to answer; `None` status: hang past the client's timeout.
    answer: Arc<Mutex<(Option<u16>, String)>>,
    seen: Arc<Mutex<Vec<(HeaderMap, Bytes)>>>,
}

async fn endpoint(
    State(s): State<Script>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    s.seen.lock().unwrap().push((headers, body));
    let (status, body) = s.answer.lock().unwrap().clone();
    match status {
        Some(code) => (StatusCode::from_u16(code).unwrap(), body),
        None => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            (StatusCode::OK, body)
        }
    }
}

async fn spawn() -> (Script, String) {
    let s = Script {
        answer: Arc::new(Mutex::new((Some(200), String::new()))),
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/bill", axum::routing::post(endpoint))
        .with_state(s.clone());
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    (s, format!("http://{addr}/bill"))
}

fn request() -> RenewalRequest {
    let now = time::OffsetDateTime::now_utc();
    RenewalRequest {
        service_id: "svc-1".into(),
        service_name: "Shop".into(),
        package: Package {
            id: "p1".into(),
            name: "Standard".into(),
            quota: 5000,
            duration_days: 30,
            price: Satang(99_000),
            created_at: now,
        },
        reason: RenewReason::Quota,
        idempotency_key: "svc-1:3".into(),
        requested_at: now,
    }
}

#[tokio::test]
async fn answers_map_to_decisions() {
    let (script, url) = spawn().await;
    let b = HttpBilling::new(&url, SECRET, Duration::from_millis(500)).unwrap();
    let cases: Vec<(Option<u16>, &str, Decision)> = vec![
        (
            Some(200),
            r#"{"approved":true,"reference":"inv-9"}"#,
            Decision::Approved(Payment::External {
                reference: "inv-9".into(),
            }),
        ),
        (
            Some(200),
            r#"{"approved":false}"#,
            Decision::Declined("billing declined".into()),
        ),
        (
            Some(402),
            "",
            Decision::Declined("billing declined (402)".into()),
        ),
        (Some(500), "", Decision::Unavailable("status 500".into())),
        (Some(302), "", Decision::Unavailable("status 302".into())),
        (
            Some(200),
            "not json",
            Decision::Unavailable("answer is not JSON".into()),
        ),
        (
            Some(200),
            r#"{"approved":true}"#,
            Decision::Unavailable("approval without a reference".into()),
        ),
        (None, "", Decision::Unavailable("timeout".into())),
    ];
    for (status, body, want) in cases {
        *script.answer.lock().unwrap() = (status, body.to_string());
        assert_eq!(b.approve(&request()).await, want, "{status:?} {body}");
    }

    // Signed over the exact bytes, with the idempotency key in a header and in the body.
    let seen = script.seen.lock().unwrap();
    let (headers, body) = &seen[0];
    let ts: i64 = headers["x-billing-timestamp"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        headers["x-billing-signature"].to_str().unwrap(),
        domain::billing::sign_billing_request(SECRET, ts, body)
    );
    assert_eq!(headers["idempotency-key"], "svc-1:3");
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["idempotencyKey"], "svc-1:3");
    assert_eq!(v["reason"], "quota");
    assert_eq!(v["package"]["price"], 990.0);
}

#[tokio::test]
async fn nobody_listening_is_unavailable_and_bad_config_is_refused() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/bill", l.local_addr().unwrap());
    drop(l);
    let b = HttpBilling::new(&url, SECRET, Duration::from_millis(500)).unwrap();
    assert_eq!(
        b.approve(&request()).await,
        Decision::Unavailable("no connection".into())
    );
    assert!(HttpBilling::new("ftp://x/", SECRET, Duration::from_secs(1)).is_err());
    assert!(HttpBilling::new(&url, "short", Duration::from_secs(1)).is_err());
}
