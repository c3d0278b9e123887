//! `slipverify`: serve the API, administer services and branches, drive the sandbox bank and
//! explain QR payloads.

use clap::{Args, Parser, Subcommand};
use domain::billing::{AutoRenew, CreditKind};
use domain::model::ServiceState;
use domain::{Satang, SystemClock};
use gateway::NewSandboxTransfer;
use serde_json::json;
use server::App;
use services::admin::{BranchUpdate, NewBranch, ServiceUpdate};
use services::subscriptions::NewPackage;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "slipverify",
    version,
    about = "Verify Thai bank-transfer slips"
)]
struct Cli {
    /// A TOML configuration file (see docs/configuration.md); else `SLIPVERIFY_CONFIG`.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// sqlite://FILE (default: sqlite://slipverify.db) or postgres://USER@HOST:PORT/DB; wins
    /// over `database.url` and SLIPVERIFY_DATABASE_URL.
    #[arg(long, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API.
    Serve {
        /// HOST:PORT (default 127.0.0.1:8080); wins over `server.listen`.
        #[arg(long)]
        listen: Option<String>,
        /// Create a demo service, branch and sandbox transfers and print a ready curl line.
        #[arg(long)]
        demo: bool,
        /// A proxy (address or CIDR) whose X-Forwarded-For is believed; repeatable. Without
        /// one, the allow-lists see the TCP peer.
        /// Wins over `server.trusted_proxies`.
        #[arg(long = "trusted-proxy", value_delimiter = ',')]
        trusted_proxy: Vec<String>,
        /// Turns on the admin API (`/admin/...`) with this bearer token (at least 32
        /// characters); wins over `server.admin_token`. Prefer `SLIPVERIFY_ADMIN_TOKEN` or
        /// `server.admin_token_file`: a flag shows in the process list.
        #[arg(long)]
        admin_token: Option<String>,
    },
    /// The configuration (file, environment, flags; see docs/configuration.md).
    #[command(subcommand)]
    Config(ConfigCmd),
    /// The bank and provider connectors of the configuration.
    #[command(subcommand)]
    Connectors(ConnectorsCmd),
    /// Services, branches and keys.
    #[command(subcommand)]
    Admin(Admin),
    /// The built-in sandbox bank.
    #[command(subcommand)]
    Sandbox(Sandbox),
    /// Explain a QR payload: the parsed slip as JSON, or why it is not one (exit status 1).
    Qr {
        /// The QR payload text, as read from the slip.
        payload: String,
    },
    /// Read slip QRs from image files or folders: one line per image.
    Read {
        /// Image files or folders (read recursively).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Parallel readers (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// One JSON object per line: {file, payload, kind, error, ms}.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ConfigCmd {
    /// Print the effective configuration with every secret redacted; exit status 2 naming
    /// the offending key when it is invalid.
    Check {
        /// JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ConnectorsCmd {
    /// Reach each connector (a token request where there is one) and report ok or the error,
    /// verifying nothing; one JSON line per connector, exit status 1 when any failed.
    Check,
}

#[derive(Subcommand)]
enum Admin {
    /// Services (applications): create, change, subscribe, auto-renew.
    #[command(subcommand)]
    Service(ServiceCmd),
    /// Users: the owners of services; ban and unban.
    #[command(subcommand)]
    User(UserCmd),
    /// Partners: who may manage services' quotas through the partner API.
    #[command(subcommand)]
    Partner(PartnerCmd),
    /// Plans: requests per second and burst per branch.
    #[command(subcommand)]
    Plan(PlanCmd),
    /// Packages: what a subscription buys (quota per cycle, duration, price).
    #[command(subcommand)]
    Package(PackageCmd),
    /// A service's prepaid credit: top-ups, corrections and the ledger.
    #[command(subcommand)]
    Credit(CreditCmd),
    /// The audit log, oldest first: a branch's quota changes (`--branch`) or a service's
    /// subscriptions, renewals and auto-renew changes (`--service`).
    #[command(group(clap::ArgGroup::new("of").required(true).args(["branch", "service"])))]
    Audit {
        /// A branch's quota changes (its id).
        #[arg(long)]
        branch: Option<String>,
        /// A service's subscriptions, renewals and auto-renew changes (its id).
        #[arg(long)]
        service: Option<String>,
    },
    /// Branches: each with its own API key, IP allow-list, quota and webhook.
    #[command(subcommand)]
    Branch(BranchCmd),
    /// API keys: rotate a branch's key, with an optional grace period.
    #[command(subcommand)]
    Key(KeyCmd),
}

#[derive(Subcommand)]
enum ServiceCmd {
    /// Create a service (application).
    Create {
        /// The service's name.
        #[arg(long)]
        name: String,
        /// Verifications per billing cycle for the whole service.
        #[arg(long)]
        quota: Option<i64>,
    },
    /// Change a service: quota, subscription end, state, owner.
    Update(ServiceUpdateArgs),
    /// Subscribe a service to a package: a new period (quota, cycle, expiry) starts now.
    Subscribe {
        /// The service's id.
        #[arg(long)]
        service: String,
        /// Package name or id (see `admin package list`).
        #[arg(long)]
        package: String,
        /// Renew by itself at expiry and when the quota is used up (paid from the credit).
        /// Without it the current auto-renew setting stays (see `admin service auto-renew`).
        #[arg(long)]
        auto_renew: bool,
        /// Draw the package price from the service's credit (refused when short); without
        /// it the period starts unpaid from the credit (paid some other way).
        #[arg(long)]
        pay_from_credit: bool,
    },
    /// Turn auto-renewal on or off.
    ///
    /// `--on` renews at expiry and when the cycle's quota is used up; add `--on-expiry-only`
    /// or `--on-quota-only` for one trigger (the other is turned off). `--off` turns both off.
    AutoRenew(AutoRenewArgs),
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("switch").required(true).args(["on", "off"])))]
struct AutoRenewArgs {
    /// The service's id.
    #[arg(long)]
    service: String,
    /// Turn auto-renewal on (both triggers unless one of the -only flags is given).
    #[arg(long)]
    on: bool,
    /// Turn auto-renewal off (both triggers).
    #[arg(long)]
    off: bool,
    /// With --on: renew only at expiry, not when the quota is used up.
    #[arg(long, requires = "on", conflicts_with_all = ["off", "on_quota_only"])]
    on_expiry_only: bool,
    /// With --on: renew only when the quota is used up, not at expiry.
    #[arg(long, requires = "on", conflicts_with = "off")]
    on_quota_only: bool,
}

