//! Test harness: a fresh database per test on SQLite or PostgreSQL, and the real server on a
//! random loopback port with an injected clock. Tests talk to it over HTTP.
//!
//! PostgreSQL is reached at `SLIPVERIFY_TEST_PG_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); each test creates its own database from it.

pub mod browser;
pub mod certs;
pub mod raw;
pub mod receiver;

/// A plain-HTTP image host on loopback for URL inputs: `/slip.png` (the given bytes as
/// `image/png`), `/text` (not an image) and `/huge` (5 MB). Returns the base URL.
pub async fn image_host(slip: Vec<u8>) -> String {
    use axum::routing::get;
    let app = axum::Router::new()
        .route(
            "/slip.png",
            get(move || async move { ([("content-type", "image/png")], slip) }),
        )
        .route("/text", get(|| async { "hello" }))
        .route("/huge", get(|| async { vec![0u8; 5 * 1024 * 1024] }));
    format!("http://{}", serve_on_loopback(app).await)
}

/// Serves `app` over plain HTTP on a random loopback port, in the background; its address.
pub async fn serve_on_loopback(app: axum::Router) -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(l, app).await.unwrap() });
    addr
}

/// The server with loopback image hosts reachable (the test-only egress allow-list).
pub async fn spawn_with_loopback_images(b: Backend) -> TestApp {
    TestApp::spawn_with(b, |s| {
        let cfg = egress::EgressConfig {
            allow_cidrs: vec!["127.0.0.1/32".parse().unwrap()],
            ..Default::default()
        };
        s.set_egress(egress::Egress::new(cfg).unwrap());
    })
    .await
}

use domain::model::AuditEntry;
use domain::{ManualClock, Satang};
use gateway::NewSandboxTransfer;
use serde_json::Value;
use server::App;
use services::admin::{BranchUpdate, NewBranch, ServiceUpdate};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::oneshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub fn pg_admin_url() -> String {
    std::env::var("SLIPVERIFY_TEST_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A database that exists for one test and is removed afterwards.
pub struct TestDb {
    pub url: String,
    backend: Backend,
    name: String,
}

impl TestDb {
    pub async fn new(backend: Backend) -> TestDb {
        let name = format!("sv_test_{}", uuid::Uuid::new_v4().simple());
        match backend {
            Backend::Sqlite => {
                let path = std::env::temp_dir().join(format!("{name}.db"));
                TestDb {
                    url: format!("sqlite://{}", path.display()),
                    backend,
                    name: path.display().to_string(),
                }
            }
            Backend::Postgres => {
                use sqlx::Connection;
                let admin = pg_admin_url();
                let mut conn = sqlx::PgConnection::connect(&admin)
                    .await
                    .unwrap_or_else(|e| {
                        panic!("PostgreSQL is required for this test ({admin}): {e}")
                    });
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                let _ = conn.close().await;
                let base = admin.rsplit_once('/').map(|(b, _)| b).unwrap_or(&admin);
                TestDb {
                    url: format!("{base}/{name}"),
                    backend,
                    name,
                }
            }
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        match self.backend {
            Backend::Sqlite => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", self.name));
                }
            }
            Backend::Postgres => {
                // Drop runs inside the test's runtime; use a thread with its own.
                let name = self.name.clone();
                let _ = std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build();
                    if let Ok(rt) = rt {
                        rt.block_on(async {
                            use sqlx::Connection;
                            if let Ok(mut c) = sqlx::PgConnection::connect(&pg_admin_url()).await {
                                let _ = sqlx::query(&format!(
                                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                                ))
                                .execute(&mut c)
                                .await;
                            }
                        });
                    }
                })
                .join();
            }
        }
    }
}

/// The real server on `127.0.0.1:0`, with a clock the test moves.
pub struct TestApp {
    pub base: String,
    pub addr: SocketAddr,
    pub app: App,
    pub clock: Arc<ManualClock>,
    pub http: reqwest::Client,
    /// What the accept loop did (connections accepted, bodies drained, answers that closed).
    pub conn_stats: Arc<edge::Stats>,
    /// The metrics listener, when the configuration has `metrics.listen` (tests give
    /// `127.0.0.1:0`).
    pub metrics_addr: Option<SocketAddr>,
    shutdown: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<()>>,
    // Last: the database goes after the server has stopped (only the first node owns it).
    _db: Option<TestDb>,
}

