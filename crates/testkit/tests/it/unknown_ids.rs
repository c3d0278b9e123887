//! Admin requests that are well formed but name something that does not exist answer 404
//! `NOT_FOUND` naming it (docs/decisions.md); a shape problem in the same request is still
//! `VALIDATION_ERROR` first, and nothing is created or changed.

use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::{admin_create, id_of};

const TOKEN: &str = "unknown-ids-admin-token-0123456789abcdef01";
const NOPE: &str = "00000000-0000-4000-8000-000000000000";

fn error(v: &Value) -> (&str, &str) {
    (
        v["error"]["code"].as_str().unwrap_or("<none>"),
        v["error"]["message"].as_str().unwrap_or("<none>"),
    )
}

both!(unknown_references_are_not_found, |b: Backend| async move {
    let t = TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await;
    let shop = json!({"name": "Shop"});
    let sid = id_of(&admin_create(&t, TOKEN, "/admin/services", shop).await);

    let cases = [
        (
            "PATCH",
            format!("/admin/branches/{NOPE}"),
            json!({"name": "x"}),
            "branch: no such branch",
        ),
        (
            "POST",
            format!("/admin/branches/{NOPE}/rotate-key"),
            json!({}),
            "branch: no such branch",
        ),
        (
            "PATCH",
            format!("/admin/users/{NOPE}"),
            json!({"banned": true}),
            "user: no such user",
        ),
        (
            "PATCH",
            format!("/admin/services/{NOPE}"),
            json!({"name": "x"}),
            "service: no such service",
        ),
        (
            "POST",
            "/admin/branches".to_string(),
            json!({"serviceId": NOPE, "name": "Main"}),
            "service: no such service",
        ),
        (
            "PATCH",
            format!("/admin/services/{sid}"),
            json!({"plan": "gold", "ownerId": NOPE}),
            "plan: no plan named 'gold'; owner: no such user",
        ),
        (
            "POST",
            "/admin/partners".to_string(),
            json!({"name": "P", "serviceIds": [NOPE], "permissions": ["quota:read"]}),
            "service: no such service 00000000-0000-4000-8000-000000000000",
        ),
        (
            "POST",
            format!("/admin/services/{sid}/subscription"),
            json!({"package": "gold"}),
            "package: no package 'gold'",
        ),
    ];
    for (method, path, body, message) in cases {
        let (s, v) = t.call(method, &path, TOKEN, Some(body)).await;
        assert_eq!(
            (s, error(&v)),
            (404, ("NOT_FOUND", message)),
            "{method} {path}"
        );
    }

    // The shape is checked first: a bad field and an unknown owner is a 400 about the field.
    let (s, v) = t
        .call(
            "PATCH",
            &format!("/admin/services/{sid}"),
            TOKEN,
            Some(json!({"rateLimit": 0, "ownerId": NOPE})),
        )
        .await;
    assert_eq!(
        (s, error(&v)),
        (
            400,
            (
                "VALIDATION_ERROR",
                "rateLimit: must be a whole number of at least 1"
            )
        )
    );
    // Nothing changed: an empty change answers the service as it is, name and no owner.
    let v = t
        .call_ok(
            "PATCH",
            &format!("/admin/services/{sid}"),
            TOKEN,
            Some(json!({})),
        )
        .await;
    assert_eq!(v["data"]["name"], "Shop");
    assert!(v["data"]["ownerId"].is_null(), "{v}");
    assert_eq!(v["data"]["plan"], "default", "{v}");
    t.stop().await;
});
