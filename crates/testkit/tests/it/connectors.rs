//! Verifying real transfers through connectors, over real HTTP: one slipverify as the
//! `easyslip` upstream of another, and the simulator (`crates/sim`) as an upstream whose
//! faults a test switches and whose calls it counts.

use serde_json::{json, Value};
use sim::{Fault, Route, Sim};
use store::Space;
use testkit::receiver::Receiver;
use testkit::{both, post_concurrently, Backend, Tenant, TestApp};

use crate::common::{code, record_with};

const ADMIN: &str = "admin-token-for-the-connector-tests-0123456789";

/// A configuration whose default route is `route`, with one easyslip connector per
/// (name, base_url, key).
fn config(connectors: &[(&str, &str, &str)], route: &[&str]) -> String {
    let mut t = format!("[server]\nadmin_token = \"{ADMIN}\"\n");
    for (name, url, key) in connectors {
        t.push_str(&format!(
            "[connectors.{name}]\nkind = \"easyslip\"\nbase_url = \"{url}\"\napi_key = \"{key}\"\n\
             timeout_ms = 2000\nbreaker_failures = 2\nbreaker_cooldown_s = 30\n"
        ));
    }
    let list = route
        .iter()
        .map(|r| format!("\"{r}\""))
        .collect::<Vec<_>>()
        .join(", ");
    t.push_str(&format!(
        "[routing]\ndefault = [{list}]\ntruewallet = [{list}]\n"
    ));
    t
}

async fn sim() -> Sim {
    Sim::start_keyed().await
}

/// `config` with the simulator as the one connector, `sim`, of every route.
fn only_sim(s: &Sim) -> String {
    config(&[("sim", &s.base_url(), sim::TEST_KEY)], &["sim"])
}

/// A simulator, a node that asks it for every slip, and a tenant of quota 100 on the node.
async fn behind_sim(b: Backend) -> (Sim, TestApp, Tenant) {
    let s = sim().await;
    let t = TestApp::spawn_with_config(b, &only_sim(&s)).await;
    let ten = t.tenant(100).await;
    (s, t, ten)
}

/// The simulator's first bank slip (KBank → SCB, 1,500.50 baht).
fn sim_payload() -> String {
    slip_qr::encode_bank_slip("004", "013071152533APM07736")
}

async fn verify(t: &TestApp, key: &str, payload: &str) -> (u16, Value) {
    t.verify_bank(key, json!({"payload": payload, "checkDuplicate": true}))
        .await
}

async fn admin_connectors(t: &TestApp) -> Value {
    let resp = t.get_response("/admin/connectors", Some(ADMIN)).await;
    assert_eq!(resp.status(), 200);
    resp.json::<Value>().await.unwrap()["data"].clone()
}