/// A service with its main branch, as most tests need.
pub struct Tenant {
    pub service_id: domain::ServiceId,
    pub branch_id: domain::BranchId,
    pub api_key: String,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> TestApp {
        let db = TestDb::new(backend).await;
        let url = db.url.clone();
        Self::start(&url, Some(db), |_| {}).await
    }

    /// Like `spawn`, with the services configured before the server starts.
    pub async fn spawn_with(
        backend: Backend,
        configure: impl FnOnce(&mut services::Services),
    ) -> TestApp {
        let db = TestDb::new(backend).await;
        let url = db.url.clone();
        Self::start(&url, Some(db), |a| configure(&mut a.services)).await
    }

    /// Like `spawn`, with the whole app (services and worker) configured before it starts.
    pub async fn spawn_with_app(backend: Backend, configure: impl FnOnce(&mut App)) -> TestApp {
        let db = TestDb::new(backend).await;
        let url = db.url.clone();
        Self::start(&url, Some(db), configure).await
    }

    /// `spawn` and a tenant with this quota, the start of most tests.
    pub async fn spawn_with_tenant(backend: Backend, quota: i64) -> (TestApp, Tenant) {
        let t = Self::spawn(backend).await;
        let ten = t.tenant(quota).await;
        (t, ten)
    }

    /// A webhook receiver on loopback and a server whose egress reaches it.
    pub async fn with_receiver(backend: Backend) -> (receiver::Receiver, TestApp) {
        let rx = receiver::Receiver::spawn().await;
        let eg = rx.egress();
        let t = Self::spawn_with(backend, move |s| s.set_egress(eg)).await;
        (rx, t)
    }

    /// `with_receiver` and a tenant with this quota, the start of most job tests.
    pub async fn with_receiver_and_tenant(
        backend: Backend,
        quota: i64,
    ) -> (receiver::Receiver, TestApp, Tenant) {
        let (rx, t) = Self::with_receiver(backend).await;
        let ten = t.tenant(quota).await;
        (rx, t, ten)
    }

    /// `with_receiver_and_tenant` (quota 100) and a fresh sandbox slip of `satang` from bank
    /// `from` submitted as an async job whose callback goes to the receiver's `path`: the
    /// receiver, the app, the tenant, the transfer and the job id.
    pub async fn with_receiver_and_job(
        backend: Backend,
        from: &str,
        satang: i64,
        path: &str,
    ) -> (
        receiver::Receiver,
        TestApp,
        Tenant,
        domain::model::Transfer,
        String,
    ) {
        let (rx, t, ten) = Self::with_receiver_and_tenant(backend, 100).await;
        let (tr, id) = t.slip_job(&ten, from, satang, &rx.url(path)).await;
        (rx, t, ten, tr, id)
    }

    /// `with_receiver`, the server's job worker off: it serves HTTP only and the test decides
    /// who runs the jobs.
    pub async fn http_only_with_receiver(backend: Backend) -> (receiver::Receiver, TestApp) {
        let rx = receiver::Receiver::spawn().await;
        let eg = rx.egress();
        let t = Self::spawn_with_app(backend, move |a| {
            a.services.set_egress(eg);
            a.worker.concurrency = 0;
        })
        .await;
        (rx, t)
    }

    /// A second node: another server process-alike with its own pools and writer, on the
    /// same database.
    pub async fn another_node(&self) -> TestApp {
        let clock = Some(self.clock.clone());
        Self::start_with(&self.db_url(), None, None, |_| {}, clock).await
    }

    /// The first node's database (a second node, or the CLI, opens the same one).
    pub fn db_url(&self) -> String {
        self._db
            .as_ref()
            .map(|d| d.url.clone())
            .expect("first node")
    }

    /// Another node on the same database whose services are configured first (e.g. trusted
    /// proxies).
    pub async fn another_node_with(
        &self,
        configure: impl FnOnce(&mut services::Services),
    ) -> TestApp {
        let clock = Some(self.clock.clone());
        let url = self.db_url();
        Self::start_with(&url, None, None, |a| configure(&mut a.services), clock).await
    }

