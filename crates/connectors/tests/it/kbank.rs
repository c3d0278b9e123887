//! The kbank kind against the simulator over real HTTPS with a required client certificate.
//! No sleeps: the simulator counts calls, tokens and handshakes; token expiry follows an
//! injected clock.

use connectors::{
    Connector, ConnectorSpec, KBank, Kind, Outcome, RouteSpec, Router, RoutingSpec, SlipQuery,
};
use domain::model::RawSlip;
use domain::{Clock, ManualClock};
use egress::operator::{operator_client_with_identity, OperatorTls, OutboundSettings};
use serde_json::{json, Value};
use sim::{Fault, Fixtures, Route, Sim, SimConfig, SimPki};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

const REF_NUM: &str = "010092101507665143";
const REF_STR: &str = "015134200548APP00935";

/// banks.md 1.4: the documented example (number amounts, both empty-proxy forms), and a
/// second transfer with string amounts (as thanakan types the fee, SCB the amount).
fn fixtures() -> Fixtures {
    let kbank = json!([
        sim::kbank_example(),
        {"language": "EN", "transRef": REF_STR, "sendingBank": "014", "receivingBank": "004",
         "transDate": "20261122", "transTime": "23:59:01",
         "sender": {"displayName": "JOHN DOE", "name": "JOHN DOE",
                    "proxy": {"type": "MSISDN", "value": "xxx-xxx-1234"},
                    "account": {"type": "BANKAC", "value": "xxx-x-x1111-x"}},
         "receiver": {"displayName": "ร้าน ดี", "name": "DEE SHOP",
                      "proxy": {"type": "", "value": ""},
                      "account": {"type": "BANKAC", "value": "xxx-x-x2222-x"}},
         "amount": "499.95", "paidLocalAmount": "499.95", "paidLocalCurrency": "764",
         "countryCode": "TH", "transFeeAmount": "0.00", "ref1": "INV-7", "ref2": null,
         "ref3": "", "toMerchantId": "KB000001"}
    ]);
    Fixtures::from_json(&json!({"kbank": kbank}).to_string()).expect("fixtures")
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000),
    ))
}

async fn https_sim() -> (Sim, SimPki) {
    Sim::start_https(SimConfig {
        fixtures: fixtures(),
        client_id: Some("kb-id".into()),
        client_secret: Some("kb-s3cret".into()),
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts")
}

/// The HTTPS simulator with its PKI, a test clock, and the spec `kb` pointing at it.
async fn kbank_sim() -> (Sim, SimPki, Arc<ManualClock>, ConnectorSpec) {
    let (sim, pki) = https_sim().await;
    let s = spec("kb", &sim);
    (sim, pki, clock(), s)
}

fn spec(name: &str, sim: &Sim) -> ConnectorSpec {
    let mut s =
        ConnectorSpec::new(name, Kind::KBank, sim.base_url()).with_client("kb-id", "kb-s3cret");
    s.timeout = Duration::from_secs(10);
    s.max_concurrency = 64;
    s
}

/// The client as the server builds it: operator rules plus identity and the sim's root.
fn client(pki: &SimPki, cert: Option<(&str, &str)>) -> reqwest::Client {
    let tls = OperatorTls {
        identity_pem: cert.map(|(c, k)| format!("{c}\n{k}\n").into_bytes()),
        extra_roots_pem: Some(pki.ca_pem.clone().into_bytes()),
    };
    operator_client_with_identity(&OutboundSettings::default(), Duration::from_secs(10), &tls)
        .expect("client")
}

fn kb(spec: &ConnectorSpec, pki: &SimPki, clock: &Arc<ManualClock>) -> Arc<KBank> {
    let c = client(pki, Some((&pki.client_cert_pem, &pki.client_key_pem)));
    Arc::new(KBank::new(spec, c, clock.clone() as Arc<dyn Clock>, true))
}

fn router(
    connectors: Vec<(ConnectorSpec, Arc<dyn Connector>)>,
    clock: &Arc<ManualClock>,
) -> Router {
    let names: Vec<String> = connectors.iter().map(|(s, _)| s.name.clone()).collect();
    let mut b = Router::builder(reqwest::Client::new(), clock.clone() as Arc<dyn Clock>);
    for (s, c) in connectors {
        b = b.connector(s, c);
    }
    b.build(RoutingSpec {
        by_bank: Default::default(),
        default: RouteSpec::new(names.clone()),
        truewallet: RouteSpec::new(names),
    })
    .expect("router builds")
}

/// A router whose one connector is a KBank one on `s`, with the client certificate.
fn only_kbank(s: &ConnectorSpec, pki: &SimPki, c: &Arc<ManualClock>) -> Router {
    router(vec![(s.clone(), kb(s, pki, c))], c)
}

/// Whether the router finds the documented KBank transfer (`REF_NUM`).
async fn finds_ref_num(r: &Router) -> bool {
    let answer = r.route(&q("004", REF_NUM)).await.answer;
    matches!(answer, Outcome::Found(_))
}

fn q(bank: &str, r: &str) -> SlipQuery {
    SlipQuery::from_reference(bank, r)
}

fn golden(name: &str) -> Value {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).expect("golden file")).expect("json")
}

