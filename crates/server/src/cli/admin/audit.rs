//! `admin audit`: a branch's quota changes or a service's subscriptions, renewals and
//! auto-renew changes, oldest first.

use super::Public;
use crate::cli::print;
use clap::Args;
use domain::{BranchId, ServiceId};
use services::Services;

#[derive(Args)]
#[command(group(clap::ArgGroup::new("of").required(true).args(["branch", "service"])))]
pub(crate) struct AuditArgs {
    /// A branch's quota changes (its id).
    #[arg(long)]
    branch: Option<BranchId>,
    /// A service's subscriptions, renewals and auto-renew changes (its id).
    #[arg(long)]
    service: Option<ServiceId>,
}

pub(super) async fn run(svc: &Services, a: AuditArgs) -> anyhow::Result<()> {
    let entries = match (a.branch, a.service) {
        (Some(branch), _) => svc.admin().list_audit(&branch).await?,
        (None, Some(service)) => svc.billing().service_audit(&service).await.public()?,
        (None, None) => unreachable!("clap requires --branch or --service"),
    };
    print(api::views::audit(&entries));
    Ok(())
}
