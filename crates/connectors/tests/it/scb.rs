//! The `scb` kind against the simulator's SCB routes over real HTTP on loopback (and one test over HTTPS). No sleeps:
//! the simulator counts calls and holds requests until released; token expiry follows an
//! injected clock.

use connectors::{ConnectorSpec, Kind, Outcome, Router, SlipQuery};
use domain::{Clock, ManualClock, Satang};
use sim::{Fault, Fixtures, Route, ScbSim, Sim, SimConfig};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

use crate::common::{easyslip, routing, unavailable_causes};

const KEY: &str = "scb-key";
const SECRET: &str = "scb-s3cret";
/// Sent by SCB (014), amounts as strings (the default of the SCB routes).
const REF: &str = "202611221AbCdEfGhIjKlMnO";
/// Amounts as JSON numbers.
const REF_NUMBERS: &str = "202611222PqRsTuVwXyZ0123";
/// A reference that would add a path segment and a query if sent unencoded.
const REF_ODD: &str = "2026112219/x?sendingBank=004";

const FIXTURES: &str = r#"{
  "bank": [
    { "transRef": "202611221AbCdEfGhIjKlMnO", "date": "2026-11-22T10:15:07.000+07:00",
      "countryCode": "TH", "amount": { "amount": 1500.5 }, "ref1": "INV-1", "ref2": "", "ref3": "",
      "sender": { "bank": { "id": "014" },
        "account": { "name": { "th": "นาย ทดสอบ ก", "en": "MR. TODSOB K" },
                     "bank": { "type": "BANKAC", "account": "xxx-x-x0209-x" } } },
      "receiver": { "bank": { "id": "004" },
        "account": { "name": { "th": "บริษัท ร้านค้า จำกัด" },
                     "bank": { "type": "BANKAC", "account": "xxx-x-x3109-x" } } } },
    { "transRef": "202611222PqRsTuVwXyZ0123", "date": "2026-11-22T14:02:31.000+07:00",
      "wireAmounts": "number", "amount": { "amount": 99 },
      "sender": { "bank": { "id": "014" }, "account": { "name": { "th": "นาง ทดสอบ" } } },
      "receiver": { "bank": { "id": "014" }, "account": { "name": { "th": "ร้าน ทดลอง" } } } },
    { "transRef": "2026112219/x?sendingBank=004", "date": "2026-11-22T15:00:00.000+07:00",
      "amount": { "amount": 1 },
      "sender": { "bank": { "id": "014" }, "account": { "name": { "th": "ก" } } },
      "receiver": { "bank": { "id": "014" }, "account": { "name": { "th": "ข" } } } }
  ]
}"#;

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000),
    ))
}

