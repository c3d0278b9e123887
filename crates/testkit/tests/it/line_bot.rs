//! The LINE slip bot (issue 32) against a LINE platform simulator on loopback (`sim::line`):
//! signature (also against LINE's own Node SDK), de-duplication, image → verdict reply quoting
//! the image, group silence, push and its allowance, a node stopped mid-event, `imageSet`,
//! `join`, `สรุป`, metrics, the attempts log. On SQLite and PostgreSQL.

use crate::common::{blank_png, on_path, png};
use domain::attempt::Outcome;
use domain::model::Transfer;
use serde_json::{json, Value};
use sim::line::{
    image_event, image_set_event, join_event, text_event, webhook_body, LineCall, LineSim,
};
use testkit::{both, Backend, Tenant, TestApp};

const SECRET: &str = "line-channel-secret-0123456789";
const TOKEN: &str = "line-channel-token-abcdef";

/// `[line]` pointing at the simulator.
fn line_cfg(line: &LineSim) -> String {
    format!(
        "[line]\napi_base = \"{0}\"\ndata_api_base = \"{0}\"\n",
        line.base_url()
    )
}

/// `[jobs]` for a node that only takes webhooks: its events wait for a worker node.
const WEBHOOKS_ONLY: &str = "[jobs]\nconcurrency = 0\n";

async fn bot(b: Backend) -> (LineSim, TestApp, Tenant) {
    bot_with(b, "").await
}

/// `bot` with more configuration text.
async fn bot_with(b: Backend, more: &str) -> (LineSim, TestApp, Tenant) {
    let line = LineSim::start(TOKEN).await;
    let t = TestApp::spawn_with_config(b, &format!("{}{more}", line_cfg(&line))).await;
    let ten = t.tenant(100).await;
    set_line(&t, &ten, domain::line::LinePatch::default()).await;
    (line, t, ten)
}

