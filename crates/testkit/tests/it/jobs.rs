//! Async verification over HTTP (spec 3, 6): jobs, retries, signed webhooks to a real HTTPS
//! receiver on loopback, batches and polling, on SQLite and PostgreSQL. Time is the test
//! clock: a retry "30 s later" happens when the test moves the clock, never by sleeping.

use domain::job::sign_webhook;
use serde_json::{json, Value};
use services::admin::BranchUpdate;
use std::time::Duration;
use testkit::receiver::Receiver;
use testkit::{both, Backend, Tenant, TestApp};

use crate::common::{assert_validation, code};

/// Another node on `t`'s database whose worker reaches the receiver too.
async fn worker_node(t: &TestApp, rx: &Receiver) -> TestApp {
    let eg = rx.egress();
    t.another_node_with(move |s| s.set_egress(eg)).await
}

/// Posts a batch of `n` fresh slips (slip i carries 1 baht + i satang) to `callback_url`;
/// asserts the `202` and returns its body.
async fn submit_batch_of(t: &TestApp, key: &str, n: i64, callback_url: &str) -> Value {
    let mut slips = Vec::new();
    for i in 0..n {
        let tr = t.transfer("004", "014", 100 + i).await;
        slips.push(json!({"payload": tr.payload}));
    }
    let batch = json!({"callbackUrl": callback_url, "slips": slips});
    let (s, v) = t.post("/v2/verify/bank/batch", key, batch).await;
    assert_eq!(s, 202, "{v}");
    v
}

/// The verification a worker runs for job `id` on this slip.
fn job_request(
    payload: &str,
    check_duplicate: bool,
    id: domain::JobId,
) -> services::verify::VerifyRequest {
    services::verify::VerifyRequest {
        slip: slip_qr::parse_bank_slip(payload).unwrap(),
        check_duplicate,
        match_amount: None,
        remark: None,
        match_account: false,
        job_id: Some(id),
        idempotency: None,
    }
}

/// Waits until job `id` is `status`; asserts it took five attempts and the service has used
/// `used` of its quota.
async fn ends_after_five_attempts(t: &TestApp, ten: &Tenant, id: &str, status: &str, used: i64) {
    let j = t
        .poll_job(&ten.api_key, id, |j| j["status"] == status)
        .await;
    assert_eq!(j["attempts"], 5);
    assert_eq!(t.used(&ten.api_key).await, used);
}

async fn poll(t: &TestApp, key: &str, id: &str) -> Value {
    let v = t.get_ok(&format!("/v2/verify/bank/jobs/{id}"), key).await;
    v["data"].clone()
}

both!(
    success_is_delivered_signed_over_the_raw_bytes,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        t.set_webhook_secret(&ten.branch_id, "whsec_test_1").await;
        let tr = t.transfer("004", "014", 15050).await;
        let id = t.submit_job(
        &ten.api_key,
        json!({"payload": tr.payload, "callbackUrl": rx.url("hook"), "remark": "r1", "matchAmount": 150.5}),
    )
    .await;
        let got = rx.wait_for(1).await;
        let d = &got[0];
        assert_eq!(d.path, "/hook");
        assert_eq!(d.header("content-type"), Some("application/json"));
        assert_eq!(d.header("user-agent"), Some("Service-Webhook/2.0"));
        assert_eq!(
            d.header("x-service-signature"),
            Some(sign_webhook("whsec_test_1", &d.body).as_str())
        );
        let body = d.json();
        // Compact JSON: what is signed is exactly what a re-serialisation without spaces gives.
        assert!(!String::from_utf8_lossy(&d.body).contains(": "));
        assert_eq!(body["jobId"], id.as_str());
        assert_eq!(body["batchId"], Value::Null);
        assert_eq!(body["status"], "success");
        assert_eq!(body["data"]["rawSlip"]["transRef"], tr.trans_ref.as_str());
        assert_eq!(body["data"]["remark"], "r1");
        assert_eq!(body["data"]["isAmountMatched"], true);
        assert!(body.get("error").is_none());
        assert!(body["timestamp"].as_str().unwrap().ends_with("+07:00"));

        let j = t
            .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        assert_eq!(j["status"], "done");
        assert_eq!(j["data"]["rawSlip"]["transRef"], tr.trans_ref.as_str());
        assert_eq!(j["error"], Value::Null);
        assert_eq!(j["attempts"], 1);
        assert_eq!(j["webhook"]["attempts"], 1);
        assert_eq!(j["webhook"]["lastStatus"], 200);
        assert_eq!(t.used(&ten.api_key).await, 1, "charged once");
        assert_eq!(rx.received().len(), 1);
        t.stop().await;
    }
);

