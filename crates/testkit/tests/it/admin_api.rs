//! The admin API over HTTP: off without a token, then the operator's operations end to end.

use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::{admin_create, id_of, new_service};

const TOKEN: &str = "admin-token-0123456789abcdef0123456789";

both!(admin_api_is_off_without_a_token, |b: Backend| async move {
    let t = TestApp::spawn(b).await;
    t.call_err(
        "POST",
        "/admin/services",
        TOKEN,
        Some(json!({"name": "X"})),
        404,
        "NOT_FOUND",
    )
    .await;
    t.stop().await;
});

both!(operator_flow, |b: Backend| async move {
    let t = TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await;
    t.call_err(
        "POST",
        "/admin/services",
        "wrong-token",
        Some(json!({"name": "X"})),
        401,
        "INVALID_API_KEY",
    )
    .await;
    let v = t
        .call_err(
            "POST",
            "/admin/services",
            TOKEN,
            Some(json!({"quota": -1})),
            400,
            "VALIDATION_ERROR",
        )
        .await;
    assert_eq!(
        v["error"]["message"],
        "name: is required; quota: must be a whole number of at least 0"
    );

    let sid = new_service(&t, TOKEN).await;
    let (s, v) = t
        .call("PUT", "/admin/plans/pro", TOKEN, Some(json!({"rps": 40})))
        .await;
    assert_eq!((s, v["data"]["burst"].as_u64()), (200, Some(20)));
    let (_, v) = t.call("GET", "/admin/plans", TOKEN, None).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 2);
    let v = t
        .call_ok(
            "PATCH",
            &format!("/admin/services/{sid}"),
            TOKEN,
            Some(json!({"plan": "pro", "quota": null, "expiresAt": "2030-01-01T00:00:00+07:00"})),
        )
        .await;
    assert_eq!(
        (v["data"]["plan"].as_str(), v["data"]["rateLimit"].as_u64()),
        (Some("pro"), Some(40))
    );
    assert_eq!(v["data"]["limitQuota"], Value::Null);
    assert_eq!(v["data"]["expiresAt"], "2030-01-01T00:00:00.000+07:00");
    t.call_err(
        "PATCH",
        &format!("/admin/services/{sid}"),
        TOKEN,
        Some(json!({"plan": "nope", "state": "x"})),
        400,
        "VALIDATION_ERROR",
    )
    .await;

    let main = json!({"serviceId": sid, "name": "Main", "main": true, "allowIps": ["*"]});
    let branch = admin_create(&t, TOKEN, "/admin/branches", main).await;
    let bid = id_of(&branch);
    let key = branch["apiKey"].as_str().unwrap().to_string();
    assert_eq!(t.get("/v2/info", Some(&key)).await.0, 200);
    let v = t
        .call_ok(
            "PATCH",
            &format!("/admin/branches/{bid}"),
            TOKEN,
            Some(json!({"webhookSecret": "abc", "limitQuota": 3, "active": false})),
        )
        .await;
    assert_eq!(
        (
            v["data"]["hasWebhookSecret"].as_bool(),
            v["data"]["limitQuota"].as_i64()
        ),
        (Some(true), Some(3))
    );
    assert!(v["data"].get("webhookSecret").is_none());
    t.get_err("/v2/info", &key, 403, "BRANCH_INACTIVE").await;
    t.call(
        "PATCH",
        &format!("/admin/branches/{bid}"),
        TOKEN,
        Some(json!({"active": true, "webhookSecret": null})),
    )
    .await;
    let v = t
        .call_ok(
            "POST",
            &format!("/admin/branches/{bid}/rotate-key"),
            TOKEN,
            Some(json!({"graceSeconds": 60})),
        )
        .await;
    let new_key = v["data"]["apiKey"].as_str().unwrap().to_string();
    assert_eq!(
        t.get("/v2/info", Some(&key)).await.0,
        200,
        "old key in its grace period"
    );
    assert_eq!(t.get("/v2/info", Some(&new_key)).await.0, 200);

    let uid = id_of(&admin_create(&t, TOKEN, "/admin/users", json!({"name": "Owner"})).await);
    t.call(
        "PATCH",
        &format!("/admin/services/{sid}"),
        TOKEN,
        Some(json!({"ownerId": uid})),
    )
    .await;
    let (s, v) = t
        .call(
            "PATCH",
            &format!("/admin/users/{uid}"),
            TOKEN,
            Some(json!({"banned": true})),
        )
        .await;
    assert_eq!((s, v["data"]["banned"].as_bool()), (200, Some(true)));
    t.get_err("/v2/info", &new_key, 403, "USER_BANNED").await;

    let pos = json!({"name": "POS", "serviceIds": [sid], "permissions": ["quota:read"]});
    let partner = admin_create(&t, TOKEN, "/admin/partners", pos).await;
    assert_eq!(partner["apiKey"].as_str().unwrap().len(), 64);
    assert_eq!(partner["secret"].as_str().unwrap().len(), 64);
    let (s, v) = t
        .call("GET", &format!("/admin/branches/{bid}/audit"), TOKEN, None)
        .await;
    assert_eq!((s, v["data"].as_array().map(Vec::len)), (200, Some(0)));
    t.stop().await;
});
