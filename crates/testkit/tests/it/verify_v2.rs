//! `/v2` over HTTP against a real server, on SQLite and on PostgreSQL.

use serde_json::{json, Value};
use testkit::{both, post_concurrently, Backend, Tenant, TestApp};

use crate::common::{assert_error, code, record_with, strings};

async fn info_used(t: &TestApp, key: &str) -> (i64, i64) {
    let v = t.get_ok("/v2/info", key).await;
    (
        v["data"]["application"]["quota"]["used"].as_i64().unwrap(),
        v["data"]["branch"]["quota"]["used"].as_i64().unwrap(),
    )
}

/// A tenant with `quota`, and `n` identical verifications sent at once of one fresh slip of 42
/// baht between the banks `(from, to)`, as `body` makes them of its payload; the answers.
async fn all_at_once(
    b: Backend,
    quota: i64,
    (from, to): (&str, &str),
    body: impl FnOnce(String) -> Value,
    n: usize,
) -> (TestApp, Tenant, Vec<(u16, Value)>) {
    let (t, ten) = TestApp::spawn_with_tenant(b, quota).await;
    let body = body(t.transfer(from, to, 4200).await.payload);
    let answers = post_concurrently(&[&t.base], "/v2/verify/bank", &ten.api_key, &body, n).await;
    (t, ten, answers)
}

both!(verifies_a_slip_with_every_field, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let tr = t.transfer("004", "014", 15050).await;
    let v = t
        .verify_bank_ok(
            &ten.api_key,
            json!({"payload": tr.payload, "remark": "order 17"}),
        )
        .await;
    assert_eq!(v["success"], true);
    let d = &v["data"];
    assert_eq!(d["remark"], "order 17");
    assert_eq!(d["isDuplicate"], false);
    assert_eq!(d["amountInSlip"], 150.5);
    // Without `matchAmount` there is nothing to report (docs/decisions.md, issue 14).
    assert!(d.get("isAmountMatched").is_none(), "{d}");
    assert_eq!(d["matchedAccount"], Value::Null);
    let r = &d["rawSlip"];
    assert_eq!(r["payload"], tr.payload);
    assert_eq!(r["transRef"], tr.trans_ref);
    assert!(
        r["date"].as_str().unwrap().ends_with("+07:00"),
        "{}",
        r["date"]
    );
    assert_eq!(r["countryCode"], "TH");
    assert_eq!(r["amount"]["amount"], 150.5);
    assert_eq!(r["amount"]["local"]["amount"], 150.5);
    assert_eq!(r["amount"]["local"]["currency"], "THB");
    assert_eq!(r["fee"], 0.0);
    for k in ["ref1", "ref2", "ref3"] {
        assert_eq!(r[k], "");
    }
    assert_eq!(r["sender"]["bank"]["id"], "004");
    assert_eq!(r["sender"]["bank"]["short"], "KBANK");
    assert!(!r["sender"]["bank"]["name"].as_str().unwrap().is_empty());
    assert!(!r["sender"]["account"]["name"]["th"]
        .as_str()
        .unwrap()
        .is_empty());
    assert_eq!(r["sender"]["account"]["bank"]["type"], "BANKAC");
    assert!(r["sender"]["account"]["bank"]["account"]
        .as_str()
        .unwrap()
        .starts_with("xxx-"));
    assert_eq!(r["receiver"]["bank"]["id"], "014");
    assert_eq!(r["receiver"]["bank"]["short"], "SCB");
    assert!(r["receiver"]
        .as_object()
        .unwrap()
        .contains_key("merchantId"));
    assert_eq!(info_used(&t, &ten.api_key).await, (1, 1));
    // What scanners and bank apps add: surrounding whitespace, a lower-case CRC.
    let n = tr.payload.len();
    let sloppy = format!(
        " {}{}\r\n",
        &tr.payload[..n - 4],
        tr.payload[n - 4..].to_lowercase()
    );
    let v = t
        .verify_bank_ok(&ten.api_key, json!({"payload": sloppy}))
        .await;
    assert_eq!(v["data"]["rawSlip"]["transRef"], tr.trans_ref);
    t.stop().await;
});

