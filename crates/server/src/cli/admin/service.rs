//! `admin service`: create, change, subscribe, auto-renew.

use super::{parse_limit, Public};
use crate::cli::{print, CLI_ACTOR};
use anyhow::anyhow;
use clap::{Args, Subcommand};
use domain::billing::AutoRenew;
use domain::model::ServiceState;
use domain::{ServiceId, UserId};
use services::admin::ServiceUpdate;
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: ServiceCmd) -> anyhow::Result<()> {
    let s = match cmd {
        ServiceCmd::Create { name, quota } => {
            svc.admin().create_service(&name, quota).await.public()?
        }
        ServiceCmd::Update(a) => svc
            .admin()
            .update_service(&a.service, &a.update()?)
            .await
            .public()?,
        ServiceCmd::Subscribe {
            service,
            package,
            auto_renew,
            pay_from_credit,
        } => svc
            .billing()
            .subscribe(
                &service,
                &package,
                auto_renew.then_some(AutoRenew::ON),
                pay_from_credit,
                CLI_ACTOR,
            )
            .await
            .public()?,
        ServiceCmd::AutoRenew(a) => svc
            .billing()
            .set_auto_renew(&a.service, a.setting(), CLI_ACTOR)
            .await
            .public()?,
    };
    print(api::views::service(&s));
    Ok(())
}

impl ServiceUpdateArgs {
    /// The flags as an update.
    fn update(&self) -> anyhow::Result<ServiceUpdate> {
        let state = match self.state.as_deref() {
            None => None,
            Some(st) => Some(
                ServiceState::parse(st)
                    .ok_or_else(|| anyhow!("--state must be active, banned or deleted"))?,
            ),
        };
        // Checked in flag order: the first malformed flag is the one reported.
        let limit_quota = self
            .quota
            .as_deref()
            .map(|q| parse_limit("quota", q))
            .transpose()?;
        let expires_at = self.expires.as_deref().map(parse_expiry).transpose()?;
        let rate_limit_rps = match self.rate_limit.as_deref() {
            None => None,
            Some(v) => Some(
                parse_limit("rate-limit", v)?
                    .map(|n| u32::try_from(n).map_err(|_| anyhow!("--rate-limit is too large")))
                    .transpose()?,
            ),
        };
        Ok(ServiceUpdate {
            name: self.name.clone(),
            limit_quota,
            state,
            expires_at,
            owner_id: self.owner.clone(),
            plan: self.plan.clone(),
            owner_verified: self.owner_verified,
            rate_limit_rps,
        })
    }
}

impl AutoRenewArgs {
    fn setting(&self) -> AutoRenew {
        if self.off {
            AutoRenew::default()
        } else {
            AutoRenew {
                on_expiry: !self.on_quota_only,
                on_quota: !self.on_expiry_only,
            }
        }
    }
}

/// `never`, an RFC 3339 instant, or a date meaning the end of that day in Thai time.
fn parse_expiry(v: &str) -> anyhow::Result<Option<time::OffsetDateTime>> {
    use time::format_description::well_known::Rfc3339;
    if v.eq_ignore_ascii_case("never") {
        return Ok(None);
    }
    if let Ok(t) = time::OffsetDateTime::parse(v, &Rfc3339) {
        return Ok(Some(t));
    }
    let date = time::Date::parse(v, time::macros::format_description!("[year]-[month]-[day]"))
        .map_err(|_| anyhow!("--expires must be YYYY-MM-DD, an RFC 3339 time or never"))?;
    let next = date
        .next_day()
        .ok_or_else(|| anyhow!("--expires is out of range"))?;
    Ok(Some(
        next.midnight().assume_offset(time::macros::offset!(+7)),
    ))
}
