//! A loopback simulator of upstream wire formats, for tests and for operators trying a
//! configuration before they have real credentials.
//!
//! Serves our v2 interface (`POST /v2/verify/bank`, `POST /v2/verify/truewallet`,
//! `GET /v2/info`) from a fixture file of rawSlips, and an OAuth client-credentials token
//! endpoint (`POST /v2/oauth/token` and `/oauth/token`, both spellings seen for KBank). Faults are
//! switched at start or at runtime ([`Sim::set`]); every route counts its calls.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

pub mod line;
mod scb;
pub use scb::ScbSim;

/// The slips the simulator knows. File format (JSON):
/// `{"bank": [rawSlip, ...], "pending": ["transRef", ...], "truewallet": [rawWalletSlip, ...],
/// "kbank": [verslip data, ...]}`.
/// A bank slip without `payload` gets one built from `sender.bank.id` and `transRef`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Fixtures {
    #[serde(default)]
    pub bank: Vec<Value>,
    /// References answered with `SLIP_PENDING`.
    #[serde(default)]
    pub pending: Vec<String>,
    #[serde(default)]
    pub truewallet: Vec<Value>,
    /// KBank verslip `data` objects (banks.md 1.4), found by `sendingBank` + `transRef`.
    #[serde(default)]
    pub kbank: Vec<Value>,
}

/// A fixture's text at `pointer`, `""` when it has none.
fn text_at<'a>(fixture: &'a Value, pointer: &str) -> &'a str {
    fixture
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Gives a fixture slip the payload of its QR.
fn set_payload(slip: &mut Value, payload: String) {
    if let Some(o) = slip.as_object_mut() {
        o.insert("payload".into(), Value::String(payload));
    }
}

impl Fixtures {
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let mut f: Fixtures = serde_json::from_str(text)?;
        for slip in &mut f.bank {
            if !text_at(slip, "/payload").is_empty() {
                continue;
            }
            let (bank, r) = (text_at(slip, "/sender/bank/id"), text_at(slip, "/transRef"));
            // The encoder panics past 99 characters in tag 00.
            if bank.len() + r.len() + 22 <= 99 {
                let p = slip_qr::encode_bank_slip(bank, r);
                set_payload(slip, p);
            }
        }
        for slip in &mut f.truewallet {
            if slip.get("payload").and_then(Value::as_str).is_some() {
                continue;
            }
            let id = text_at(slip, "/transactionId");
            let event = slip.get("event").and_then(Value::as_str).unwrap_or("P2P");
            // `2026-11-22T...` → `22112026`, the QR's date field.
            let d = text_at(slip, "/date");
            let ddmmyyyy = match (d.get(0..4), d.get(5..7), d.get(8..10)) {
                (Some(y), Some(m), Some(dd)) => format!("{dd}{m}{y}"),
                _ => continue,
            };
            if id.len() + event.len() + 34 <= 99 {
                let p = slip_qr::encode_truemoney_slip(event, id, &ddmmyyyy);
                set_payload(slip, p);
            }
        }
        Ok(f)
    }

    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let at = |e: &dyn std::fmt::Display| anyhow::anyhow!("{}: {e}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| at(&e))?;
        Self::from_json(&text).map_err(|e| at(&e))
    }

    /// The example shipped with the crate (`fixtures/example.json`).
    pub fn example() -> Self {
        Self::from_json(include_str!("../fixtures/example.json")).unwrap_or_default()
    }
}

/// banks.md 1.4: KBank's documented `data` example (number amounts, both empty-proxy forms).
/// Tests and benches start from it and change the fields their case is about.
pub fn kbank_example() -> serde_json::Value {
    serde_json::json!({
        "language": "TH",
        "transRef": "010092101507665143",
        "sendingBank": "004",
        "receivingBank": "004",
        "transDate": "20200401",
        "transTime": "10:15:07",
        "sender": {"displayName": "นาย ธนาคาร ก", "name": "Mr. Thanakarn K",
                   "proxy": {"type": null, "value": null},
                   "account": {"type": "BANKAC", "value": "xxx-x-x0209-x"}},
        "receiver": {"displayName": "กสิกร ร", "name": "KASIKORN R",
                     "proxy": {"type": "", "value": ""},
                     "account": {"type": "BANKAC", "value": "xxx-x-x3109-x"}},
        "amount": 1, "paidLocalAmount": 1, "paidLocalCurrency": "764",
        "countryCode": "TH", "transFeeAmount": 0,
        "ref1": "", "ref2": "", "ref3": "", "toMerchantId": ""
    })
}

