//! `/v2/bank-accounts` and `matchAccount` over HTTP, on SQLite and PostgreSQL.

use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::code;

fn shop_account(number: &str) -> Value {
    json!({
        "bankCode": "014",
        "bankNumber": number,
        "nameTh": "บริษัท ร้านตัวอย่าง จำกัด",
        "nameEn": "Sample Shop Co., Ltd.",
        "type": "JURISTIC",
    })
}

/// An account of the person `ก` (`A`), with `extraVerify` when given.
fn account(bank: &str, number: &str, kind: &str, extra_verify: Option<&str>) -> Value {
    let mut v =
        json!({"bankCode": bank, "bankNumber": number, "nameTh": "ก", "nameEn": "A", "type": kind});
    if let Some(extra) = extra_verify {
        v["extraVerify"] = json!(extra);
    }
    v
}

/// Registers `body` as a bank account of `key`'s branch (a 201); returns the new account's
/// id and the answer's `data`.
async fn register(t: &TestApp, key: &str, body: Value) -> (String, Value) {
    let (s, v) = t.post("/v2/bank-accounts", key, body).await;
    assert_eq!(s, 201, "{v}");
    let id = v["data"]["id"].as_str().expect("an id").to_string();
    (id, v["data"].clone())
}

/// The `data` of a v2 verification (a 200) of `body`.
async fn verified(t: &TestApp, key: &str, body: Value) -> Value {
    t.verify_bank_ok(key, body).await["data"].clone()
}

async fn transfer_to(t: &TestApp, to: &str, account: &str, satang: i64) -> String {
    t.transfer_into("004", to, Some(account), satang)
        .await
        .payload
}

both!(bank_account_lifecycle_and_errors, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let (_, other_key) = t.branch(&ten.service_id, "Other", None).await;
    let key = ten.api_key.as_str();

    let (id, data) = register(&t, key, shop_account("123-4-56789-0")).await;
    assert_eq!(data["bankNumber"], "1234567890");
    assert_eq!(data["type"], "JURISTIC");
    assert_eq!(data["bank"]["shortCode"], "SCB");
    assert_eq!(data["extraVerify"], Value::Null);

    // The same bank and number again, from this branch or another of the service.
    for k in [key, other_key.as_str()] {
        t.post_err(
            "/v2/bank-accounts",
            k,
            shop_account("1234567890"),
            409,
            "BANK_ACCOUNT_DUPLICATE",
        )
        .await;
    }
    // Each body is refused with a 400 and the code it is listed under.
    let cases = [
        (
            "INVALID_BANK_CODE",
            vec![account("999", "1234567890", "PERSONAL", None)],
        ),
        (
            "INVALID_EXTRA_VERIFY",
            vec![
                account("002", "1234567890", "PERSONAL", None),
                account("002", "1234567890", "PERSONAL", Some("MSISDN")),
            ],
        ),
        (
            "VALIDATION_ERROR",
            vec![
                account("PROMPTPAY", "0812345678", "PERSONAL", Some("NATID")),
                account("014", "12ab", "PERSONAL", None),
                account("014", "1234567899", "COMPANY", None),
                json!({}),
            ],
        ),
    ];
    for (want, bodies) in cases {
        for body in bodies {
            let (s, v) = t.post("/v2/bank-accounts", key, body.clone()).await;
            assert_eq!((s, code(&v)), (400, want), "{body} → {v}");
        }
    }
    let (_, v) = t.post("/v2/bank-accounts", key, json!({})).await;
    let msg = v["error"]["message"].as_str().unwrap();
    for field in ["bankCode", "bankNumber", "nameTh", "nameEn", "type"] {
        assert!(msg.contains(&format!("{field}: ")), "{msg}");
    }

    let (bbl, _) = register(
        &t,
        key,
        json!({"bankCode": "002", "bankNumber": "9876543210", "nameTh": "นาย สมชาย ใจดี", "nameEn": "MR. SOMCHAI JAIDEE", "type": "PERSONAL", "extraVerify": "NAME_NUMBER"}),
    )
    .await;
    register(
        &t,
        key,
        json!({"bankCode": "PROMPTPAY", "bankNumber": "081-234-5678", "nameTh": "นาย สมชาย ใจดี", "nameEn": "SOMCHAI JAIDEE", "type": "PERSONAL", "extraVerify": "MSISDN"}),
    )
    .await;

    let v = t.get_ok("/v2/bank-accounts", key).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 3);
    let (_, v) = t.get("/v2/bank-accounts", Some(&other_key)).await;
    assert_eq!(
        v["data"].as_array().unwrap().len(),
        0,
        "another branch's accounts are not listed"
    );
    let (s, v) = t.get(&format!("/v2/bank-accounts/{id}"), Some(key)).await;
    assert_eq!((s, v["data"]["id"].as_str()), (200, Some(id.as_str())));
    t.get_err(
        &format!("/v2/bank-accounts/{id}"),
        &other_key,
        404,
        "BANK_ACCOUNT_NOT_FOUND",
    )
    .await;

    let bbl_path = format!("/v2/bank-accounts/{bbl}");
    let (s, v) = t
        .call(
            "PATCH",
            &bbl_path,
            key,
            Some(json!({"extraVerify": "NUMBER"})),
        )
        .await;
    assert_eq!(
        (s, v["data"]["extraVerify"].as_str()),
        (200, Some("NUMBER")),
        "{v}"
    );
    let other = other_key.as_str();
    for (why, caller, extra_verify, status, want) in [
        (
            "unknown option",
            key,
            json!("BOGUS"),
            400,
            "INVALID_EXTRA_VERIFY",
        ),
        (
            "BBL requires one",
            key,
            Value::Null,
            400,
            "INVALID_EXTRA_VERIFY",
        ),
        (
            "another branch's",
            other,
            json!("NAME"),
            404,
            "BANK_ACCOUNT_NOT_FOUND",
        ),
    ] {
        let body = json!({ "extraVerify": extra_verify });
        let (s, v) = t.call("PATCH", &bbl_path, caller, Some(body)).await;
        assert_eq!((s, code(&v)), (status, want), "{why}: {v}");
    }

    // Delete: not another branch's, then once.
    let id_path = format!("/v2/bank-accounts/{id}");
    for (why, caller, status, want) in [
        ("another branch's", other, 404, "BANK_ACCOUNT_NOT_FOUND"),
        ("own", key, 200, "<none>"),
        ("already deleted", key, 404, "BANK_ACCOUNT_NOT_FOUND"),
    ] {
        let (s, v) = t.call("DELETE", &id_path, caller, None).await;
        assert_eq!((s, code(&v)), (status, want), "{why}: {v}");
    }
    // Deleted: the number is free again.
    register(&t, key, shop_account("1234567890")).await;
    t.stop().await;
});

