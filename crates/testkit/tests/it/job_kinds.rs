//! Background work beyond one verify job (issue 31): a second job kind (the redelivery of a
//! callback) beside verify jobs, and periodic jobs that run once per period whatever the
//! number of nodes, on SQLite and PostgreSQL. Time is the test clock.

use domain::job::sign_webhook;
use serde_json::{json, Value};
use server::App;
use services::jobs::periodic::{PeriodicJob, Periods};
use services::Services;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use testkit::receiver::Receiver;
use testkit::{both, Backend, Tenant, TestApp};

use crate::common::code;

const TOKEN: &str = "admin-token-0123456789abcdef0123456789";

/// A receiver, a server whose egress reaches it and whose admin API is on, and a tenant.
async fn setup(b: Backend) -> (Receiver, TestApp, Tenant) {
    let rx = Receiver::spawn().await;
    let eg = rx.egress();
    let t = TestApp::spawn_with(b, move |s| {
        s.set_egress(eg);
        s.set_admin_token(TOKEN);
    })
    .await;
    let ten = t.tenant(100).await;
    (rx, t, ten)
}

/// Submits one fresh slip whose callback goes to the receiver's `/h`; returns the job id.
async fn submit(t: &TestApp, ten: &Tenant, rx: &Receiver, satang: i64) -> String {
    let (_, id) = t.slip_job(ten, "004", satang, &rx.url("h")).await;
    id
}

async fn redeliver(t: &TestApp, id: &str, body: Option<Value>) -> (u16, Value) {
    t.call("POST", &format!("/admin/jobs/{id}/redeliver"), TOKEN, body)
        .await
}

both!(
    a_redelivery_sends_the_same_bytes_signed_with_the_current_secret,
    |b: Backend| async move {
        let (rx, t, ten) = setup(b).await;
        t.set_webhook_secret(&ten.branch_id, "whsec_old").await;
        let id = submit(&t, &ten, &rx, 15050).await;
        t.poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        let first = rx.received()[0].clone();
        assert_eq!(
            first.header("x-service-signature"),
            Some(sign_webhook("whsec_old", &first.body).as_str())
        );

        // The merchant rotated its secret and missed the callback: the operator resends it.
        t.set_webhook_secret(&ten.branch_id, "whsec_new").await;
        let (s, v) = redeliver(&t, &id, None).await;
        assert_eq!(s, 202, "{v}");
        assert_eq!(v["success"], true);
        assert_eq!(v["data"]["jobId"], id.as_str());
        assert_eq!(v["data"]["status"], "queued");
        assert_eq!(v["data"]["callbackUrl"], rx.url("h").as_str());
        let rid = v["data"]["redeliveryId"].as_str().unwrap().to_string();
        assert_ne!(rid, id);

        let got = rx.wait_for(2).await;
        let again = &got[1];
        assert_eq!(again.path, "/h");
        assert_eq!(again.body, first.body, "the same bytes");
        assert_eq!(again.json()["jobId"], id.as_str(), "the same jobId");
        assert_eq!(again.header("user-agent"), Some("Service-Webhook/2.0"));
        assert_eq!(
            again.header("x-service-signature"),
            Some(sign_webhook("whsec_new", &again.body).as_str()),
            "re-signed with the branch's current secret"
        );

        // `{}` is an empty body too; a second redelivery is another job.
        let (s, v) = redeliver(&t, &id, Some(json!({}))).await;
        assert_eq!(s, 202, "{v}");
        assert_ne!(v["data"]["redeliveryId"], rid.as_str());
        rx.wait_for(3).await;

        // Audited on the branch, by the admin API.
        let audit = t.branch_audit(&ten.branch_id).await;
        let redeliveries: Vec<_> = audit
            .iter()
            .filter(|e| e.action == "job.redeliver")
            .collect();
        assert_eq!(redeliveries.len(), 2);
        assert_eq!(redeliveries[0].actor, "admin-api");
        let detail: Value = serde_json::from_str(&redeliveries[0].detail).unwrap();
        assert_eq!(detail["jobId"], id.as_str());
        assert_eq!(detail["redeliveryId"], rid.as_str());

        // The original job is as it was; the redelivery is not a branch's job to poll;
        // nothing was charged again.
        let j = t
            .get_ok(&format!("/v2/verify/bank/jobs/{id}"), &ten.api_key)
            .await;
        assert_eq!(j["data"]["status"], "done");
        assert_eq!(j["data"]["webhook"]["attempts"], 1);
        t.get_err(
            &format!("/v2/verify/bank/jobs/{rid}"),
            &ten.api_key,
            404,
            "JOB_NOT_FOUND",
        )
        .await;
        assert_eq!(t.used(&ten.api_key).await, 1);
        t.stop().await;
    }
);

