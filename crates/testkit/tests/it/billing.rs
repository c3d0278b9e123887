//! Subscriptions and auto-renewal over HTTP (issue 9), on SQLite and PostgreSQL: expiry and
//! cycle boundaries by the test clock, exactly one renewal under 100 concurrent requests
//! (also across two nodes), and an external billing endpoint on loopback that fails and
//! recovers, for sync requests and async jobs.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use domain::billing::{AutoRenew, CreditKind};
use domain::Satang;
use serde_json::{json, Value};
use services::subscriptions::NewPackage;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::receiver::Receiver;
use testkit::{both, Backend, Tenant, TestApp};

use crate::common::{code, v1_code};

async fn package(t: &TestApp, name: &str, quota: i64, days: u32, price_baht: i64) {
    t.app
        .services
        .billing()
        .set_package(&NewPackage {
            name: name.into(),
            quota,
            duration_days: days,
            price: Satang(price_baht * 100),
        })
        .await
        .expect("package");
}

async fn subscribe(t: &TestApp, ten: &Tenant, name: &str, auto: AutoRenew) {
    t.app
        .services
        .billing()
        .subscribe(&ten.service_id, name, Some(auto), false, "test")
        .await
        .expect("subscribe");
}

/// A package of `quota` per `days`-day period at `price_baht`, and the tenant subscribed to it
/// with auto-renew on.
async fn subscribed(t: &TestApp, ten: &Tenant, name: &str, quota: i64, days: u32, price_baht: i64) {
    package(t, name, quota, days, price_baht).await;
    subscribe(t, ten, name, AutoRenew::ON).await;
}

async fn top_up(t: &TestApp, ten: &Tenant, baht: i64) {
    t.app
        .services
        .billing()
        .move_credit(
            &ten.service_id,
            CreditKind::TopUp,
            Satang(baht * 100),
            None,
            "test",
        )
        .await
        .expect("top up");
}

/// Verifies one new slip; returns the status and body.
async fn verify_new(t: &TestApp, key: &str) -> (u16, Value) {
    let tr = t.transfer("004", "014", 10000).await;
    t.verify_bank(key, json!({"payload": tr.payload})).await
}

async fn info(t: &TestApp, key: &str) -> Value {
    let v = t.get_ok("/v2/info", key).await;
    v["data"]["application"].clone()
}

/// (kind, amount in satang, balance after) of every ledger row.
async fn ledger(t: &TestApp, ten: &Tenant) -> Vec<(String, i64, i64)> {
    let (_, entries) = t
        .app
        .services
        .billing()
        .credit_history(&ten.service_id)
        .await
        .unwrap();
    entries
        .iter()
        .map(|e| (e.kind.as_str().to_string(), e.amount, e.balance_after))
        .collect()
}

async fn renewals(t: &TestApp, ten: &Tenant) -> usize {
    let audit = t.service_audit(&ten.service_id).await;
    audit
        .iter()
        .filter(|a| a.action == "subscription.renew")
        .count()
}

