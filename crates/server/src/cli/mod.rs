//! The `slipverify` command line: the clap definitions and `run`, which hands each command
//! group to its own module (one file per group, its clap enum beside its handler).

mod admin;
mod config_cmd;
mod connectors;
mod qr;
mod sandbox;
mod serve;

use clap::{Parser, Subcommand};
use domain::SystemClock;
use server::App;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "slipverify",
    version,
    about = "Verify Thai bank-transfer slips"
)]
pub(crate) struct Cli {
    /// A TOML configuration file (see docs/configuration.md); else `SLIPVERIFY_CONFIG`.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// sqlite://FILE (default: sqlite://slipverify.db) or postgres://USER@HOST:PORT/DB; wins
    /// over `database.url` and SLIPVERIFY_DATABASE_URL.
    #[arg(long, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run the HTTP API.
    Serve {
        /// HOST:PORT (default 127.0.0.1:8080); wins over `server.listen`.
        #[arg(long)]
        listen: Option<String>,
        /// HOST:PORT of a separate listener serving Prometheus metrics at /metrics (off by
        /// default; no authentication: bind loopback or a private address); wins over
        /// `metrics.listen`.
        #[arg(long)]
        metrics_listen: Option<String>,
        /// Create a demo service, branch and sandbox transfers and print a ready curl line.
        #[arg(long)]
        demo: bool,
        /// A proxy (address or CIDR) whose X-Forwarded-For is believed; repeatable. Without
        /// one, the allow-lists see the TCP peer.
        /// Wins over `server.trusted_proxies`.
        #[arg(long = "trusted-proxy", value_delimiter = ',')]
        trusted_proxy: Vec<String>,
        /// Turns on the admin API (`/admin/...`) with this bearer token (at least 32
        /// characters); wins over `server.admin_token`. Prefer `SLIPVERIFY_ADMIN_TOKEN` or
        /// `server.admin_token_file`: a flag shows in the process list.
        #[arg(long)]
        admin_token: Option<String>,
    },
    /// The configuration (file, environment, flags; see docs/configuration.md).
    #[command(subcommand)]
    Config(config_cmd::ConfigCmd),
    /// The bank and provider connectors of the configuration.
    #[command(subcommand)]
    Connectors(connectors::ConnectorsCmd),
    /// Services, branches and keys.
    #[command(subcommand)]
    Admin(admin::Admin),
    /// The built-in sandbox bank.
    #[command(subcommand)]
    Sandbox(sandbox::Sandbox),
    /// Explain a QR payload: the parsed slip as JSON, or why it is not one (exit status 1).
    Qr {
        /// The QR payload text, as read from the slip.
        payload: String,
    },
    /// Read slip QRs from image files or folders: one line per image.
    Read {
        /// Image files or folders (read recursively).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Parallel readers (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// One JSON object per line: {file, payload, kind, error, ms}.
        #[arg(long)]
        json: bool,
        /// The exhaustive scan (`limits.scan_exhaustive`): no evidence gate, no scan budget.
        #[arg(long)]
        exhaustive: bool,
    },
}

/// Who the CLI's changes are recorded as (ledger rows, audit entries).
pub(crate) const CLI_ACTOR: &str = "cli";

pub(crate) fn print(v: impl serde::Serialize) {
    // A closed stdout (`| head`) is not an error worth a panic.
    let _ = writeln!(
        std::io::stdout(),
        "{}",
        serde_json::to_string_pretty(&v).unwrap_or_default()
    );
}

pub(crate) async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Pure commands first: no configuration or database needed.
    if let Command::Qr { payload } = &cli.command {
        return qr::run(payload);
    }
    let cfg =
        config::load(&sources(&cli)).map_err(|e| anyhow::anyhow!("invalid configuration:\n{e}"))?;
    if let Command::Config(cmd) = &cli.command {
        return config_cmd::run(&cfg, cmd);
    }
    // `read` honours `[limits]` (the same reader limits as `serve`); no database needed.
    if let Command::Read {
        paths, jobs, json, ..
    } = &cli.command
    {
        let limits = server::reader_limits(&cfg.limits, reader::Limits::default());
        return Ok(server::read_cmd::run(paths, *jobs, *json, &limits));
    }
    let app = App::open_with(&cfg, Arc::new(SystemClock)).await?;
    match cli.command {
        Command::Qr { .. } | Command::Read { .. } | Command::Config(_) => {
            unreachable!("handled above")
        }
        Command::Serve { demo, .. } => serve::run(&app, &cfg, demo).await,
        Command::Connectors(cmd) => connectors::run(&app, cmd).await,
        Command::Admin(cmd) => admin::run(&app.services, cmd)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Sandbox(cmd) => sandbox::run(&app, cmd).await,
    }
}

/// The configuration's sources with this command's flags on top: flags win over the
/// environment, which wins over the file.
fn sources(cli: &Cli) -> config::Sources {
    let mut sources = config::Sources::from_process(cli.config.clone());
    if let Some(url) = &cli.database_url {
        sources = sources.set("database.url", url);
    }
    match &cli.command {
        Command::Serve {
            listen,
            metrics_listen,
            trusted_proxy,
            admin_token,
            ..
        } => serve::override_sources(
            sources,
            listen.as_deref(),
            metrics_listen.as_deref(),
            trusted_proxy,
            admin_token.as_deref(),
        ),
        Command::Read {
            exhaustive: true, ..
        } => sources.set("limits.scan_exhaustive", true),
        _ => sources,
    }
}

#[cfg(test)]
mod cli_help {
    use super::Cli;
    use clap::CommandFactory;

    /// Every command, group and option explains itself in `--help` (clap shows a blank
    /// otherwise).
    #[test]
    fn every_command_and_option_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in cmd.get_subcommands() {
                let p = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() {
                    missing.push(p.clone());
                }
                for arg in sub.get_arguments() {
                    let builtin = matches!(arg.get_id().as_str(), "help" | "version");
                    if !builtin && !arg.is_global_set() && arg.get_help().is_none() {
                        missing.push(format!("{p} --{}", arg.get_id()));
                    }
                }
                walk(sub, &p, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "slipverify", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }
}