/// The API key [`Sim::start_keyed`] demands.
pub const TEST_KEY: &str = "sim-key";

/// What the simulator checks and hands out.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub fixtures: Fixtures,
    /// Bearer key the verify routes accept; `None` accepts any key (tokens are still checked).
    pub api_key: Option<String>,
    /// Client credentials the token endpoint accepts; `None` accepts any non-empty pair.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// `expires_in` of issued tokens, in seconds (sent as a string, as KBank does).
    pub token_lifetime_s: u64,
    /// Faults switched on from the start.
    pub faults: Vec<Fault>,
    /// SCB routes: what an unknown reference gets.
    pub scb: ScbSim,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            fixtures: Fixtures::example(),
            api_key: None,
            client_id: None,
            client_secret: None,
            token_lifetime_s: 1799,
            faults: Vec::new(),
            scb: ScbSim::default(),
        }
    }
}

/// A switch. Each stays on until [`Sim::clear`] (except `RevokeTokenOnce`, spent on use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Verify routes answer this status with an error envelope.
    Status(u16),
    /// Verify routes wait this long before answering.
    Latency(Duration),
    /// Issued tokens say they live this many seconds.
    TokenLifetime(u64),
    /// The next API call bearing a token gets 401, and every issued token is revoked.
    RevokeTokenOnce,
    /// The token endpoint answers this status.
    TokenStatus(u16),
    /// 200 with a body that is not JSON.
    Malformed,
    /// The body breaks off halfway (declared length longer than what is sent).
    Truncated,
    /// The slip returned carries another transRef / transactionId than asked.
    OtherReference,
    /// The slip returned names another sending bank.
    OtherBank,
    /// Verify routes wait until [`Sim::release`] (tests of concurrency caps).
    Hold,
    /// The KBank route answers HTTP 200 with this `statusCode` (e.g. `6501`, `8404`).
    KBankCode(String),
    /// The KBank route answers its first fixture whatever is asked (the real sandbox does).
    KBankFixed,
}

impl Fault {
    /// `status=503`, `latency_ms=2000`, `token_lifetime=30`, `revoke`, `token_status=500`,
    /// `malformed`, `truncated`, `other_reference`, `other_bank`, `hold`, `kbank_code=6501`,
    /// `kbank_fixed`.
    pub fn parse(s: &str) -> Result<Self, BadFault> {
        let (k, v) = s.split_once('=').unwrap_or((s, ""));
        let num = || {
            v.parse::<u64>()
                .map_err(|_| BadFault(format!("{k} needs a number")))
        };
        let status = || {
            v.parse::<u16>()
                .ok()
                .filter(|s| (100..=999).contains(s))
                .ok_or_else(|| BadFault(format!("{k} needs an HTTP status")))
        };
        Ok(match k {
            "status" => Fault::Status(status()?),
            "latency_ms" => Fault::Latency(Duration::from_millis(num()?)),
            "token_lifetime" => Fault::TokenLifetime(num()?),
            "revoke" => Fault::RevokeTokenOnce,
            "token_status" => Fault::TokenStatus(status()?),
            "malformed" => Fault::Malformed,
            "truncated" => Fault::Truncated,
            "other_reference" => Fault::OtherReference,
            "other_bank" => Fault::OtherBank,
            "hold" => Fault::Hold,
            "kbank_code" if !v.is_empty() => Fault::KBankCode(v.to_string()),
            "kbank_fixed" => Fault::KBankFixed,
            _ => return Err(BadFault(format!("unknown fault {k}"))),
        })
    }
}

/// A `--fault` that is not one of [`Fault::parse`]'s forms: what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFault(pub String);

impl std::fmt::Display for BadFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadFault {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    Bank,
    Wallet,
    Token,
    Info,
    KBank,
    /// SCB `POST /v1/oauth/token`.
    ScbToken,
    /// SCB `GET /v1/payment/billpayment/transactions/{transRef}`.
    ScbVerify,
}

/// One counter per [`Route`] variant.
const ROUTES: usize = 7;

