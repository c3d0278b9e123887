//! `Idempotency-Key` (issue 18, docs/idempotency.md) over HTTP on SQLite and PostgreSQL: one
//! charge per key, the stored answer for a retry, 409 while the first runs, 422 for another
//! request under the same key, and a retry on another node after the first node died between
//! the charge and the answer.

use serde_json::{json, Value};
use std::sync::Arc;
use testkit::{both, read_replayed, Backend, TestApp};

use crate::common::{assert_validation, code, refused_retry_after, v1_code};

/// Sends one request twice under one `Idempotency-Key` (`send` builds and sends it): the
/// first answer has `status` and is not replayed, the second is that same answer replayed.
/// Returns it.
async fn answered_then_replayed<F, Fut>(what: &str, status: u16, send: F) -> Value
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = (u16, bool, Value)>,
{
    let (s, replayed, first) = send().await;
    assert_eq!((s, replayed), (status, false), "{what} first: {first}");
    let (s, replayed, again) = send().await;
    assert_eq!(
        (s, replayed, &again),
        (status, true, &first),
        "{what} again"
    );
    first
}

/// `answered_then_replayed` for a JSON body.
async fn keyed_twice(
    t: &TestApp,
    path: &str,
    api_key: &str,
    idem: &str,
    body: &Value,
    status: u16,
) -> Value {
    let send = || t.post_keyed(path, api_key, idem, body);
    answered_then_replayed(path, status, send).await
}

/// A charge hook that signals `charged`, then never returns: the node "dies" right after the
/// charge, before its answer exists.
fn hang_after_charge(charged: Arc<tokio::sync::Notify>) -> services::AfterCharge {
    Arc::new(move || {
        let charged = charged.clone();
        Box::pin(async move {
            charged.notify_one();
            std::future::pending::<()>().await
        })
    })
}

/// Sends the request; status, replayed?, body.
async fn post_image(
    t: &TestApp,
    path: &str,
    api_key: &str,
    idem: &str,
    field: &str,
    png: &[u8],
) -> (u16, bool, Value) {
    // Every form gets a fresh random boundary: the raw bodies differ.
    let form = testkit::slip_form(field, png.to_vec(), &[]);
    read_replayed(t.keyed_post(path, api_key, idem).multipart(form)).await
}

/// A new sandbox transfer of `satang` satang from a KBank account, as a slip image.
async fn slip_png(t: &TestApp, satang: i64) -> Vec<u8> {
    let tr = t.transfer("004", "014", satang).await;
    server::slip_image::png_bytes(&tr.payload, "004").unwrap()
}

both!(
    one_charge_and_the_stored_answer_per_key,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let key = ten.api_key.as_str();
        let tr = t.transfer("004", "014", 15050).await;
        let body = json!({"payload": tr.payload, "checkDuplicate": true, "remark": "r"});

        let (s, replayed, first) = t.post_keyed("/v2/verify/bank", key, "k-1", &body).await;
        assert_eq!((s, replayed), (200, false), "{first}");
        assert_eq!(t.used(key).await, 1);
        let (s, replayed, again) = t.post_keyed("/v2/verify/bank", key, "k-1", &body).await;
        assert_eq!((s, replayed), (200, true));
        assert_eq!(again, first, "the stored answer, not a duplicate's");
        assert_eq!(t.used(key).await, 1, "no new charge");
        // Without the key the same slip is a new (charged) verification.
        let (s, v) = t.verify_bank(key, body.clone()).await;
        assert_eq!((s, v["data"]["isDuplicate"].as_bool()), (200, Some(true)));
        assert_eq!(t.used(key).await, 2);

        // The same key for another request: 422, nothing charged.
        let other = json!({"payload": tr.payload, "checkDuplicate": true, "remark": "other"});
        let (s, _, v) = t.post_keyed("/v2/verify/bank", key, "k-1", &other).await;
        assert_eq!((s, code(&v)), (422, "IDEMPOTENCY_KEY_REUSED"), "{v}");
        // ...or for another route.
        let (s, _, v) = t
            .post_keyed(
                "/api/v1/verify",
                key,
                "k-1",
                &json!({"payload": tr.payload}),
            )
            .await;
        assert_eq!((s, v1_code(&v)), (422, "idempotency_key_reused"), "{v}");
        assert_eq!(t.used(key).await, 2);

        // A 4xx is stored too.
        let not_a_slip = json!({"payload": "not a slip"});
        let v = keyed_twice(&t, "/v2/verify/bank", key, "k-404", &not_a_slip, 404).await;
        assert_eq!(code(&v), "SLIP_NOT_FOUND");

        // Keys are per branch: another branch's k-1 is its own.
        let (_, key2) = t.branch(&ten.service_id, "Second", None).await;
        let (s, replayed, _) = t.post_keyed("/v2/verify/bank", &key2, "k-1", &other).await;
        assert_eq!((s, replayed), (200, false));

        // Kept 24 h: then the key is free for anything.
        t.clock
            .advance(time::Duration::hours(24) + time::Duration::seconds(1));
        let (s, replayed, v) = t.post_keyed("/v2/verify/bank", key, "k-1", &other).await;
        assert_eq!((s, replayed), (200, false), "{v}");

        // A key that is not 1-255 visible ASCII characters is refused before anything runs.
        let long = "k".repeat(256);
        let (s, _, v) = t.post_keyed("/v2/verify/bank", key, &long, &body).await;
        assert_validation(s, &v, "Idempotency-Key:");
        t.stop().await;
    }
);

