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
    /// Added to the URL only (never signed).
    query: &'a str,
    /// Signed over this path instead of `path` (a tampered or `/v2`-prefixed path).
    signed_path: Option<&'a str>,
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
            query: "",
            signed_path: None,
        }
    }

    /// The branch-in-path form: no `X-Branch-Key`.
    fn at(method: &'a str, path: &'a str, body: &'a str) -> Self {
        Req::new(method, path, body, "")
    }
}

async fn send(t: &TestApp, p: &P, r: Req<'_>) -> (u16, Value) {
    let ts =
        r.ts.unwrap_or_else(|| t.clock.now().unix_timestamp())
            .to_string();
    let nonce = r.nonce.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let sig = partner_sign(
        r.method,
        r.signed_path.unwrap_or(r.path),
        &ts,
        &nonce,
        r.secret.unwrap_or(&p.secret),
        r.body,
    );
    let method = reqwest::Method::from_bytes(r.method.as_bytes()).unwrap();
    let mut req = t
        .http
        .request(method, format!("{}/v2{}{}", t.base, r.path, r.query));
    if !r.branch.is_empty() {
        req = req.header("X-Branch-Key", r.branch);
    }
    let resp = req
        .header("X-API-Key", r.key.unwrap_or(&p.key))
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
        .partner()
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
    let entries = audit.list_audit(&ten.branch_id).await.unwrap();
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
    assert!(t
        .app
        .store
        .list_audit(&ten.branch_id)
        .await
        .unwrap()
        .is_empty());
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

const ALL: &str =
    "quota:read,quota:write,branch:read,branch:write,bank-account:read,bank-account:write";

// The published branch-in-path form: the same quota operations and answers as the header form,
// signed over the path (without `/v2`, without the query), no `X-Branch-Key`.
both!(quota_in_the_path, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let p = partner(
        &t,
        std::slice::from_ref(&ten.service_id),
        "quota:read,quota:write",
    )
    .await;
    let pl = t.transfer("004", "014", 100).await.payload;
    t.post_ok("/v2/verify/bank", &ten.api_key, json!({"payload": pl}))
        .await;
    let br = ten.branch_id.as_str();
    let q = format!("/b2b/branches/{br}/quota");
    let (s, header_form) = send(&t, &p, Req::new("GET", Q, "", br)).await;
    assert_eq!(s, 200);
    let (s, v) = send(
        &t,
        &p,
        Req {
            query: "?verbose=1",
            ..Req::at("GET", &q, "")
        },
    )
    .await;
    assert_eq!((s, &v), (200, &header_form));
    let (s, v) = send(&t, &p, Req::at("PUT", &q, r#"{"limitQuota": 10}"#)).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        v["data"],
        json!({"id": br, "name": "Main", "limitQuota": 10, "usedQuota": 1, "totalUsedQuota": 1})
    );
    let adjust = format!("{q}/adjust");
    let (s, v) = send(&t, &p, Req::at("POST", &adjust, r#"{"amount": -4}"#)).await;
    assert_eq!((s, v["data"]["limitQuota"].as_i64()), (200, Some(6)), "{v}");
    let (s, v) = send(&t, &p, Req::at("POST", &adjust, r#"{"amount": -6}"#)).await;
    assert_eq!((s, code(&v)), (400, "QUOTA_BELOW_USAGE"), "{v}");
    let (s, v) = send(&t, &p, Req::at("POST", &format!("{q}/reset"), "")).await;
    assert_eq!((s, v["data"]["usedQuota"].as_i64()), (200, Some(0)), "{v}");
    assert_eq!(v["data"]["totalUsedQuota"], 1);
    // Audited like the header form.
    let entries = t.app.store.list_audit(&ten.branch_id).await.unwrap();
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["quota.set", "quota.adjust", "quota.reset"]);
    // The branch is the path's: a header naming another is not read.
    let other = t.tenant(10).await;
    let (s, v) = send(&t, &p, Req::new("GET", &q, "", other.branch_id.as_str())).await;
    assert_eq!((s, &v["data"]["branch"]["id"]), (200, &json!(br)));
    t.stop().await;
});

both!(path_form_refusals, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let other = t.tenant(100).await;
    let p = partner(&t, std::slice::from_ref(&ten.service_id), ALL).await;
    let br = ten.branch_id.as_str();
    let q = format!("/b2b/branches/{br}/quota");
    let elsewhere = format!("/b2b/branches/{}/quota", other.branch_id);
    let with_v2 = format!("/v2{q}");
    let patch = format!("/b2b/branches/{br}");
    let now = t.clock.now().unix_timestamp();
    let nonce = uuid::Uuid::new_v4().to_string();
    let wrong = "0".repeat(64);
    let get = || Req::at("GET", &q, "");
    for (why, req, status, want) in [
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
            "first use",
            Req {
                nonce: Some(nonce.clone()),
                ..get()
            },
            200,
            "<none>",
        ),
        (
            "replayed",
            Req {
                nonce: Some(nonce.clone()),
                ..get()
            },
            401,
            "INVALID_NONCE",
        ),
        (
            "body changed",
            Req {
                sent_body: Some(r#"{"name": "Evil"}"#),
                ..Req::at("PATCH", &patch, r#"{"name": "Shop"}"#)
            },
            401,
            "INVALID_SIGNATURE",
        ),
        // Signed for its own branch, sent to another: the path is signed.
        (
            "path changed",
            Req {
                signed_path: Some(&q),
                ..Req::at("GET", &elsewhere, "")
            },
            401,
            "INVALID_SIGNATURE",
        ),
        (
            "signed with /v2",
            Req {
                signed_path: Some(&with_v2),
                ..get()
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
        (
            "other service",
            Req::at("GET", &elsewhere, ""),
            403,
            "BRANCH_ACCESS_DENIED",
        ),
        (
            "not a uuid",
            Req::at("GET", "/b2b/branches/main/quota", ""),
            400,
            "VALIDATION_ERROR",
        ),
    ] {
        let (s, v) = send(&t, &p, req).await;
        assert_eq!((s, code(&v)), (status, want), "{why}: {v}");
    }
    let (_, v) = send(&t, &p, Req::at("GET", &patch, "")).await;
    assert_eq!(v["data"]["name"], "Main", "nothing changed");
    t.stop().await;
});

both!(scopes_are_required, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let quota_only = partner(
        &t,
        std::slice::from_ref(&ten.service_id),
        "quota:read,quota:write",
    )
    .await;
    let readers = partner(
        &t,
        std::slice::from_ref(&ten.service_id),
        "branch:read,bank-account:read",
    )
    .await;
    let br = ten.branch_id.as_str();
    let one = format!("/b2b/branches/{br}");
    let accounts = format!("{one}/bank-accounts");
    let account = format!("{accounts}/00000000-0000-4000-8000-000000000000");
    let new_account = r#"{"bankCode": "014", "bankNumber": "1234567890", "nameTh": "ร้าน", "nameEn": "Shop", "type": "PERSONAL"}"#;
    let q = format!("{one}/quota");
    let cases: [(&P, &str, &str, &str, &str); 13] = [
        (&quota_only, "GET", "/b2b/branches", "", "branch:read"),
        (&quota_only, "GET", &one, "", "branch:read"),
        (&quota_only, "GET", &accounts, "", "bank-account:read"),
        (&quota_only, "GET", "/b2b/banks", "", "bank-account:read"),
        (
            &readers,
            "POST",
            "/b2b/branches",
            r#"{"name": "X"}"#,
            "branch:write",
        ),
        (&readers, "PATCH", &one, r#"{"name": "X"}"#, "branch:write"),
        (&readers, "DELETE", &one, "", "branch:write"),
        (
            &readers,
            "POST",
            &accounts,
            new_account,
            "bank-account:write",
        ),
        (&readers, "DELETE", &account, "", "bank-account:write"),
        (
            &readers,
            "POST",
            "/b2b/bank-accounts",
            new_account,
            "bank-account:write",
        ),
        (&readers, "GET", &q, "", "quota:read"),
        (&readers, "PUT", &q, r#"{"limitQuota": 1}"#, "quota:write"),
        (&readers, "POST", &format!("{q}/reset"), "", "quota:write"),
    ];
    for (who, method, path, body, scope) in cases {
        let (s, v) = send(&t, who, Req::at(method, path, body)).await;
        assert_eq!(
            (s, code(&v)),
            (403, "PERMISSION_DENIED"),
            "{method} {path}: {v}"
        );
        assert!(
            v["error"]["message"].as_str().unwrap().ends_with(scope),
            "{v}"
        );
    }
    // The readers read.
    for path in [
        "/b2b/branches",
        one.as_str(),
        accounts.as_str(),
        "/b2b/banks",
    ] {
        let (s, v) = send(&t, &readers, Req::at("GET", path, "")).await;
        assert_eq!(s, 200, "{path}: {v}");
    }
    // Nothing was created.
    let (_, v) = send(&t, &readers, Req::at("GET", "/b2b/branches", "")).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["bankAccounts"], json!([]));
    t.stop().await;
});

both!(branch_and_account_operations, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let other = t.tenant(100).await;
    let p = partner(&t, std::slice::from_ref(&ten.service_id), ALL).await;
    // The partner's branches only: the other service's are neither listed nor reachable.
    let (s, v) = send(&t, &p, Req::at("GET", "/b2b/branches", "")).await;
    assert_eq!(s, 200, "{v}");
    let ids: Vec<&str> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [ten.branch_id.as_str()]);
    let theirs = format!("/b2b/branches/{}", other.branch_id);
    for (method, path, body) in [
        ("GET", theirs.clone(), ""),
        ("PATCH", theirs.clone(), r#"{"isActive": false}"#),
        ("DELETE", theirs.clone(), ""),
        ("GET", format!("{theirs}/bank-accounts"), ""),
    ] {
        let (s, v) = send(&t, &p, Req::at(method, &path, body)).await;
        assert_eq!(
            (s, code(&v)),
            (403, "BRANCH_ACCESS_DENIED"),
            "{method} {path}: {v}"
        );
    }
    let body = format!(
        r#"{{"name": "Kiosk", "serviceId": "{}"}}"#,
        other.service_id
    );
    let (s, v) = send(&t, &p, Req::at("POST", "/b2b/branches", &body)).await;
    assert_eq!((s, code(&v)), (403, "BRANCH_ACCESS_DENIED"), "{v}");
    assert_eq!(t.get_ok("/v2/info", &other.api_key).await["success"], true);

    // Create: the new branch's key works at once.
    let (s, v) = send(
        &t,
        &p,
        Req::at(
            "POST",
            "/b2b/branches",
            r#"{"name": "Kiosk", "ipAddress": "127.0.0.1", "limitQuota": 5}"#,
        ),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    let d = &v["data"];
    assert_eq!(
        (
            d["name"].as_str(),
            d["isActive"].as_bool(),
            d["ipAddress"].as_str(),
            d["limitQuota"].as_i64()
        ),
        (Some("Kiosk"), Some(true), Some("127.0.0.1"), Some(5))
    );
    let id = d["id"].as_str().unwrap().to_string();
    let key = d["apiKey"].as_str().unwrap().to_string();
    assert_eq!(
        t.get_ok("/v2/info", &key).await["data"]["branch"]["name"],
        "Kiosk"
    );
    let (s, v) = send(
        &t,
        &p,
        Req::at("POST", "/b2b/branches", r#"{"ipAddress": "nowhere"}"#),
    )
    .await;
    assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"), "{v}");

    // Read, change, (de)activate: the key follows.
    let one = format!("/b2b/branches/{id}");
    let (s, v) = send(&t, &p, Req::at("GET", &one, "")).await;
    assert_eq!(
        (s, v["data"]["apiKey"].clone()),
        (200, Value::Null),
        "the key is shown once"
    );
    let (s, v) = send(
        &t,
        &p,
        Req::at(
            "PATCH",
            &one,
            r#"{"name": "Kiosk 2", "isActive": false, "ipAddress": null}"#,
        ),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(
        (
            v["data"]["name"].as_str(),
            v["data"]["isActive"].as_bool(),
            v["data"]["ipAddress"].clone()
        ),
        (Some("Kiosk 2"), Some(false), Value::Null)
    );
    let (s, v) = t.get("/v2/info", Some(&key)).await;
    assert_eq!((s, code(&v)), (403, "BRANCH_INACTIVE"));
    let (s, _) = send(&t, &p, Req::at("PATCH", &one, r#"{"isActive": true}"#)).await;
    assert_eq!(s, 200);

    // Accounts: on the branch by path, or by branchId; listed in the branch; removed.
    let accounts = format!("{one}/bank-accounts");
    let (s, v) = send(&t, &p, Req::at("POST", &accounts, r#"{"bankCode": "TRUEMONEY", "bankNumber": "0812345678", "nameTh": "ร้านกาแฟ ดีดี", "nameEn": "DD Coffee", "type": "PERSONAL"}"#)).await;
    assert_eq!(s, 201, "{v}");
    let wallet = v["data"]["id"].as_str().unwrap().to_string();
    let body = format!(
        r#"{{"branchId": "{id}", "bankCode": "014", "bankNumber": "1234567890", "nameTh": "ร้าน", "nameEn": "Shop", "type": "JURISTIC"}}"#
    );
    let (s, v) = send(&t, &p, Req::at("POST", "/b2b/bank-accounts", &body)).await;
    assert_eq!(s, 201, "{v}");
    let body = format!(
        r#"{{"branchId": "{}", "bankCode": "014", "bankNumber": "1234567899", "nameTh": "ร้าน", "nameEn": "Shop", "type": "JURISTIC"}}"#,
        other.branch_id
    );
    let (s, v) = send(&t, &p, Req::at("POST", "/b2b/bank-accounts", &body)).await;
    assert_eq!((s, code(&v)), (403, "BRANCH_ACCESS_DENIED"), "{v}");
    let (s, v) = send(&t, &p, Req::at("GET", &accounts, "")).await;
    assert_eq!((s, v["data"].as_array().unwrap().len()), (200, 2), "{v}");
    // The branch's own key sees the same accounts, and matches wallet slips with them.
    assert_eq!(
        t.get_ok("/v2/bank-accounts", &key).await["data"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (s, v) = send(&t, &p, Req::at("GET", &one, "")).await;
    assert_eq!(
        (s, v["data"]["bankAccounts"].as_array().unwrap().len()),
        (200, 2)
    );
    let (s, v) = send(
        &t,
        &p,
        Req::at("DELETE", &format!("{accounts}/{wallet}"), ""),
    )
    .await;
    assert_eq!((s, v["data"]["id"].as_str()), (200, Some(wallet.as_str())));
    let (s, v) = send(
        &t,
        &p,
        Req::at("DELETE", &format!("{accounts}/{wallet}"), ""),
    )
    .await;
    assert_eq!((s, code(&v)), (404, "BANK_ACCOUNT_NOT_FOUND"));
    let (s, v) = send(&t, &p, Req::at("GET", "/b2b/banks", "")).await;
    assert_eq!(s, 200);
    assert!(v["data"]
        .as_array()
        .unwrap()
        .iter()
        .any(|b| b["code"] == "TRUEMONEY"));

    // Delete: the main branch never; a sub-branch ends (inactive, key revoked), kept listed.
    let main = format!("/b2b/branches/{}", ten.branch_id);
    let (s, v) = send(&t, &p, Req::at("DELETE", &main, "")).await;
    assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"), "{v}");
    let (s, _) = send(&t, &p, Req::at("DELETE", &one, "")).await;
    assert_eq!(s, 200);
    let (s, v) = t.get("/v2/info", Some(&key)).await;
    assert_eq!((s, code(&v)), (401, "INVALID_API_KEY"));
    let (_, v) = send(&t, &p, Req::at("GET", &one, "")).await;
    assert_eq!(v["data"]["isActive"], false);
    assert_eq!(t.get_ok("/v2/info", &ten.api_key).await["success"], true);
    t.stop().await;
});
