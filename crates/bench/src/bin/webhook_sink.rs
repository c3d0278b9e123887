//! A fast HTTPS webhook receiver for the async-job benchmarks (`scripts/bench-jobs`,
//! `scripts/crash-jobs`). It makes a throw-away CA and a leaf for `localhost`/`127.0.0.1` at
//! start, writes the CA's PEM to `--ca-out` (for `SLIPVERIFY_EGRESS_CA_FILE`), answers every
//! `POST` with 200 and counts deliveries per `jobId` of the JSON body.
//!
//! Plain HTTP on a second port:
//! - `GET /stats` → `{"deliveries", "unique", "first_at_ms", "last_at_ms", "statuses", "bad",
//!   "tls_handshakes"}` (`*_at_ms`: Unix milliseconds of the first and last delivery, null
//!   before any; `statuses`: unique jobs per callback `status`; `bad`: deliveries without a
//!   readable `jobId`; `tls_handshakes`: TLS connections accepted, i.e. how well the sender
//!   reuses connections);
//! - `GET /ids` → every jobId received, one per line.
//! - `POST /reset` → forget everything.
//!
//! Prints `listening <https_port> <stats_port>` on stdout once both ports accept.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use clap::Parser;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::server::TlsStream;

#[derive(Parser)]
struct Args {
    /// Address of both listeners.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// HTTPS port for the webhooks (0: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Plain-HTTP port for /stats and /ids (0: any free port).
    #[arg(long, default_value_t = 0)]
    stats_port: u16,
    /// Where to write the CA certificate (PEM) that signed the HTTPS certificate.
    #[arg(long)]
    ca_out: PathBuf,
}

#[derive(Default)]
struct Counts {
    deliveries: u64,
    bad: u64,
    /// jobId → (deliveries, callback status of the first).
    per_job: HashMap<String, (u32, String)>,
    first_at_ms: Option<u128>,
    last_at_ms: Option<u128>,
}

type Shared = Arc<Mutex<Counts>>;

/// TLS handshakes completed (connections accepted).
static HANDSHAKES: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

#[derive(serde::Deserialize)]
struct Callback {
    #[serde(rename = "jobId")]
    job_id: Option<String>,
    status: Option<String>,
}

async fn hook(State(counts): State<Shared>, body: Bytes) -> StatusCode {
    let parsed: Option<Callback> = serde_json::from_slice(&body).ok();
    let at = now_ms();
    let mut c = counts.lock().unwrap_or_else(|e| e.into_inner());
    c.deliveries += 1;
    c.first_at_ms.get_or_insert(at);
    c.last_at_ms = Some(at);
    match parsed {
        Some(Callback {
            job_id: Some(id),
            status,
        }) => {
            c.per_job
                .entry(id)
                .or_insert_with(|| (0, status.unwrap_or_default()))
                .0 += 1;
        }
        _ => c.bad += 1,
    }
    StatusCode::OK
}

async fn stats(State(counts): State<Shared>) -> Json<Value> {
    let c = counts.lock().unwrap_or_else(|e| e.into_inner());
    let mut statuses: HashMap<&str, u64> = HashMap::new();
    for (_, status) in c.per_job.values() {
        *statuses.entry(status.as_str()).or_default() += 1;
    }
    Json(json!({
        "deliveries": c.deliveries,
        "unique": c.per_job.len(),
        "first_at_ms": c.first_at_ms,
        "last_at_ms": c.last_at_ms,
        "statuses": statuses,
        "bad": c.bad,
        "tls_handshakes": HANDSHAKES.load(Ordering::Relaxed),
    }))
}

async fn ids(State(counts): State<Shared>) -> String {
    let c = counts.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = String::with_capacity(c.per_job.len() * 37);
    for id in c.per_job.keys() {
        out.push_str(id);
        out.push('\n');
    }
    out
}

async fn reset(State(counts): State<Shared>) -> StatusCode {
    *counts.lock().unwrap_or_else(|e| e.into_inner()) = Counts::default();
    HANDSHAKES.store(0, Ordering::Relaxed);
    StatusCode::NO_CONTENT
}

/// TLS connections whose handshakes already finished: handshakes run in their own tasks (in
/// parallel), so a slow or failed one never holds up the accept loop.
struct TlsListener {
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    addr: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(conn) => conn,
            // The acceptor task ended (its listener failed): nothing more will arrive.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

fn tls_config() -> Result<(rustls::ServerConfig, String), Box<dyn std::error::Error>> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key)?;
    let leaf_key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?
        .signed_by(&leaf_key, &ca, &ca_key)?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(
        vec![CertificateDer::from(leaf.der().to_vec())],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
    )?;
    Ok((config, ca.pem()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = Args::parse();
    let (config, ca_pem) = tls_config()?;
    std::fs::write(&a.ca_out, ca_pem)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let tcp = TcpListener::bind((a.host.as_str(), a.port)).await?;
    let https_addr = tcp.local_addr()?;
    let stats_tcp = TcpListener::bind((a.host.as_str(), a.stats_port)).await?;
    let stats_addr = stats_tcp.local_addr()?;

    let (tx, rx) = mpsc::channel(1024);
    tokio::spawn(async move {
        loop {
            let (sock, peer) = match tcp.accept().await {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = sock.set_nodelay(true);
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(sock).await {
                    HANDSHAKES.fetch_add(1, Ordering::Relaxed);
                    let _ = tx.send((tls, peer)).await;
                }
            });
        }
    });

    let counts: Shared = Arc::default();
    let hooks = Router::new()
        .route("/", post(hook))
        .route("/{*path}", post(hook))
        .with_state(counts.clone());
    let admin = Router::new()
        .route("/stats", get(stats))
        .route("/ids", get(ids))
        .route("/reset", post(reset))
        .with_state(counts);

    let listener = TlsListener {
        ready: rx,
        addr: https_addr,
    };
    let https = tokio::spawn(async move { axum::serve(listener, hooks).await });
    let plain = tokio::spawn(async move { axum::serve(stats_tcp, admin).await });
    println!("listening {} {}", https_addr.port(), stats_addr.port());
    std::io::stdout().flush()?;
    tokio::select! {
        r = https => r??,
        r = plain => r??,
    }
    Ok(())
}
