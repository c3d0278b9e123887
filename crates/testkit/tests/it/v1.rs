//! `/api/v1` over HTTP against a real server, on SQLite and on PostgreSQL: the v1 envelope,
//! every v1 code that can be produced, duplicates answered as `duplicate_slip` without a
//! charge, image inputs, `/me` and payment-QR generation.

use base64::Engine;
use serde_json::{json, Value};
use std::sync::Arc;
use testkit::{both, Backend, TestApp};

use crate::common::{blank_png, png};

fn code(v: &Value) -> &str {
    v["message"].as_str().unwrap_or("<none>")
}

/// A v1 error: the HTTP status is repeated in the body, the code is the message.
#[track_caller]
fn assert_v1(got: &(u16, Value), status: u16, want: &str) {
    assert_v1_for("", got, status, want);
}

/// `assert_v1` naming the case in its failure message.
#[track_caller]
fn assert_v1_for(case: &str, got: &(u16, Value), status: u16, want: &str) {
    let (s, v) = got;
    assert_eq!((*s, code(v)), (status, want), "{case} {v}");
    assert_eq!(v["status"], status, "{case} {v}");
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A PromptPay payment QR (a valid QR, but not a slip).
fn promptpay() -> String {
    let pp = "00020101021129370016A000000677010111011300668123456785802TH53037645406150.506304";
    format!("{pp}{:04X}", slip_qr::crc16_ccitt_false(pp.as_bytes()))
}

async fn app(b: Backend) -> TestApp {
    testkit::spawn_with_loopback_images(b).await
}

async fn get(t: &TestApp, path_and_query: &str, key: &str) -> (u16, Value) {
    t.get(path_and_query, Some(key)).await
}

/// `GET /api/v1/verify` with the payload URL-encoded.
async fn verify_get(t: &TestApp, key: &str, payload: &str, check: Option<&str>) -> (u16, Value) {
    let mut q = vec![("payload", payload)];
    if let Some(c) = check {
        q.push(("checkDuplicate", c));
    }
    let r = t
        .http
        .get(format!("{}/api/v1/verify", t.base))
        .query(&q)
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// A v1 upload of `bytes` as the file part `field`, with no text fields.
async fn upload(t: &TestApp, key: &str, field: &str, bytes: Vec<u8>) -> (u16, Value) {
    t.upload("/api/v1/verify", key, field, bytes, &[]).await
}

/// A v1 upload of `image` as `file` with this `checkDuplicate` field.
async fn upload_checked(t: &TestApp, key: &str, image: &[u8], flag: &str) -> (u16, Value) {
    let fields = [("checkDuplicate", flag)];
    t.upload("/api/v1/verify", key, "file", image.to_vec(), &fields)
        .await
}

async fn used(t: &TestApp, key: &str) -> i64 {
    let (s, v) = get(t, "/api/v1/me", key).await;
    assert_eq!(s, 200, "{v}");
    v["data"]["usedQuota"].as_i64().unwrap()
}

both!(get_and_post_verify, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 15050).await;

    // Trailing whitespace from a scanner is tolerated.
    let (s, v) = verify_get(&t, key, &format!("{}\n", tr.payload), None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], 200);
    let d = &v["data"];
    assert_eq!(d["transRef"], tr.trans_ref);
    assert_eq!(d["payload"], tr.payload);
    assert_eq!(d["amount"]["amount"], 150.5);
    assert!(d["date"].as_str().unwrap().ends_with("+07:00"), "{d}");
    assert!(d["sender"].is_object() && d["receiver"].is_object(), "{d}");
    assert!(
        d.get("isDuplicate").is_none(),
        "the rawSlip object only: {d}"
    );
    assert!(v.get("success").is_none(), "v1 envelope: {v}");

    let tr2 = t.transfer("004", "006", 999).await;
    let v = t
        .post_ok(
            "/api/v1/verify",
            key,
            json!({"payload": tr2.payload, "checkDuplicate": false}),
        )
        .await;
    assert_eq!(v["data"]["transRef"], tr2.trans_ref);
    assert_eq!(v["data"]["amount"]["amount"], 9.99);

    // Without checkDuplicate a slip verifies again (and is charged, as in v2).
    let (s, _) = verify_get(&t, key, &tr.payload, Some("false")).await;
    assert_eq!(s, 200);
    assert_eq!(used(&t, key).await, 3);
    t.stop().await;
});