both!(match_account_finds_the_receiver, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let (id, _) = register(&t, key, shop_account("1234567890")).await;

    let ours = transfer_to(&t, "014", "1234567890", 15050).await;
    let body = json!({"payload": ours, "matchAccount": true, "matchAmount": 150.5});
    let d = verified(&t, key, body).await;
    assert_eq!(d["matchedAccount"]["id"], id.as_str());
    assert_eq!(d["matchedAccount"]["bankNumber"], "1234567890");
    assert_eq!(d["matchedAccount"]["type"], "JURISTIC");
    assert_eq!(d["matchedAccount"]["bank"]["shortCode"], "SCB");
    assert_eq!(d["mismatches"], json!([]));

    // Another account number (a visible digit differs), and a wrong amount.
    let theirs = transfer_to(&t, "014", "1234557890", 15050).await;
    let body = json!({"payload": theirs, "matchAccount": true, "matchAmount": 99});
    let d = verified(&t, key, body).await;
    assert_eq!(d["matchedAccount"], Value::Null);
    assert_eq!(
        d["mismatches"],
        json!(["amount_not_match", "account_not_match"])
    );

    // Same number at another bank: no match.
    let other_bank = transfer_to(&t, "004", "1234567890", 100).await;
    let (_, v) = t
        .verify_bank(key, json!({"payload": other_bank, "matchAccount": true}))
        .await;
    assert_eq!(v["data"]["matchedAccount"], Value::Null);

    // Without matchAccount the field is still there, null (clients parse it as always present).
    let again = transfer_to(&t, "014", "1234567890", 100).await;
    let (_, v) = t.verify_bank(key, json!({"payload": again})).await;
    assert_eq!(v["data"]["matchedAccount"], Value::Null, "{v}");
    assert_eq!(v["data"]["mismatches"], json!([]));
    t.stop().await;
});