both!(duplicates_and_amount_matching, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let tr = t.transfer("014", "004", 99900).await;
    let body = json!({"payload": tr.payload, "checkDuplicate": true, "matchAmount": 999});
    let (_, first) = t.verify_bank(&ten.api_key, body.clone()).await;
    assert_eq!(first["data"]["isDuplicate"], false);
    assert_eq!(first["data"]["isAmountMatched"], true);
    assert_eq!(first["data"]["amountInOrder"], 999.0);
    let (_, second) = t.verify_bank(&ten.api_key, body).await;
    assert_eq!(second["data"]["isDuplicate"], true);
    // Without checkDuplicate the answer does not report duplicates.
    let (_, third) = t
        .verify_bank(
            &ten.api_key,
            json!({"payload": tr.payload, "matchAmount": 999.01}),
        )
        .await;
    assert_eq!(third["data"]["isDuplicate"], false);
    assert_eq!(third["data"]["isAmountMatched"], false);
    // Another branch of the same service sees the slip as used (cross-branch duplicates).
    let (_, other_key) = t.branch(&ten.service_id, "Branch 2", None).await;
    let (_, v) = t
        .verify_bank(
            &other_key,
            json!({"payload": tr.payload, "checkDuplicate": true}),
        )
        .await;
    assert_eq!(v["data"]["isDuplicate"], true);
    // Another service has never seen it.
    let other = t.tenant(10).await;
    let (_, v) = t
        .verify_bank(
            &other.api_key,
            json!({"payload": tr.payload, "checkDuplicate": true}),
        )
        .await;
    assert_eq!(v["data"]["isDuplicate"], false);
    t.stop().await;
});

both!(slips_that_are_not_verified, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let tr = t.transfer("004", "014", 10000).await;
    // One changed character: the CRC no longer matches.
    let mut tampered = tr.payload.clone().into_bytes();
    let i = 20;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    let body = json!({"payload": tampered});
    t.verify_bank_err(&ten.api_key, body, 404, "SLIP_NOT_FOUND")
        .await;
    // A well-formed slip the bank does not know.
    let unknown = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
    let (s, v) = t
        .verify_bank(&ten.api_key, json!({"payload": unknown}))
        .await;
    assert_error(s, &v, 404, "SLIP_NOT_FOUND", "no transfer");
    // Plain text.
    t.verify_bank_err(
        &ten.api_key,
        json!({"payload": "hello"}),
        404,
        "SLIP_NOT_FOUND",
    )
    .await;
    // A PromptPay payment QR is explained, not just refused.
    let pp = "00020101021129370016A000000677010111011300668123456785802TH53037645406150.506304";
    let crc = slip_qr::crc16_ccitt_false(pp.as_bytes());
    let pp = format!("{pp}{crc:04X}");
    let (s, v) = t.verify_bank(&ten.api_key, json!({"payload": pp})).await;
    assert_error(s, &v, 404, "SLIP_NOT_FOUND", "PromptPay");
    // Nothing above used quota.
    assert_eq!(info_used(&t, &ten.api_key).await, (0, 0));
    t.stop().await;
});

both!(
    bangkok_bank_is_pending_for_five_minutes,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let tr = t.transfer("002", "004", 5000).await;
        let body = json!({"payload": tr.payload});
        t.verify_bank_err(&ten.api_key, body.clone(), 404, "SLIP_PENDING")
            .await;
        t.clock
            .advance(time::Duration::minutes(4) + time::Duration::seconds(59));
        let (s, _) = t.verify_bank(&ten.api_key, body.clone()).await;
        assert_eq!(s, 404);
        t.clock.advance(time::Duration::seconds(1));
        t.verify_bank_ok(&ten.api_key, body).await;
        assert_eq!(info_used(&t, &ten.api_key).await, (1, 1));
        t.stop().await;
    }
);