both!(duplicates_cost_nothing, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 15050).await;

    let (s, v) = verify_get(&t, key, &tr.payload, Some("true")).await;
    assert_eq!(s, 200, "first verification: {v}");
    assert_eq!(used(&t, key).await, 1);

    let got = verify_get(&t, key, &tr.payload, Some("true")).await;
    assert_v1(&got, 400, "duplicate_slip");
    // The slip as its first verification answered it (golden.rs has the exact shape).
    let d = &got.1["data"];
    assert_eq!(d["transRef"], tr.trans_ref);
    assert_eq!(d["amount"]["amount"], 150.5);
    assert_eq!(d["sender"]["bank"]["id"], "004");
    assert_eq!(
        d["date"].as_str().unwrap(),
        domain::clock::format_bangkok(tr.occurred_at)
    );
    let verified_at = d["verifiedAt"].as_str().unwrap();
    assert!(verified_at.ends_with("+07:00"), "{d}");
    assert_eq!(used(&t, key).await, 1, "a duplicate answer uses no quota");

    // POST, the flag as a JSON boolean and as text; another branch of the service too.
    let body = json!({"payload": tr.payload, "checkDuplicate": true});
    let got = t.post("/api/v1/verify", key, body).await;
    assert_v1(&got, 400, "duplicate_slip");
    assert_eq!(
        got.1["data"]["verifiedAt"], verified_at,
        "the earlier verification"
    );
    let (_, key2) = t.branch(&ten.service_id, "Branch 2", None).await;
    let body = json!({"payload": tr.payload, "checkDuplicate": "true"});
    let got = t.post("/api/v1/verify", &key2, body).await;
    assert_v1(&got, 400, "duplicate_slip");
    assert_eq!(used(&t, key).await, 1);

    // Another service has its own slips.
    let other = t.tenant(100).await;
    let (s, _) = verify_get(&t, &other.api_key, &tr.payload, Some("true")).await;
    assert_eq!(s, 200);
    t.stop().await;
});

both!(request_errors_use_no_quota, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 10000).await;

    let got = get(&t, "/api/v1/verify", key).await;
    assert_v1(&got, 400, "invalid_request");
    assert_eq!(got.1["data"]["errors"][0]["field"], "payload", "{}", got.1);
    assert!(got.1["data"]["errors"][0]["message"].is_string());
    let got = verify_get(&t, key, "  ", None).await;
    assert_v1(&got, 400, "invalid_request");
    let got = verify_get(&t, key, &"A".repeat(129), None).await;
    assert_v1(&got, 400, "invalid_request");
    assert_eq!(got.1["data"]["errors"][0]["field"], "payload");
    for flag in ["maybe", "1", "TRUE", ""] {
        let got = verify_get(&t, key, &tr.payload, Some(flag)).await;
        assert_v1(&got, 400, "invalid_check_duplicate");
    }
    let got = t
        .post(
            "/api/v1/verify",
            key,
            json!({"payload": tr.payload, "checkDuplicate": 1}),
        )
        .await;
    assert_v1(&got, 400, "invalid_check_duplicate");

    // Malformed QR text: changed character (CRC), plain text, a payment QR.
    let mut tampered = tr.payload.clone().into_bytes();
    tampered[20] = if tampered[20] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for p in [tampered.as_str(), "hello", promptpay().as_str()] {
        let got = verify_get(&t, key, p, None).await;
        assert_v1(&got, 400, "invalid_payload");
        let got = t.post("/api/v1/verify", key, json!({ "payload": p })).await;
        assert_v1(&got, 400, "invalid_payload");
    }
    // A well-formed slip the bank does not know.
    let unknown = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
    assert_v1(
        &verify_get(&t, key, &unknown, None).await,
        404,
        "slip_not_found",
    );

    // POST bodies: nothing, two inputs, wrong types, not JSON.
    let got = t.post("/api/v1/verify", key, json!({})).await;
    assert_v1(&got, 400, "invalid_request");
    assert_eq!(got.1["data"]["errors"][0]["field"], "payload");
    let got = t
        .post(
            "/api/v1/verify",
            key,
            json!({"payload": tr.payload, "url": "https://example.com/a.png"}),
        )
        .await;
    assert_v1(&got, 400, "invalid_request");
    let got = t
        .post(
            "/api/v1/verify",
            key,
            json!({"data": "AAAA", "image": "AAAA"}),
        )
        .await;
    assert_v1(&got, 400, "invalid_request");
    let got = t.post("/api/v1/verify", key, json!({"payload": 12})).await;
    assert_v1(&got, 400, "invalid_request");
    let got = t.post_raw("/api/v1/verify", Some(key), "{not json").await;
    assert_v1(&got, 400, "invalid_request");
    assert_eq!(got.1["data"]["errors"][0]["field"], "body");

    // Bangkok Bank: pending for five minutes.
    let bbl = t.transfer("002", "004", 5000).await;
    assert_v1(
        &verify_get(&t, key, &bbl.payload, None).await,
        404,
        "slip_pending",
    );

    assert_eq!(used(&t, key).await, 0);
    t.stop().await;
});