// The redelivery is a job kind of its own beside verify jobs: claimed by the same worker,
// retried on the webhook schedule, written back like any job.
both!(
    a_redelivery_runs_beside_verify_jobs_and_retries,
    |b: Backend| async move {
        let (rx, t, ten) = setup(b).await;
        let id = submit(&t, &ten, &rx, 100).await;
        t.poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        // The redelivery's first attempt is refused; a batch of verify jobs arrives meanwhile.
        rx.answer_next(&[503]);
        let (s, v) = redeliver(&t, &id, None).await;
        assert_eq!(s, 202, "{v}");
        let rid: domain::JobId = v["data"]["redeliveryId"].as_str().unwrap().into();
        let mut slips = Vec::new();
        for i in 0..10 {
            let tr = t.transfer("004", "014", 200 + i).await;
            slips.push(json!({"payload": tr.payload}));
        }
        let batch = json!({"callbackUrl": rx.url("h"), "slips": slips});
        let (s, v) = t.post("/v2/verify/bank/batch", &ten.api_key, batch).await;
        assert_eq!(s, 202, "{v}");
        // 1 first callback + 1 refused redelivery + 10 batch callbacks.
        rx.wait_for(12).await;
        let r = wait_job(&t, &rid, |j| j.webhook.attempts == 1).await;
        assert_eq!(r.kind, "redeliver");
        assert_eq!(r.webhook.last_status, Some(503));
        assert_eq!(r.webhook.state, domain::job::WebhookState::Pending);
        // 10 s later (the webhook schedule) it is sent again and delivered.
        t.clock.advance(time::Duration::seconds(10));
        let got = rx.wait_for(13).await;
        let of_job = got
            .iter()
            .filter(|r| r.json()["jobId"] == id.as_str())
            .count();
        assert_eq!(of_job, 3, "the callback, the refused redelivery, its retry");
        let r = wait_job(&t, &rid, |j| {
            j.webhook.state == domain::job::WebhookState::Delivered
        })
        .await;
        assert_eq!(r.webhook.attempts, 2);
        assert_eq!(r.status, domain::job::JobStatus::Done);
        assert_eq!(
            t.used(&ten.api_key).await,
            11,
            "the batch charged, nothing else"
        );
        t.stop().await;
    }
);

