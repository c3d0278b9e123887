//! The `slipverify` binary as a user runs it: `qr`, `admin`, `sandbox transfer` and
//! `serve --demo` followed by the printed curl line.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use testkit::{Backend, TestDb};

use crate::http::json_of;

const BIN: &str = env!("CARGO_BIN_EXE_slipverify");

fn run(db: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--database-url")
        .arg(db)
        .args(args)
        .output()
        .expect("run slipverify")
}

/// `run` with the arguments of one line, split at white space.
fn run_line(db: &str, line: &str) -> Output {
    run(db, &line.split_whitespace().collect::<Vec<_>>())
}

/// `json_ok` with the arguments of one line, split at white space.
fn json_ok_line(db: &str, line: &str) -> Value {
    json_ok(db, &line.split_whitespace().collect::<Vec<_>>())
}

fn json_ok(db: &str, args: &[&str]) -> Value {
    let out = run(db, args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

#[test]
fn qr_explains_payloads() {
    let good = "0043000600000101030060222EQH524YNG5BY1A2ROGUBBB5102TH91041EE9";
    let out = Command::new(BIN).args(["qr", good]).output().unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["type"], "bankSlip");
    assert_eq!(v["sendingBank"], "006");
    assert_eq!(v["transRef"], "EQH524YNG5BY1A2ROGUBBB");

    let bad = good.replace("EQH", "EQX");
    let out = Command::new(BIN).args(["qr", &bad]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"], "crc_mismatch", "{v}");

    let pp = "00020101021129370016A000000677010111011300668123456785802TH53037645406150.506304";
    let pp = format!("{pp}{:04X}", slip_qr::crc16_ccitt_false(pp.as_bytes()));
    let out = Command::new(BIN).args(["qr", &pp]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a payment QR is not a slip");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["type"], "paymentQr", "{v}");
}

fn admin_flow(url: &str) {
    let svc = json_ok_line(url, "admin service create --name Shop --quota 50");
    let sid = svc["id"].as_str().unwrap();
    assert_eq!(sid.len(), 36);
    let br = json_ok_line(url, &format!("admin branch create --service {sid} --name Main --main --allow-ip 10.0.0.0/8 --allow-ip 127.0.0.1"));
    let bid = br["id"].as_str().unwrap();
    assert_eq!(br["apiKey"].as_str().unwrap().len(), 36);
    assert_eq!(br["allowIps"], json!(["10.0.0.0/8", "127.0.0.1"]));
    assert_eq!(br["sandbox"], false, "production unless asked");
    let test = json_ok_line(
        url,
        &format!("admin branch create --service {sid} --name QA --sandbox true"),
    );
    assert_eq!(test["sandbox"], true);
    let tid = test["id"].as_str().unwrap();
    let flipped = json_ok_line(
        url,
        &format!("admin branch update --branch {tid} --sandbox false"),
    );
    assert_eq!(flipped["sandbox"], false);
    let flipped = json_ok_line(
        url,
        &format!("admin branch update --branch {tid} --sandbox true"),
    );
    assert_eq!(flipped["sandbox"], true);
    let bad = run_line(
        url,
        &format!("admin branch update --branch {tid} --sandbox maybe"),
    );
    assert_eq!(bad.status.code(), Some(2), "not a boolean");
    let second = run_line(
        url,
        &format!("admin branch create --service {sid} --name Other --main"),
    );
    assert_eq!(
        second.status.code(),
        Some(2),
        "second main branch is refused"
    );
    assert!(String::from_utf8_lossy(&second.stderr).contains("main branch"));
    let upd = json_ok_line(url, &format!("admin branch update --branch {bid} --active false --webhook-url https://example.com/h --webhook-secret abc"));
    assert_eq!(upd["active"], false);
    assert_eq!(upd["webhookUrl"], "https://example.com/h");
    assert_eq!(upd["hasWebhookSecret"], true);
    assert!(
        upd.get("webhookSecret").is_none(),
        "secrets are never printed back"
    );
    let user = json_ok_line(url, "admin user create --name Owner");
    let uid = user["id"].as_str().unwrap();
    let s2 = json_ok_line(url, &format!("admin service update --service {sid} --owner {uid} --state banned --expires 2026-12-31 --quota none"));
    assert_eq!(s2["state"], "banned");
    assert_eq!(s2["ownerId"], uid);
    assert_eq!(s2["limitQuota"], Value::Null);
    assert_eq!(
        s2["expiresAt"], "2027-01-01T00:00:00.000+07:00",
        "through the end of that day"
    );
    let s3 = json_ok(
        url,
        &[
            "admin",
            "service",
            "update",
            "--service",
            sid,
            "--state",
            "active",
            "--expires",
            "never",
            "--quota",
            "70",
            "--owner",
            "",
        ],
    );
    assert_eq!(
        (
            s3["state"].as_str(),
            s3["expiresAt"].is_null(),
            s3["limitQuota"].as_i64(),
            s3["ownerId"].is_null()
        ),
        (Some("active"), true, Some(70), true)
    );
    let banned = json_ok_line(
        url,
        &format!("admin user update --user {uid} --banned true"),
    );
    assert_eq!(banned["banned"], true);
    assert_eq!(
        run_line(
            url,
            &format!("admin service update --service {sid} --state gone")
        )
        .status
        .code(),
        Some(2)
    );
    assert_eq!(
        run_line(
            url,
            &format!("admin service update --service {sid} --quota -3")
        )
        .status
        .code(),
        Some(2)
    );
    let bq = json_ok_line(
        url,
        &format!("admin branch update --branch {bid} --quota 5"),
    );
    assert_eq!(bq["limitQuota"], 5);
    let rot = json_ok_line(url, &format!("admin key rotate --branch {bid}"));
    assert_ne!(rot["apiKey"], br["apiKey"]);
    let bad = run_line(url, "admin key rotate --branch nope");
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn admin_and_sandbox_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("sv-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("cli.db").display());
    admin_flow(&url);
    let png = dir.join("slip.png");
    let t = json_ok(
        &url,
        &[
            "sandbox",
            "transfer",
            "--from",
            "004",
            "--to",
            "014",
            "--amount",
            "150.00",
            "--image",
            png.to_str().unwrap(),
        ],
    );
    let payload = t["payload"].as_str().unwrap();
    assert_eq!(
        t["transRef"].as_str().unwrap(),
        slip_qr::parse_bank_slip(payload).unwrap().trans_ref
    );
    assert_eq!(t["amount"], 150.0);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let bad = run(
        &url,
        &[
            "sandbox", "transfer", "--from", "999", "--to", "014", "--amount", "1",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    let bad = run(
        &url,
        &[
            "sandbox", "transfer", "--from", "004", "--to", "014", "--amount", "1.234",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `admin job redeliver`: a running server's worker sends the job's callback again (same
/// bytes, the branch's current secret); an unknown job is refused with its code.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_job_redeliver() {
    let (rx, t) = testkit::TestApp::with_receiver(Backend::Sqlite).await;
    let ten = t.tenant(10).await;
    let tr = t.transfer("004", "014", 100).await;
    let body = json!({"payload": tr.payload, "callbackUrl": rx.url("h")});
    let (s, v) = t.post("/v2/verify/bank/async", &ten.api_key, body).await;
    assert_eq!(s, 202, "{v}");
    let id = v["data"]["jobId"].as_str().unwrap().to_string();
    t.poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
        .await;
    t.set_webhook_secret(&ten.branch_id, "rotated").await;
    let url = t.db_url();
    let (u, job) = (url.clone(), id.clone());
    let v = tokio::task::spawn_blocking(move || {
        json_ok(&u, &["admin", "job", "redeliver", "--job", &job])
    })
    .await
    .unwrap();
    assert_eq!(v["jobId"], id.as_str());
    assert_eq!(v["status"], "queued");
    // The CLI queued the redelivery due at its own (real) time; the server's test clock
    // stands still at its start: bring it there.
    t.clock.advance(time::Duration::seconds(60));
    let got = rx.wait_for(2).await;
    assert_eq!(got[1].body, got[0].body);
    assert_eq!(
        got[1].header("x-service-signature"),
        Some(domain::job::sign_webhook("rotated", &got[1].body).as_str())
    );
    let out = tokio::task::spawn_blocking(move || {
        run(
            &url,
            &[
                "admin",
                "job",
                "redeliver",
                "--job",
                "9b2f3c1e-0000-4000-8000-000000000000",
            ],
        )
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("JOB_NOT_FOUND"), "{err}");
    t.stop().await;
}

#[tokio::test]
async fn admin_on_postgres() {
    let db = TestDb::new(Backend::Postgres).await;
    let url = db.url.clone();
    tokio::task::spawn_blocking(move || admin_flow(&url))
        .await
        .unwrap();
}

/// The README's first run: `serve --demo`, then the printed curl line.
#[tokio::test]
async fn demo_prints_a_working_curl_line() {
    let dir = std::env::temp_dir().join(format!("sv-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}", dir.join("demo.db").display());
    for round in 0..2 {
        // The second start reuses the demo service and issues a new key.
        let mut child = Command::new(BIN)
            .args([
                "--database-url",
                &url,
                "serve",
                "--demo",
                "--listen",
                "127.0.0.1:0",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            // Keep draining stdout so the server never writes into a closed pipe.
            for l in BufReader::new(stdout).lines().map_while(Result::ok) {
                if l.starts_with("curl ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(l);
                    }
                }
            }
        });
        let line = rx.await.expect("a curl line");
        // curl -s URL -H 'Authorization: Bearer KEY' -H '...' -d '{...}'
        let parts: Vec<&str> = line.split('\'').collect();
        let url_part = line.split_whitespace().nth(2).unwrap();
        let key = parts[1].trim_start_matches("Authorization: Bearer ");
        let body = parts[5];
        let client = reqwest::Client::new();
        let post = || {
            client
                .post(url_part)
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(body.to_string())
        };
        let first = json_of(post()).await;
        assert_eq!(first["success"], true, "{first}");
        assert_eq!(first["data"]["isDuplicate"], false, "round {round}");
        let again = json_of(post()).await;
        assert_eq!(again["data"]["isDuplicate"], true);
        // The demo branch is a test branch: nothing was charged, both were counted apart.
        let info_url = url_part.replace("/v2/verify/bank", "/v2/info");
        let info: Value = json_of(client.get(&info_url).bearer_auth(key)).await;
        let d = &info["data"];
        assert_eq!(d["branch"]["sandbox"], true, "{info}");
        assert_eq!(d["application"]["quota"]["used"], 0, "{info}");
        assert_eq!(
            d["branch"]["quota"]["sandboxUsed"],
            2 * (round + 1),
            "{info}"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts `slipverify serve` on a free port; returns the child and its base URL.
fn serve(db: &str) -> (std::process::Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(BIN)
        .args([
            "--database-url",
            db,
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .env("SLIPVERIFY_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (child, base)
}

/// 200 concurrent verifications with 50 units left, spread over the given number of server
/// processes: exactly 50 succeed and the quota rises by exactly 50.
async fn quota_race(db: &str, processes: usize) {
    let svc = json_ok_line(db, "admin service create --name Race --quota 60");
    let sid = svc["id"].as_str().unwrap().to_string();
    json_ok(
        db,
        &[
            "admin",
            "service",
            "update",
            "--service",
            &sid,
            "--rate-limit",
            "1000000",
        ],
    );
    let key = json_ok(
        db,
        &[
            "admin",
            "branch",
            "create",
            "--service",
            &sid,
            "--name",
            "Main",
            "--main",
        ],
    )["apiKey"]
        .as_str()
        .unwrap()
        .to_string();
    let payload = json_ok_line(db, "sandbox transfer --from 004 --to 014 --amount 10")["payload"]
        .as_str()
        .unwrap()
        .to_string();
    let nodes: Vec<_> = (0..processes).map(|_| serve(db)).collect();
    let bases: Vec<&str> = nodes.iter().map(|(_, b)| b.as_str()).collect();
    let body = json!({"payload": payload});
    // 10 units are used first, so 50 are left.
    let warm = testkit::post_concurrently(&bases, "/v2/verify/bank", &key, &body, 10).await;
    assert!(warm.iter().all(|(s, _)| *s == 200));
    let answers = testkit::post_concurrently(&bases, "/v2/verify/bank", &key, &body, 200).await;
    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let refused = answers
        .iter()
        .filter(|(s, v)| *s == 403 && v["error"]["code"] == "QUOTA_EXCEEDED")
        .count();
    assert_eq!((ok, refused), (50, 150));
    let client = reqwest::Client::new();
    let info: Value = json_of(
        client
            .get(format!("{}/v2/info", bases[0]))
            .bearer_auth(&key),
    )
    .await;
    assert_eq!(info["data"]["application"]["quota"]["used"], 60);
    for (mut child, _) in nodes {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quota_race_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("sv-race-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    quota_race(&format!("sqlite://{}", dir.join("race.db").display()), 1).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quota_race_on_postgres_with_two_processes() {
    let db = TestDb::new(Backend::Postgres).await;
    quota_race(&db.url, 2).await;
}

#[test]
fn read_prints_one_line_per_image() {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/slips");
    let clean = format!("{corpus}/slip-0000-clean.png");
    let dir = std::env::temp_dir().join(format!("sv-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("note.png");
    std::fs::write(&text, "not an image").unwrap();
    let out = Command::new(BIN)
        .args([
            "read",
            "--json",
            "--jobs",
            "2",
            &clean,
            text.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "one file is not a slip");
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["kind"], "bankSlip");
    assert_eq!(
        lines[0]["payload"],
        "0043000600000101030060222EQH524YNG5BY1A2ROGUBBB5102TH91041EE9"
    );
    assert_eq!(lines[1]["payload"], Value::Null);
    assert!(lines[1]["error"].as_str().is_some());
    let out = Command::new(BIN).args(["read", &clean]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("bankSlip 0043"));
    // `[limits]` applies to `read` as to `serve`: a side limit below the slip's refuses it.
    let small = dir.join("small.toml");
    std::fs::write(&small, "[limits]\nmax_image_side = 64\n").unwrap();
    let out = Command::new(BIN)
        .args([
            "--config",
            small.to_str().unwrap(),
            "read",
            "--json",
            &clean,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["error"], "image dimensions too large", "{line}");
    // The exhaustive scan reads the same slip, with the same fields.
    let out = Command::new(BIN)
        .args(["read", "--exhaustive", "--json", &clean])
        .output()
        .unwrap();
    assert!(out.status.success());
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        line["payload"].as_str().unwrap().starts_with("0043"),
        "{line}"
    );
    assert!(line["file"].is_string() && line["ms"].is_number(), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `config check` over the real binary: the effective configuration with secrets redacted,
/// flags over env over file, exit status 2 naming the key of an invalid file.
#[test]
fn config_check() {
    let dir = std::env::temp_dir().join(format!("slipverify-cli-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "[server]\nlisten = \"127.0.0.1:9000\"\nadmin_token = \"file-admin-token-0123456789abcdefghij\"\n\
         [jobs]\npoll_ms = 100\n[connectors.upstream]\nkind = \"easyslip\"\n\
         base_url = \"https://api.example.com\"\napi_key = \"easyslip-key-value\"\n\
         [routing]\ndefault = [\"upstream\"]\n",
    )
    .unwrap();
    let check = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new(BIN);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SLIPVERIFY_")) {
            cmd.env_remove(k);
        }
        cmd.args(args).envs(env.iter().copied()).output().unwrap()
    };
    let out = check(
        &["--config", good.to_str().unwrap(), "config", "check"],
        &[("SLIPVERIFY_JOB_POLL_MS", "200")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("listen = \"127.0.0.1:9000\""), "{text}");
    assert!(
        text.contains("poll_ms = 200"),
        "env wins over the file: {text}"
    );
    assert!(text.contains("[redacted]"));
    assert!(!text.contains("easyslip-key-value") && !text.contains("file-admin-token"));

    let out = check(
        &[
            "--database-url",
            "sqlite://flag.db",
            "config",
            "check",
            "--json",
        ],
        &[
            ("SLIPVERIFY_CONFIG", good.to_str().unwrap()),
            ("SLIPVERIFY_DATABASE_URL", "sqlite://env.db"),
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["database"]["url"], "sqlite://flag.db");
    assert_eq!(v["server"]["admin_token"], "[redacted]");
    assert_eq!(v["connectors"]["upstream"]["api_key"], "[redacted]");

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[jobs]\npoll_ms = 5\n").unwrap();
    let out = check(&["--config", bad.to_str().unwrap(), "config", "check"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("jobs.poll_ms: must be 10 to 60000"));
    std::fs::write(&bad, "[connectors.x]\nkind = \"foo\"\n").unwrap();
    let out = check(&["--config", bad.to_str().unwrap(), "config", "check"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("connectors.x.kind: unknown kind \"foo\"")
    );
    std::fs::write(&bad, "[jobs]\npoll_msec = 5\n").unwrap();
    let out = check(&["--config", bad.to_str().unwrap(), "config", "check"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("jobs.poll_msec: unknown key"));

    // Secrets never printed: a password in the URL's query, a syntax error on a secret's
    // line, a secret where a number belongs. Each message is checked whole (golden).
    let url = "postgres://app@db:5432/sv?sslmode=require&password=hunter2&sslpassword=k3y";
    std::fs::write(&bad, format!("[database]\nurl = \"{url}\"\n")).unwrap();
    let out = check(&["--config", bad.to_str().unwrap(), "config", "check"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "url = \"postgres://app@db:5432/sv?sslmode=require&password=[redacted]&sslpassword=[redacted]\""
        ),
        "{text}"
    );
    assert!(!text.contains("hunter2") && !text.contains("k3y"), "{text}");
    let path = bad.display().to_string();
    for (file, expected) in [
        (
            "[jobs]\npoll_ms = 100\n[server]\nadmin_token = \"hunter2-secret-token-0123456789abc\n",
            format!("{path}: line 4, key server.admin_token: invalid basic string"),
        ),
        (
            "[server]\nmax_uploads = \"hunter2\"\n",
            "server.max_uploads: expected usize, found a string".to_string(),
        ),
    ] {
        std::fs::write(&bad, file).unwrap();
        let out = check(&["--config", bad.to_str().unwrap(), "config", "check"], &[]);
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&expected), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    // No configuration at all: today's defaults.
    let out = check(&["config", "check"], &[]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("listen = \"127.0.0.1:8080\"") && text.contains("sqlite://slipverify.db")
    );
    std::fs::remove_dir_all(&dir).ok();
}
