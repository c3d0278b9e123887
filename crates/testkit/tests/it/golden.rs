//! Issue 14: the exact JSON shapes clients parse (docs/compatibility.md), over HTTP, on SQLite
//! and PostgreSQL where the store is involved. Expected bodies are written out field by field
//! from the sandbox transfer, not built with the server's own code.

use domain::clock::format_bangkok;
use domain::model::{Party, Transfer, WalletTransfer};
use domain::Satang;
use serde_json::{json, Value};
use store::Space;
use testkit::{both, Backend, TestApp};

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn bank(code: &str) -> Value {
    let b = banks::find(code).expect("known bank");
    json!({"id": b.code, "name": b.name_th, "short": b.short})
}

fn account(p: &Party) -> Value {
    let mut name = json!({"th": p.name_th});
    if let Some(en) = &p.name_en {
        name["en"] = json!(en);
    }
    json!({"name": name, "bank": {"type": p.account_type, "account": p.account}})
}

/// The bank slip as spec 2.1's `rawSlip`; v1 leaves out a missing `merchantId`.
fn slip(t: &Transfer, v1: bool) -> Value {
    let baht = t.amount.as_baht();
    let mut receiver =
        json!({"bank": bank(&t.receiver.bank_code), "account": account(&t.receiver)});
    if !(v1 && t.receiver_merchant_id.is_none()) {
        receiver["merchantId"] = json!(t.receiver_merchant_id);
    }
    json!({
        "payload": t.payload,
        "transRef": t.trans_ref,
        "date": format_bangkok(t.occurred_at),
        "countryCode": "TH",
        "amount": {"amount": baht, "local": {"amount": baht, "currency": "THB"}},
        "fee": t.fee.as_baht(),
        "ref1": t.ref1, "ref2": t.ref2, "ref3": t.ref3,
        "sender": {"bank": bank(&t.sender.bank_code), "account": account(&t.sender)},
        "receiver": receiver,
    })
}

fn wallet_slip(w: &WalletTransfer) -> Value {
    json!({
        "payload": w.payload,
        "transactionId": w.transaction_id,
        "event": w.event,
        "date": format_bangkok(w.occurred_at),
        "amount": w.amount.as_baht(),
        "currency": "THB",
        "sender": {"name": w.sender_name, "phone": w.sender_phone},
        "receiver": {"name": w.receiver_name, "phone": w.receiver_phone},
    })
}

/// v2's `data` for a bank slip's first verification, without `matchAmount` and with no
/// receiver accounts registered; `amount` is the slip's, in baht.
fn first_bank_data(t: &Transfer, amount: f64) -> Value {
    json!({
        "remark": "",
        "isDuplicate": false,
        "amountInSlip": amount,
        "matchedAccount": null,
        "mismatches": [],
        "rawSlip": slip(t, false),
    })
}

/// The `data` of the answer to `body` at `path`, whatever its status.
async fn answer_data(t: &TestApp, path: &str, key: &str, body: Value) -> Value {
    let (_, v) = t.post(path, key, body).await;
    v["data"].clone()
}

async fn wallet_transfer(t: &TestApp, satang: i64) -> WalletTransfer {
    t.wallet_transfer(satang, Some("สมหญิง ดีใจ"), None, Some("0812345678"))
        .await
}

/// Replaces `data.verifiedAt` (checked to be Thai time) so the rest compares exactly.
fn take_verified_at(v: &mut Value) -> String {
    let at = v["data"]["verifiedAt"]
        .as_str()
        .expect("verifiedAt")
        .to_string();
    assert!(at.ends_with("+07:00"), "{at}");
    v["data"].as_object_mut().unwrap().remove("verifiedAt");
    at
}

both!(v1_success_and_bank_duplicate, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 15050).await;
    let body = json!({"payload": tr.payload, "checkDuplicate": true});

    let v = t.post_ok("/api/v1/verify", key, body.clone()).await;
    assert_eq!(v, json!({"status": 200, "data": slip(&tr, true)}));
    assert!(v["data"]["receiver"].get("merchantId").is_none());

    // The duplicate answers the slip itself plus the first verification's time.
    let (s, mut v) = t.post("/api/v1/verify", key, body).await;
    assert_eq!(s, 400, "{v}");
    take_verified_at(&mut v);
    assert_eq!(
        v,
        json!({"status": 400, "message": "duplicate_slip", "data": slip(&tr, true)})
    );
    assert_eq!(v["data"]["amount"]["amount"], 150.5);

    // v2 keeps `merchantId: null` (spec 2.1).
    let v = t.verify_bank_ok(key, json!({"payload": tr.payload})).await;
    assert_eq!(v["data"]["rawSlip"], slip(&tr, false));
    assert_eq!(v["data"]["rawSlip"]["receiver"]["merchantId"], Value::Null);
    t.stop().await;
});

