//! slipverify's whole configuration as typed structs, one per concern, with defaults that
//! are the service's behaviour when nothing is configured.
//!
//! Layers, last wins: defaults < a TOML file (`--config FILE`, or `SLIPVERIFY_CONFIG`) <
//! environment (`SLIPVERIFY_<SECTION>__<KEY>`, and the old flat names as aliases, the nested
//! name winning when both are set) < command-line flags ([`Sources::set`]). Any secret `x`
//! may be given as `x_file` instead. Unknown keys are errors at every level, whichever layer
//! brought them; [`Config::validate`] names the offending key in dotted form. The key table
//! in `docs/configuration.md` is generated from [`keys::KEYS`] and checked by a test.

pub mod keys;
mod lenient;
mod load;
mod secret;
mod validate;

pub use load::{load, ConfigError, Sources, ALIASES, ENV_CONFIG, ENV_PREFIX};
pub use secret::{CredentialUrl, Secret, REDACTED};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Everything slipverify reads from its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub server: ServerConfig,
    pub database: DatabaseConfig,
    pub jobs: JobsConfig,
    pub webhooks: WebhooksConfig,
    pub billing: BillingConfig,
    pub egress: EgressConfig,
    pub outbound: OutboundConfig,
    pub sandbox: SandboxConfig,
    /// Bank-verification connectors by name; `sandbox` (the built-in ledger) always exists.
    pub connectors: BTreeMap<String, ConnectorConfig>,
    pub routing: Routing,
    pub limits: LimitsConfig,
    pub retention: RetentionConfig,
    pub line: LineConfig,
    pub metrics: MetricsConfig,
}

/// Prometheus metrics (`GET /metrics`) on a listener of their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsConfig {
    /// `HOST:PORT` of the metrics listener; `None`: no listener (the default). It has no
    /// authentication: keep it on loopback or a private network.
    #[serde(
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient::opt_string"
    )]
    pub listen: Option<String>,
}

/// What one request may cost the server: image shapes and the decode memory budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Memory all image decodes may hold at once, in MB (estimated from each header).
    pub decode_memory_mb: u64,
    /// How long a decode may wait for room in the budget before a 429.
    pub decode_wait_secs: u64,
    /// Longest image side, in pixels.
    pub max_image_side: u32,
    /// Largest ratio of an image's long side to its short side.
    pub max_image_aspect: u32,
    /// Upload slots (`server.max_uploads`) one service (all its branches) may hold at once.
    /// The old per-branch name is read as an alias.
    #[serde(alias = "max_uploads_per_branch")]
    pub max_uploads_per_service: usize,
    /// Decodes at once (each also admitted against `decode_memory_mb`), shared fairly
    /// between services.
    pub decode_slots: usize,
    /// Last-resort cap on the QR search of one image, in ms (`scan_passes` is the budget).
    pub scan_ms: u64,
    /// Most detector passes spent on one image.
    pub scan_passes: u32,
    /// The reader's exhaustive scan: no evidence gate, no scan budget (for checking recall).
    pub scan_exhaustive: bool,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            decode_memory_mb: 256,
            decode_wait_secs: 10,
            max_image_side: 16_384,
            max_image_aspect: 25,
            max_uploads_per_service: 4,
            decode_slots: 4,
            scan_ms: 5000,
            scan_passes: 12,
            scan_exhaustive: false,
        }
    }
}

/// The HTTP API of `serve`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    #[serde(deserialize_with = "lenient::string")]
    pub listen: String,
    /// Peers (addresses or CIDRs) whose `X-Forwarded-For` is believed.
    #[serde(deserialize_with = "lenient::list")]
    pub trusted_proxies: Vec<String>,
    /// Turns on the admin API; at least 32 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_token: Option<Secret>,
    /// Image-carrying requests read and decoded at once.
    pub max_uploads: usize,
    /// Connections open at once; `None`: derived from the file-descriptor limit at start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<usize>,
    /// How long a client may take to send a request's head, from its first byte (from
    /// accepting, for a connection's first request).
    pub header_timeout_ms: u64,
    /// How long a kept-alive connection may wait for the first byte of its next request.
    pub idle_timeout_ms: u64,
    /// How long any request's body may take to arrive in full.
    pub body_deadline_ms: u64,
    /// How long a running request holds its `Idempotency-Key` before a retry may take it
    /// over (its node presumed dead).
    pub idempotency_lease_secs: u64,
    /// Bytes a second below which a body (after `body_min_rate_after_ms`) makes its
    /// connection among the first shed at the cap; 0: no floor.
    pub body_min_rate: u64,
    pub body_min_rate_after_ms: u64,
    /// Browser origins (`scheme://host[:port]`, exact) allowed to call `/v2` and `/api/v1`
    /// through CORS; empty: no CORS layer at all (keys belong on servers).
    #[serde(deserialize_with = "lenient::list")]
    pub cors_origins: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            trusted_proxies: Vec::new(),
            admin_token: None,
            max_uploads: 8,
            max_connections: None,
            header_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
            body_deadline_ms: 30_000,
            idempotency_lease_secs: 120,
            body_min_rate: 1024,
            body_min_rate_after_ms: 5_000,
            cors_origins: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    pub url: CredentialUrl,
    /// Connections per pool; `None`: 8 for SQLite, 16 for PostgreSQL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<u32>,
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        Self {
            url: CredentialUrl::new("sqlite://slipverify.db"),
            pool: None,
        }
    }
}

