//! The `slipverify` binary's library half: wiring (store, bank, clock → services → router),
//! serving, the first-run demo and the sandbox slip image. Tests start the same server.

pub mod demo;
pub mod metrics_listener;
pub mod read_cmd;
pub mod routing;
pub mod slip_image;

use domain::Clock;
use gateway::SandboxBank;
use services::Services;
use std::sync::Arc;
use std::time::Duration;
use store::SqlStore;
use tokio::net::TcpListener;

/// Default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://slipverify.db";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The assembled application: services plus the sandbox bank (for the CLI and the demo).
#[derive(Clone)]
pub struct App {
    pub services: Services,
    pub sandbox: Arc<SandboxBank>,
    /// The built-in TrueMoney Wallet ledger.
    pub wallet: Arc<gateway::SandboxWallet>,
    pub store: Arc<SqlStore>,
    /// How this node's async-job worker runs (schedules are in `services.schedules()`).
    pub worker: services::jobs::WorkerConfig,
    /// Which periodic jobs this node takes part in, and how (`services::jobs::periodic`).
    pub periodic: services::jobs::periodic::PeriodicConfig,
    /// How the accept loop bounds connections (cap, timeouts, body deadline).
    pub connections: edge::Policy,
    /// `[server] cors_origins`: browser origins allowed (empty: no CORS layer).
    pub cors_origins: Vec<String>,
    /// Where `GET /metrics` is served (`metrics.listen`); `None`: nowhere.
    pub metrics_listen: Option<String>,
}

impl App {
    /// [`App::open_with`] on this process's configuration (`SLIPVERIFY_CONFIG` and the
    /// environment) with `database_url` as `database.url`: what tests use.
    pub async fn open(database_url: &str, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let cfg =
            config::load(&config::Sources::from_process(None).set("database.url", database_url))?;
        Self::open_with(&cfg, clock).await
    }

    /// Opens the database (applying migrations) and wires the built-in sandbox bank, the
    /// SSRF guard, billing and the job worker from a validated configuration.
    pub async fn open_with(cfg: &config::Config, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let store = Arc::new(
            store::connect_with_pool(cfg.database.url.expose(), cfg.database.pool)
                .await
                .map_err(|e| anyhow::anyhow!("cannot open database: {e}"))?,
        );
        let mut sandbox = SandboxBank::new(store.clone(), clock.clone());
        if cfg.sandbox.delay_ms > 0 {
            tracing::warn!(
                ms = cfg.sandbox.delay_ms,
                "sandbox.delay_ms is set: every sandbox bank look-up is slowed down"
            );
            sandbox = sandbox.with_delay(
                Duration::from_millis(cfg.sandbox.delay_ms),
                tokio::time::sleep,
            );
        }
        let sandbox = Arc::new(sandbox);
        let wallet = Arc::new(gateway::SandboxWallet::new(store.clone(), clock.clone()));
        // One registry per node, counted into by the services, the connectors and the HTTP
        // layer, and served by the metrics listener.
        let metrics = metrics::Metrics::new(env!("CARGO_PKG_VERSION"));
        // The built-in ledgers, the connector `sandbox`: routed to by name for production,
        // always asked for test branches.
        let ledger = Arc::new(gateway::Ledger::new(sandbox.clone(), wallet.clone()));
        let router = Arc::new(routing::build(
            cfg,
            ledger.clone(),
            clock.clone(),
            metrics.clone(),
        )?);
        let mut services = Services::new(store.clone(), router, ledger, clock);
        services.set_metrics(metrics);
        // Image URLs are fetched only through the SSRF guard; its test-only allowances are
        // logged loudly when set.
        services.set_egress(
            egress::Egress::new(cfg.egress_config()?)
                .map_err(|e| anyhow::anyhow!("cannot set up egress: {e}"))?,
        );
        let schedules = cfg.schedules();
        warn_off_spec(&schedules);
        services.set_schedules(schedules);
        services.set_uploads(services::budget::UploadSlots::new(
            cfg.server.max_uploads,
            cfg.limits.max_uploads_per_service,
        ));
        services.set_idempotency_lease(Duration::from_secs(cfg.server.idempotency_lease_secs));
        services.set_decode_budget(services::budget::DecodeBudget::new(
            cfg.limits.decode_memory_mb,
            cfg.limits.decode_slots,
            Duration::from_secs(cfg.limits.decode_wait_secs),
        ));
        services.set_image_limits(reader_limits(&cfg.limits, services.image_limits()));
        let line = services::line::client::LineClient::new(
            &cfg.line.api_base,
            &cfg.line.data_api_base,
            &cfg.outbound_settings()?,
            Duration::from_millis(cfg.line.timeout_ms),
        )?;
        services.set_line(line, Duration::from_secs(cfg.line.reply_window_secs));
        if let Some(token) = &cfg.server.admin_token {
            services.set_admin_token(token.expose());
        }
        if !cfg.server.trusted_proxies.is_empty() {
            let list = domain::ip::AllowList::parse(&cfg.server.trusted_proxies)
                .map_err(|e| anyhow::anyhow!("server.trusted_proxies: {e}"))?;
            services.set_trusted_proxies(list);
        }
        // Renewals are approved by the credit ledger unless an external billing endpoint is
        // configured.
        if let Some(url) = &cfg.billing.url {
            let secret = cfg
                .billing
                .secret
                .as_ref()
                .ok_or_else(|| anyhow::anyhow!("billing.secret: required with billing.url"))?;
            let http = billing::HttpBilling::with_outbound(
                url,
                secret.expose(),
                Duration::from_millis(cfg.billing.timeout_ms),
                &cfg.outbound_settings()?,
            )?;
            services.set_billing(Arc::new(http));
        }
        let worker = services::jobs::WorkerConfig {
            concurrency: cfg.jobs.concurrency,
            poll: Duration::from_millis(cfg.jobs.poll_ms),
            ..services::jobs::WorkerConfig::default()
        };
        let periods = services::jobs::periodic::Periods {
            expire_jobs: Duration::from_secs(cfg.jobs.expire_every_secs),
            idempotency_keys: Duration::from_secs(cfg.jobs.idempotency_sweep_every_secs),
            line_replies: Duration::from_secs(cfg.jobs.line_sweep_every_secs),
            retention: Duration::from_secs(cfg.retention.purge_interval_secs),
            attempts_days: cfg.retention.attempts_days,
            personal_data_days: cfg.retention.personal_data_days,
        };
        let periodic = services::jobs::periodic::PeriodicConfig {
            enabled: cfg.jobs.periodic,
            jobs: services::jobs::periodic::builtin(&periods),
            lease: Duration::from_secs(cfg.jobs.periodic_lease_secs),
            ..services::jobs::periodic::PeriodicConfig::default()
        };
        Ok(Self {
            services,
            sandbox,
            wallet,
            store,
            worker,
            periodic,
            connections: connection_policy(&cfg.server),
            cors_origins: cfg.server.cors_origins.clone(),
            metrics_listen: cfg.metrics.listen.clone(),
        })
    }
}