both!(
    expiry_and_cycles_follow_the_clock,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        // Three verifications per cycle, for 60 days, 100 baht.
        package(&t, "Trial", 3, 60, 100).await;
        let off = AutoRenew::default();
        subscribe(&t, &ten, "Trial", off).await;
        let start = domain::Clock::now(&*t.clock);

        let app = info(&t, &ten.api_key).await;
        assert_eq!(
            app["package"],
            json!({"name": "Trial", "quota": 3, "durationDays": 60})
        );
        assert_eq!(app["quota"]["max"], 3);
        assert_eq!(app["autoRenew"]["expired"], false);
        assert_eq!(app["autoRenew"]["quota"], false);
        let expires = domain::clock::format_bangkok(start + time::Duration::days(60));
        assert_eq!(app["expiresAt"], expires.as_str());
        assert_eq!(app["autoRenew"]["expiresAt"], expires.as_str());
        assert_eq!(
            app["autoRenew"]["createdAt"],
            domain::clock::format_bangkok(start).as_str()
        );

        for _ in 0..3 {
            assert_eq!(verify_new(&t, &ten.api_key).await.0, 200);
        }
        let (s, v) = verify_new(&t, &ten.api_key).await;
        assert_eq!((s, code(&v)), (403, "QUOTA_EXCEEDED"), "{v}");

        // The next monthly cycle of the period starts with a fresh quota.
        t.clock.advance(time::Duration::days(31));
        assert_eq!(info(&t, &ten.api_key).await["quota"]["used"], 0);
        assert_eq!(verify_new(&t, &ten.api_key).await.0, 200);

        // One millisecond before the end it still serves; at the end it has expired.
        t.clock
            .set(start + time::Duration::days(60) - time::Duration::milliseconds(1));
        assert_eq!(verify_new(&t, &ten.api_key).await.0, 200);
        t.clock.set(start + time::Duration::days(60));
        let (s, v) = verify_new(&t, &ten.api_key).await;
        assert_eq!((s, code(&v)), (403, "SERVICE_EXPIRED"), "{v}");
        let (s, v) = t.get("/api/v1/me", Some(&ten.api_key)).await;
        assert_eq!((s, v1_code(&v)), (403, "application_expired"), "{v}");

        // Auto-renew on, but no credit: still expired, nothing drawn.
        t.app
            .services
            .billing()
            .set_auto_renew(&ten.service_id, AutoRenew::ON, "test")
            .await
            .unwrap();
        let (s, v) = verify_new(&t, &ten.api_key).await;
        assert_eq!((s, code(&v)), (403, "SERVICE_EXPIRED"), "{v}");
        assert!(ledger(&t, &ten).await.is_empty());

        // With credit, the next request renews: a new 60-day period from now, price drawn once.
        top_up(&t, &ten, 150).await;
        t.clock.advance(time::Duration::days(2));
        let renewed_at = domain::Clock::now(&*t.clock);
        let (s, v) = verify_new(&t, &ten.api_key).await;
        assert_eq!(s, 200, "{v}");
        let app = info(&t, &ten.api_key).await;
        assert_eq!(
            app["expiresAt"],
            domain::clock::format_bangkok(renewed_at + time::Duration::days(60)).as_str()
        );
        assert_eq!(app["quota"]["used"], 1);
        assert_eq!(app["autoRenew"]["expired"], true);
        assert_eq!(
            ledger(&t, &ten).await,
            vec![
                ("topup".into(), 15000, 15000),
                ("renewal".into(), -10000, 5000)
            ]
        );
        assert_eq!(renewals(&t, &ten).await, 1);

        // The next expiry finds 50 baht for a 100-baht package: expired, balance untouched.
        t.clock.advance(time::Duration::days(61));
        let (s, v) = verify_new(&t, &ten.api_key).await;
        assert_eq!((s, code(&v)), (403, "SERVICE_EXPIRED"), "{v}");
        assert_eq!(ledger(&t, &ten).await.len(), 2);
        assert_eq!(renewals(&t, &ten).await, 1);
        t.stop().await;
    }
);

/// On PostgreSQL a second node on the same database (its clock set to the first's), so
/// the database, not one process, has to decide races; none on SQLite.
async fn second_node(b: Backend, t: &TestApp) -> Option<TestApp> {
    match b {
        Backend::Postgres => {
            let n = t.another_node().await;
            n.clock.set(domain::Clock::now(&*t.clock));
            Some(n)
        }
        Backend::Sqlite => None,
    }
}

