//! `admin branch`: branches, each with its own API key, IP allow-list, quota and webhook.

use super::{parse_limit, Public};
use crate::cli::print;
use anyhow::anyhow;
use clap::{Args, Subcommand};
use domain::{BranchId, ServiceId};
use services::admin::{BranchUpdate, NewBranch};
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: BranchCmd) -> anyhow::Result<()> {
    match cmd {
        BranchCmd::Create {
            service,
            name,
            main,
            allow_ip,
            limit_quota,
            sandbox,
        } => {
            let (b, key) = svc
                .admin()
                .create_branch(&NewBranch {
                    service_id: service,
                    name,
                    is_main: main,
                    allow_ips: allow_ip,
                    limit_quota,
                    sandbox,
                })
                .await
                .public()?;
            print(api::views::branch(&b, Some(&key)));
        }
        BranchCmd::Update(a) => {
            let b = svc
                .admin()
                .update_branch(&a.branch, &a.update()?)
                .await
                .public()?;
            let mut view = api::views::branch(&b, None);
            view.line = svc
                .admin()
                .line_settings(&b.id)
                .await
                .public()?
                .as_ref()
                .map(api::views::line);
            print(view);
        }
    }
    Ok(())
}

impl BranchUpdateArgs {
    /// The flags as an update (the `--line-*` ones checked first).
    fn update(&self) -> anyhow::Result<BranchUpdate> {
        let line = self.line_patch()?;
        Ok(BranchUpdate {
            name: self.name.clone(),
            active: self.active,
            allow_ips: (!self.allow_ip.is_empty()).then(|| self.allow_ip.clone()),
            webhook_url: self.webhook_url.clone(),
            webhook_secret: self.webhook_secret.clone(),
            biller_id: self.biller_id.clone(),
            limit_quota: self
                .quota
                .as_deref()
                .map(|q| parse_limit("quota", q))
                .transpose()?,
            sandbox: self.sandbox,
            line,
        })
    }

    /// The `--line-*` flags as a patch.
    fn line_patch(&self) -> anyhow::Result<domain::line::LinePatch> {
        use domain::line::{GroupMode, Lang, LinePatch};
        Ok(LinePatch {
            channel_secret: self.line_channel_secret.clone(),
            channel_token: self.line_channel_token.clone(),
            notify_to: self.line_notify_to.clone(),
            language: self
                .line_language
                .as_deref()
                .map(|l| Lang::parse(l).ok_or_else(|| anyhow!("--line-language must be th or en")))
                .transpose()?,
            group_mode: self
                .line_group_mode
                .as_deref()
                .map(|m| {
                    GroupMode::parse(m)
                        .ok_or_else(|| anyhow!("--line-group-mode must be silent or verbose"))
                })
                .transpose()?,
            push: match self.line_push.as_deref() {
                None => None,
                Some("on") => Some(true),
                Some("off") => Some(false),
                Some(_) => return Err(anyhow!("--line-push must be on or off")),
            },
            push_daily_limit: self.line_push_daily_limit,
        })
    }
}
