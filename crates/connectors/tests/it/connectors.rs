//! The router and the easyslip kind against the simulator over real HTTP on loopback.
//! No sleeps: the simulator holds requests until released and counts calls; the breaker
//! cooldown and token expiry follow an injected clock.

use async_trait::async_trait;
use connectors::{
    BreakerState, ClientAuth, Connector, ConnectorSpec, Kind, Outcome, RouteSpec, Router,
    RoutingSpec, SlipQuery, WalletQuery,
};
use domain::model::{Transfer, WalletTransfer};
use domain::{Clock, ManualClock};
use sim::{Fault, Fixtures, Route, Sim, SimConfig};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

use crate::common::{easyslip, routing, unavailable_causes};

const KBANK_REF: &str = "013071152533APM07736";

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(
        OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000),
    ))
}

async fn sim() -> Sim {
    Sim::start_keyed().await
}

/// A simulator that knows no slip at all.
async fn empty_sim() -> Sim {
    Sim::start(SimConfig {
        fixtures: Fixtures::default(),
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts")
}

fn es(name: &str, sim: &Sim) -> ConnectorSpec {
    easyslip(name, sim, sim::TEST_KEY)
}

fn router(specs: Vec<ConnectorSpec>, routing: RoutingSpec, clock: Arc<ManualClock>) -> Router {
    let mut b = Router::builder(reqwest::Client::new(), clock as Arc<dyn Clock>);
    for s in specs {
        b = b.spec(s);
    }
    b.build(routing).expect("router builds")
}

/// `first` (named `a`) asked first, then an easyslip connector `b` on its simulator.
fn then_b(first: ConnectorSpec, b: &Sim, clock: Arc<ManualClock>) -> Router {
    router(vec![first, es("b", b)], routing(&["a", "b"]), clock)
}

/// Simulators `a` and `b` and a router on the returned manual clock asking `a` first, its
/// breaker opening after `failures` failed calls in a row and probing again 30 s later, then `b`.
async fn breaking_a_then_b(failures: u32) -> (Sim, Sim, Arc<ManualClock>, Router) {
    let (a, b) = (sim().await, sim().await);
    let clock = clock();
    let mut sa = es("a", &a);
    sa.breaker_failures = failures;
    sa.breaker_cooldown = Duration::from_secs(30);
    let r = then_b(sa, &b, clock.clone());
    (a, b, clock, r)
}

/// Two easyslip connectors on these simulators, `a` asked first, then `b`.
fn a_then_b(a: &Sim, b: &Sim) -> Router {
    then_b(es("a", a), b, clock())
}

fn kbank() -> SlipQuery {
    SlipQuery::from_reference("004", KBANK_REF)
}

fn found_ref(a: &Outcome<domain::model::Transfer>) -> Option<&str> {
    match a {
        Outcome::Found(t) => Some(&t.trans_ref),
        _ => None,
    }
}

/// A port nobody listens on.
async fn dead_url() -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}")
}

#[tokio::test]
async fn first_connector_answers_and_the_rest_are_not_asked() {
    let (a, b) = (sim().await, sim().await);
    let r = a_then_b(&a, &b);
    let out = r.route(&kbank()).await;
    assert_eq!(found_ref(&out.answer), Some(KBANK_REF));
    assert_eq!(out.source.as_deref(), Some("a"));
    let Outcome::Found(t) = &out.answer else {
        unreachable!()
    };
    assert_eq!(t.amount, domain::Satang(150_050));
    assert_eq!(t.sender.name_en.as_deref(), Some("MR. THANAKARN K"));
    assert_eq!(t.receiver.name_en, None);
    assert_eq!(b.calls(Route::Bank), 0);
}

#[tokio::test]
async fn falls_back_on_every_unavailable_cause() {
    let mut cases = unavailable_causes();
    cases.push((Fault::OtherBank, "mismatch"));
    for (fault, label) in cases {
        let (a, b) = (sim().await, sim().await);
        a.set(fault.clone());
        let r = a_then_b(&a, &b);
        let out = r.route(&kbank()).await;
        assert_eq!(found_ref(&out.answer), Some(KBANK_REF), "{fault:?}");
        assert_eq!(out.source.as_deref(), Some("b"), "{fault:?}");
        assert_eq!(out.attempts[0].outcome, label, "{fault:?}");
        assert_eq!((a.calls(Route::Bank), b.calls(Route::Bank)), (1, 1));
        let st = &r.status()[0];
        assert_eq!((st.calls, st.failures), (1, 1), "{fault:?}");
        assert!(st.last_error.is_some());
    }
}

