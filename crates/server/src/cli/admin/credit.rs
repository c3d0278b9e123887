//! `admin credit`: a service's prepaid credit: top-ups, corrections and the ledger.

use super::Public;
use crate::cli::{print, CLI_ACTOR};
use anyhow::anyhow;
use clap::Subcommand;
use domain::billing::CreditKind;
use domain::{Satang, ServiceId};
use services::Services;

#[derive(Subcommand)]
pub(crate) enum CreditCmd {
    /// Add credit (a positive amount).
    Topup {
        /// The service's id.
        #[arg(long)]
        service: ServiceId,
        /// Baht, e.g. 500.00.
        #[arg(long)]
        amount: String,
        /// Why (recorded in the ledger).
        #[arg(long)]
        note: Option<String>,
    },
    /// Correct the credit either way; the balance never goes below zero.
    Adjust {
        /// The service's id.
        #[arg(long)]
        service: ServiceId,
        /// Baht, e.g. -100.00 or 25.50.
        #[arg(long, allow_hyphen_values = true)]
        amount: String,
        /// Why (recorded in the ledger).
        #[arg(long)]
        note: String,
    },
    /// The balance and every movement, oldest first.
    History {
        /// The service's id.
        #[arg(long)]
        service: ServiceId,
    },
}

pub(super) async fn run(svc: &Services, cmd: CreditCmd) -> anyhow::Result<()> {
    let (service, kind, amount, note) = match cmd {
        CreditCmd::Topup {
            service,
            amount,
            note,
        } => (service, CreditKind::TopUp, amount, note),
        CreditCmd::Adjust {
            service,
            amount,
            note,
        } => (service, CreditKind::Adjustment, amount, Some(note)),
        CreditCmd::History { service } => {
            let (balance, entries) = svc.billing().credit_history(&service).await.public()?;
            print(api::views::credit_history(balance, &entries));
            return Ok(());
        }
    };
    let amount = parse_signed_amount(&amount)?;
    let e = svc
        .billing()
        .move_credit(&service, kind, amount, note.as_deref(), CLI_ACTOR)
        .await
        .public()?;
    print(api::views::ledger_entry(&e));
    Ok(())
}

/// Baht with an optional sign, e.g. `500.00` or `-100.00`.
fn parse_signed_amount(v: &str) -> anyhow::Result<Satang> {
    let v = v.trim();
    let (neg, digits) = match v.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let s = Satang::parse(digits).map_err(|r| anyhow!("--amount {r}"))?;
    Ok(Satang(if neg { -s.0 } else { s.0 }))
}