fn raw(a: &Outcome<domain::model::Transfer>) -> Value {
    match a {
        Outcome::Found(t) => serde_json::to_value(RawSlip::from_transfer(t)).unwrap(),
        other => panic!("not found: {other:?}"),
    }
}

#[tokio::test]
async fn golden_mapping_over_mtls() {
    let (sim, pki, c, s) = kbank_sim().await;
    let r = only_kbank(&s, &pki, &c);
    let a = r.route(&q("004", REF_NUM)).await;
    assert_eq!(a.source.as_deref(), Some("kb"));
    let mut got = raw(&a.answer);
    got["payload"] = Value::Null;
    assert_eq!(got, golden("kbank_number.json"));
    let Outcome::Found(t) = &a.answer else {
        unreachable!()
    };
    // The proxy has no place on the wire; it is kept in the stored bank answer.
    assert_eq!(
        t.bank_data.as_ref().unwrap()["receiver"]["proxy"],
        json!({"type": "", "value": ""})
    );
    let a = r.route(&q("014", REF_STR)).await;
    let mut got = raw(&a.answer);
    got["payload"] = Value::Null;
    assert_eq!(got, golden("kbank_string.json"));
    let (accepted, refused) = sim.tls_handshakes();
    assert!(accepted >= 1);
    assert_eq!(refused, 0);
}

#[tokio::test]
async fn not_found_code_is_not_found() {
    let (sim, pki, c, s) = kbank_sim().await;
    let r = only_kbank(&s, &pki, &c);
    let a = r.route(&q("004", "NOPE123")).await;
    assert_eq!(a.answer, Outcome::NotFound);
    assert_eq!(sim.calls(Route::KBank), 1);
}

async fn second(c: &Arc<ManualClock>) -> (Sim, ConnectorSpec, Arc<dyn Connector>) {
    let (sim, pki) = https_sim().await;
    let s = spec("kb2", &sim);
    let k: Arc<dyn Connector> = kb(&s, &pki, c);
    (sim, s, k)
}

#[tokio::test]
async fn unknown_code_and_faults_go_to_the_next_connector() {
    let faults = [
        Fault::KBankCode("6501".into()),
        Fault::Status(429),
        Fault::Status(503),
        Fault::Malformed,
        Fault::Truncated,
        Fault::Hold,
        Fault::OtherReference,
    ];
    for f in faults {
        let (sim, pki, c, mut s) = kbank_sim().await;
        // The held call ends by this timeout (the router's), not by a sleep.
        s.timeout = Duration::from_millis(500);
        let (sim2, s2, k2) = second(&c).await;
        let r = router(vec![(s.clone(), kb(&s, &pki, &c)), (s2, k2)], &c);
        sim.set(f.clone());
        let a = r.route(&q("004", REF_NUM)).await;
        assert_eq!(a.source.as_deref(), Some("kb2"), "{f:?}: {:?}", a.attempts);
        assert!(matches!(a.answer, Outcome::Found(_)), "{f:?}");
        assert_eq!(sim.calls(Route::KBank), 1, "{f:?}");
        assert_eq!(sim2.calls(Route::KBank), 1, "{f:?}");
        sim.release();
    }
}