#[tokio::test]
async fn falls_back_on_timeout() {
    let (a, b) = (sim().await, sim().await);
    // Held until the test ends: the timeout, not the simulator, ends the first attempt.
    a.set(Fault::Hold);
    let mut slow = es("a", &a);
    slow.timeout = Duration::from_millis(200);
    let r = then_b(slow, &b, clock());
    let out = r.route(&kbank()).await;
    assert_eq!(out.source.as_deref(), Some("b"));
    assert_eq!(out.attempts[0].outcome, "timeout");
    a.release();
}

#[tokio::test]
async fn falls_back_on_connection_refused() {
    let b = sim().await;
    let dead = ConnectorSpec::new("a", Kind::EasySlip, dead_url().await).with_api_key("k");
    let r = then_b(dead, &b, clock());
    let out = r.route(&kbank()).await;
    assert_eq!(out.source.as_deref(), Some("b"));
    assert_eq!(out.attempts[0].outcome, "connect");
    let err = r.status()[0].last_error.clone().unwrap();
    assert!(!err.contains("127.0.0.1"), "no URL in status: {err}");
}

#[tokio::test]
async fn not_found_stops_unless_the_route_falls_back_on_it() {
    let (a, b) = (empty_sim().await, sim().await);
    let r = a_then_b(&a, &b);
    let out = r.route(&kbank()).await;
    assert_eq!(out.answer, Outcome::NotFound);
    assert_eq!(out.source.as_deref(), Some("a"));
    assert_eq!(b.calls(Route::Bank), 0);

    let mut rt = routing(&["a", "b"]);
    rt.by_bank.insert(
        "004".into(),
        RouteSpec::new(["a", "b"]).with_fallback_on_not_found(),
    );
    let r = router(vec![es("a", &a), es("b", &b)], rt, clock());
    let out = r.route(&kbank()).await;
    assert_eq!(out.source.as_deref(), Some("b"));
    assert_eq!(found_ref(&out.answer), Some(KBANK_REF));
    // Other banks keep the default route, which does not fall back.
    let scb = SlipQuery::from_reference("014", "NOSUCHREF0001");
    assert_eq!(r.route(&scb).await.attempts.len(), 1);
}

#[tokio::test]
async fn not_found_then_outage_is_not_found() {
    let (a, b) = (empty_sim().await, sim().await);
    b.set(Fault::Status(503));
    let rt = RoutingSpec {
        default: RouteSpec::new(["a", "b"]).with_fallback_on_not_found(),
        ..routing(&["a", "b"])
    };
    let r = router(vec![es("a", &a), es("b", &b)], rt, clock());
    let out = r.route(&kbank()).await;
    assert_eq!(out.answer, Outcome::NotFound);
    assert_eq!(out.attempts.len(), 2);
}

#[tokio::test]
async fn pending_is_an_answer() {
    let (a, b) = (sim().await, sim().await);
    let r = a_then_b(&a, &b);
    let out = r
        .route(&SlipQuery::from_reference("002", "002PENDING0000000001"))
        .await;
    assert_eq!(out.answer, Outcome::Pending);
    assert_eq!(b.calls(Route::Bank), 0);
}

#[tokio::test]
async fn all_down_is_unavailable() {
    let (a, b) = (sim().await, sim().await);
    a.set(Fault::Status(503));
    b.set(Fault::Status(429));
    let r = a_then_b(&a, &b);
    let out = r.route(&kbank()).await;
    assert!(matches!(out.answer, Outcome::Unavailable(_)), "{out:?}");
    assert_eq!(out.source, None);
}