/// The async-job worker and its retry budgets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobsConfig {
    pub poll_ms: u64,
    /// Jobs handled at once on this node; 0 turns the worker off.
    pub concurrency: usize,
    pub lease_secs: u64,
    #[serde(deserialize_with = "lenient::seconds")]
    pub verify_retry_schedule: Vec<u64>,
    #[serde(deserialize_with = "lenient::seconds")]
    pub outage_retry_schedule: Vec<u64>,
    #[serde(deserialize_with = "lenient::seconds")]
    pub billing_retry_schedule: Vec<u64>,
    /// Whether this node takes part in periodic jobs (the database picks one node per period).
    pub periodic: bool,
    /// How long a periodic run is held without renewal before another node may take it over.
    pub periodic_lease_secs: u64,
    /// Period of `expire-jobs` (deletes finished jobs past their retention).
    pub expire_every_secs: u64,
    /// Period of `idempotency-keys` (forgets keys past their 24 h).
    pub idempotency_sweep_every_secs: u64,
    /// Period of `line-replies` (forgets the LINE bot's reply marks past their 24 h).
    pub line_sweep_every_secs: u64,
}

impl Default for JobsConfig {
    fn default() -> Self {
        let s = domain::job::Schedules::default();
        Self {
            poll_ms: 500,
            concurrency: 64,
            lease_secs: s.lease.as_secs(),
            verify_retry_schedule: s.verify,
            outage_retry_schedule: s.outage,
            billing_retry_schedule: s.billing,
            periodic: true,
            periodic_lease_secs: 300,
            expire_every_secs: 60,
            idempotency_sweep_every_secs: 600,
            line_sweep_every_secs: 600,
        }
    }
}

/// Webhook delivery of async-job results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhooksConfig {
    #[serde(deserialize_with = "lenient::seconds")]
    pub retry_schedule: Vec<u64>,
    pub timeout_ms: u64,
}

impl Default for WebhooksConfig {
    fn default() -> Self {
        let s = domain::job::Schedules::default();
        Self {
            retry_schedule: s.webhook,
            timeout_ms: u64::try_from(s.webhook_timeout.as_millis()).unwrap_or(5000),
        }
    }
}

/// Who approves renewals: the credit ledger, or the operator's endpoint when `url` is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BillingConfig {
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<Secret>,
    pub timeout_ms: u64,
}

impl Default for BillingConfig {
    fn default() -> Self {
        Self {
            url: None,
            secret: None,
            timeout_ms: 5000,
        }
    }
}

/// The SSRF guard for customer URLs (image URLs, webhooks): test-only allowances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct EgressConfig {
    /// Non-public ranges allowed anyway (tests reaching loopback). Never in production.
    #[serde(deserialize_with = "lenient::list")]
    pub allow_cidrs: Vec<String>,
    /// An extra trusted root CA (PEM). Never in production.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

/// Operator-configured outbound calls (connectors, billing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct OutboundConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<CredentialUrl>,
}

/// The LINE slip bot's view of the LINE platform (`../shared/line.md`). Each branch's channel
/// secret and token are branch settings (`admin branch update --line-*`), not here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LineConfig {
    /// The Messaging API (reply, push, loading); https unless loopback.
    pub api_base: String,
    /// The content host (images customers send); https unless loopback.
    pub data_api_base: String,
    /// One call to LINE, connect to last byte.
    pub timeout_ms: u64,
    /// A reply token older than this is not used: the answer is pushed instead (if allowed).
    /// LINE says "use within 1 minute"; integrators report ~30 s (line.md [M]).
    pub reply_window_secs: u64,
}

impl Default for LineConfig {
    fn default() -> Self {
        Self {
            api_base: "https://api.line.me".into(),
            data_api_base: "https://api-data.line.me".into(),
            timeout_ms: 10_000,
            reply_window_secs: 50,
        }
    }
}