both!(authentication, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let tr = t.transfer("004", "014", 10000).await;
    let body = json!({"payload": tr.payload}).to_string();
    let (s, v) = t.post_raw("/v2/verify/bank", None, &body).await;
    assert_eq!((s, code(&v)), (401, "MISSING_API_KEY"));
    let (s, v) = t
        .post_raw("/v2/verify/bank", Some("not-a-key"), &body)
        .await;
    assert_eq!((s, code(&v)), (401, "INVALID_API_KEY"));
    let unknown = "3f2a1c4e-8b7d-4e6f-9a1b-2c3d4e5f6a7b";
    let (s, v) = t.post_raw("/v2/verify/bank", Some(unknown), &body).await;
    assert_eq!((s, code(&v)), (401, "INVALID_API_KEY"));
    let (s, v) = t.get("/v2/info", Some(&ten.api_key.to_uppercase())).await;
    assert_eq!(s, 200, "keys are case-insensitive UUIDs: {v}");

    let upd = |ips: Option<Vec<String>>, active: Option<bool>| services::admin::BranchUpdate {
        allow_ips: ips,
        active,
        ..Default::default()
    };
    let send = || t.post_raw("/v2/verify/bank", Some(&ten.api_key), &body);
    let only_private = upd(Some(vec!["10.0.0.0/8".into()]), None);
    t.update_branch(&ten.branch_id, &only_private).await;
    let (s, v) = send().await;
    assert_eq!((s, code(&v)), (403, "IP_NOT_ALLOWED"));
    let inactive = upd(Some(vec!["127.0.0.1".into()]), Some(false));
    t.update_branch(&ten.branch_id, &inactive).await;
    let (s, v) = send().await;
    assert_eq!((s, code(&v)), (403, "BRANCH_INACTIVE"));
    t.update_branch(&ten.branch_id, &upd(None, Some(true)))
        .await;
    let (s, _) = send().await;
    assert_eq!(s, 200);

    let svc = &t.app.services;
    let new_key = svc.admin().rotate_key(&ten.branch_id, None).await.unwrap();
    t.get_err("/v2/info", &ten.api_key, 401, "INVALID_API_KEY")
        .await;
    t.get_ok("/v2/info", &new_key).await;
    assert_eq!(info_used(&t, &new_key).await, (1, 1));
    t.stop().await;
});

both!(validation_errors_use_no_quota, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let k = Some(ten.api_key.as_str());
    let cases: &[(&str, &str)] = &[
        (
            r#"{"payload": 5, "checkDuplicate": "yes"}"#,
            "payload: must be a string; checkDuplicate: must be a boolean",
        ),
        (r#"{"checkDuplicate": true}"#, "payload: is required"),
        ("", "payload: is required"),
        ("{not json", "body: is not valid JSON"),
        ("[1,2]", "body: must be a JSON object"),
        (
            r#"{"payload": "   "}"#,
            "payload: must be 1 to 128 characters",
        ),
        (
            r#"{"payload": "x", "matchAmount": "150"}"#,
            "matchAmount: must be a number",
        ),
        (
            r#"{"payload": "x", "matchAmount": 1.005}"#,
            "matchAmount: must have at most 2 decimal places",
        ),
        (
            r#"{"payload": "x", "matchAmount": -1}"#,
            "matchAmount: must not be negative",
        ),
    ];
    for (body, msg) in cases {
        let (s, v) = t.post_raw("/v2/verify/bank", k, body).await;
        assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"), "{body}: {v}");
        assert_eq!(v["error"]["message"], *msg, "{body}");
        assert_eq!(v["success"], false);
    }
    let long = "A".repeat(129);
    let body = json!({"payload": long});
    t.verify_bank_err(&ten.api_key, body, 400, "VALIDATION_ERROR")
        .await;
    let (s, v) = t
        .verify_bank(
            &ten.api_key,
            json!({"payload": "x", "url": "https://example.com/a.png"}),
        )
        .await;
    assert_error(s, &v, 400, "VALIDATION_ERROR", "exactly one");
    // Authentication comes before body checks.
    let (s, v) = t.post_raw("/v2/verify/bank", None, "{not json").await;
    assert_eq!((s, code(&v)), (401, "MISSING_API_KEY"));
    assert_eq!(info_used(&t, &ten.api_key).await, (0, 0));
    t.stop().await;
});

both!(quota_limits_service_and_branch, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 3).await;
    let (_, limited) = t.branch(&ten.service_id, "Kiosk", Some(1)).await;
    let p1 = t.transfer("004", "014", 100).await.payload;
    let p2 = t.transfer("004", "014", 200).await.payload;
    t.verify_bank_ok(&limited, json!({"payload": p1})).await;
    let (s, v) = t.verify_bank(&limited, json!({"payload": p2})).await;
    assert_eq!((s, code(&v)), (403, "QUOTA_EXCEEDED"), "branch limit");
    for _ in 0..2 {
        t.verify_bank_ok(&ten.api_key, json!({"payload": p2})).await;
    }
    let (s, v) = t.verify_bank(&ten.api_key, json!({"payload": p2})).await;
    assert_eq!((s, code(&v)), (403, "QUOTA_EXCEEDED"), "service limit");
    assert_eq!(info_used(&t, &ten.api_key).await, (3, 2));
    t.stop().await;
});

