//! Real HTTP clients of three ecosystems — Node's built-in `fetch`, Python `requests` and `curl`
//! (with and without `Expect: 100-continue`) — send uploads with a wrong key on one keep-alive
//! connection, as integrations do. Every answer must arrive whole (no EPIPE, no reset), the
//! connection must stay usable while the body is within the drain bound, and a valid request
//! on it must then succeed. Bodies past the bound get `Connection: close`, still answered whole.
//!
//! `scripts/test` installs Node and Python `requests` when missing.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;
use testkit::{Backend, TestApp};

/// A well-formed UUID v4 that is no branch's key.
const WRONG_KEY: &str = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f";
const REPS: usize = 100;
/// Requests past the drain bound: each closes its connection, so a few are enough.
const OVER: usize = 4;

struct Files {
    dir: PathBuf,
    small: PathBuf,
    big: PathBuf,
    over: PathBuf,
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn bytes(n: usize, seed: u32) -> Vec<u8> {
    // Not compressible, not an image: the server must never look at it (wrong key).
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn files() -> Files {
    let dir = std::env::temp_dir().join(format!("sv-clients-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, n: usize| {
        let p = dir.join(name);
        std::fs::write(&p, bytes(n, n as u32)).unwrap();
        p
    };
    Files {
        small: write("8k.png", 8 * 1024),
        big: write("5m.png", 5 * 1024 * 1024),
        // Past the 6 MiB (+ framing) drain bound.
        over: write("7m.png", 7 * 1024 * 1024),
        dir,
    }
}

fn b64_json(field: &str, size: usize) -> String {
    // A JSON body of about `size` bytes carrying Base64 text.
    json!({ field: "A".repeat(size) }).to_string()
}

fn v2_wrong(
    name: &str,
    kind: &str,
    file: Option<&Path>,
    json_body: Option<String>,
    n: usize,
) -> Value {
    let mut c = json!({"name": name, "kind": kind, "path": "/v2/verify/bank", "field": "image",
        "key": WRONG_KEY, "count": n, "status": 401, "code": "INVALID_API_KEY"});
    if let Some(f) = file {
        c["file"] = json!(f);
    }
    if let Some(j) = json_body {
        c["json"] = json!(j);
    }
    c
}

fn v1_wrong(name: &str, file: &Path, n: usize) -> Value {
    json!({"name": name, "kind": "multipart", "path": "/api/v1/verify", "field": "file",
        "key": WRONG_KEY, "count": n, "file": file, "status": 401, "code": "unauthorized"})
}

fn valid(name: &str, key: &str, payload: &str) -> Value {
    json!({"name": name, "kind": "json", "path": "/v2/verify/bank", "key": key, "count": 1,
        "status": 200, "json": json!({"payload": payload, "checkDuplicate": true}).to_string()})
}

/// Within the drain bound: everything on one keep-alive connection, then a valid request.
fn keep_alive_cases(f: &Files, key: &str, payload: &str) -> Vec<Value> {
    vec![
        v2_wrong("v2 multipart 8 KB", "multipart", Some(&f.small), None, REPS),
        v2_wrong("v2 multipart 5 MB", "multipart", Some(&f.big), None, REPS),
        v1_wrong("v1 multipart 8 KB", &f.small, 20),
        v1_wrong("v1 multipart 5 MB", &f.big, 5),
        v2_wrong(
            "v2 JSON 8 KB",
            "json",
            None,
            Some(b64_json("base64", 8 * 1024)),
            20,
        ),
        v2_wrong(
            "v2 JSON 5 MB",
            "json",
            None,
            Some(b64_json("base64", 5 << 20)),
            5,
        ),
        valid("valid on the same connection", key, payload),
    ]
}

/// Past the bound: each answer closes its connection, and still arrives whole.
fn over_limit_cases(f: &Files, key: &str, payload: &str) -> Vec<Value> {
    vec![
        v2_wrong(
            "v2 multipart 7 MB",
            "multipart",
            Some(&f.over),
            None,
            OVER / 2,
        ),
        v1_wrong("v1 multipart 7 MB", &f.over, OVER / 2),
        valid("valid after closes", key, payload),
    ]
}

fn check(client: &str, cases: &[Value], out: &Value) {
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let r = &out[name];
        assert_eq!(r["errors"], 0, "{client}, {name}: connection errors: {r}");
        assert_eq!(
            r["ok"], c["count"],
            "{client}, {name}: answers not as expected: {r}"
        );
    }
}

/// Runs a client script over a plan; returns its JSON summary.
fn run_script(cmd: &str, script: &str, app: &TestApp, cases: &[Value], dir: &Path) -> Value {
    let plan = dir.join(format!("plan-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&plan, json!({"base": app.base, "cases": cases}).to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let out = Command::new(cmd)
        .arg(&script)
        .arg(&plan)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd} (scripts/test installs it): {e}"));
    assert!(
        out.status.success(),
        "{cmd} {}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{cmd} printed: {}", String::from_utf8_lossy(&out.stdout)))
}

async fn setup() -> (TestApp, String, String, Files) {
    let app = TestApp::spawn(Backend::Sqlite).await;
    let t = app.tenant(1_000).await;
    let payload = app.transfer("004", "014", 15_000).await.payload;
    (app, t.api_key, payload, files())
}

fn accepted(app: &TestApp) -> u64 {
    app.conn_stats.accepted.load(Ordering::Relaxed)
}

/// Runs a script-based client (blocking, off the runtime) and checks its two phases.
async fn script_client(cmd: &'static str, script: &'static str, max_connections: u64) {
    let (app, key, payload, f) = setup().await;
    let app = std::sync::Arc::new(app);

    let cases = keep_alive_cases(&f, &key, &payload);
    let before = accepted(&app);
    let (a, c, d) = (app.clone(), cases.clone(), f.dir.clone());
    let out = tokio::task::spawn_blocking(move || run_script(cmd, script, &a, &c, &d))
        .await
        .unwrap();
    check(cmd, &cases, &out);
    let closed = app.conn_stats.closed.load(Ordering::Relaxed);
    assert_eq!(
        closed, 0,
        "{cmd}: no connection closed within the bound: {out}"
    );
    assert!(
        accepted(&app) - before <= max_connections,
        "{cmd}: all on one kept-alive connection: {out}"
    );

    let cases = over_limit_cases(&f, &key, &payload);
    let (a, c, d) = (app.clone(), cases.clone(), f.dir.clone());
    let out = tokio::task::spawn_blocking(move || run_script(cmd, script, &a, &c, &d))
        .await
        .unwrap();
    check(cmd, &cases, &out);
    assert_eq!(
        app.conn_stats.closed.load(Ordering::Relaxed) - closed,
        OVER as u64,
        "{cmd}: each over-limit answer closes its connection"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn node_fetch_keeps_its_connection() {
    // undici may dispatch the second request before it has marked the first one's streamed
    // body as written, and open a second connection then; every later request reuses one.
    script_client("node", "node_fetch.mjs", 2).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_requests_keeps_its_connection() {
    script_client("python3", "py_requests.py", 1).await;
}

/// One curl process, one transfer per block of a config file: curl reuses its connection
/// across them, and reports per transfer the status, new connections and its exit code.
fn curl(blocks: &[(Value, PathBuf)], dir: &Path, expect_continue: bool) -> Vec<(u16, u32, u32)> {
    let mut cfg = String::new();
    for (i, (c, out)) in blocks.iter().enumerate() {
        if i > 0 {
            cfg.push_str("next\n");
        }
        cfg.push_str(&format!("url = \"{}\"\n", c["url"].as_str().unwrap()));
        cfg.push_str(&format!(
            "header = \"Authorization: Bearer {}\"\n",
            c["key"].as_str().unwrap()
        ));
        if let Some(file) = c["file"].as_str() {
            cfg.push_str(&format!(
                "form = \"{}=@{file};type=image/png\"\n",
                c["field"].as_str().unwrap()
            ));
            // curl itself asks for `100 Continue` on bodies over 1 MB; `Expect:` turns it off.
            if expect_continue {
                cfg.push_str("header = \"Expect: 100-continue\"\n");
            } else {
                cfg.push_str("header = \"Expect:\"\n");
            }
        } else {
            let body = dir.join(format!("body-{i}.json"));
            std::fs::write(&body, c["json"].as_str().unwrap()).unwrap();
            cfg.push_str("header = \"Content-Type: application/json\"\n");
            cfg.push_str(&format!("data-binary = \"@{}\"\n", body.display()));
        }
        cfg.push_str(&format!("output = \"{}\"\n", out.display()));
        cfg.push_str("write-out = \"%{http_code} %{num_connects} %{exitcode}\\n\"\n");
    }
    let cfg_path = dir.join(format!("curl-{}.cfg", uuid::Uuid::new_v4()));
    std::fs::write(&cfg_path, cfg).unwrap();
    let out = Command::new("curl")
        .args(["-s", "--config"])
        .arg(&cfg_path)
        .output()
        .expect("curl");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Vec<u32> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (v[0] as u16, v[1], v[2])
        })
        .collect()
}

async fn curl_client(expect_continue: bool) {
    let (app, key, payload, f) = setup().await;
    let url = format!("{}/v2/verify/bank", app.base);
    let mut blocks = Vec::new();
    for (i, file) in [&f.small, &f.big]
        .iter()
        .flat_map(|p| std::iter::repeat_n(*p, REPS))
        .enumerate()
    {
        let c = json!({"url": url, "key": WRONG_KEY, "field": "image", "file": file});
        blocks.push((c, f.dir.join(format!("out-{i}.json"))));
    }
    let body = json!({"payload": payload}).to_string();
    let c = json!({"url": url, "key": key, "json": body});
    blocks.push((c, f.dir.join("out-valid.json")));

    let before = accepted(&app);
    let dir = f.dir.clone();
    let lines = tokio::task::spawn_blocking(move || {
        let r = curl(&blocks, &dir, expect_continue);
        (r, blocks)
    })
    .await
    .unwrap();
    let (results, blocks) = lines;
    assert_eq!(results.len(), blocks.len(), "one line per transfer");
    let (last, wrong) = results.split_last().unwrap();
    for (i, (status, _, exit)) in wrong.iter().enumerate() {
        assert_eq!((*status, *exit), (401, 0), "transfer {i}");
        let body: Value = serde_json::from_slice(&std::fs::read(&blocks[i].1).unwrap()).unwrap();
        assert_eq!(
            body["error"]["code"], "INVALID_API_KEY",
            "transfer {i}: {body}"
        );
    }
    assert_eq!((last.0, last.2), (200, 0), "the valid request");
    let body: Value =
        serde_json::from_slice(&std::fs::read(&blocks.last().unwrap().1).unwrap()).unwrap();
    assert_eq!(body["success"], true, "{body}");
    let connects: u32 = results.iter().map(|r| r.1).sum();
    let accepted = accepted(&app) - before;
    assert_eq!(
        connects as u64, accepted,
        "curl's count and the server's agree"
    );
    if expect_continue {
        // Refused before its body: the final status instead of `100 Continue`, and curl, which
        // then never sends that body, opens a new connection for the next request.
        assert_eq!(accepted, 2 * REPS as u64 + 1);
    } else {
        assert_eq!(accepted, 1, "all on one connection");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn curl_keeps_its_connection() {
    curl_client(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn curl_with_expect_continue_gets_the_final_status() {
    curl_client(true).await;
}
