//! `egress`: the one place where slipverify makes outbound HTTP requests on a
//! stranger's behalf (slip image URLs today, webhooks later).
//!
//! # Why
//! Any URL a client hands us is an invitation to make *our* server talk to
//! something. Without care that is server-side request forgery (SSRF): a URL
//! such as `http://169.254.169.254/latest/meta-data/` or `http://10.0.0.5:5432/`
//! would turn the service into a door into the operator's network. Every
//! outbound request on a stranger's behalf must therefore go through
//! [`Egress`], never through a bare `reqwest::Client`.
//!
//! # Rules
//! * **Schemes**: only `http` and `https`; anything else (`ftp`, `file`,
//!   `gopher`, `data`, `javascript`, no scheme) is
//!   [`EgressError::ProtocolNotAllowed`]. URLs carrying userinfo
//!   (`http://user:pass@host/`) or lacking a host are [`EgressError::InvalidUrl`].
//! * **Addresses**: every address a host resolves to must be public (see
//!   [`is_public`]): no loopback, private, link-local, CGNAT, multicast,
//!   broadcast, unspecified, reserved, documentation, benchmarking, unique- or
//!   site-local, discard or Teredo/ORCHID ranges, and IPv4-mapped, NAT64 and
//!   6to4 addresses are judged by the IPv4 address they embed. If **any**
//!   resolved address is non-public the request is refused with
//!   [`EgressError::InvalidIpRange`]; we never "pick the good one", so a DNS
//!   name cannot mix a public decoy with an internal target.
//! * **No DNS-rebinding gap**: hostnames are resolved by our own resolver
//!   (installed with `reqwest::ClientBuilder::dns_resolver`), which vets the
//!   addresses and hands only those to the connector, so the address checked is
//!   the address dialled ([`Egress::with_lookup`] swaps only the lookup under
//!   that vetting, so tests can script DNS answers such as a rebinding name;
//!   `tests/rebinding.rs`). IP-literal hosts skip any resolver, so they are checked
//!   before the request is sent, and again on every redirect hop. Alternative
//!   spellings of IPv4 (`http://2130706433/`, `http://0177.0.0.1/`,
//!   `http://0x7f.0.0.1/`, `http://127.1/`) are normalised to dotted quads by the
//!   WHATWG URL parser (the `url` crate) for special schemes, so they are caught
//!   by the same IP-literal check.
//! * **Proxies**: environment proxies (`HTTP_PROXY` …) are ignored, since a
//!   proxy would do the resolution for us and bypass the checks.
//! * **Redirects**: [`Egress::get_limited`] follows at most
//!   [`EgressConfig::max_redirects`] (default 3) hops; each hop's scheme,
//!   userinfo and IP literal are re-checked, hostname hops go through the
//!   vetting resolver. [`Egress::post_bytes`] never follows redirects.
//! * **Limits**: connect timeout (default 3 s), total timeout (default 10 s),
//!   and a body cap enforced while streaming (a declared `Content-Length` over
//!   the cap is refused before reading; otherwise we stop reading as soon as
//!   the cap is crossed and never buffer more than the cap plus one chunk).
//! * **Dev/test escape hatches** (both off by default, loudly logged when set):
//!   [`EgressConfig::allow_cidrs`] (`egress.allow_cidrs`) lets listed
//!   ranges pass even though non-public (how tests reach `127.0.0.1`), and
//!   [`EgressConfig::extra_root_ca_pem`] (`egress.ca_file`) trusts an
//!   extra root CA in addition to the built-in web PKI roots.
//!
//! # Error mapping (wired by the API layer)
//! | [`EgressError`] | API error code |
//! | --- | --- |
//! | `ProtocolNotAllowed` | `URL_PROTOCOL_NOT_ALLOWED` |
//! | `InvalidIpRange` | `URL_INVALID_IP_RANGE` |
//! | `InvalidUrl` | the API's generic request-validation error (unparseable URL, no host, userinfo) |
//! | `Unreachable(_)`, `Timeout`, `Status(_)`, `TooManyRedirects` | `IMAGE_URL_UNREACHABLE` |
//! | `TooLarge` | `IMAGE_SIZE_TOO_LARGE` |
//! | `Setup(_)` | internal error (client construction or a bad header supplied by our own code) |

mod ip;
pub mod operator;

pub use ip::is_public;

