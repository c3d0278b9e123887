//! The store contract: every operation of `Store`, run against SQLite and PostgreSQL alike.

use domain::ip::AllowList;
use domain::model::{
    Branch, Party, Plan, Service, ServiceState, Transfer, User, VerifiedTransfer, WalletTransfer,
};
use domain::quota::Quota;
use domain::Satang;
use store::{BranchPatch, ServicePatch, Space, SqlStore, StoreError, VerificationRecord};
use testkit::{both, Backend, TestDb};
use time::OffsetDateTime;

fn at(ms: i64) -> OffsetDateTime {
    domain::clock::from_millis(1_790_000_000_000 + ms)
}

fn service(id: &str, limit: Option<i64>) -> Service {
    Service {
        id: id.into(),
        name: format!("svc {id}"),
        quota: Quota {
            limit,
            used: 0,
            total_used: 0,
        },
        created_at: at(0),
        state: ServiceState::Active,
        expires_at: None,
        owner_id: None,
        owner_banned: false,
        owner_verified: true,
        billing_anchor: at(0),
        cycle_start: at(0),
        plan: Plan {
            name: "default".into(),
            rps: 10,
            burst: 100,
        },
        rate_limit_rps: None,
        subscription: Default::default(),
    }
}

fn branch(id: &str, service_id: &str, main: bool, limit: Option<i64>) -> Branch {
    Branch {
        id: id.into(),
        service_id: service_id.into(),
        name: format!("branch {id}"),
        is_main: main,
        active: true,
        allow_ips: AllowList::parse(&["*"]).unwrap(),
        webhook_url: None,
        webhook_secret: None,
        biller_id: None,
        sandbox: false,
        quota: Quota {
            limit,
            used: 0,
            total_used: 0,
        },
        created_at: at(1),
        cycle_start: at(0),
    }
}

fn record(service_id: &str, branch_id: &str, trans_ref: &str) -> VerificationRecord {
    VerificationRecord {
        service_id: service_id.into(),
        branch_id: branch_id.into(),
        sending_bank: "004".into(),
        trans_ref: trans_ref.into(),
        amount: Satang(100),
        transferred_at: at(5),
        verified_at: at(6),
        job_id: None,
        idempotency_key: None,
        transfer: None,
        source: None,
    }
}

/// Runs `$body` with `$p` a plain sqlx pool of the backend's own type on `$url` (for what the
/// store does not offer, such as writes it must refuse); the two pool types share no trait
/// object, so the body is written once and compiled for each.
macro_rules! with_raw_pool {
    ($backend:expr, $url:expr, $p:ident => $body:block) => {
        match $backend {
            Backend::Sqlite => {
                let $p = sqlx::SqlitePool::connect($url).await.unwrap();
                $body
            }
            Backend::Postgres => {
                let $p = sqlx::PgPool::connect($url).await.unwrap();
                $body
            }
        }
    };
}

async fn open(db: &TestDb) -> SqlStore {
    store::connect(&db.url).await.expect("connect")
}

/// Whether an API key hash finds its branch at instant `ms` (see `at`).
async fn key_finds(s: &SqlStore, hash: &str, ms: i64) -> bool {
    let found = s.find_by_api_key_hash(hash, at(ms)).await.unwrap();
    found.is_some()
}

/// Service `s1` (quota `service_limit`) with its main branch `b1` (key hash `h1`, no limit of
/// its own) and a second branch `b2` (key hash `h2`) limited to `b2_limit`.
async fn s1_with_two_branches(s: &SqlStore, service_limit: i64, b2_limit: i64) {
    s.create_service(&service("s1", Some(service_limit)))
        .await
        .unwrap();
    s.create_branch(&branch("b1", "s1", true, None), "h1")
        .await
        .unwrap();
    s.create_branch(&branch("b2", "s1", false, Some(b2_limit)), "h2")
        .await
        .unwrap();
}

/// `update_branch`, which must not fail: the branch after the patch, or None for no such branch.
async fn patch_branch(s: &SqlStore, id: &str, patch: &BranchPatch) -> Option<Branch> {
    s.update_branch(&id.into(), patch).await.unwrap()
}

/// `update_service`, which must not fail: the service after the patch, or None for no such
/// service.
async fn patch_service(s: &SqlStore, id: &str, patch: &ServicePatch) -> Option<Service> {
    s.update_service(&id.into(), patch).await.unwrap()
}

/// Charges and records `rec`; whether it was the slip's first verification.
async fn first_verification(s: &SqlStore, rec: VerificationRecord) -> bool {
    let charged = s.charge_and_record(&rec).await.unwrap();
    charged.first_verification
}