#[tokio::test]
async fn a_slipverify_is_the_easyslip_upstream_of_another() {
    // A: the provider, on its sandbox ledger. B: routes every bank to A.
    let a = TestApp::spawn(Backend::Sqlite).await;
    let at = a.tenant(100).await;
    let tr = a.transfer("004", "014", 15_050).await;
    let b = TestApp::spawn_with_config(
        Backend::Sqlite,
        &config(&[("upstream", &a.base, &at.api_key)], &["upstream"]),
    )
    .await;
    let bt = b.tenant(100).await;

    let (s, direct) = verify(&a, &at.api_key, &tr.payload).await;
    assert_eq!(s, 200, "{direct}");
    let (s, via) = verify(&b, &bt.api_key, &tr.payload).await;
    assert_eq!(s, 200, "{via}");
    assert_eq!(via["data"]["isDuplicate"], false);
    assert_eq!(
        via["data"]["rawSlip"], direct["data"]["rawSlip"],
        "the same slip"
    );
    assert_eq!(via["data"]["amountInSlip"], 150.5);
    assert_eq!(a.used(&at.api_key).await, 2, "A answered B once");
    let rec = b
        .app
        .store
        .get_verification(Space::Production, &bt.service_id, "004", &tr.trans_ref)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.source.as_deref(), Some("upstream"));

    // A repeat is answered from B's own record: no call to A.
    let (s, again) = verify(&b, &bt.api_key, &tr.payload).await;
    assert_eq!(s, 200, "{again}");
    assert_eq!(again["data"]["isDuplicate"], true);
    assert_eq!(again["data"]["rawSlip"], via["data"]["rawSlip"]);
    assert_eq!(a.used(&at.api_key).await, 2, "no second call to A");

    // A says not found: so does B, and B charges nothing.
    let unknown = slip_qr::encode_bank_slip("004", "20261123UNKNOWN00001");
    let (s, v) = verify(&b, &bt.api_key, &unknown).await;
    assert_eq!((s, code(&v)), (404, "SLIP_NOT_FOUND"), "{v}");
    assert_eq!(b.used(&bt.api_key).await, 2);

    // TrueMoney through A's /v2/verify/truewallet.
    let w = a
        .wallet_transfer(5_000, Some("Sender"), Some("Shop"), Some("0812345678"))
        .await;
    let v = b
        .post_ok(
            "/v2/verify/truewallet",
            &bt.api_key,
            json!({"payload": w.payload}),
        )
        .await;
    assert_eq!(v["data"]["amountInSlip"], 50.0);

    // A goes away: a new slip cannot be confirmed, and B says so without charging.
    let other = a.transfer("004", "014", 700).await;
    a.stop().await;
    let (s, v) = verify(&b, &bt.api_key, &other.payload).await;
    assert_eq!((s, code(&v)), (500, "API_SERVER_ERROR"), "{v}");
    // The slip B confirmed before is still answered, from B's record.
    let (s, _) = verify(&b, &bt.api_key, &tr.payload).await;
    assert_eq!(s, 200);
    b.stop().await;
}

both!(
    bad_qrs_and_repeats_never_reach_a_connector,
    |b: Backend| async move {
        let (s, t, ten) = behind_sim(b).await;
        let good = sim_payload();
        let mut bad_crc = good.clone();
        let last = bad_crc.pop().unwrap();
        bad_crc.push(if last == '0' { '1' } else { '0' });
        let payment_qr = "00020101021129370016A000000677010111011300668123456785802TH53037646304";
        for p in [bad_crc.as_str(), payment_qr, "hello"] {
            let (st, v) = verify(&t, &ten.api_key, p).await;
            assert_eq!(st, 404, "{p}: {v}");
        }
        assert_eq!(s.calls(Route::Bank), 0, "nothing invalid was forwarded");
        for _ in 0..3 {
            let (st, v) = verify(&t, &ten.api_key, &good).await;
            assert_eq!(st, 200, "{v}");
        }
        assert_eq!(s.calls(Route::Bank), 1, "repeats are answered locally");
        t.stop().await;
    }
);