use std::error::Error as StdError;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Configuration for [`Egress`]. Build it with [`EgressConfig::default`] or
/// [`EgressConfig::with_allowances`] and adjust fields as needed.
#[derive(Clone, Debug)]
pub struct EgressConfig {
    /// Dev/test only: ranges allowed even though they are not public.
    /// Empty in production.
    pub allow_cidrs: Vec<IpNet>,
    /// Dev/test only: an extra trusted root CA (PEM), in addition to the
    /// built-in web PKI roots.
    pub extra_root_ca_pem: Option<Vec<u8>>,
    /// TCP connect timeout (default 3 s).
    pub connect_timeout: Duration,
    /// Whole-request timeout, body included (default 10 s).
    pub total_timeout: Duration,
    /// Redirect hops [`Egress::get_limited`] follows (default 3).
    pub max_redirects: usize,
    /// `User-Agent` sent on every request.
    pub user_agent: String,
}

impl Default for EgressConfig {
    fn default() -> Self {
        Self {
            allow_cidrs: Vec::new(),
            extra_root_ca_pem: None,
            connect_timeout: Duration::from_secs(3),
            total_timeout: Duration::from_secs(10),
            max_redirects: 3,
            user_agent: concat!("slipverify-egress/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

impl EgressConfig {
    /// Defaults, plus the dev/test escape hatches (`egress.allow_cidrs` and `egress.ca_file`
    /// in the configuration), each logged with `tracing::warn!` when set.
    pub fn with_allowances(
        allow_cidrs: &[IpNet],
        ca_file: Option<&Path>,
    ) -> Result<Self, SetupError> {
        let mut cfg = Self::default();
        if !allow_cidrs.is_empty() {
            cfg.allow_cidrs = allow_cidrs.to_vec();
            tracing::warn!(
                cidrs = ?allow_cidrs,
                "egress.allow_cidrs is set: outbound requests may reach these NON-PUBLIC ranges; \
                 never use this in production"
            );
        }
        if let Some(path) = ca_file {
            let shown = path.display();
            let ca_file = |reason: String| SetupError::CaFile {
                path: shown.to_string(),
                reason,
            };
            let pem = std::fs::read(path).map_err(|e| ca_file(e.to_string()))?;
            parse_ca_pem(&pem).map_err(ca_file)?;
            tracing::warn!(
                path = %shown,
                "egress.ca_file is set: trusting an extra root CA for outbound HTTPS; \
                 never use this in production"
            );
            cfg.extra_root_ca_pem = Some(pem);
        }
        Ok(cfg)
    }
}

/// One or more PEM certificates; at least one is required.
fn parse_ca_pem(pem: &[u8]) -> Result<Vec<reqwest::Certificate>, String> {
    let certs = reqwest::Certificate::from_pem_bundle(pem)
        .map_err(|e| format!("invalid PEM certificate: {e}"))?;
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}

/// One entry of `egress.allow_cidrs`: a CIDR, or a single address.
pub fn parse_cidr(s: &str) -> Result<IpNet, SetupError> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| SetupError::Cidr(s.to_string()))
}

/// Why an operator's outbound setting (a URL, the proxy, a CIDR, a CA file, a client
/// certificate) cannot be used. Messages name the part, never a key's or secret's contents;
/// the caller prefixes the configuration key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("not a URL ({0})")]
    NotAUrl(String),
    #[error("must not carry a user name or password")]
    Credentials,
    #[error("must have a host")]
    NoHost,
    #[error("must be https unless the host is loopback")]
    PlainHttp,
    #[error("must be https unless the host is loopback (not {0}:)")]
    Scheme(String),
    #[error("must be an http:// or https:// proxy URL with a host")]
    ProxyUrl,
    #[error("not a CIDR or IP: {0:?}")]
    Cidr(String),
    #[error("egress.ca_file {path}: {reason}")]
    CaFile { path: String, reason: String },
    #[error("outbound proxy {proxy}: {reason}")]
    Proxy { proxy: String, reason: String },
    #[error("client certificate and key: not a PEM certificate and private key")]
    Identity,
    #[error("extra root CA: not a PEM certificate")]
    ExtraRoot,
    #[error("extra root CA: no certificate in the file")]
    NoExtraRoot,
    #[error("outbound client: {0}")]
    Client(String),
}

/// Why an outbound request was refused or failed. See the crate docs for the
/// mapping to API error codes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// The scheme is not `http` or `https` (or `https` was required).
    #[error("URL protocol not allowed")]
    ProtocolNotAllowed,
    /// A (resolved) address is not public.
    #[error("URL resolves to a non-public IP address")]
    InvalidIpRange,
    /// Unparseable, no host, or carries userinfo.
    #[error("invalid URL")]
    InvalidUrl,
    /// DNS failure or connect failure (the detail is for logs, never for callers' clients).
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// No complete answer within the time allowed.
    #[error("timed out")]
    Timeout,
    /// The server answered with a status that is not a success (4xx, 5xx, or a 3xx that
    /// was not followed).
    #[error("HTTP {0}")]
    Status(u16),
    /// The body exceeded the caller's limit.
    #[error("response body too large")]
    TooLarge,
    /// More redirects than [`EgressConfig::max_redirects`].
    #[error("too many redirects")]
    TooManyRedirects,
    /// The client could not be built (bad CA PEM, TLS backend failure).
    #[error("egress client setup: {0}")]
    Setup(String),
}

