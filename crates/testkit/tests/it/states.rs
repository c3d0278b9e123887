//! The owner-verification flag (v1 `account_not_verified`) and slips older than the bank keeps
//! (v1 `slip_expired`), over HTTP on both versions.

use serde_json::json;
use services::admin::ServiceUpdate;
use testkit::{both, Backend, TestApp};

use crate::common::{assert_error, v1_code};

both!(
    unverified_owner_and_expired_slips,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let key = ten.api_key.as_str();
        let tr = t.transfer("004", "014", 100).await;
        let v1_path = format!("/api/v1/verify?payload={}", tr.payload);

        let set = |verified: bool| ServiceUpdate {
            owner_verified: Some(verified),
            ..Default::default()
        };
        t.set_service(&ten.service_id, set(false)).await;
        t.post_err(
            "/v2/verify/bank",
            key,
            json!({"payload": tr.payload}),
            403,
            "ACCOUNT_NOT_VERIFIED",
        )
        .await;
        let (s, v) = t.get(&v1_path, Some(key)).await;
        assert_eq!((s, v1_code(&v)), (403, "account_not_verified"), "{v}");
        t.set_service(&ten.service_id, set(true)).await;

        // 181 days later the sandbox bank no longer keeps the transfer.
        t.clock.advance(time::Duration::days(181));
        let (s, v) = t
            .post("/v2/verify/bank", key, json!({"payload": tr.payload}))
            .await;
        assert_error(s, &v, 404, "SLIP_NOT_FOUND", "no longer keeps");
        let (s, v) = t.get(&v1_path, Some(key)).await;
        assert_eq!((s, v1_code(&v)), (404, "slip_expired"), "{v}");
        let (_, v) = t.get("/v2/info", Some(key)).await;
        assert_eq!(v["data"]["application"]["quota"]["used"], 0);
        t.stop().await;
    }
);