both!(
    concurrent_first_verification_is_unique,
    |b: Backend| async move {
        let once = |p| json!({"payload": p, "checkDuplicate": true});
        let (t, ten, answers) = all_at_once(b, 1000, ("014", "004"), once, 50).await;
        let mut firsts = 0;
        for (s, v) in answers {
            assert_eq!(s, 200, "{v}");
            firsts += (v["data"]["isDuplicate"] == false) as i32;
        }
        assert_eq!(firsts, 1);
        assert_eq!(info_used(&t, &ten.api_key).await, (50, 50));
        t.stop().await;
    }
);

both!(
    concurrent_requests_never_overspend_quota,
    |b: Backend| async move {
        let plain = |p| json!({"payload": p});
        let (t, ten, answers) = all_at_once(b, 10, ("004", "014"), plain, 30).await;
        let mut ok = 0;
        for (s, v) in answers {
            match s {
                200 => ok += 1,
                403 => assert_eq!(code(&v), "QUOTA_EXCEEDED"),
                other => panic!("unexpected status {other}: {v}"),
            }
        }
        assert_eq!(ok, 10);
        assert_eq!(info_used(&t, &ten.api_key).await, (10, 10));
        t.stop().await;
    }
);

both!(other_endpoints, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let (s, v) = t.get("/health", None).await;
    assert_eq!((s, v["success"].as_bool()), (200, Some(true)));
    t.get_err("/v2/nope", &ten.api_key, 404, "NOT_FOUND").await;
    let (s, v) = t.get("/v2/verify/bank", Some(&ten.api_key)).await;
    assert_eq!((s, code(&v)), (404, "NOT_FOUND"), "wrong method");
    let (s, v) = t.get("/v2/banks", None).await;
    assert_eq!((s, code(&v)), (401, "MISSING_API_KEY"));
    let v = t.get_ok("/v2/banks", &ten.api_key).await;
    let codes = strings(&v["data"], "code");
    for c in [
        "002",
        "004",
        "006",
        "011",
        "014",
        "025",
        "030",
        "069",
        "098",
        "PROMPTPAY",
    ] {
        assert!(codes.contains(&c), "{c} missing");
    }
    let bbl = record_with(&v["data"], "code", "002");
    assert_eq!(bbl["shortCode"], "BBL");
    assert_eq!(bbl["swiftCode"], "BKKBTHBK");
    let opts = strings(&bbl["extraVerify"], "value");
    assert_eq!(opts, ["NAME", "NUMBER", "NAME_NUMBER"]);
    let v = t.get_ok("/v2/info", &ten.api_key).await;
    assert_eq!(v["data"]["application"]["name"], "Test shop");
    assert_eq!(v["data"]["application"]["quota"]["max"], 100);
    assert_eq!(v["data"]["application"]["quota"]["remaining"], 100);
    assert_eq!(v["data"]["branch"]["isActive"], true);
    assert_eq!(v["data"]["branch"]["quota"]["max"], Value::Null);
    t.stop().await;
});

both!(database_failure_is_a_plain_500, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    // The pool closes under the running server: every query now fails inside the store.
    t.app.store.close().await;
    let v = t
        .get_err("/v2/info", &ten.api_key, 500, "INTERNAL_SERVER_ERROR")
        .await;
    assert_eq!(
        v["error"]["message"], "internal server error",
        "no internals: {v}"
    );
    t.stop().await;
});

// Two nodes on one database behave as one service: one first verification, exact quota.
both!(
    two_nodes_share_duplicates_and_quota,
    |b: Backend| async move {
        let n1 = TestApp::spawn(b).await;
        let n2 = n1.another_node().await;
        let ten = n1.tenant(30).await;
        let p = n1.transfer("004", "014", 4200).await.payload;
        let body = json!({"payload": p, "checkDuplicate": true});
        let bases = [n1.base.as_str(), n2.base.as_str()];
        let answers = post_concurrently(&bases, "/v2/verify/bank", &ten.api_key, &body, 60).await;
        let (mut ok, mut firsts, mut refused) = (0, 0, 0);
        for (s, v) in answers {
            match s {
                200 => {
                    ok += 1;
                    firsts += (v["data"]["isDuplicate"] == false) as i32;
                }
                403 => {
                    assert_eq!(code(&v), "QUOTA_EXCEEDED");
                    refused += 1;
                }
                other => panic!("unexpected {other}: {v}"),
            }
        }
        assert_eq!((ok, refused, firsts), (30, 30, 1));
        assert_eq!(info_used(&n2, &ten.api_key).await, (30, 30));
        n2.stop().await;
        n1.stop().await;
    }
);