#[derive(Subcommand)]
enum PackageCmd {
    /// Create a package, or change the terms of the one with this name (current periods
    /// keep theirs; the next period uses the new ones).
    Set {
        /// The package's name.
        #[arg(long)]
        name: String,
        /// Verifications per billing cycle.
        #[arg(long)]
        quota: i64,
        /// Length of a period in days (1 to 3650).
        #[arg(long)]
        days: u32,
        /// Price in baht, e.g. 990.00.
        #[arg(long)]
        price: String,
    },
    /// List the packages.
    List,
}

#[derive(Subcommand)]
enum CreditCmd {
    /// Add credit (a positive amount).
    Topup {
        /// The service's id.
        #[arg(long)]
        service: String,
        /// Baht, e.g. 500.00.
        #[arg(long)]
        amount: String,
        /// Why (recorded in the ledger).
        #[arg(long)]
        note: Option<String>,
    },
    /// Correct the credit either way; the balance never goes below zero.
    Adjust {
        /// The service's id.
        #[arg(long)]
        service: String,
        /// Baht, e.g. -100.00 or 25.50.
        #[arg(long, allow_hyphen_values = true)]
        amount: String,
        /// Why (recorded in the ledger).
        #[arg(long)]
        note: String,
    },
    /// The balance and every movement, oldest first.
    History {
        /// The service's id.
        #[arg(long)]
        service: String,
    },
}