/// Fires one verification of a distinct slip per key-node pair, all at once.
/// A tenant subscribed to `package` (name, quota per 30 days, price in baht) with auto-renew
/// and `credit_baht` of credit, then 100 verifications at once. On PostgreSQL two nodes share
/// the work, so the database has to decide. Returns both nodes, the tenant and the answers.
async fn hundred_at_once(
    b: Backend,
    (name, quota, price_baht): (&str, i64, i64),
    credit_baht: i64,
) -> (TestApp, Option<TestApp>, Tenant, Vec<(u16, Value)>) {
    let t = TestApp::spawn(b).await;
    let n2 = second_node(b, &t).await;
    let ten = t.tenant(100).await;
    subscribed(&t, &ten, name, quota, 30, price_baht).await;
    top_up(&t, &ten, credit_baht).await;
    let nodes: Vec<&TestApp> = std::iter::once(&t).chain(n2.as_ref()).collect();
    let answers = verify_concurrently(&nodes, &ten.api_key, 100).await;
    (t, n2, ten, answers)
}

async fn verify_concurrently(nodes: &[&TestApp], key: &str, n: usize) -> Vec<(u16, Value)> {
    let mut payloads = Vec::with_capacity(n);
    for _ in 0..n {
        payloads.push(nodes[0].transfer("004", "014", 10000).await.payload);
    }
    let http = reqwest::Client::new();
    let tasks: Vec<_> = payloads
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let req = http
                .post(format!("{}/v2/verify/bank", nodes[i % nodes.len()].base))
                .bearer_auth(key)
                .json(&json!({"payload": p}));
            tokio::spawn(async move {
                let r = req.send().await.expect("request");
                let s = r.status().as_u16();
                (s, r.json::<Value>().await.expect("json"))
            })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

both!(
    hundred_requests_across_the_quota_boundary_renew_once,
    |b: Backend| async move {
        // Credit for one renewal and a half.
        let (t, n2, ten, answers) = hundred_at_once(b, ("Boundary", 50, 100), 150).await;
        let served = answers.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(served, 100, "{:?}", answers.iter().find(|(s, _)| *s != 200));
        assert_eq!(renewals(&t, &ten).await, 1, "exactly one renewal");
        assert_eq!(
            ledger(&t, &ten).await,
            vec![
                ("topup".into(), 15000, 15000),
                ("renewal".into(), -10000, 5000)
            ],
            "credit drawn once"
        );
        let app = info(&t, &ten.api_key).await;
        assert_eq!(app["quota"]["used"], 50);
        assert_eq!(app["quota"]["totalUsed"], 100);

        // The new period is used up too, and 50 baht cannot pay for another: every request
        // is refused with the normal code, and nothing more is drawn.
        let nodes: Vec<&TestApp> = std::iter::once(&t).chain(n2.as_ref()).collect();
        let answers = verify_concurrently(&nodes, &ten.api_key, 20).await;
        let refused = answers
            .iter()
            .filter(|(s, v)| *s == 403 && code(v) == "QUOTA_EXCEEDED")
            .count();
        assert_eq!(refused, 20, "{:?}", answers.first());
        assert_eq!(renewals(&t, &ten).await, 1);
        assert_eq!(ledger(&t, &ten).await.len(), 2);
        assert_eq!(info(&t, &ten.api_key).await["quota"]["used"], 50);
        if let Some(n) = n2 {
            n.stop().await;
        }
        t.stop().await;
    }
);

/// An external billing endpoint on loopback that can be switched off. It checks our
/// signature and approves each idempotency key once (the same reference every time).
#[derive(Clone, Default)]
struct BillingEndpoint {
    up: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
    bad_signatures: Arc<AtomicUsize>,
    approved: Arc<Mutex<HashMap<String, String>>>,
}

const BILLING_SECRET: &str = "billing-secret-for-tests-0123456789";

async fn billing_answer(
    State(e): State<BillingEndpoint>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    e.calls.fetch_add(1, Ordering::SeqCst);
    let ts: i64 = headers
        .get("x-billing-timestamp")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let sig = headers
        .get("x-billing-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if sig != domain::billing::sign_billing_request(BILLING_SECRET, ts, &body) {
        e.bad_signatures.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::UNAUTHORIZED, "{}".into());
    }
    if !e.up.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, "{}".into());
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or_default();
    let key = req["idempotencyKey"].as_str().unwrap_or("").to_string();
    let mut approved = e.approved.lock().unwrap();
    let n = approved.len();
    let reference = approved
        .entry(key)
        .or_insert_with(|| format!("inv-{n}"))
        .clone();
    (
        StatusCode::OK,
        json!({"approved": true, "reference": reference}).to_string(),
    )
}