// Compared on the parsed request: a multipart retry (new boundary) and the same image as
// Base64 JSON are the same request.
both!(
    the_parsed_request_is_compared_not_the_bytes,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let key = ten.api_key.as_str();
        let png = slip_png(&t, 20000).await;
        let send = || post_image(&t, "/v2/verify/bank", key, "img", "image", &png);
        let first = answered_then_replayed("v2 upload", 200, send).await;
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
        let (s, replayed, as_json) = t
            .post_keyed("/v2/verify/bank", key, "img", &json!({"base64": b64}))
            .await;
        assert_eq!((s, replayed, &as_json), (200, true, &first));
        // Another image under the same key is another request.
        let png2 = slip_png(&t, 30000).await;
        let (s, _, v) = post_image(&t, "/v2/verify/bank", key, "img", "image", &png2).await;
        assert_eq!((s, code(&v)), (422, "IDEMPOTENCY_KEY_REUSED"));
        // v1's multipart form, the same way.
        let send = || post_image(&t, "/api/v1/verify", key, "v1-img", "file", &png);
        answered_then_replayed("v1 upload", 200, send).await;
        assert_eq!(t.used(key).await, 2, "one charge per key");
        t.stop().await;
    }
);

// The node dies after the charge and before the answer (the test hook holds the request
// there for ever, as a killed process would: nothing after the charge runs). The retry on
// another node waits for the lease (409), then runs: one charge — with the last unit of
// quota — and the answer the first would have given.
both!(
    a_retry_after_the_node_died_is_charged_once,
    |b: Backend| async move {
        let charged = Arc::new(tokio::sync::Notify::new());
        let hook = hang_after_charge(charged.clone());
        let dying = TestApp::spawn_with(b, move |s| s.set_after_charge(hook)).await;
        let other = dying.another_node().await;
        let ten = dying.tenant(1).await;
        let tr = dying.transfer("004", "014", 15050).await;
        let body = json!({"payload": tr.payload, "checkDuplicate": true});
        let held = dying.keyed_post("/v2/verify/bank", &ten.api_key, "order-17");
        let lost = tokio::spawn(held.json(&body).send());
        tokio::time::timeout(std::time::Duration::from_secs(60), charged.notified())
            .await
            .expect("the first request reaches the charge");
        assert_eq!(other.used(&ten.api_key).await, 1, "charged");

        let (s, _, v) = other
            .post_keyed("/v2/verify/bank", &ten.api_key, "order-17", &body)
            .await;
        assert_eq!((s, code(&v)), (409, "IDEMPOTENCY_KEY_IN_USE"), "{v}");
        other
            .clock
            .advance(services::idempotency::LEASE + time::Duration::seconds(1));
        let (s, replayed, v) = other
            .post_keyed("/v2/verify/bank", &ten.api_key, "order-17", &body)
            .await;
        assert_eq!((s, replayed), (200, false), "{v}");
        assert_eq!(v["data"]["rawSlip"]["transRef"], tr.trans_ref);
        assert_eq!(
            v["data"]["isDuplicate"], false,
            "the first run's answer, not a duplicate's"
        );
        assert_eq!(other.used(&ten.api_key).await, 1, "one charge");
        let (s, replayed, again) = other
            .post_keyed("/v2/verify/bank", &ten.api_key, "order-17", &body)
            .await;
        assert_eq!((s, replayed, &again), (200, true, &v));
        // Without a key the quota (1) is gone: the retry above really was not charged.
        other
            .verify_bank_err(&ten.api_key, body.clone(), 403, "QUOTA_EXCEEDED")
            .await;
        lost.abort();
        other.stop().await;
        // The dying node's request never ends; its server is dropped with the test.
        drop(dying);
    }
);

