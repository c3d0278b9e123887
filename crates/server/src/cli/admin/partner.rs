//! `admin partner`: who may manage services' quotas through the partner API.

use super::Public;
use crate::cli::print;
use clap::Subcommand;
use domain::ServiceId;
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: PartnerCmd) -> anyhow::Result<()> {
    let PartnerCmd::Create {
        name,
        services,
        permissions,
    } = cmd;
    let (p, key) = svc
        .partner()
        .create_partner(&name, &services, &[permissions])
        .await
        .public()?;
    print(api::views::new_partner(&p, &key));
    Ok(())
}