#[tokio::test]
async fn the_next_connector_answers_when_one_is_down_and_operators_see_it() {
    let down = sim().await;
    down.set(Fault::Status(503));
    let up = sim().await;
    let t = TestApp::spawn_with_config(
        Backend::Sqlite,
        &config(
            &[
                ("first", &down.base_url(), sim::TEST_KEY),
                ("second", &up.base_url(), sim::TEST_KEY),
            ],
            &["first", "second"],
        ),
    )
    .await;
    let ten = t.tenant(100).await;
    let (s, v) = verify(&t, &ten.api_key, &sim_payload()).await;
    assert_eq!(s, 200, "{v}");
    let rec = t
        .app
        .store
        .get_verification(
            Space::Production,
            &ten.service_id,
            "004",
            "013071152533APM07736",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rec.source.as_deref(), Some("second"));
    let status = admin_connectors(&t).await;
    let first = record_with(&status, "name", "first");
    assert_eq!(first["kind"], "easyslip");
    assert_eq!(first["calls"], 1);
    assert_eq!(first["failures"], 1);
    assert_eq!(first["state"], "closed", "one failure of two: still closed");
    assert!(
        first["lastError"].as_str().unwrap().contains("503"),
        "{first}"
    );
    assert!(
        !status.to_string().contains(sim::TEST_KEY),
        "no secret: {status}"
    );

    // A second failure opens the first connector's breaker: it is skipped, not called.
    let p2 = slip_qr::encode_bank_slip("014", "2026112214AbCdEfGhIjK");
    let (s, v) = verify(&t, &ten.api_key, &p2).await;
    assert_eq!(s, 200, "{v}");
    let calls = down.calls(Route::Bank);
    assert_eq!(calls, 2);
    let status = admin_connectors(&t).await;
    let first = record_with(&status, "name", "first");
    assert_eq!(first["state"], "open", "{first}");

    // Everything down: API_SERVER_ERROR, nothing charged.
    up.set(Fault::Status(500));
    let before = t.used(&ten.api_key).await;
    let unknown = slip_qr::encode_bank_slip("004", "20261123NEWREF000001");
    let (s, v) = verify(&t, &ten.api_key, &unknown).await;
    assert_eq!((s, code(&v)), (500, "API_SERVER_ERROR"), "{v}");
    assert_eq!(t.used(&ten.api_key).await, before);
    assert_eq!(
        down.calls(Route::Bank),
        calls,
        "an open breaker is not called"
    );
    t.stop().await;
}

both!(
    an_async_job_waits_out_a_connector_outage,
    |b: Backend| async move {
        let rx = Receiver::spawn().await;
        let s = sim().await;
        s.set(Fault::Status(503));
        let eg = rx.egress();
        let t =
            TestApp::spawn_with_config_and(b, &only_sim(&s), move |a| a.services.set_egress(eg))
                .await;
        let ten = t.tenant(100).await;
        let (st, v) = t
            .post(
                "/v2/verify/bank/async",
                &ten.api_key,
                json!({"payload": sim_payload(), "callbackUrl": rx.url("h")}),
            )
            .await;
        assert_eq!(st, 202, "{v}");
        // The first attempt meets the outage and is scheduled on the outage budget.
        s.wait_calls(Route::Bank, 1).await;
        let id = v["data"]["jobId"].as_str().unwrap().to_string();
        t.poll_job(&ten.api_key, &id, |j| j["status"] == "retrying")
            .await;
        assert!(rx.received().is_empty(), "no callback during an outage");
        s.clear();
        t.clock.advance(time::Duration::seconds(15));
        let got = rx.wait_for(1).await;
        let body = got[0].json();
        assert_eq!(body["status"], "success", "{body}");
        assert_eq!(body["data"]["rawSlip"]["transRef"], "013071152533APM07736");
        assert_eq!(t.used(&ten.api_key).await, 1);
        t.stop().await;
    }
);

both!(
    two_nodes_behind_one_connector_decide_duplicates_in_the_database,
    |b: Backend| async move {
        let s = sim().await;
        let cfg = only_sim(&s);
        let n1 = TestApp::spawn_with_config(b, &cfg).await;
        let n2 = n1.another_node_with_config(&cfg).await;
        let ten = n1.tenant(1_000).await;
        let body = json!({"payload": sim_payload(), "checkDuplicate": true});
        let bases = [n1.base.as_str(), n2.base.as_str()];
        let answers = post_concurrently(&bases, "/v2/verify/bank", &ten.api_key, &body, 40).await;
        let mut firsts = 0;
        for (st, v) in &answers {
            assert_eq!(*st, 200, "{v}");
            firsts += (v["data"]["isDuplicate"] == false) as i32;
        }
        assert_eq!(firsts, 1, "exactly one first verification");
        assert_eq!(n2.used(&ten.api_key).await, 40, "each charged once");
        // Only requests that raced the first confirmation asked the connector.
        assert!(s.calls(Route::Bank) >= 1);
        let (st, v) = verify(&n2, &ten.api_key, &sim_payload()).await;
        assert_eq!((st, v["data"]["isDuplicate"].as_bool()), (200, Some(true)));
        n2.stop().await;
        n1.stop().await;
    }
);

