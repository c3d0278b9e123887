//! `slipverify config check`: the effective configuration, secrets redacted.

use clap::Subcommand;
use std::io::Write;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum ConfigCmd {
    /// Print the effective configuration with every secret redacted; exit status 2 naming
    /// the offending key when it is invalid.
    Check {
        /// JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn run(cfg: &config::Config, cmd: &ConfigCmd) -> anyhow::Result<ExitCode> {
    let ConfigCmd::Check { json } = cmd;
    let text = if *json { cfg.to_json() } else { cfg.to_toml() };
    let _ = writeln!(std::io::stdout(), "{}", text.trim_end());
    Ok(ExitCode::SUCCESS)
}
