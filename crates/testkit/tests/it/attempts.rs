//! The attempts log (issue 30): every verification that passed authentication and the rate
//! limit leaves exactly one record, committed before the answer; search, CSV export and
//! retention, on SQLite and PostgreSQL.

use crate::common::{blank_png, v1_code};
use domain::attempt::{AttemptRow, Outcome};
use domain::model::Transfer;
use serde_json::{json, Value};
use testkit::{both, Backend, Tenant, TestApp};

const TOKEN: &str = "attempts-admin-token-0123456789";

async fn app(b: Backend) -> (TestApp, Tenant) {
    let t = TestApp::spawn_with(b, |s| s.set_admin_token(TOKEN)).await;
    let ten = t.tenant(100).await;
    (t, ten)
}

/// `app` and a fresh sandbox slip of `satang` (KBank to SCB).
async fn app_and_slip(b: Backend, satang: i64) -> (TestApp, Tenant, Transfer) {
    let (t, ten) = app(b).await;
    let tr = t.transfer("004", "014", satang).await;
    (t, ten, tr)
}

/// Every record, newest first.
async fn all(t: &TestApp) -> Vec<AttemptRow> {
    t.attempts(1000).await
}

/// The one record there must be, with `outcome`.
async fn only(t: &TestApp, outcome: Outcome) -> domain::attempt::Attempt {
    let rows = all(t).await;
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let a = rows[0].attempt.clone();
    assert_eq!(a.outcome, outcome, "{a:#?}");
    a
}

/// Verifies `body`, asserting the v2 error `status` and `code`; the one record there must be,
/// with `outcome` and that code.
async fn refused_as(
    t: &TestApp,
    ten: &Tenant,
    body: Value,
    (status, code): (u16, &str),
    outcome: Outcome,
) -> domain::attempt::Attempt {
    t.verify_bank_err(&ten.api_key, body, status, code).await;
    let a = only(t, outcome).await;
    assert_eq!(a.error_code.as_deref(), Some(code), "{a:#?}");
    a
}

/// v1 answers `payload`, checked for duplicates, with `duplicate_slip`; returns the answer.
async fn v1_duplicate(t: &TestApp, key: &str, payload: &str) -> Value {
    let body = json!({"payload": payload, "checkDuplicate": true});
    let (s, v) = t.post("/api/v1/verify", key, body).await;
    assert_eq!((s, v1_code(&v)), (400, "duplicate_slip"), "{v}");
    v
}

async fn admin_get(t: &TestApp, path_and_query: &str) -> (u16, String) {
    let path = format!("/admin/{path_and_query}");
    let resp = t.get_response(&path, Some(TOKEN)).await;
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap())
}