async fn set_service_state(
    t: &TestApp,
    id: &domain::ServiceId,
    state: domain::model::ServiceState,
) {
    let upd = services::admin::ServiceUpdate {
        state: Some(state),
        ..Default::default()
    };
    t.update_service(id, &upd).await;
}

both!(
    account_states_in_documented_order,
    |b: Backend| async move {
        use domain::model::ServiceState;
        use services::admin::ServiceUpdate;
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let svc = &t.app.services;
        let p = t.transfer("004", "014", 100).await.payload;
        let verify = || t.verify_bank(&ten.api_key, json!({"payload": p}));

        let owner = svc.admin().create_user("Owner").await.unwrap();
        t.update_service(
            &ten.service_id,
            &ServiceUpdate {
                owner_id: Some(owner.id.clone()),
                ..Default::default()
            },
        )
        .await;
        svc.admin().set_user_banned(&owner.id, true).await.unwrap();
        let (s, v) = verify().await;
        assert_eq!((s, code(&v)), (403, "USER_BANNED"));
        set_service_state(&t, &ten.service_id, ServiceState::Banned).await;
        let (s, v) = verify().await;
        assert_eq!(
            (s, code(&v)),
            (403, "SERVICE_BANNED"),
            "banned service before banned owner"
        );
        set_service_state(&t, &ten.service_id, ServiceState::Deleted).await;
        t.get_err("/v2/info", &ten.api_key, 403, "SERVICE_DELETED")
            .await;
        t.set_branch_active(&ten.branch_id, false).await;
        let (s, v) = verify().await;
        assert_eq!(
            (s, code(&v)),
            (403, "BRANCH_INACTIVE"),
            "branch state comes first"
        );

        t.set_branch_active(&ten.branch_id, true).await;
        svc.admin().set_user_banned(&owner.id, false).await.unwrap();
        let expiry = domain::Clock::now(&*t.clock) + time::Duration::days(3);
        t.update_service(
            &ten.service_id,
            &ServiceUpdate {
                state: Some(ServiceState::Active),
                expires_at: Some(Some(expiry)),
                ..Default::default()
            },
        )
        .await;
        let (s, _) = verify().await;
        assert_eq!(s, 200);
        t.clock.advance(time::Duration::days(3));
        let (s, v) = verify().await;
        assert_eq!((s, code(&v)), (403, "SERVICE_EXPIRED"));
        assert_eq!(
            svc.admin()
                .get_service(&ten.service_id)
                .await
                .unwrap()
                .unwrap()
                .quota
                .used,
            1
        );
        t.stop().await;
    }
);

both!(quota_resets_each_billing_cycle, |b: Backend| async move {
    use services::admin::BranchUpdate;
    let (t, ten) = TestApp::spawn_with_tenant(b, 1).await;
    let p1 = t.transfer("004", "014", 100).await.payload;
    let p2 = t.transfer("004", "014", 200).await.payload;
    t.verify_bank_ok(&ten.api_key, json!({"payload": p1})).await;
    t.verify_bank_err(&ten.api_key, json!({"payload": p2}), 403, "QUOTA_EXCEEDED")
        .await;
    // A month later the counter reads 0 before any request arrives; the total is kept.
    t.clock.advance(time::Duration::days(31));
    let (_, v) = t.get("/v2/info", Some(&ten.api_key)).await;
    assert_eq!(v["data"]["application"]["quota"]["used"], 0);
    assert_eq!(v["data"]["application"]["quota"]["remaining"], 1);
    assert_eq!(v["data"]["application"]["quota"]["totalUsed"], 1);
    t.verify_bank_ok(&ten.api_key, json!({"payload": p2})).await;
    let (_, v) = t.get("/v2/info", Some(&ten.api_key)).await;
    assert_eq!(v["data"]["application"]["quota"]["used"], 1);
    assert_eq!(v["data"]["application"]["quota"]["totalUsed"], 2);
    assert_eq!(v["data"]["branch"]["quota"]["used"], 1);
    assert_eq!(v["data"]["branch"]["quota"]["totalUsed"], 2);
    // A branch limit can be set and removed.
    let svc = &t.app.services;
    let upd = |l| BranchUpdate {
        limit_quota: Some(l),
        ..Default::default()
    };
    let br = svc
        .admin()
        .update_branch(&ten.branch_id, &upd(Some(5)))
        .await
        .unwrap();
    assert_eq!(br.quota.limit, Some(5));
    let br = svc
        .admin()
        .update_branch(&ten.branch_id, &upd(None))
        .await
        .unwrap();
    assert_eq!(br.quota.limit, None);
    t.stop().await;
});

