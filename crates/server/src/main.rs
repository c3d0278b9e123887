//! `slipverify`: serve the API, administer services and branches, drive the sandbox bank and
//! explain QR payloads. The command line lives in `cli/` (one file per command group).

mod cli;

use clap::Parser;
use cli::{Cli, Command};
use std::process::ExitCode;

// glibc's malloc was ~16 % of the server's CPU under `scripts/bench-http` (freeing and
// consolidating chunks across tokio's and SQLite's threads); mimalloc keeps a heap per thread.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    tune_allocator();
    run()
}

/// mimalloc's defaults doubled the resident memory of `scripts/bench-memory` against glibc's:
/// freed pages were kept a second (`purge_delay`), and its arenas were backed by transparent
/// huge pages (the `no_thp` feature turns those off for the process). Returning freed pages
/// at once keeps the peak at glibc's or below (docs/benchmarks.md, "The server's allocator").
fn tune_allocator() {
    // SAFETY: sets one of mimalloc's options; called before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
}

// `mi_option_purge_delay` of mimalloc 3 (`include/mimalloc.h`), which `libmimalloc-sys` does
// not name; pinned by a test against its default.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

#[tokio::main]
async fn run() -> ExitCode {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_is_the_option_meant_and_is_set() {
        // SAFETY: reads one of mimalloc's options.
        let get = || unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        // mimalloc 3's default purge delay: 1,000 ms.
        assert_eq!(get(), 1000);
        tune_allocator();
        assert_eq!(get(), 0);
    }
}