/// Baht with an optional sign, e.g. `500.00` or `-100.00`.
fn parse_signed_amount(v: &str) -> Result<Satang, String> {
    let v = v.trim();
    let (neg, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let s = Satang::parse(digits).map_err(|r| format!("--amount {r}"))?;
    Ok(Satang(if neg { -s.0 } else { s.0 }))
}

#[derive(Args)]
struct ServiceUpdateArgs {
    /// The service's id.
    #[arg(long)]
    service: String,
    /// A new name.
    #[arg(long)]
    name: Option<String>,
    /// Verifications per billing cycle, or `none` for no limit.
    #[arg(long)]
    quota: Option<String>,
    /// Last day of the subscription (`YYYY-MM-DD`, through the end of that day in Thai time),
    /// an RFC 3339 instant, or `never`.
    #[arg(long)]
    expires: Option<String>,
    /// active, banned or deleted.
    #[arg(long)]
    state: Option<String>,
    /// The owning user's id; empty to remove.
    #[arg(long)]
    owner: Option<String>,
    /// The plan (see `admin plan`), which sets the requests-per-second limit.
    #[arg(long)]
    plan: Option<String>,
    /// Whether the owner's verification (KYC) is complete; `false` answers v1
    /// `account_not_verified` (v2 `ACCOUNT_NOT_VERIFIED`).
    #[arg(long)]
    owner_verified: Option<bool>,
    /// Requests per second per branch, overriding the plan; `none` returns to the plan's.
    #[arg(long)]
    rate_limit: Option<String>,
}

#[derive(Subcommand)]
enum PlanCmd {
    /// Create or change a plan.
    Set {
        /// The plan's name.
        #[arg(long)]
        name: String,
        /// Requests per second per branch.
        #[arg(long)]
        rps: u32,
        /// Requests allowed at once (default: half the rate, at least 1).
        #[arg(long)]
        burst: Option<u32>,
    },
    /// List the plans.
    List,
}

#[derive(Subcommand)]
enum PartnerCmd {
    /// Create a partner; prints its apiKey and secret once.
    Create {
        /// The partner's name.
        #[arg(long)]
        name: String,
        /// A service the partner may manage; repeatable.
        #[arg(long = "service", required = true)]
        services: Vec<String>,
        /// Comma-separated: quota:read, quota:write.
        #[arg(long)]
        permissions: String,
    },
}

#[derive(Subcommand)]
enum UserCmd {
    /// Create a user (an owner of services).
    Create {
        /// The user's name.
        #[arg(long)]
        name: String,
    },
    /// Ban or unban a user: a banned user's services answer USER_BANNED.
    Update {
        /// The user's id.
        #[arg(long)]
        user: String,
        /// true or false.
        #[arg(long, action = clap::ArgAction::Set)]
        banned: bool,
    },
}

/// `90s`, `30m`, `24h` or `7d`.
fn parse_duration(v: &str) -> Result<time::Duration, String> {
    let bad = || format!("'{v}' is not a duration such as 90s, 30m, 24h or 7d");
    let (num, unit) = v.trim().split_at(v.trim().len().saturating_sub(1));
    let n: i64 = num.parse().map_err(|_| bad())?;
    match unit {
        "s" => Ok(time::Duration::seconds(n)),
        "m" => Ok(time::Duration::minutes(n)),
        "h" => Ok(time::Duration::hours(n)),
        "d" => Ok(time::Duration::days(n)),
        _ => Err(bad()),
    }
}

/// `N` or `none`.
fn parse_limit(field: &str, v: &str) -> Result<Option<i64>, String> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    v.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or_else(|| format!("--{field} must be a non-negative number or none"))
}

/// `never`, an RFC 3339 instant, or a date meaning the end of that day in Thai time.
fn parse_expiry(v: &str) -> Result<Option<time::OffsetDateTime>, String> {
    use time::format_description::well_known::Rfc3339;
    if v.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    if let Ok(t) = time::OffsetDateTime::parse(v, &Rfc3339) {
        return Ok(Some(t));
    }
    let date = time::Date::parse(v, time::macros::format_description!("[year]-[month]-[day]"))
        .map_err(|_| "--expires must be YYYY-MM-DD, an RFC 3339 time or never".to_string())?;
    let next = date.next_day().ok_or("--expires is out of range")?;
    Ok(Some(
        next.midnight().assume_offset(time::macros::offset!(+7)),
    ))
}

#[derive(Subcommand)]
enum BranchCmd {
    /// Create a branch; prints its API key once.
    Create {
        /// The service's id.
        #[arg(long)]
        service: String,
        /// The branch's name.
        #[arg(long)]
        name: String,
        /// The service's main branch (at most one per service).
        #[arg(long)]
        main: bool,
        /// `*`, an address or a CIDR; repeatable. Default: `*`.
        #[arg(long = "allow-ip")]
        allow_ip: Vec<String>,
        /// Branch-specific limit (default: none, only the service limit applies).
        #[arg(long)]
        limit_quota: Option<i64>,
        /// A test branch: always the sandbox ledger, never charged, duplicates kept apart.
        #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
        sandbox: bool,
    },
    /// Change a branch's settings.
    Update(BranchUpdateArgs),
}