both!(images_base64_and_urls, |b: Backend| async move {
    let t = app(b).await;
    let ten = t.tenant(100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 15050).await;
    let image = png(&tr.payload);

    let (s, v) = upload_checked(&t, key, &image, "true").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["transRef"], tr.trans_ref);
    let got = upload_checked(&t, key, &image, "true").await;
    assert_v1(&got, 400, "duplicate_slip");
    let got = upload_checked(&t, key, &image, "yes").await;
    assert_v1(&got, 400, "invalid_check_duplicate");

    let (s, v) = t
        .post(
            "/api/v1/verify",
            key,
            json!({"data": format!("data:image/png;base64,{}", b64(&image))}),
        )
        .await;
    assert_eq!(s, 200, "Base64 in data: {v}");
    let (s, v) = t
        .post("/api/v1/verify", key, json!({"image": b64(&image)}))
        .await;
    assert_eq!(s, 200, "Base64 in image: {v}");
    let got = t
        .post(
            "/api/v1/verify",
            key,
            json!({"image": b64(&image), "checkDuplicate": true}),
        )
        .await;
    assert_v1(&got, 400, "duplicate_slip");

    let host = testkit::image_host(image).await;
    let v = t
        .post_ok(
            "/api/v1/verify",
            key,
            json!({"url": format!("{host}/slip.png")}),
        )
        .await;
    assert_eq!(v["data"]["payload"], tr.payload);
    assert_eq!(used(&t, key).await, 4);

    // Image errors.
    let got = upload(&t, key, "file", b"just some text".to_vec()).await;
    assert_v1(&got, 400, "invalid_image");
    let got = upload(&t, key, "file", vec![0u8; 4 * 1024 * 1024 + 1]).await;
    assert_v1(&got, 400, "image_size_too_large");
    let got = upload(&t, key, "file", blank_png()).await;
    assert_v1(&got, 404, "qrcode_not_found");
    let got = upload(&t, key, "file", png(&promptpay())).await;
    assert_v1(&got, 404, "slip_not_found");
    let got = t
        .post("/api/v1/verify", key, json!({"data": b64(&blank_png())}))
        .await;
    assert_v1(&got, 404, "qrcode_not_found");
    let got = t
        .post("/api/v1/verify", key, json!({"data": "!!!not base64"}))
        .await;
    assert_v1(&got, 400, "invalid_image");
    let big = b64(&vec![0u8; 4 * 1024 * 1024 + 3]);
    let got = t.post("/api/v1/verify", key, json!({ "image": big })).await;
    assert_v1(&got, 400, "image_size_too_large");
    let got = upload(&t, key, "other", blank_png()).await;
    assert_v1(&got, 400, "invalid_request");

    let blank_host = testkit::image_host(blank_png()).await;
    for (url, status, want) in [
        ("ftp://example.com/a.png".to_string(), 400, "invalid_url"),
        (
            "http://169.254.169.254/latest".to_string(),
            400,
            "invalid_url",
        ),
        ("http://10.1.2.3/a.png".to_string(), 400, "invalid_url"),
        ("not a url".to_string(), 400, "invalid_url"),
        (format!("{host}/missing"), 400, "invalid_url"),
        (format!("{host}/text"), 400, "invalid_url"),
        (format!("{host}/huge"), 400, "image_size_too_large"),
        (format!("{blank_host}/slip.png"), 404, "qrcode_not_found"),
    ] {
        let got = t.post("/api/v1/verify", key, json!({ "url": url })).await;
        assert_v1_for(&url, &got, status, want);
    }
    assert_eq!(used(&t, key).await, 4, "errors used no quota");
    t.stop().await;
});