// Async and batch submissions: the same key answers the same job ids and inserts no new jobs
// (their ids derive from the key, so even a retry after a crash finds the jobs inserted).
both!(
    async_and_batch_answer_the_same_jobs,
    |b: Backend| async move {
        let (rx, t) = TestApp::http_only_with_receiver(b).await;
        let ten = t.tenant(100).await;
        let key = ten.api_key.as_str();
        let tr = t.transfer("004", "014", 15050).await;
        let one = json!({"payload": tr.payload, "callbackUrl": rx.url("h")});
        keyed_twice(&t, "/v2/verify/bank/async", key, "a-1", &one, 202).await;
        let batch = json!({"slips": [{"payload": tr.payload}, {"payload": tr.payload}], "callbackUrl": rx.url("h")});
        keyed_twice(&t, "/v2/verify/bank/batch", key, "b-1", &batch, 202).await;
        assert_eq!(
            t.job_rows().await,
            3,
            "one job per slip, however often submitted"
        );
        let (s, _, v) = t
            .post_keyed("/v2/verify/bank/batch", key, "a-1", &batch)
            .await;
        assert_eq!((s, code(&v)), (422, "IDEMPOTENCY_KEY_REUSED"));
        t.stop().await;
    }
);

// TrueMoney and v1 JSON: the same key answers the same answer once charged.
both!(
    truewallet_and_v1_take_the_key_too,
    |b: Backend| async move {
        let (t, ten) = TestApp::spawn_with_tenant(b, 100).await;
        let key = ten.api_key.as_str();
        let w = t
            .wallet_transfer(5025, None, None, Some("0812345678"))
            .await;
        let body = json!({"payload": w.payload, "checkDuplicate": true});
        keyed_twice(&t, "/v2/verify/truewallet", key, "w-1", &body, 200).await;
        assert_eq!(t.used(key).await, 1);

        let tr = t.transfer("004", "014", 15050).await;
        let body = json!({"payload": tr.payload, "checkDuplicate": true});
        // The second answer is the replay, not v1's duplicate_slip.
        keyed_twice(&t, "/api/v1/verify", key, "v1-1", &body, 200).await;
        assert_eq!(t.used(key).await, 2);
        t.stop().await;
    }
);

