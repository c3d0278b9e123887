//! `admin job`: send a finished job's callback again.

use crate::cli::{print, CLI_ACTOR};
use anyhow::anyhow;
use clap::Subcommand;
use services::Services;

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

pub(super) async fn run(svc: &Services, cmd: JobCmd) -> anyhow::Result<()> {
    let JobCmd::Redeliver { job } = cmd;
    // The code too: an operator scripting redeliveries tells "not finished" from "no such job".
    let r = svc
        .jobs()
        .redeliver_job(&job, CLI_ACTOR)
        .await
        .map_err(|e| anyhow!("{}: {}", e.code(), e.public_message()))?;
    print(api::views::redelivery(&r));
    Ok(())
}