/// The branch's LINE channel (secret and token) with `patch` on top.
async fn set_line(t: &TestApp, ten: &Tenant, patch: domain::line::LinePatch) {
    t.update_branch(
        &ten.branch_id,
        &services::admin::BranchUpdate {
            line: domain::line::LinePatch {
                channel_secret: Some(SECRET.into()),
                channel_token: Some(TOKEN.into()),
                ..patch
            },
            ..Default::default()
        },
    )
    .await;
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

/// Delivers `events` signed with the channel's secret, asserting LINE gets its 200.
async fn send(t: &TestApp, ten: &Tenant, events: Vec<Value>) {
    let body = webhook_body(events);
    assert_eq!(deliver(t, ten, &body, Some(SECRET)).await, 200);
}

/// A sandbox slip (KBank to SCB, `satang`) whose picture LINE holds as message `msg`.
async fn slip_picture(t: &TestApp, line: &LineSim, msg: &str, satang: i64) -> Transfer {
    let tr = t.transfer("004", "014", satang).await;
    line.put_content(msg, png(&tr.payload));
    tr
}

/// The staff's group chat.
const STAFF: &str = "C0123456789abcdef0123456789abcdef";

/// The branch's LINE channel with its notices to the staff's group.
fn notifying_staff() -> domain::line::LinePatch {
    domain::line::LinePatch {
        notify_to: Some(STAFF.into()),
        ..Default::default()
    }
}

/// The branch's LINE channel with pushes on.
fn pushes_on() -> domain::line::LinePatch {
    domain::line::LinePatch {
        push: Some(true),
        ..Default::default()
    }
}

/// Waits (real time, 20 s at most) until the attempts log holds `n` LINE records.
async fn line_records(t: &TestApp, n: usize) -> Vec<domain::attempt::Attempt> {
    for _ in 0..200 {
        let rows = t.attempts(100).await;
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
async fn calls(line: &LineSim, kind: &str, n: usize) -> Vec<LineCall> {
    for _ in 0..200 {
        let c = line.calls(kind);
        if c.len() >= n {
            return c;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("fewer than {n} LINE {kind} calls");
}

/// The `altText` of the call's Flex card (after the quoting text, when there is one).
fn alt(call: &LineCall) -> String {
    call.body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["type"] == "flex"))
        .and_then(|m| m["altText"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The call's Flex card's `altText` starts with `prefix`.
#[track_caller]
fn assert_alt_starts(call: &LineCall, prefix: &str) {
    let text = alt(call);
    assert!(text.starts_with(prefix), "{text}");
}

/// The call's Flex card's `altText` contains `part`.
#[track_caller]
fn assert_alt_contains(call: &LineCall, part: &str) {
    let text = alt(call);
    assert!(text.contains(part), "{text}");
}

/// Waits until the store holds no `line` job that is not finished.
async fn line_jobs_settled(t: &TestApp) {
    for _ in 0..200 {
        let counts = t.app.store.job_counts().await.unwrap();
        let open = counts
            .iter()
            .any(|(kind, state, n)| kind == "line" && state != "done" && *n > 0);
        if !open && counts.iter().any(|(kind, _, _)| kind == "line") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("LINE jobs still open");
}

both!(
    an_image_slip_is_answered_once_and_a_repeat_is_a_duplicate,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        let tr = slip_picture(&t, &line, "1001", 125_050).await;
        let ev = image_event("01HEVENT0000000000000000A1", "1001", "rt-1", None);
        send(&t, &ten, vec![ev.clone()]).await;
        let replies = calls(&line, "reply", 1).await;
        assert_eq!(replies[0].body["replyToken"], "rt-1");
        assert_eq!(
            replies[0].headers["authorization"],
            format!("Bearer {TOKEN}")
        );
        assert_eq!(alt(&replies[0]), "✅ สลิปถูกต้อง 1,250.50 บาท");
        // The customer's image is quoted by a text (a Flex message cannot quote), then the card.
        let messages = &replies[0].body["messages"];
        assert_eq!(messages[0]["type"], "text");
        assert_eq!(messages[0]["quoteToken"], "q-1001");
        assert_eq!(messages[0]["text"], "✅ สลิปถูกต้อง 1,250.50 บาท");
        assert_eq!(messages[1]["type"], "flex");
        let refused = line.calls("refused");
        assert!(refused.is_empty(), "{refused:?}");
        // The loading indicator in a one-to-one chat.
        assert_eq!(line.calls("loading").len(), 1);

        // LINE redelivers the same event: no second download, no second reply.
        let mut again = ev.clone();
        again["deliveryContext"]["isRedelivery"] = json!(true);
        send(&t, &ten, vec![again]).await;
        // The same picture sent again: a duplicate.
        line.put_content("1002", png(&tr.payload));
        let second = image_event("01HEVENT0000000000000000A2", "1002", "rt-2", None);
        send(&t, &ten, vec![second]).await;
        let replies = calls(&line, "reply", 2).await;
        assert_alt_starts(&replies[1], "⛔ สลิปซ้ำ 1,250.50 บาท");
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
        slip_picture(&t, &line, "2001", 700).await;
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
        send(&t, &ten, vec![]).await;
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
        let in_group = Some("Cdeadbeefdeadbeefdeadbeefdeadbeef");
        let private = image_event("01HEVENT0000000000000000C1", "3001", "rt-c1", None);
        let group = image_event("01HEVENT0000000000000000C2", "3002", "rt-c2", in_group);
        send(&t, &ten, vec![private, group]).await;
        let records = line_records(&t, 2).await;
        assert!(
            records.iter().all(|a| a.outcome == Outcome::NoQr),
            "{records:?}"
        );
        let replies = calls(&line, "reply", 1).await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert_eq!(line.calls("reply").len(), 1, "silence in the group");
        assert_eq!(replies[0].body["replyToken"], "rt-c1");
        assert_alt_starts(&replies[0], "📷");
        // A good slip in a silent group: verified, and no word.
        slip_picture(&t, &line, "3003", 900).await;
        let good = image_event("01HEVENT0000000000000000C3", "3003", "rt-c3", in_group);
        send(&t, &ten, vec![good]).await;
        let records = line_records(&t, 3).await;
        assert_eq!(records[0].outcome, Outcome::Verified);
        assert_eq!(line.calls("reply").len(), 1);
        t.stop().await;
    }
);

both!(
    a_late_answer_is_pushed_only_when_pushes_are_on,
    |b: Backend| async move {
        // This node only takes webhooks (no worker): the events wait.
        let (line, t, ten) = bot_with(b, WEBHOOKS_ONLY).await;
        let cfg = line_cfg(&line);
        let push = |push: bool| domain::line::LinePatch {
            push: Some(push),
            push_daily_limit: Some(1),
            ..Default::default()
        };
        set_line(&t, &ten, push(false)).await;
        slip_picture(&t, &line, "4001", 5_000).await;
        let ev = image_event("01HEVENT0000000000000000D1", "4001", "rt-d1", None);
        send(&t, &ten, vec![ev]).await;
        // Two minutes later a node with a worker gets to it: the reply token is too old and
        // pushes are off, so nothing is sent (the slip is still verified and logged).
        t.clock.advance(time::Duration::minutes(2));
        let worker = t.another_node_with_config(&cfg).await;
        let _ = line_records(&t, 1).await;
        assert!(line.calls("reply").is_empty());
        assert!(line.calls("push").is_empty());
        worker.stop().await;

        // With pushes on (one a day): pushed once, with a retry key; the next is over the limit.
        set_line(&t, &ten, push(true)).await;
        for (n, (event, msg, amount)) in [
            ("01HEVENT0000000000000000D2", "4002", 6_000),
            ("01HEVENT0000000000000000D3", "4003", 7_000),
        ]
        .into_iter()
        .enumerate()
        {
            slip_picture(&t, &line, msg, amount).await;
            let ev = image_event(event, msg, "rt-late", None);
            send(&t, &ten, vec![ev]).await;
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
        assert_alt_contains(&pushes[0], "60.00");
        assert!(line.calls("reply").is_empty());
        t.stop().await;
    }
);

both!(
    a_pending_slip_is_answered_then_its_result_pushed_once,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        set_line(&t, &ten, pushes_on()).await;
        // Bangkok Bank: pending for five minutes on the sandbox ledger.
        let tr = t.transfer("002", "014", 12_345).await;
        line.put_content("5001", png(&tr.payload));
        let ev = image_event("01HEVENT0000000000000000E1", "5001", "rt-e1", None);
        send(&t, &ten, vec![ev]).await;
        let replies = calls(&line, "reply", 1).await;
        assert_alt_starts(&replies[0], "⏳");
        // Not logged yet: the record carries the final outcome.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(t.attempts(10).await.is_empty());
        // Six minutes on: the bank confirms; the result is pushed (the reply token is old).
        t.clock.advance(time::Duration::minutes(6));
        let records = line_records(&t, 1).await;
        assert_eq!(records[0].outcome, Outcome::Verified);
        let pushes = calls(&line, "push", 1).await;
        assert_alt_starts(&pushes[0], "✅ สลิปถูกต้อง 123.45 บาท");
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
        send(&t, &ten, vec![ev]).await;
        let records = line_records(&t, 1).await;
        assert_eq!(records[0].outcome, Outcome::Error, "{records:?}");
        let replies = calls(&line, "reply", 1).await;
        assert_alt_starts(&replies[0], "📷");
        t.stop().await;
    }
);

both!(
    an_image_set_of_two_slips_gets_two_verdicts,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        slip_picture(&t, &line, "7001", 10_000).await;
        slip_picture(&t, &line, "7002", 25_075).await;
        // Two pictures sent at once: two events of one `imageSet`, each with its reply token.
        send(
            &t,
            &ten,
            vec![
                image_set_event("01HEVENT0000000000000000G1", "7001", "rt-g1", "set-1", 1, 2),
                image_set_event("01HEVENT0000000000000000G2", "7002", "rt-g2", "set-1", 2, 2),
            ],
        )
        .await;
        let replies = calls(&line, "reply", 2).await;
        let mut got: Vec<(String, String, String)> = replies
            .iter()
            .map(|r| {
                (
                    r.body["replyToken"].as_str().unwrap().to_string(),
                    r.body["messages"][0]["quoteToken"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    alt(r),
                )
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                (
                    "rt-g1".to_string(),
                    "q-7001".to_string(),
                    "✅ สลิปถูกต้อง 100.00 บาท".to_string()
                ),
                (
                    "rt-g2".to_string(),
                    "q-7002".to_string(),
                    "✅ สลิปถูกต้อง 250.75 บาท".to_string()
                ),
            ]
        );
        let records = line_records(&t, 2).await;
        assert!(records.iter().all(|a| a.outcome == Outcome::Verified));
        line_jobs_settled(&t).await;
        assert_eq!(line.calls("reply").len(), 2);
        t.stop().await;
    }
);

both!(
    joining_a_group_answers_its_id_once,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        let group = "Cfeedfacefeedfacefeedfacefeedface";
        let join = join_event("01HEVENT0000000000000000H1", "rt-h1", group);
        send(&t, &ten, vec![join.clone()]).await;
        let replies = calls(&line, "reply", 1).await;
        assert_eq!(replies[0].body["replyToken"], "rt-h1");
        let text = replies[0].body["messages"][0]["text"].as_str().unwrap();
        assert!(text.contains(group), "{text}");
        // Redelivered: answered once.
        let mut again = join;
        again["deliveryContext"]["isRedelivery"] = json!(true);
        send(&t, &ten, vec![again]).await;
        line_jobs_settled(&t).await;
        assert_eq!(line.calls("reply").len(), 1);
        assert!(line.calls("push").is_empty());
        t.stop().await;
    }
);

both!(
    summary_in_the_staff_group_answers_the_days_total,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        set_line(&t, &ten, notifying_staff()).await;
        for (i, amount) in [(1, 120_000), (2, 5_050)] {
            let msg = format!("800{i}");
            slip_picture(&t, &line, &msg, amount).await;
            let ev = image_event(
                &format!("01HEVENT0000000000000000J{i}"),
                &msg,
                &format!("rt-j{i}"),
                None,
            );
            send(&t, &ten, vec![ev]).await;
        }
        // A slip that is not found does not count.
        line.put_content(
            "8003",
            png(&slip_qr::encode_bank_slip("004", "NOSUCHREF00000000001")),
        );
        let ev = image_event("01HEVENT0000000000000000J3", "8003", "rt-j3", None);
        send(&t, &ten, vec![ev]).await;
        let _ = line_records(&t, 3).await;
        // `สรุป` in another group: not the staff's, no answer.
        let other_group = Some("Cabcdefabcdefabcdefabcdefabcdef01");
        let elsewhere = text_event("01HEVENT0000000000000000J4", "สรุป", "rt-j4", other_group);
        send(&t, &ten, vec![elsewhere]).await;
        let ask = text_event("01HEVENT0000000000000000J5", "สรุป", "rt-j5", Some(STAFF));
        send(&t, &ten, vec![ask]).await;
        line_jobs_settled(&t).await;
        let replies = line.calls("reply");
        let summary: Vec<_> = replies
            .iter()
            .filter(|r| r.body["replyToken"] == "rt-j5")
            .collect();
        assert_eq!(summary.len(), 1);
        assert_eq!(
            summary[0].body["messages"][0]["text"],
            "สรุปวันนี้: 2 รายการ 1,250.50 บาท"
        );
        assert!(replies.iter().all(|r| r.body["replyToken"] != "rt-j4"));
        t.stop().await;
    }
);

// LINE refuses the reply token (used up or expired on its side, within our window): the
// verdict is pushed with a retry key when pushes are on — a 429 retried under the same key —
// and nothing is sent when they are off.
both!(
    a_refused_reply_token_falls_back_to_one_push_only_when_pushes_are_on,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        slip_picture(&t, &line, "9001", 3_300).await;
        line.expire_reply_token("rt-k1");
        let ev = image_event("01HEVENT0000000000000000K1", "9001", "rt-k1", None);
        send(&t, &ten, vec![ev]).await;
        let _ = line_records(&t, 1).await;
        line_jobs_settled(&t).await;
        assert!(line.calls("reply").is_empty());
        assert!(line.calls("push").is_empty(), "pushes are off");

        set_line(&t, &ten, pushes_on()).await;
        slip_picture(&t, &line, "9002", 4_400).await;
        line.expire_reply_token("rt-k2");
        line.fail_next_pushes(&[429]);
        let ev = image_event("01HEVENT0000000000000000K2", "9002", "rt-k2", None);
        send(&t, &ten, vec![ev]).await;
        let pushes = calls(&line, "push", 1).await;
        line_jobs_settled(&t).await;
        let pushes_now = line.calls("push");
        assert_eq!(pushes_now.len(), 1, "one push");
        assert_eq!(pushes[0].body["to"], "Ucustomer");
        let key = &pushes[0].headers["x-line-retry-key"];
        assert!(uuid::Uuid::parse_str(key).is_ok(), "{key}");
        assert_alt_contains(&pushes[0], "44.00");
        // The push quotes the image too (the same chat).
        assert_eq!(pushes[0].body["messages"][0]["quoteToken"], "q-9002");
        t.stop().await;
    }
);

// A payment QR (what the customer should pay, not a slip): asked for the slip in private,
// silence in a group.
both!(a_payment_qr_is_not_a_slip, |b: Backend| async move {
    let (line, t, ten) = bot(b).await;
    let payment = slip_qr::generate_payment_qr(&slip_qr::PaymentRequest {
        target: slip_qr::PaymentTarget::Msisdn("0812345678".into()),
        amount_satang: Some(50_000),
        merchant_name: None,
    })
    .unwrap();
    line.put_content("9301", png(&payment));
    line.put_content("9302", png(&payment));
    let group = Some("C0123456789abcdef0123456789abcdef");
    let private = image_event("01HEVENT0000000000000000N1", "9301", "rt-n1", None);
    let in_group = image_event("01HEVENT0000000000000000N2", "9302", "rt-n2", group);
    send(&t, &ten, vec![private, in_group]).await;
    let records = line_records(&t, 2).await;
    assert!(
        records.iter().all(|a| a.outcome == Outcome::InvalidQr),
        "{records:?}"
    );
    line_jobs_settled(&t).await;
    let replies = line.calls("reply");
    assert_eq!(replies.len(), 1, "silence in the group");
    assert_eq!(replies[0].body["replyToken"], "rt-n1");
    assert_alt_starts(&replies[0], "📷");
    t.stop().await;
});

// A refusal the customer must not see (the branch is inactive): a neutral "staff will
// confirm" answer, and the reason pushed to the staff chat; with the branch active again, a
// verified payment is also pushed there.
both!(
    a_hidden_refusal_tells_the_customer_staff_will_confirm_and_notifies_staff,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        let patch = domain::line::LinePatch {
            push: Some(true),
            ..notifying_staff()
        };
        set_line(&t, &ten, patch).await;
        let tr = slip_picture(&t, &line, "9401", 8_800).await;
        t.set_branch_active(&ten.branch_id, false).await;
        let ev = image_event("01HEVENT0000000000000000P1", "9401", "rt-p1", None);
        send(&t, &ten, vec![ev]).await;
        let replies = calls(&line, "reply", 1).await;
        assert_alt_starts(&replies[0], "ได้รับสลิปแล้ว");
        let pushes = calls(&line, "push", 1).await;
        assert_eq!(pushes[0].body["to"], STAFF);
        assert_eq!(
            pushes[0].body["messages"][0]["text"],
            domain::line::notice_unchecked("BRANCH_INACTIVE")
        );
        // The staff chat is not the customer's: no quote there.
        assert!(pushes[0].body["messages"][0].get("quoteToken").is_none());

        t.set_branch_active(&ten.branch_id, true).await;
        line.put_content("9402", png(&tr.payload));
        let ev = image_event("01HEVENT0000000000000000P2", "9402", "rt-p2", None);
        send(&t, &ten, vec![ev]).await;
        let pushes = calls(&line, "push", 2).await;
        assert_eq!(pushes[1].body["to"], STAFF);
        assert_eq!(pushes[1].body["messages"][0]["text"], "✅ 88.00 บาท");
        let replies = calls(&line, "reply", 2).await;
        assert_eq!(alt(&replies[1]), "✅ สลิปถูกต้อง 88.00 บาท");
        assert_eq!(
            t.used(&ten.api_key).await,
            1,
            "the refused slip was not charged"
        );
        t.stop().await;
    }
);

// A typed slip payload is verified like a picture (and quoted); other chat is ignored. An image
// LINE says is hosted elsewhere (`contentProvider.type = external`) goes through the image-URL
// guard: a loopback address is not fetched.
both!(
    a_typed_payload_is_verified_and_an_external_image_is_guarded,
    |b: Backend| async move {
        let (line, t, ten) = bot(b).await;
        let tr = t.transfer("004", "014", 77_700).await;
        let payload = text_event("01HEVENT0000000000000000R1", &tr.payload, "rt-r1", None);
        let chat = "สวัสดีค่ะ โอนแล้วนะคะ";
        let chat = text_event("01HEVENT0000000000000000R2", chat, "rt-r2", None);
        send(&t, &ten, vec![payload, chat]).await;
        let replies = calls(&line, "reply", 1).await;
        assert_eq!(replies[0].body["replyToken"], "rt-r1");
        assert_eq!(alt(&replies[0]), "✅ สลิปถูกต้อง 777.00 บาท");
        assert_eq!(
            replies[0].body["messages"][0]["quoteToken"],
            "q-t-01HEVENT0000000000000000R1"
        );

        // A loopback host that would serve a good slip, and counts who asks.
        let other = t.transfer("004", "014", 1_200).await;
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = asked.clone();
        let picture = png(&other.payload);
        let host = axum::Router::new().route(
            "/slip.png",
            axum::routing::get(move || {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let picture = picture.clone();
                async move { ([("content-type", "image/png")], picture) }
            }),
        );
        let url = format!("http://{}/slip.png", testkit::serve_on_loopback(host).await);
        let mut ev = image_event("01HEVENT0000000000000000R3", "9601", "rt-r3", None);
        ev["message"]["contentProvider"] = json!({"type": "external", "originalContentUrl": url});
        send(&t, &ten, vec![ev]).await;
        let records = line_records(&t, 2).await;
        assert_eq!(records[1].outcome, Outcome::Verified);
        assert_eq!(records[0].outcome, Outcome::Error, "{records:?}");
        line_jobs_settled(&t).await;
        let replies = line.calls("reply");
        assert_eq!(replies.len(), 2, "chat is not answered");
        assert_eq!(replies[1].body["replyToken"], "rt-r3");
        assert_alt_starts(&replies[1], "📷");
        assert!(
            line.calls("content").is_empty(),
            "nothing downloaded from LINE"
        );
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "the guard refused the address before any request"
        );
        t.stop().await;
    }
);

/// A node with a worker on `t`'s database, talking to the simulator; `drain`: how long its
/// shutdown waits for jobs in hand before cutting them off (and handing them back).
async fn worker_node(t: &TestApp, line: &LineSim, drain: std::time::Duration) -> TestApp {
    let client = services::line::client::LineClient::new(
        &line.base_url(),
        &line.base_url(),
        &egress::operator::OutboundSettings::default(),
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    t.another_node_with_app(move |a| {
        a.services
            .set_line(client, std::time::Duration::from_secs(50));
        a.worker.drain = drain;
    })
    .await
}

/// Sends a slip of `satang` (`event`: its event id, message id and reply token) while LINE
/// holds every call of one kind unanswered; stops the worker node once it has made the `n`th
/// such call, lets LINE answer again and returns the next worker node.
async fn stop_mid_call(
    t: &TestApp,
    ten: &Tenant,
    line: &LineSim,
    (held, n): (&'static str, usize),
    (event, msg, reply_token): (&str, &str, &str),
    satang: i64,
) -> TestApp {
    let cut = std::time::Duration::from_millis(50);
    slip_picture(t, line, msg, satang).await;
    line.hold(held);
    let n1 = worker_node(t, line, cut).await;
    send(t, ten, vec![image_event(event, msg, reply_token, None)]).await;
    let _ = calls(line, held, n).await;
    n1.stop().await;
    line.release();
    worker_node(t, line, cut).await
}

// A node stopped in the middle of an event — after the webhook's 200, while LINE's content
// host or reply call has not answered — leaves the event to the next node: the customer gets
// exactly one answer, and the slip is charged once.
both!(
    a_node_stopped_mid_event_leaves_one_answer_to_the_next_node,
    |b: Backend| async move {
        // This node takes webhooks only; the worker nodes come and go.
        let (line, t, ten) = bot_with(b, WEBHOOKS_ONLY).await;
        // Pushes on: a wrong reading of the spent token would show as a push.
        set_line(&t, &ten, pushes_on()).await;

        // 1. Stopped while downloading the picture.
        let ev = ("01HEVENT0000000000000000L1", "9101", "rt-l1");
        let n2 = stop_mid_call(&t, &ten, &line, ("content", 1), ev, 11_100).await;
        let replies = calls(&line, "reply", 1).await;
        assert_eq!(replies[0].body["replyToken"], "rt-l1");
        assert_eq!(alt(&replies[0]), "✅ สลิปถูกต้อง 111.00 บาท");
        line_jobs_settled(&t).await;
        n2.stop().await;
        assert_eq!(line.calls("content").len(), 2, "downloaded again");
        assert_eq!(line.calls("reply").len(), 1);

        // 2. Stopped after LINE took the reply (its token is spent) but before it answered.
        let ev = ("01HEVENT0000000000000000L2", "9102", "rt-l2");
        let n2 = stop_mid_call(&t, &ten, &line, ("reply", 2), ev, 22_200).await;
        line_jobs_settled(&t).await;
        // The next node ran the event again and found the reply mark: LINE's 400 on the spent
        // token means "answered", not "too old, push".
        assert_eq!(line.calls("content").len(), 4, "downloaded again");
        let replies = line.calls("reply");
        assert_eq!(replies.len(), 2, "one reply per event");
        assert_eq!(alt(&replies[1]), "✅ สลิปถูกต้อง 222.00 บาท");
        assert!(line.calls("push").is_empty(), "{:?}", line.calls("push"));
        assert_eq!(t.used(&ten.api_key).await, 2, "each slip charged once");
        n2.stop().await;
        t.stop().await;
    }
);

both!(
    line_events_and_sends_are_counted_in_the_metrics,
    |b: Backend| async move {
        let (line, t, ten) = bot_with(b, "[metrics]\nlisten = \"127.0.0.1:0\"\n").await;
        slip_picture(&t, &line, "9201", 1_000).await;
        let follow = json!({
            "type": "follow", "mode": "active", "timestamp": 1_795_760_000_000_i64,
            "webhookEventId": "01HEVENT0000000000000000M3", "deliveryContext": {"isRedelivery": false},
            "source": {"type": "user", "userId": "Unew"}, "replyToken": "rt-m3"
        });
        let body = webhook_body(vec![
            image_event("01HEVENT0000000000000000M1", "9201", "rt-m1", None),
            join_event(
                "01HEVENT0000000000000000M2",
                "rt-m2",
                "C99999999999999999999999999999999",
            ),
            follow,
        ]);
        // Refused calls count nothing.
        assert_eq!(deliver(&t, &ten, &body, Some("wrong")).await, 401);
        assert_eq!(deliver(&t, &ten, &body, Some(SECRET)).await, 200);
        let _ = calls(&line, "reply", 2).await;
        line_jobs_settled(&t).await;
        let m = crate::metrics::scrape(&t).await;
        let events = |ty: &str, source: &str| {
            m.get(
                "slipverify_line_events_total",
                &[("type", ty), ("source", source)],
            )
        };
        assert_eq!(events("message", "user"), 1.0);
        assert_eq!(events("join", "group"), 1.0);
        assert_eq!(events("follow", "user"), 1.0);
        assert_eq!(m.sum("slipverify_line_events_total", &[]), 3.0);
        assert_eq!(
            m.get(
                "slipverify_line_messages_total",
                &[("call", "reply"), ("outcome", "sent")]
            ),
            2.0
        );
        assert_eq!(
            m.get(
                "slipverify_verifications_total",
                &[
                    ("kind", "bank"),
                    ("input", "image"),
                    ("outcome", "verified")
                ]
            ),
            1.0
        );
        t.stop().await;
    }
);

/// The pinned `@line/bot-sdk` (`crates/testkit/line-sdk`), installed with `npm ci` under the
/// target directory when missing or when the lock file changed; its `validate.js` directory.
/// Fails, never skips, when Node or npm cannot be had (Debian's `nodejs` and `npm`).
fn line_sdk() -> std::path::PathBuf {
    use std::process::{Command, Stdio};
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("line-sdk");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("line-bot-sdk");
    let lock = std::fs::read(src.join("package-lock.json")).unwrap();
    let installed = dir
        .join("node_modules/@line/bot-sdk/package.json")
        .is_file()
        && std::fs::read(dir.join("package-lock.json")).ok().as_ref() == Some(&lock);
    if !installed {
        if !on_path("node") || !on_path("npm") {
            let _ = Command::new("sh")
                .arg("-c")
                .arg("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        // Installed beside, then moved in: a run cut short leaves no half-installed SDK.
        let tmp = dir.with_file_name(format!("line-bot-sdk-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&tmp).unwrap();
        for f in ["package.json", "package-lock.json", "validate.js"] {
            std::fs::copy(src.join(f), tmp.join(f)).unwrap();
        }
        let out = Command::new("npm")
            .args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"])
            .current_dir(&tmp)
            .output()
            .expect("npm is needed for the @line/bot-sdk cross-check (apt-get install nodejs npm)");
        assert!(
            out.status.success(),
            "npm ci of @line/bot-sdk failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&tmp, &dir).unwrap();
    }
    // The script may have changed without the lock.
    std::fs::copy(src.join("validate.js"), dir.join("validate.js")).unwrap();
    dir
}

/// `@line/bot-sdk`'s `validateSignature` on each (secret, body, signature).
fn sdk_validates(cases: &[(String, Vec<u8>, String)]) -> Vec<bool> {
    use base64::Engine;
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = line_sdk();
    let input: Vec<_> = cases
        .iter()
        .map(|(secret, body, sig)| {
            json!({
                "secret": secret,
                "body": base64::engine::general_purpose::STANDARD.encode(body),
                "signature": sig,
            })
        })
        .collect();
    let mut child = Command::new("node")
        .arg("validate.js")
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node");
    let mut stdin = child.stdin.take().unwrap();
    let text = serde_json::to_vec(&input).unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&text));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "validate.js: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// splitmix64: the generated bodies, the same on every run.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    fn hex(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b"0123456789abcdef"[(self.next() % 16) as usize]))
            .collect()
    }
}

// Our `X-Line-Signature` check against LINE's official Node SDK on generated bodies: random
// bytes, Thai text, bodies at the 1 MB cap. Good signatures, changed bodies, other secrets and
// other bodies' signatures are judged alike; on malformed Base64 (which LINE never sends) ours
// is the stricter: it never accepts what the SDK refuses.
#[test]
fn the_signature_check_agrees_with_lines_node_sdk() {
    use domain::line::{signature, signature_ok};
    let mut g = Gen(0x5119_7e21_0000_0032);
    let thai = "โอนเงินแล้วค่ะ สลิปตามนี้ 1,250.50 บาท ✅ ";
    let mut bodies: Vec<Vec<u8>> = vec![Vec::new(), b"{}".to_vec()];
    for _ in 0..12 {
        let n = (g.next() % 3000) as usize;
        bodies.push(g.bytes(n));
    }
    for i in 0..6 {
        let text = thai.repeat(1 + (g.next() % 40) as usize);
        bodies.push(
            json!({"destination": "U1", "events": [{"type": "message", "webhookEventId": format!("e{i}"),
                   "message": {"type": "text", "id": "1", "text": text}}]})
            .to_string()
            .into_bytes(),
        );
    }
    // The webhook's cap, and a body of many Thai characters near it.
    bodies.push(g.bytes(1024 * 1024));
    bodies.push(thai.repeat(1024 * 1024 / thai.len()).into_bytes());
    let mut secrets = vec!["".to_string(), "รหัสลับของช่อง".to_string()];
    secrets.extend((0..4).map(|_| g.hex(32)));

    // (secret, body, signature, what the answer must be; None: malformed Base64)
    let mut cases: Vec<(String, Vec<u8>, String, Option<bool>)> = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        let secret = secrets[i % secrets.len()].clone();
        let other = secrets[(i + 1) % secrets.len()].clone();
        let sig = signature(&secret, body);
        cases.push((secret.clone(), body.clone(), sig.clone(), Some(true)));
        cases.push((
            secret.clone(),
            body.clone(),
            signature(&other, body),
            Some(false),
        ));
        if !body.is_empty() {
            let mut changed = body.clone();
            let at = (g.next() as usize) % changed.len();
            changed[at] ^= 1 << (g.next() % 8);
            cases.push((secret.clone(), changed, sig.clone(), Some(false)));
            let mut longer = body.clone();
            longer.push(b' ');
            cases.push((secret.clone(), longer, sig.clone(), Some(false)));
        }
        let elsewhere = &bodies[(i + 1) % bodies.len()];
        if elsewhere != body {
            cases.push((
                secret.clone(),
                body.clone(),
                signature(&secret, elsewhere),
                Some(false),
            ));
        }
        cases.push((secret.clone(), body.clone(), String::new(), Some(false)));
        // Malformed forms of the good signature.
        for bad in [
            sig.trim_end_matches('=').to_string(),
            sig.replace('+', "-").replace('/', "_"),
            format!("{}{}", &sig[..20], &sig[20..].replace('A', " A")),
            sig[..sig.len() - 4].to_string(),
            format!("{sig}!!"),
        ] {
            if bad != sig {
                cases.push((secret.clone(), body.clone(), bad, None));
            }
        }
    }
    let judged: Vec<_> = cases
        .iter()
        .map(|(s, b, sig, _)| (s.clone(), b.clone(), sig.clone()))
        .collect();
    let sdk = sdk_validates(&judged);
    assert_eq!(sdk.len(), cases.len());
    let mut agreed = 0;
    for ((secret, body, sig, want), sdk_says) in cases.iter().zip(&sdk) {
        let ours = signature_ok(secret, body, sig);
        let what = format!("secret {secret:?}, {} bytes, signature {sig:?}", body.len());
        match want {
            Some(want) => {
                assert_eq!(*sdk_says, *want, "SDK: {what}");
                assert_eq!(ours, *want, "ours: {what}");
                agreed += 1;
            }
            None => assert!(
                !ours || *sdk_says,
                "ours accepts what the SDK refuses: {what}"
            ),
        }
    }
    assert!(agreed > 100, "{agreed} cases");
}

// The reply marks (`line_events`) are forgotten after 24 h by the periodic job `line-replies`
// (run here by hand: the runner's periods follow the test clock, which the test moves).
both!(reply_marks_are_swept_after_a_day, |b: Backend| async move {
    use services::jobs::periodic::{builtin, PeriodicJob, Periods, SweepLineReplies};
    let (line, t, ten) = bot(b).await;
    slip_picture(&t, &line, "9501", 1_500).await;
    let ev = image_event("01HEVENT0000000000000000Q1", "9501", "rt-q1", None);
    send(&t, &ten, vec![ev]).await;
    let _ = calls(&line, "reply", 1).await;
    line_jobs_settled(&t).await;
    let sweep = SweepLineReplies {
        every: std::time::Duration::from_secs(600),
    };
    let svc = &t.app.services;
    t.clock.advance(time::Duration::hours(23));
    assert_eq!(
        sweep.run(svc).await.unwrap(),
        "deleted 0",
        "kept within the day"
    );
    t.clock.advance(time::Duration::hours(2));
    assert_eq!(sweep.run(svc).await.unwrap(), "deleted 1");
    assert_eq!(sweep.run(svc).await.unwrap(), "deleted 0");
    // Registered with the other periodic jobs.
    assert!(builtin(&Periods::default())
        .iter()
        .any(|j| j.name() == "line-replies"));
    t.stop().await;
});
