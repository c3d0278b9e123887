//! `slipverify-sim`: the upstream simulator on a fixed address, for trying a configuration
//! before real credentials exist. Point a connector's `base_url` at the printed address.

use clap::Parser;
use sim::{Fault, Fixtures, Sim, SimConfig};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "slipverify-sim",
    about = "Serve upstream wire formats on loopback from a fixture file"
)]
struct Args {
    /// Address to listen on (loopback by default; port 0 picks one).
    #[arg(long, default_value = "127.0.0.1:8089")]
    bind: SocketAddr,
    /// JSON fixture file: {"bank": [rawSlip...], "pending": [transRef...], "truewallet": [...]}.
    /// Without it the built-in example is served.
    #[arg(long)]
    fixtures: Option<PathBuf>,
    /// Bearer key the verify routes accept (any key when unset).
    #[arg(long, env = "SIM_API_KEY")]
    api_key: Option<String>,
    /// Client credentials the token endpoint accepts (any pair when unset).
    #[arg(long, env = "SIM_CLIENT_ID")]
    client_id: Option<String>,
    #[arg(long, env = "SIM_CLIENT_SECRET")]
    client_secret: Option<String>,
    /// Lifetime of issued tokens in seconds.
    #[arg(long, default_value_t = 1799)]
    token_lifetime: u64,
    /// Faults switched on from the start, e.g. `--fault status=503 --fault latency_ms=2000`
    /// (also: token_lifetime=N, revoke, token_status=N, malformed, truncated,
    /// other_reference, other_bank, hold).
    #[arg(long = "fault")]
    faults: Vec<String>,
    /// Serve HTTPS requiring a client certificate (KBank's two-way TLS); the test CA, a client
    /// certificate and its key are written to this directory (ca.pem, client.pem,
    /// client-key.pem) for the connector's `ca_file`, `client_cert`, `client_key_file`.
    #[arg(long)]
    https_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let args = Args::parse();
    let fixtures = match &args.fixtures {
        Some(p) => Fixtures::load(p)?,
        None => Fixtures::example(),
    };
    let faults = args
        .faults
        .iter()
        .map(|f| Fault::parse(f))
        .collect::<Result<Vec<_>, _>>()?;
    let config = SimConfig {
        fixtures,
        api_key: args.api_key,
        client_id: args.client_id,
        client_secret: args.client_secret,
        token_lifetime_s: args.token_lifetime,
        faults,
        ..SimConfig::default()
    };
    let sim = match &args.https_dir {
        None => Sim::start_on(config, args.bind).await,
        Some(dir) => match Sim::start_https_on(config, args.bind).await {
            Ok((sim, pki)) => {
                let write = |name: &str, text: &str| {
                    std::fs::write(dir.join(name), text)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.join(name).display()))
                };
                write("ca.pem", &pki.ca_pem)?;
                write("client.pem", &pki.client_cert_pem)?;
                write("client-key.pem", &pki.client_key_pem)?;
                Ok(sim)
            }
            Err(e) => Err(e),
        },
    }
    .map_err(|e| anyhow::anyhow!("bind {}: {e}", args.bind))?;
    println!("simulator listening on {}", sim.base_url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