both!(services_and_branches, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    assert_eq!(
        s.backend(),
        if b == Backend::Sqlite {
            "sqlite"
        } else {
            "postgres"
        }
    );
    let svc = service("s1", Some(10));
    s.create_service(&svc).await.unwrap();
    assert_eq!(
        s.get_service(&"s1".into()).await.unwrap(),
        Some(svc.clone())
    );
    assert_eq!(s.get_service(&"nope".into()).await.unwrap(), None);
    assert_eq!(
        s.find_service_by_name("svc s1").await.unwrap(),
        Some(svc.clone())
    );
    assert!(matches!(
        s.create_service(&svc).await,
        Err(StoreError::Conflict(_))
    ));

    let main = branch("b1", "s1", true, None);
    s.create_branch(&main, "hash1").await.unwrap();
    let second_main = branch("b2", "s1", true, None);
    assert!(matches!(
        s.create_branch(&second_main, "hash2").await,
        Err(StoreError::Conflict(_))
    ));
    let sub = branch("b3", "s1", false, Some(5));
    s.create_branch(&sub, "hash3").await.unwrap();
    assert!(
        matches!(
            s.create_branch(&branch("b4", "s1", false, None), "hash3")
                .await,
            Err(StoreError::Conflict(_))
        ),
        "key hashes are unique"
    );
    assert_eq!(
        s.get_branch(&"b1".into()).await.unwrap(),
        Some(main.clone())
    );
    let list: Vec<String> = s
        .list_branches(&"s1".into())
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.id.into_string())
        .collect();
    assert_eq!(list, ["b1", "b3"]);

    let (fs, fb) = s
        .find_by_api_key_hash("hash3", at(0))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((fs, fb), (svc.clone(), sub.clone()));
    assert!(!key_finds(&s, "other", 0).await);
    assert!(s
        .set_api_key_hash(&"b3".into(), "hash3b", None)
        .await
        .unwrap());
    assert!(!key_finds(&s, "hash3", 0).await);
    assert!(key_finds(&s, "hash3b", 0).await);
    assert!(!s
        .set_api_key_hash(&"missing".into(), "x", None)
        .await
        .unwrap());
    // With a grace period the previous key works until it ends, then only the new one.
    assert!(s
        .set_api_key_hash(&"b3".into(), "hash3c", Some(at(1000)))
        .await
        .unwrap());
    assert!(key_finds(&s, "hash3b", 999).await);
    assert!(!key_finds(&s, "hash3b", 1000).await);
    assert!(key_finds(&s, "hash3c", 5000).await);
    // A later rotation without grace drops the previous key at once.
    assert!(s
        .set_api_key_hash(&"b3".into(), "hash3d", None)
        .await
        .unwrap());
    assert!(!key_finds(&s, "hash3c", 0).await);

    let patch = BranchPatch {
        name: Some("Renamed".into()),
        active: Some(false),
        allow_ips: Some(AllowList::parse(&["10.0.0.0/8", "192.0.2.1"]).unwrap()),
        webhook_url: Some(Some("https://example.com/hook".into())),
        webhook_secret: Some(Some("s3cret".into())),
        limit_quota: Some(Some(9)),
        biller_id: Some(Some("099400016550100".into())),
        sandbox: Some(true),
    };
    let updated = patch_branch(&s, "b3", &patch).await.unwrap();
    assert!(updated.sandbox);
    assert_eq!(updated.biller_id.as_deref(), Some("099400016550100"));
    assert_eq!(updated.name, "Renamed");
    assert!(!updated.active);
    assert_eq!(updated.allow_ips.to_strings(), ["10.0.0.0/8", "192.0.2.1"]);
    assert_eq!(
        updated.webhook_url.as_deref(),
        Some("https://example.com/hook")
    );
    assert_eq!(updated.webhook_secret.as_deref(), Some("s3cret"));
    assert_eq!(updated.quota.limit, Some(9));
    // An empty patch changes nothing; an explicit None clears.
    let same = patch_branch(&s, "b3", &BranchPatch::default())
        .await
        .unwrap();
    assert_eq!(same, updated);
    let clear = BranchPatch {
        webhook_url: Some(None),
        webhook_secret: Some(None),
        ..Default::default()
    };
    let cleared = patch_branch(&s, "b3", &clear).await.unwrap();
    assert_eq!((cleared.webhook_url, cleared.webhook_secret), (None, None));
    assert!(patch_branch(&s, "missing", &patch).await.is_none());
    s.close().await;
});

/// A draft of the request's record for `trans_ref` (`charge_and_log`).
fn draft(trans_ref: &str, check_duplicate: bool) -> domain::attempt::AttemptDraft {
    draft_of(&format!("req-{trans_ref}"), trans_ref, check_duplicate)
}

/// `draft` for the request `request_id` (a slip's second request needs its own).
fn draft_of(
    request_id: &str,
    trans_ref: &str,
    check_duplicate: bool,
) -> domain::attempt::AttemptDraft {
    use domain::attempt::{Attempt, AttemptDraft, Channel, Outcome, SlipKind};
    AttemptDraft {
        attempt: Attempt {
            at: at(6),
            service_id: "s1".into(),
            branch_id: "b1".into(),
            channel: Channel::V2,
            kind: SlipKind::Bank,
            input: None,
            sending_bank: Some("004".into()),
            trans_ref: Some(trans_ref.into()),
            amount: Some(Satang(100)),
            outcome: Outcome::Verified,
            error_code: None,
            mismatches: vec![],
            source: Some("sandbox".into()),
            latency_ms: 3,
            request_id: Some(request_id.into()),
            job_id: None,
        },
        duplicate_when_repeat: check_duplicate,
    }
}

async fn logged(s: &SqlStore) -> Vec<(String, String)> {
    let q = domain::attempt::AttemptQuery {
        limit: 100,
        ..Default::default()
    };
    let mut rows: Vec<(String, String)> = s
        .search_attempts(&q)
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            let a = r.attempt;
            (
                a.request_id.unwrap_or_default(),
                a.outcome.as_str().to_string(),
            )
        })
        .collect();
    rows.sort();
    rows
}