both!(
    unsigned_without_secret_and_branch_default_target,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        t.update_branch(
            &ten.branch_id,
            &BranchUpdate {
                webhook_url: Some(rx.url("default-hook")),
                ..Default::default()
            },
        )
        .await;
        let tr = t.transfer("014", "004", 100).await;
        let id = t
            .submit_job(&ten.api_key, json!({"payload": tr.payload}))
            .await;
        let got = rx.wait_for(1).await;
        assert_eq!(got[0].path, "/default-hook");
        assert_eq!(got[0].header("x-service-signature"), None);
        assert_eq!(got[0].json()["jobId"], id.as_str());
        t.stop().await;
    }
);

both!(
    refusals_create_no_job_and_use_no_quota,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        let tr = t.transfer("004", "014", 100).await;
        let cases = [
            (json!({"payload": tr.payload}), 400, "VALIDATION_ERROR"),
            (
                json!({"payload": tr.payload, "callbackUrl": format!("http://localhost:{}/x", rx.addr.port())}),
                400,
                "INVALID_CALLBACK_URL",
            ),
            (
                json!({"payload": tr.payload, "callbackUrl": "https://10.1.2.3/hook"}),
                400,
                "INVALID_CALLBACK_URL",
            ),
            (
                json!({"payload": tr.payload, "callbackUrl": "ftp://example.com/x"}),
                400,
                "INVALID_CALLBACK_URL",
            ),
            (
                json!({"payload": "not a slip", "callbackUrl": rx.url("h")}),
                404,
                "SLIP_NOT_FOUND",
            ),
            (json!({"callbackUrl": rx.url("h")}), 400, "VALIDATION_ERROR"),
        ];
        for (body, status, want) in cases {
            let (s, v) = t
                .post("/v2/verify/bank/async", &ten.api_key, body.clone())
                .await;
            assert_eq!((s, code(&v)), (status, want), "{body} → {v}");
        }
        let (s, v) = t
            .post_raw(
                "/v2/verify/bank/async",
                None,
                &json!({"payload": tr.payload, "callbackUrl": rx.url("h")}).to_string(),
            )
            .await;
        assert_eq!((s, code(&v)), (401, "MISSING_API_KEY"));
        // Batches: all or nothing.
        let (s, v) = t
        .post(
            "/v2/verify/bank/batch",
            &ten.api_key,
            json!({"callbackUrl": rx.url("h"), "slips": [{"payload": tr.payload}, {"payload": "garbage"}]}),
        )
        .await;
        assert_validation(s, &v, "slips[1]: ");
        t.post_err(
            "/v2/verify/bank/batch",
            &ten.api_key,
            json!({"callbackUrl": rx.url("h"), "slips": []}),
            400,
            "VALIDATION_ERROR",
        )
        .await;
        let many: Vec<Value> = (0..101).map(|_| json!({"payload": tr.payload})).collect();
        t.post_err(
            "/v2/verify/bank/batch",
            &ten.api_key,
            json!({"callbackUrl": rx.url("h"), "slips": many}),
            400,
            "VALIDATION_ERROR",
        )
        .await;

        assert_eq!(t.job_rows().await, 0);
        assert_eq!(t.used(&ten.api_key).await, 0);
        assert!(rx.received().is_empty());
        t.stop().await;
    }
);

both!(
    a_refused_then_accepted_webhook_is_retried_with_the_same_body,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        rx.answer_next(&[404]);
        let (_, id) = t.slip_job(&ten, "004", 100, &rx.url("h")).await;
        rx.wait_for(1).await;
        let j = t
            .poll_job(&ten.api_key, &id, |j| j["webhook"]["attempts"] == 1)
            .await;
        assert_eq!(j["webhook"]["state"], "pending");
        assert_eq!(j["webhook"]["lastStatus"], 404);
        t.clock.advance(time::Duration::seconds(10));
        let got = rx.wait_for(2).await;
        assert_eq!(got[0].body, got[1].body, "the same bytes on every attempt");
        let j = t
            .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        assert_eq!(j["webhook"]["attempts"], 2);
        assert_eq!(t.used(&ten.api_key).await, 1);
        t.stop().await;
    }
);

