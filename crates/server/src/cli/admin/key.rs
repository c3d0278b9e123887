//! `admin key`: rotate a branch's key, with an optional grace period.

use super::Public;
use crate::cli::print;
use anyhow::anyhow;
use clap::Subcommand;
use domain::BranchId;
use serde_json::json;
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: KeyCmd) -> anyhow::Result<()> {
    let KeyCmd::Rotate { branch, grace } = cmd;
    let grace = grace.as_deref().map(parse_duration).transpose()?;
    let key = svc.admin().rotate_key(&branch, grace).await.public()?;
    print(json!({ "id": branch, "apiKey": key }));
    Ok(())
}

/// `90s`, `30m`, `24h` or `7d`.
fn parse_duration(v: &str) -> anyhow::Result<time::Duration> {
    let bad = || anyhow!("'{v}' is not a duration such as 90s, 30m, 24h or 7d");
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