#[tokio::test]
async fn breaker_opens_half_opens_after_cooldown_and_closes() {
    let (a, _b, clock, r) = breaking_a_then_b(2).await;
    a.set(Fault::Status(503));
    r.route(&kbank()).await;
    r.route(&kbank()).await;
    assert_eq!(r.status()[0].state, BreakerState::Open);
    // Open: a is skipped without a call.
    let out = r.route(&kbank()).await;
    assert_eq!(out.attempts[0].outcome, "breaker_open");
    assert_eq!(out.source.as_deref(), Some("b"));
    assert_eq!(a.calls(Route::Bank), 2);

    // Cooldown over, a recovered, but the probe is held: exactly one request probes.
    clock.advance(time::Duration::seconds(30));
    a.clear();
    a.set(Fault::Hold);
    let r = Arc::new(r);
    let probe = tokio::spawn({
        let r = r.clone();
        async move { r.route(&kbank()).await }
    });
    a.wait_calls(Route::Bank, 3).await;
    assert_eq!(r.status()[0].state, BreakerState::HalfOpen);
    let other = r.route(&kbank()).await;
    assert_eq!(other.attempts[0].outcome, "breaker_open");
    assert_eq!(a.calls(Route::Bank), 3);
    a.release();
    let probed = probe.await.unwrap();
    assert_eq!(probed.source.as_deref(), Some("a"));
    assert_eq!(r.status()[0].state, BreakerState::Closed);
    assert_eq!(r.route(&kbank()).await.source.as_deref(), Some("a"));
}

#[tokio::test]
async fn failed_probe_reopens() {
    let (a, _b, clock, r) = breaking_a_then_b(1).await;
    a.set(Fault::Malformed);
    r.route(&kbank()).await;
    assert_eq!(r.status()[0].state, BreakerState::Open);
    clock.advance(time::Duration::seconds(30));
    let out = r.route(&kbank()).await;
    assert_eq!(out.attempts[0].outcome, "malformed");
    assert_eq!(r.status()[0].state, BreakerState::Open);
    clock.advance(time::Duration::seconds(29));
    assert_eq!(r.route(&kbank()).await.attempts[0].outcome, "breaker_open");
}

#[tokio::test]
async fn a_full_concurrency_cap_waits_half_a_timeout_then_skips() {
    let (a, b) = (sim().await, sim().await);
    let mut sa = es("a", &a);
    sa.max_concurrency = 1;
    // The second lookup waits 1 s for the seat; the first is held for up to 2 s.
    sa.timeout = std::time::Duration::from_secs(2);
    let r = Arc::new(then_b(sa, &b, clock()));
    a.set(Fault::Hold);
    let first = tokio::spawn({
        let r = r.clone();
        async move { r.route(&kbank()).await }
    });
    a.wait_calls(Route::Bank, 1).await;
    let second = r.route(&kbank()).await;
    assert_eq!(second.attempts[0].outcome, "saturated");
    assert_eq!(second.source.as_deref(), Some("b"));
    assert_eq!(a.calls(Route::Bank), 1);
    a.release();
    assert_eq!(first.await.unwrap().source.as_deref(), Some("a"));
    // A skip is not the connector's failure.
    assert_eq!(r.status()[0].failures, 0);
    assert_eq!(r.status()[0].state, BreakerState::Closed);
}

#[tokio::test]
async fn wallet_route() {
    let (a, b) = (sim().await, sim().await);
    let r = a_then_b(&a, &b);
    let fx = Fixtures::example();
    let payload = fx.truewallet[0]["payload"].as_str().unwrap().to_string();
    let q = WalletQuery::new(Some(payload), "50012345678901");
    let out = r.route_wallet(&q).await;
    let Outcome::Found(t) = &out.answer else {
        panic!("{out:?}")
    };
    assert_eq!(t.amount, domain::Satang(25_000));
    assert_eq!(t.receiver_phone, "xxx-xxx-5678");
    assert_eq!(out.source.as_deref(), Some("a"));

    a.set(Fault::OtherReference);
    let out = r.route_wallet(&q).await;
    assert_eq!(out.attempts[0].outcome, "mismatch");
    assert_eq!(out.source.as_deref(), Some("b"));

    let unknown = WalletQuery::new(
        Some(slip_qr::encode_truemoney_slip(
            "P2P",
            "50099999999999",
            "22112026",
        )),
        "50099999999999",
    );
    assert_eq!(r.route_wallet(&unknown).await.answer, Outcome::NotFound);
    assert_eq!(b.calls(Route::Wallet), 1);
}

/// A ledger as the connector `sandbox` (the built-in one lives with the store, in `gateway`):
/// pending for one reference, not found otherwise, and no wallet.
struct Ledger;