async fn billing_endpoint() -> (BillingEndpoint, String) {
    let e = BillingEndpoint::default();
    let app = axum::Router::new()
        .route("/renew", axum::routing::post(billing_answer))
        .with_state(e.clone());
    let addr = testkit::serve_on_loopback(app).await;
    (e, format!("http://{addr}/renew"))
}

/// A node whose renewals go to `url`, whose jobs reach `rx`, with a short billing budget.
/// External billing (up), a webhook receiver, the app using both, and a tenant subscribed to
/// "One": one verification per period, auto-renewed.
async fn one_per_period_with_external_billing(
    b: Backend,
) -> (BillingEndpoint, Receiver, TestApp, Tenant) {
    let (endpoint, url) = billing_endpoint().await;
    let rx = Receiver::spawn().await;
    let t = external_billing_app(b, &url, &rx).await;
    let ten = t.tenant(100).await;
    subscribed(&t, &ten, "One", 1, 30, 100).await;
    (endpoint, rx, t, ten)
}

async fn external_billing_app(b: Backend, url: &str, rx: &Receiver) -> TestApp {
    let http = billing::HttpBilling::new(url, BILLING_SECRET, Duration::from_secs(2)).unwrap();
    let eg = rx.egress();
    TestApp::spawn_with(b, move |s| {
        s.set_billing(Arc::new(http));
        s.set_egress(eg);
        let mut sched = s.schedules().clone();
        sched.billing = vec![30, 60];
        s.set_schedules(sched);
    })
    .await
}

async fn submit_job(t: &TestApp, key: &str, rx: &Receiver) -> String {
    let tr = t.transfer("004", "014", 10000).await;
    t.submit_job_to(key, &tr.payload, &rx.url("hook")).await
}