both!(
    a_charge_commits_its_attempt_record_with_it,
    |b: Backend| async move {
        let db = TestDb::new(b).await;
        let s = open(&db).await;
        s1_with_two_branches(&s, 3, 3).await;
        let o = s
            .charge_and_log(&record("s1", "b1", "A1"), draft("A1", true))
            .await
            .unwrap();
        assert!(o.first_verification && o.attempt_logged);
        // A repeat: a duplicate when the caller asked for the check, else verified again.
        let again = draft_of("req-A1-dup", "A1", true);
        let o = s
            .charge_and_log(&record("s1", "b1", "A1"), again)
            .await
            .unwrap();
        assert!(!o.first_verification && o.attempt_logged);
        let unchecked = draft_of("req-A1-unchecked", "A1", false);
        s.charge_and_log(&record("s1", "b1", "A1"), unchecked)
            .await
            .unwrap();
        // Refused (the service's limit of 3 is used up): no record; the caller logs the refusal.
        assert!(matches!(
            s.charge_and_log(&record("s1", "b1", "A2"), draft("A2", true))
                .await,
            Err(StoreError::QuotaExceeded)
        ));
        // A plain charge logs nothing.
        let plain = s.charge_and_record(&record("s1", "b2", "A3")).await;
        assert!(matches!(plain, Err(StoreError::QuotaExceeded)));
        assert_eq!(
            logged(&s).await,
            vec![
                ("req-A1".to_string(), "verified".to_string()),
                ("req-A1-dup".to_string(), "duplicate".to_string()),
                ("req-A1-unchecked".to_string(), "verified".to_string()),
            ]
        );
        s.close().await;
    }
);

both!(
    concurrent_charges_each_commit_one_record,
    |b: Backend| async move {
        let db = TestDb::new(b).await;
        let s = std::sync::Arc::new(open(&db).await);
        s1_with_two_branches(&s, 40, 40).await;
        // Enough at once to share batches; ten slips, each charged three times.
        let mut tasks = Vec::new();
        for i in 0..30 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                let r = format!("C{}", i % 10);
                let d = draft_of(&format!("req-{i:02}"), &r, true);
                s.charge_and_log(&record("s1", "b1", &r), d).await.unwrap()
            }));
        }
        let mut firsts = 0;
        for t in tasks {
            let o = t.await.unwrap();
            assert!(o.attempt_logged);
            firsts += usize::from(o.first_verification);
        }
        assert_eq!(firsts, 10);
        let rows = logged(&s).await;
        assert_eq!(rows.len(), 30);
        assert_eq!(rows.iter().filter(|(_, o)| o == "verified").count(), 10);
        assert_eq!(rows.iter().filter(|(_, o)| o == "duplicate").count(), 20);
        s.close().await;
    }
);

both!(
    records_wait_in_the_inbox_and_are_moved_once,
    |b: Backend| async move {
        let db = TestDb::new(b).await;
        let a = std::sync::Arc::new(open(&db).await);
        s1_with_two_branches(&a, 100, 100).await;
        for i in 0..20 {
            let r = format!("I{i:02}");
            let d = draft_of(&format!("req-{i:02}"), &r, true);
            a.charge_and_log(&record("s1", "b1", &r), d).await.unwrap();
        }
        let count = |table: &'static str| {
            let url = db.url.clone();
            async move {
                with_raw_pool!(b, &url, p => {
                    sqlx::query_scalar::<_, i64>(&format!("SELECT COUNT(*) FROM {table}"))
                        .fetch_one(&p)
                        .await
                        .unwrap()
                })
            }
        };
        // Committed with their charges into the inbox; the writer moves them about once a
        // second, so some may have moved already: none is in both, none is missing.
        let (waiting, moved) = (count("attempts_inbox").await, count("attempts").await);
        assert_eq!(waiting + moved, 20);
        // Two nodes read the log at once: each read moves first; every record lands once.
        let bnode = std::sync::Arc::new(open(&db).await);
        let (x, y) = tokio::join!(logged(&a), logged(&bnode));
        assert_eq!((x.len(), y.len()), (20, 20));
        assert_eq!(count("attempts_inbox").await, 0);
        assert_eq!(a.count_attempts().await.unwrap(), 20);
        // Left in the inbox at a stop, found after the restart.
        a.charge_and_log(&record("s1", "b1", "I99"), draft("I99", true))
            .await
            .unwrap();
        a.close().await;
        bnode.close().await;
        let again = open(&db).await;
        assert_eq!(logged(&again).await.len(), 21);
        again.close().await;
    }
);