    /// Another node on the same database whose whole app (services, worker, periodic jobs) is
    /// configured first.
    pub async fn another_node_with_app(&self, configure: impl FnOnce(&mut App)) -> TestApp {
        let clock = Some(self.clock.clone());
        let url = self.db_url();
        Self::start_with(&url, None, None, configure, clock).await
    }

    /// Like `spawn`, with a configuration file's text (TOML: connectors, routing, ...) on top
    /// of the defaults; the test database is `database.url`.
    pub async fn spawn_with_config(backend: Backend, toml: &str) -> TestApp {
        Self::spawn_with_config_and(backend, toml, |_| {}).await
    }

    /// `spawn_with_config`, with the app configured further before it starts.
    pub async fn spawn_with_config_and(
        backend: Backend,
        toml: &str,
        configure: impl FnOnce(&mut App),
    ) -> TestApp {
        let db = TestDb::new(backend).await;
        let url = db.url.clone();
        Self::start_with(&url, Some(db), Some(toml), configure, None).await
    }

    /// Another node on the same database with a configuration file's text.
    pub async fn another_node_with_config(&self, toml: &str) -> TestApp {
        let clock = Some(self.clock.clone());
        Self::start_with(&self.db_url(), None, Some(toml), |_| {}, clock).await
    }

    async fn start(url: &str, db: Option<TestDb>, configure: impl FnOnce(&mut App)) -> TestApp {
        Self::start_with(url, db, None, configure, None).await
    }

    async fn start_with(
        url: &str,
        db: Option<TestDb>,
        toml: Option<&str>,
        configure: impl FnOnce(&mut App),
        // Nodes of one test share one clock, as real nodes share one time: a second node
        // started later must not run ahead of the first (shared rate limits, leases).
        clock: Option<Arc<ManualClock>>,
    ) -> TestApp {
        let clock =
            clock.unwrap_or_else(|| Arc::new(ManualClock::new(time::OffsetDateTime::now_utc())));
        let mut app = match toml {
            None => App::open(url, clock.clone()).await.expect("open app"),
            Some(text) => {
                let path = std::env::temp_dir().join(format!("sv-{}.toml", uuid::Uuid::new_v4()));
                std::fs::write(&path, text).expect("write config");
                let cfg =
                    config::load(&config::Sources::new().file(&path).set("database.url", url));
                let _ = std::fs::remove_file(&path);
                let cfg = cfg.unwrap_or_else(|e| panic!("test configuration: {e}"));
                App::open_with(&cfg, clock.clone()).await.expect("open app")
            }
        };
        // Tests move the clock and then wait for the worker: look for due jobs often.
        app.worker.poll = std::time::Duration::from_millis(20);
        // Periodic jobs act on the test clock (a test that moves it 7 days ahead would see
        // `expire-jobs` delete its jobs under it): they run only where a test turns them on
        // (`a.periodic.enabled = true`), and then look for work as often as the worker.
        app.periodic.enabled = false;
        app.periodic.tick = std::time::Duration::from_millis(20);
        configure(&mut app);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        let served = app.clone();
        let conn_stats = Arc::new(edge::Stats::default());
        let counted = conn_stats.clone();
        let metrics = match &app.metrics_listen {
            Some(a) => Some(
                server::metrics_listener::bind(a)
                    .await
                    .expect("metrics listener"),
            ),
            None => None,
        };
        let metrics_addr = metrics.as_ref().map(|l| l.local_addr().expect("addr"));
        let server = tokio::spawn(async move {
            server::serve_all(listener, metrics, &served, counted, async {
                let _ = rx.await;
            })
            .await
            .expect("serve");
        });
        TestApp {
            base: format!("http://{addr}"),
            addr,
            app,
            clock,
            http: reqwest::Client::new(),
            conn_stats,
            metrics_addr,
            shutdown: Some(tx),
            server: Some(server),
            _db: db,
        }
    }