/// Reads a job from the store until `done` holds (30 s real-time cap).
async fn wait_job(
    t: &TestApp,
    id: &domain::JobId,
    done: impl Fn(&domain::job::Job) -> bool,
) -> domain::job::Job {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(j) = t.app.store.get_job(id).await.unwrap() {
            if done(&j) {
                return j;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "job {id} never got there"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

both!(redelivery_refusals, |b: Backend| async move {
    // No worker on this node: a submitted job stays queued (still running).
    let rx = Receiver::spawn().await;
    let eg = rx.egress();
    let t = TestApp::spawn_with_app(b, move |a| {
        a.services.set_egress(eg);
        a.services.set_admin_token(TOKEN);
        a.worker.concurrency = 0;
    })
    .await;
    let ten = t.tenant(100).await;
    let id = submit(&t, &ten, &rx, 100).await;
    let (s, v) = redeliver(&t, &id, None).await;
    assert_eq!((s, code(&v)), (409, "JOB_STILL_RUNNING"), "{v}");
    for unknown in ["9b2f3c1e-0000-4000-8000-000000000000", "not-a-uuid"] {
        let (s, v) = redeliver(&t, unknown, None).await;
        assert_eq!((s, code(&v)), (404, "JOB_NOT_FOUND"), "{unknown}: {v}");
    }
    let (s, v) = redeliver(&t, &id, Some(json!({"force": true}))).await;
    assert_eq!((s, code(&v)), (400, "VALIDATION_ERROR"), "{v}");
    let (s, v) = t
        .call(
            "POST",
            &format!("/admin/jobs/{id}/redeliver"),
            "wrong",
            None,
        )
        .await;
    assert_eq!((s, code(&v)), (401, "INVALID_API_KEY"), "{v}");
    // A worker finishes it: then it can be redelivered, until it expires.
    let worker = {
        let eg = rx.egress();
        t.another_node_with(move |s| s.set_egress(eg)).await
    };
    t.poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
        .await;
    let (s, v) = redeliver(&t, &id, None).await;
    assert_eq!(s, 202, "{v}");
    rx.wait_for(2).await;
    t.clock.advance(time::Duration::seconds(7 * 24 * 3600 + 1));
    let (s, v) = redeliver(&t, &id, None).await;
    assert_eq!((s, code(&v)), (404, "JOB_NOT_FOUND"), "expired: {v}");
    let audit = t.branch_audit(&ten.branch_id).await;
    let redeliveries = audit.iter().filter(|e| e.action == "job.redeliver");
    assert_eq!(redeliveries.count(), 1, "refusals are not audited");
    worker.stop().await;
    t.stop().await;
});

/// A periodic job for tests: counts its runs; `hold` keeps each run going that long.
struct Probe {
    name: &'static str,
    every: Duration,
    runs: Arc<AtomicUsize>,
    hold: Duration,
}

#[async_trait::async_trait]
impl PeriodicJob for Probe {
    fn name(&self) -> &'static str {
        self.name
    }

    fn every(&self) -> Duration {
        self.every
    }

    async fn run(&self, _svc: &Services) -> Result<String, domain::Error> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(self.hold).await;
        Ok(format!("run {n}"))
    }
}

fn with_probe(a: &mut App, runs: &Arc<AtomicUsize>, every: Duration) {
    a.periodic.enabled = true;
    a.periodic.jobs = vec![Arc::new(Probe {
        name: "probe",
        every,
        runs: runs.clone(),
        hold: Duration::from_millis(50),
    })];
}

/// Waits (real time, 10 s cap) until `runs` reaches `n`.
async fn runs_reach(runs: &AtomicUsize, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while runs.load(Ordering::SeqCst) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} runs, want {n}",
            runs.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// Two nodes on one database, both with the job: each period runs once, on one of them.
both!(
    a_periodic_job_runs_once_per_period_across_two_nodes,
    |b: Backend| async move {
        let every = Duration::from_secs(3600);
        let runs = Arc::new(AtomicUsize::new(0));
        let r1 = runs.clone();
        let t = TestApp::spawn_with_app(b, move |a| with_probe(a, &r1, every)).await;
        let r2 = runs.clone();
        let n2 = t
            .another_node_with_app(move |a| with_probe(a, &r2, every))
            .await;
        runs_reach(&runs, 1).await;
        // Both nodes look every 20 ms: plenty of chances for a second run, if there were one.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "once in the first period");
        for period in 2..=3 {
            t.clock.advance(time::Duration::seconds(3600));
            runs_reach(&runs, period).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(runs.load(Ordering::SeqCst), period, "once per period");
        }
        let row = t.app.store.periodic_jobs().await.unwrap();
        let probe = row.iter().find(|r| r.name == "probe").unwrap();
        assert_eq!(probe.runs, 3);
        assert_eq!(probe.last_outcome.as_deref(), Some("run 3"));
        n2.stop().await;
        t.stop().await;
    }
);

// A node that died mid-run (it claimed the period and never finished): nobody runs the
// period while its lease holds; after the lease another node takes it over, once.
both!(
    a_dead_runners_periodic_job_is_taken_over_after_its_lease,
    |b: Backend| async move {
        let every = Duration::from_secs(30 * 86_400);
        let t = TestApp::spawn(b).await;
        let now = domain::Clock::now(&*t.clock);
        let period = services::jobs::periodic::period_start(now, every);
        let lease = time::Duration::seconds(300);
        let claimed = t
            .app
            .store
            .claim_periodic("probe", period, "dead-node", now, now + lease)
            .await
            .unwrap();
        assert_eq!(claimed, store::PeriodicClaim::Claimed);
        let runs = Arc::new(AtomicUsize::new(0));
        let r = runs.clone();
        let n2 = t
            .another_node_with_app(move |a| with_probe(a, &r, every))
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            0,
            "the dead node's lease still holds"
        );
        t.clock.advance(lease + time::Duration::seconds(1));
        runs_reach(&runs, 1).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "taken over once");
        let rows = t.app.store.periodic_jobs().await.unwrap();
        let probe = rows.iter().find(|r| r.name == "probe").unwrap();
        assert!(probe.done_period >= period);
        assert_eq!(probe.holder, None);
        // The dead node's late finish is refused.
        let late = t
            .app
            .store
            .finish_periodic("probe", "dead-node", true, now, now, "late")
            .await
            .unwrap();
        assert!(!late);
        n2.stop().await;
        t.stop().await;
    }
);

// The built-in periodic jobs: expired jobs are deleted by `expire-jobs` (off the worker), and
// old `Idempotency-Key`s by `idempotency-keys` (off the request path).
both!(
    expiry_and_the_key_sweep_run_as_periodic_jobs,
    |b: Backend| async move {
        let rx = Receiver::spawn().await;
        let eg = rx.egress();
        let t = TestApp::spawn_with_app(b, move |a| {
            a.services.set_egress(eg);
            a.periodic.enabled = true;
            a.periodic.jobs = services::jobs::periodic::builtin(&Periods::default());
        })
        .await;
        let ten = t.tenant(100).await;
        let id = submit(&t, &ten, &rx, 100).await;
        t.poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
            .await;
        let tr = t.transfer("004", "014", 300).await;
        let body = json!({"payload": tr.payload});
        let (s, _, v) = t
            .post_keyed("/v2/verify/bank", &ten.api_key, "k-1", &body)
            .await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(t.job_rows().await, 1);
        t.clock.advance(time::Duration::seconds(7 * 24 * 3600 + 61));
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while t.job_rows().await > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "expired job never deleted"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let rows = t.app.store.periodic_jobs().await.unwrap();
            let keys = rows.iter().find(|r| r.name == "idempotency-keys");
            if keys.and_then(|r| r.last_outcome.as_deref()) == Some("deleted 1") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no key sweep: {rows:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        t.stop().await;
    }
);