both!(charging_and_recording, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    s1_with_two_branches(&s, 4, 1).await;

    assert!(first_verification(&s, record("s1", "b1", "R1")).await);
    assert!(!first_verification(&s, record("s1", "b1", "R1")).await);
    assert!(!first_verification(&s, record("s1", "b2", "R1")).await);
    // The branch limit (1) refuses although the service has room: the service's charge in the
    // same transaction is rolled back and the slip is not recorded.
    assert!(matches!(
        s.charge_and_record(&record("s1", "b2", "R2")).await,
        Err(StoreError::QuotaExceeded)
    ));
    let svc = s.get_service(&"s1".into()).await.unwrap().unwrap();
    assert_eq!(
        (svc.quota.used, svc.quota.total_used),
        (3, 3),
        "rolled back on branch refusal"
    );
    assert!(
        first_verification(&s, record("s1", "b1", "R2")).await,
        "R2 was not recorded by the refused attempt"
    );
    // The service limit (4) is reached.
    assert!(matches!(
        s.charge_and_record(&record("s1", "b1", "R3")).await,
        Err(StoreError::QuotaExceeded)
    ));
    let b1 = s.get_branch(&"b1".into()).await.unwrap().unwrap();
    let b2 = s.get_branch(&"b2".into()).await.unwrap().unwrap();
    assert_eq!((b1.quota.used, b2.quota.used), (3, 1));
    // A branch of another service cannot be charged through this service.
    s.create_service(&service("s2", None)).await.unwrap();
    assert!(matches!(
        s.charge_and_record(&record("s2", "b1", "R9")).await,
        Err(StoreError::QuotaExceeded)
    ));
    // No limit (None) never refuses, and duplicates are per service.
    s.create_branch(&branch("b5", "s2", true, None), "h5")
        .await
        .unwrap();
    assert!(first_verification(&s, record("s2", "b5", "R1")).await);
    s.close().await;
});

// The transfer a verification confirmed comes back from `get_verification` as stored; rows
// recorded without one (as before migration 0011) come back with `None`.
both!(stored_transfer, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    s.create_service(&service("s1", None)).await.unwrap();
    s.create_branch(&branch("b1", "s1", true, None), "h1")
        .await
        .unwrap();
    let bank = VerifiedTransfer::Bank(Box::new(sample_transfer()));
    let wallet = VerifiedTransfer::Wallet(Box::new(WalletTransfer {
        transaction_id: "50001234567890".into(),
        event: "P2P".into(),
        payload: "TM".into(),
        occurred_at: at(7),
        amount: Satang(5000),
        sender_name: "ก".into(),
        sender_phone: "xxx-xxx-1234".into(),
        receiver_name: "ข".into(),
        receiver_phone: "xxx-xxx-5678".into(),
    }));
    for (r, t, src) in [("R1", &bank, "sandbox"), ("R2", &wallet, "sandbox-wallet")] {
        let rec = VerificationRecord {
            transfer: Some(t.clone()),
            source: Some(src.into()),
            ..record("s1", "b1", r)
        };
        s.charge_and_record(&rec).await.unwrap();
        assert_eq!(
            s.get_verification(Space::Production, &"s1".into(), "004", r)
                .await
                .unwrap(),
            Some(rec)
        );
    }
    s.charge_and_record(&record("s1", "b1", "OLD"))
        .await
        .unwrap();
    let old = s
        .get_verification(Space::Production, &"s1".into(), "004", "OLD")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((old.transfer, old.source), (None, None));
    s.close().await;
});

fn sample_transfer() -> Transfer {
    Transfer {
        trans_ref: "ABC123".into(),
        payload: "0030000600000101030040209ABC1235102TH9104XXXX".into(),
        occurred_at: at(42),
        country_code: "TH".into(),
        amount: Satang(15050),
        fee: Satang(0),
        ref1: "r1".into(),
        ref2: String::new(),
        ref3: String::new(),
        sender: Party {
            bank_code: "004".into(),
            name_th: "นาย ก".into(),
            name_en: Some("MR. K".into()),
            account_type: "BANKAC".into(),
            account: "xxx-x-x1234-x".into(),
        },
        receiver: Party {
            bank_code: "014".into(),
            name_th: "บริษัท ข".into(),
            name_en: None,
            account_type: "BANKAC".into(),
            account: "xxx-x-x5678-x".into(),
        },
        receiver_merchant_id: Some("M1".into()),
        bank_data: None,
    }
}

both!(sandbox_ledger, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    let t = sample_transfer();
    s.insert_sandbox_transfer(&t).await.unwrap();
    assert_eq!(
        s.get_sandbox_transfer("004", "ABC123").await.unwrap(),
        Some(t.clone())
    );
    assert_eq!(s.get_sandbox_transfer("014", "ABC123").await.unwrap(), None);
    assert_eq!(
        s.get_sandbox_transfer("004", "abc123").await.unwrap(),
        None,
        "references are case-sensitive"
    );
    assert!(matches!(
        s.insert_sandbox_transfer(&t).await,
        Err(StoreError::Conflict(_))
    ));
    s.close().await;
});

both!(migrations_are_idempotent, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    s.create_service(&service("s1", None)).await.unwrap();
    s.close().await;
    // A second start (or a second node) applies nothing again and keeps the data.
    let (a, c) = tokio::join!(store::connect(&db.url), store::connect(&db.url));
    let (a, c) = (a.unwrap(), c.unwrap());
    assert!(a.get_service(&"s1".into()).await.unwrap().is_some());
    a.close().await;
    c.close().await;
});

#[tokio::test]
async fn rejects_unknown_urls() {
    assert!(matches!(
        store::connect("mysql://x").await,
        Err(StoreError::BadUrl)
    ));
}