both!(v1_truewallet_duplicate, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let w = wallet_transfer(&t, 5025).await;
    let body = json!({"payload": w.payload, "checkDuplicate": true});
    let v = t
        .post_ok("/api/v1/verify/truewallet", key, body.clone())
        .await;
    assert_eq!(v, json!({"status": 200, "data": wallet_slip(&w)}));

    let (s, mut v) = t.post("/api/v1/verify/truewallet", key, body).await;
    assert_eq!(s, 400, "{v}");
    take_verified_at(&mut v);
    assert_eq!(
        v,
        json!({"status": 400, "message": "duplicate_slip", "data": wallet_slip(&w)})
    );
    t.stop().await;
});

// A verification recorded before migration 0011 has no stored transfer: its duplicate keeps
// the reduced shape.
both!(
    v1_duplicate_of_a_pre_migration_row,
    |b: Backend| async move {
        use domain::clock::Clock;
        use store::VerificationRecord;
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let tr = t.transfer("004", "014", 15050).await;
        let verified = t.clock.now();
        t.app
            .store
            .charge_and_record(&VerificationRecord {
                service_id: ten.service_id.clone(),
                branch_id: ten.branch_id.clone(),
                sending_bank: "004".into(),
                trans_ref: tr.trans_ref.clone(),
                amount: tr.amount,
                transferred_at: tr.occurred_at,
                verified_at: verified,
                job_id: None,
                idempotency_key: None,
                transfer: None,
                source: None,
            })
            .await
            .unwrap();
        let (s, v) = t
            .post(
                "/api/v1/verify",
                &ten.api_key,
                json!({"payload": tr.payload, "checkDuplicate": true}),
            )
            .await;
        assert_eq!(s, 400, "{v}");
        assert_eq!(
            v,
            json!({"status": 400, "message": "duplicate_slip", "data": {
                "transRef": tr.trans_ref,
                "date": format_bangkok(tr.occurred_at),
                "amount": 150.5,
                "sendingBank": "004",
                "verifiedAt": format_bangkok(verified),
            }})
        );
        t.stop().await;
    }
);

/// What the store kept of a service's verification of this slip.
async fn stored(
    t: &TestApp,
    service: &domain::ServiceId,
    bank: &str,
    reference: &str,
) -> store::VerificationRecord {
    let rec = t
        .app
        .store
        .get_verification(Space::Production, service, bank, reference)
        .await;
    rec.unwrap().expect("a stored verification")
}

// The record a verification leaves carries the transfer and its source (what the next piece
// of work answers repeats from).
both!(
    the_verification_keeps_the_transfer,
    |b: Backend| async move {
        use domain::model::VerifiedTransfer;
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let tr = t.transfer("004", "014", 15050).await;
        let body = json!({"payload": tr.payload});
        t.verify_bank_ok(&ten.api_key, body).await;
        let rec = stored(&t, &ten.service_id, "004", &tr.trans_ref).await;
        assert_eq!(rec.transfer, Some(VerifiedTransfer::Bank(Box::new(tr))));
        assert_eq!(rec.source.as_deref(), Some("sandbox"));

        let w = wallet_transfer(&t, 100).await;
        let body = json!({"payload": w.payload});
        t.post_ok("/v2/verify/truewallet", &ten.api_key, body).await;
        let rec = stored(&t, &ten.service_id, "TRUEMONEY", &w.transaction_id).await;
        assert_eq!(rec.transfer, Some(VerifiedTransfer::Wallet(Box::new(w))));
        // The source is the name of the connector that answered (the built-in one: `sandbox`).
        assert_eq!(rec.source.as_deref(), Some("sandbox"));
        t.stop().await;
    }
);

both!(v2_optional_fields, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 15050).await;
    let v = t.verify_bank_ok(key, json!({"payload": tr.payload})).await;
    assert_eq!(v["data"], first_bank_data(&tr, 150.5));
    let body = json!({"payload": tr.payload, "matchAmount": 99});
    let data = answer_data(&t, "/v2/verify/bank", key, body).await;
    assert_eq!(
        keys(&data),
        [
            "remark",
            "isDuplicate",
            "amountInSlip",
            "isAmountMatched",
            "amountInOrder",
            "matchedAccount",
            "mismatches",
            "rawSlip"
        ]
    );
    assert_eq!(data["isAmountMatched"], false);
    assert_eq!(data["amountInOrder"], 99.0);
    assert_eq!(data["mismatches"], json!(["amount_not_match"]));

    // TrueMoney: the same rule.
    let w = wallet_transfer(&t, 5025).await;
    let v = t
        .post_ok("/v2/verify/truewallet", key, json!({"payload": w.payload}))
        .await;
    assert_eq!(
        v["data"],
        json!({
            "remark": "",
            "isDuplicate": false,
            "amountInSlip": 50.25,
            "matchedAccount": null,
            "mismatches": [],
            "rawSlip": wallet_slip(&w),
        })
    );
    let w = wallet_transfer(&t, 5025).await;
    let body = json!({"payload": w.payload, "matchAmount": 50.25});
    let data = answer_data(&t, "/v2/verify/truewallet", key, body).await;
    assert_eq!(data["isAmountMatched"], true);
    assert_eq!(data["amountInOrder"], 50.25);
    t.stop().await;
});

