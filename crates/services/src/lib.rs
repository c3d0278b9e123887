//! Domain services: what the service does, independent of HTTP. Handlers parse their input,
//! call a use-case handle of `Services` (`svc.verify()`, `svc.jobs()`, `svc.admin()`, …) and
//! map the result.

pub mod accounts;
pub mod admin;
pub mod attempts;
pub mod auth;
pub mod budget;
mod handles;
pub mod idempotency;
pub mod input;
pub mod jobs;
pub mod line;
pub mod lookup;
pub mod metrics;
pub mod partner;
pub mod partner_branches;
pub mod rate;
pub mod renewal;
pub mod space;
pub mod subscriptions;
pub mod verify;
pub mod wallet;

use domain::Clock;
use std::sync::Arc;
use store::SqlStore;

/// Image-carrying requests read and decoded at once (`server.max_uploads`).
pub const DEFAULT_UPLOAD_SLOTS: usize = 8;

/// Everything a request needs, shared by all handlers and background work: the wiring
/// (`new` and the `set_*` calls) and the use-case handles. The fields are private: `api` and
/// the CLI reach the store, gateways and clock only through a handle (`auth()`, `verify()`,
/// …), a small value borrowing just the fields its use case reads.
///
/// One `Arc` to clone: every request clones it (axum's state, the attempts layer), and the
/// wiring is some twenty `Arc`s. A `set_*` call on a shared value copies the wiring first
/// (`Arc::make_mut`), so a setter still changes only the value it is called on.
#[derive(Clone)]
pub struct Services(Arc<Wiring>);

/// What a [`Services`] holds (its fields are private to this crate).
#[doc(hidden)]
#[derive(Clone)]
pub struct Wiring {
    store: Arc<SqlStore>,
    /// The connector router (`[connectors]` and `[routing]` of the configuration): answers
    /// production branches (`GET /admin/connectors` shows it).
    router: Arc<connectors::Router>,
    /// The built-in ledger (the connector `sandbox`): always answers test branches.
    ledger: Arc<dyn connectors::Connector>,
    /// Production's space and test branches' (`space.rs`), one chosen per caller.
    spaces: space::Spaces,
    clock: Arc<dyn Clock>,
    rate: Arc<rate::RateLimiter>,
    /// Peers whose `X-Forwarded-For` is believed (empty: nobody's).
    trusted_proxies: Arc<domain::ip::AllowList>,
    /// The admin API's bearer token; `None` turns the admin API off.
    admin_token: Option<Arc<String>>,
    /// Outbound HTTP for image URLs and webhooks; `None` refuses URL inputs and async jobs.
    egress: Option<egress::Egress>,
    /// Retry schedules, timeouts and leases of async jobs.
    schedules: Arc<domain::job::Schedules>,
    /// Slots for requests carrying an image: at most this many image bodies are held and
    /// decoded at once (each is up to 4 MB), so memory stays bounded under a burst.
    uploads: Arc<budget::UploadSlots>,
    /// Memory all image decodes may hold at once (`limits.decode_memory_mb`).
    decode_budget: Arc<budget::DecodeBudget>,
    /// Size, pixel and shape limits of every image read.
    image_limits: reader::Limits,
    /// The LINE platform (`[line]`); `None` until wired: the bot answers nothing.
    line: Option<line::client::LineClient>,
    /// A reply token older than this is not used (`line.reply_window_secs`).
    line_reply_window: std::time::Duration,
    /// Wakes this node's job worker when a job is submitted.
    jobs_wake: Arc<tokio::sync::Notify>,
    /// The job kinds this node's worker runs (`jobs::Kinds::builtin`).
    kinds: Arc<jobs::Kinds>,
    /// The charge writer with auto-renewal (billing, renewal locks): production's space
    /// holds it; kept here to rebuild the spaces when the wiring sets billing or metrics.
    charger: renewal::Charger,
    /// Test hook (`set_after_charge`).
    after_charge: Option<AfterCharge>,
    /// How long a running keyed request holds its `Idempotency-Key`
    /// (`server.idempotency_lease_secs`).
    idem_lease: time::Duration,
    /// This node's Prometheus registry (`metrics.rs`).
    metrics: ::metrics::Metrics,
}

/// See `Services::set_after_charge`.
pub type AfterCharge =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync>;

impl std::ops::Deref for Services {
    type Target = Wiring;
    fn deref(&self) -> &Wiring {
        &self.0
    }
}

impl Services {
    /// The wiring to change (copied first if another value shares it).
    fn wiring(&mut self) -> &mut Wiring {
        Arc::make_mut(&mut self.0)
    }