#[derive(Args)]
struct BranchUpdateArgs {
    /// The branch's id.
    #[arg(long)]
    branch: String,
    /// A new name.
    #[arg(long)]
    name: Option<String>,
    /// `false` turns the branch off: its key answers BRANCH_INACTIVE.
    #[arg(long)]
    active: Option<bool>,
    /// Replaces the allow-list; repeatable.
    #[arg(long = "allow-ip")]
    allow_ip: Vec<String>,
    /// Empty string clears it.
    #[arg(long)]
    webhook_url: Option<String>,
    /// Empty string clears it.
    #[arg(long)]
    webhook_secret: Option<String>,
    /// Biller id (15 digits) of the branch's merchant payment QRs; empty string clears it.
    #[arg(long)]
    biller_id: Option<String>,
    /// The branch's own limit per cycle, or `none` (only the service's limit applies).
    #[arg(long)]
    quota: Option<String>,
    /// `true` makes it a test branch (sandbox ledger, never charged), `false` a production one.
    #[arg(long)]
    sandbox: Option<bool>,
}

#[derive(Subcommand)]
enum KeyCmd {
    /// Issue a new API key for a branch; the old key stops working at once.
    Rotate {
        /// The branch's id.
        #[arg(long)]
        branch: String,
        /// Keep the old key working this long (e.g. 30m, 24h, 7d; at most 7 days).
        #[arg(long)]
        grace: Option<String>,
    },
}

#[derive(Subcommand)]
enum Sandbox {
    /// Create a sandbox transfer; prints its payload and reference.
    Transfer {
        /// Sending bank code, e.g. 004.
        #[arg(long)]
        from: String,
        /// Receiving bank code, e.g. 014.
        #[arg(long)]
        to: String,
        /// Amount in baht, e.g. 150.00.
        #[arg(long)]
        amount: String,
        /// Also write a PNG slip image carrying the QR.
        #[arg(long)]
        image: Option<PathBuf>,
        /// The sender's name on the transfer.
        #[arg(long)]
        sender_name: Option<String>,
        /// The receiver's name on the transfer.
        #[arg(long)]
        receiver_name: Option<String>,
        /// Receiver account number (digits).
        #[arg(long)]
        receiver_account: Option<String>,
        /// Create this many transfers; above 1, one compact JSON object per line.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        count: u32,
    },
    /// Create a sandbox TrueMoney Wallet transfer; prints its payload and transaction id.
    WalletTransfer {
        /// Amount in baht, e.g. 50.00.
        #[arg(long)]
        amount: String,
        /// Also write a PNG slip image carrying the QR.
        #[arg(long)]
        image: Option<PathBuf>,
        /// The sender's name on the transfer.
        #[arg(long)]
        sender_name: Option<String>,
        /// The receiver's name on the transfer.
        #[arg(long)]
        receiver_name: Option<String>,
        /// Receiver phone number, e.g. 0812345678 (shown masked).
        #[arg(long)]
        receiver_phone: Option<String>,
    },
}

/// Who the CLI's changes are recorded as (ledger rows, audit entries).
const CLI_ACTOR: &str = "cli";

