//! TrueMoney Wallet slips over HTTP (`POST /v2/verify/truewallet`), on SQLite and PostgreSQL.

use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::{record_with, v1_code};

both!(
    verifies_wallet_slips_by_payload_and_image,
    |b: Backend| async move {
        use base64::Engine;
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let key = ten.api_key.as_str();
        let w = t
            .wallet_transfer(5025, Some("สมหญิง ดีใจ"), None, Some("0812345678"))
            .await;
        let v = t
            .post_ok(
                "/v2/verify/truewallet",
                key,
                json!({"payload": w.payload, "checkDuplicate": true, "matchAmount": 50.25}),
            )
            .await;
        let d = &v["data"];
        assert_eq!(d["isDuplicate"], false);
        assert_eq!(d["amountInSlip"], 50.25);
        assert_eq!(d["isAmountMatched"], true);
        assert_eq!(d["mismatches"], json!([]));
        let r = &d["rawSlip"];
        assert_eq!(r["transactionId"], w.transaction_id.as_str());
        assert_eq!(r["event"], "P2P");
        assert_eq!(r["currency"], "THB");
        assert_eq!(r["sender"]["name"], "สมหญิง ดีใจ");
        assert_eq!(r["receiver"]["phone"], "xxx-xxx-5678");
        assert!(r["date"].as_str().unwrap().ends_with("+07:00"));

        // The same slip as an image: a duplicate now.
        let png = server::slip_image::png_bytes(&w.payload, "TRUEMONEY").unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
        let v = t
            .post_ok(
                "/v2/verify/truewallet",
                key,
                json!({"base64": b64, "checkDuplicate": true}),
            )
            .await;
        assert_eq!(v["data"]["isDuplicate"], true);

        // A bank slip, an unknown wallet transaction, garbage.
        let bank = t.transfer("004", "014", 100).await;
        let unknown = slip_qr::encode_truemoney_slip("P2P", "50000000000001", "22112026");
        for (payload, why) in [
            (bank.payload.as_str(), "bank slip"),
            (unknown.as_str(), "no transfer"),
            ("hello", "not a valid TrueMoney"),
        ] {
            let v = t
                .post_err(
                    "/v2/verify/truewallet",
                    key,
                    json!({"payload": payload}),
                    404,
                    "SLIP_NOT_FOUND",
                )
                .await;
            assert!(v["error"]["message"].as_str().unwrap().contains(why), "{v}");
        }
        // A wallet slip sent to the bank endpoint is explained too.
        t.verify_bank_err(key, json!({"payload": w.payload}), 404, "SLIP_NOT_FOUND")
            .await;
        let (_, v) = t.get("/v2/info", Some(key)).await;
        assert_eq!(
            v["data"]["application"]["quota"]["used"], 2,
            "charged per verification"
        );
        t.stop().await;
    }
);

both!(v1_verifies_wallet_slips, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let w = t.wallet_transfer(1000, None, None, None).await;
    let path = "/api/v1/verify/truewallet";
    let once = json!({"payload": w.payload, "checkDuplicate": true});
    let v = t.post_ok(path, key, once.clone()).await;
    assert_eq!(v["status"], 200);
    assert_eq!(v["data"]["transactionId"], w.transaction_id.as_str());
    assert_eq!(v["data"]["amount"], 10.0);
    // Again: v1 answers a duplicate as an error with the earlier verification, uncharged.
    let (s, v) = t.post(path, key, once).await;
    assert_eq!((s, v1_code(&v)), (400, "duplicate_slip"), "{v}");
    assert_eq!(v["data"]["transactionId"], w.transaction_id.as_str());
    let (s, v) = t.post(path, key, json!({"payload": "garbage"})).await;
    assert_eq!((s, v1_code(&v)), (400, "invalid_payload"), "{v}");
    let (_, v) = t.get("/v2/info", Some(key)).await;
    assert_eq!(v["data"]["application"]["quota"]["used"], 1);
    t.stop().await;
});

