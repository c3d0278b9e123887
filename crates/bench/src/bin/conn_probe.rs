//! Holds many idle connections, slow-header clients and trickled unauthenticated bodies
//! against a running `slipverify serve`, while timing `/health` and a sandbox verification,
//! each on a fresh connection. Used by `scripts/bench-connections` and `scripts/bench-trickle`;
//! prints one `key=value` line per measure and exits non-zero when any answer took 1 s or more
//! (or failed).

use clap::Parser;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Parser)]
struct Args {
    /// e.g. 127.0.0.1:8080
    #[arg(long)]
    addr: String,
    /// Idle connections opened (connect, send nothing).
    #[arg(long, default_value_t = 5000)]
    idle: usize,
    /// Clients sending a request head a byte a second, reconnecting when closed.
    #[arg(long, default_value_t = 50)]
    slow: usize,
    #[arg(long)]
    key: String,
    /// One sandbox slip payload per line; one verification per payload.
    #[arg(long)]
    payloads: std::path::PathBuf,
    /// Clients posting to a `--trickle-path` (round robin) without credentials: a head
    /// declaring 100,000 body bytes, then a byte every `--trickle-every-ms`; reconnecting when
    /// closed, so that this many are always trying.
    #[arg(long, default_value_t = 0)]
    trickle: usize,
    #[arg(long = "trickle-path")]
    trickle_paths: Vec<String>,
    #[arg(long, default_value_t = 1000)]
    trickle_every_ms: u64,
}

/// The unauthenticated routes trickled when no `--trickle-path` is given: every family.
const TRICKLE_PATHS: &[&str] = &[
    "/v2/verify/bank",
    "/v2/verify/truewallet",
    "/v2/verify/bank/async",
    "/api/v1/verify",
    "/v2/b2b/branch/quota/adjust",
    "/admin/services",
];

/// Counts shared by the trickling clients.
#[derive(Default)]
struct Trickled {
    connected: std::sync::atomic::AtomicU64,
    refused: std::sync::atomic::AtomicU64,
    /// Connections the server ended (answered and closed, shed, or timed out).
    ended: std::sync::atomic::AtomicU64,
}

