//! The `slipverify` binary's library half: wiring (store, bank, clock → services → router),
//! serving, the first-run demo and the sandbox slip image. Tests start the same server.

pub mod demo;
pub mod read_cmd;
pub mod slip_image;

use domain::Clock;
use gateway::SandboxBank;
use services::Services;
use std::net::SocketAddr;
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
    pub store: Arc<SqlStore>,
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
        let sandbox = Arc::new(SandboxBank::new(dyn_store.clone(), clock.clone()));
        let mut services = Services::new(dyn_store, sandbox.clone(), clock);
        // Image URLs are fetched only through the SSRF guard; its test-only allowances come
        // from the environment and are logged loudly when set.
        let cfg = egress::EgressConfig::from_env()?;
        services.egress =
            Some(egress::Egress::new(cfg).map_err(|e| format!("cannot set up egress: {e}"))?);
        Ok(Self {
            services,
            sandbox,
            store,
        })
    }
}

impl App {
    pub fn store_backend(&self) -> &'static str {
        self.store.backend()
    }
}

/// Serves the API on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    app: &App,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let router = api::router(app.services.clone());
    axum::serve(
        listener,
        router.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}
