//! Issue 18's probes turned into tests: U+0000 in any string input, several `X-Forwarded-For`
//! lines, an empty allow-list, a forged `X-Request-Id`.

use serde_json::{json, Value};
use services::admin::BranchUpdate;
use testkit::{both, Backend, TestApp};

use crate::common::{assert_validation, code};

const TOKEN: &str = "admin-token-0123456789abcdef0123456789";

/// A 400 that names `field` and U+0000 (v2 envelope or v1's `invalid_request`).
#[track_caller]
fn refused_naming(s: u16, v: &Value, field: &str) {
    assert_eq!(s, 400, "{v}");
    let text = v.to_string();
    assert!(
        text.contains(field) && text.contains("U+0000"),
        "expected {field} named: {text}"
    );
}

// PostgreSQL text cannot hold U+0000: these answered 500 there. Now every family refuses them
// in validation, naming the field, on both backends.
both!(
    nul_in_any_string_input_is_a_validation_error,
    |b: Backend| async move {
        let t = TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await;
        let ten = t.tenant(100).await;
        let key = ten.api_key.as_str();

        let ve = Some("VALIDATION_ERROR");
        let account = json!({"bankCode": "004", "bankNumber": "1234567890", "nameTh": "ก\u{0}", "type": "SAVINGS"});
        for (method, path, auth, body, field, want_code) in [
            // Admin: body fields, nested fields, path ids.
            (
                "POST",
                "/admin/services",
                TOKEN,
                Some(json!({"name": "x\u{0}"})),
                "name",
                ve,
            ),
            (
                "PATCH",
                "/admin/services/x%00",
                TOKEN,
                Some(json!({"name": "y"})),
                "id",
                None,
            ),
            (
                "PUT",
                "/admin/plans/p%00",
                TOKEN,
                Some(json!({"rps": 5})),
                "name",
                None,
            ),
            (
                "POST",
                "/admin/branches",
                TOKEN,
                Some(
                    json!({"serviceId": ten.service_id, "name": "b", "allowIps": ["1.2.3.4\u{0}"]}),
                ),
                "allowIps[0]",
                None,
            ),
            // v2: verify, async, bank accounts (body and path), job polling.
            (
                "POST",
                "/v2/verify/bank",
                key,
                Some(json!({"payload": "0041000600000101030040220", "remark": "r\u{0}"})),
                "remark",
                ve,
            ),
            (
                "POST",
                "/v2/verify/bank/async",
                key,
                Some(json!({"payload": "p", "callbackUrl": "https://example.com/\u{0}"})),
                "callbackUrl",
                None,
            ),
            (
                "POST",
                "/v2/bank-accounts",
                key,
                Some(account),
                "nameTh",
                None,
            ),
            ("GET", "/v2/bank-accounts/a%00", key, None, "id", None),
            (
                "GET",
                "/v2/verify/bank/jobs/j%00",
                key,
                None,
                "job_id",
                None,
            ),
        ] {
            let (s, v) = t.call(method, path, auth, body).await;
            if let Some(want) = want_code {
                assert_eq!(code(&v), want, "{method} {path}");
            }
            refused_naming(s, &v, field);
        }
        // Multipart text fields too.
        let form = reqwest::multipart::Form::new()
            .text("payload", "0041000600000101030040220")
            .text("remark", "r\u{0}");
        let (s, v) = t.post_form("/v2/verify/bank", key, form).await;
        refused_naming(s, &v, "remark");

        // v1: JSON, query string and multipart.
        let (s, v) = t
            .post("/api/v1/verify", key, json!({"payload": "p\u{0}"}))
            .await;
        refused_naming(s, &v, "payload");
        let (s, v) = t.get("/api/v1/verify?payload=p%00", Some(key)).await;
        refused_naming(s, &v, "payload");
        let form = reqwest::multipart::Form::new().text("payload", "p\u{0}");
        let (s, v) = t.post_form("/api/v1/verify", key, form).await;
        refused_naming(s, &v, "payload");

        // Nothing was charged and the server still answers.
        t.get_ok("/v2/info", key).await;
        t.stop().await;
    }
);

// A proxy that appends its own `X-Forwarded-For` line: both lines are one list, so the client
// cannot choose its address by sending a line of its own.
both!(forwarded_for_lines_are_one_list, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let only = BranchUpdate {
        allow_ips: Some(vec!["203.0.113.7".into()]),
        ..Default::default()
    };
    t.app
        .services
        .admin()
        .update_branch(&ten.branch_id, &only)
        .await
        .unwrap();
    let proxy = t
        .another_node_with(|s| {
            s.set_trusted_proxies(domain::ip::AllowList::parse(&["127.0.0.1"]).unwrap())
        })
        .await;
    let send = |lines: [&'static str; 2]| {
        proxy
            .http
            .get(format!("{}/v2/info", proxy.base))
            .bearer_auth(&ten.api_key)
            .header("x-forwarded-for", lines[0])
            .header("x-forwarded-for", lines[1])
            .send()
    };
    // The client wrote the allowed address; the proxy appended the real one.
    let r = send(["203.0.113.7", "198.51.100.1"]).await.unwrap();
    assert_eq!(
        r.status().as_u16(),
        403,
        "the client's own line is not believed"
    );
    let r = send(["198.51.100.1", "203.0.113.7"]).await.unwrap();
    assert_eq!(
        r.status().as_u16(),
        200,
        "the last untrusted hop is the client"
    );
    proxy.stop().await;
    t.stop().await;
});

// `allowIps: []` used to store `*`; opening to all is only ever the literal `*`.
both!(empty_allow_list_is_refused, |b: Backend| async move {
    let t = TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await;
    let ten = t.tenant(100).await;
    let path = format!("/admin/branches/{}", ten.branch_id);
    let (s, v) = t
        .call("PATCH", &path, TOKEN, Some(json!({"allowIps": []})))
        .await;
    assert_validation(s, &v, "allowIps: must not be empty");
    t.call_err(
        "POST",
        "/admin/branches",
        TOKEN,
        Some(json!({"serviceId": ten.service_id, "name": "b2", "allowIps": []})),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    // The branch is unchanged: still open to everyone, as created.
    t.get_ok("/v2/info", &ten.api_key).await;
    t.call_ok("PATCH", &path, TOKEN, Some(json!({"allowIps": ["*"]})))
        .await;
    t.stop().await;
});

// A client's request id is echoed (and logged) only when it is plainly safe.
both!(unsafe_request_ids_are_replaced, |b: Backend| async move {
    let t = TestApp::spawn(b).await;
    let echo = |id: Option<String>| {
        let mut r = t.http.get(format!("{}/health", t.base));
        if let Some(id) = id {
            r = r.header("x-request-id", id);
        }
        async move {
            let resp = r.send().await.unwrap();
            resp.headers()["x-request-id"].to_str().unwrap().to_string()
        }
    };
    assert_eq!(echo(Some("abc-123_x.y:z".into())).await, "abc-123_x.y:z");
    let long = "a".repeat(128);
    assert_eq!(echo(Some(long.clone())).await, long);
    for bad in [
        "a".repeat(129),
        "x\" level=ERROR msg=\"forged".to_string(),
        "a b".to_string(),
    ] {
        let got = echo(Some(bad.clone())).await;
        assert_ne!(got, bad);
        assert!(uuid::Uuid::parse_str(&got).is_ok(), "a fresh id: {got}");
    }
    assert!(uuid::Uuid::parse_str(&echo(None).await).is_ok());
    t.stop().await;
});