/// A fetched body.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// The body, at most the requested number of bytes.
    pub body: Vec<u8>,
    /// The `Content-Type` header, if present and valid text.
    pub content_type: Option<String>,
    /// The URL finally answered (after redirects).
    pub final_url: String,
}

/// A host-name lookup: host → addresses (the port is the URL's, added by the
/// connector). See [`Egress::with_lookup`].
pub type Lookup = Arc<
    dyn Fn(&str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>
        + Send
        + Sync,
>;

/// The refusal rules shared by the pre-flight checks, the redirect policy and
/// the resolver.
struct Guard {
    allow_cidrs: Vec<IpNet>,
    /// `None`: the system resolver (production). `Some`: a lookup installed
    /// with [`Egress::with_lookup`] (tests simulating DNS answers).
    lookup: Option<Lookup>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("allow_cidrs", &self.allow_cidrs)
            .field("custom_lookup", &self.lookup.is_some())
            .finish()
    }
}

impl Guard {
    fn ip_allowed(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allow_cidrs.iter().any(|n| n.contains(&ip))
    }

    /// Scheme, userinfo, host presence, and IP-literal host.
    fn check_static(&self, url: &Url) -> Result<(), EgressError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(EgressError::ProtocolNotAllowed);
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(EgressError::InvalidUrl);
        }
        match url.host() {
            None => Err(EgressError::InvalidUrl),
            Some(Host::Domain("")) => Err(EgressError::InvalidUrl),
            Some(Host::Domain(_)) => Ok(()),
            Some(Host::Ipv4(v4)) => self.check_ip(IpAddr::V4(v4)),
            Some(Host::Ipv6(v6)) => self.check_ip(IpAddr::V6(v6)),
        }
    }

    fn check_ip(&self, ip: IpAddr) -> Result<(), EgressError> {
        if self.ip_allowed(ip) {
            Ok(())
        } else {
            Err(EgressError::InvalidIpRange)
        }
    }

    /// Resolve `host` and vet every address; all must pass.
    async fn resolve(&self, host: &str) -> Result<Vec<SocketAddr>, EgressError> {
        let dns_err = |e: std::io::Error| EgressError::Unreachable(format!("dns: {e}"));
        let addrs: Vec<SocketAddr> = match &self.lookup {
            None => tokio::net::lookup_host((host, 0))
                .await
                .map_err(dns_err)?
                .collect(),
            Some(lookup) => lookup(host)
                .await
                .map_err(dns_err)?
                .into_iter()
                .map(|ip| SocketAddr::new(ip, 0))
                .collect(),
        };
        if addrs.is_empty() {
            return Err(EgressError::Unreachable("dns: no addresses".into()));
        }
        if let Some(bad) = addrs.iter().find(|a| !self.ip_allowed(a.ip())) {
            tracing::warn!(host, addr = %bad.ip(), "egress refused: host resolves to a non-public address");
            return Err(EgressError::InvalidIpRange);
        }
        Ok(addrs)
    }
}

/// Carries an [`EgressError`] through reqwest's boxed error chain so it can be
/// recovered on the other side.
#[derive(Debug)]
struct Refusal(EgressError);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl StdError for Refusal {}

/// reqwest resolver that only ever yields vetted addresses.
struct VettingResolver(Arc<Guard>);

