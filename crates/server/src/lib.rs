//! The `slipverify` binary's library half: wiring (store, bank, clock → services → router),
//! serving, the first-run demo and the sandbox slip image. Tests start the same server.

pub mod demo;
pub mod read_cmd;
pub mod slip_image;

use domain::Clock;
use gateway::SandboxBank;
use services::Services;
use std::sync::Arc;
use store::{SqlStore, Store};
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
    /// How this node's async-job worker runs (schedules are in `services.schedules`).
    pub worker: services::jobs::WorkerConfig,
}

impl App {
    /// Opens the database (applying migrations) and wires the built-in sandbox bank.
    pub async fn open(database_url: &str, clock: Arc<dyn Clock>) -> Result<Self, String> {
        let store = Arc::new(
            store::connect(database_url)
                .await
                .map_err(|e| format!("cannot open database: {e}"))?,
        );
        let dyn_store: Arc<dyn Store> = store.clone();
        let sandbox = Arc::new(
            SandboxBank::new(dyn_store.clone(), clock.clone())
                .with_delay_from_env(tokio::time::sleep)?,
        );
        let wallet = Arc::new(gateway::SandboxWallet::new(
            dyn_store.clone(),
            clock.clone(),
        ));
        let mut services = Services::new(dyn_store, sandbox.clone(), clock);
        services.wallet = Some(wallet.clone());
        // Test branches always verify on the built-in ledgers, whatever answers production.
        services.sandbox_bank = sandbox.clone();
        services.sandbox_wallet = Some(wallet.clone());
        // Image URLs are fetched only through the SSRF guard; its test-only allowances come
        // from the environment and are logged loudly when set.
        let cfg = egress::EgressConfig::from_env()?;
        services.egress =
            Some(egress::Egress::new(cfg).map_err(|e| format!("cannot set up egress: {e}"))?);
        let env = |k: &str| std::env::var(k).ok();
        services.schedules = Arc::new(services::jobs::schedules_from(env)?);
        if let Some(n) = env("SLIPVERIFY_MAX_UPLOADS") {
            let n: usize = n
                .trim()
                .parse()
                .ok()
                .filter(|n| (1..=1024).contains(n))
                .ok_or("SLIPVERIFY_MAX_UPLOADS must be 1 to 1024")?;
            services.uploads = Arc::new(tokio::sync::Semaphore::new(n));
        }
        // Renewals are approved by the credit ledger unless an external billing endpoint is
        // configured.
        if let Some(url) = env("SLIPVERIFY_BILLING_URL") {
            let secret = env("SLIPVERIFY_BILLING_SECRET")
                .ok_or("SLIPVERIFY_BILLING_SECRET is required with SLIPVERIFY_BILLING_URL")?;
            let ms: u64 = match env("SLIPVERIFY_BILLING_TIMEOUT_MS") {
                None => 5000,
                Some(v) => v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| (100..=60_000).contains(n))
                    .ok_or("SLIPVERIFY_BILLING_TIMEOUT_MS must be 100 to 60000")?,
            };
            let http = billing::HttpBilling::new(
                url.trim(),
                secret.trim(),
                std::time::Duration::from_millis(ms),
            )?;
            services.billing = Arc::new(http);
        }
        let mut worker = services::jobs::WorkerConfig::default();
        if let Some(ms) = env("SLIPVERIFY_JOB_POLL_MS") {
            let ms: u64 = ms
                .trim()
                .parse()
                .ok()
                .filter(|n| (10..=60_000).contains(n))
                .ok_or("SLIPVERIFY_JOB_POLL_MS must be 10 to 60000")?;
            worker.poll = std::time::Duration::from_millis(ms);
        }
        if let Some(n) = env("SLIPVERIFY_JOB_CONCURRENCY") {
            worker.concurrency = n
                .trim()
                .parse()
                .ok()
                .filter(|n| (0..=4096).contains(n))
                .ok_or("SLIPVERIFY_JOB_CONCURRENCY must be 0 (worker off) to 4096")?;
        }
        Ok(Self {
            services,
            sandbox,
            wallet,
            store,
            worker,
        })
    }
}

impl App {
    pub fn store_backend(&self) -> &'static str {
        self.store.backend()
    }
}

/// Serves the API on `listener`, and runs this node's job worker, until `shutdown` resolves.
/// Then requests in flight finish, and the worker finishes or hands back the jobs it holds.
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
    let router = api::router(app.services.clone());
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let stop = Arc::new(stop);
    let worker = tokio::spawn(services::jobs::run_worker(
        app.services.clone(),
        app.worker.clone(),
        stopped,
    ));
    let stop_on_signal = stop.clone();
    // Our own accept loop (crates/edge): early answers keep the connection usable.
    let served = edge::serve(
        listener,
        router,
        edge::Policy::default(),
        stats,
        async move {
            shutdown.await;
            let _ = stop_on_signal.send(true);
        },
    )
    .await;
    let _ = stop.send(true);
    let _ = worker.await;
    served
}