fn print(v: serde_json::Value) {
    // A closed stdout (`| head`) is not an error worth a panic.
    let _ = writeln!(
        std::io::stdout(),
        "{}",
        serde_json::to_string_pretty(&v).unwrap_or_default()
    );
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = if matches!(cli.command, Command::Serve { .. }) {
        "info"
    } else {
        "warn"
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SLIPVERIFY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(cli).await {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode, String> {
    if let Command::Qr { payload } = &cli.command {
        // Pure: no database needed to explain a QR.
        // Payment QRs may be longer than a slip's 128 characters (EMVCo allows 512).
        let parsed = match slip_qr::classify(payload) {
            Err(slip_qr::QrError::TooLong { .. }) if payload.trim().starts_with("000201") => {
                slip_qr::parse_payment_qr(payload).map(slip_qr::ParsedQr::PaymentQr)
            }
            other => other,
        };
        return Ok(match parsed {
            Ok(parsed) => {
                let is_slip = matches!(parsed, slip_qr::ParsedQr::BankSlip(_));
                print(serde_json::to_value(parsed).map_err(|e| e.to_string())?);
                if is_slip {
                    ExitCode::SUCCESS
                } else {
                    if let Err(e) = slip_qr::parse_bank_slip(payload) {
                        eprintln!("not a bank transfer slip: {e}");
                    }
                    ExitCode::from(1)
                }
            }
            Err(e) => {
                print(json!({ "error": e.code(), "message": e.to_string() }));
                ExitCode::from(1)
            }
        });
    }
    if let Command::Read { paths, jobs, json } = &cli.command {
        // Pure: no database needed to read images.
        return Ok(server::read_cmd::run(paths, *jobs, *json));
    }
    // Flags win over the environment, which wins over the file.
    let mut sources = config::Sources::from_process(cli.config.clone());
    if let Some(url) = &cli.database_url {
        sources = sources.set("database.url", url);
    }
    if let Command::Serve {
        listen,
        trusted_proxy,
        admin_token,
        ..
    } = &cli.command
    {
        if let Some(l) = listen {
            sources = sources.set("server.listen", l);
        }
        if !trusted_proxy.is_empty() {
            sources = sources.set("server.trusted_proxies", trusted_proxy);
        }
        if let Some(t) = admin_token {
            sources = sources.set("server.admin_token", t);
        }
    }
    let cfg = config::load(&sources).map_err(|e| format!("invalid configuration:\n{e}"))?;
    if let Command::Config(ConfigCmd::Check { json }) = &cli.command {
        let text = if *json { cfg.to_json() } else { cfg.to_toml() };
        let _ = writeln!(std::io::stdout(), "{}", text.trim_end());
        return Ok(ExitCode::SUCCESS);
    }
    let app = App::open_with(&cfg, Arc::new(SystemClock)).await?;
    let svc = &app.services;
    let err = |e: domain::Error| e.public_message();
    match cli.command {
        Command::Qr { .. } | Command::Read { .. } | Command::Config(_) => {
            unreachable!("handled above")
        }
        Command::Serve { demo, .. } => {
            let listen = cfg.server.listen.clone();
            if app.services.admin_token.is_some() {
                tracing::warn!("admin API enabled at /admin");
            }
            if !cfg.server.trusted_proxies.is_empty() {
                tracing::info!(proxies = ?app.services.trusted_proxies.to_strings(), "trusting X-Forwarded-For from these peers");
            }
            let listener = tokio::net::TcpListener::bind(&listen)
                .await
                .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            tracing::info!(%addr, backend = app.store_backend(), "slipverify listening");
            if demo {
                let d = server::demo::prepare(&app).await?;
                // A closed stdout (e.g. piped into `head`) must not take the server down.
                let banner = server::demo::banner(&d, &format!("http://{addr}"));
                let _ = std::io::Write::write_all(&mut std::io::stdout(), banner.as_bytes());
            }
            server::serve(listener, &app, shutdown_signal())
                .await
                .map_err(|e| e.to_string())?;
        }
        Command::Connectors(ConnectorsCmd::Check) => {
            let mut failed = false;
            for c in svc.check_connectors().await {
                failed |= c.result.is_err();
                let mut line = match c.result {
                    Ok(()) => serde_json::json!({"name": c.name, "ok": true}),
                    Err(e) => serde_json::json!({"name": c.name, "ok": false, "error": e}),
                };
                // Only where it applies, so the other kinds' lines stay as they were.
                if c.client_certificate {
                    line["clientCertificate"] = serde_json::json!(if line["ok"] == true {
                        "presented"
                    } else {
                        "configured"
                    });
                }
                print(line);
            }
            if failed {
                return Ok(ExitCode::FAILURE);
            }
        }
        Command::Admin(Admin::Service(ServiceCmd::Create { name, quota })) => {
            let s = svc.create_service(&name, quota).await.map_err(err)?;
            print(api::views::service(&s));
        }
        Command::Admin(Admin::Service(ServiceCmd::Update(a))) => {
            let state = match a.state.as_deref() {
                None => None,
                Some(st) => Some(
                    ServiceState::parse(st)
                        .ok_or_else(|| "--state must be active, banned or deleted".to_string())?,
                ),
            };
            let upd = ServiceUpdate {
                name: a.name,
                limit_quota: a
                    .quota
                    .as_deref()
                    .map(|q| parse_limit("quota", q))
                    .transpose()?,
                state,
                expires_at: a.expires.as_deref().map(parse_expiry).transpose()?,
                owner_id: a.owner,
                plan: a.plan,
                owner_verified: a.owner_verified,
                rate_limit_rps: a
                    .rate_limit
                    .as_deref()
                    .map(|v| {
                        parse_limit("rate-limit", v)?
                            .map(|n| {
                                u32::try_from(n)
                                    .map_err(|_| "--rate-limit is too large".to_string())
                            })
                            .transpose()
                    })
                    .transpose()?,
            };
            let s = svc.update_service(&a.service, &upd).await.map_err(err)?;
            print(api::views::service(&s));
        }
        Command::Admin(Admin::Partner(PartnerCmd::Create {
            name,
            services,
            permissions,
        })) => {
            let (p, key) = svc
                .create_partner(&name, &services, &[permissions])
                .await
                .map_err(err)?;
            print(api::views::new_partner(&p, &key));
        }
        Command::Admin(Admin::Plan(PlanCmd::Set { name, rps, burst })) => {
            let p = svc.set_plan(&name, rps, burst).await.map_err(err)?;
            print(api::views::plan(&p));
        }
        Command::Admin(Admin::Plan(PlanCmd::List)) => {
            let plans = svc.store.list_plans().await.map_err(|e| e.to_string())?;
            print(json!(plans
                .iter()
                .map(api::views::plan)
                .collect::<Vec<_>>()));
        }
        Command::Admin(Admin::Audit { branch, service }) => {
            let entries = match (branch, service) {
                (Some(branch), _) => svc
                    .store
                    .list_audit(&branch)
                    .await
                    .map_err(|e| e.to_string()),
                (None, Some(service)) => svc.service_audit(&service).await.map_err(err),
                (None, None) => unreachable!("clap requires --branch or --service"),
            }?;
            print(api::views::audit(&entries));
        }
        Command::Admin(Admin::Service(ServiceCmd::Subscribe {
            service,
            package,
            auto_renew,
            pay_from_credit,
        })) => {
            let s = svc
                .subscribe(
                    &service,
                    &package,
                    auto_renew.then_some(AutoRenew::ON),
                    pay_from_credit,
                    CLI_ACTOR,
                )
                .await
                .map_err(err)?;
            print(api::views::service(&s));
        }
        Command::Admin(Admin::Service(ServiceCmd::AutoRenew(a))) => {
            let auto = if a.off {
                AutoRenew::default()
            } else {
                AutoRenew {
                    on_expiry: !a.on_quota_only,
                    on_quota: !a.on_expiry_only,
                }
            };
            let s = svc
                .set_auto_renew(&a.service, auto, CLI_ACTOR)
                .await
                .map_err(err)?;
            print(api::views::service(&s));
        }
        Command::Admin(Admin::Package(PackageCmd::Set {
            name,
            quota,
            days,
            price,
        })) => {
            let price = Satang::parse(&price).map_err(|r| format!("--price {r}"))?;
            let p = svc
                .set_package(&NewPackage {
                    name,
                    quota,
                    duration_days: days,
                    price,
                })
                .await
                .map_err(err)?;
            print(api::views::package(&p));
        }
        Command::Admin(Admin::Package(PackageCmd::List)) => {
            let packages = svc.packages().await.map_err(err)?;
            print(json!(packages
                .iter()
                .map(api::views::package)
                .collect::<Vec<_>>()));
        }
        Command::Admin(Admin::Credit(CreditCmd::Topup {
            service,
            amount,
            note,
        })) => {
            let amount = parse_signed_amount(&amount)?;
            let e = svc
                .move_credit(
                    &service,
                    CreditKind::TopUp,
                    amount,
                    note.as_deref(),
                    CLI_ACTOR,
                )
                .await
                .map_err(err)?;
            print(api::views::ledger_entry(&e));
        }
        Command::Admin(Admin::Credit(CreditCmd::Adjust {
            service,
            amount,
            note,
        })) => {
            let amount = parse_signed_amount(&amount)?;
            let e = svc
                .move_credit(
                    &service,
                    CreditKind::Adjustment,
                    amount,
                    Some(&note),
                    CLI_ACTOR,
                )
                .await
                .map_err(err)?;
            print(api::views::ledger_entry(&e));
        }
        Command::Admin(Admin::Credit(CreditCmd::History { service })) => {
            let (balance, entries) = svc.credit_history(&service).await.map_err(err)?;
            print(api::views::credit_history(balance, &entries));
        }
        Command::Admin(Admin::User(UserCmd::Create { name })) => {
            let u = svc.create_user(&name).await.map_err(err)?;
            print(api::views::user(&u));
        }
        Command::Admin(Admin::User(UserCmd::Update { user, banned })) => {
            let u = svc.set_user_banned(&user, banned).await.map_err(err)?;
            print(api::views::user(&u));
        }
        Command::Admin(Admin::Branch(BranchCmd::Create {
            service,
            name,
            main,
            allow_ip,
            limit_quota,
            sandbox,
        })) => {
            let (b, key) = svc
                .create_branch(&NewBranch {
                    service_id: service,
                    name,
                    is_main: main,
                    allow_ips: allow_ip,
                    limit_quota,
                    sandbox,
                })
                .await
                .map_err(err)?;
            print(api::views::branch(&b, Some(&key)));
        }
        Command::Admin(Admin::Branch(BranchCmd::Update(a))) => {
            let b = svc
                .update_branch(
                    &a.branch,
                    &BranchUpdate {
                        name: a.name,
                        active: a.active,
                        allow_ips: (!a.allow_ip.is_empty()).then_some(a.allow_ip),
                        webhook_url: a.webhook_url,
                        webhook_secret: a.webhook_secret,
                        biller_id: a.biller_id,
                        limit_quota: a
                            .quota
                            .as_deref()
                            .map(|q| parse_limit("quota", q))
                            .transpose()?,
                        sandbox: a.sandbox,
                    },
                )
                .await
                .map_err(err)?;
            print(api::views::branch(&b, None));
        }
        Command::Admin(Admin::Key(KeyCmd::Rotate { branch, grace })) => {
            let grace = grace.as_deref().map(parse_duration).transpose()?;
            let key = svc.rotate_key(&branch, grace).await.map_err(err)?;
            print(json!({ "id": branch, "apiKey": key }));
        }
        Command::Sandbox(Sandbox::Transfer {
            from,
            to,
            amount,
            image,
            sender_name,
            receiver_name,
            receiver_account,
            count,
        }) => {
            let amount = Satang::parse(&amount).map_err(|r| format!("--amount {r}"))?;
            if count > 1 && image.is_some() {
                return Err("--image takes a single transfer (no --count)".into());
            }
            let req = NewSandboxTransfer {
                from_bank: from,
                to_bank: to,
                amount,
                sender_name_th: sender_name,
                sender_name_en: None,
                receiver_name_th: receiver_name,
                receiver_name_en: None,
                receiver_account,
            };
            for _ in 0..count {
                let t = app.sandbox.create_transfer(&req).await?;
                if let Some(path) = &image {
                    server::slip_image::write_png(&t.payload, &t.sender.bank_code, path)?;
                }
                let v = json!({
                    "payload": t.payload,
                    "transRef": t.trans_ref,
                    "sendingBank": t.sender.bank_code,
                    "receivingBank": t.receiver.bank_code,
                    "amount": t.amount.as_baht(),
                    "date": domain::clock::format_bangkok(t.occurred_at),
                    "image": image.as_ref().map(|p| p.display().to_string()),
                });
                if count == 1 {
                    print(v);
                } else {
                    let _ = writeln!(std::io::stdout(), "{v}");
                }
            }
        }
        Command::Sandbox(Sandbox::WalletTransfer {
            amount,
            image,
            sender_name,
            receiver_name,
            receiver_phone,
        }) => {
            let amount = Satang::parse(&amount).map_err(|r| format!("--amount {r}"))?;
            let t = app
                .wallet
                .create_transfer(&gateway::NewWalletTransfer {
                    amount,
                    sender_name,
                    receiver_name,
                    receiver_phone,
                })
                .await?;
            if let Some(path) = &image {
                server::slip_image::write_png(&t.payload, "TRUEMONEY", path)?;
            }
            print(json!({
                "payload": t.payload,
                "transactionId": t.transaction_id,
                "amount": t.amount.as_baht(),
                "date": domain::clock::format_bangkok(t.occurred_at),
                "image": image.map(|p| p.display().to_string()),
            }));
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

#[cfg(test)]
mod cli_help {
    use super::Cli;
    use clap::CommandFactory;

    /// Every command, group and option explains itself in `--help` (clap shows a blank
    /// otherwise).
    #[test]
    fn every_command_and_option_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in cmd.get_subcommands() {
                let p = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() {
                    missing.push(p.clone());
                }
                for arg in sub.get_arguments() {
                    let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                    if !builtin && !arg.is_global_set() && arg.get_help().is_none() {
                        missing.push(format!("{p} --{}", arg.get_id()));
                    }
                }
                walk(sub, &p, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "slipverify", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }
}