both!(
    a_test_branch_stays_on_the_ledger_beside_a_routed_production_branch,
    |b: Backend| async move {
        let (s, t, prod) = behind_sim(b).await;
        let (_, test_key) = t.test_branch(&prod.service_id, None).await;
        // A sandbox-ledger transfer: the test branch confirms it without asking the simulator.
        let tr = t.transfer("004", "014", 1_000).await;
        let (st, v) = verify(&t, &test_key, &tr.payload).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(s.calls(Route::Bank), 0);
        // Production asks its route, which has never heard of it.
        let (st, v) = verify(&t, &prod.api_key, &tr.payload).await;
        assert_eq!((st, code(&v)), (404, "SLIP_NOT_FOUND"), "{v}");
        assert_eq!(s.calls(Route::Bank), 1);
        // And the simulator's slip is not on the test branch's ledger.
        let (st, v) = verify(&t, &test_key, &sim_payload()).await;
        assert_eq!((st, code(&v)), (404, "SLIP_NOT_FOUND"), "{v}");
        assert_eq!(s.calls(Route::Bank), 1);
        assert_eq!(t.used(&prod.api_key).await, 0, "nothing charged");
        t.stop().await;
    }
);

// One list of connector kinds (`connectors::Kind::ALL`), which `config check` reuses: a
// configuration with a connector of each kind, its required settings given, passes the
// check and starts a node; an unknown kind is refused by the check, its key named.
both!(
    every_kind_config_check_accepts_starts,
    |b: Backend| async move {
        for kind in connectors::Kind::ALL {
            let name = format!("c_{}", kind.as_str());
            let mut toml = format!("[connectors.{name}]\nkind = \"{}\"\n", kind.as_str());
            for setting in kind.required_settings() {
                let value = match *setting {
                    "base_url" => "https://upstream.example",
                    other => other,
                };
                toml.push_str(&format!("{setting} = \"{value}\"\n"));
            }
            toml.push_str(&format!("[routing]\ndefault = [\"{name}\"]\n"));
            let path = std::env::temp_dir().join(format!("sv-kind-{}.toml", uuid::Uuid::new_v4()));
            std::fs::write(&path, &toml).unwrap();
            let checked = config::load(&config::Sources::new().file(&path));
            let _ = std::fs::remove_file(&path);
            let cfg = checked.unwrap_or_else(|e| panic!("{kind:?} refused by config check: {e}"));
            assert_eq!(cfg.connectors[&name].kind, Some(kind));
            // Starts: `spawn_with_config` panics when the node does not open.
            let t = TestApp::spawn_with_config(b, &toml).await;
            let status = admin_status_kinds(&t).await;
            assert!(
                status.contains(&kind.as_str().to_string()),
                "{kind:?}: {status:?}"
            );
            t.stop().await;
        }
        let path = std::env::temp_dir().join(format!("sv-kind-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(
            &path,
            "[connectors.t]\nkind = \"thunder\"\napi_key = \"k\"\n",
        )
        .unwrap();
        let refused = config::load(&config::Sources::new().file(&path));
        let _ = std::fs::remove_file(&path);
        let e = refused.expect_err("an unknown kind is refused").to_string();
        assert!(
        e.starts_with("connectors.t.kind: unknown kind \"thunder\" (one of: sandbox, easyslip, kbank, scb)"),
        "{e}"
    );
    }
);

/// The kinds of the node's connectors, as `GET /admin/connectors` lists them.
async fn admin_status_kinds(t: &TestApp) -> Vec<String> {
    t.app
        .services
        .status()
        .connector_status()
        .into_iter()
        .map(|s| s.kind)
        .collect()
}