    /// Stops the server and closes the pool, so the database can be removed.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.server.take() {
            let _ = h.await;
        }
        self.app.store.close().await;
    }

    pub async fn tenant(&self, quota: i64) -> Tenant {
        let svc = &self.app.services;
        let s = svc
            .admin()
            .create_service("Test shop", Some(quota))
            .await
            .expect("service");
        // The test clock stands still, so a real rate would refuse bursts; tests of the rate
        // limit set their own.
        self.set_rate_limit(&s.id, Some(1_000_000)).await;
        let (b, key) = svc
            .admin()
            .create_branch(&NewBranch {
                service_id: s.id.clone(),
                name: "Main".into(),
                is_main: true,
                ..Default::default()
            })
            .await
            .expect("branch");
        Tenant {
            service_id: s.id,
            branch_id: b.id,
            api_key: key,
        }
    }

    pub async fn branch(
        &self,
        service_id: impl Into<domain::ServiceId>,
        name: &str,
        limit: Option<i64>,
    ) -> (domain::BranchId, String) {
        let (b, key) = self.add_branch(service_id.into(), name, limit, false).await;
        (b.id, key)
    }

    /// A test branch (`sandbox`) named `Test`: it verifies on the sandbox ledger, uncharged.
    pub async fn test_branch(
        &self,
        service_id: impl Into<domain::ServiceId>,
        limit: Option<i64>,
    ) -> (domain::BranchId, String) {
        let (b, key) = self
            .add_branch(service_id.into(), "Test", limit, true)
            .await;
        assert!(b.sandbox);
        (b.id, key)
    }

    async fn add_branch(
        &self,
        service_id: domain::ServiceId,
        name: &str,
        limit: Option<i64>,
        sandbox: bool,
    ) -> (domain::model::Branch, String) {
        let b = NewBranch {
            service_id,
            name: name.into(),
            limit_quota: limit,
            sandbox,
            ..Default::default()
        };
        let svc = &self.app.services;
        svc.admin().create_branch(&b).await.expect("branch")
    }

    /// A sandbox transfer; returns its payload.
    pub async fn transfer(&self, from: &str, to: &str, satang: i64) -> domain::model::Transfer {
        self.transfer_into(from, to, None, satang).await
    }

    /// A sandbox transfer into a given receiver account (`None`: a random one).
    pub async fn transfer_into(
        &self,
        from: &str,
        to: &str,
        account: Option<&str>,
        satang: i64,
    ) -> domain::model::Transfer {
        self.app
            .sandbox
            .create_transfer(&NewSandboxTransfer {
                from_bank: from.into(),
                to_bank: to.into(),
                amount: Satang(satang),
                sender_name_th: None,
                sender_name_en: None,
                receiver_name_th: None,
                receiver_name_en: None,
                receiver_account: account.map(Into::into),
            })
            .await
            .expect("sandbox transfer")
    }

    /// A TrueMoney sandbox transfer of `satang`: the sender's and receiver's names, the
    /// receiver's phone.
    pub async fn wallet_transfer(
        &self,
        satang: i64,
        sender: Option<&str>,
        receiver: Option<&str>,
        phone: Option<&str>,
    ) -> domain::model::WalletTransfer {
        let new = gateway::NewWalletTransfer {
            amount: Satang(satang),
            sender_name: sender.map(Into::into),
            receiver_name: receiver.map(Into::into),
            receiver_phone: phone.map(Into::into),
        };
        let created = self.app.wallet.create_transfer(&new).await;
        created.expect("wallet transfer")
    }

    /// POSTs raw bytes with a key; returns status and JSON body.
    pub async fn post_raw(&self, path: &str, key: Option<&str>, body: &str) -> (u16, Value) {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let resp = req.send().await.expect("request");
        read(resp).await
    }

    /// Any method, a bearer key, a JSON body; returns status and JSON body.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let m = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http
            .request(m, format!("{}{path}", self.base))
            .bearer_auth(key);
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        read(req.send().await.expect("request")).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        self.post_raw(path, Some(key), &body.to_string()).await
    }

    /// The caller behind `key`, authenticated as a request from loopback would be.
    pub async fn caller(&self, key: &str) -> services::auth::Caller {
        let auth = format!("Bearer {key}");
        let loopback = "127.0.0.1".parse().unwrap();
        let svc = &self.app.services;
        svc.auth()
            .authenticate(Some(&auth), loopback, None)
            .await
            .expect("caller")
    }

    /// The quota a key's service has used (`GET /v2/info`).
    pub async fn used(&self, key: &str) -> i64 {
        let (s, v) = self.get("/v2/info", Some(key)).await;
        assert_eq!(s, 200, "{v}");
        v["data"]["application"]["quota"]["used"].as_i64().unwrap()
    }

    /// The newest `limit` records of the attempts log, as the admin search lists them.
    pub async fn attempts(&self, limit: u32) -> Vec<domain::attempt::AttemptRow> {
        let q = domain::attempt::AttemptQuery {
            limit,
            ..Default::default()
        };
        let rows = self.app.services.attempts().search_attempts(q).await;
        rows.expect("attempts")
    }

    /// A partner `Reseller` over one service with one permission entry (`"quota:read,..."`);
    /// returns it and its API key.
    pub async fn partner(
        &self,
        service_id: &domain::ServiceId,
        permissions: &str,
    ) -> (domain::model::Partner, String) {
        let services = std::slice::from_ref(service_id);
        let svc = &self.app.services;
        svc.partner()
            .create_partner("Reseller", services, &[permissions.to_string()])
            .await
            .expect("partner")
    }

    /// Submits an async bank verification (`POST /v2/verify/bank/async`), asserting a 202
    /// with the job queued; returns the job id.
    pub async fn submit_job(&self, key: &str, body: Value) -> String {
        let (s, v) = self.post("/v2/verify/bank/async", key, body).await;
        assert_eq!(s, 202, "{v}");
        assert_eq!(v["success"], true, "{v}");
        assert_eq!(v["data"]["status"], "queued", "{v}");
        v["data"]["jobId"].as_str().expect("jobId").to_string()
    }

    /// `submit_job` of one slip whose callback goes to `callback_url`.
    pub async fn submit_job_to(&self, key: &str, payload: &str, callback_url: &str) -> String {
        let body = serde_json::json!({"payload": payload, "callbackUrl": callback_url});
        self.submit_job(key, body).await
    }

    /// A new sandbox transfer of `satang` from bank `from` to SCB, submitted by the tenant as
    /// an async job whose callback goes to `callback_url`; the transfer and the job id.
    pub async fn slip_job(
        &self,
        ten: &Tenant,
        from: &str,
        satang: i64,
        callback_url: &str,
    ) -> (domain::model::Transfer, String) {
        let tr = self.transfer(from, "014", satang).await;
        let key = ten.api_key.as_str();
        let id = self.submit_job_to(key, &tr.payload, callback_url).await;
        (tr, id)
    }

    /// A branch's audit log, oldest first.
    pub async fn branch_audit(&self, branch_id: &domain::BranchId) -> Vec<AuditEntry> {
        let entries = self.app.store.list_audit(branch_id).await;
        entries.expect("branch audit")
    }

    /// The audit log about a service as a whole (subscriptions, renewals, auto-renew).
    pub async fn service_audit(&self, service_id: &domain::ServiceId) -> Vec<AuditEntry> {
        let entries = self.app.store.list_service_audit(service_id).await;
        entries.expect("service audit")
    }

    /// Every byte of the decode budget, held by another service's decode until dropped.
    pub async fn hold_decode_budget(&self) -> services::budget::Admission {
        let other: domain::ServiceId = "someone-else".into();
        let budget = self.app.services.decode_budget();
        budget
            .admit(&other, u64::MAX)
            .await
            .expect("the budget is free")
    }

    /// How many jobs are stored, in any state.
    pub async fn job_rows(&self) -> i64 {
        let counts = self.app.store.job_counts().await.expect("job counts");
        counts.iter().map(|(_, _, n)| n).sum()
    }

    /// Polls `GET /v2/verify/bank/jobs/{id}` until `done(job)` holds and returns the job (the
    /// worker runs in the background; 30 s real-time cap).
    pub async fn poll_job(&self, key: &str, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let path = format!("/v2/verify/bank/jobs/{id}");
            let (s, v) = self.get(&path, Some(key)).await;
            assert_eq!(s, 200, "{v}");
            if done(&v["data"]) {
                return v["data"].clone();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "job never got there: {v}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Changes a branch (as the admin API would), asserting it worked.
    pub async fn update_branch(&self, branch_id: &domain::BranchId, update: &BranchUpdate) {
        let admin = self.app.services.admin();
        let changed = admin.update_branch(branch_id, update).await;
        changed.expect("branch");
    }

    /// Changes a service (as the admin API would), asserting it worked.
    pub async fn update_service(&self, service_id: &domain::ServiceId, update: &ServiceUpdate) {
        let admin = self.app.services.admin();
        let changed = admin.update_service(service_id, update).await;
        changed.expect("service");
    }

    /// Sets a service's rate limit in requests a second (`None`: back to its plan's rate).
    pub async fn set_rate_limit(&self, service_id: &domain::ServiceId, rps: Option<u32>) {
        let update = ServiceUpdate {
            rate_limit_rps: Some(rps),
            ..Default::default()
        };
        self.update_service(service_id, &update).await;
    }

    /// Sets a branch's webhook signing secret.
    pub async fn set_webhook_secret(&self, branch_id: &domain::BranchId, secret: &str) {
        let update = BranchUpdate {
            webhook_secret: Some(secret.into()),
            ..Default::default()
        };
        self.update_branch(branch_id, &update).await;
    }

    /// Turns a branch on or off (`active`).
    pub async fn set_branch_active(&self, branch_id: &domain::BranchId, active: bool) {
        let update = BranchUpdate {
            active: Some(active),
            ..Default::default()
        };
        self.update_branch(branch_id, &update).await;
    }

    /// POSTs a multipart form with a bearer key; returns status and JSON body.
    pub async fn post_form(
        &self,
        path: &str,
        key: &str,
        form: reqwest::multipart::Form,
    ) -> (u16, Value) {
        let req = self.http.post(format!("{}{path}", self.base));
        read(
            req.bearer_auth(key)
                .multipart(form)
                .send()
                .await
                .expect("request"),
        )
        .await
    }

    /// Uploads `bytes` as the file `slip.png` under `field`, with text `fields`.
    pub async fn upload(
        &self,
        path: &str,
        key: &str,
        field: &str,
        bytes: Vec<u8>,
        fields: &[(&str, &str)],
    ) -> (u16, Value) {
        self.post_form(path, key, slip_form(field, bytes, fields))
            .await
    }

    /// A POST of `path` with a bearer key and an `Idempotency-Key`, its body still to add.
    pub fn keyed_post(&self, path: &str, api_key: &str, idem: &str) -> reqwest::RequestBuilder {
        let req = self.http.post(format!("{}{path}", self.base));
        req.bearer_auth(api_key).header("idempotency-key", idem)
    }

    /// POSTs JSON with a bearer key and an `Idempotency-Key`; status, replayed?, body.
    pub async fn post_keyed(
        &self,
        path: &str,
        api_key: &str,
        idem: &str,
        body: &Value,
    ) -> (u16, bool, Value) {
        read_replayed(self.keyed_post(path, api_key, idem).json(body)).await
    }

    /// Verifies a bank slip: POSTs `body` (`payload` or an image, and options) to
    /// `/v2/verify/bank` with a bearer key; returns status and JSON body.
    pub async fn verify_bank(&self, key: &str, body: Value) -> (u16, Value) {
        self.post(VERIFY_BANK, key, body).await
    }

    /// `verify_bank` asserting a 200; returns the body.
    #[track_caller]
    pub fn verify_bank_ok<'a>(
        &'a self,
        key: &'a str,
        body: Value,
    ) -> impl std::future::Future<Output = Value> + 'a {
        self.post_ok(VERIFY_BANK, key, body)
    }

    /// `verify_bank` asserting a v2 error: this status and `error.code`; returns the body.
    #[track_caller]
    pub fn verify_bank_err<'a>(
        &'a self,
        key: &'a str,
        body: Value,
        status: u16,
        code: &'a str,
    ) -> impl std::future::Future<Output = Value> + 'a {
        self.post_err(VERIFY_BANK, key, body, status, code)
    }

    /// POSTs JSON with a bearer key and asserts a 200; returns the body.
    #[track_caller]
    pub fn post_ok<'a>(
        &'a self,
        path: &'a str,
        key: &'a str,
        body: Value,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let at = std::panic::Location::caller();
        async move {
            let (s, v) = self.post(path, key, body).await;
            assert_eq!(s, 200, "{v} (at {at})");
            v
        }
    }

    /// POSTs JSON with a bearer key and asserts a v2 error: this status and `error.code`;
    /// returns the body.
    #[track_caller]
    pub fn post_err<'a>(
        &'a self,
        path: &'a str,
        key: &'a str,
        body: Value,
        status: u16,
        code: &'a str,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let at = std::panic::Location::caller();
        async move {
            let (s, v) = self.post(path, key, body).await;
            assert_eq!((s, error_code(&v)), (status, code), "{v} (at {at})");
            v
        }
    }

    /// `call` asserting a 200; returns the body.
    #[track_caller]
    pub fn call_ok<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        key: &'a str,
        body: Option<Value>,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let at = std::panic::Location::caller();
        async move {
            let (s, v) = self.call(method, path, key, body).await;
            assert_eq!(s, 200, "{v} (at {at})");
            v
        }
    }

    /// `call` asserting a v2 error: this status and `error.code`; returns the body.
    #[track_caller]
    pub fn call_err<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        key: &'a str,
        body: Option<Value>,
        status: u16,
        code: &'a str,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let at = std::panic::Location::caller();
        async move {
            let (s, v) = self.call(method, path, key, body).await;
            assert_eq!((s, error_code(&v)), (status, code), "{v} (at {at})");
            v
        }
    }

    /// GETs with a bearer key and asserts a 200; returns the body.
    #[track_caller]
    pub fn get_ok<'a>(
        &'a self,
        path: &'a str,
        key: &'a str,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let at = std::panic::Location::caller();
        async move {
            let (s, v) = self.get(path, Some(key)).await;
            assert_eq!(s, 200, "{v} (at {at})");
            v
        }
    }

    /// GETs with a bearer key and asserts a v2 error: this status and `error.code`; returns
    /// the body.
    #[track_caller]
    pub fn get_err<'a>(
        &'a self,
        path: &'a str,
        key: &'a str,
        status: u16,
        code: &'a str,
    ) -> impl std::future::Future<Output = Value> + 'a {
        let at = std::panic::Location::caller();
        async move {
            let (s, v) = self.get(path, Some(key)).await;
            assert_eq!((s, error_code(&v)), (status, code), "{v} (at {at})");
            v
        }
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> (u16, Value) {
        read(self.get_response(path, key).await).await
    }

    /// GETs `path` with an optional bearer key; returns the response as it came (for its
    /// headers, or a body that is not JSON).
    pub async fn get_response(&self, path: &str, key: Option<&str>) -> reqwest::Response {
        let mut req = self.http.get(format!("{}{path}", self.base));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send().await.expect("request")
    }
}

