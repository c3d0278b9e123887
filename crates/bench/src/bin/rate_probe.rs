//! Sends requests at a fixed rate for a fixed time and reports how many were accepted, and
//! whether every 429 carried the four rate-limit headers. Used by `scripts/bench-rate`.

use clap::Parser;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// e.g. http://127.0.0.1:8080/v2/info
    #[arg(long)]
    url: String,
    #[arg(long)]
    key: String,
    /// Requests per second to send.
    #[arg(long)]
    rate: u32,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

#[tokio::main]
async fn main() {
    let a = Args::parse();
    let client = reqwest::Client::new();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / a.rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let start = Instant::now();
    let mut tasks = Vec::new();
    while start.elapsed() < Duration::from_secs(a.seconds) {
        tick.tick().await;
        let req = client.get(&a.url).bearer_auth(&a.key).send();
        tasks.push(tokio::spawn(async move {
            match req.await {
                Ok(r) => {
                    let h = r.headers();
                    let complete = [
                        "retry-after",
                        "x-ratelimit-limit",
                        "x-ratelimit-remaining",
                        "x-ratelimit-reset",
                    ]
                    .iter()
                    .all(|n| h.contains_key(*n));
                    (r.status().as_u16(), complete)
                }
                Err(_) => (0, false),
            }
        }));
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (mut ok, mut limited, mut bad_headers, mut other) = (0u64, 0u64, 0u64, 0u64);
    for t in tasks {
        match t.await.unwrap_or((0, false)) {
            (200, _) => ok += 1,
            (429, complete) => {
                limited += 1;
                if !complete {
                    bad_headers += 1;
                }
            }
            _ => other += 1,
        }
    }
    println!(
        "RATE sent={} accepted={ok} limited={limited} limited_without_headers={bad_headers} other={other} seconds={elapsed:.2} accepted_per_s={:.2}",
        ok + limited + other,
        ok as f64 / elapsed
    );
}