both!(authentication_and_account_states, |b: Backend| async move {
    use domain::model::ServiceState;
    use services::admin::{BranchUpdate, ServiceUpdate};
    let (t, ten) = TestApp::spawn_with_tenant(b, 1).await;
    let key = ten.api_key.as_str();
    let svc = &t.app.services;
    let p = t.transfer("004", "014", 100).await.payload;

    assert_v1(&t.get("/api/v1/me", None).await, 401, "unauthorized");
    assert_v1(
        &t.get("/api/v1/me", Some("not-a-key")).await,
        401,
        "unauthorized",
    );
    let unknown = "3f2a1c4e-8b7d-4e6f-9a1b-2c3d4e5f6a7b";
    assert_v1(
        &verify_get(&t, unknown, &p, None).await,
        401,
        "unauthorized",
    );
    let got = t.post_raw("/api/v1/qr/generate", None, "{}").await;
    assert_v1(&got, 401, "unauthorized");

    let branch = |ips: Option<Vec<String>>, active: Option<bool>| BranchUpdate {
        allow_ips: ips,
        active,
        ..Default::default()
    };
    svc.admin()
        .update_branch(
            &ten.branch_id,
            &branch(Some(vec!["10.0.0.0/8".into()]), None),
        )
        .await
        .unwrap();
    assert_v1(&verify_get(&t, key, &p, None).await, 403, "access_denied");
    svc.admin()
        .update_branch(&ten.branch_id, &branch(Some(vec!["*".into()]), Some(false)))
        .await
        .unwrap();
    assert_v1(
        &get(&t, "/api/v1/me", key).await,
        403,
        "application_deactivated",
    );
    svc.admin()
        .update_branch(&ten.branch_id, &branch(None, Some(true)))
        .await
        .unwrap();

    let set = |upd: ServiceUpdate| {
        let (t, id) = (&t, &ten.service_id);
        async move { t.update_service(id, &upd).await }
    };
    for state in [ServiceState::Banned, ServiceState::Deleted] {
        set(ServiceUpdate {
            state: Some(state),
            ..Default::default()
        })
        .await;
        assert_v1(
            &verify_get(&t, key, &p, None).await,
            403,
            "application_deactivated",
        );
    }
    set(ServiceUpdate {
        state: Some(ServiceState::Active),
        ..Default::default()
    })
    .await;
    let owner = svc.admin().create_user("Owner").await.unwrap();
    set(ServiceUpdate {
        owner_id: Some(owner.id.clone()),
        ..Default::default()
    })
    .await;
    svc.admin().set_user_banned(&owner.id, true).await.unwrap();
    assert_v1(
        &verify_get(&t, key, &p, None).await,
        403,
        "application_deactivated",
    );
    svc.admin().set_user_banned(&owner.id, false).await.unwrap();

    // Quota 1: the first slip passes, the second is refused.
    let (s, v) = verify_get(&t, key, &p, None).await;
    assert_eq!(s, 200, "{v}");
    let p2 = t.transfer("004", "014", 200).await.payload;
    assert_v1(&verify_get(&t, key, &p2, None).await, 403, "quota_exceeded");

    let expiry = domain::Clock::now(&*t.clock) + time::Duration::days(2);
    set(ServiceUpdate {
        expires_at: Some(Some(expiry)),
        ..Default::default()
    })
    .await;
    let (s, v) = get(&t, "/api/v1/me", key).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"]["expiredAt"].as_str().unwrap(),
        domain::clock::format_bangkok(expiry)
    );
    t.clock.advance(time::Duration::days(2));
    assert_v1(
        &get(&t, "/api/v1/me", key).await,
        403,
        "application_expired",
    );
    t.stop().await;
});