/// Verifies `payload` at `path` asking for `matchAccount`, asserting a 200; the answer.
async fn verify_matching(t: &TestApp, path: &str, key: &str, payload: &str) -> Value {
    let body = json!({"payload": payload, "matchAccount": true});
    t.post_ok(path, key, body).await
}

/// A TrueMoney slip paid to the shop's own wallet (its name and phone).
async fn paid_to_the_shop(t: &TestApp) -> String {
    let w = t.wallet_transfer(1000, None, Some("ร้านกาแฟ ดีดี"), Some("0812345678"));
    w.await.payload
}

both!(match_account_on_wallet_slips, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let key = ten.api_key.as_str();
    let path = "/v2/verify/truewallet";
    // Listed among the banks like PROMPTPAY, and registered by its phone number.
    let banks = t.get_ok("/v2/banks", key).await;
    let entry = record_with(&banks["data"], "code", "TRUEMONEY");
    assert_eq!(entry["extraVerify"], serde_json::Value::Null);
    let account = |number: &str| {
        json!({"bankCode": "TRUEMONEY", "bankNumber": number, "nameTh": "ร้านกาแฟ ดีดี",
            "nameEn": "DD Coffee", "type": "PERSONAL"})
    };
    for bad in ["12345678", "1812345678", "08123456789"] {
        t.post_err(
            "/v2/bank-accounts",
            key,
            account(bad),
            400,
            "VALIDATION_ERROR",
        )
        .await;
    }
    let (status, created) = t
        .post("/v2/bank-accounts", key, account("081-234-5678"))
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["data"]["bankNumber"], "0812345678");
    let id = created["data"]["id"].as_str().unwrap().to_string();

    // The shop's wallet: phone and name match.
    let ours = paid_to_the_shop(&t).await;
    let v = verify_matching(&t, path, key, &ours).await;
    let m = &v["data"]["matchedAccount"];
    assert_eq!(m["id"], id.as_str(), "{v}");
    assert_eq!(m["bank"]["code"], "TRUEMONEY");
    assert_eq!(m["bankNumber"], "0812345678");
    assert_eq!(v["data"]["mismatches"], json!([]));

    // The wallet shows the last 4 digits: another name with them, or the name with others.
    for (name, phone) in [("ร้านอื่น", "0812345678"), ("ร้านกาแฟ ดีดี", "0812340000")]
    {
        let w = t.wallet_transfer(1000, None, Some(name), Some(phone)).await;
        let v = verify_matching(&t, path, key, &w.payload).await;
        assert_eq!(v["data"]["matchedAccount"], serde_json::Value::Null, "{v}");
        assert_eq!(v["data"]["mismatches"], json!(["account_not_match"]), "{v}");
    }

    // Without matchAccount: `matchedAccount` is still there, null, and nothing is a mismatch.
    let w = paid_to_the_shop(&t).await;
    let v = t.post_ok(path, key, json!({"payload": w})).await;
    assert_eq!(v["data"]["matchedAccount"], serde_json::Value::Null);
    assert!(v["data"].get("matchedAccount").is_some());
    assert_eq!(v["data"]["mismatches"], json!([]));

    // A branch without accounts: a mismatch, still verified and charged.
    let other = t.tenant(10).await;
    let w = paid_to_the_shop(&t).await;
    let v = verify_matching(&t, path, &other.api_key, &w).await;
    assert_eq!(v["data"]["matchedAccount"], serde_json::Value::Null);
    assert_eq!(v["data"]["mismatches"], json!(["account_not_match"]));
    assert_eq!(t.used(&other.api_key).await, 1);

    // A bank slip never matches a wallet account, whatever its digits.
    let tr = t.transfer("004", "014", 1000).await;
    let v = verify_matching(&t, "/v2/verify/bank", key, &tr.payload).await;
    assert_eq!(v["data"]["matchedAccount"], serde_json::Value::Null);

    // v1 does not read matchAccount: its answer has no such field.
    let w = paid_to_the_shop(&t).await;
    let v = verify_matching(&t, "/api/v1/verify/truewallet", key, &w).await;
    assert_eq!(v["status"], 200);
    assert!(v["data"].get("matchedAccount").is_none(), "{v}");
    t.stop().await;
});
