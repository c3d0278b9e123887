//! `slipverify admin ...`: services, users, partners, plans, packages, credit, audit,
//! branches and keys, straight through `Services` (no HTTP).

use super::{print, CLI_ACTOR};
use clap::{Args, Subcommand};
use domain::billing::{AutoRenew, CreditKind};
use domain::model::ServiceState;
use domain::Satang;
use domain::{BranchId, ServiceId, UserId};
use serde_json::json;
use services::admin::{BranchUpdate, NewBranch, ServiceUpdate};
use services::subscriptions::NewPackage;
use services::Services;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum Admin {
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
        branch: Option<BranchId>,
        /// A service's subscriptions, renewals and auto-renew changes (its id).
        #[arg(long)]
        service: Option<ServiceId>,
    },
    /// Branches: each with its own API key, IP allow-list, quota and webhook.
    #[command(subcommand)]
    Branch(BranchCmd),
    /// API keys: rotate a branch's key, with an optional grace period.
    #[command(subcommand)]
    Key(KeyCmd),
    /// The attempts log: every verification request, newest first; `--csv FILE` exports it.
    Verifications(VerificationsArgs),
    /// Async jobs: send a finished job's callback again.
    #[command(subcommand)]
    Job(JobCmd),
}

/// The filters of `GET /admin/verifications`, as flags.
#[derive(Args)]
pub(crate) struct VerificationsArgs {
    /// A transRef or a part of one (3+ characters), or an amount such as 1250.50.
    #[arg(long)]
    q: Option<String>,
    /// Only this service's records (its id).
    #[arg(long)]
    service: Option<String>,
    /// Only this branch's records (its id).
    #[arg(long)]
    branch: Option<String>,
    /// verified, duplicate, not_found, pending, no_qr, invalid_qr, refused, unavailable, error.
    #[arg(long)]
    outcome: Option<String>,
    /// A date (a day in Asia/Bangkok) or an RFC 3339 time.
    #[arg(long)]
    from: Option<String>,
    /// A date (up to the end of that day in Asia/Bangkok) or an RFC 3339 time.
    #[arg(long)]
    to: Option<String>,
    /// Records (at most 500; with --csv at most 100000, the default).
    #[arg(long)]
    limit: Option<u32>,
    /// The next page: the `next` the previous page printed.
    #[arg(long)]
    cursor: Option<String>,
    /// Write the records as CSV (UTF-8 with a byte-order mark) to this file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

impl VerificationsArgs {
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                out.push((k.to_string(), v.clone()));
            }
        };
        put("q", &self.q);
        put("service", &self.service);
        put("branch", &self.branch);
        put("outcome", &self.outcome);
        put("from", &self.from);
        put("to", &self.to);
        put("cursor", &self.cursor);
        put("limit", &self.limit.map(|l| l.to_string()));
        out
    }
}

