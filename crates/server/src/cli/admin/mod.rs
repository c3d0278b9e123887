//! `slipverify admin ...`: one file per group (services, users, partners, plans, packages,
//! credit, audit, branches, keys, verifications, jobs), each with its clap type and its own
//! `run`, straight through `Services` (no HTTP). This file only lists the groups, in the order
//! `--help` shows them.

mod audit;
mod branch;
mod credit;
mod job;
mod key;
mod package;
mod partner;
mod plan;
mod service;
mod user;
mod verifications;

use clap::Subcommand;
use services::Services;

#[derive(Subcommand)]
pub(crate) enum Admin {
    /// Services (applications): create, change, subscribe, auto-renew.
    #[command(subcommand)]
    Service(service::ServiceCmd),
    /// Users: the owners of services; ban and unban.
    #[command(subcommand)]
    User(user::UserCmd),
    /// Partners: who may manage services' quotas through the partner API.
    #[command(subcommand)]
    Partner(partner::PartnerCmd),
    /// Plans: requests per second and burst per branch.
    #[command(subcommand)]
    Plan(plan::PlanCmd),
    /// Packages: what a subscription buys (quota per cycle, duration, price).
    #[command(subcommand)]
    Package(package::PackageCmd),
    /// A service's prepaid credit: top-ups, corrections and the ledger.
    #[command(subcommand)]
    Credit(credit::CreditCmd),
    /// The audit log, oldest first: a branch's quota changes (`--branch`) or a service's
    /// subscriptions, renewals and auto-renew changes (`--service`).
    Audit(audit::AuditArgs),
    /// Branches: each with its own API key, IP allow-list, quota and webhook.
    #[command(subcommand)]
    Branch(branch::BranchCmd),
    /// API keys: rotate a branch's key, with an optional grace period.
    #[command(subcommand)]
    Key(key::KeyCmd),
    /// The attempts log: every verification request, newest first; `--csv FILE` exports it.
    Verifications(verifications::VerificationsArgs),
    /// Async jobs: send a finished job's callback again.
    #[command(subcommand)]
    Job(job::JobCmd),
}

pub(crate) async fn run(svc: &Services, cmd: Admin) -> anyhow::Result<()> {
    match cmd {
        Admin::Service(c) => service::run(svc, c).await,
        Admin::User(c) => user::run(svc, c).await,
        Admin::Partner(c) => partner::run(svc, c).await,
        Admin::Plan(c) => plan::run(svc, c).await,
        Admin::Package(c) => package::run(svc, c).await,
        Admin::Credit(c) => credit::run(svc, c).await,
        Admin::Audit(a) => audit::run(svc, a).await,
        Admin::Branch(c) => branch::run(svc, c).await,
        Admin::Key(c) => key::run(svc, c).await,
        Admin::Verifications(a) => verifications::run(svc, a).await,
        Admin::Job(c) => job::run(svc, c).await,
    }
}

/// A refused operation as the admin API words it for its client: the CLI prints the same
/// sentence, never an internal error's detail.
trait Public<T> {
    fn public(self) -> anyhow::Result<T>;
}

impl<T> Public<T> for Result<T, domain::Error> {
    fn public(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::anyhow!(e.public_message()))
    }
}

/// `N` or `none`.
fn parse_limit(field: &str, v: &str) -> anyhow::Result<Option<i64>> {
    if v.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    v.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or_else(|| anyhow::anyhow!("--{field} must be a non-negative number or none"))
}