both!(me_rate_limit_and_unknown_paths, |b: Backend| async move {
    use services::admin::ServiceUpdate;
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();

    let (s, v) = get(&t, "/api/v1/me", key).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v,
        json!({"status": 200, "data": {
            "application": "Test shop", "usedQuota": 0, "maxQuota": 100,
            "remainingQuota": 100, "expiredAt": null, "currentCredit": 0.0,
        }})
    );
    t.update_service(
        &ten.service_id,
        &ServiceUpdate {
            limit_quota: Some(None),
            ..Default::default()
        },
    )
    .await;
    let (_, v) = get(&t, "/api/v1/me", key).await;
    assert_eq!(v["data"]["maxQuota"], Value::Null, "unlimited: {v}");
    assert_eq!(v["data"]["remainingQuota"], Value::Null);

    for path in ["/api/v1/nope", "/api/v1", "/api/v1/verify/bank"] {
        assert_v1(&get(&t, path, key).await, 404, "not_found");
    }
    assert_v1(
        &t.call("DELETE", "/api/v1/me", key, None).await,
        404,
        "not_found",
    );
    assert_v1(
        &t.call("PUT", "/api/v1/verify", key, None).await,
        404,
        "not_found",
    );

    // 5 requests/s with bursts of 3 (a fresh branch); the 429 carries the v2 headers.
    let ten = t.tenant(100).await;
    let key = ten.api_key.as_str();
    t.set_rate_limit(&ten.service_id, Some(5)).await;
    for _ in 0..3 {
        let (s, v) = get(&t, "/api/v1/me", key).await;
        assert_eq!(s, 200, "{v}");
    }
    let resp = t
        .http
        .post(format!("{}/api/v1/qr/generate", t.base))
        .bearer_auth(key)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    let h = resp.headers().clone();
    assert_eq!(h["retry-after"], "1");
    assert_eq!(h["x-ratelimit-limit"], "5");
    assert_eq!(h["x-ratelimit-remaining"], "0");
    assert!(h.contains_key("x-ratelimit-reset"));
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v, json!({"status": 429, "message": "rate_limit_exceeded"}));
    t.stop().await;
});

/// A bank that is always down.
struct DownBank;

#[async_trait::async_trait]
impl connectors::Connector for DownBank {
    fn kind(&self) -> &'static str {
        "easyslip"
    }

    async fn lookup_bank(
        &self,
        _q: &connectors::SlipQuery,
    ) -> connectors::Outcome<domain::model::Transfer> {
        connectors::Outcome::unavailable(connectors::Cause::Connect, "down")
    }

    async fn lookup_wallet(
        &self,
        _q: &connectors::WalletQuery,
    ) -> connectors::Outcome<domain::model::WalletTransfer> {
        connectors::Outcome::unavailable(connectors::Cause::Connect, "down")
    }

    async fn check(&self) -> Result<(), connectors::CheckFailed> {
        Err("down".into())
    }
}

/// Production routed to `DownBank` alone.
fn down_router() -> Arc<connectors::Router> {
    let spec = connectors::ConnectorSpec::new("down", connectors::Kind::EasySlip, "");
    let routing = connectors::RoutingSpec {
        default: connectors::RouteSpec::new(["down"]),
        truewallet: connectors::RouteSpec::new(["down"]),
        ..connectors::RoutingSpec::default()
    };
    let clock: Arc<dyn domain::Clock> = Arc::new(domain::SystemClock);
    let router = connectors::Router::builder(reqwest::Client::new(), clock)
        .connector(spec, Arc::new(DownBank))
        .build(routing)
        .expect("router");
    Arc::new(router)
}