both!(
    every_attempt_failing_marks_the_failed_job,
    |b: Backend| async move {
        // No quota: the accepted job fails with QUOTA_EXCEEDED (a policy restriction).
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 0).await;
        rx.answer_always(500);
        let (_, id) = t.slip_job(&ten, "004", 100, &rx.url("h")).await;
        rx.wait_for(1).await;
        for (n, secs) in [(2, 10), (3, 30), (4, 120)] {
            t.poll_job(&ten.api_key, &id, |j| j["webhook"]["attempts"] == n - 1)
                .await;
            t.clock.advance(time::Duration::seconds(secs));
            rx.wait_for(n).await;
        }
        let j = t
            .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "failed")
            .await;
        assert_eq!(j["status"], "failed");
        assert_eq!(j["data"], Value::Null);
        assert_eq!(j["error"]["code"], "QUOTA_EXCEEDED");
        assert_eq!(j["error"]["webhook"], "failed");
        assert_eq!(j["error"]["delivery"]["attempts"], 4);
        assert_eq!(j["error"]["delivery"]["lastStatus"], 500);
        let body = rx.received()[0].json();
        assert_eq!(body["status"], "failed");
        assert_eq!(body["data"], Value::Null);
        assert_eq!(body["error"]["code"], "QUOTA_EXCEEDED");
        // No fifth attempt, however long we wait.
        t.clock.advance(time::Duration::seconds(3600));
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(rx.received().len(), 4);
        t.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redirects_are_not_followed_and_slow_receivers_time_out() {
    let rx = Receiver::spawn().await;
    let eg = rx.egress();
    let t = TestApp::spawn_with(Backend::Sqlite, move |s| {
        s.set_egress(eg);
        s.set_schedules(domain::job::Schedules {
            webhook_timeout: Duration::from_millis(300),
            ..Default::default()
        });
    })
    .await;
    let ten = t.tenant(100).await;
    rx.answer_next(&[302]);
    let (_, id) = t.slip_job(&ten, "004", 100, &rx.url("h")).await;
    let j = t
        .poll_job(&ten.api_key, &id, |j| j["webhook"]["attempts"] == 1)
        .await;
    assert_eq!(j["webhook"]["lastStatus"], 302);
    assert_eq!(j["webhook"]["state"], "pending");
    assert!(
        rx.received().iter().all(|r| r.path == "/h"),
        "redirect target never called"
    );

    rx.delay(Duration::from_secs(2));
    t.clock.advance(time::Duration::seconds(10));
    let j = t
        .poll_job(&ten.api_key, &id, |j| j["webhook"]["attempts"] == 2)
        .await;
    assert_eq!(j["webhook"]["lastError"], "timed out");
    assert_eq!(j["webhook"]["lastStatus"], Value::Null);
    t.stop().await;
}

both!(
    batch_of_100_gives_100_callbacks_with_one_batch_id,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 1000).await;
        let v = submit_batch_of(&t, &ten.api_key, 100, &rx.url("batch")).await;
        let batch_id = v["data"]["batchId"].as_str().unwrap().to_string();
        let ids: Vec<String> = v["data"]["jobIds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        assert_eq!(ids.len(), 100);
        let got = rx.wait_for(100).await;
        let mut seen: Vec<String> = got
            .iter()
            .map(|r| {
                let b = r.json();
                assert_eq!(b["batchId"], batch_id.as_str());
                assert_eq!(b["status"], "success");
                b["jobId"].as_str().unwrap().to_string()
            })
            .collect();
        seen.sort();
        seen.dedup();
        let mut want = ids.clone();
        want.sort();
        assert_eq!(seen, want);
        // A job's result is saved before its callback: every job polled now is done.
        for id in &ids {
            assert_eq!(poll(&t, &ten.api_key, id).await["status"], "done");
        }
        // Request order: job i verified slip i.
        let j = poll(&t, &ten.api_key, &ids[7]).await;
        assert_eq!(j["data"]["amountInSlip"], 1.07);
        assert_eq!(t.used(&ten.api_key).await, 100);
        t.stop().await;
    }
);