#[async_trait]
impl Connector for Ledger {
    fn kind(&self) -> &'static str {
        "sandbox"
    }

    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer> {
        if q.trans_ref == "LEDGERPENDING" {
            Outcome::Pending
        } else {
            Outcome::NotFound
        }
    }

    async fn lookup_wallet(&self, _q: &WalletQuery) -> Outcome<WalletTransfer> {
        Outcome::unavailable(connectors::Cause::Unsupported, "no wallet ledger")
    }

    async fn check(&self) -> Result<(), connectors::CheckFailed> {
        Ok(())
    }
}

#[tokio::test]
async fn the_ledger_is_a_connector_like_any_other() {
    let a = sim().await;
    let rt = RoutingSpec {
        default: RouteSpec::new(["sandbox", "a"]).with_fallback_on_not_found(),
        ..RoutingSpec::default()
    };
    let r = Router::builder(reqwest::Client::new(), clock() as Arc<dyn Clock>)
        .sandbox(Arc::new(Ledger))
        .spec(es("a", &a))
        .build(rt)
        .unwrap();
    let out = r.route(&kbank()).await;
    assert_eq!(out.source.as_deref(), Some("a"));
    assert_eq!(out.attempts[0].outcome, "not_found");
    assert_eq!(found_ref(&out.answer), Some(KBANK_REF));
    let pending = r
        .route(&SlipQuery::from_reference("006", "LEDGERPENDING"))
        .await;
    assert_eq!(pending.answer, Outcome::Pending);
    assert_eq!(pending.source.as_deref(), Some("sandbox"));
    // The sandbox has no wallet here: unavailable, not "not found".
    let wallet = r
        .route_wallet(&WalletQuery::new(None, "50012345678901"))
        .await;
    assert!(matches!(wallet.answer, Outcome::Unavailable(_)));
    let names: Vec<String> = r.status().into_iter().map(|s| s.kind).collect();
    assert_eq!(names, ["easyslip", "sandbox"]);
}

/// Every kind is built from the one list; `sandbox` only by its owner.
#[test]
fn every_kind_in_the_list_builds() {
    for kind in Kind::ALL {
        assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        let spec = ConnectorSpec::new("x", kind, "https://example.test");
        let built = kind.connector(
            &spec,
            reqwest::Client::new(),
            clock() as Arc<dyn Clock>,
            false,
        );
        assert_eq!(
            built.map(|c| c.kind()),
            (kind != Kind::Sandbox).then_some(kind.as_str())
        );
    }
    assert_eq!(Kind::parse("thunder"), None);
    assert_eq!(Kind::names(), "sandbox, easyslip, kbank, scb");
}

#[test]
fn unknown_names_in_routes_are_refused() {
    let e = Router::builder(reqwest::Client::new(), clock() as Arc<dyn Clock>)
        .build(routing(&["nope"]))
        .unwrap_err();
    assert!(e.0.contains("nope"));
    let e = Router::builder(reqwest::Client::new(), clock() as Arc<dyn Clock>)
        .spec(ConnectorSpec::new("sandbox", Kind::Sandbox, ""))
        .build(RoutingSpec::default())
        .unwrap_err();
    assert!(e.0.contains("sandbox"));
}

fn oauth(name: &str, sim: &Sim) -> ConnectorSpec {
    ConnectorSpec::new(name, Kind::EasySlip, sim.base_url()).with_client("client-1", "s3cret/+")
}