async fn search(t: &TestApp, query: &str) -> Value {
    let (s, body) = admin_get(t, &format!("verifications?{query}")).await;
    assert_eq!(s, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn refs(page: &Value) -> Vec<String> {
    page["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["transRef"].as_str().unwrap_or("").to_string())
        .collect()
}

both!(
    a_verified_slip_is_recorded_with_what_was_learnt,
    |b: Backend| async move {
        let (t, ten, tr) = app_and_slip(b, 125_050).await;
        let resp = t
            .http
            .post(format!("{}/v2/verify/bank", t.base))
            .bearer_auth(&ten.api_key)
            .header("x-request-id", "req-verified-1")
            .json(&json!({"payload": tr.payload, "matchAmount": 1250.00}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        // Committed before the answer: found at once, with no wait.
        let a = only(&t, Outcome::Verified).await;
        assert_eq!(a.service_id, ten.service_id);
        assert_eq!(a.branch_id, ten.branch_id);
        assert_eq!(a.channel.as_str(), "v2");
        assert_eq!(a.kind.as_str(), "bank");
        assert_eq!(a.input.map(|i| i.as_str()), Some("payload"));
        assert_eq!(a.sending_bank.as_deref(), Some("004"));
        assert_eq!(a.trans_ref.as_deref(), Some(tr.trans_ref.as_str()));
        assert_eq!(a.amount, Some(domain::Satang(125_050)));
        assert_eq!(a.mismatches, vec!["amount_not_match".to_string()]);
        assert_eq!(a.source.as_deref(), Some("sandbox"));
        assert_eq!(a.error_code, None);
        assert_eq!(a.request_id.as_deref(), Some("req-verified-1"));
        // Nothing of the key in the record.
        assert!(!format!("{a:?}").contains(&ten.api_key));
        t.stop().await;
    }
);

both!(
    a_repeat_checked_for_duplicates_is_a_duplicate,
    |b: Backend| async move {
        let (t, ten, tr) = app_and_slip(b, 700).await;
        let body = json!({"payload": tr.payload, "checkDuplicate": true});
        t.verify_bank_ok(&ten.api_key, body.clone()).await;
        let v = t.verify_bank_ok(&ten.api_key, body).await;
        assert_eq!(v["data"]["isDuplicate"], true);
        let rows = all(&t).await;
        let outcomes: Vec<_> = rows.iter().map(|r| r.attempt.outcome).collect();
        assert_eq!(outcomes, [Outcome::Duplicate, Outcome::Verified]);
        // The second was answered from the stored verification.
        assert_eq!(rows[0].attempt.source.as_deref(), Some("local"));
        // v1's duplicate_slip is a duplicate too.
        v1_duplicate(&t, &ten.api_key, &tr.payload).await;
        let newest = &all(&t).await[0].attempt;
        assert_eq!(
            (
                newest.outcome,
                newest.channel.as_str(),
                newest.error_code.as_deref()
            ),
            (Outcome::Duplicate, "v1", Some("duplicate_slip"))
        );
        t.stop().await;
    }
);

both!(an_unknown_slip_is_not_found, |b: Backend| async move {
    let (t, ten) = app(b).await;
    let unknown = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
    let body = json!({"payload": unknown});
    let a = refused_as(&t, &ten, body, (404, "SLIP_NOT_FOUND"), Outcome::NotFound).await;
    assert_eq!(a.trans_ref.as_deref(), Some("0123456789ABCDEFGHIJ"));
    t.stop().await;
});

both!(a_bangkok_bank_slip_is_pending, |b: Backend| async move {
    let (t, ten) = app(b).await;
    let tr = t.transfer("002", "004", 5000).await;
    let (s, _) = t
        .verify_bank(&ten.api_key, json!({"payload": tr.payload}))
        .await;
    assert_eq!(s, 404);
    only(&t, Outcome::Pending).await;
    t.stop().await;
});

both!(an_image_without_a_qr_is_no_qr, |b: Backend| async move {
    let (t, ten) = app(b).await;
    let (s, v) = t
        .upload("/v2/verify/bank", &ten.api_key, "image", blank_png(), &[])
        .await;
    assert_eq!(s, 404, "{v}");
    let a = only(&t, Outcome::NoQr).await;
    assert_eq!(a.input.map(|i| i.as_str()), Some("image"));
    assert_eq!(a.trans_ref, None);
    t.stop().await;
});

both!(
    a_qr_that_is_no_slip_is_invalid_qr,
    |b: Backend| async move {
        let (t, ten) = app(b).await;
        let body = json!({"payload": "hello"});
        refused_as(&t, &ten, body, (404, "SLIP_NOT_FOUND"), Outcome::InvalidQr).await;
        t.stop().await;
    }
);

both!(a_used_up_quota_is_refused, |b: Backend| async move {
    let t = TestApp::spawn(b).await;
    let ten = t.tenant(0).await;
    let tr = t.transfer("004", "014", 700).await;
    let body = json!({"payload": tr.payload});
    refused_as(&t, &ten, body, (403, "QUOTA_EXCEEDED"), Outcome::Refused).await;
    t.stop().await;
});

both!(
    a_bank_that_cannot_answer_is_unavailable,
    |b: Backend| async move {
        // The only connector listens nowhere (a closed loopback port).
        let t = TestApp::spawn_with_config(
            b,
            "[connectors.down]\nkind = \"easyslip\"\nbase_url = \"http://127.0.0.1:9\"\n\
         api_key = \"k\"\ntimeout_ms = 500\n[routing]\ndefault = [\"down\"]\n",
        )
        .await;
        let ten = t.tenant(100).await;
        let payload = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
        let body = json!({"payload": payload});
        t.verify_bank_err(&ten.api_key, body, 500, "API_SERVER_ERROR")
            .await;
        let a = only(&t, Outcome::Unavailable).await;
        // Nobody answered.
        assert_eq!(a.source, None);
        t.stop().await;
    }
);

both!(a_malformed_request_is_an_error, |b: Backend| async move {
    let (t, ten) = app(b).await;
    let a = refused_as(
        &t,
        &ten,
        json!({}),
        (400, "VALIDATION_ERROR"),
        Outcome::Error,
    )
    .await;
    assert_eq!(a.input, None);
    t.stop().await;
});

both!(
    an_async_job_records_its_final_outcome_once,
    |b: Backend| async move {
        // The submission itself is not an outcome.
        let (_rx, t, ten, tr, id) = TestApp::with_receiver_and_job(b, "004", 900, "hook").await;
        t.poll_job(&ten.api_key, &id, |j| j["status"] == "done")
            .await;
        let a = only(&t, Outcome::Verified).await;
        assert_eq!(a.channel.as_str(), "async");
        assert_eq!(a.job_id.as_ref().map(|j| j.as_str()), Some(id.as_str()));
        assert_eq!(a.trans_ref.as_deref(), Some(tr.trans_ref.as_str()));
        t.stop().await;
    }
);

both!(
    refused_callers_and_replays_leave_no_record,
    |b: Backend| async move {
        let (t, ten, tr) = app_and_slip(b, 700).await;
        // No key, a wrong key: authentication refused them.
        let (s, _) = t
            .post_raw(
                "/v2/verify/bank",
                None,
                &json!({"payload": tr.payload}).to_string(),
            )
            .await;
        assert_eq!(s, 401);
        let (s, _) = t
            .verify_bank(
                "00000000-0000-4000-8000-000000000000",
                json!({"payload": tr.payload}),
            )
            .await;
        assert_eq!(s, 401);
        assert!(all(&t).await.is_empty());
        // A replay of a stored Idempotency-Key answer was recorded when it first ran.
        for _ in 0..2 {
            let body = json!({"payload": tr.payload});
            let (s, _, v) = t
                .post_keyed("/v2/verify/bank", &ten.api_key, "attempts-once-1", &body)
                .await;
            assert_eq!(s, 200, "{v}");
        }
        only(&t, Outcome::Verified).await;
        t.stop().await;
    }
);

both!(
    truewallet_and_v1_are_recorded_with_their_channel,
    |b: Backend| async move {
        let (t, ten) = app(b).await;
        let w = t
            .wallet_transfer(5_000, Some("Sender"), Some("Shop"), Some("0812345678"))
            .await;
        t.post_ok(
            "/v2/verify/truewallet",
            &ten.api_key,
            json!({"payload": w.payload}),
        )
        .await;
        let tr = t.transfer("004", "014", 700).await;
        let (s, _) = t
            .call(
                "POST",
                "/api/v1/verify",
                &ten.api_key,
                Some(json!({"payload": tr.payload})),
            )
            .await;
        assert_eq!(s, 200);
        let rows = all(&t).await;
        let seen: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.attempt.channel.as_str(),
                    r.attempt.kind.as_str(),
                    r.attempt.outcome,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("v1", "bank", Outcome::Verified),
                ("v2", "truewallet", Outcome::Verified)
            ]
        );
        assert_eq!(rows[1].attempt.sending_bank.as_deref(), Some("TRUEMONEY"));
        t.stop().await;
    }
);

both!(
    search_by_reference_amount_outcome_and_thai_date,
    |b: Backend| async move {
        let (t, ten) = app(b).await;
        // 2026-11-27 23:30 in Bangkok is 16:30 UTC: the Thai date decides the day.
        let start = time::macros::datetime!(2026-11-27 16:30 UTC);
        t.clock.set(start);
        let first = t.transfer("004", "014", 125_050).await;
        t.verify_bank_ok(&ten.api_key, json!({"payload": first.payload}))
            .await;
        t.clock.advance(time::Duration::hours(1)); // 2026-11-28 00:30 in Bangkok
        let second = t.transfer("004", "014", 9_900).await;
        t.verify_bank_ok(&ten.api_key, json!({"payload": second.payload}))
            .await;
        let (s, _) = t
            .verify_bank(&ten.api_key, json!({"payload": "hello"}))
            .await;
        assert_eq!(s, 404);

        let part = &first.trans_ref[4..12];
        assert_eq!(
            refs(&search(&t, &format!("q={part}")).await),
            [first.trans_ref.as_str()]
        );
        assert_eq!(
            refs(&search(&t, &format!("q={}", first.trans_ref)).await),
            [first.trans_ref.as_str()]
        );
        assert_eq!(
            refs(&search(&t, "q=1250.50").await),
            [first.trans_ref.as_str()]
        );
        assert_eq!(refs(&search(&t, "q=99").await), [second.trans_ref.as_str()]);
        // Under three characters a `q` is an amount only; one that means nothing finds nothing.
        let none: [&str; 0] = [];
        assert_eq!(refs(&search(&t, &format!("q={}", &part[..2])).await), none);
        assert_eq!(refs(&search(&t, "q=a%25_b").await), none);
        let page = search(&t, "outcome=invalid_qr").await;
        assert_eq!(page["data"]["items"].as_array().unwrap().len(), 1);
        assert_eq!(page["data"]["items"][0]["outcome"], "invalid_qr");
        assert_eq!(
            refs(&search(&t, "from=2026-11-27&to=2026-11-27").await),
            [first.trans_ref.as_str()]
        );
        assert_eq!(
            refs(
                &search(
                    &t,
                    &format!("from=2026-11-28&branch={}&outcome=verified", ten.branch_id)
                )
                .await
            ),
            [second.trans_ref.as_str()]
        );
        // Pages: newest first, the cursor continues.
        let p1 = search(&t, "limit=2").await;
        assert_eq!(p1["data"]["items"].as_array().unwrap().len(), 2);
        let next = p1["data"]["next"].as_str().unwrap().to_string();
        let p2 = search(&t, &format!("limit=2&cursor={next}")).await;
        assert_eq!(refs(&p2), [first.trans_ref.as_str()]);
        assert_eq!(p2["data"]["next"], Value::Null);
        // Bad filters are named.
        let (s, body) = admin_get(&t, "verifications?limit=501&outcome=ok").await;
        assert_eq!(s, 400, "{body}");
        assert!(
            body.contains("limit: must be") && body.contains("outcome: must be"),
            "{body}"
        );
        // Found the same once SQLite's trigram index has caught up (about a second after the
        // records; a search reads the newer records directly until then).
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let (s, _) = t
            .verify_bank(&ten.api_key, json!({"payload": "hello again"}))
            .await;
        assert_eq!(s, 404);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert_eq!(
            refs(&search(&t, &format!("q={part}")).await),
            [first.trans_ref.as_str()]
        );
        // Found from another node (another process) on the same database.
        let other = t.another_node().await;
        let again = other.attempts(10).await;
        assert_eq!(again.len(), 4);
        other.stop().await;
        t.stop().await;
    }
);

both!(the_csv_export_keeps_its_bytes, |b: Backend| async move {
    let (t, ten) = app(b).await;
    // Records as the log holds them, with what a spreadsheet must not run as a formula.
    let at = time::macros::datetime!(2026-11-27 07:05 UTC);
    let record =
        |i: i64, trans_ref: &str, source: &str, request_id: &str| domain::attempt::Attempt {
            at: at + time::Duration::seconds(i),
            service_id: "svc-golden".into(),
            branch_id: "br-golden".into(),
            channel: domain::attempt::Channel::V2,
            kind: domain::attempt::SlipKind::Bank,
            input: Some(domain::attempt::InputKind::Image),
            sending_bank: Some("004".into()),
            trans_ref: Some(trans_ref.into()),
            amount: Some(domain::Satang(125_050 + i)),
            outcome: Outcome::Verified,
            error_code: None,
            mismatches: if i == 1 {
                vec!["amount_not_match".into()]
            } else {
                vec![]
            },
            source: Some(source.into()),
            latency_ms: 400 + i as u32,
            request_id: Some(request_id.into()),
            job_id: None,
        };
    t.app
        .services
        .attempts()
        .insert_attempts(&[
            record(0, "016331140712ATF07959", "kbank", "req-1"),
            record(1, "=HYPERLINK(\"x\")", "+sum", "-lead-dash"),
            record(2, "@cmd", "สาขา, \"หลัก\"", "req.3"),
        ])
        .await
        .unwrap();
    let (s, csv) = admin_get(&t, "verifications.csv?service=svc-golden&limit=2").await;
    assert_eq!(s, 200);
    assert!(csv.starts_with('\u{feff}'), "a byte-order mark first");
    api::golden::check(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/golden/verifications.csv"
        ),
        &csv,
        "the CSV export",
    );
    // The whole export: three rows, no cut line; a real verification is exported too.
    let (_, whole) = admin_get(&t, "verifications.csv?service=svc-golden").await;
    assert_eq!(whole.matches("\r\n").count(), 4, "{whole}");
    assert!(!whole.contains("# cut"));
    let tr = t.transfer("004", "014", 700).await;
    t.verify_bank_ok(&ten.api_key, json!({"payload": tr.payload}))
        .await;
    let (_, mine) = admin_get(&t, &format!("verifications.csv?branch={}", ten.branch_id)).await;
    assert!(mine.contains(&tr.trans_ref), "{mine}");
    t.stop().await;
});

both!(
    a_purge_blanks_names_but_a_repeat_is_still_a_duplicate,
    |b: Backend| async move {
        let (t, ten, tr) = app_and_slip(b, 700).await;
        let first = t
            .verify_bank_ok(&ten.api_key, json!({"payload": tr.payload}))
            .await;
        let name = first["data"]["rawSlip"]["sender"]["account"]["name"]["th"].clone();
        assert_ne!(name, "");
        t.clock.advance(time::Duration::days(181));
        let (purged, blanked) = t
            .app
            .services
            .attempts()
            .purge_retention(180, 180)
            .await
            .unwrap();
        assert_eq!((purged, blanked), (1, 1));
        assert!(all(&t).await.is_empty(), "the old attempt is gone");
        // The repeat is still a duplicate, answered from the stored transfer with blank names
        // (the bank no longer keeps a slip this old).
        let v = t
            .verify_bank_ok(
                &ten.api_key,
                json!({"payload": tr.payload, "checkDuplicate": true}),
            )
            .await;
        assert_eq!(v["data"]["isDuplicate"], true);
        assert_eq!(v["data"]["rawSlip"]["sender"]["account"]["name"]["th"], "");
        assert_eq!(v["data"]["rawSlip"]["transRef"], tr.trans_ref);
        // v1's duplicate_slip answers from the stored transfer: its names are blank now.
        let v = v1_duplicate(&t, &ten.api_key, &tr.payload).await;
        assert_eq!(v["data"]["sender"]["account"]["name"]["th"], "");
        assert_eq!(v["data"]["transRef"], tr.trans_ref);
        assert_eq!(v["data"]["amount"]["amount"], 7.0);
        // Idempotent: nothing left to do.
        assert_eq!(
            t.app
                .services
                .attempts()
                .purge_retention(180, 180)
                .await
                .unwrap()
                .1,
            0
        );
        t.stop().await;
    }
);

// A backlog larger than one move (1,000 records a transaction): every record reaches the log,
// each once, while the upkeep moves chunks beside the count's own move.
both!(
    a_backlog_is_moved_in_chunks_and_nothing_is_lost,
    |b: Backend| async move {
        let (t, ten) = app(b).await;
        let before = t.app.store.count_attempts().await.unwrap();
        let record = |n: usize| domain::attempt::Attempt {
            at: time::OffsetDateTime::now_utc(),
            service_id: ten.service_id.clone(),
            branch_id: ten.branch_id.clone(),
            channel: domain::attempt::Channel::V2,
            kind: domain::attempt::SlipKind::Bank,
            input: Some(domain::attempt::InputKind::Payload),
            sending_bank: Some("004".into()),
            trans_ref: Some(format!("BACKLOG{n:05}")),
            amount: None,
            outcome: Outcome::NotFound,
            error_code: Some("SLIP_NOT_FOUND".into()),
            mismatches: vec![],
            source: None,
            latency_ms: 1,
            request_id: None,
            job_id: None,
        };
        for chunk in (0..2_500).collect::<Vec<_>>().chunks(250) {
            let writes = chunk.iter().map(|&n| {
                let store = t.app.store.clone();
                let a = record(n);
                async move { store.log_attempt(&a).await }
            });
            for r in futures_util::future::join_all(writes).await {
                r.unwrap();
            }
        }
        let after = t.app.store.count_attempts().await.unwrap();
        assert_eq!(after - before, 2_500);
        t.stop().await;
    }
);