/// The accept loop's bounds from `[server]`. Raises the soft descriptor limit first, so that
/// the derived cap (when `max_connections` is unset) is taken from the limit in force.
fn connection_policy(s: &config::ServerConfig) -> edge::Policy {
    let nofile = edge::raise_nofile_limit();
    let max_connections = s
        .max_connections
        .unwrap_or_else(|| edge::max_connections_for(nofile));
    tracing::info!(
        max_connections,
        nofile = nofile.unwrap_or(0),
        "connections capped"
    );
    edge::Policy {
        max_connections,
        header_read_timeout: Duration::from_millis(s.header_timeout_ms),
        idle_timeout: Duration::from_millis(s.idle_timeout_ms),
        body_deadline: Duration::from_millis(s.body_deadline_ms),
        body_min_rate: s.body_min_rate,
        body_min_rate_after: Duration::from_millis(s.body_min_rate_after_ms),
        ..edge::Policy::default()
    }
}

/// Schedules other than the spec's are allowed, but said so at start-up.
fn warn_off_spec(s: &domain::job::Schedules) {
    use domain::job::{SPEC_VERIFY_SCHEDULE, SPEC_WEBHOOK_SCHEDULE};
    if s.verify != SPEC_VERIFY_SCHEDULE {
        tracing::warn!(schedule = ?s.verify, "jobs.verify_retry_schedule differs from the spec's");
    }
    if s.webhook != SPEC_WEBHOOK_SCHEDULE {
        tracing::warn!(schedule = ?s.webhook, "webhooks.retry_schedule differs from the spec's");
    }
    if s.webhook_timeout != Duration::from_secs(5) {
        tracing::warn!(timeout = ?s.webhook_timeout, "webhook timeout differs from the spec's 5 s");
    }
}

impl App {
    pub fn store_backend(&self) -> &'static str {
        self.store.backend()
    }
}

/// Serves the API on `listener`, and runs this node's job worker and its share of periodic
/// jobs, until `shutdown` resolves. Then requests in flight finish, and the worker and the
/// periodic runner finish or hand back the work they hold.
pub async fn serve(
    listener: TcpListener,
    app: &App,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_counted(listener, app, Arc::default(), shutdown).await
}

/// `serve`, counting what the accept loop does into `stats`.
pub async fn serve_counted(
    listener: TcpListener,
    app: &App,
    stats: Arc<edge::Stats>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_all(listener, None, app, stats, shutdown).await
}

/// `serve_counted`, and `GET /metrics` on `metrics` (bound from `metrics.listen`) until the
/// same shutdown.
pub async fn serve_all(
    listener: TcpListener,
    metrics: Option<TcpListener>,
    app: &App,
    stats: Arc<edge::Stats>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = api::router_with_cors(app.services.clone(), &app.cors_origins)
        .map_err(std::io::Error::other)?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let stop = Arc::new(stop);
    let worker = tokio::spawn(services::jobs::run_worker(
        app.services.clone(),
        app.worker.clone(),
        stopped,
    ));
    let periodic = tokio::spawn(services::jobs::periodic::run_periodic(
        app.services.clone(),
        app.periodic.clone(),
        stop.subscribe(),
    ));
    let scrapes = metrics.map(|l| {
        tokio::spawn(metrics_listener::serve(
            l,
            app.services.clone(),
            stats.clone(),
            stop.subscribe(),
        ))
    });
    let stop_on_signal = stop.clone();
    // Our own accept loop (crates/edge): early answers keep the connection usable.
    let served = edge::serve(
        listener,
        router,
        app.connections.clone(),
        stats,
        async move {
            shutdown.await;
            let _ = stop_on_signal.send(true);
        },
    )
    .await;
    let _ = stop.send(true);
    let _ = worker.await;
    let _ = periodic.await;
    if let Some(s) = scrapes {
        let _ = s.await;
    }
    served
}

/// The reader's limits from `[limits]`, over `base` (what the configuration does not set):
/// one place for `serve` and `slipverify read`.
pub fn reader_limits(cfg: &config::LimitsConfig, base: reader::Limits) -> reader::Limits {
    reader::Limits {
        max_side: cfg.max_image_side,
        max_aspect: cfg.max_image_aspect,
        scan_time: Duration::from_millis(cfg.scan_ms),
        scan_passes: cfg.scan_passes,
        scan_exhaustive: cfg.scan_exhaustive,
        ..base
    }
}
