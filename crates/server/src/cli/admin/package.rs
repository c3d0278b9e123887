//! `admin package`: what a subscription buys (quota per cycle, duration, price).

use super::Public;
use crate::cli::print;
use anyhow::anyhow;
use clap::Subcommand;
use domain::Satang;
use serde_json::json;
use services::subscriptions::NewPackage;
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: PackageCmd) -> anyhow::Result<()> {
    match cmd {
        PackageCmd::Set {
            name,
            quota,
            days,
            price,
        } => {
            let price = Satang::parse(&price).map_err(|r| anyhow!("--price {r}"))?;
            let p = svc
                .billing()
                .set_package(&NewPackage {
                    name,
                    quota,
                    duration_days: days,
                    price,
                })
                .await
                .public()?;
            print(api::views::package(&p));
        }
        PackageCmd::List => {
            let packages = svc.billing().packages().await.public()?;
            print(json!(packages
                .iter()
                .map(api::views::package)
                .collect::<Vec<_>>()));
        }
    }
    Ok(())
}
