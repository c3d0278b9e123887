//! The LINE slip bot (issue 32, part one) against a LINE platform simulator on loopback
//! (`sim::line`): signature, de-duplication, image → verdict reply, group silence, the
//! attempts log. On SQLite and PostgreSQL.

use crate::common::{blank_png, png};
use domain::attempt::{AttemptQuery, Outcome};
use serde_json::json;
use sim::line::{image_event, webhook_body, LineSim};
use testkit::{both, Backend, Tenant, TestApp};

const SECRET: &str = "line-channel-secret-0123456789";
const TOKEN: &str = "line-channel-token-abcdef";

async fn bot(b: Backend) -> (LineSim, TestApp, Tenant) {
    let line = LineSim::start(TOKEN).await;
    let cfg = format!(
        "[line]\napi_base = \"{0}\"\ndata_api_base = \"{0}\"\n",
        line.base_url()
    );
    let t = TestApp::spawn_with_config(b, &cfg).await;
    let ten = t.tenant(100).await;
    t.app
        .services
        .update_branch(
            &ten.branch_id,
            &services::admin::BranchUpdate {
                line: domain::line::LinePatch {
                    channel_secret: Some(SECRET.into()),
                    channel_token: Some(TOKEN.into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    (line, t, ten)
}

/// POSTs a webhook body signed with `secret` (`None`: no signature header).
async fn deliver(t: &TestApp, ten: &Tenant, body: &str, secret: Option<&str>) -> u16 {
    let mut req = t
        .http
        .post(format!("{}/line/{}/webhook", t.base, ten.branch_id))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = secret {
        req = req.header(
            "x-line-signature",
            domain::line::signature(s, body.as_bytes()),
        );
    }
    req.send().await.unwrap().status().as_u16()
}

/// Waits (real time, 20 s at most) until the attempts log holds `n` LINE records.
async fn line_records(t: &TestApp, n: usize) -> Vec<domain::attempt::Attempt> {
    for _ in 0..200 {
        let rows = t
            .app
            .services
            .search_attempts(AttemptQuery {
                limit: 100,
                ..AttemptQuery::default()
            })
            .await
            .unwrap();
        let line: Vec<_> = rows
            .into_iter()
            .map(|r| r.attempt)
            .filter(|a| a.channel.as_str() == "line")
            .collect();
        if line.len() >= n {
            return line;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} LINE attempts recorded");
}

/// Waits until the simulator recorded `n` calls of `kind`.
async fn calls(line: &LineSim, kind: &str, n: usize) -> Vec<sim::line::LineCall> {
    for _ in 0..200 {
        let c = line.calls(kind);
        if c.len() >= n {
            return c;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} LINE {kind} calls");
}

fn alt(call: &sim::line::LineCall) -> String {
    call.body["messages"][0]["altText"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

both!(
    an_image_slip_is_answered_once_and_a_repeat_is_a_duplicate,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        let tr = t.transfer("004", "014", 125_050).await;
        line.put_content("1001", png(&tr.payload));
        let ev = image_event("01HEVENT0000000000000000A1", "1001", "rt-1", None);
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![ev.clone()]), Some(SECRET)).await,
            200
        );
        let replies = calls(&line, "reply", 1).await;
        assert_eq!(replies[0].body["replyToken"], "rt-1");
        assert_eq!(
            replies[0].headers["authorization"],
            format!("Bearer {TOKEN}")
        );
        assert_eq!(alt(&replies[0]), "✅ สลิปถูกต้อง 1,250.50 บาท");
        assert_eq!(replies[0].body["messages"][0]["type"], "flex");
        // The loading indicator in a one-to-one chat.
        assert_eq!(line.calls("loading").len(), 1);

        // LINE redelivers the same event: no second download, no second reply.
        let mut again = ev.clone();
        again["deliveryContext"]["isRedelivery"] = json!(true);
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![again]), Some(SECRET)).await,
            200
        );
        // The same picture sent again: a duplicate.
        line.put_content("1002", png(&tr.payload));
        let second = image_event("01HEVENT0000000000000000A2", "1002", "rt-2", None);
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![second]), Some(SECRET)).await,
            200
        );
        let replies = calls(&line, "reply", 2).await;
        assert!(
            alt(&replies[1]).starts_with("⛔ สลิปซ้ำ 1,250.50 บาท"),
            "{}",
            alt(&replies[1])
        );
        let records = line_records(&t, 2).await;
        assert_eq!(line.calls("content").len(), 2, "one download per event");
        assert_eq!(line.calls("reply").len(), 2);
        let outcomes: Vec<_> = records.iter().map(|a| a.outcome).collect();
        assert_eq!(outcomes, [Outcome::Duplicate, Outcome::Verified]);
        assert_eq!(records[1].trans_ref.as_deref(), Some(tr.trans_ref.as_str()));
        // One charge: the repeat is a duplicate.
        assert_eq!(t.used(&ten.api_key).await, 2);
        t.stop().await;
    }
);