impl Resolve for VettingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.0.clone();
        Box::pin(async move {
            let addrs = guard.resolve(name.as_str()).await.map_err(Refusal)?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Outbound HTTP client with SSRF protection. Built once; cheap to clone.
#[derive(Clone, Debug)]
pub struct Egress {
    guard: Arc<Guard>,
    /// Follows redirects under the vetting policy.
    follow: reqwest::Client,
    /// Never follows redirects.
    no_follow: reqwest::Client,
}

impl Egress {
    /// Builds the clients. Fails only on a bad extra CA or TLS setup error.
    pub fn new(cfg: EgressConfig) -> Result<Self, EgressError> {
        Self::build(cfg, None)
    }

    /// Like [`Egress::new`], but host names are looked up with `lookup`
    /// instead of the system resolver. The answers go through exactly the same
    /// vetting as the system resolver's, and the vetted addresses are the only
    /// ones handed to the connector. This is the seam tests use to simulate
    /// DNS (a name resolving to a private address, DNS rebinding); production
    /// uses [`Egress::new`].
    pub fn with_lookup(cfg: EgressConfig, lookup: Lookup) -> Result<Self, EgressError> {
        Self::build(cfg, Some(lookup))
    }

    fn build(cfg: EgressConfig, lookup: Option<Lookup>) -> Result<Self, EgressError> {
        if !cfg.allow_cidrs.is_empty() {
            tracing::warn!(cidrs = ?cfg.allow_cidrs, "egress allow-list active: non-public ranges reachable");
        }
        let guard = Arc::new(Guard {
            allow_cidrs: cfg.allow_cidrs.clone(),
            lookup,
        });
        let extra_cas = match cfg.extra_root_ca_pem.as_deref() {
            Some(pem) => {
                tracing::warn!("egress trusts an extra root CA: dev/test only");
                parse_ca_pem(pem).map_err(|e| EgressError::Setup(format!("extra CA: {e}")))?
            }
            None => Vec::new(),
        };

        let builder = |policy: reqwest::redirect::Policy| {
            let mut b = reqwest::Client::builder()
                .no_proxy()
                .referer(false)
                .dns_resolver(Arc::new(VettingResolver(guard.clone())))
                .redirect(policy)
                .connect_timeout(cfg.connect_timeout)
                .timeout(cfg.total_timeout)
                .user_agent(cfg.user_agent.clone())
                // Webhook bursts deliver many jobs to one receiver: keep enough connections to
                // reuse them instead of a TLS handshake per delivery (measured: 4,400 of 5,000 with 2
                // idle connections, ~1,000 with 32; the worker runs 64 jobs at once).
                .pool_max_idle_per_host(128);
            for ca in &extra_cas {
                b = b.add_root_certificate(ca.clone());
            }
            b.build().map_err(|e| EgressError::Setup(e.to_string()))
        };

        let max = cfg.max_redirects;
        let policy_guard = guard.clone();
        let follow = builder(reqwest::redirect::Policy::custom(move |attempt| {
            // `previous` holds the initial URL plus every hop already taken.
            if attempt.previous().len() > max {
                return attempt.error(Refusal(EgressError::TooManyRedirects));
            }
            match policy_guard.check_static(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(e) => {
                    tracing::warn!(to = %attempt.url(), error = %e, "egress refused redirect");
                    attempt.error(Refusal(e))
                }
            }
        }))?;
        let no_follow = builder(reqwest::redirect::Policy::none())?;
        Ok(Self {
            guard,
            follow,
            no_follow,
        })
    }

    fn parse(&self, url: &str) -> Result<Url, EgressError> {
        let parsed = Url::parse(url.trim()).map_err(|e| match e {
            // "foo.com/x" and friends: no scheme at all.
            url::ParseError::RelativeUrlWithoutBase => EgressError::ProtocolNotAllowed,
            _ => EgressError::InvalidUrl,
        })?;
        self.guard.check_static(&parsed)?;
        Ok(parsed)
    }

    /// GETs `url`, following at most `max_redirects` redirects (each re-checked),
    /// and reads at most `max_bytes` of body, enforced while streaming.
    /// A 4xx/5xx answer is [`EgressError::Status`].
    pub async fn get_limited(&self, url: &str, max_bytes: usize) -> Result<Fetched, EgressError> {
        let url = self.parse(url)?;
        let mut resp = self.follow.get(url).send().await.map_err(map_reqwest)?;
        let status = resp.status();
        if status.is_redirection() {
            // Only reached when reqwest declined to follow (e.g. no Location,
            // or a non-http(s) target).
            return Err(EgressError::Status(status.as_u16()));
        }
        if !status.is_success() {
            return Err(EgressError::Status(status.as_u16()));
        }
        if resp.content_length().is_some_and(|n| n > max_bytes as u64) {
            return Err(EgressError::TooLarge);
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let final_url = resp.url().to_string();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(map_reqwest)? {
            if body.len() + chunk.len() > max_bytes {
                return Err(EgressError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Fetched {
            body,
            content_type,
            final_url,
        })
    }

    /// POSTs `body` (exact bytes, `Content-Type: application/json` unless a
    /// header overrides it) with extra `headers`; never follows redirects.
    /// Returns the status code of whatever answered (including 3xx/4xx/5xx).
    pub async fn post_bytes(
        &self,
        url: &str,
        body: Vec<u8>,
        headers: &[(&str, String)],
        timeout: Duration,
    ) -> Result<u16, EgressError> {
        let url = self.parse(url)?;
        let mut map = reqwest::header::HeaderMap::new();
        map.insert(
            reqwest::header::CONTENT_TYPE,
            reqwest::header::HeaderValue::from_static("application/json"),
        );
        for (name, value) in headers {
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| EgressError::Setup(format!("header name {name:?}: {e}")))?;
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|e| EgressError::Setup(format!("header {name}: {e}")))?;
            map.insert(name, value);
        }
        let resp = self
            .no_follow
            .post(url)
            .timeout(timeout)
            .headers(map)
            .body(body)
            .send()
            .await
            .map_err(map_reqwest)?;
        Ok(resp.status().as_u16())
    }

    /// Checks a URL without fetching it: scheme (`https` only when
    /// `require_https`), userinfo, host, and every resolved address.
    pub async fn check_url(&self, url: &str, require_https: bool) -> Result<(), EgressError> {
        let parsed = self.parse(url)?;
        if require_https && parsed.scheme() != "https" {
            return Err(EgressError::ProtocolNotAllowed);
        }
        if let Some(Host::Domain(d)) = parsed.host() {
            self.guard.resolve(d).await?;
        }
        Ok(())
    }
}

/// Recovers our own refusal from reqwest's error chain; everything else is
/// "unreachable".
fn map_reqwest(err: reqwest::Error) -> EgressError {
    let mut source: Option<&(dyn StdError + 'static)> = Some(&err);
    while let Some(e) = source {
        if let Some(Refusal(inner)) = e.downcast_ref::<Refusal>() {
            return inner.clone();
        }
        source = e.source();
    }
    if err.is_timeout() {
        return EgressError::Timeout;
    }
    let err = err.without_url();
    let mut msg = err.to_string();
    let mut source = StdError::source(&err);
    while let Some(e) = source {
        msg.push_str(": ");
        msg.push_str(&e.to_string());
        source = e.source();
    }
    EgressError::Unreachable(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowances() {
        let cfg = EgressConfig::with_allowances(&[], None).unwrap();
        assert!(cfg.allow_cidrs.is_empty());
        assert!(cfg.extra_root_ca_pem.is_none());
        assert_eq!(cfg.max_redirects, 3);

        let nets: Vec<IpNet> = ["127.0.0.1/32", " ::1 ", "10.0.0.0/8"]
            .iter()
            .map(|s| parse_cidr(s).unwrap())
            .collect();
        assert_eq!(nets[1], "::1/128".parse::<IpNet>().unwrap());
        let cfg = EgressConfig::with_allowances(&nets, None).unwrap();
        assert_eq!(cfg.allow_cidrs, nets);
        assert!(parse_cidr("nope").is_err());

        let missing = Path::new("/nonexistent/ca.pem");
        assert!(EgressConfig::with_allowances(&[], Some(missing)).is_err());
        // A file that exists but holds no certificate is refused too.
        let path = std::env::temp_dir().join(format!("egress-not-pem-{}", std::process::id()));
        std::fs::write(&path, b"not a pem").unwrap();
        let res = EgressConfig::with_allowances(&[], Some(&path));
        std::fs::remove_file(&path).unwrap();
        assert!(res.is_err());
    }
}