// A key is forgotten after 24 h but its jobs live 7 days: the same key used again later starts
// new jobs with new ids (they derive from the key's first use too), and polling them shows the
// new slip, never yesterday's.
both!(
    a_key_used_again_after_it_was_forgotten_starts_new_jobs,
    |b: Backend| async move {
        let (rx, t, ten) = TestApp::with_receiver_and_tenant(b, 100).await;
        let key = ten.api_key.as_str();
        let done = |j: &Value| j["webhook"]["state"] == "delivered";
        let old = t.transfer("004", "014", 15050).await;
        let one = json!({"payload": old.payload, "callbackUrl": rx.url("h")});
        let (s, _, first) = t
            .post_keyed("/v2/verify/bank/async", key, "a-1", &one)
            .await;
        assert_eq!(s, 202, "{first}");
        let batch = json!({"slips": [{"payload": old.payload}], "callbackUrl": rx.url("h")});
        let (s, _, first_batch) = t
            .post_keyed("/v2/verify/bank/batch", key, "b-1", &batch)
            .await;
        assert_eq!(s, 202, "{first_batch}");
        let old_id = first["data"]["jobId"].as_str().unwrap().to_string();
        t.poll_job(key, &old_id, done).await;

        t.clock.advance(time::Duration::hours(25));
        let new = t.transfer("004", "014", 20000).await;
        let one = json!({"payload": new.payload, "callbackUrl": rx.url("h")});
        let (s, replayed, again) = t
            .post_keyed("/v2/verify/bank/async", key, "a-1", &one)
            .await;
        assert_eq!((s, replayed), (202, false), "{again}");
        let new_id = again["data"]["jobId"].as_str().unwrap();
        assert_ne!(new_id, old_id, "a new job, not yesterday's");
        let j = t.poll_job(key, new_id, done).await;
        assert_eq!(j["data"]["rawSlip"]["transRef"], new.trans_ref.as_str());

        let batch = json!({"slips": [{"payload": new.payload}], "callbackUrl": rx.url("h")});
        let (s, replayed, again) = t
            .post_keyed("/v2/verify/bank/batch", key, "b-1", &batch)
            .await;
        assert_eq!((s, replayed), (202, false), "{again}");
        assert_ne!(again["data"]["batchId"], first_batch["data"]["batchId"]);
        assert_ne!(again["data"]["jobIds"], first_batch["data"]["jobIds"]);
        let new_id = again["data"]["jobIds"][0]
            .as_str()
            .expect("a job id")
            .to_string();
        let j = t.poll_job(key, &new_id, done).await;
        assert_eq!(j["data"]["rawSlip"]["transRef"], new.trans_ref.as_str());
        t.stop().await;
    }
);

// "Try again" answers are never stored under the key: a decode-budget 429 is not replayed,
// and the retry runs.
both!(
    a_decode_budget_refusal_is_not_replayed,
    |b: Backend| async move {
        let t = TestApp::spawn_with_config(b, "[limits]\ndecode_wait_secs = 1\n").await;
        let ten = t.tenant(100).await;
        let key = ten.api_key.as_str();
        let png = slip_png(&t, 15050).await;
        let held = t.hold_decode_budget().await;
        let (s, replayed, v) = post_image(&t, "/v2/verify/bank", key, "busy", "image", &png).await;
        assert_eq!((s, replayed, code(&v)), (429, false, "RATE_LIMIT_EXCEEDED"));
        drop(held);
        let (s, replayed, v) = post_image(&t, "/v2/verify/bank", key, "busy", "image", &png).await;
        assert_eq!((s, replayed), (200, false), "{v}");
        assert_eq!(t.used(key).await, 1);
        t.stop().await;
    }
);

// While the first request holds the key, a retry gets 409 with `Retry-After`: the end of the
// holder's lease (`server.idempotency_lease_secs`).
both!(in_use_says_when_to_retry, |b: Backend| async move {
    let charged = Arc::new(tokio::sync::Notify::new());
    let hook = hang_after_charge(charged.clone());
    let t = TestApp::spawn_with(b, move |s| {
        s.set_idempotency_lease(std::time::Duration::from_secs(45));
        s.set_after_charge(hook)
    })
    .await;
    let ten = t.tenant(10).await;
    let tr = t.transfer("004", "014", 15050).await;
    let body = json!({"payload": tr.payload});
    let held = t
        .keyed_post("/v2/verify/bank", &ten.api_key, "k")
        .json(&body);
    let lost = tokio::spawn(held.send());
    tokio::time::timeout(std::time::Duration::from_secs(60), charged.notified())
        .await
        .expect("the first request reaches the charge");
    t.clock.advance(time::Duration::seconds(5));
    let retry = t.keyed_post("/v2/verify/bank", &ten.api_key, "k");
    refused_retry_after(retry.json(&body), 409, "40").await;
    let v1 = t
        .keyed_post("/api/v1/verify", &ten.api_key, "k")
        .json(&body)
        .send()
        .await
        .unwrap();
    // Another route under the key is another request, refused as such.
    assert_eq!(v1.status().as_u16(), 422);
    lost.abort();
    drop(t);
});
