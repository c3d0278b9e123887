//! Plain runtime settings, filled by the configuration crate (or by tests), and the list of
//! connector kinds.

use crate::{Connector, EasySlip, KBank, Scb};
use domain::Clock;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Upstream bodies are read up to this many bytes; more is a malformed answer.
pub const BODY_CAP: usize = 1024 * 1024;

/// A credential. Prints as `<redacted>` so specs can be logged with `{:?}`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<&str> for Secret {
    fn from(s: &str) -> Self {
        Secret::new(s)
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret::new(s)
    }
}

/// The connector kinds: the one list. `config` parses and checks `[connectors.NAME] kind` with
/// it, and the router builds each kind from it ([`Kind::connector`]), so a kind the
/// configuration accepts is one that starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Any service speaking our own v2 interface (EasySlip, Thunder, another slipverify).
    EasySlip,
    /// The built-in ledger: supplied by whoever owns it ([`crate::RouterBuilder::sandbox`]).
    Sandbox,
    /// KBank's slip verification API (verslip), OAuth client credentials, optional mTLS.
    KBank,
    /// SCB's `billpayment/transactions` API ([`crate::Scb`]).
    Scb,
}

impl Kind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [Kind; 4] = [Kind::Sandbox, Kind::EasySlip, Kind::KBank, Kind::Scb];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::EasySlip => "easyslip",
            Kind::Sandbox => "sandbox",
            Kind::KBank => "kbank",
            Kind::Scb => "scb",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// `sandbox, easyslip, kbank, scb`: for messages that list the choices.
    pub fn names() -> String {
        Self::ALL.map(Kind::as_str).join(", ")
    }

    /// The settings (`[connectors.NAME]` keys) a connector of this kind cannot work without.
    pub fn required_settings(self) -> &'static [&'static str] {
        match self {
            Kind::Sandbox => &[],
            Kind::EasySlip => &["base_url", "api_key"],
            Kind::KBank => &["base_url", "client_id", "client_secret"],
            Kind::Scb => &["base_url", "api_key", "api_secret"],
        }
    }

    /// A connector of this kind from its spec, calling out through `client`;
    /// `client_certificate`: `client` presents one (mTLS). `None` for `sandbox`, which its
    /// owner supplies: this crate holds no ledger.
    pub fn connector(
        self,
        spec: &ConnectorSpec,
        client: reqwest::Client,
        clock: Arc<dyn Clock>,
        client_certificate: bool,
    ) -> Option<Arc<dyn Connector>> {
        Some(match self {
            Kind::Sandbox => return None,
            Kind::EasySlip => Arc::new(EasySlip::new(spec, client, clock)),
            Kind::Scb => Arc::new(Scb::new(spec, client, clock)),
            Kind::KBank => Arc::new(KBank::new(spec, client, clock, client_certificate)),
        })
    }
}

/// How the client id and secret travel in an OAuth client-credentials token request.
/// KBank documents Basic (banks.md 1.2, [S]); some gateways want form fields instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// `Authorization: Basic base64(id:secret)`, body `grant_type=client_credentials`.
    #[default]
    Basic,
    /// Body `grant_type=client_credentials&client_id=..&client_secret=..`.
    Form,
}

/// Where and how to get a token. Only used when the spec has a client id and secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenSpec {
    /// Appended to `base_url`. KBank: `/v2/oauth/token` by most sources, `/oauth/token` by one
    /// (banks.md 1.2, [U]) — hence a setting.
    pub path: String,
    pub client_auth: ClientAuth,
    /// Sent with every token request (KBank's sandbox wants `x-test-mode`, `env-id`).
    pub headers: Vec<(String, String)>,
}

impl Default for TokenSpec {
    fn default() -> Self {
        Self {
            path: "/v2/oauth/token".into(),
            client_auth: ClientAuth::Basic,
            headers: Vec::new(),
        }
    }
}

/// One upstream source as the operator configured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectorSpec {
    pub name: String,
    pub kind: Kind,
    /// Paths are appended: `https://x/api` + `/v2/verify/bank`.
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub client_id: Option<String>,
    pub client_secret: Option<Secret>,
    pub token: TokenSpec,
    /// Bounds one whole lookup (token request and one retry included).
    pub timeout: Duration,
    /// Lookups in flight at once; one more is refused (unavailable), not queued.
    pub max_concurrency: usize,
    /// Consecutive failures that open the breaker.
    pub breaker_failures: u32,
    pub breaker_cooldown: Duration,
    /// SCB's API secret (its token request's `applicationSecret`).
    pub api_secret: Option<Secret>,
    /// Bank-API status codes that mean "no such transfer" (KBank default `["8404"]`); every
    /// other non-success code is unavailable, so a genuine payment is never refused on a guess.
    pub not_found_codes: Vec<String>,
    /// Accept an answer about another reference than asked (KBank's sandbox answers one fixed
    /// fixture). Never for production: it turns off the router's mismatch check.
    pub sandbox_fixture: bool,
    /// Sent with every verify request (KBank's sandbox: `x-test-mode: true`, maybe `env-id`).
    pub headers: Vec<(String, String)>,
}

impl ConnectorSpec {
    /// A spec with the documented defaults: 5 s timeout, 16 in flight, breaker after 5
    /// consecutive failures for 30 s.
    pub fn new(name: impl Into<String>, kind: Kind, base_url: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            kind,
            base_url: base_url.into(),
            api_key: None,
            client_id: None,
            client_secret: None,
            token: TokenSpec::default(),
            timeout: Duration::from_secs(5),
            max_concurrency: 16,
            breaker_failures: 5,
            breaker_cooldown: Duration::from_secs(30),
            api_secret: None,
            // banks.md 1.5: ITMX "Transaction Reference does not exist" [U for verslip].
            not_found_codes: match kind {
                Kind::KBank => vec!["8404".into()],
                _ => Vec::new(),
            },
            sandbox_fixture: false,
            headers: Vec::new(),
        }
    }

    pub fn with_api_key(mut self, key: impl Into<Secret>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    pub fn with_client(mut self, id: impl Into<String>, secret: impl Into<Secret>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = Some(secret.into());
        self
    }
}

/// The connectors asked for one bank (or the default, or TrueMoney), in order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RouteSpec {
    pub connectors: Vec<String>,
    /// Ask the next connector when one says "not found" (otherwise only when unavailable).
    pub fallback_on_not_found: bool,
}

impl RouteSpec {
    pub fn new<S: Into<String>>(connectors: impl IntoIterator<Item = S>) -> Self {
        Self {
            connectors: connectors.into_iter().map(Into::into).collect(),
            fallback_on_not_found: false,
        }
    }

    pub fn with_fallback_on_not_found(mut self) -> Self {
        self.fallback_on_not_found = true;
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutingSpec {
    /// Keyed by the 3-digit sending-bank code (`"004"`).
    pub by_bank: HashMap<String, RouteSpec>,
    pub default: RouteSpec,
    pub truewallet: RouteSpec,
}

impl Default for RoutingSpec {
    /// Everything to the built-in sandbox, as before connectors existed.
    fn default() -> Self {
        Self {
            by_bank: HashMap::new(),
            default: RouteSpec::new(["sandbox"]),
            truewallet: RouteSpec::new(["sandbox"]),
        }
    }
}

impl RoutingSpec {
    pub fn route_for(&self, bank: &str) -> &RouteSpec {
        self.by_bank.get(bank).unwrap_or(&self.default)
    }
}
