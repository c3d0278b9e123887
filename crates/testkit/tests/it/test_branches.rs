//! Test branches (`branches.sandbox`) over HTTP, on SQLite and PostgreSQL: they verify on the
//! sandbox ledger, are never charged, are counted apart in `/v2/info`, and keep their
//! duplicates apart from the production branches of the same service (and the reverse).

use domain::Clock;
use serde_json::{json, Value};
use services::admin::ServiceUpdate;
use store::Space;
use testkit::{both, Backend, TestApp};

use crate::common::{admin_create, id_of, v1_code};

async fn info(t: &TestApp, key: &str) -> Value {
    let v = t.get_ok("/v2/info", key).await;
    v["data"].clone()
}

/// (application used, branch used, application sandboxUsed, branch sandboxUsed).
async fn counts(t: &TestApp, key: &str) -> (i64, i64, i64, i64) {
    let d = info(t, key).await;
    let n = |p: &str| d.pointer(p).and_then(Value::as_i64).expect(p);
    (
        n("/application/quota/used"),
        n("/branch/quota/used"),
        n("/application/quota/sandboxUsed"),
        n("/branch/quota/sandboxUsed"),
    )
}

async fn verify(t: &TestApp, key: &str, payload: &str) -> Value {
    let v = t
        .verify_bank_ok(key, json!({"payload": payload, "checkDuplicate": true}))
        .await;
    v["data"].clone()
}

both!(
    test_and_production_branches_keep_apart,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let prod = ten.api_key.as_str();
        let (test_id, test) = t.test_branch(&ten.service_id, None).await;
        let tr = t.transfer("004", "014", 15050).await;

        let d = info(&t, &test).await;
        assert_eq!(d["branch"]["sandbox"], true);
        assert_eq!(info(&t, prod).await["branch"]["sandbox"], false);

        // First on the test branch: verified, not a duplicate, not charged.
        let v = verify(&t, &test, &tr.payload).await;
        assert_eq!(v["isDuplicate"], false);
        assert_eq!(v["rawSlip"]["transRef"], tr.trans_ref.as_str());
        assert_eq!(counts(&t, &test).await, (0, 0, 1, 1));
        assert_eq!(counts(&t, prod).await, (0, 0, 1, 0));

        // Production never saw it: first there too, and charged.
        assert_eq!(verify(&t, prod, &tr.payload).await["isDuplicate"], false);
        assert_eq!(counts(&t, prod).await, (1, 1, 1, 0));

        // Each side now sees its own earlier verification.
        assert_eq!(verify(&t, &test, &tr.payload).await["isDuplicate"], true);
        assert_eq!(verify(&t, prod, &tr.payload).await["isDuplicate"], true);
        assert_eq!(counts(&t, &test).await, (2, 0, 2, 2));
        assert_eq!(counts(&t, prod).await, (2, 2, 2, 0));

        // The reverse order: production first, the test branch still gets a first.
        let tr2 = t.transfer("014", "004", 9900).await;
        assert_eq!(verify(&t, prod, &tr2.payload).await["isDuplicate"], false);
        assert_eq!(verify(&t, &test, &tr2.payload).await["isDuplicate"], false);

        // Production's record is the production branch's; the test record is kept apart.
        let st = &t.app.store;
        let p = st
            .get_verification(Space::Production, &ten.service_id, "004", &tr.trans_ref)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(p.branch_id, ten.branch_id);
        let s = st
            .get_verification(Space::Sandbox, &ten.service_id, "004", &tr.trans_ref)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(s.branch_id, test_id);
        assert_eq!(s.source.as_deref(), Some("sandbox"));
        assert!(s.transfer.is_some());
        t.stop().await;
    }
);

both!(
    test_branches_are_never_charged_but_still_checked,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 1).await;
        let prod = ten.api_key.as_str();
        // A branch limit of 0 does not stop a test branch either.
        let (test_id, test) = t.test_branch(&ten.service_id, Some(0)).await;
        let tr = t.transfer("004", "014", 100).await;
        verify(&t, prod, &tr.payload).await;
        let tr2 = t.transfer("004", "014", 200).await;
        t.verify_bank_err(prod, json!({"payload": tr2.payload}), 403, "QUOTA_EXCEEDED")
            .await;

        // The service quota is used up: the test branch still verifies, and uses nothing.
        assert_eq!(verify(&t, &test, &tr2.payload).await["isDuplicate"], false);
        let d = info(&t, &test).await;
        assert_eq!(d["application"]["quota"]["used"], 1);
        assert_eq!(d["application"]["quota"]["remaining"], 0);
        assert_eq!(d["branch"]["quota"]["used"], 0);

        // Account states still apply: an inactive branch, then an expired service.
        let (path, slip) = ("/v2/verify/bank", json!({"payload": tr2.payload}));
        t.set_branch_active(&test_id, false).await;
        t.post_err(path, &test, slip.clone(), 403, "BRANCH_INACTIVE")
            .await;
        t.set_branch_active(&test_id, true).await;
        let past = t.clock.now() - time::Duration::days(1);
        t.update_service(
            &ten.service_id,
            &ServiceUpdate {
                expires_at: Some(Some(past)),
                ..Default::default()
            },
        )
        .await;
        t.post_err(path, &test, slip, 403, "SERVICE_EXPIRED").await;
        t.stop().await;
    }
);