#[tokio::test]
async fn sandbox_fixture_accepts_the_fixed_answer() {
    let (sim, pki, c, mut s) = kbank_sim().await;
    sim.set(Fault::KBankFixed);
    let r = only_kbank(&s, &pki, &c);
    let a = r.route(&q("004", "ANOTHER1")).await;
    assert!(matches!(a.answer, Outcome::Unavailable(_)), "{a:?}");
    s.sandbox_fixture = true;
    let r = only_kbank(&s, &pki, &c);
    let a = r.route(&q("004", "ANOTHER1")).await;
    assert!(matches!(a.answer, Outcome::Found(_)), "{a:?}");
}

#[tokio::test]
async fn token_reused_then_refreshed_once_on_expiry_and_on_401() {
    let (sim, pki, c, s) = kbank_sim().await;
    let k = kb(&s, &pki, &c);
    let r = router(vec![(s.clone(), k.clone() as Arc<dyn Connector>)], &c);
    for _ in 0..5 {
        assert!(finds_ref_num(&r).await);
    }
    assert_eq!(sim.tokens_issued(), 1);
    assert_eq!(k.token_requests(), 1);
    // expires_in "1799" (a string): past it, exactly one new token.
    c.advance(time::Duration::seconds(1800));
    for _ in 0..3 {
        assert!(finds_ref_num(&r).await);
    }
    assert_eq!(sim.tokens_issued(), 2);
    // Revoked upstream: one 401, one refresh, one retry.
    sim.set(Fault::RevokeTokenOnce);
    assert!(finds_ref_num(&r).await);
    assert_eq!(sim.tokens_issued(), 3);
    assert_eq!(sim.calls(Route::KBank), 5 + 3 + 2);
}

#[tokio::test]
async fn fifty_concurrent_with_an_expired_token_refresh_once() {
    let (sim, pki, c, s) = kbank_sim().await;
    let r = Arc::new(only_kbank(&s, &pki, &c));
    assert!(finds_ref_num(&r).await);
    assert_eq!(sim.tokens_issued(), 1);
    c.advance(time::Duration::seconds(3600));
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let r = r.clone();
            tokio::spawn(async move { r.route(&q("004", REF_NUM)).await.answer })
        })
        .collect();
    for t in tasks {
        assert!(matches!(t.await.unwrap(), Outcome::Found(_)));
    }
    assert_eq!(sim.tokens_issued(), 2);
}

#[tokio::test]
async fn mtls_is_required_and_a_missing_or_foreign_certificate_is_refused() {
    let (sim, pki, c, s) = kbank_sim().await;
    for cert in [
        None,
        Some((&*pki.stranger_cert_pem, &*pki.stranger_key_pem)),
    ] {
        let k = Arc::new(KBank::new(
            &s,
            client(&pki, cert),
            c.clone() as Arc<dyn Clock>,
            false,
        ));
        let r = router(vec![(s.clone(), k as Arc<dyn Connector>)], &c);
        let a = r.route(&q("004", REF_NUM)).await;
        assert!(matches!(a.answer, Outcome::Unavailable(_)), "{a:?}");
    }
    let (accepted, refused) = sim.tls_handshakes();
    assert_eq!(accepted, 0);
    assert!(refused >= 2);
    assert_eq!(sim.tokens_issued(), 0);
}

#[tokio::test]
async fn check_reports_the_certificate() {
    let (sim, pki, c, s) = kbank_sim().await;
    let r = only_kbank(&s, &pki, &c);
    let report = r.check_report().await;
    assert_eq!(report.len(), 1);
    assert_eq!(report[0].result, Ok(()));
    assert!(report[0].client_certificate);
    assert_eq!(report[0].kind, "kbank");
    assert_eq!(sim.tls_handshakes().0, 1);
    assert_eq!(sim.calls(Route::KBank), 0);
}