#[derive(Debug, Default)]
struct Switches {
    status: Option<u16>,
    latency: Option<Duration>,
    token_lifetime: Option<u64>,
    revoke_once: bool,
    token_status: Option<u16>,
    malformed: bool,
    truncated: bool,
    other_reference: bool,
    other_bank: bool,
    kbank_code: Option<String>,
    kbank_fixed: bool,
}

struct Shared {
    config: SimConfig,
    switches: Mutex<Switches>,
    hold: watch::Sender<bool>,
    counts: [AtomicU64; ROUTES],
    arrived: Notify,
    live_tokens: Mutex<HashSet<String>>,
    issued: AtomicU64,
    /// HTTPS mode: [accepted with a client certificate, refused].
    handshakes: [AtomicU64; 2],
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// The token route's switches: a forced status, and a lifetime other than the configured.
    fn token_switches(&self) -> (Option<u16>, Option<u64>) {
        let s = lock(&self.switches);
        (s.token_status, s.token_lifetime)
    }

    /// Whether a client id and secret are accepted: both given, and equal to the configured
    /// ones where there are any.
    fn accepts(&self, id: &str, secret: &str) -> bool {
        let (want_id, want_secret) = (&self.config.client_id, &self.config.client_secret);
        !id.is_empty()
            && !secret.is_empty()
            && want_id.as_deref().is_none_or(|c| c == id)
            && want_secret.as_deref().is_none_or(|c| c == secret)
    }

    fn apply(&self, f: Fault) {
        let mut s = lock(&self.switches);
        match f {
            Fault::Status(c) => s.status = Some(c),
            Fault::Latency(d) => s.latency = Some(d),
            Fault::TokenLifetime(l) => s.token_lifetime = Some(l),
            Fault::RevokeTokenOnce => s.revoke_once = true,
            Fault::TokenStatus(c) => s.token_status = Some(c),
            Fault::Malformed => s.malformed = true,
            Fault::Truncated => s.truncated = true,
            Fault::OtherReference => s.other_reference = true,
            Fault::OtherBank => s.other_bank = true,
            Fault::Hold => {
                self.hold.send_replace(true);
            }
            Fault::KBankCode(c) => s.kbank_code = Some(c),
            Fault::KBankFixed => s.kbank_fixed = true,
        }
    }

    fn count(&self, r: Route) {
        self.counts[r as usize].fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_waiters();
    }
}