/// The bank slip verification endpoint, the one most tests call.
const VERIFY_BANK: &str = "/v2/verify/bank";

/// A v2 error's code (`<none>` when the body has none).
pub fn error_code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("<none>")
}

/// A multipart form: `bytes` as the file `slip.png` under `field`, then text `fields`.
pub fn slip_form(field: &str, bytes: Vec<u8>, fields: &[(&str, &str)]) -> reqwest::multipart::Form {
    let part = reqwest::multipart::Part::bytes(bytes).file_name("slip.png");
    let mut form = reqwest::multipart::Form::new().part(field.to_string(), part);
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    form
}

/// Sends `n` identical POSTs at once, spread round-robin over the servers at `bases`;
/// returns each (status, JSON body).
pub async fn post_concurrently(
    bases: &[&str],
    path: &str,
    key: &str,
    body: &Value,
    n: usize,
) -> Vec<(u16, Value)> {
    let http = reqwest::Client::new();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let req = http
                .post(format!("{}{path}", bases[i % bases.len()]))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(body.to_string());
            tokio::spawn(async move { read(req.send().await.expect("request")).await })
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    for t in tasks {
        out.push(t.await.expect("request task"));
    }
    out
}

/// Sends `req`; its status, whether it is a stored answer replayed (`Idempotent-Replayed`),
/// and its JSON body.
pub async fn read_replayed(req: reqwest::RequestBuilder) -> (u16, bool, Value) {
    let resp = req.send().await.expect("request");
    let replayed = resp.headers().get("idempotent-replayed").is_some();
    let (status, v) = read(resp).await;
    (status, replayed, v)
}

async fn read(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    let v = serde_json::from_str(&text)
        .unwrap_or_else(|_| panic!("response is not JSON (status {status}): {text}"));
    (status, v)
}

/// Runs an async test body once per backend: `both!(name, |b| async move { ... })`.
#[macro_export]
macro_rules! both {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn sqlite() {
                ($body)($crate::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn postgres() {
                ($body)($crate::Backend::Postgres).await
            }
        }
    };
}
