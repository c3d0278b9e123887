//! Connectors as an operator meets them, through the real binary at the most talkative log
//! level: `connectors check` reports each connector, `serve` verifies through one and shows it
//! at `/admin/connectors`, and no secret ever reaches stdout or the logs.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use crate::http::{json_of, text_of};

const BIN: &str = env!("CARGO_BIN_EXE_slipverify");
const GOOD_KEY: &str = "sim-secret-key-4f1b2c3d";
const BAD_KEY: &str = "wrong-secret-key-9c2d8e7f";
const ADMIN: &str = "admin-secret-token-0123456789abcdefghijkl";

fn command(dir: &std::path::Path, cfg: &std::path::Path) -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("SLIPVERIFY_")) {
        cmd.env_remove(k);
    }
    cmd.env("SLIPVERIFY_LOG", "trace")
        .arg("--database-url")
        .arg(format!("sqlite://{}", dir.join("sv.db").display()))
        .arg("--config")
        .arg(cfg);
    cmd
}

fn assert_no_secret(what: &str, text: &str) {
    for s in [GOOD_KEY, BAD_KEY, ADMIN] {
        assert!(!text.contains(s), "{what} shows a secret:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn connectors_are_checked_used_and_shown_without_secrets() {
    let sim = sim::Sim::start(sim::SimConfig {
        api_key: Some(GOOD_KEY.into()),
        ..Default::default()
    })
    .await
    .unwrap();
    let dir = std::env::temp_dir().join(format!("sv-conn-cli-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("slipverify.toml");
    let key_file = dir.join("good.key");
    std::fs::write(&key_file, format!("{GOOD_KEY}\n")).unwrap();
    std::fs::write(
        &cfg,
        format!(
            "[server]\nadmin_token = \"{ADMIN}\"\n\
             [connectors.good]\nkind = \"easyslip\"\nbase_url = \"{base}\"\napi_key_file = \"{kf}\"\n\
             [connectors.bad]\nkind = \"easyslip\"\nbase_url = \"{base}\"\napi_key = \"{BAD_KEY}\"\n\
             [routing]\ndefault = [\"bad\", \"good\"]\n",
            base = sim.base_url(),
            kf = key_file.display()
        ),
    )
    .unwrap();

    // `connectors check`: one object per connector, exit status 1 because one failed.
    let out = command(&dir, &cfg)
        .args(["connectors", "check"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let reports: Vec<Value> = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect();
    let find = |n: &str| reports.iter().find(|r| r["name"] == n).cloned().unwrap();
    assert_eq!(find("good")["ok"], true, "{stdout}");
    assert_eq!(find("bad")["ok"], false, "{stdout}");
    assert_eq!(sim.calls(sim::Route::Bank), 0, "a check verifies nothing");
    assert_no_secret("connectors check (stdout)", &stdout);
    assert_no_secret("connectors check (logs)", &stderr);

    // A tenant, then `serve`: the first connector refuses the key, the second confirms.
    let out = command(&dir, &cfg)
        .args([
            "admin", "service", "create", "--name", "Shop", "--quota", "10",
        ])
        .output()
        .unwrap();
    let svc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let out = command(&dir, &cfg)
        .args(["admin", "branch", "create", "--service"])
        .arg(svc["id"].as_str().unwrap())
        .args(["--name", "Main", "--main"])
        .output()
        .unwrap();
    let branch: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = branch["apiKey"].as_str().unwrap().to_string();

    let mut child = command(&dir, &cfg)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut logs = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        assert!(
            logs.read_line(&mut line).unwrap() > 0,
            "server ended:\n{seen}"
        );
        seen.push_str(&line);
        if line.contains("slipverify listening") {
            let at = line.find("addr=").unwrap() + 5;
            break line[at..].split_whitespace().next().unwrap().to_string();
        }
    };
    let http = reqwest::Client::new();
    let payload = slip_qr::encode_bank_slip("004", "013071152533APM07736");
    let v: Value = json_of(
        http.post(format!("http://{addr}/v2/verify/bank"))
            .bearer_auth(&key)
            .json(&json!({"payload": payload})),
    )
    .await;
    assert_eq!(v["success"], true, "{v}");
    let status = text_of(
        http.get(format!("http://{addr}/admin/connectors"))
            .bearer_auth(ADMIN),
    )
    .await;
    let s: Value = serde_json::from_str(&status).unwrap();
    let bad = s["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "bad")
        .unwrap()
        .clone();
    assert_eq!(bad["failures"], 1, "{status}");
    assert_no_secret("GET /admin/connectors", &status);
    let _ = child.kill();
    let _ = child.wait();
    logs.read_to_string(&mut seen).unwrap();
    assert!(
        seen.contains("connector unavailable"),
        "the failure is logged"
    );
    assert_no_secret("serve (logs at trace)", &seen);
    let _ = std::fs::remove_dir_all(&dir);
}