both!(
    webhook_and_polled_job_without_match_amount,
    |b: Backend| async move {
        let (rx, t, ten, tr, id) = TestApp::with_receiver_and_job(b, "004", 15050, "hook").await;
        let expected = first_bank_data(&tr, 150.5);
        let got = rx.wait_for(1).await;
        assert_eq!(got[0].json()["data"], expected);
        let job = t
            .poll_job(&ten.api_key, &id, |j| j["status"] == "done")
            .await;
        assert_eq!(job["data"], expected);
        t.stop().await;
    }
);

both!(info_and_me, |b: Backend| async move {
    use domain::billing::CreditKind;
    use services::subscriptions::NewPackage;
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let (_, v) = t.get("/v2/info", Some(key)).await;
    assert_eq!(v["data"]["account"], json!({"email": null, "credit": 0.0}));
    assert_eq!(v["data"]["product"], json!({"name": null}));
    let (_, v) = t.get("/api/v1/me", Some(key)).await;
    assert_eq!(v["data"]["currentCredit"], 0.0);

    let svc = &t.app.services;
    svc.billing()
        .move_credit(
            &ten.service_id,
            CreditKind::TopUp,
            Satang(25_050),
            None,
            "test",
        )
        .await
        .unwrap();
    svc.billing()
        .set_package(&NewPackage {
            name: "Standard".into(),
            quota: 5000,
            duration_days: 30,
            price: Satang(0),
        })
        .await
        .unwrap();
    svc.billing()
        .subscribe(&ten.service_id, "Standard", None, false, "test")
        .await
        .unwrap();
    let (_, v) = t.get("/v2/info", Some(key)).await;
    assert_eq!(
        v["data"]["account"],
        json!({"email": null, "credit": 250.5})
    );
    assert_eq!(v["data"]["product"], json!({"name": "Standard"}));
    let (_, v) = t.get("/api/v1/me", Some(key)).await;
    assert_eq!(keys(&v["data"]).last(), Some(&"currentCredit"));
    assert_eq!(v["data"]["currentCredit"], 250.5);
    t.stop().await;
});

async fn upload(t: &TestApp, path: &str, key: &str, field: &str, bytes: Vec<u8>) -> (u16, Value) {
    t.upload(path, key, field, bytes, &[]).await
}

#[tokio::test]
async fn uploads_under_either_name_and_fake_gifs() {
    let t = TestApp::spawn(Backend::Sqlite).await;
    let ten = t.tenant(100).await;
    let key = ten.api_key.as_str();
    let tr = t.transfer("004", "014", 15050).await;
    let png = server::slip_image::png_bytes(&tr.payload, "004").unwrap();
    let (s, v) = upload(&t, "/v2/verify/bank", key, "file", png).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["data"]["rawSlip"]["transRef"], tr.trans_ref);

    // 170 bytes that merely start like a GIF: not an image, whatever the "header" declares.
    let mut gif = b"GIF89a".to_vec();
    gif.extend(std::iter::repeat_n(b' ', 164));
    let (s, v) = upload(&t, "/v2/verify/bank", key, "image", gif.clone()).await;
    assert_eq!(
        (s, &v["error"]["code"]),
        (400, &json!("INVALID_IMAGE_FORMAT")),
        "{v}"
    );
    let (s, v) = upload(&t, "/api/v1/verify", key, "file", gif).await;
    assert_eq!((s, &v["message"]), (400, &json!("invalid_image")), "{v}");
    t.stop().await;
}

// The default plan (no per-service rate) lets one branch send a burst of 100 requests.
#[tokio::test]
async fn default_plan_allows_a_burst_of_100() {
    let t = TestApp::spawn(Backend::Sqlite).await;
    let ten = t.tenant(100).await;
    t.set_rate_limit(&ten.service_id, None).await;
    // The test clock stands still: nothing refills between requests.
    for i in 0..100 {
        let (s, v) = t.get("/v2/info", Some(&ten.api_key)).await;
        assert_eq!(s, 200, "request {i}: {v}");
    }
    let (s, v) = t.get("/v2/info", Some(&ten.api_key)).await;
    assert_eq!(
        (s, &v["error"]["code"]),
        (429, &json!("RATE_LIMIT_EXCEEDED"))
    );
    t.stop().await;
}