/// A running simulator; stops when dropped.
pub struct Sim {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
    https: bool,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Sim {
    /// Serve on `127.0.0.1:0`.
    pub async fn start(config: SimConfig) -> std::io::Result<Sim> {
        Self::start_on(config, SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// The example fixtures on `127.0.0.1:0`, demanding the API key [`TEST_KEY`]: the
    /// simulator the connector tests point a keyed connector at.
    pub async fn start_keyed() -> Sim {
        let config = SimConfig {
            api_key: Some(TEST_KEY.into()),
            ..SimConfig::default()
        };
        Self::start(config).await.expect("simulator starts")
    }

    pub async fn start_on(config: SimConfig, addr: SocketAddr) -> std::io::Result<Sim> {
        Self::serve(config, addr, None).await
    }

    /// Serve HTTPS on `127.0.0.1:0`, **requiring** a client certificate signed by the test
    /// client CA (KBank production's two-way TLS, banks.md 1.3). Returns the PEMs a client
    /// needs; connect to `https://localhost:PORT` ([`Sim::base_url`]).
    pub async fn start_https(config: SimConfig) -> std::io::Result<(Sim, SimPki)> {
        Self::start_https_on(config, SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    pub async fn start_https_on(
        config: SimConfig,
        addr: SocketAddr,
    ) -> std::io::Result<(Sim, SimPki)> {
        let (pki, server) = tls::generate().map_err(std::io::Error::other)?;
        let sim = Self::serve(config, addr, Some(server)).await?;
        Ok((sim, pki))
    }

    async fn serve(
        config: SimConfig,
        addr: SocketAddr,
        tls: Option<rustls::ServerConfig>,
    ) -> std::io::Result<Sim> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let https = tls.is_some();
        let faults = config.faults.clone();
        let shared = Arc::new(Shared {
            config,
            switches: Mutex::new(Switches::default()),
            hold: watch::channel(false).0,
            counts: Default::default(),
            arrived: Notify::new(),
            live_tokens: Mutex::new(HashSet::new()),
            issued: AtomicU64::new(0),
            handshakes: Default::default(),
        });
        for f in faults {
            shared.apply(f);
        }
        let app = Router::new()
            .route("/v2/verify/bank", post(verify_bank))
            .route("/v2/verify/truewallet", post(verify_wallet))
            .route("/v2/info", get(info))
            .route("/v2/oauth/token", post(token))
            .route("/oauth/token", post(token))
            .route(KBANK_VERIFY, post(verify_kbank))
            .merge(scb::routes())
            .with_state(shared.clone());
        let task = match tls {
            None => tokio::spawn(async move {
                if let Err(e) = axum::serve(listener, app).await {
                    tracing::error!(error = %e, "simulator stopped");
                }
            }),
            Some(config) => {
                // The verifier refuses handshakes without a certificate, so every accepted
                // one presented a certificate signed by the client CA.
                let counted = shared.clone();
                let listener = TlsListener::new(listener, config, move |presented| {
                    let i = if presented { 0 } else { 1 };
                    counted.handshakes[i].fetch_add(1, Ordering::SeqCst);
                    counted.arrived.notify_waiters();
                });
                tokio::spawn(async move {
                    if let Err(e) = axum::serve(listener, app).await {
                        tracing::error!(error = %e, "simulator stopped");
                    }
                })
            }
        };
        Ok(Sim {
            addr,
            shared,
            task,
            https,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (or `https://localhost:PORT` in HTTPS mode, the name the
    /// server certificate carries), the `base_url` to configure.
    pub fn base_url(&self) -> String {
        if self.https {
            format!("https://localhost:{}", self.addr.port())
        } else {
            format!("http://{}", self.addr)
        }
    }

    /// HTTPS mode: handshakes completed with a client certificate (every accepted one: the
    /// server requires it), and handshakes refused (no certificate, or not ours).
    pub fn tls_handshakes(&self) -> (u64, u64) {
        (
            self.shared.handshakes[0].load(Ordering::SeqCst),
            self.shared.handshakes[1].load(Ordering::SeqCst),
        )
    }

    pub fn set(&self, f: Fault) {
        self.shared.apply(f);
    }

    /// Every switch off; held requests are let go.
    pub fn clear(&self) {
        *lock(&self.shared.switches) = Switches::default();
        self.release();
    }

    /// Let requests waiting on [`Fault::Hold`] go on, and stop holding new ones.
    pub fn release(&self) {
        self.shared.hold.send_replace(false);
    }

    pub fn calls(&self, r: Route) -> u64 {
        self.shared.counts[r as usize].load(Ordering::SeqCst)
    }

    /// Wait (without polling) until `r` has been called at least `n` times.
    pub async fn wait_calls(&self, r: Route, n: u64) {
        loop {
            let notified = self.shared.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.calls(r) >= n {
                return;
            }
            notified.await;
        }
    }

    /// Tokens issued so far.
    pub fn tokens_issued(&self) -> u64 {
        self.shared.issued.load(Ordering::SeqCst)
    }
}

/// Test PKI of the HTTPS mode, all PEM.
#[derive(Clone)]
pub struct SimPki {
    /// The root that signed the server's certificate: the client's extra trusted root.
    pub ca_pem: String,
    /// A client certificate the server accepts, and its key.
    pub client_cert_pem: String,
    pub client_key_pem: String,
    /// A self-signed client certificate the server refuses, and its key.
    pub stranger_cert_pem: String,
    pub stranger_key_pem: String,
}

// Holds private keys (test ones, but the habit matters).
impl std::fmt::Debug for SimPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimPki").finish_non_exhaustive()
    }
}

mod tls {
    use super::SimPki;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use std::sync::Arc;

    fn ca(name: &str) -> Result<(rcgen::Certificate, KeyPair), rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut p = CertificateParams::new(Vec::<String>::new())?;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(rcgen::DnType::CommonName, name.to_string());
        let cert = p.self_signed(&key)?;
        Ok((cert, key))
    }

    /// A server CA and leaf for `localhost`/`127.0.0.1`, a client CA and a client leaf, and
    /// a stranger (self-signed) client; the server config requires a client certificate.
    pub(super) fn generate() -> anyhow::Result<(SimPki, rustls::ServerConfig)> {
        let (server_ca, server_ca_key) = ca("sim server CA")?;
        let leaf_key = KeyPair::generate()?;
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?
            .signed_by(&leaf_key, &server_ca, &server_ca_key)?;
        let (client_ca, client_ca_key) = ca("sim client CA")?;
        let client_key = KeyPair::generate()?;
        let client = CertificateParams::new(vec!["slipverify-client".to_owned()])?.signed_by(
            &client_key,
            &client_ca,
            &client_ca_key,
        )?;
        let stranger_key = KeyPair::generate()?;
        let stranger =
            CertificateParams::new(vec!["stranger".to_owned()])?.self_signed(&stranger_key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from(client_ca.der().to_vec()))?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()?;
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![CertificateDer::from(leaf.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der())),
            )?;
        Ok((
            SimPki {
                ca_pem: server_ca.pem(),
                client_cert_pem: client.pem(),
                client_key_pem: client_key.serialize_pem(),
                stranger_cert_pem: stranger.pem(),
                stranger_key_pem: stranger_key.serialize_pem(),
            },
            config,
        ))
    }
}

/// A TLS listener for `axum::serve`: handshakes happen in `accept`, and `on_handshake` hears
/// each one: `true` for a completed handshake that presented a client certificate, `false`
/// for any other (failed, or completed without one). Connections whose handshake fails are
/// dropped and `accept` waits for the next.
pub struct TlsListener<F> {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    on_handshake: F,
}

impl<F: FnMut(bool) + Send + 'static> TlsListener<F> {
    pub fn new(
        tcp: tokio::net::TcpListener,
        config: rustls::ServerConfig,
        on_handshake: F,
    ) -> Self {
        TlsListener {
            tcp,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            on_handshake,
        }
    }
}

impl<F: FnMut(bool) + Send + 'static> axum::serve::Listener for TlsListener<F> {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, peer)) = self.tcp.accept().await else {
                continue;
            };
            match self.acceptor.accept(tcp).await {
                Ok(tls) => {
                    (self.on_handshake)(tls.get_ref().1.peer_certificates().is_some());
                    return (tls, peer);
                }
                Err(_) => (self.on_handshake)(false),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

fn envelope_error(status: u16, code: &str) -> Response {
    let s = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        s,
        axum::Json(json!({"success": false, "error": {"code": code, "message": code}})),
    )
        .into_response()
}

/// `None` when the caller may go on, else the 401 to send.
fn authorize(sh: &Shared, headers: &HeaderMap) -> Option<Response> {
    let Some(bearer) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return Some(envelope_error(401, "MISSING_API_KEY"));
    };
    if bearer.starts_with("simtok-") {
        let mut sw = lock(&sh.switches);
        let mut live = lock(&sh.live_tokens);
        if sw.revoke_once {
            sw.revoke_once = false;
            live.clear();
        }
        return (!live.contains(bearer)).then(|| envelope_error(401, "INVALID_API_KEY"));
    }
    match &sh.config.api_key {
        Some(k) if k != bearer => Some(envelope_error(401, "INVALID_API_KEY")),
        _ => None,
    }
}

/// Faults every verify route shares, in the order a real server would meet them.
async fn before_answer(sh: &Shared, headers: &HeaderMap) -> Option<Response> {
    let mut held = sh.hold.subscribe();
    // Err only if the sender is gone, which cannot happen while `sh` lives.
    let _ = held.wait_for(|h| !*h).await;
    let latency = lock(&sh.switches).latency;
    if let Some(d) = latency {
        tokio::time::sleep(d).await;
    }
    if let Some(r) = authorize(sh, headers) {
        return Some(r);
    }
    let status = lock(&sh.switches).status;
    if let Some(s) = status {
        let code = if s == 429 {
            "RATE_LIMIT_EXCEEDED"
        } else {
            "API_SERVER_ERROR"
        };
        return Some(envelope_error(s, code));
    }
    None
}

/// The success body, honouring the malformed and truncated switches.
fn answer(sh: &Shared, data: Value) -> Response {
    let body = json!({"success": true, "message": "Slip verified", "data": data}).to_string();
    answer_body(sh, body)
}

/// A 200 with `body`, honouring the malformed and truncated switches.
pub(crate) fn answer_body(sh: &Shared, body: String) -> Response {
    let (malformed, truncated) = {
        let s = lock(&sh.switches);
        (s.malformed, s.truncated)
    };
    if malformed {
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            "<html>upstream proxy error</html>",
        )
            .into_response();
    }
    if truncated {
        return scb::cut_off(body);
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn payload_of(body: &Bytes) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    v.get("payload")?.as_str().map(str::to_owned)
}

/// The start of an EasySlip-style verification: counted, the switched faults, then the body's
/// `payload` (else `VALIDATION_ERROR`).
async fn payload_request(
    sh: &Shared,
    route: Route,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<String, Response> {
    sh.count(route);
    if let Some(r) = before_answer(sh, headers).await {
        return Err(r);
    }
    payload_of(body).ok_or_else(|| envelope_error(400, "VALIDATION_ERROR"))
}

fn amount_of(slip: &Value, pointer: &str) -> f64 {
    slip.pointer(pointer).and_then(Value::as_f64).unwrap_or(0.0)
}

async fn verify_bank(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let payload = match payload_request(&sh, Route::Bank, &headers, &body).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let parsed = slip_qr::parse_bank_slip(&payload).ok();
    let found = sh.config.fixtures.bank.iter().find(|s| {
        s.get("payload").and_then(Value::as_str) == Some(payload.as_str())
            || parsed.as_ref().is_some_and(|p| {
                s.get("transRef").and_then(Value::as_str) == Some(p.trans_ref.as_str())
                    && s.pointer("/sender/bank/id").and_then(Value::as_str)
                        == Some(p.sending_bank.as_str())
            })
    });
    let Some(slip) = found else {
        let pending = parsed
            .as_ref()
            .is_some_and(|p| sh.config.fixtures.pending.contains(&p.trans_ref));
        return if pending {
            envelope_error(404, "SLIP_PENDING")
        } else {
            envelope_error(404, "SLIP_NOT_FOUND")
        };
    };
    let mut slip = slip.clone();
    {
        let s = lock(&sh.switches);
        if s.other_reference {
            let r = slip.get("transRef").and_then(Value::as_str).unwrap_or("");
            let other = format!("{r}X");
            slip["transRef"] = Value::String(other);
        }
        if s.other_bank {
            slip["sender"]["bank"]["id"] = Value::String("999".into());
        }
    }
    let amount = amount_of(&slip, "/amount/amount");
    answer(
        &sh,
        json!({"remark": "", "isDuplicate": false, "amountInSlip": amount,
               "isAmountMatched": true, "mismatches": [], "rawSlip": slip}),
    )
}

/// KBank's verify path (banks.md 1.3).
pub const KBANK_VERIFY: &str = "/v1/verslip/kbank/verify";

/// KBank verslip: `{"rqUID", "rqDt", "data": {"sendingBank", "transRef"}}` → HTTP 200 with
/// `statusCode` `0000` and the fixture's `data`, or `8404` when no fixture matches.
async fn verify_kbank(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    sh.count(Route::KBank);
    if let Some(r) = before_answer(&sh, &headers).await {
        return r;
    }
    let req: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let field = |k: &str| req.pointer(&format!("/data/{k}")).and_then(Value::as_str);
    let (Some(bank), Some(r), Some(rq_uid)) = (
        field("sendingBank"),
        field("transRef"),
        req.get("rqUID").and_then(Value::as_str),
    ) else {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"status": {"code": "8400", "message": "Bad Request"}})),
        )
            .into_response();
    };
    let envelope = |code: &str, message: &str, data: Option<Value>| {
        let mut v = json!({"rqUID": rq_uid, "kbankTxnId": "rrt-sim", "statusCode": code,
                           "statusMessage": message});
        if let Some(d) = data {
            v["data"] = d;
        }
        v.to_string()
    };
    let (code, fixed, other_ref, other_bank) = {
        let s = lock(&sh.switches);
        (
            s.kbank_code.clone(),
            s.kbank_fixed,
            s.other_reference,
            s.other_bank,
        )
    };
    if let Some(c) = code {
        return answer_body(&sh, envelope(&c, "SIMULATED", None));
    }
    let kb = &sh.config.fixtures.kbank;
    let found = if fixed {
        kb.first()
    } else {
        kb.iter().find(|d| {
            d.get("transRef").and_then(Value::as_str) == Some(r)
                && d.get("sendingBank").and_then(Value::as_str) == Some(bank)
        })
    };
    let Some(data) = found else {
        return answer_body(
            &sh,
            envelope("8404", "Transaction Reference does not exist", None),
        );
    };
    let mut data = data.clone();
    if other_ref {
        data["transRef"] = Value::String(format!("{r}X"));
    }
    if other_bank {
        data["sendingBank"] = Value::String("999".into());
    }
    answer_body(&sh, envelope("0000", "SUCCESS", Some(data)))
}