both!(rate_limit_per_branch, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    // 5 requests/s with bursts of 3 (half the rate, rounded up).
    t.set_rate_limit(&ten.service_id, Some(5)).await;
    let (_, other_key) = t.branch(&ten.service_id, "Branch 2", None).await;
    let p = t.transfer("004", "014", 100).await.payload;
    for _ in 0..3 {
        t.verify_bank_ok(&ten.api_key, json!({"payload": p})).await;
    }
    let resp = t
        .http
        .post(format!("{}/v2/verify/bank", t.base))
        .bearer_auth(&ten.api_key)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status().as_u16(),
        429,
        "the limit applies before the body is read"
    );
    let h = resp.headers().clone();
    assert_eq!(h["retry-after"], "1");
    assert_eq!(h["x-ratelimit-limit"], "5");
    assert_eq!(h["x-ratelimit-remaining"], "0");
    let reset: i64 = h["x-ratelimit-reset"].to_str().unwrap().parse().unwrap();
    let now = domain::Clock::now(&*t.clock).unix_timestamp();
    assert!(reset > now && reset <= now + 2, "reset {reset} now {now}");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(code(&v), "RATE_LIMIT_EXCEEDED");
    // Another branch has its own allowance; time restores this one.
    t.get_ok("/v2/info", &other_key).await;
    t.clock.advance(time::Duration::milliseconds(200));
    let v = t.get_ok("/v2/info", &ten.api_key).await;
    assert_eq!(
        v["data"]["application"]["quota"]["used"], 3,
        "refused requests used no quota"
    );
    t.stop().await;
});

/// The status of `GET /v2/info` with `key`, claiming `X-Forwarded-For: xff`.
async fn forwarded_info_status(t: &TestApp, key: &str, xff: &str) -> u16 {
    let req = t.http.get(format!("{}/v2/info", t.base)).bearer_auth(key);
    let resp = req.header("x-forwarded-for", xff).send().await.unwrap();
    resp.status().as_u16()
}

both!(
    key_rotation_grace_and_trusted_proxies,
    |b: Backend| async move {
        use services::admin::BranchUpdate;
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let svc = &t.app.services;
        let new_key = svc
            .admin()
            .rotate_key(&ten.branch_id, Some(time::Duration::hours(1)))
            .await
            .unwrap();
        assert_eq!(
            t.get("/v2/info", Some(&ten.api_key)).await.0,
            200,
            "old key in its grace period"
        );
        assert_eq!(t.get("/v2/info", Some(&new_key)).await.0, 200);
        t.clock.advance(time::Duration::hours(1));
        t.get_err("/v2/info", &ten.api_key, 401, "INVALID_API_KEY")
            .await;
        assert!(svc
            .admin()
            .rotate_key(&ten.branch_id, Some(time::Duration::days(8)))
            .await
            .is_err());

        // X-Forwarded-For is ignored unless the peer is a trusted proxy.
        let only = |ip: &str| BranchUpdate {
            allow_ips: Some(vec![ip.into()]),
            ..Default::default()
        };
        svc.admin()
            .update_branch(&ten.branch_id, &only("203.0.113.7"))
            .await
            .unwrap();
        assert_eq!(
            forwarded_info_status(&t, &new_key, "203.0.113.7").await,
            403,
            "an untrusted peer cannot claim an address"
        );
        let trusting = t
            .another_node_with(|s| {
                s.set_trusted_proxies(domain::ip::AllowList::parse(&["127.0.0.1"]).unwrap())
            })
            .await;
        for (xff, status, why) in [
            (
                "198.51.100.1, 203.0.113.7",
                200,
                "behind a trusted proxy the client is the last untrusted hop",
            ),
            (
                "203.0.113.7, 198.51.100.1",
                403,
                "a client-written leftmost entry is not believed",
            ),
        ] {
            let got = forwarded_info_status(&trusting, &new_key, xff).await;
            assert_eq!(got, status, "{why}");
        }
        trusting.stop().await;
        t.stop().await;
    }
);
