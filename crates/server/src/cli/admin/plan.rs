//! `admin plan`: requests per second and burst per branch.

use super::Public;
use crate::cli::print;
use clap::Subcommand;
use serde_json::json;
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: PlanCmd) -> anyhow::Result<()> {
    match cmd {
        PlanCmd::Set { name, rps, burst } => {
            let p = svc.admin().set_plan(&name, rps, burst).await.public()?;
            print(api::views::plan(&p));
        }
        PlanCmd::List => {
            let plans = svc.admin().list_plans().await?;
            print(json!(plans
                .iter()
                .map(api::views::plan)
                .collect::<Vec<_>>()));
        }
    }
    Ok(())
}
