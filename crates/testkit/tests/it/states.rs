//! The owner-verification flag (v1 `account_not_verified`) and slips older than the bank keeps
//! (v1 `slip_expired`), over HTTP on both versions.

use serde_json::{json, Value};
use services::admin::ServiceUpdate;
use testkit::{both, Backend, TestApp};

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("<none>")
}

both!(
    unverified_owner_and_expired_slips,
    |b: Backend| async move {
        let t = TestApp::spawn(b).await;
        let ten = t.tenant(100).await;
        let key = ten.api_key.as_str();
        let tr = t.transfer("004", "014", 100).await;
        let v1_path = format!("/api/v1/verify?payload={}", tr.payload);

        let set = |verified: bool| ServiceUpdate {
            owner_verified: Some(verified),
            ..Default::default()
        };
        t.app
            .services
            .update_service(&ten.service_id, &set(false))
            .await
            .unwrap();
        let (s, v) = t
            .post("/v2/verify/bank", key, json!({"payload": tr.payload}))
            .await;
        assert_eq!((s, code(&v)), (403, "ACCOUNT_NOT_VERIFIED"), "{v}");
        let (s, v) = t.get(&v1_path, Some(key)).await;
        assert_eq!(
            (s, v["message"].as_str()),
            (403, Some("account_not_verified")),
            "{v}"
        );
        t.app
            .services
            .update_service(&ten.service_id, &set(true))
            .await
            .unwrap();

        // 181 days later the sandbox bank no longer keeps the transfer.
        t.clock.advance(time::Duration::days(181));
        let (s, v) = t
            .post("/v2/verify/bank", key, json!({"payload": tr.payload}))
            .await;
        assert_eq!((s, code(&v)), (404, "SLIP_NOT_FOUND"), "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("no longer keeps"),
            "{v}"
        );
        let (s, v) = t.get(&v1_path, Some(key)).await;
        assert_eq!(
            (s, v["message"].as_str()),
            (404, Some("slip_expired")),
            "{v}"
        );
        let (_, v) = t.get("/v2/info", Some(key)).await;
        assert_eq!(v["data"]["application"]["quota"]["used"], 0);
        t.stop().await;
    }
);