/// How long records are kept (PDPA): the attempts log, and the personal fields of stored
/// transfers (names, masked accounts, phone numbers). 0 keeps them for ever.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Attempts older than this many days are deleted.
    pub attempts_days: u32,
    /// Stored transfers verified longer ago than this have their personal fields blanked
    /// (bank, reference, amount and time stay: a repeat is still a duplicate).
    pub personal_data_days: u32,
    /// How often the purge runs (a periodic job: one node per period).
    pub purge_interval_secs: u64,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        Self {
            attempts_days: 180,
            personal_data_days: 180,
            purge_interval_secs: 3600,
        }
    }
}

/// The built-in sandbox bank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Added to every sandbox look-up (load and crash tests: a slow bank).
    pub delay_ms: u64,
}

/// What a connector talks to: the connectors' own list of kinds (`connectors::Kind`), so a
/// kind accepted here is one the router builds.
pub use connectors::Kind as ConnectorKind;

/// `kind` as written: one of [`ConnectorKind::ALL`].
fn kind_de<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ConnectorKind>, D::Error> {
    let s = lenient::string(d)?;
    ConnectorKind::parse(&s).map(Some).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown kind {s:?} (one of: {})",
            ConnectorKind::names()
        ))
    })
}

fn kind_ser<S: serde::Serializer>(k: &Option<ConnectorKind>, s: S) -> Result<S::Ok, S::Error> {
    match k {
        Some(k) => s.serialize_str(k.as_str()),
        None => s.serialize_none(),
    }
}

/// One `[connectors.NAME]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectorConfig {
    /// Required; `None` only until validation reports it.
    #[serde(
        deserialize_with = "kind_de",
        serialize_with = "kind_ser",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<ConnectorKind>,
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub base_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<Secret>,
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// SCB's API secret (`applicationSecret` of its token request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_secret: Option<Secret>,
    pub timeout_ms: u64,
    /// Calls in flight at once through this connector, per node.
    pub max_concurrency: u32,
    /// Consecutive failures that open the circuit breaker.
    pub breaker_failures: u32,
    /// How long an open breaker waits before one probe (half-open).
    pub breaker_cooldown_s: u64,
    /// mTLS: a PEM file with the client certificate (chain), presented to the bank.
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_cert: Option<String>,
    /// mTLS: the client certificate's private key, PEM text (a secret: usually
    /// `client_key_file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_key: Option<Secret>,
    /// A PEM file with an extra root CA trusted for this connector only (a UAT host or the
    /// simulator in HTTPS mode).
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub ca_file: Option<String>,
    /// Path of the OAuth token endpoint, appended to `base_url`.
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub token_path: Option<String>,
    /// Bank status codes meaning "no such transfer"; absent: the kind's default.
    #[serde(
        deserialize_with = "lenient::opt_list",
        skip_serializing_if = "Option::is_none"
    )]
    pub not_found_codes: Option<Vec<String>>,
    /// Accept answers about another reference than asked (KBank's sandbox serves one fixture).
    pub sandbox_fixture: bool,
    /// KBank sandbox headers: `x-test-mode: true` on every call, `env-id: OAUTH2` on tokens.
    pub test_mode: bool,
    /// `env-id` header on verify calls (KBank sandbox; sources disagree on the value).
    #[serde(
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub verify_env_id: Option<String>,
}

impl Default for ConnectorConfig {
    fn default() -> Self {
        Self {
            kind: None,
            base_url: None,
            api_key: None,
            client_id: None,
            client_secret: None,
            api_secret: None,
            timeout_ms: 5000,
            max_concurrency: 16,
            breaker_failures: 5,
            breaker_cooldown_s: 30,
            client_cert: None,
            client_key: None,
            ca_file: None,
            token_path: None,
            not_found_codes: None,
            sandbox_fixture: false,
            test_mode: false,
            verify_env_id: None,
        }
    }
}

impl ConnectorConfig {
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    pub fn breaker_cooldown(&self) -> Duration {
        Duration::from_secs(self.breaker_cooldown_s)
    }
}

/// The built-in ledger's connector name: always defined.
pub const SANDBOX_CONNECTOR: &str = "sandbox";

/// Connectors tried in order for one sending bank (or `default` / `truewallet`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    #[serde(deserialize_with = "lenient::list")]
    pub connectors: Vec<String>,
    /// When a connector answers "not found", ask the next one too (default: only on
    /// unavailability).
    #[serde(default)]
    pub fallback_on_not_found: bool,
}

impl Route {
    pub fn to(connectors: &[&str]) -> Self {
        Self {
            connectors: connectors.iter().map(|s| s.to_string()).collect(),
            fallback_on_not_found: false,
        }
    }
}

/// `[routing]`: sending-bank code (or `default`, `truewallet`) → route. `default` and
/// `truewallet` are always present (`["sandbox"]` unless configured).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Routing(pub BTreeMap<String, Route>);