both!(concurrent_charges_are_exact, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = std::sync::Arc::new(open(&db).await);
    s1_with_two_branches(&s, 60, 7).await;
    // 100 charges at once over two branches and 10 slips: they land in shared batches, where
    // branch refusals must undo their service unit without touching their neighbours.
    let mut tasks = Vec::new();
    for i in 0..100 {
        let s = s.clone();
        let branch = if i % 2 == 0 { "b1" } else { "b2" };
        tasks.push(tokio::spawn(async move {
            s.charge_and_record(&record("s1", branch, &format!("R{}", i % 10)))
                .await
        }));
    }
    let (mut ok, mut firsts, mut refused) = (0, 0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(o) => {
                ok += 1;
                firsts += o.first_verification as i32;
            }
            Err(StoreError::QuotaExceeded) => refused += 1,
            Err(e) => panic!("unexpected {e}"),
        }
    }
    // b1 (no own limit) takes its 50, b2 stops at its limit of 7; the service (60) has room.
    assert_eq!((ok, refused), (57, 43));
    let svc = s.get_service(&"s1".into()).await.unwrap().unwrap();
    let b1 = s.get_branch(&"b1".into()).await.unwrap().unwrap();
    let b2 = s.get_branch(&"b2".into()).await.unwrap().unwrap();
    assert_eq!((svc.quota.used, svc.quota.total_used), (57, 57));
    assert_eq!((b1.quota.used, b2.quota.used), (50, 7));
    // b1 verifies the 5 even slips, b2 some of the 5 odd ones: each slip is first exactly once.
    assert!(
        (6..=10).contains(&firsts),
        "each slip is first at most once: {firsts}"
    );
    s.close().await;
});

both!(service_states_users_and_patches, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    s.create_service(&service("s1", Some(10))).await.unwrap();
    let u = User {
        id: "u1".into(),
        name: "Owner".into(),
        banned: false,
        created_at: at(0),
    };
    s.create_user(&u).await.unwrap();
    assert_eq!(s.get_user(&"u1".into()).await.unwrap(), Some(u.clone()));
    assert!(s.get_user(&"nope".into()).await.unwrap().is_none());

    let patch = ServicePatch {
        name: Some("Renamed".into()),
        limit_quota: Some(None),
        state: Some(ServiceState::Banned),
        expires_at: Some(Some(at(5000))),
        owner_id: Some(Some("u1".into())),
        plan: None,
        rate_limit_rps: Some(Some(7)),
        owner_verified: Some(false),
    };
    let svc = patch_service(&s, "s1", &patch).await.unwrap();
    assert!(!svc.owner_verified);
    assert_eq!(svc.name, "Renamed");
    assert_eq!(svc.quota.limit, None);
    assert_eq!(svc.state, ServiceState::Banned);
    assert_eq!(svc.expires_at, Some(at(5000)));
    assert_eq!(svc.owner_id.as_ref().map(|u| u.as_str()), Some("u1"));
    assert!(!svc.owner_banned);
    assert_eq!(svc.rate_limit_rps, Some(7));
    assert!(s.set_user_banned(&"u1".into(), true).await.unwrap());
    assert!(!s.set_user_banned(&"nope".into(), true).await.unwrap());
    assert!(
        s.get_service(&"s1".into())
            .await
            .unwrap()
            .unwrap()
            .owner_banned
    );
    // The owner's ban shows through the authentication look-up as well.
    s.create_branch(&branch("b1", "s1", true, None), "h1")
        .await
        .unwrap();
    assert!(
        s.find_by_api_key_hash("h1", at(0))
            .await
            .unwrap()
            .unwrap()
            .0
            .owner_banned
    );
    let back = ServicePatch {
        limit_quota: Some(Some(3)),
        state: Some(ServiceState::Active),
        expires_at: Some(None),
        owner_id: Some(None),
        ..Default::default()
    };
    let svc = patch_service(&s, "s1", &back).await.unwrap();
    assert_eq!(
        (svc.quota.limit, svc.state, svc.expires_at, svc.owner_banned),
        (Some(3), ServiceState::Active, None, false)
    );
    assert!(patch_service(&s, "nope", &back).await.is_none());
    s.close().await;
});

both!(
    usage_resets_with_the_billing_cycle,
    |b: Backend| async move {
        let db = TestDb::new(b).await;
        let s = open(&db).await;
        s.create_service(&service("s1", Some(2))).await.unwrap();
        s.create_branch(&branch("b1", "s1", true, Some(2)), "h1")
            .await
            .unwrap();
        let rec = |r: &str, when: OffsetDateTime| VerificationRecord {
            verified_at: when,
            job_id: None,
            idempotency_key: None,
            ..record("s1", "b1", r)
        };
        s.charge_and_record(&rec("R1", at(10))).await.unwrap();
        s.charge_and_record(&rec("R2", at(20))).await.unwrap();
        assert!(matches!(
            s.charge_and_record(&rec("R3", at(30))).await,
            Err(StoreError::QuotaExceeded)
        ));
        // One billing cycle later (the anchor is at(0)): both counters start again from 0.
        let later = at(0) + time::Duration::days(31);
        assert!(
            s.charge_and_record(&rec("R3", later))
                .await
                .unwrap()
                .first_verification
        );
        let svc = s.get_service(&"s1".into()).await.unwrap().unwrap();
        let br = s.get_branch(&"b1".into()).await.unwrap().unwrap();
        assert_eq!((svc.quota.used, svc.quota.total_used), (1, 3));
        assert_eq!((br.quota.used, br.quota.total_used), (1, 3));
        assert_eq!(svc.cycle_start, domain::cycle::cycle_start(at(0), later));
        assert_eq!(br.cycle_start, svc.cycle_start);
        s.close().await;
    }
);