async fn sim_with(scb: ScbSim) -> Sim {
    Sim::start(SimConfig {
        fixtures: Fixtures::from_json(FIXTURES).expect("fixtures"),
        client_id: Some(KEY.into()),
        client_secret: Some(SECRET.into()),
        scb,
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts")
}

async fn sim() -> Sim {
    sim_with(ScbSim::default()).await
}

fn scb(name: &str, sim: &Sim) -> ConnectorSpec {
    let mut s = ConnectorSpec::new(name, Kind::Scb, sim.base_url()).with_api_key(KEY);
    s.api_secret = Some(SECRET.into());
    s.timeout = Duration::from_secs(10);
    s
}

fn es(name: &str, sim: &Sim) -> ConnectorSpec {
    easyslip(name, sim, "k")
}

fn router(specs: Vec<ConnectorSpec>, names: &[&str], clock: Arc<ManualClock>) -> Router {
    let mut b = Router::builder(reqwest::Client::new(), clock as Arc<dyn Clock>);
    for s in specs {
        b = b.spec(s);
    }
    b.build(routing(names)).expect("router builds")
}

fn q(r: &str) -> SlipQuery {
    SlipQuery::from_reference("014", r)
}

fn found(a: &Outcome<domain::model::Transfer>) -> &domain::model::Transfer {
    match a {
        Outcome::Found(t) => t,
        other => panic!("not found: {other:?}"),
    }
}

#[tokio::test]
async fn golden_mapping_of_a_full_transfer_with_string_amounts() {
    let s = sim().await;
    let r = router(vec![scb("scb", &s)], &["scb"], clock());
    let asked = q(REF);
    let out = r.route(&asked).await;
    assert_eq!(out.source.as_deref(), Some("scb"));
    let t = found(&out.answer);
    let want = domain::model::Transfer {
        trans_ref: REF.into(),
        payload: asked.payload.clone(),
        occurred_at: OffsetDateTime::parse(
            "2026-11-22T10:15:07+07:00",
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap(),
        country_code: "TH".into(),
        amount: Satang(150_050),
        fee: Satang(0),
        ref1: "INV-1".into(),
        ref2: String::new(),
        ref3: String::new(),
        sender: domain::model::Party {
            bank_code: "014".into(),
            name_th: "นาย ทดสอบ ก".into(),
            name_en: Some("MR. TODSOB K".into()),
            account_type: "BANKAC".into(),
            account: "xxx-x-x0209-x".into(),
        },
        receiver: domain::model::Party {
            bank_code: "004".into(),
            name_th: "บริษัท ร้านค้า จำกัด".into(),
            name_en: None,
            account_type: "BANKAC".into(),
            account: "xxx-x-x3109-x".into(),
        },
        receiver_merchant_id: None,
        bank_data: t.bank_data.clone(),
    };
    assert_eq!(t, &want);
    // SCB's own words are kept, string amounts and all.
    let data = t.bank_data.as_ref().expect("bank data kept");
    assert_eq!(data["amount"], "1500.50");
    assert_eq!(data["sender"]["proxy"]["type"], serde_json::Value::Null);

    // Amounts as numbers read the same.
    let t2 = r.route(&q(REF_NUMBERS)).await;
    assert_eq!(found(&t2.answer).amount, Satang(9_900));
    assert_eq!(s.calls(Route::ScbVerify), 2);
}

#[tokio::test]
async fn not_found_only_when_the_code_is_configured() {
    let s = sim().await; // answers 404 / 1104 for an unknown reference
    let mut configured = scb("a", &s);
    configured.not_found_codes = vec!["1104".into()];
    let r = router(vec![configured], &["a"], clock());
    assert_eq!(
        r.route(&q("20261122NOSUCHREF0000000")).await.answer,
        Outcome::NotFound
    );

    // Default: no code is known to mean "not found", so it is unavailable.
    let r = router(vec![scb("a", &s)], &["a"], clock());
    let out = r.route(&q("20261122NOSUCHREF0000000")).await;
    assert!(matches!(out.answer, Outcome::Unavailable(_)), "{out:?}");
    assert_eq!(out.attempts[0].outcome, "status");
}

#[tokio::test]
async fn an_unknown_code_asks_the_next_connector() {
    // The bank answers a code nobody configured (HTTP 200 and HTTP 400 alike).
    for status in [200, 400] {
        let s = sim_with(ScbSim {
            not_found_status: status,
            not_found_code: 4242,
        })
        .await;
        let next = Sim::start(SimConfig::default()).await.unwrap();
        let mut a = scb("a", &s);
        a.not_found_codes = vec!["1104".into()];
        let r = router(vec![a, es("b", &next)], &["a", "b"], clock());
        let out = r
            .route(&SlipQuery::from_reference("004", "013071152533APM07736"))
            .await;
        assert_eq!(out.source.as_deref(), Some("b"), "{status}");
        let want = if status == 200 { "malformed" } else { "status" };
        assert_eq!(out.attempts[0].outcome, want);
    }
}

#[tokio::test]
async fn tokens_are_reused_and_expiry_causes_exactly_one_refresh() {
    let s = sim().await;
    let clock = clock();
    let r = router(vec![scb("a", &s)], &["a"], clock.clone());
    for _ in 0..5 {
        found(&r.route(&q(REF)).await.answer);
    }
    assert_eq!(s.calls(Route::ScbToken), 1);
    assert_eq!(s.calls(Route::ScbVerify), 5);
    // 1799 s lifetime (a number, as SCB sends it), renewed 60 s early.
    clock.advance(time::Duration::seconds(1738));
    found(&r.route(&q(REF)).await.answer);
    assert_eq!(s.calls(Route::ScbToken), 1);
    clock.advance(time::Duration::seconds(1));
    found(&r.route(&q(REF)).await.answer);
    found(&r.route(&q(REF)).await.answer);
    assert_eq!(s.calls(Route::ScbToken), 2);
}

#[tokio::test]
async fn a_401_causes_exactly_one_refresh() {
    let s = sim().await;
    let r = router(vec![scb("a", &s)], &["a"], clock());
    found(&r.route(&q(REF)).await.answer);
    s.set(Fault::RevokeTokenOnce);
    found(&r.route(&q(REF)).await.answer);
    assert_eq!(
        (s.calls(Route::ScbToken), s.calls(Route::ScbVerify)),
        (2, 3)
    );

    // Refused again after the refresh: unavailable, no loop.
    s.set(Fault::Status(401));
    let out = r.route(&q(REF)).await;
    assert_eq!(out.attempts[0].outcome, "status");
    assert_eq!(
        (s.calls(Route::ScbToken), s.calls(Route::ScbVerify)),
        (3, 5)
    );
}

#[tokio::test]
async fn fifty_concurrent_verifications_with_an_expired_token_refresh_once() {
    let s = sim().await;
    let clock = clock();
    let mut spec = scb("a", &s);
    spec.max_concurrency = 64; // all fifty in flight at once
    let r = Arc::new(router(vec![spec], &["a"], clock.clone()));
    found(&r.route(&q(REF)).await.answer);
    clock.advance(time::Duration::seconds(3600));
    let spawn_all = |r: &Arc<Router>| -> Vec<_> {
        (0..50)
            .map(|_| {
                let r = r.clone();
                tokio::spawn(async move { r.route(&q(REF)).await })
            })
            .collect()
    };
    for t in spawn_all(&r) {
        found(&t.await.unwrap().answer);
    }
    assert_eq!(s.calls(Route::ScbToken), 2);

    // All fifty in flight when the token is revoked: fifty 401s, one refresh.
    s.set(Fault::Hold);
    let tasks = spawn_all(&r);
    s.wait_calls(Route::ScbVerify, 51 + 50).await;
    s.set(Fault::RevokeTokenOnce);
    s.release();
    for t in tasks {
        found(&t.await.unwrap().answer);
    }
    assert_eq!(s.calls(Route::ScbToken), 3);
    assert_eq!(s.calls(Route::ScbVerify), 51 + 100);
}

#[tokio::test]
async fn every_unavailable_cause_asks_the_next_connector() {
    let mut cases = unavailable_causes();
    cases.push((Fault::TokenStatus(503), "server_error"));
    for (fault, label) in cases {
        let (a, b) = (sim().await, sim().await);
        a.set(fault.clone());
        let r = router(vec![scb("a", &a), scb("b", &b)], &["a", "b"], clock());
        let out = r.route(&q(REF)).await;
        assert_eq!(out.source.as_deref(), Some("b"), "{fault:?}");
        assert_eq!(out.attempts[0].outcome, label, "{fault:?}");
        found(&out.answer);
    }
}

#[tokio::test]
async fn a_timeout_asks_the_next_connector() {
    let (a, b) = (sim().await, sim().await);
    a.set(Fault::Hold); // held until the test ends: the timeout ends the attempt
    let mut slow = scb("a", &a);
    slow.timeout = Duration::from_millis(300);
    let r = router(vec![slow, scb("b", &b)], &["a", "b"], clock());
    let out = r.route(&q(REF)).await;
    assert_eq!(out.source.as_deref(), Some("b"));
    assert_eq!(out.attempts[0].outcome, "timeout");
}

#[tokio::test]
async fn a_reference_with_slash_or_question_mark_is_encoded() {
    let s = sim().await;
    let r = router(vec![scb("a", &s)], &["a"], clock());
    // Found only if the whole reference arrived as one path segment, with sendingBank 014.
    let t = r.route(&q(REF_ODD)).await;
    assert_eq!(found(&t.answer).trans_ref, REF_ODD);
    // A dot segment is never sent.
    let out = r.route(&q("..")).await;
    assert_eq!(out.attempts[0].outcome, "unsupported");
    assert_eq!(s.calls(Route::ScbVerify), 1);
}

#[tokio::test]
async fn check_requests_a_token_and_wrong_credentials_are_refused() {
    let s = sim().await;
    let mut wrong = scb("wrong", &s);
    wrong.api_secret = Some("nope".into());
    let r = router(vec![scb("a", &s), wrong], &["a"], clock());
    let res = r.check_all().await;
    assert!(res[0].1.is_ok(), "{res:?}");
    assert!(res[1].1.as_ref().unwrap_err().0.contains("401"), "{res:?}");
    assert_eq!(s.calls(Route::ScbVerify), 0);
}

#[test]
fn secrets_do_not_print() {
    let mut s = ConnectorSpec::new("a", Kind::Scb, "https://x").with_api_key("key-s3cr3t");
    s.api_secret = Some("api-s3cr3t".into());
    let text = format!("{s:?}");
    assert!(!text.contains("s3cr3t"), "{text}");
}

/// Over real HTTPS: the simulator's TLS mode (which also demands a client certificate, so the
/// client presents the one its test CA issued; SCB itself is not known to require one).
#[tokio::test]
async fn the_scb_kind_over_https() {
    use egress::operator::{operator_client_with_identity, OperatorTls, OutboundSettings};
    let (s, pki) = Sim::start_https(SimConfig {
        fixtures: Fixtures::from_json(FIXTURES).expect("fixtures"),
        client_id: Some(KEY.into()),
        client_secret: Some(SECRET.into()),
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts");
    assert!(s.base_url().starts_with("https://"), "{}", s.base_url());
    let tls = OperatorTls {
        identity_pem: Some(
            format!("{}\n{}\n", pki.client_cert_pem, pki.client_key_pem).into_bytes(),
        ),
        extra_roots_pem: Some(pki.ca_pem.clone().into_bytes()),
    };
    let client =
        operator_client_with_identity(&OutboundSettings::default(), Duration::from_secs(10), &tls)
            .expect("client");
    let mut spec = scb("scb", &s);
    spec.not_found_codes = vec!["1104".into()];
    let r = Router::builder(client, clock() as Arc<dyn Clock>)
        .spec(spec)
        .build(routing(&["scb"]))
        .expect("router builds");
    let out = r.route(&q(REF)).await;
    assert_eq!(found(&out.answer).amount, Satang(150_050));
    assert_eq!(
        r.route(&q("20261122NOSUCHREF0000000")).await.answer,
        Outcome::NotFound
    );
    assert_eq!(s.calls(Route::ScbToken), 1, "one token over TLS, reused");
}