both!(
    bangkok_bank_pending_succeeds_after_retries,
    |b: Backend| async move {
        let (rx, t, ten, _, id) = TestApp::with_receiver_and_job(b, "002", 100, "h").await;
        // Pending for 5 minutes: attempts at 0, 30, 90, 210 s stay pending, 450 s succeeds.
        for (n, secs) in [(1, 30), (2, 60), (3, 120), (4, 240)] {
            let j = t
                .poll_job(&ten.api_key, &id, |j| {
                    j["attempts"] == n && j["status"] == "retrying"
                })
                .await;
            assert_eq!(j["data"], Value::Null);
            assert!(rx.received().is_empty(), "no callback in between");
            t.clock.advance(time::Duration::seconds(secs));
        }
        let got = rx.wait_for(1).await;
        assert_eq!(got[0].json()["status"], "success");
        ends_after_five_attempts(&t, &ten, &id, "done", 1).await;
        t.stop().await;
    }
);

both!(
    unknown_slip_is_not_found_after_four_retries,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        let payload = slip_qr::encode_bank_slip("004", "20261122UNKNOWN0001");
        let id = t.submit_job_to(&ten.api_key, &payload, &rx.url("h")).await;
        for (n, secs) in [(1, 30), (2, 60), (3, 120), (4, 240)] {
            t.poll_job(&ten.api_key, &id, |j| j["attempts"] == n).await;
            t.clock.advance(time::Duration::seconds(secs));
        }
        let got = rx.wait_for(1).await;
        let body = got[0].json();
        assert_eq!(body["status"], "not_found");
        assert_eq!(body["data"]["attempts"], 5);
        assert!(body["data"]["reason"]
            .as_str()
            .unwrap()
            .contains("no transfer"));
        assert!(body.get("error").is_none());
        ends_after_five_attempts(&t, &ten, &id, "not_found", 0).await;
        t.stop().await;
    }
);

both!(jobs_are_private_and_expire, |b: Backend| async move {
    let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
    let (_, other_key) = t.branch(&ten.service_id, "Other", None).await;
    let (_, id) = t.slip_job(&ten, "004", 100, &rx.url("h")).await;
    rx.wait_for(1).await;
    t.poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
        .await;
    for (key, path) in [
        (&other_key, format!("/v2/verify/bank/jobs/{id}")),
        (
            &ten.api_key,
            "/v2/verify/bank/jobs/9b2f3c1e-0000-4000-8000-000000000000".to_string(),
        ),
        (&ten.api_key, "/v2/verify/bank/jobs/not-a-uuid".to_string()),
    ] {
        let (s, v) = t.get(&path, Some(key)).await;
        assert_eq!((s, code(&v)), (404, "JOB_NOT_FOUND"), "{path}");
    }
    t.clock.advance(time::Duration::seconds(7 * 24 * 3600 + 1));
    t.get_err(
        &format!("/v2/verify/bank/jobs/{id}"),
        &ten.api_key,
        404,
        "JOB_NOT_FOUND",
    )
    .await;
    assert_eq!(
        t.app
            .store
            .sweep_jobs(domain::Clock::now(&*t.clock))
            .await
            .unwrap(),
        1
    );
    assert_eq!(t.job_rows().await, 0);
    t.stop().await;
});