both!(plans_and_shared_rate_limits, |b: Backend| async move {
    use domain::rate::{Decision, Gcra};
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    let plans = s.list_plans().await.unwrap();
    assert_eq!(
        plans,
        vec![Plan {
            name: "default".into(),
            rps: 10,
            burst: 100
        }]
    );
    s.upsert_plan(&Plan {
        name: "pro".into(),
        rps: 50,
        burst: 10,
    })
    .await
    .unwrap();
    s.upsert_plan(&Plan {
        name: "pro".into(),
        rps: 60,
        burst: 12,
    })
    .await
    .unwrap();
    assert_eq!(
        s.list_plans().await.unwrap()[1],
        Plan {
            name: "pro".into(),
            rps: 60,
            burst: 12
        }
    );
    s.create_service(&service("s1", None)).await.unwrap();
    let pro = ServicePatch {
        plan: Some("pro".into()),
        ..Default::default()
    };
    let svc = patch_service(&s, "s1", &pro).await.unwrap();
    assert_eq!(svc.plan.rps, 60);

    // The database runs the same GCRA as domain::rate: a burst of 3, then one per 100 ms.
    let g = Gcra::new(10, 3);
    let mut allowed = 0;
    for _ in 0..5 {
        if let Decision::Allowed { .. } = s.rate_take(&"b1".into(), &g, 1_000_000).await.unwrap() {
            allowed += 1;
        }
    }
    assert_eq!(allowed, 3);
    match s.rate_take(&"b1".into(), &g, 1_000_000).await.unwrap() {
        Decision::Limited { retry_after_us } => assert_eq!(retry_after_us, 100_000),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        s.rate_take(&"b1".into(), &g, 1_100_000).await.unwrap(),
        Decision::Allowed { .. }
    ));
    assert!(matches!(
        s.rate_take(&"b2".into(), &g, 1_000_000).await.unwrap(),
        Decision::Allowed { remaining: 2, .. }
    ));
    s.close().await;
});

both!(
    shared_rate_limit_under_concurrency,
    |b: Backend| async move {
        use domain::rate::{Decision, Gcra};
        let db = TestDb::new(b).await;
        // Two stores on one database: two nodes drawing from one allowance.
        let (n1, n2) = (
            std::sync::Arc::new(open(&db).await),
            std::sync::Arc::new(open(&db).await),
        );
        let g = Gcra::new(10, 5);
        let mut tasks = Vec::new();
        for i in 0..60 {
            let node = if i % 2 == 0 { n1.clone() } else { n2.clone() };
            tasks.push(tokio::spawn(async move {
                node.rate_take(&"b1".into(), &g, 5_000_000).await.unwrap()
            }));
        }
        let mut allowed = 0;
        for t in tasks {
            if let Decision::Allowed { .. } = t.await.unwrap() {
                allowed += 1;
            }
        }
        assert_eq!(allowed, 5, "one burst in total, whichever node answered");
        n1.close().await;
        n2.close().await;
    }
);

both!(
    credit_ledger_is_exact_and_append_only,
    |b: Backend| async move {
        use domain::billing::{AutoRenew, CreditKind, Package, Payment};
        use store::{PeriodOutcome, PeriodStart};
        let db = TestDb::new(b).await;
        let s = std::sync::Arc::new(open(&db).await);
        s.create_service(&service("s1", Some(10))).await.unwrap();
        let topped = s
            .move_credit(
                &"s1".into(),
                CreditKind::TopUp,
                10_000,
                Some("cash"),
                at(1),
                "cli",
            )
            .await
            .unwrap();
        assert!(matches!(topped, store::CreditMove::Moved(_)));
        // 50 draws of 10 baht at once from 100 baht: exactly 10 succeed, never below zero.
        let mut tasks = Vec::new();
        for _ in 0..50 {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                let moved = s
                    .move_credit(
                        &"s1".into(),
                        CreditKind::Adjustment,
                        -1_000,
                        None,
                        at(2),
                        "cli",
                    )
                    .await
                    .unwrap();
                matches!(moved, store::CreditMove::Moved(_))
            }));
        }
        let mut ok = 0;
        for t in tasks {
            ok += t.await.unwrap() as i32;
        }
        assert_eq!(ok, 10);
        let svc = s.get_service(&"s1".into()).await.unwrap().unwrap();
        assert_eq!(svc.subscription.credit, 0);
        let h = s.credit_history(&"s1".into()).await.unwrap();
        assert_eq!(h.len(), 11);
        assert!(h.iter().all(|e| e.balance_after >= 0));
        assert_eq!(h.last().unwrap().balance_after, 0);
        assert_eq!(h[0].note.as_deref(), Some("cash"));
        assert_eq!(
            s.move_credit(&"nope".into(), CreditKind::TopUp, 1, None, at(3), "cli")
                .await
                .unwrap(),
            store::CreditMove::NoService
        );

        // A renewal with the price unpaid does nothing; paid, it starts exactly one period.
        let p = s
            .upsert_package(&Package {
                id: "p1".into(),
                name: "Std".into(),
                quota: 5,
                duration_days: 30,
                price: Satang(5_000),
                created_at: at(0),
            })
            .await
            .unwrap();
        let sub = PeriodStart::Subscribe {
            package_id: p.id.clone(),
            auto_renew: Some(AutoRenew::ON),
        };
        let out = s
            .start_period(&"s1".into(), &sub, Some(&Payment::Ledger), at(4), "cli")
            .await
            .unwrap();
        assert_eq!(out, PeriodOutcome::InsufficientCredit);
        let out = s
            .start_period(&"s1".into(), &sub, None, at(4), "cli")
            .await
            .unwrap();
        assert!(matches!(out, PeriodOutcome::Started { reason: None }));
        let svc = s.get_service(&"s1".into()).await.unwrap().unwrap();
        assert_eq!(svc.quota.limit, Some(5));
        assert_eq!(svc.subscription.renewal_seq, 1);
        // Not due (quota has room, not expired): a renewal is refused.
        let renew = PeriodStart::Renew { expected_seq: 1 };
        let out = s
            .start_period(
                &"s1".into(),
                &renew,
                Some(&Payment::Ledger),
                at(5),
                "auto-renew",
            )
            .await
            .unwrap();
        assert_eq!(out, PeriodOutcome::NotDue);

        // The ledger refuses changes to its rows, on both backends.
        let (upd, del) = with_raw_pool!(b, &db.url, p => {
            let u = sqlx::query("UPDATE credit_ledger SET amount_satang = 1")
                .execute(&p)
                .await;
            let d = sqlx::query("DELETE FROM credit_ledger").execute(&p).await;
            p.close().await;
            (u.is_err(), d.is_err())
        });
        assert!(upd && del, "UPDATE and DELETE must be refused");
        assert_eq!(s.credit_history(&"s1".into()).await.unwrap().len(), 11);
        s.close().await;
    }
);