async fn verify_wallet(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let payload = match payload_request(&sh, Route::Wallet, &headers, &body).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let id = match slip_qr::classify(&payload) {
        Ok(slip_qr::ParsedQr::TrueMoneySlip(t)) => Some(t.transaction_id),
        _ => None,
    };
    let found = sh.config.fixtures.truewallet.iter().find(|s| {
        s.get("payload").and_then(Value::as_str) == Some(payload.as_str())
            || id
                .as_deref()
                .is_some_and(|id| s.get("transactionId").and_then(Value::as_str) == Some(id))
    });
    let Some(slip) = found else {
        return envelope_error(404, "SLIP_NOT_FOUND");
    };
    let mut slip = slip.clone();
    if lock(&sh.switches).other_reference {
        let other = format!("{}9", text_at(&slip, "/transactionId"));
        slip["transactionId"] = Value::String(other);
    }
    let amount = amount_of(&slip, "/amount");
    answer(
        &sh,
        json!({"remark": "", "isDuplicate": false, "amountInSlip": amount,
               "isAmountMatched": true, "mismatches": [], "rawSlip": slip}),
    )
}

async fn info(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    sh.count(Route::Info);
    if let Some(r) = authorize(&sh, &headers) {
        return r;
    }
    axum::Json(json!({"success": true, "data": {"application": {"name": "simulator"}}}))
        .into_response()
}