async fn oauth_sim() -> Sim {
    Sim::start(SimConfig {
        client_id: Some("client-1".into()),
        client_secret: Some("s3cret/+".into()),
        ..SimConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn tokens_are_reused_and_renewed_before_expiry() {
    let a = oauth_sim().await;
    let clock = clock();
    let r = router(vec![oauth("a", &a)], routing(&["a"]), clock.clone());
    for _ in 0..3 {
        assert_eq!(r.route(&kbank()).await.source.as_deref(), Some("a"));
    }
    assert_eq!(a.calls(Route::Token), 1);
    // 1799 s lifetime, 60 s margin: still reused at 1738 s, renewed from 1739 s.
    for (later, tokens) in [(1738, 1), (1, 2)] {
        clock.advance(time::Duration::seconds(later));
        r.route(&kbank()).await;
        assert_eq!(a.calls(Route::Token), tokens, "{later} s later");
    }

    // Short-lived tokens: a 10% margin (30 s → renewed from 27 s).
    a.set(Fault::TokenLifetime(30));
    for (later, tokens) in [(1800, 3), (26, 3), (1, 4)] {
        clock.advance(time::Duration::seconds(later));
        r.route(&kbank()).await;
        assert_eq!(
            a.calls(Route::Token),
            tokens,
            "short-lived, {later} s later"
        );
    }
}

#[tokio::test]
async fn a_401_causes_one_refresh_and_one_retry() {
    let a = oauth_sim().await;
    let r = router(vec![oauth("a", &a)], routing(&["a"]), clock());
    r.route(&kbank()).await;
    assert_eq!((a.calls(Route::Token), a.calls(Route::Bank)), (1, 1));
    a.set(Fault::RevokeTokenOnce);
    let out = r.route(&kbank()).await;
    assert_eq!(found_ref(&out.answer), Some(KBANK_REF));
    assert_eq!((a.calls(Route::Token), a.calls(Route::Bank)), (2, 3));

    // Refused again after the refresh: unavailable, no third request, no loop.
    let b = oauth_sim().await;
    b.set(Fault::Status(401));
    let r = router(vec![oauth("b", &b)], routing(&["b"]), clock());
    let out = r.route(&kbank()).await;
    assert!(matches!(out.answer, Outcome::Unavailable(_)));
    assert_eq!(out.attempts[0].outcome, "status");
    assert_eq!((b.calls(Route::Token), b.calls(Route::Bank)), (2, 2));
}

#[tokio::test]
async fn concurrent_requests_share_one_token_request() {
    let a = oauth_sim().await;
    let r = Arc::new(router(vec![oauth("a", &a)], routing(&["a"]), clock()));
    let tasks: Vec<_> = (0..12)
        .map(|_| {
            let r = r.clone();
            tokio::spawn(async move { r.route(&kbank()).await })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap().source.as_deref(), Some("a"));
    }
    assert_eq!(a.calls(Route::Token), 1);
    assert_eq!(a.calls(Route::Bank), 12);
}

#[tokio::test]
async fn token_client_auth_by_form_fields_and_token_outage() {
    let a = oauth_sim().await;
    let mut s = oauth("a", &a);
    s.token.client_auth = ClientAuth::Form;
    s.token.path = "/oauth/token".into();
    let r = router(vec![s], routing(&["a"]), clock());
    assert_eq!(r.route(&kbank()).await.source.as_deref(), Some("a"));

    let b = oauth_sim().await;
    b.set(Fault::TokenStatus(503));
    let r = router(vec![oauth("b", &b)], routing(&["b"]), clock());
    let out = r.route(&kbank()).await;
    assert_eq!(out.attempts[0].outcome, "server_error");
    assert_eq!(b.calls(Route::Bank), 0);
}

#[tokio::test]
async fn check_all_reaches_without_verifying() {
    let (a, t) = (sim().await, oauth_sim().await);
    let dead = ConnectorSpec::new("dead", Kind::EasySlip, dead_url().await).with_api_key("k");
    let mut wrong = es("wrong", &a);
    wrong.api_key = Some("bad".into());
    let r = router(
        vec![es("a", &a), oauth("t", &t), dead, wrong],
        routing(&["a"]),
        clock(),
    );
    let res = r.check_all().await;
    assert!(res[0].1.is_ok(), "{res:?}");
    assert!(res[1].1.is_ok(), "{res:?}");
    assert!(res[2].1.is_err());
    assert!(res[3].1.as_ref().unwrap_err().0.contains("401"));
    assert_eq!(a.calls(Route::Bank) + t.calls(Route::Bank), 0);
    assert_eq!(t.calls(Route::Token), 1);
}

#[test]
fn secrets_do_not_print() {
    let s = ConnectorSpec::new("a", Kind::EasySlip, "https://x/api")
        .with_api_key("key-s3cr3t")
        .with_client("id", "client-s3cr3t");
    let text = format!("{s:?}");
    assert!(!text.contains("s3cr3t"), "{text}");
    assert!(text.contains("<redacted>"));
}

#[tokio::test]
async fn status_serializes_camel_case() {
    let a = sim().await;
    let r = router(vec![es("a", &a)], routing(&["a"]), clock());
    r.route(&kbank()).await;
    let v = serde_json::to_value(r.status()).unwrap();
    assert_eq!(v[0]["state"], "closed");
    assert_eq!(v[0]["calls"], 1);
    assert!(v[0]["medianLatencyMs"].is_u64());
    assert!(v[0]["lastError"].is_null());
}