/// One trickling client: connects, sends a head, then a byte at a time until the server ends
/// the connection; then again, until `stop`.
async fn trickle(
    addr: String,
    path: String,
    every: Duration,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    counts: std::sync::Arc<Trickled>,
) {
    use std::sync::atomic::Ordering::Relaxed;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 100000\r\n\r\n{{"
    );
    while !stop.load(Relaxed) {
        let Ok(c) = TcpStream::connect(&addr).await else {
            counts.refused.fetch_add(1, Relaxed);
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        counts.connected.fetch_add(1, Relaxed);
        let (mut r, mut w) = c.into_split();
        if w.write_all(head.as_bytes()).await.is_err() {
            counts.ended.fetch_add(1, Relaxed);
            continue;
        }
        // The server's end shows as end of stream (or a reset) on the read side.
        let mut sink = [0u8; 1024];
        loop {
            tokio::select! {
                read = r.read(&mut sink) => {
                    if !matches!(read, Ok(n) if n > 0) {
                        break;
                    }
                }
                _ = tokio::time::sleep(every) => {
                    if stop.load(Relaxed) {
                        return;
                    }
                    if w.write_all(b" ").await.is_err() {
                        break;
                    }
                }
            }
        }
        counts.ended.fetch_add(1, Relaxed);
    }
}

/// One request on a fresh connection; the time to the whole answer, and its status.
async fn fresh(addr: &str, request: &str) -> anyhow::Result<(Duration, u16)> {
    let start = Instant::now();
    let once = async {
        let mut c = TcpStream::connect(addr).await?;
        c.write_all(request.as_bytes()).await?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = c.read(&mut chunk).await?;
            if n == 0 {
                anyhow::bail!("closed before the answer");
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let head = text[..end].to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    let status = head
                        .split_whitespace()
                        .nth(1)
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    return Ok(status);
                }
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), once).await {
        Ok(Ok(status)) => Ok((start.elapsed(), status)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(anyhow::anyhow!("no answer within 10 s")),
    }
}

fn report(name: &str, results: &[anyhow::Result<(Duration, u16)>]) -> bool {
    let mut times: Vec<Duration> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .filter(|(_, s)| *s == 200)
        .map(|(t, _)| *t)
        .collect();
    times.sort();
    let ok = times.len();
    let within = times
        .iter()
        .filter(|t| **t < Duration::from_secs(1))
        .count();
    let p50 = times.get(ok / 2).copied().unwrap_or_default();
    let max = times.last().copied().unwrap_or_default();
    // As text: the first error is printed quoted, as before.
    let errors: Vec<String> = results
        .iter()
        .filter_map(|r| r.as_ref().err().map(|e| e.to_string()))
        .collect();
    println!(
        "{name}: n={} ok_200={ok} within_1s={within} p50_ms={:.1} max_ms={:.1} errors={}{}",
        results.len(),
        p50.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3,
        errors.len(),
        errors
            .first()
            .map(|e| format!(" first_error={e:?}"))
            .unwrap_or_default(),
    );
    within == results.len()
}

#[tokio::main]
async fn main() {
    let a = Args::parse();
    let payloads: Vec<String> = std::fs::read_to_string(&a.payloads)
        .expect("payloads file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect();

    let start = Instant::now();
    let mut idle = Vec::with_capacity(a.idle);
    let mut refused = 0;
    for _ in 0..a.idle {
        match TcpStream::connect(&a.addr).await {
            Ok(c) => idle.push(c),
            Err(_) => refused += 1,
        }
    }
    println!(
        "idle: opened={} refused={refused} in_ms={}",
        idle.len(),
        start.elapsed().as_millis()
    );

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cut = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut slow = Vec::new();
    for _ in 0..a.slow {
        let (addr, stop, cut) = (a.addr.clone(), stop.clone(), cut.clone());
        slow.push(tokio::spawn(async move {
            let head = b"GET /health HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Ok(mut c) = TcpStream::connect(&addr).await else {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                };
                for b in head.iter().cycle() {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    if c.write_all(&[*b]).await.is_err() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                cut.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }));
    }
    let trickled = std::sync::Arc::new(Trickled::default());
    let paths: Vec<String> = if a.trickle_paths.is_empty() {
        TRICKLE_PATHS.iter().map(|p| p.to_string()).collect()
    } else {
        a.trickle_paths.clone()
    };
    let mut trickling = Vec::with_capacity(a.trickle);
    for i in 0..a.trickle {
        trickling.push(tokio::spawn(trickle(
            a.addr.clone(),
            paths[i % paths.len()].clone(),
            Duration::from_millis(a.trickle_every_ms),
            stop.clone(),
            trickled.clone(),
        )));
    }
    if a.trickle > 0 {
        // Until every client has connected once (or been refused), then a few seconds more.
        use std::sync::atomic::Ordering::Relaxed;
        let began = Instant::now();
        while trickled.connected.load(Relaxed) + trickled.refused.load(Relaxed) < a.trickle as u64
            && began.elapsed() < Duration::from_secs(120)
        {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "trickle: clients={} paths={} connected_once_in_ms={}",
            a.trickle,
            paths.join(","),
            began.elapsed().as_millis()
        );
    }
    // Let the slow clients get going.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let mut health = Vec::new();
    let mut verify = Vec::new();
    for p in &payloads {
        health.push(
            fresh(
                &a.addr,
                "GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n",
            )
            .await,
        );
        let body = format!("{{\"payload\":\"{p}\"}}");
        let req = format!(
            "POST /v2/verify/bank HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            a.key,
            body.len()
        );
        verify.push(fresh(&a.addr, &req).await);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    if a.trickle > 0 {
        use std::sync::atomic::Ordering::Relaxed;
        println!(
            "trickle_after: connections={} refused={} ended_by_server={}",
            trickled.connected.load(Relaxed),
            trickled.refused.load(Relaxed),
            trickled.ended.load(Relaxed)
        );
    }

    // Idle connections the server has closed by now (shed at its cap or past its timeouts).
    let mut closed = 0;
    let mut byte = [0u8; 1];
    for c in &idle {
        match c.try_read(&mut byte) {
            Ok(0) => closed += 1,
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => closed += 1,
            _ => {}
        }
    }
    println!(
        "idle_after: still_open={} closed_by_server={closed} slow_heads_cut={}",
        idle.len() - closed,
        cut.load(std::sync::atomic::Ordering::Relaxed)
    );
    let ok = report("health", &health) & report("verify", &verify);
    println!(
        "{}",
        if ok {
            "PASS: every answer within 1 s"
        } else {
            "FAIL"
        }
    );
    for s in slow.into_iter().chain(trickling) {
        s.abort();
    }
    std::process::exit(if ok { 0 } else { 1 });
}