/// `admin verifications`: a page as the admin API prints it, or the CSV export into a file.
async fn verifications(svc: &Services, a: VerificationsArgs) -> Result<(), String> {
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;
    let err = |e: domain::Error| e.public_message();
    match &a.csv {
        None => {
            let page = api::verifications_page(svc, a.pairs()).await.map_err(err)?;
            print(page);
        }
        Some(path) => {
            let stream = api::verifications_csv(svc.clone(), a.pairs()).map_err(err)?;
            let mut file = tokio::fs::File::create(path)
                .await
                .map_err(|e| format!("--csv {}: {e}", path.display()))?;
            let mut stream = std::pin::pin!(stream);
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|e| e.to_string())?;
                file.write_all(chunk.as_bytes())
                    .await
                    .map_err(|e| format!("--csv {}: {e}", path.display()))?;
            }
            file.flush().await.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

#[derive(Subcommand)]
pub(crate) enum JobCmd {
    /// Queue a redelivery of a finished job's callback: the same jobId and body bytes, signed
    /// with the branch's current webhook secret, POSTed to the job's callback URL (with the
    /// usual retries) by a running server's worker. Audited on the branch.
    Redeliver {
        /// The jobId.
        #[arg(long)]
        job: domain::JobId,
    },
}

#[derive(Subcommand)]
pub(crate) enum ServiceCmd {
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
        service: ServiceId,
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
pub(crate) struct AutoRenewArgs {
    /// The service's id.
    #[arg(long)]
    service: ServiceId,
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
pub(crate) enum PackageCmd {
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
pub(crate) enum CreditCmd {
    /// Add credit (a positive amount).
    Topup {
        /// The service's id.
        #[arg(long)]
        service: ServiceId,
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
        service: ServiceId,
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
        service: ServiceId,
    },
}

/// `admin credit topup` and `adjust`: the movement (kind, `--amount`, `--note`), printed.
async fn move_credit(
    svc: &Services,
    service: &ServiceId,
    kind: CreditKind,
    amount: &str,
    note: Option<&str>,
) -> Result<(), String> {
    let amount = parse_signed_amount(amount)?;
    let e = svc
        .move_credit(service, kind, amount, note, CLI_ACTOR)
        .await
        .map_err(|e| e.public_message())?;
    print(api::views::ledger_entry(&e));
    Ok(())
}

/// Baht with an optional sign, e.g. `500.00` or `-100.00`.
pub(crate) fn parse_signed_amount(v: &str) -> Result<Satang, String> {
    let v = v.trim();
    let (neg, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let s = Satang::parse(digits).map_err(|r| format!("--amount {r}"))?;
    Ok(Satang(if neg { -s.0 } else { s.0 }))
}

#[derive(Args)]
pub(crate) struct ServiceUpdateArgs {
    /// The service's id.
    #[arg(long)]
    service: ServiceId,
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
    owner: Option<UserId>,
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
pub(crate) enum PlanCmd {
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
pub(crate) enum PartnerCmd {
    /// Create a partner; prints its apiKey and secret once.
    Create {
        /// The partner's name.
        #[arg(long)]
        name: String,
        /// A service the partner may manage; repeatable.
        #[arg(long = "service", required = true)]
        services: Vec<ServiceId>,
        /// Comma-separated: quota:read, quota:write, branch:read, branch:write,
        /// bank-account:read, bank-account:write.
        #[arg(long)]
        permissions: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum UserCmd {
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
        user: UserId,
        /// true or false.
        #[arg(long, action = clap::ArgAction::Set)]
        banned: bool,
    },
}

/// `90s`, `30m`, `24h` or `7d`.
pub(crate) fn parse_duration(v: &str) -> Result<time::Duration, String> {
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
pub(crate) fn parse_limit(field: &str, v: &str) -> Result<Option<i64>, String> {
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
pub(crate) fn parse_expiry(v: &str) -> Result<Option<time::OffsetDateTime>, String> {
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
pub(crate) enum BranchCmd {
    /// Create a branch; prints its API key once.
    Create {
        /// The service's id.
        #[arg(long)]
        service: ServiceId,
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
    Update(Box<BranchUpdateArgs>),
}

#[derive(Args)]
pub(crate) struct BranchUpdateArgs {
    /// The branch's id.
    #[arg(long)]
    branch: BranchId,
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
    /// The LINE Official Account's channel secret (checks webhook signatures); "" clears it.
    #[arg(long)]
    line_channel_secret: Option<String>,
    /// The LINE channel access token (downloads, replies, pushes); "" clears it.
    #[arg(long)]
    line_channel_token: Option<String>,
    /// A LINE user, group or room id for staff notices and verified payments; "" clears it.
    #[arg(long)]
    line_notify_to: Option<String>,
    /// The bot's language: th (default) or en.
    #[arg(long)]
    line_language: Option<String>,
    /// In groups: silent (default; only problems) or verbose.
    #[arg(long)]
    line_group_mode: Option<String>,
    /// Push messages (they cost money): on or off (default off).
    #[arg(long)]
    line_push: Option<String>,
    /// Pushes per branch per Thai day (default 50).
    #[arg(long)]
    line_push_daily_limit: Option<u32>,
}

/// The `--line-*` flags as a patch.
fn line_patch(a: &BranchUpdateArgs) -> Result<domain::line::LinePatch, String> {
    use domain::line::{GroupMode, Lang, LinePatch};
    Ok(LinePatch {
        channel_secret: a.line_channel_secret.clone(),
        channel_token: a.line_channel_token.clone(),
        notify_to: a.line_notify_to.clone(),
        language: a
            .line_language
            .as_deref()
            .map(|l| Lang::parse(l).ok_or("--line-language must be th or en"))
            .transpose()?,
        group_mode: a
            .line_group_mode
            .as_deref()
            .map(|m| GroupMode::parse(m).ok_or("--line-group-mode must be silent or verbose"))
            .transpose()?,
        push: match a.line_push.as_deref() {
            None => None,
            Some("on") => Some(true),
            Some("off") => Some(false),
            Some(_) => return Err("--line-push must be on or off".into()),
        },
        push_daily_limit: a.line_push_daily_limit,
    })
}

#[derive(Subcommand)]
pub(crate) enum KeyCmd {
    /// Issue a new API key for a branch; the old key stops working at once.
    Rotate {
        /// The branch's id.
        #[arg(long)]
        branch: BranchId,
        /// Keep the old key working this long (e.g. 30m, 24h, 7d; at most 7 days).
        #[arg(long)]
        grace: Option<String>,
    },
}

pub(crate) async fn run(svc: &Services, cmd: Admin) -> Result<ExitCode, String> {
    let err = |e: domain::Error| e.public_message();
    match cmd {
        Admin::Verifications(a) => verifications(svc, a).await?,
        Admin::Service(ServiceCmd::Create { name, quota }) => {
            let s = svc.create_service(&name, quota).await.map_err(err)?;
            print(api::views::service(&s));
        }
        Admin::Service(ServiceCmd::Update(a)) => {
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
        Admin::Partner(PartnerCmd::Create {
            name,
            services,
            permissions,
        }) => {
            let (p, key) = svc
                .create_partner(&name, &services, &[permissions])
                .await
                .map_err(err)?;
            print(api::views::new_partner(&p, &key));
        }
        Admin::Plan(PlanCmd::Set { name, rps, burst }) => {
            let p = svc.set_plan(&name, rps, burst).await.map_err(err)?;
            print(api::views::plan(&p));
        }
        Admin::Plan(PlanCmd::List) => {
            let plans = svc.list_plans().await.map_err(|e| e.to_string())?;
            print(json!(plans
                .iter()
                .map(api::views::plan)
                .collect::<Vec<_>>()));
        }
        Admin::Audit { branch, service } => {
            let entries = match (branch, service) {
                (Some(branch), _) => svc.list_audit(&branch).await.map_err(|e| e.to_string()),
                (None, Some(service)) => svc.service_audit(&service).await.map_err(err),
                (None, None) => unreachable!("clap requires --branch or --service"),
            }?;
            print(api::views::audit(&entries));
        }
        Admin::Service(ServiceCmd::Subscribe {
            service,
            package,
            auto_renew,
            pay_from_credit,
        }) => {
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
        Admin::Service(ServiceCmd::AutoRenew(a)) => {
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
        Admin::Package(PackageCmd::Set {
            name,
            quota,
            days,
            price,
        }) => {
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
        Admin::Package(PackageCmd::List) => {
            let packages = svc.packages().await.map_err(err)?;
            print(json!(packages
                .iter()
                .map(api::views::package)
                .collect::<Vec<_>>()));
        }
        Admin::Credit(CreditCmd::Topup {
            service,
            amount,
            note,
        }) => {
            move_credit(svc, &service, CreditKind::TopUp, &amount, note.as_deref()).await?;
        }
        Admin::Credit(CreditCmd::Adjust {
            service,
            amount,
            note,
        }) => {
            move_credit(svc, &service, CreditKind::Adjustment, &amount, Some(&note)).await?;
        }
        Admin::Credit(CreditCmd::History { service }) => {
            let (balance, entries) = svc.credit_history(&service).await.map_err(err)?;
            print(api::views::credit_history(balance, &entries));
        }
        Admin::User(UserCmd::Create { name }) => {
            let u = svc.create_user(&name).await.map_err(err)?;
            print(api::views::user(&u));
        }
        Admin::User(UserCmd::Update { user, banned }) => {
            let u = svc.set_user_banned(&user, banned).await.map_err(err)?;
            print(api::views::user(&u));
        }
        Admin::Branch(BranchCmd::Create {
            service,
            name,
            main,
            allow_ip,
            limit_quota,
            sandbox,
        }) => {
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
        Admin::Branch(BranchCmd::Update(a)) => {
            let line = line_patch(&a)?;
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
                        line,
                    },
                )
                .await
                .map_err(err)?;
            let mut view = api::views::branch(&b, None);
            view.line = svc
                .line_settings(&b.id)
                .await
                .map_err(err)?
                .as_ref()
                .map(api::views::line);
            print(view);
        }
        Admin::Key(KeyCmd::Rotate { branch, grace }) => {
            let grace = grace.as_deref().map(parse_duration).transpose()?;
            let key = svc.rotate_key(&branch, grace).await.map_err(err)?;
            print(json!({ "id": branch, "apiKey": key }));
        }
        Admin::Job(JobCmd::Redeliver { job }) => {
            let r = svc
                .redeliver_job(&job, CLI_ACTOR)
                .await
                .map_err(|e| format!("{}: {}", e.code(), e.public_message()))?;
            print(api::views::redelivery(&r));
        }
    }
    Ok(ExitCode::SUCCESS)
}