both!(v1_duplicates_stay_in_their_space, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let prod = ten.api_key.as_str();
    let (_, test) = t.test_branch(&ten.service_id, None).await;
    let tr = t.transfer("004", "014", 15050).await;
    let body = json!({"payload": tr.payload, "checkDuplicate": true});

    t.post_ok("/api/v1/verify", &test, body.clone()).await;
    let (s, v) = t.post("/api/v1/verify", &test, body.clone()).await;
    assert_eq!((s, v1_code(&v)), (400, "duplicate_slip"), "{v}");
    assert_eq!(v["data"]["transRef"], tr.trans_ref.as_str());
    assert!(v["data"]["verifiedAt"].is_string(), "{v}");

    // Production has not seen the slip: verified and charged; then its own duplicate.
    t.post_ok("/api/v1/verify", prod, body.clone()).await;
    let (s, v) = t.post("/api/v1/verify", prod, body).await;
    assert_eq!(s, 400, "{v}");
    assert_eq!(counts(&t, prod).await, (1, 1, 1, 0));
    t.stop().await;
});

both!(wallet_slips_on_a_test_branch, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
    let (_, test) = t.test_branch(&ten.service_id, None).await;
    let w = t.wallet_transfer(5025, None, None, None).await;
    let body = json!({"payload": w.payload, "checkDuplicate": true});
    let v = t
        .post_ok("/v2/verify/truewallet", &test, body.clone())
        .await;
    assert_eq!(v["data"]["isDuplicate"], false);
    let (_, v) = t.post("/v2/verify/truewallet", &test, body.clone()).await;
    assert_eq!(v["data"]["isDuplicate"], true);
    let (_, v) = t.post("/v2/verify/truewallet", &ten.api_key, body).await;
    assert_eq!(v["data"]["isDuplicate"], false, "{v}");
    assert_eq!(counts(&t, &test).await, (1, 0, 2, 2));
    t.stop().await;
});

both!(async_jobs_of_a_test_branch, |b: Backend| async move {
    let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
    let (_, test) = t.test_branch(&ten.service_id, None).await;
    let tr = t.transfer("004", "014", 15050).await;
    verify(&t, &test, &tr.payload).await;
    let (s, v) = t
        .post(
            "/v2/verify/bank/async",
            &test,
            json!({"payload": tr.payload, "checkDuplicate": true, "callbackUrl": rx.url("hook")}),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let got = rx.wait_for(1).await;
    let body = got[0].json();
    assert_eq!(body["status"], "success", "{body}");
    assert_eq!(
        body["data"]["isDuplicate"], true,
        "the test space's earlier one"
    );
    // The job's outcome is saved before its delivery: wait for it (real-time cap).
    let id = v["data"]["jobId"].as_str().unwrap();
    t.poll_job(&test, id, |j| j["status"] == "done").await;
    assert_eq!(counts(&t, &test).await, (0, 0, 2, 2));
    t.stop().await;
});

both!(admin_api_sets_the_flag, |b: Backend| async move {
    const TOKEN: &str = "test-branches-admin-token-0123456789abcdef";
    let t = TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await;
    let ten = t.tenant(100).await;
    let qa = json!({"serviceId": ten.service_id, "name": "QA", "sandbox": true});
    let branch = admin_create(&t, TOKEN, "/admin/branches", qa).await;
    assert_eq!(branch["sandbox"], true);
    let id = id_of(&branch);
    let path = format!("/admin/branches/{id}");
    let v = t
        .call_ok("PATCH", &path, TOKEN, Some(json!({"sandbox": false})))
        .await;
    assert_eq!(v["data"]["sandbox"], false);
    t.call_err(
        "PATCH",
        &path,
        TOKEN,
        Some(json!({"sandbox": "yes"})),
        400,
        "VALIDATION_ERROR",
    )
    .await;
    let prod = json!({"serviceId": ten.service_id, "name": "Prod"});
    let branch = admin_create(&t, TOKEN, "/admin/branches", prod).await;
    assert_eq!(branch["sandbox"], false, "production by default");
    t.stop().await;
});