both!(billing_outage_then_recovery, |b: Backend| async move {
    let (endpoint, rx, t, ten) = one_per_period_with_external_billing(b).await;
    // Billing is up for the first period's use, then goes down at the boundary.
    assert_eq!(verify_new(&t, &ten.api_key).await.0, 200);

    // Sync: the quota is used up and renewal needs billing, which is down.
    let (s, v) = verify_new(&t, &ten.api_key).await;
    assert_eq!(
        (s, code(&v)),
        (503, "RENEWAL_TEMPORARILY_UNAVAILABLE"),
        "{v}"
    );
    assert!(!v["error"]["message"].as_str().unwrap().contains("http"));
    let tr = t.transfer("004", "014", 10000).await;
    let r = t
        .http
        .post(format!("{}/v2/verify/bank", t.base))
        .bearer_auth(&ten.api_key)
        .json(&json!({"payload": tr.payload}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(r.headers()["retry-after"], "30");
    let tr = t.transfer("004", "014", 10000).await;
    let (s, v) = t
        .get(
            &format!("/api/v1/verify?payload={}", tr.payload),
            Some(&ten.api_key),
        )
        .await;
    assert_eq!((s, v1_code(&v)), (503, "api_server_error"), "{v}");
    assert_eq!(
        info(&t, &ten.api_key).await["quota"]["used"],
        1,
        "no quota used"
    );

    // Async: the job waits on the billing budget, with no callback meanwhile.
    let id = submit_job(&t, &ten.api_key, &rx).await;
    let j = t
        .poll_job(&ten.api_key, &id, |j| j["status"] == "retrying")
        .await;
    assert_eq!(j["error"], Value::Null);
    assert!(rx.received().is_empty(), "no callback during the outage");

    // Billing recovers; the job's next attempt renews and verifies.
    endpoint.up.store(true, Ordering::SeqCst);
    t.clock.advance(time::Duration::seconds(30));
    let j = t
        .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
        .await;
    assert_eq!(j["status"], "done", "{j}");
    let got = rx.received();
    assert_eq!(got.len(), 1, "one callback, the success");
    assert_eq!(got[0].json()["status"], "success");
    assert_eq!(renewals(&t, &ten).await, 1);
    assert_eq!(
        endpoint.approved.lock().unwrap().len(),
        1,
        "one renewal billed"
    );
    assert_eq!(endpoint.bad_signatures.load(Ordering::SeqCst), 0);
    // Billed externally: the local credit ledger did not move.
    assert!(ledger(&t, &ten).await.is_empty());
    let app = info(&t, &ten.api_key).await;
    assert_eq!(app["quota"]["used"], 1);

    // Sync again after recovery: the quota of 1 is used, so this renews once more.
    assert_eq!(verify_new(&t, &ten.api_key).await.0, 200);
    assert_eq!(renewals(&t, &ten).await, 2);
    t.stop().await;
});

both!(
    billing_outage_outlasting_the_budget_fails_the_job,
    |b: Backend| async move {
        let (endpoint, rx, t, ten) = one_per_period_with_external_billing(b).await;
        assert_eq!(verify_new(&t, &ten.api_key).await.0, 200);

        let id = submit_job(&t, &ten.api_key, &rx).await;
        t.poll_job(&ten.api_key, &id, |j| j["status"] == "retrying")
            .await;
        // The budget is 30 s then 60 s; billing stays down through both.
        t.clock.advance(time::Duration::seconds(30));
        t.poll_job(&ten.api_key, &id, |j| {
            j["attempts"] == 2 && j["status"] == "retrying"
        })
        .await;
        assert!(
            rx.received().is_empty(),
            "no failed callback before the budget ends"
        );
        t.clock.advance(time::Duration::seconds(60));
        let j = t
            .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        assert_eq!(j["status"], "failed", "{j}");
        assert_eq!(j["error"]["code"], "RENEWAL_TEMPORARILY_UNAVAILABLE");
        assert_eq!(j["attempts"], 3);
        let got = rx.received();
        assert_eq!(got.len(), 1, "exactly one callback, at the end");
        assert_eq!(got[0].json()["status"], "failed");
        assert_eq!(
            got[0].json()["error"]["code"],
            "RENEWAL_TEMPORARILY_UNAVAILABLE"
        );
        assert!(endpoint.calls.load(Ordering::SeqCst) >= 3);
        assert_eq!(renewals(&t, &ten).await, 0);
        assert_eq!(info(&t, &ten.api_key).await["quota"]["used"], 1);
        t.stop().await;
    }
);

both!(
    many_boundaries_at_once_draw_exactly_the_credit,
    |b: Backend| async move {
        // Ten per period, credit for exactly five renewals: 10 + 5 × 10 served, the rest refused.
        let (t, n2, ten, answers) = hundred_at_once(b, ("Ten", 10, 20), 100).await;
        let served = answers.iter().filter(|(s, _)| *s == 200).count();
        let refused = answers
            .iter()
            .filter(|(s, v)| *s == 403 && code(v) == "QUOTA_EXCEEDED")
            .count();
        assert_eq!((served, refused), (60, 40), "{:?}", answers.first());
        assert_eq!(renewals(&t, &ten).await, 5);
        let l = ledger(&t, &ten).await;
        assert_eq!(l.len(), 6);
        assert_eq!(l.last().unwrap().2, 0, "balance ends at exactly zero");
        assert!(l.iter().all(|(_, _, after)| *after >= 0));
        if let Some(n) = n2 {
            n.stop().await;
        }
        t.stop().await;
    }
);
