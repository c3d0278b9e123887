//! `slipverify connectors check`: reach each configured connector.

use super::print;
use clap::Subcommand;
use server::App;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum ConnectorsCmd {
    /// Reach each connector (a token request where there is one) and report ok or the error,
    /// verifying nothing; one JSON line per connector, exit status 1 when any failed.
    Check,
}

pub(crate) async fn run(app: &App, cmd: ConnectorsCmd) -> anyhow::Result<ExitCode> {
    let svc = &app.services;
    match cmd {
        ConnectorsCmd::Check => {
            let mut failed = false;
            for c in svc.status().check_connectors().await {
                failed |= c.result.is_err();
                let mut line = match c.result {
                    Ok(()) => serde_json::json!({"name": c.name, "ok": true}),
                    Err(e) => serde_json::json!({"name": c.name, "ok": false, "error": e}),
                };
                // Only where it applies, so the other kinds' lines stay as they were.
                if c.client_certificate {
                    line["clientCertificate"] = serde_json::json!(if line["ok"] == true {
                        "presented"
                    } else {
                        "configured"
                    });
                }
                print(line);
            }
            if failed {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
