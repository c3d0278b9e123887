//! Submits sandbox slips as async batches (`POST /v2/verify/bank/batch`) from several
//! concurrent submitters, for `scripts/bench-jobs` and `scripts/crash-jobs`.
//!
//! Reads one QR payload per line from `--payloads`, sends them in batches of `--batch` with
//! `--concurrency` submitters, appends every accepted jobId to `--ids-out` (one per line), and
//! prints one JSON line: `{"submitted", "batches", "failed_batches", "first_submit_ms",
//! "last_accepted_ms", "seconds"}` (Unix milliseconds). Exits 1 if any batch was refused.

use clap::Parser;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser)]
struct Args {
    /// Base URL of slipverify, e.g. http://127.0.0.1:8080
    #[arg(long)]
    url: String,
    #[arg(long)]
    key: String,
    /// The callbackUrl of every batch (https).
    #[arg(long)]
    callback: String,
    /// One QR payload per line.
    #[arg(long)]
    payloads: PathBuf,
    #[arg(long, default_value_t = 100)]
    batch: usize,
    /// Submitters sending at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Accepted jobIds, one per line (appended).
    #[arg(long)]
    ids_out: PathBuf,
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let a = Args::parse();
    let text = match std::fs::read_to_string(&a.payloads) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}: {e}", a.payloads.display());
            return std::process::ExitCode::from(2);
        }
    };
    let payloads: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    // Bodies are built before the clock starts.
    let bodies: Arc<Vec<String>> = Arc::new(
        payloads
            .chunks(a.batch.max(1))
            .map(|chunk| {
                json!({
                    "callbackUrl": a.callback,
                    "slips": chunk.iter().map(|p| json!({"payload": p})).collect::<Vec<_>>(),
                })
                .to_string()
            })
            .collect(),
    );
    let client = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(Mutex::new(Vec::<String>::with_capacity(payloads.len())));
    let failed = Arc::new(AtomicUsize::new(0));
    let endpoint = format!("{}/v2/verify/bank/batch", a.url.trim_end_matches('/'));
    let first_submit_ms = now_ms();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..a.concurrency.max(1) {
        let (client, next, ids, failed, bodies, endpoint, key) = (
            client.clone(),
            next.clone(),
            ids.clone(),
            failed.clone(),
            bodies.clone(),
            endpoint.clone(),
            a.key.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(body) = bodies.get(i) else { break };
                let sent = client
                    .post(&endpoint)
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(body.clone())
                    .send()
                    .await;
                let answer = match sent {
                    Ok(r) if r.status().as_u16() == 202 => r.json::<Value>().await.ok(),
                    Ok(r) => {
                        let status = r.status();
                        eprintln!(
                            "batch {i}: HTTP {status}: {}",
                            r.text().await.unwrap_or_default()
                        );
                        None
                    }
                    Err(e) => {
                        eprintln!("batch {i}: {e}");
                        None
                    }
                };
                match answer.as_ref().and_then(|v| v["data"]["jobIds"].as_array()) {
                    Some(list) => ids
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(list.iter().filter_map(|v| v.as_str().map(String::from))),
                    None => {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let last_accepted_ms = now_ms();
    let seconds = started.elapsed().as_secs_f64();
    let ids = ids.lock().unwrap_or_else(|e| e.into_inner());
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.ids_out)
        .and_then(|mut f| {
            let mut out = String::with_capacity(ids.len() * 37);
            for id in ids.iter() {
                out.push_str(id);
                out.push('\n');
            }
            f.write_all(out.as_bytes())
        });
    if let Err(e) = written {
        eprintln!("{}: {e}", a.ids_out.display());
        return std::process::ExitCode::from(2);
    }
    let failed = failed.load(Ordering::Relaxed);
    println!(
        "{}",
        json!({
            "submitted": ids.len(),
            "batches": bodies.len(),
            "failed_batches": failed,
            "first_submit_ms": first_submit_ms,
            "last_accepted_ms": last_accepted_ms,
            "seconds": seconds,
        })
    );
    if failed > 0 {
        std::process::ExitCode::from(1)
    } else {
        std::process::ExitCode::SUCCESS
    }
}