/// The SQLite file and its WAL hold partner and webhook secrets: owner-only, whatever the umask
/// (tests run with the usual 022, under which a plain create gives 0644).
#[cfg(unix)]
#[tokio::test]
async fn sqlite_files_are_created_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::new(Backend::Sqlite).await;
    let store = SqlStore::open(&db.url, None).await.unwrap();
    store.migrate().await.unwrap();
    store
        .create_service(&service("perm", Some(1)))
        .await
        .unwrap();
    let file = db.url.trim_start_matches("sqlite://").to_string();
    for suffix in ["", "-wal", "-shm"] {
        let path = format!("{file}{suffix}");
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{path}: {e}"))
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{path} is {:o}", mode & 0o777);
    }
}

// Migration 0015: a verify job written in 0006's columns reads back as a `verify` job whose
// data is its slip, in the `run` stage, and the worker's claim takes it.
both!(
    verify_jobs_of_the_old_columns_migrate_to_kind_and_data,
    |b: Backend| async move {
        let db = TestDb::new(b).await;
        let s = SqlStore::open(&db.url, None).await.unwrap();
        s.migrate_up_to(13).await.unwrap();
        s1_with_two_branches(&s, 10, 5).await;
        with_raw_pool!(b, &db.url, p => {
            sqlx::query(
                "INSERT INTO jobs (id, batch_id, seq, service_id, branch_id, payload, \
                 check_duplicate, match_account, match_amount, remark, callback_url, status, \
                 stage, due_at, created_at, expires_at, webhook_state, updated_at) VALUES \
                 ('j-old', NULL, 0, 's1', 'b1', 'QR TEXT', true, false, 15050, 'r1', \
                  'https://example.com/h', 'retrying', 'verify', $1, $1, $2, 'none', $1), \
                 ('j-done', NULL, 1, 's1', 'b1', 'QR 2', false, true, NULL, NULL, \
                  'https://example.com/h', 'done', 'idle', $1, $1, $2, 'delivered', $1)",
            )
            .bind(domain::clock::to_millis(at(0)))
            .bind(domain::clock::to_millis(at(86_400_000)))
            .execute(&p)
            .await
            .unwrap();
            p.close().await;
        });
        s.migrate().await.unwrap();
        let j = s.get_job(&"j-old".into()).await.unwrap().unwrap();
        assert_eq!(j.kind, domain::job::VERIFY);
        assert_eq!(j.stage, domain::job::Stage::Run);
        let slip = j.slip().expect("the slip in data");
        assert_eq!(
            slip,
            domain::job::NewJob {
                payload: "QR TEXT".into(),
                check_duplicate: true,
                match_account: false,
                match_amount: Some(Satang(15050)),
                remark: Some("r1".into()),
            }
        );
        let done = s.get_job(&"j-done".into()).await.unwrap().unwrap();
        assert_eq!(done.stage, domain::job::Stage::Idle);
        let slip = done.slip().unwrap();
        assert!(slip.match_account && !slip.check_duplicate);
        assert_eq!((slip.match_amount, slip.remark), (None, None));
        let claimed = s.claim_jobs(at(1), at(60_000), "tok", 10).await.unwrap();
        assert_eq!(claimed.len(), 1, "only the job with work left");
        assert_eq!(claimed[0].id.as_str(), "j-old");
        assert_eq!(claimed[0].status, domain::job::JobStatus::Processing);
        s.close().await;
    }
);

