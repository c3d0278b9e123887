//! Packages, subscriptions, auto-renew and credit through the admin API over HTTP, on both
//! backends.

use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::{code, new_service, record_with, strings};

const TOKEN: &str = "billing-admin-token-0123456789abcdef0123";

fn message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or("<none>")
}

async fn spawn(b: Backend) -> TestApp {
    TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await
}

/// Creates or changes the package `name` (`PUT /admin/packages/{name}`); returns the answer.
async fn set_package(t: &TestApp, name: &str, terms: Value) -> Value {
    let path = format!("/admin/packages/{name}");
    t.call_ok("PUT", &path, TOKEN, Some(terms)).await
}

/// The service as the admin API shows it (an empty patch changes nothing).
async fn service_view(t: &TestApp, sid: &str) -> Value {
    let path = format!("/admin/services/{sid}");
    let (_, v) = t.call("PATCH", &path, TOKEN, Some(json!({}))).await;
    v
}

both!(packages_subscription_and_credit, |b: Backend| async move {
    let t = spawn(b).await;
    let sid = new_service(&t, TOKEN).await;

    // A fresh service: no package, no credit, no auto-renew.
    let v = service_view(&t, &sid).await;
    assert_eq!(v["data"]["package"], Value::Null, "{v}");
    assert_eq!(v["data"]["subscribedAt"], Value::Null);
    assert_eq!(v["data"]["credit"].as_f64(), Some(0.0));
    assert_eq!(
        v["data"]["autoRenew"],
        json!({"onExpiry": false, "onQuota": false})
    );

    // Packages: bad terms are named, good ones create, the same name changes them.
    let v = t
        .call_err(
            "PUT",
            "/admin/packages/basic",
            TOKEN,
            Some(json!({"quota": -1, "price": 9.999})),
            400,
            "VALIDATION_ERROR",
        )
        .await;
    let m = message(&v);
    assert!(m.contains("durationDays: is required"), "{m}");
    assert!(m.contains("quota:"), "{m}");
    assert!(m.contains("price:"), "{m}");
    let v = set_package(
        &t,
        "basic",
        json!({"quota": 100, "durationDays": 30, "price": 990}),
    )
    .await;
    let pid = v["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["data"]["name"], "basic");
    assert_eq!(v["data"]["durationDays"], 30);
    assert_eq!(v["data"]["price"].as_f64(), Some(990.0));
    let v = set_package(
        &t,
        "basic",
        json!({"quota": 200, "durationDays": 30, "price": 1290.50}),
    )
    .await;
    assert_eq!(v["data"]["id"], pid.as_str(), "same package, new terms");
    let v = t.call_ok("GET", "/admin/packages", TOKEN, None).await;
    let basic = record_with(&v["data"], "name", "basic");
    assert_eq!(
        (basic["quota"].as_i64(), basic["price"].as_f64()),
        (Some(200), Some(1290.5))
    );

    // Subscribe: unknown package and bad autoRenew are refused; then a period starts.
    let sub = format!("/admin/services/{sid}/subscription");
    for (body, status, want, field) in [
        (json!({"package": "nope"}), 404, "NOT_FOUND", "package:"),
        (
            json!({"package": "basic", "autoRenew": "yes"}),
            400,
            "VALIDATION_ERROR",
            "autoRenew:",
        ),
        // Paying from an empty credit is refused.
        (
            json!({"package": "basic", "payFromCredit": true}),
            400,
            "VALIDATION_ERROR",
            "credit:",
        ),
    ] {
        let (s, v) = t.call("POST", &sub, TOKEN, Some(body.clone())).await;
        assert_eq!((s, code(&v)), (status, want), "{body}: {v}");
        assert!(message(&v).starts_with(field), "{body}: {v}");
    }
    for (body, want) in [
        (
            json!({"package": "basic", "autoRenew": {"onExpiry": 1}}),
            "autoRenew.onExpiry: must be a boolean",
        ),
        (json!({}), "package: is required"),
    ] {
        let (s, v) = t.call("POST", &sub, TOKEN, Some(body.clone())).await;
        assert_eq!((s, message(&v)), (400, want), "{body}: {v}");
    }
    let v = t
        .call_ok(
            "POST",
            &sub,
            TOKEN,
            Some(json!({"package": "basic", "autoRenew": {"onExpiry": true}})),
        )
        .await;
    assert_eq!(v["data"]["package"], pid.as_str());
    assert_eq!(v["data"]["limitQuota"], 200);
    assert!(v["data"]["subscribedAt"].is_string(), "{v}");
    assert!(v["data"]["expiresAt"].is_string(), "{v}");
    assert_eq!(
        v["data"]["autoRenew"],
        json!({"onExpiry": true, "onQuota": false})
    );

    // Credit: a top-up, then the history shows it with the balance after it.
    let credit = format!("/admin/services/{sid}/credit");
    let v = t
        .call_ok(
            "POST",
            &credit,
            TOKEN,
            Some(json!({"amount": 500.00, "note": "bank transfer 123"})),
        )
        .await;
    assert_eq!(v["data"]["kind"], "topup");
    assert_eq!(v["data"]["amount"].as_f64(), Some(500.0));
    assert_eq!(v["data"]["balanceAfter"].as_f64(), Some(500.0));
    assert_eq!(v["data"]["actor"], "admin-api");
    assert_eq!(v["data"]["note"], "bank transfer 123");
    let v = t.call_ok("GET", &credit, TOKEN, None).await;
    assert_eq!(v["data"]["balance"].as_f64(), Some(500.0));
    let entries = v["data"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{v}");
    assert_eq!(entries[0]["balanceAfter"].as_f64(), Some(500.0));
    assert_eq!(entries[0]["kind"], "topup");

    // Bad movements: a negative top-up, an unknown kind, too many decimals, no amount, an
    // adjustment below zero.
    for (body, field) in [
        (json!({"amount": -5}), "amount:"),
        (json!({"amount": 5, "kind": "renewal"}), "kind:"),
        (json!({"amount": 1.005}), "amount:"),
        (json!({"amount": "5"}), "amount:"),
        (json!({}), "amount: is required"),
        // An adjustment below zero.
        (
            json!({"amount": -500.01, "kind": "adjustment", "note": "too much"}),
            "amount:",
        ),
    ] {
        let (s, v) = t.call("POST", &credit, TOKEN, Some(body.clone())).await;
        assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"), "{body}: {v}");
        assert!(message(&v).starts_with(field), "{body}: {v}");
    }

    // Nothing moved; an adjustment within the balance goes.
    let (_, v) = t.call("GET", &credit, TOKEN, None).await;
    assert_eq!(v["data"]["balance"].as_f64(), Some(500.0));
    assert_eq!(v["data"]["entries"].as_array().unwrap().len(), 1);
    let v = t
        .call_ok(
            "POST",
            &credit,
            TOKEN,
            Some(json!({"amount": -100.25, "kind": "adjustment", "note": "correction"})),
        )
        .await;
    assert_eq!(v["data"]["kind"], "adjustment");
    assert_eq!(v["data"]["amount"].as_f64(), Some(-100.25));
    assert_eq!(v["data"]["balanceAfter"].as_f64(), Some(399.75));
    let (_, v) = t.call("GET", &credit, TOKEN, None).await;
    assert_eq!(v["data"]["balance"].as_f64(), Some(399.75));
    let entries = v["data"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{v}");
    assert_eq!(entries[1]["balanceAfter"].as_f64(), Some(399.75));

    // Auto-renew: both, one trigger, and the service view follows.
    let auto = format!("/admin/services/{sid}/auto-renew");
    t.call_err(
        "PUT",
        &auto,
        TOKEN,
        Some(json!({})),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let (s, v) = t
        .call("PUT", &auto, TOKEN, Some(json!({"onQuota": "yes"})))
        .await;
    assert_eq!((s, message(&v)), (400, "onQuota: must be a boolean"), "{v}");
    let v = t
        .call_ok("PUT", &auto, TOKEN, Some(json!({"enabled": true})))
        .await;
    assert_eq!(
        v["data"]["autoRenew"],
        json!({"onExpiry": true, "onQuota": true})
    );
    assert_eq!(v["data"]["credit"].as_f64(), Some(399.75));
    let v = t
        .call_ok(
            "PUT",
            &auto,
            TOKEN,
            Some(json!({"onExpiry": false, "onQuota": true})),
        )
        .await;
    assert_eq!(
        v["data"]["autoRenew"],
        json!({"onExpiry": false, "onQuota": true})
    );
    let v = service_view(&t, &sid).await;
    assert_eq!(
        v["data"]["autoRenew"],
        json!({"onExpiry": false, "onQuota": true})
    );

    // Paid from credit now that there is enough: the price is drawn.
    set_package(
        &t,
        "small",
        json!({"quota": 10, "durationDays": 7, "price": 99.75}),
    )
    .await;
    let v = t
        .call_ok(
            "POST",
            &sub,
            TOKEN,
            Some(json!({"package": "small", "payFromCredit": true, "autoRenew": false})),
        )
        .await;
    assert_eq!(v["data"]["credit"].as_f64(), Some(300.0));
    assert_eq!(v["data"]["limitQuota"], 10);
    assert_eq!(
        v["data"]["autoRenew"],
        json!({"onExpiry": false, "onQuota": false})
    );

    // The service's audit log: the subscriptions and the auto-renew changes.
    let v = t
        .call_ok("GET", &format!("/admin/services/{sid}/audit"), TOKEN, None)
        .await;
    let actions = strings(&v["data"], "action");
    assert!(actions.contains(&"subscription.start"), "{actions:?}");
    assert!(actions.contains(&"subscription.auto_renew"), "{actions:?}");
    for e in v["data"].as_array().unwrap() {
        assert_eq!(e["serviceId"], sid.as_str(), "{e}");
        assert_eq!(e["actor"], "admin-api", "{e}");
    }
    t.stop().await;
});

both!(
    unknown_services_and_missing_token,
    |b: Backend| async move {
        let t = spawn(b).await;
        let sid = new_service(&t, TOKEN).await;
        set_package(
            &t,
            "basic",
            json!({"quota": 1, "durationDays": 1, "price": 1}),
        )
        .await;

        let nope = "00000000-0000-4000-8000-000000000000";
        for (method, path, body) in [
            (
                "POST",
                format!("/admin/services/{nope}/subscription"),
                Some(json!({"package": "basic"})),
            ),
            (
                "PUT",
                format!("/admin/services/{nope}/auto-renew"),
                Some(json!({"enabled": true})),
            ),
            (
                "POST",
                format!("/admin/services/{nope}/credit"),
                Some(json!({"amount": 5})),
            ),
            ("GET", format!("/admin/services/{nope}/credit"), None),
            ("GET", format!("/admin/services/{nope}/audit"), None),
        ] {
            let (s, v) = t.call(method, &path, TOKEN, body).await;
            assert_eq!(
                (s, code(&v), message(&v)),
                (404, "NOT_FOUND", "service: no such service"),
                "{method} {path}"
            );
        }

        // No token: 401, and nothing happens.
        for path in [
            "/admin/packages".to_string(),
            format!("/admin/services/{sid}/credit"),
            format!("/admin/services/{sid}/audit"),
        ] {
            let (s, v) = t.get(&path, None).await;
            assert_eq!((s, code(&v)), (401, "MISSING_API_KEY"), "{path}: {v}");
        }
        let resp = t
            .http
            .post(format!("{}/admin/services/{sid}/credit", t.base))
            .header("content-type", "application/json")
            .body(json!({"amount": 5}).to_string())
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status().as_u16(), 401);
        t.call_err(
            "PUT",
            "/admin/packages/basic",
            "wrong-token",
            Some(json!({"quota": 9, "durationDays": 9, "price": 9})),
            401,
            "INVALID_API_KEY",
        )
        .await;
        let (_, v) = t
            .call("GET", &format!("/admin/services/{sid}/credit"), TOKEN, None)
            .await;
        assert_eq!(v["data"]["balance"].as_f64(), Some(0.0), "{v}");
        let (_, v) = t.call("GET", "/admin/packages", TOKEN, None).await;
        assert_eq!(v["data"][0]["quota"], 1, "{v}");
        t.stop().await;
    }
);

both!(admin_api_is_off_without_a_token, |b: Backend| async move {
    let t = TestApp::spawn(b).await;
    t.call_err("GET", "/admin/packages", TOKEN, None, 404, "NOT_FOUND")
        .await;
    t.stop().await;
});

/// The keys of a documented schema (`components.schemas[name].properties`).
fn documented_keys(doc: &Value, name: &str) -> std::collections::BTreeSet<String> {
    doc["components"]["schemas"][name]["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no schema {name}"))
        .keys()
        .cloned()
        .collect()
}

fn served_keys(v: &Value) -> std::collections::BTreeSet<String> {
    v.as_object().expect("object").keys().cloned().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_have_the_documented_keys() {
    let t = spawn(Backend::Sqlite).await;
    let (_, doc) = t.get("/openapi.json", None).await;
    let sid = new_service(&t, TOKEN).await;
    let service = format!("/admin/services/{sid}");
    let package = json!({"quota": 1, "durationDays": 1, "price": 1});
    let subscribe = json!({"package": "basic", "autoRenew": true});
    // In order: the subscription needs the package, the audit entry the subscription.
    for (method, path, body, parts) in [
        (
            "PUT",
            "/admin/packages/basic".to_string(),
            Some(package),
            &[("/data", "PackageView")][..],
        ),
        (
            "POST",
            format!("{service}/subscription"),
            Some(subscribe),
            &[
                ("/data", "ServiceView"),
                ("/data/autoRenew", "AutoRenewView"),
            ],
        ),
        (
            "POST",
            format!("{service}/credit"),
            Some(json!({"amount": 1})),
            &[("/data", "LedgerEntryView")],
        ),
        (
            "GET",
            format!("{service}/credit"),
            None,
            &[("/data", "CreditHistory")],
        ),
        (
            "GET",
            format!("{service}/audit"),
            None,
            &[("/data/0", "AuditEntry")],
        ),
    ] {
        let (_, v) = t.call(method, &path, TOKEN, body).await;
        for (part, schema) in parts {
            let served = v.pointer(part).unwrap_or(&Value::Null);
            assert_eq!(
                served_keys(served),
                documented_keys(&doc, schema),
                "{method} {path} {part}"
            );
        }
    }
    // Every new operation is documented with the admin token.
    for (path, method) in [
        ("/admin/packages", "get"),
        ("/admin/packages/{name}", "put"),
        ("/admin/services/{id}/subscription", "post"),
        ("/admin/services/{id}/auto-renew", "put"),
        ("/admin/services/{id}/credit", "post"),
        ("/admin/services/{id}/credit", "get"),
        ("/admin/services/{id}/audit", "get"),
    ] {
        let op = &doc["paths"][path][method];
        assert!(op["summary"].is_string(), "{method} {path}");
        assert_eq!(
            op["security"][0]["adminToken"],
            json!([]),
            "{method} {path}"
        );
    }
    t.stop().await;
}
