//! `slipverify`: serve the API, administer services and branches, drive the sandbox bank and
//! explain QR payloads. The command line lives in `cli/` (one file per command group).

mod cli;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

// glibc's malloc was ~16 % of the server's CPU under `scripts/bench-http` (freeing and
// consolidating chunks across tokio's threads); mimalloc keeps a heap per thread.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = if matches!(cli.command, Command::Serve { .. }) {
        "info"
    } else {
        "warn"
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SLIPVERIFY_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match cli::run(cli).await {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
    }
}