// A job of another kind is stored with its own data and written back with it.
both!(jobs_of_any_kind_keep_their_data, |b: Backend| async move {
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    s1_with_two_branches(&s, 10, 5).await;
    let job = domain::job::Job::of_kind(
        "k1".into(),
        "line-reply",
        serde_json::json!({"step": 1, "text": "สวัสดี"}),
        "s1".into(),
        "b1".into(),
        None,
        at(0),
        std::time::Duration::from_secs(3600),
    );
    s.insert_jobs(std::slice::from_ref(&job)).await.unwrap();
    let mut claimed = s.claim_jobs(at(0), at(60_000), "t", 10).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let mut j = claimed.remove(0);
    assert_eq!(j.kind, "line-reply");
    assert_eq!(j.data, job.data);
    j.data["step"] = 2.into();
    assert!(s.save_job(&j, "t").await.unwrap());
    let back = s.get_job(&"k1".into()).await.unwrap().unwrap();
    assert_eq!(back.data["step"], 2);
    assert_eq!(back.data["text"], "สวัสดี");
    s.close().await;
});

// Periodic jobs' lease rows: one holder per period, done once, taken over after the lease.
both!(
    a_periodic_period_runs_once_and_a_dead_holder_is_taken_over,
    |b: Backend| async move {
        use store::PeriodicClaim::{Busy, Claimed, Done};
        let db = TestDb::new(b).await;
        let s = open(&db).await;
        let p1 = 1_000_000;
        // Node `node` asks at `now` for `period`, its lease to last until `until` (ms).
        let claim = |period: i64, node: &'static str, now: i64, until: i64| {
            s.claim_periodic("sweep", period, node, at(now), at(until))
        };
        // Node `node` ends its run at `now`: `done`, or failed and due again at `not_before`.
        let finish =
            |node: &'static str, done: bool, now: i64, not_before: i64, outcome: &'static str| {
                s.finish_periodic("sweep", node, done, at(now), at(not_before), outcome)
            };
        // Node A takes period 1; node B finds it busy until A's lease ends.
        assert_eq!(claim(p1, "A", 0, 300).await.unwrap(), Claimed);
        assert_eq!(
            claim(p1, "B", 10, 310).await.unwrap(),
            Busy { until: at(300) }
        );
        assert!(s.renew_periodic("sweep", "A", at(400)).await.unwrap());
        assert!(
            !s.renew_periodic("sweep", "B", at(400)).await.unwrap(),
            "B holds nothing"
        );
        assert!(finish("A", true, 50, 50, "deleted 3").await.unwrap());
        // Done for this period, on any node, however often asked.
        assert_eq!(claim(p1, "B", 60, 360).await.unwrap(), Done);
        assert_eq!(claim(p1, "A", 60, 360).await.unwrap(), Done);
        // The next period: B takes it, then dies (never finishes).
        let p2 = p1 + 60_000;
        assert_eq!(claim(p2, "B", 70, 370).await.unwrap(), Claimed);
        assert!(matches!(
            claim(p2, "A", 369, 669).await.unwrap(),
            Busy { .. }
        ));
        // B's lease ran out: A takes the run over; B's late finish is refused.
        assert_eq!(claim(p2, "A", 370, 670).await.unwrap(), Claimed);
        assert!(!finish("B", true, 380, 380, "late").await.unwrap());
        // A fails: the period stays due, not before the pause.
        assert!(finish("A", false, 400, 900, "failed").await.unwrap());
        assert_eq!(
            claim(p2, "A", 500, 800).await.unwrap(),
            Busy { until: at(900) }
        );
        assert_eq!(claim(p2, "B", 900, 1200).await.unwrap(), Claimed);
        assert!(finish("B", true, 950, 950, "deleted 0").await.unwrap());
        let rows = s.periodic_jobs().await.unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].name, "sweep");
        assert_eq!(rows[0].done_period, p2);
        assert_eq!(rows[0].runs, 2, "one finished run per period");
        assert_eq!(rows[0].holder, None);
        assert_eq!(rows[0].last_outcome.as_deref(), Some("deleted 0"));
        s.close().await;
    }
);

// The Idempotency-Key sweep, off the request path: old keys go, young ones stay; a request
// with an old key forgets that key itself even before the sweep ran.
both!(idempotency_keys_are_swept_by_age, |b: Backend| async move {
    use store::{IdemBegin, IdemKey};
    let db = TestDb::new(b).await;
    let s = open(&db).await;
    s1_with_two_branches(&s, 10, 5).await;
    let b1: domain::BranchId = "b1".into();
    let key = |k: &'static str| IdemKey {
        branch_id: &b1,
        key: k,
        fingerprint: "f",
    };
    let day = 86_400_000;
    let run = |r: &IdemBegin| {
        matches!(
            r,
            IdemBegin::Run {
                takeover: false,
                ..
            }
        )
    };
    assert!(run(&s
        .idempotency_begin(&key("old"), at(0), at(1000), at(-day))
        .await
        .unwrap()));
    s.idempotency_finish(&b1, "old", Some((200, "{}")))
        .await
        .unwrap();
    assert!(run(&s
        .idempotency_begin(&key("young"), at(day), at(day + 1000), at(0))
        .await
        .unwrap()));
    // A day later "old" is past its 24 h: its own next use starts afresh.
    let again = s
        .idempotency_begin(&key("old"), at(day + 1), at(day + 1001), at(1))
        .await
        .unwrap();
    assert!(
        run(&again),
        "an old key is forgotten by its next use: {again:?}"
    );
    assert_eq!(
        s.sweep_idempotency_keys(at(2)).await.unwrap(),
        0,
        "both young now"
    );
    assert_eq!(s.sweep_idempotency_keys(at(day + 2)).await.unwrap(), 2);
    s.close().await;
});