    /// A node on `store` and `clock` where `router` answers production and `ledger` (the
    /// built-in one) test branches; the rest at its default (no egress or admin API) until the
    /// `set_*` calls below.
    pub fn new(
        store: Arc<SqlStore>,
        router: Arc<connectors::Router>,
        ledger: Arc<dyn connectors::Connector>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        let rate = Arc::new(rate::RateLimiter::for_backend(store.backend()));
        let charger = renewal::Charger {
            store: store.clone(),
            clock: clock.clone(),
            billing: Arc::new(billing::LedgerBilling),
            renewals: Arc::default(),
            metrics: ::metrics::Metrics::default(),
        };
        Self(Arc::new(Wiring {
            store,
            spaces: space::Spaces::new(router.clone(), charger.clone(), ledger.clone()),
            charger,
            router,
            ledger,
            clock,
            rate,
            trusted_proxies: Arc::new(domain::ip::AllowList::none()),
            admin_token: None,
            egress: None,
            schedules: Arc::new(domain::job::Schedules::default()),
            jobs_wake: Arc::new(tokio::sync::Notify::new()),
            kinds: Arc::new(jobs::Kinds::builtin()),
            uploads: Arc::default(),
            decode_budget: Arc::default(),
            image_limits: reader::Limits {
                max_bytes: input::MAX_IMAGE_BYTES,
                ..reader::Limits::default()
            },
            line: None,
            line_reply_window: std::time::Duration::from_secs(50),
            after_charge: None,
            idem_lease: idempotency::LEASE,
            metrics: ::metrics::Metrics::default(),
        }))
    }

    /// Now, on the clock every policy of this node reads.
    pub fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    /// Another router for production (tests: a bank that is down); test branches keep the
    /// built-in ledger.
    pub fn set_router(&mut self, router: Arc<connectors::Router>) {
        self.wiring().router = router;
        self.respace();
    }

    /// The spaces again, after the router, billing or metrics changed.
    fn respace(&mut self) {
        let spaces = space::Spaces::new(
            self.router.clone(),
            self.charger.clone(),
            self.ledger.clone(),
        );
        self.wiring().spaces = spaces;
    }

    /// Outbound HTTP for image URLs and webhooks (without it both are refused).
    pub fn set_egress(&mut self, egress: egress::Egress) {
        self.wiring().egress = Some(egress);
    }

    pub fn schedules(&self) -> &domain::job::Schedules {
        &self.schedules
    }

    pub fn set_schedules(&mut self, schedules: domain::job::Schedules) {
        self.wiring().schedules = Arc::new(schedules);
    }

    /// The job kinds this node runs (the built-in ones unless set).
    pub fn set_job_kinds(&mut self, kinds: jobs::Kinds) {
        self.wiring().kinds = Arc::new(kinds);
    }

    pub fn uploads(&self) -> &budget::UploadSlots {
        &self.uploads
    }

    pub fn set_uploads(&mut self, uploads: budget::UploadSlots) {
        self.wiring().uploads = Arc::new(uploads);
    }

    pub fn decode_budget(&self) -> &budget::DecodeBudget {
        &self.decode_budget
    }

    pub fn set_decode_budget(&mut self, budget: budget::DecodeBudget) {
        self.wiring().decode_budget = Arc::new(budget);
    }

    pub fn image_limits(&self) -> reader::Limits {
        self.image_limits
    }

    pub fn set_image_limits(&mut self, limits: reader::Limits) {
        self.wiring().image_limits = limits;
    }

    /// The LINE platform the slip bot talks to, and how long a reply token is used.
    pub fn set_line(
        &mut self,
        client: line::client::LineClient,
        reply_window: std::time::Duration,
    ) {
        self.wiring().line = Some(client);
        self.wiring().line_reply_window = reply_window;
    }

    pub(crate) fn line_client(&self) -> Option<line::client::LineClient> {
        self.line.clone()
    }

    pub(crate) fn line_reply_window(&self) -> std::time::Duration {
        self.line_reply_window
    }

    /// Turns the admin API on, behind this bearer token.
    pub fn set_admin_token(&mut self, token: impl Into<String>) {
        self.wiring().admin_token = Some(Arc::new(token.into()));
    }

    pub fn admin_api_enabled(&self) -> bool {
        self.admin_token.is_some()
    }

    pub fn trusted_proxies(&self) -> &domain::ip::AllowList {
        &self.trusted_proxies
    }

    pub fn set_trusted_proxies(&mut self, proxies: domain::ip::AllowList) {
        self.wiring().trusted_proxies = Arc::new(proxies);
    }

    /// Who approves renewals (the credit ledger unless set).
    pub fn set_billing(&mut self, billing: Arc<dyn billing::Billing>) {
        self.wiring().charger.billing = billing;
        self.respace();
    }

    /// How long a running keyed request holds its key before a retry may take it over.
    pub fn set_idempotency_lease(&mut self, lease: std::time::Duration) {
        self.wiring().idem_lease = time::Duration::try_from(lease).unwrap_or(idempotency::LEASE);
    }

    pub fn idempotency_lease(&self) -> time::Duration {
        self.idem_lease
    }

    /// This node's registry: every event is counted into it, `/metrics` renders it.
    pub fn metrics(&self) -> &::metrics::Metrics {
        &self.metrics
    }

    /// A registry of the wiring's (`server`, which also serves it); the default is private.
    pub fn set_metrics(&mut self, m: ::metrics::Metrics) {
        self.wiring().charger.metrics = m.clone();
        self.wiring().metrics = m;
        self.respace();
    }

    /// Test hook: awaited right after a verification's charge is committed, before its answer
    /// exists (a test stops the node there: the crash the idempotency key must survive).
    pub fn set_after_charge(&mut self, hook: AfterCharge) {
        self.wiring().after_charge = Some(hook);
    }
}