/// Client id and secret from Basic auth or from form fields (both styles are in use).
fn client_credentials(headers: &HeaderMap, body: &Bytes) -> Option<(String, String)> {
    if let Some(basic) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        let raw = base64::engine::general_purpose::STANDARD
            .decode(basic.trim())
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        let (id, secret) = text.split_once(':')?;
        return Some((id.to_owned(), secret.to_owned()));
    }
    let text = std::str::from_utf8(body).ok()?;
    let field = |name: &str| {
        text.split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| form_unescape(v))
    };
    Some((field("client_id")?, field("client_secret")?))
}

fn form_unescape(v: &str) -> String {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
                {
                    Ok(x) => {
                        out.push(x);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn token(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    sh.count(Route::Token);
    let (status, lifetime) = sh.token_switches();
    if let Some(s) = status {
        let s = StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return (
            s,
            axum::Json(json!({"errorCode": "SIM", "errorDesc": "forced"})),
        )
            .into_response();
    }
    let grant_ok = std::str::from_utf8(&body)
        .ok()
        .is_some_and(|t| t.split('&').any(|kv| kv == "grant_type=client_credentials"));
    let creds = client_credentials(&headers, &body);
    let ok = grant_ok
        && creds
            .as_ref()
            .is_some_and(|(id, secret)| sh.accepts(id, secret));
    if !ok {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"errorCode": "401", "errorDesc": "invalid client"})),
        )
            .into_response();
    }
    let n = sh.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let value = format!("simtok-{n}");
    lock(&sh.live_tokens).insert(value.clone());
    let lifetime = lifetime.unwrap_or(sh.config.token_lifetime_s);
    axum::Json(json!({
        "access_token": value,
        "token_type": "BearerToken",
        "expires_in": lifetime.to_string(),
        "status": "approved",
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse() {
        assert_eq!(Fault::parse("status=503"), Ok(Fault::Status(503)));
        assert_eq!(Fault::parse("hold"), Ok(Fault::Hold));
        assert!(Fault::parse("status=x").is_err());
        assert!(Fault::parse("nope").is_err());
    }

    #[test]
    fn example_fixtures_get_payloads() {
        let f = Fixtures::example();
        assert!(!f.bank.is_empty());
        for s in &f.bank {
            let p = s["payload"].as_str().unwrap_or("");
            let parsed = slip_qr::parse_bank_slip(p).expect("valid payload");
            assert_eq!(Some(parsed.trans_ref.as_str()), s["transRef"].as_str());
        }
    }

    #[test]
    fn form_unescape_reads_percent() {
        assert_eq!(form_unescape("a+b%26c"), "a b&c");
        assert_eq!(form_unescape("100%"), "100%");
    }
}