both!(
    a_bad_signature_is_refused_and_processes_nothing,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        let tr = t.transfer("004", "014", 700).await;
        line.put_content("2001", png(&tr.payload));
        let body = webhook_body(vec![image_event(
            "01HEVENT0000000000000000B1",
            "2001",
            "rt",
            None,
        )]);
        assert_eq!(deliver(&t, &ten, &body, Some("wrong-secret")).await, 401);
        assert_eq!(deliver(&t, &ten, &body, None).await, 401);
        // A tampered body under a good signature.
        let sig = domain::line::signature(SECRET, body.as_bytes());
        let resp = t
            .http
            .post(format!("{}/line/{}/webhook", t.base, ten.branch_id))
            .header("x-line-signature", sig)
            .body(body.replace("2001", "2002"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401);
        // LINE's "Verify" button: no events.
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![]), Some(SECRET)).await,
            200
        );
        // Another branch (no LINE channel) answers the same 401.
        let other = t.tenant(10).await;
        assert_eq!(deliver(&t, &other, &body, Some(SECRET)).await, 401);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert!(line.calls("content").is_empty());
        assert!(line.calls("reply").is_empty());
        assert_eq!(t.job_rows().await, 0);
        t.stop().await;
    }
);

both!(
    no_slip_in_the_picture_asks_again_in_private_and_is_silent_in_groups,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        line.put_content("3001", blank_png());
        line.put_content("3002", blank_png());
        let private = image_event("01HEVENT0000000000000000C1", "3001", "rt-c1", None);
        let group = image_event(
            "01HEVENT0000000000000000C2",
            "3002",
            "rt-c2",
            Some("Cdeadbeefdeadbeefdeadbeefdeadbeef"),
        );
        let body = webhook_body(vec![private, group]);
        assert_eq!(deliver(&t, &ten, &body, Some(SECRET)).await, 200);
        let records = line_records(&t, 2).await;
        assert!(
            records.iter().all(|a| a.outcome == Outcome::NoQr),
            "{records:?}"
        );
        let replies = calls(&line, "reply", 1).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(line.calls("reply").len(), 1, "silence in the group");
        assert_eq!(replies[0].body["replyToken"], "rt-c1");
        assert!(alt(&replies[0]).starts_with("📷"), "{}", alt(&replies[0]));
        // A good slip in a silent group: verified, and no word.
        let tr = t.transfer("004", "014", 900).await;
        line.put_content("3003", png(&tr.payload));
        let good = image_event(
            "01HEVENT0000000000000000C3",
            "3003",
            "rt-c3",
            Some("Cdeadbeefdeadbeefdeadbeefdeadbeef"),
        );
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![good]), Some(SECRET)).await,
            200
        );
        let records = line_records(&t, 3).await;
        assert_eq!(records[0].outcome, Outcome::Verified);
        assert_eq!(line.calls("reply").len(), 1);
        t.stop().await;
    }
);

