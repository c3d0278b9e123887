//! `serve --demo`: a first run that works with nothing set up. It creates (or reuses) a demo
//! service with a main branch that is a test branch (sandbox ledger, never charged), issues a
//! fresh key (keys are stored hashed, so an old one cannot be shown again), adds sandbox
//! transfers and prints a ready `curl` line.

use crate::App;
use domain::Satang;
use gateway::NewSandboxTransfer;
use services::admin::{BranchUpdate, NewBranch};

pub const DEMO_SERVICE: &str = "Demo shop";

pub struct Demo {
    pub api_key: String,
    /// (from bank, amount, payload) of each sandbox transfer created.
    pub transfers: Vec<(String, Satang, String)>,
}

pub async fn prepare(app: &App) -> anyhow::Result<Demo> {
    let svc = &app.services;
    let service = match svc.admin().find_service_by_name(DEMO_SERVICE).await? {
        Some(s) => s,
        None => svc.admin().create_service(DEMO_SERVICE, Some(1000)).await?,
    };
    let branches = svc.admin().list_branches(&service.id).await?;
    let api_key = match branches.iter().find(|b| b.is_main) {
        Some(main) => {
            // A demo database from before test branches: make its branch one now.
            if !main.sandbox {
                svc.admin()
                    .update_branch(
                        &main.id,
                        &BranchUpdate {
                            sandbox: Some(true),
                            ..Default::default()
                        },
                    )
                    .await?;
            }
            svc.admin().rotate_key(&main.id, None).await?
        }
        None => {
            svc.admin()
                .create_branch(&NewBranch {
                    service_id: service.id.clone(),
                    name: "Main".into(),
                    is_main: true,
                    allow_ips: vec![],
                    limit_quota: None,
                    sandbox: true,
                })
                .await?
                .1
        }
    };
    let mut transfers = Vec::new();
    for (from, to, amount) in [
        ("004", "014", 15000),
        ("014", "004", 125050),
        ("002", "004", 9900),
    ] {
        let t = app
            .sandbox
            .create_transfer(&NewSandboxTransfer {
                from_bank: from.into(),
                to_bank: to.into(),
                amount: Satang(amount),
                sender_name_th: None,
                sender_name_en: None,
                receiver_name_th: None,
                receiver_name_en: None,
                receiver_account: None,
            })
            .await?;
        transfers.push((from.to_string(), t.amount, t.payload));
    }
    Ok(Demo { api_key, transfers })
}

/// What the demo prints: the key and a command that verifies the first transfer.
pub fn banner(demo: &Demo, base: &str) -> String {
    let mut s = String::new();
    s.push_str("\nslipverify demo is ready.\n\n");
    s.push_str(&format!("  API key (shown once): {}\n", demo.api_key));
    s.push_str(
        "  Its branch is a test branch: it verifies on the sandbox ledger and is never charged.\n\n",
    );
    s.push_str("  Sandbox transfers:\n");
    for (bank, amount, payload) in &demo.transfers {
        let note = if bank == "002" {
            "  (Bangkok Bank: pending for 5 minutes)"
        } else {
            ""
        };
        s.push_str(&format!(
            "    {amount:>10} THB from {bank}  payload {payload}{note}\n"
        ));
    }
    let payload = &demo.transfers[0].2;
    s.push_str("\n  Verify the first one:\n\n");
    s.push_str(&format!(
        "curl -s {base}/v2/verify/bank -H 'Authorization: Bearer {}' -H 'Content-Type: application/json' -d '{{\"payload\":\"{payload}\",\"checkDuplicate\":true}}'\n\n",
        demo.api_key
    ));
    s
}
