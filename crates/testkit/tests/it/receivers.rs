//! The example webhook receivers in `examples/receivers/` (Node and Python), run for real:
//! each is started as a child process with a throw-away CA's certificate, receives a real
//! signed callback from the service over HTTPS, and is then checked directly: a wrong or
//! missing signature is refused with 401 and a repeated delivery is recorded once.

use crate::common::on_path;
use domain::job::sign_webhook;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use testkit::{Backend, TestApp};

const SECRET: &str = "whsec_example_receiver";

/// PEMs of a CA and of a leaf certificate for `localhost` / `127.0.0.1` it signed.
struct Certs {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn make_certs() -> Certs {
    let testkit::certs::Certs { ca, leaf, leaf_key } = testkit::certs::Certs::generate();
    Certs {
        ca_pem: ca.pem(),
        cert_pem: leaf.pem(),
        key_pem: leaf_key.serialize_pem(),
    }
}

/// A running receiver; killed, and its directory removed, when dropped (also on panic).
struct Running {
    child: Child,
    /// Kept open so the receiver never writes into a closed pipe.
    _stdout: Option<BufReader<ChildStdout>>,
    dir: PathBuf,
    port: u16,
    out_file: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The receiver's log is kept quiet unless the test failed.
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default();
            eprintln!("--- receiver stderr ---\n{log}");
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn example(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/receivers")
        .join(rel)
}

/// Starts `program script` with the receivers' environment contract and reads the port it
/// prints (`listening <port>`).
async fn start(program: &str, script: &Path, certs: &Certs) -> Running {
    let dir = std::env::temp_dir().join(format!("slipverify-rx-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert_file = dir.join("cert.pem");
    let key_file = dir.join("key.pem");
    let out_file = dir.join("deliveries.jsonl");
    std::fs::write(&cert_file, &certs.cert_pem).unwrap();
    std::fs::write(&key_file, &certs.key_pem).unwrap();
    let mut child = Command::new(program)
        .arg(script)
        .env("CERT_FILE", &cert_file)
        .env("KEY_FILE", &key_file)
        .env("PORT", "0")
        .env("WEBHOOK_SECRET", SECRET)
        .env("OUT_FILE", &out_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("stderr.log")).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let stdout = BufReader::new(child.stdout.take().unwrap());
    // The guard exists before we wait, so a receiver that never prints is still killed.
    let mut running = Running {
        child,
        _stdout: None,
        dir,
        port: 0,
        out_file,
    };
    // A blocking read, off the runtime's threads, within a real-time bound.
    let read = tokio::task::spawn_blocking(move || {
        let mut stdout = stdout;
        let mut line = String::new();
        let n = stdout.read_line(&mut line);
        (stdout, n.map(|_| line))
    });
    let (stdout, line) = tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .unwrap_or_else(|_| panic!("{program} did not print `listening <port>` within 20 s"))
        .unwrap();
    running._stdout = Some(stdout);
    let line = line.unwrap();
    running.port = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{program} printed {line:?}, not `listening <port>`"));
    assert_ne!(running.port, 0);
    running
}

/// Every line OUT_FILE holds now (none before the first delivery).
fn records(out_file: &Path) -> Vec<Value> {
    match std::fs::read_to_string(out_file) {
        Ok(text) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{}: {e}", out_file.display()),
    }
}

/// Waits (up to 30 s of real time) until OUT_FILE holds at least `n` records.
async fn wait_for_records(out_file: &Path, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = records(out_file);
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "expected {n} recorded deliveries, got {got:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// POSTs `body` to the receiver like the service does, with `signature` if any.
async fn post(http: &reqwest::Client, port: u16, body: &str, signature: Option<&str>) -> u16 {
    let mut req = http
        .post(format!("https://localhost:{port}/hook"))
        .header("content-type", "application/json")
        .header("user-agent", "Service-Webhook/2.0")
        .body(body.to_owned());
    if let Some(sig) = signature {
        req = req.header("x-service-signature", sig);
    }
    req.send()
        .await
        .expect("receiver answers")
        .status()
        .as_u16()
}

/// The whole scenario against one receiver.
async fn exercise(program: &str, script: &str) {
    if !on_path(program) {
        eprintln!("SKIPPED: `{program}` is not on PATH; the {script} receiver was not tested");
        return;
    }
    let certs = make_certs();
    let rx = start(program, &example(script), &certs).await;

    // The service, allowed to reach loopback and trusting our CA (nothing else changes).
    let eg = egress::Egress::new(egress::EgressConfig {
        allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        extra_root_ca_pem: Some(certs.ca_pem.clone().into_bytes()),
        ..egress::EgressConfig::default()
    })
    .unwrap();
    let t = TestApp::spawn_with(Backend::Sqlite, move |s| s.set_egress(eg)).await;
    let ten = t.tenant(100).await;
    t.set_webhook_secret(&ten.branch_id, SECRET).await;

    // 1. A real job, delivered by the service and accepted by the receiver.
    let tr = t.transfer("004", "014", 15050).await;
    let (s, v) = t
        .post(
            "/v2/verify/bank/async",
            &ten.api_key,
            json!({
                "payload": tr.payload,
                "callbackUrl": format!("https://localhost:{}/hook", rx.port),
                "remark": "ก๋วยเตี๋ยว",
            }),
        )
        .await;
    assert_eq!(s, 202, "{v}");
    let id = v["data"]["jobId"].as_str().unwrap().to_string();
    let got = wait_for_records(&rx.out_file, 1).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["jobId"], id.as_str());
    assert_eq!(got[0]["status"], "success");
    assert_eq!(got[0]["batchId"], Value::Null);
    assert_eq!(got[0]["data"]["rawSlip"]["transRef"], tr.trans_ref.as_str());
    // The signed body holds Thai text (names, remark) and still verified: the receiver hashed
    // the raw bytes, not a re-serialisation.
    assert_eq!(got[0]["data"]["remark"], "ก๋วยเตี๋ยว");
    let j = t
        .poll_job(&ten.api_key, &id, |j| j["webhook"]["state"] == "delivered")
        .await;
    assert_eq!(j["webhook"]["lastStatus"], 200);
    assert_eq!(j["webhook"]["attempts"], 1);

    // 2. Direct deliveries, with the same CA trusted by this test's client.
    let http = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(certs.ca_pem.as_bytes()).unwrap())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let other = uuid::Uuid::new_v4().to_string();
    let body = json!({
        "jobId": other,
        "batchId": null,
        "status": "not_found",
        "data": {"payload": tr.payload, "reason": "no transfer", "attempts": 5},
        "timestamp": "2026-11-22T10:00:00+07:00",
    })
    .to_string();
    let good = sign_webhook(SECRET, body.as_bytes());
    let refused: [(&str, Option<String>); 5] = [
        ("no signature", None),
        (
            "another secret",
            Some(sign_webhook("not-the-secret", body.as_bytes())),
        ),
        // Signed over a re-serialisation, not the bytes sent: must not verify.
        (
            "re-serialised body",
            Some(sign_webhook(
                SECRET,
                serde_json::to_string_pretty(&serde_json::from_str::<Value>(&body).unwrap())
                    .unwrap()
                    .as_bytes(),
            )),
        ),
        ("shorter", Some(good[..good.len() - 1].to_string())),
        (
            "bare hex",
            Some(good.trim_start_matches("sha256=").to_string()),
        ),
    ];
    for (why, sig) in &refused {
        assert_eq!(
            post(&http, rx.port, &body, sig.as_deref()).await,
            401,
            "{why}"
        );
    }
    // A tampered body with the good signature.
    let tampered = body.replace("not_found", "success");
    assert_eq!(post(&http, rx.port, &tampered, Some(&good)).await, 401);
    assert_eq!(
        records(&rx.out_file).len(),
        1,
        "nothing refused is recorded"
    );

    // The same valid delivery twice: 200 both times, recorded once.
    assert_eq!(post(&http, rx.port, &body, Some(&good)).await, 200);
    assert_eq!(post(&http, rx.port, &body, Some(&good)).await, 200);
    // A redelivery of the service's job (at least once): accepted, not recorded again.
    let again = json!({"jobId": id, "batchId": null, "status": "success", "data": got[0]["data"], "timestamp": got[0]["timestamp"]}).to_string();
    assert_eq!(
        post(
            &http,
            rx.port,
            &again,
            Some(&sign_webhook(SECRET, again.as_bytes()))
        )
        .await,
        200
    );
    // The receiver answers only after writing, so the file is complete now.
    let all = records(&rx.out_file);
    let ids: Vec<&str> = all.iter().map(|r| r["jobId"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![id.as_str(), other.as_str()], "{all:?}");
    assert_eq!(all[1]["status"], "not_found");

    t.stop().await;
    drop(rx);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn node_receiver_verifies_signatures_and_deduplicates() {
    exercise("node", "node/receiver.js").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn python_receiver_verifies_signatures_and_deduplicates() {
    exercise("python3", "python/receiver.py").await;
}
