//! The partner API over HTTP, signed by an independent signer (`partner_sign.py`), on SQLite
//! and PostgreSQL.

use domain::Clock;
use serde_json::{json, Value};
use testkit::{both, Backend, TestApp};

use crate::common::{code, partner_sign};

struct P {
    key: String,
    secret: String,
}

struct Req<'a> {
    method: &'a str,
    path: &'a str,
    body: &'a str,
    branch: &'a str,
    ts: Option<i64>,
    nonce: Option<String>,
    /// Body actually sent, when it differs from the one signed.
    sent_body: Option<&'a str>,
    secret: Option<&'a str>,
    key: Option<&'a str>,
}

impl<'a> Req<'a> {
    fn new(method: &'a str, path: &'a str, body: &'a str, branch: &'a str) -> Self {
        Req {
            method,
            path,
            body,
            branch,
            ts: None,
            nonce: None,
            sent_body: None,
            secret: None,
            key: None,
        }
    }
}

async fn send(t: &TestApp, p: &P, r: Req<'_>) -> (u16, Value) {
    let ts =
        r.ts.unwrap_or_else(|| t.clock.now().unix_timestamp())
            .to_string();
    let nonce = r.nonce.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let sig = partner_sign(
        r.method,
        r.path,
        &ts,
        &nonce,
        r.secret.unwrap_or(&p.secret),
        r.body,
    );
    let method = reqwest::Method::from_bytes(r.method.as_bytes()).unwrap();
    let resp = t
        .http
        .request(method, format!("{}/v2{}", t.base, r.path))
        .header("X-API-Key", r.key.unwrap_or(&p.key))
        .header("X-Branch-Key", r.branch)
        .header("X-Timestamp", &ts)
        .header("X-Nonce", &nonce)
        .header("X-Signature", sig)
        .header("content-type", "application/json")
        .body(r.sent_body.unwrap_or(r.body).to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

async fn partner(t: &TestApp, services: &[domain::ServiceId], perms: &str) -> P {
    let (p, key) = t
        .app
        .services
        .create_partner("Reseller", services, &[perms.to_string()])
        .await
        .unwrap();
    P {
        key,
        secret: p.secret,
    }
}

const Q: &str = "/b2b/branch/quota";
const ADJUST: &str = "/b2b/branch/quota/adjust";

both!(quota_operations, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let p = partner(
        &t,
        std::slice::from_ref(&ten.service_id),
        "quota:read,quota:write",
    )
    .await;
    for i in 0..3 {
        let pl = t.transfer("004", "014", 100 + i).await.payload;
        t.post_ok("/v2/verify/bank", &ten.api_key, json!({"payload": pl}))
            .await;
    }
    let br = ten.branch_id.as_str();
    let (s, v) = send(&t, &p, Req::new("GET", Q, "", br)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"]["branch"],
        json!({"id": br, "name": "Main", "limitQuota": null, "usedQuota": 3, "totalUsedQuota": 3})
    );
    assert_eq!(
        v["data"]["service"],
        json!({"limitQuota": 100, "usedQuota": 3, "totalUsedQuota": 3})
    );

    let (s, v) = send(&t, &p, Req::new("PUT", Q, r#"{"limitQuota": 10}"#, br)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"],
        json!({"id": br, "name": "Main", "limitQuota": 10, "usedQuota": 3, "totalUsedQuota": 3})
    );
    let (s, v) = send(&t, &p, Req::new("PUT", Q, r#"{"limitQuota": 2}"#, br)).await;
    assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"));
    assert_eq!(
        v["error"]["message"],
        "limitQuota: must not be below the current used quota (3)"
    );
    let (s, v) = send(&t, &p, Req::new("PUT", Q, r#"{}"#, br)).await;
    assert_eq!(
        (s, v["error"]["message"].as_str()),
        (400, Some("limitQuota: is required"))
    );
    let (s, v) = send(&t, &p, Req::new("PUT", Q, r#"{"limitQuota": 1.5}"#, br)).await;
    assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"));

    let (s, v) = send(&t, &p, Req::new("POST", ADJUST, r#"{"amount": 5}"#, br)).await;
    assert_eq!((s, v["data"]["limitQuota"].as_i64()), (200, Some(15)));
    let (s, v) = send(&t, &p, Req::new("POST", ADJUST, r#"{"amount": -13}"#, br)).await;
    assert_eq!((s, code(&v)), (400, "QUOTA_BELOW_USAGE"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("(3)"));
    let (s, v) = send(&t, &p, Req::new("POST", ADJUST, r#"{"amount": -12}"#, br)).await;
    assert_eq!((s, v["data"]["limitQuota"].as_i64()), (200, Some(3)));

    let (s, v) = send(&t, &p, Req::new("POST", "/b2b/branch/quota/reset", "", br)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"],
        json!({"id": br, "name": "Main", "limitQuota": 3, "usedQuota": 0, "totalUsedQuota": 3})
    );

    let (s, v) = send(&t, &p, Req::new("PUT", Q, r#"{"limitQuota": null}"#, br)).await;
    assert_eq!((s, v["data"]["limitQuota"].clone()), (200, Value::Null));
    let (s, v) = send(&t, &p, Req::new("POST", ADJUST, r#"{"amount": 1}"#, br)).await;
    assert_eq!(
        (s, code(&v)),
        (400, "VALIDATION_ERROR"),
        "no limit to adjust"
    );

    // Every change is in the audit log, in order, with its actor.
    let audit = t.app.store.as_ref();
    let entries = store::Store::list_audit(audit, &ten.branch_id)
        .await
        .unwrap();
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "quota.set",
            "quota.adjust",
            "quota.adjust",
            "quota.reset",
            "quota.set"
        ]
    );
    assert!(entries.iter().all(|e| e.actor.starts_with("partner:")));
    let reset: Value = serde_json::from_str(&entries[3].detail).unwrap();
    assert_eq!(reset["before"]["usedQuota"], 3);
    assert_eq!(reset["after"]["usedQuota"], 0);
    t.stop().await;
});

both!(refused_requests, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let other = t.tenant(100).await;
    let p = partner(&t, std::slice::from_ref(&ten.service_id), "quota:read").await;
    let br = ten.branch_id.as_str();
    let get = || Req::new("GET", Q, "", br);

    // No key at all.
    let resp = t
        .http
        .get(format!("{}/v2{Q}", t.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(code(&v), "MISSING_API_KEY");
    let (unknown, wrong) = ("ab".repeat(32), "0".repeat(64));
    let now = t.clock.now().unix_timestamp();
    let nonce = uuid::Uuid::new_v4().to_string();
    let put = Req::new("PUT", Q, r#"{"limitQuota": 10}"#, br);
    let changed = r#"{"limitQuota": 99}"#;
    let other_branch = other.branch_id.as_str();
    for (why, req, status, want) in [
        (
            "unknown key",
            Req {
                key: Some(&unknown),
                ..get()
            },
            401,
            "INVALID_API_KEY",
        ),
        // Stale and future timestamps.
        (
            "stale",
            Req {
                ts: Some(now - 301),
                ..get()
            },
            401,
            "INVALID_TIMESTAMP",
        ),
        (
            "future",
            Req {
                ts: Some(now + 301),
                ..get()
            },
            401,
            "INVALID_TIMESTAMP",
        ),
        (
            "in time",
            Req {
                ts: Some(now - 299),
                ..get()
            },
            200,
            "<none>",
        ),
        // Replay of a nonce.
        (
            "new nonce",
            Req {
                nonce: Some(nonce.clone()),
                ..get()
            },
            200,
            "<none>",
        ),
        (
            "replayed nonce",
            Req {
                nonce: Some(nonce),
                ..get()
            },
            401,
            "INVALID_NONCE",
        ),
        // Body changed after signing; wrong secret.
        (
            "body changed",
            Req {
                sent_body: Some(changed),
                ..put
            },
            401,
            "INVALID_SIGNATURE",
        ),
        (
            "wrong secret",
            Req {
                secret: Some(&wrong),
                ..get()
            },
            401,
            "INVALID_SIGNATURE",
        ),
        // Signed correctly but without the permission, or for another service's branch.
        (
            "no quota:write",
            Req::new("PUT", Q, r#"{"limitQuota": 10}"#, br),
            403,
            "PERMISSION_DENIED",
        ),
        (
            "other service",
            Req::new("GET", Q, "", other_branch),
            403,
            "BRANCH_ACCESS_DENIED",
        ),
        (
            "not a uuid",
            Req::new("GET", Q, "", "not-a-uuid"),
            400,
            "VALIDATION_ERROR",
        ),
    ] {
        let (s, v) = send(&t, &p, req).await;
        assert_eq!((s, code(&v)), (status, want), "{why}: {v}");
    }
    // Nothing changed.
    let (_, v) = send(&t, &p, get()).await;
    assert_eq!(v["data"]["branch"]["limitQuota"], Value::Null);
    assert!(
        store::Store::list_audit(t.app.store.as_ref(), &ten.branch_id)
            .await
            .unwrap()
            .is_empty()
    );
    t.stop().await;
});

// A timestamp is compared in whole seconds: sent at a whole second with the newest timestamp
// allowed (+300 s), it still passes 600.4 s later, so its nonce must still be remembered.
both!(
    replay_at_the_far_end_of_the_window,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let p = partner(&t, std::slice::from_ref(&ten.service_id), "quota:read").await;
        let br = ten.branch_id.as_str();
        let whole = t.clock.now().unix_timestamp() + 1;
        t.clock
            .set(time::OffsetDateTime::from_unix_timestamp(whole).unwrap());
        let nonce = uuid::Uuid::new_v4().to_string();
        let req = || Req {
            ts: Some(whole + 300),
            nonce: Some(nonce.clone()),
            ..Req::new("GET", Q, "", br)
        };
        let (s, _) = send(&t, &p, req()).await;
        assert_eq!(s, 200);
        t.clock.advance(time::Duration::milliseconds(600_400));
        let (s, v) = send(&t, &p, req()).await;
        assert_eq!((s, code(&v)), (401, "INVALID_NONCE"));
        // Once the timestamp itself is stale the answer says so.
        t.clock.advance(time::Duration::milliseconds(700));
        let (s, v) = send(&t, &p, req()).await;
        assert_eq!((s, code(&v)), (401, "INVALID_TIMESTAMP"));
        t.stop().await;
    }
);