both!(server_errors, |b: Backend| async move {
    // Production's one connector is down.
    let t = TestApp::spawn_with(b, |s| s.set_router(down_router())).await;
    let ten = t.tenant(100).await;
    let p = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
    let got = verify_get(&t, &ten.api_key, &p, None).await;
    assert_v1(&got, 500, "api_server_error");
    t.app.store.close().await;
    let got = get(&t, "/api/v1/me", &ten.api_key).await;
    assert_v1(&got, 500, "server_error");
    assert!(got.1.get("data").is_none(), "no internals: {}", got.1);
    t.stop().await;
});

async fn generate(t: &TestApp, key: &str, body: Value) -> (u16, Value) {
    t.post("/api/v1/qr/generate", key, body).await
}

/// Generates a QR that must succeed, and reads back its payload.
async fn generated_qr(t: &TestApp, key: &str, body: Value) -> slip_qr::PaymentQr {
    let (s, v) = generate(t, key, body).await;
    assert_eq!(s, 200, "{v}");
    slip_qr::parse_payment_qr(v["data"]["payload"].as_str().unwrap()).unwrap()
}

both!(qr_generate, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();

    let (s, v) = generate(
        &t,
        key,
        json!({"type": "PROMPTPAY", "msisdn": "0812345678", "amount": 150.50}),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["status"], 200);
    assert_eq!(v["data"]["mime"], "image/png");
    let payload = v["data"]["payload"].as_str().unwrap();
    let png = base64::engine::general_purpose::STANDARD
        .decode(v["data"]["image"].as_str().unwrap())
        .unwrap();
    let read = reader::read_qr(&png, &reader::Limits::default()).unwrap();
    assert_eq!(
        read,
        vec![payload.to_string()],
        "the PNG carries the payload"
    );
    let qr = slip_qr::parse_payment_qr(payload).unwrap();
    assert_eq!(qr.proxy.as_deref(), Some("0066812345678"));
    assert_eq!(qr.amount.as_deref(), Some("150.50"));

    // Other PromptPay targets, a static QR, an amount as text, a merchant name.
    let qr = generated_qr(
        &t,
        key,
        json!({"type": "PROMPTPAY", "natId": "1101700207030", "merchantName": "My Shop"}),
    )
    .await;
    assert_eq!(qr.proxy.as_deref(), Some("1101700207030"));
    assert_eq!(qr.amount, None);
    generated_qr(
        &t,
        key,
        json!({"type": "PROMPTPAY", "eWalletId": "123456789012345", "amount": "20"}),
    )
    .await;

    // Merchant QRs need a biller id: the request's or the branch's.
    let got = generate(&t, key, json!({"type": "KSHOP", "ref1": "INV001"})).await;
    assert_v1(&got, 400, "invalid_request");
    assert_eq!(
        got.1["data"]["errors"],
        json!([{"field": "type", "message": "this branch has no biller id configured"}])
    );
    let qr = generated_qr(
        &t,
        key,
        json!({"type": "TUNGNGERN", "ref1": "INV001", "billerId": "010555012345601", "amount": 99}),
    )
    .await;
    assert_eq!(qr.biller_id.as_deref(), Some("010555012345601"));
    assert_eq!(qr.ref1.as_deref(), Some("INV001"));
    // The branch's configured biller id, when the request has none.
    let (s, v) = generate(&t, key, json!({"type": "MAE_MANEE", "ref1": "INV002"})).await;
    assert_eq!(s, 400, "{v}");
    let branch = t.caller(key).await.branch;
    t.update_branch(
        &branch.id,
        &services::admin::BranchUpdate {
            biller_id: Some("099400016550100".into()),
            ..Default::default()
        },
    )
    .await;
    let qr = generated_qr(&t, key, json!({"type": "MAE_MANEE", "ref1": "INV002"})).await;
    assert_eq!(qr.biller_id.as_deref(), Some("099400016550100"));

    // Each error code.
    let cases = [
        (
            json!({"type": "BITCOIN", "msisdn": "0812345678"}),
            "invalid_type",
        ),
        (
            json!({"type": "promptpay", "msisdn": "0812345678"}),
            "invalid_type",
        ),
        (json!({"type": 5}), "invalid_type"),
        (json!({"msisdn": "0812345678"}), "invalid_request"),
        (
            json!({"type": "PROMPTPAY", "msisdn": "+66812345678"}),
            "invalid_msisdn",
        ),
        (
            json!({"type": "PROMPTPAY", "msisdn": 812345678}),
            "invalid_msisdn",
        ),
        (
            json!({"type": "PROMPTPAY", "natId": "1101700207031"}),
            "invalid_natId",
        ),
        (
            json!({"type": "PROMPTPAY", "natId": "123"}),
            "invalid_natId",
        ),
        (
            json!({"type": "PROMPTPAY", "eWalletId": "123"}),
            "invalid_request",
        ),
        (json!({"type": "PROMPTPAY"}), "invalid_request"),
        (
            json!({"type": "PROMPTPAY", "msisdn": "0812345678", "natId": "1101700207030"}),
            "invalid_request",
        ),
        (
            json!({"type": "PROMPTPAY", "msisdn": "0812345678", "amount": 1.005}),
            "invalid_request",
        ),
        (
            json!({"type": "PROMPTPAY", "msisdn": "0812345678", "amount": -5}),
            "invalid_request",
        ),
        (
            json!({"type": "PROMPTPAY", "msisdn": "0812345678", "amount": 0}),
            "invalid_request",
        ),
        (
            json!({"type": "PROMPTPAY", "msisdn": "0812345678", "merchantName": "ร้าน"}),
            "invalid_request",
        ),
        (
            json!({"type": "KSHOP", "ref1": "inv001", "billerId": "010555012345601"}),
            "invalid_ref1",
        ),
        (
            json!({"type": "MAE_MANEE", "ref1": "A".repeat(21), "billerId": "010555012345601"}),
            "invalid_ref1",
        ),
        (
            json!({"type": "MAE_MANEE", "billerId": "010555012345601"}),
            "invalid_request",
        ),
        (
            json!({"type": "KSHOP", "ref1": "INV001", "billerId": "123"}),
            "invalid_request",
        ),
    ];
    for (body, want) in cases {
        let got = generate(&t, key, body.clone()).await;
        assert_eq!((got.0, code(&got.1)), (400, want), "{body} → {}", got.1);
        assert!(
            got.1["data"]["errors"][0]["field"].is_string(),
            "{body} → {}",
            got.1
        );
    }
    let got = t.post_raw("/api/v1/qr/generate", Some(key), "[1]").await;
    assert_v1(&got, 400, "invalid_request");

    assert_eq!(used(&t, key).await, 0, "generation is not charged");
    t.stop().await;
});

// Concurrent re-sends of one slip: one verification, every other answer `duplicate_slip`.
// Those that raced past the look-up were charged (docs/v1.md); the rest were not.
both!(concurrent_duplicates, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let p = t.transfer("004", "014", 4200).await.payload;
    let body = json!({"payload": p, "checkDuplicate": true});
    let answers = testkit::post_concurrently(
        &[t.base.as_str()],
        "/api/v1/verify",
        &ten.api_key,
        &body,
        12,
    )
    .await;
    let mut ok = 0;
    for got in &answers {
        match got.0 {
            200 => ok += 1,
            _ => {
                assert_v1(got, 400, "duplicate_slip");
                assert_eq!(got.1["data"]["amount"]["amount"], 42.0);
            }
        }
    }
    assert_eq!(ok, 1, "{answers:?}");
    let charged = used(&t, &ten.api_key).await;
    assert!((1..=12).contains(&charged), "{charged}");
    t.stop().await;
});