both!(
    a_late_answer_is_pushed_only_when_pushes_are_on,
    |b: Backend| async move {
        let line = LineSim::start(TOKEN).await;
        let cfg = format!(
            "[line]\napi_base = \"{0}\"\ndata_api_base = \"{0}\"\n",
            line.base_url()
        );
        // This node only takes webhooks (no worker): the events wait.
        let t = TestApp::spawn_with_config(b, &format!("{cfg}[jobs]\nconcurrency = 0\n")).await;
        let ten = t.tenant(100).await;
        let setup = |push: bool| services::admin::BranchUpdate {
            line: domain::line::LinePatch {
                channel_secret: Some(SECRET.into()),
                channel_token: Some(TOKEN.into()),
                push: Some(push),
                push_daily_limit: Some(1),
                ..Default::default()
            },
            ..Default::default()
        };
        t.app
            .services
            .update_branch(&ten.branch_id, &setup(false))
            .await
            .unwrap();
        let tr = t.transfer("004", "014", 5_000).await;
        line.put_content("4001", png(&tr.payload));
        let ev = image_event("01HEVENT0000000000000000D1", "4001", "rt-d1", None);
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![ev]), Some(SECRET)).await,
            200
        );
        // Two minutes later a node with a worker gets to it: the reply token is too old and
        // pushes are off, so nothing is sent (the slip is still verified and logged).
        t.clock.advance(time::Duration::minutes(2));
        let worker = t.another_node_with_config(&cfg).await;
        let _ = line_records(&t, 1).await;
        assert!(line.calls("reply").is_empty());
        assert!(line.calls("push").is_empty());
        worker.stop().await;

        // With pushes on (one a day): pushed once, with a retry key; the next is over the limit.
        t.app
            .services
            .update_branch(&ten.branch_id, &setup(true))
            .await
            .unwrap();
        for (n, (event, msg, amount)) in [
            ("01HEVENT0000000000000000D2", "4002", 6_000),
            ("01HEVENT0000000000000000D3", "4003", 7_000),
        ]
        .into_iter()
        .enumerate()
        {
            let tr = t.transfer("004", "014", amount).await;
            line.put_content(msg, png(&tr.payload));
            let ev = image_event(event, msg, "rt-late", None);
            assert_eq!(
                deliver(&t, &ten, &webhook_body(vec![ev]), Some(SECRET)).await,
                200
            );
            t.clock.advance(time::Duration::minutes(2));
            let worker = t.another_node_with_config(&cfg).await;
            let _ = line_records(&t, n + 2).await;
            worker.stop().await;
        }
        let pushes = line.calls("push");
        assert_eq!(pushes.len(), 1, "the daily limit is 1");
        assert_eq!(pushes[0].body["to"], "Ucustomer");
        assert_eq!(
            pushes[0].headers["x-line-retry-key"].len(),
            36,
            "a UUID retry key"
        );
        assert!(alt(&pushes[0]).contains("60.00"), "{}", alt(&pushes[0]));
        assert!(line.calls("reply").is_empty());
        t.stop().await;
    }
);

both!(
    a_pending_slip_is_answered_then_its_result_pushed_once,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        t.app
            .services
            .update_branch(
                &ten.branch_id,
                &services::admin::BranchUpdate {
                    line: domain::line::LinePatch {
                        push: Some(true),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        // Bangkok Bank: pending for five minutes on the sandbox ledger.
        let tr = t.transfer("002", "014", 12_345).await;
        line.put_content("5001", png(&tr.payload));
        let ev = image_event("01HEVENT0000000000000000E1", "5001", "rt-e1", None);
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![ev]), Some(SECRET)).await,
            200
        );
        let replies = calls(&line, "reply", 1).await;
        assert!(alt(&replies[0]).starts_with("⏳"), "{}", alt(&replies[0]));
        // Not logged yet: the record carries the final outcome.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(t
            .app
            .services
            .search_attempts(AttemptQuery {
                limit: 10,
                ..AttemptQuery::default()
            })
            .await
            .unwrap()
            .is_empty());
        // Six minutes on: the bank confirms; the result is pushed (the reply token is old).
        t.clock.advance(time::Duration::minutes(6));
        let records = line_records(&t, 1).await;
        assert_eq!(records[0].outcome, Outcome::Verified);
        let pushes = calls(&line, "push", 1).await;
        assert!(
            alt(&pushes[0]).starts_with("✅ สลิปถูกต้อง 123.45 บาท"),
            "{}",
            alt(&pushes[0])
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(line.calls("push").len(), 1, "pushed once");
        assert_eq!(line.calls("reply").len(), 1);
        t.stop().await;
    }
);

both!(
    webhook_bodies_and_images_are_bounded,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        // A body over 1 MB is refused before its signature is looked at.
        let big = format!("{{\"events\":[],\"pad\":\"{}\"}}", "x".repeat(1024 * 1024));
        assert_eq!(deliver(&t, &ten, &big, Some(SECRET)).await, 400);
        // Content over 4 MB is not downloaded past the cap: the customer is asked for a picture.
        line.put_content("6001", vec![0xFF; 5 * 1024 * 1024]);
        let ev = image_event("01HEVENT0000000000000000F1", "6001", "rt-f1", None);
        assert_eq!(
            deliver(&t, &ten, &webhook_body(vec![ev]), Some(SECRET)).await,
            200
        );
        let records = line_records(&t, 1).await;
        assert_eq!(records[0].outcome, Outcome::Error, "{records:?}");
        let replies = calls(&line, "reply", 1).await;
        assert!(alt(&replies[0]).starts_with("📷"), "{}", alt(&replies[0]));
        t.stop().await;
    }
);