both!(two_nodes_share_a_batch, |b: Backend| async move {
    let (rx, t) = TestApp::with_receiver(b).await;
    let n2 = worker_node(&t, &rx).await;
    let ten = t.tenant(1000).await;
    submit_batch_of(&t, &ten.api_key, 60, &rx.url("h")).await;
    let got = rx.wait_for(60).await;
    let mut ids: Vec<String> = got
        .iter()
        .map(|r| r.json()["jobId"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 60);
    assert_eq!(t.used(&ten.api_key).await, 60);
    n2.stop().await;
    t.stop().await;
});

// A worker that died after charging a job (it never wrote the job back): another node takes
// the job over when the lease runs out, does not charge it again, and delivers it.
both!(
    a_crashed_workers_job_is_taken_over_and_charged_once,
    |b: Backend| async move {
        let (rx, t) = TestApp::http_only_with_receiver(b).await;
        // Quota 1: the re-run must not be refused by the quota the first run used.
        let ten = t.tenant(1).await;
        let (tr, id) = t.slip_job(&ten, "004", 4200, &rx.url("h")).await;
        let now = domain::Clock::now(&*t.clock);
        let claimed = t
            .app
            .store
            .claim_jobs(now, now + time::Duration::seconds(60), "dead-worker", 10)
            .await
            .unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].id.as_str(), id);
        let caller = t.caller(&ten.api_key).await;
        let req = job_request(&tr.payload, false, id.clone().into());
        t.app
            .services
            .verify()
            .verify_bank(&caller, &req)
            .await
            .unwrap();
        assert_eq!(t.used(&ten.api_key).await, 1);
        assert_eq!(poll(&t, &ten.api_key, &id).await["status"], "processing");

        let n2 = worker_node(&t, &rx).await;
        n2.clock.set(now);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(rx.received().is_empty(), "the lease still holds");
        n2.clock.set(now + time::Duration::seconds(61));
        let got = rx.wait_for(1).await;
        assert_eq!(got[0].json()["status"], "success");
        let j = t
            .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        assert_eq!(j["status"], "done");
        assert_eq!(t.used(&ten.api_key).await, 1, "charged once");
        // The dead worker's late write-back is refused.
        assert!(!t
            .app
            .store
            .save_job(&claimed[0], "dead-worker")
            .await
            .unwrap());
        n2.stop().await;
        t.stop().await;
    }
);

// Graceful shutdown: a node stopped while it delivers a callback finishes the delivery and
// writes the job back before it exits (nothing left leased to a dead node).
both!(
    shutdown_finishes_the_jobs_in_hand,
    |b: Backend| async move {
        let (rx, t) = TestApp::http_only_with_receiver(b).await;
        let worker = worker_node(&t, &rx).await;
        let ten = t.tenant(100).await;
        rx.delay(Duration::from_millis(1500));
        let (_, id) = t.slip_job(&ten, "004", 100, &rx.url("h")).await;
        // Verified and on record, its callback on the way (the receiver is slow).
        t.poll_job(&ten.api_key, &id, |j| {
            j["status"] == "done" && j["webhook"]["state"] == "pending"
        })
        .await;
        worker.stop().await;
        let j = poll(&t, &ten.api_key, &id).await;
        assert_eq!(j["status"], "done", "{j}");
        assert_eq!(j["webhook"]["state"], "delivered", "{j}");
        assert_eq!(rx.received().len(), 1);
        t.stop().await;
    }
);

// Two runs of one job charging at the same moment (a lease taken over while the first charge
// waited in the queue): charged once, whether or not they share a charge batch.
both!(
    one_job_charging_twice_at_once_is_charged_once,
    |b: Backend| async move {
        let (_rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        let tr = t.transfer("004", "014", 100).await;
        let caller = t.caller(&ten.api_key).await;
        let id = domain::JobId::new(uuid::Uuid::new_v4().to_string());
        let job = domain::job::Job::new(
            id.clone(),
            None,
            ten.service_id.clone(),
            ten.branch_id.clone(),
            domain::job::NewJob {
                payload: tr.payload.clone(),
                check_duplicate: true,
                match_account: false,
                match_amount: None,
                remark: None,
            },
            None,
            domain::Clock::now(&*t.clock) + time::Duration::days(1),
            Duration::from_secs(7 * 86400),
        );
        // Not due for a day: no worker runs it; the test plays both runs.
        {
            t.app.store.insert_jobs(&[job]).await.unwrap();
        }
        let req = job_request(&tr.payload, true, id);
        let runs: Vec<_> = (0..8)
            .map(|_| {
                let (svc, caller, req) = (t.app.services.clone(), caller.clone(), req.clone());
                tokio::spawn(async move { svc.verify().verify_bank(&caller, &req).await })
            })
            .collect();
        for r in runs {
            let d = r.await.unwrap().unwrap();
            assert!(
                !d.is_duplicate,
                "every run of the job gets the first run's verdict"
            );
        }
        assert_eq!(t.used(&ten.api_key).await, 1);
        t.stop().await;
    }
);
