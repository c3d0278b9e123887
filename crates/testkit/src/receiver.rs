//! A real HTTPS webhook receiver on loopback, with a throw-away CA: tests switch its answers,
//! slow it down, and read exactly what arrived (headers and raw body bytes). The service
//! reaches it only through egress's explicit test allowances (loopback CIDRs + this CA).

use crate::certs::Certs;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// One delivery as it arrived.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("webhook body is JSON")
    }
}

#[derive(Default)]
struct Inner {
    /// Answers for the next deliveries, in order; then `default` (200).
    script: Mutex<VecDeque<u16>>,
    default: Mutex<Option<u16>>,
    delay: Mutex<Duration>,
    got: Mutex<Vec<Received>>,
    arrived: Notify,
}

#[derive(Clone)]
pub struct Receiver {
    pub addr: SocketAddr,
    /// PEM of the CA that signed the receiver's certificate.
    pub ca_pem: String,
    inner: Arc<Inner>,
}

async fn hook(
    State(inner): State<Arc<Inner>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let delay = *inner.delay.lock().unwrap();
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let status = inner
        .script
        .lock()
        .unwrap()
        .pop_front()
        .or(*inner.default.lock().unwrap())
        .unwrap_or(200);
    inner.got.lock().unwrap().push(Received {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: body.to_vec(),
    });
    inner.arrived.notify_waiters();
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    if status.is_redirection() {
        return (status, [("location", "/elsewhere")]).into_response();
    }
    status.into_response()
}

impl Receiver {
    pub async fn spawn() -> Receiver {
        let certs = Certs::generate();
        let config = certs.server_config();
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let inner = Arc::new(Inner::default());
        let app = Router::new()
            .route("/{*path}", post(hook))
            .with_state(inner.clone());
        let listener = sim::TlsListener::new(tcp, config, |_| {});
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            addr,
            ca_pem: certs.ca.pem(),
            inner,
        }
    }

    /// `https://localhost:PORT/<path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://localhost:{}/{}", self.addr.port(), path)
    }

    /// The statuses of the next deliveries, in order (then 200, or the default).
    pub fn answer_next(&self, statuses: &[u16]) {
        self.inner.script.lock().unwrap().extend(statuses);
    }

    /// The status of every delivery not scripted by `answer_next`.
    pub fn answer_always(&self, status: u16) {
        *self.inner.default.lock().unwrap() = Some(status);
    }

    pub fn delay(&self, d: Duration) {
        *self.inner.delay.lock().unwrap() = d;
    }

    pub fn received(&self) -> Vec<Received> {
        self.inner.got.lock().unwrap().clone()
    }

    /// Waits (up to 30 s of real time) until at least `n` deliveries arrived.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let arrived = self.inner.arrived.notified();
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                panic!("expected {n} deliveries, got {}", self.received().len());
            }
        }
    }

    /// The egress a test server needs to reach this receiver: loopback allowed, our CA
    /// trusted (the production rules are otherwise unchanged).
    pub fn egress(&self) -> egress::Egress {
        egress::Egress::new(egress::EgressConfig {
            allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
            extra_root_ca_pem: Some(self.ca_pem.clone().into_bytes()),
            ..egress::EgressConfig::default()
        })
        .unwrap()
    }
}