pub const ROUTE_DEFAULT: &str = "default";
pub const ROUTE_TRUEWALLET: &str = "truewallet";

impl Default for Routing {
    fn default() -> Self {
        Self(BTreeMap::new()).with_builtins()
    }
}

impl Routing {
    fn with_builtins(mut self) -> Self {
        for k in [ROUTE_DEFAULT, ROUTE_TRUEWALLET] {
            self.0
                .entry(k.to_string())
                .or_insert_with(|| Route::to(&[SANDBOX_CONNECTOR]));
        }
        self
    }

    /// The route for a sending bank's code: its own, else `default`.
    pub fn for_bank(&self, code: &str) -> &Route {
        self.0
            .get(code)
            .or_else(|| self.0.get(ROUTE_DEFAULT))
            .expect("default route is always present")
    }

    pub fn truewallet(&self) -> &Route {
        &self.0[ROUTE_TRUEWALLET]
    }
}

impl<'de> Deserialize<'de> for Routing {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// `["a", "b"]`, `"a,b"`, or `{ connectors = [...], fallback_on_not_found = … }`.
        struct Entry(Route);
        impl<'de> Deserialize<'de> for Entry {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(EntryVisitor)
            }
        }
        struct EntryVisitor;
        impl<'de> serde::de::Visitor<'de> for EntryVisitor {
            type Value = Entry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of connector names, or a table with `connectors`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Entry, E> {
                let names = lenient::list(serde::de::value::StrDeserializer::<E>::new(v))?;
                Ok(Entry(Route {
                    connectors: names,
                    fallback_on_not_found: false,
                }))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Entry, A::Error> {
                let names = lenient::list(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Entry(Route {
                    connectors: names,
                    fallback_on_not_found: false,
                }))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Entry, A::Error> {
                Route::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Entry)
            }
        }
        let map = BTreeMap::<String, Entry>::deserialize(d)?;
        Ok(Routing(map.into_iter().map(|(k, e)| (k, e.0)).collect()).with_builtins())
    }
}

impl Config {
    /// Retry schedules, the webhook timeout and the job lease, as the job code uses them.
    pub fn schedules(&self) -> domain::job::Schedules {
        domain::job::Schedules {
            verify: self.jobs.verify_retry_schedule.clone(),
            outage: self.jobs.outage_retry_schedule.clone(),
            billing: self.jobs.billing_retry_schedule.clone(),
            webhook: self.webhooks.retry_schedule.clone(),
            webhook_timeout: Duration::from_millis(self.webhooks.timeout_ms),
            lease: Duration::from_secs(self.jobs.lease_secs),
            ..domain::job::Schedules::default()
        }
    }

    /// The SSRF guard's settings (the allow-list is validated by [`Config::validate`]).
    pub fn egress_config(&self) -> Result<egress::EgressConfig, SettingError> {
        let nets = self
            .egress
            .allow_cidrs
            .iter()
            .map(|s| egress::parse_cidr(s).map_err(SettingError::at("egress.allow_cidrs")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(egress::EgressConfig::with_allowances(
            &nets,
            self.egress.ca_file.as_deref(),
        )?)
    }

    /// How operator-configured calls leave this node.
    pub fn outbound_settings(&self) -> Result<egress::operator::OutboundSettings, SettingError> {
        let proxy = match &self.outbound.proxy {
            None => None,
            Some(p) => Some(
                egress::operator::check_proxy_url(p.expose())
                    .map_err(SettingError::at("outbound.proxy"))?,
            ),
        };
        Ok(egress::operator::OutboundSettings { proxy })
    }

    /// The connector named `name`, the built-in `sandbox` included.
    pub fn connector(&self, name: &str) -> Option<ConnectorConfig> {
        match self.connectors.get(name) {
            Some(c) => Some(c.clone()),
            None if name == SANDBOX_CONNECTOR => Some(ConnectorConfig {
                kind: Some(ConnectorKind::Sandbox),
                ..ConnectorConfig::default()
            }),
            None => None,
        }
    }

    /// The effective configuration as TOML, every secret redacted.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| format!("# cannot print as TOML: {e}\n"))
    }

    /// The effective configuration as JSON, every secret redacted.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// A checked setting that still could not be built into what it configures (a CA file gone
/// since the check, a proxy the HTTP client refuses).
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    /// `key: why`.
    #[error("{key}: {source}")]
    Key {
        key: &'static str,
        source: egress::SetupError,
    },
    /// The error names its key already (`egress.ca_file PATH: why`).
    #[error(transparent)]
    Egress(#[from] egress::SetupError),
}

impl SettingError {
    fn at(key: &'static str) -> impl Fn(egress::SetupError) -> Self {
        move |source| SettingError::Key { key, source }
    }
}
