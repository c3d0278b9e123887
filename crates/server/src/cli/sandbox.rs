//! `slipverify sandbox ...`: transfers in the built-in sandbox bank and wallet.

use super::print;
use clap::Subcommand;
use domain::Satang;
use gateway::NewSandboxTransfer;
use serde_json::json;
use server::App;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum Sandbox {
    /// Create a sandbox transfer; prints its payload and reference.
    Transfer {
        /// Sending bank code, e.g. 004.
        #[arg(long)]
        from: String,
        /// Receiving bank code, e.g. 014.
        #[arg(long)]
        to: String,
        /// Amount in baht, e.g. 150.00.
        #[arg(long)]
        amount: String,
        /// Also write a PNG slip image carrying the QR.
        #[arg(long)]
        image: Option<PathBuf>,
        /// The sender's name on the transfer.
        #[arg(long)]
        sender_name: Option<String>,
        /// The receiver's name on the transfer.
        #[arg(long)]
        receiver_name: Option<String>,
        /// Receiver account number (digits).
        #[arg(long)]
        receiver_account: Option<String>,
        /// Create this many transfers; above 1, one compact JSON object per line.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        count: u32,
    },
    /// Create a sandbox TrueMoney Wallet transfer; prints its payload and transaction id.
    WalletTransfer {
        /// Amount in baht, e.g. 50.00.
        #[arg(long)]
        amount: String,
        /// Also write a PNG slip image carrying the QR.
        #[arg(long)]
        image: Option<PathBuf>,
        /// The sender's name on the transfer.
        #[arg(long)]
        sender_name: Option<String>,
        /// The receiver's name on the transfer.
        #[arg(long)]
        receiver_name: Option<String>,
        /// Receiver phone number, e.g. 0812345678 (shown masked).
        #[arg(long)]
        receiver_phone: Option<String>,
    },
}

pub(crate) async fn run(app: &App, cmd: Sandbox) -> Result<ExitCode, String> {
    match cmd {
        Sandbox::Transfer {
            from,
            to,
            amount,
            image,
            sender_name,
            receiver_name,
            receiver_account,
            count,
        } => {
            let amount = Satang::parse(&amount).map_err(|r| format!("--amount {r}"))?;
            if count > 1 && image.is_some() {
                return Err("--image takes a single transfer (no --count)".into());
            }
            let req = NewSandboxTransfer {
                from_bank: from,
                to_bank: to,
                amount,
                sender_name_th: sender_name,
                sender_name_en: None,
                receiver_name_th: receiver_name,
                receiver_name_en: None,
                receiver_account,
            };
            for _ in 0..count {
                let t = app.sandbox.create_transfer(&req).await?;
                if let Some(path) = &image {
                    server::slip_image::write_png(&t.payload, &t.sender.bank_code, path)?;
                }
                let v = json!({
                    "payload": t.payload,
                    "transRef": t.trans_ref,
                    "sendingBank": t.sender.bank_code,
                    "receivingBank": t.receiver.bank_code,
                    "amount": t.amount.as_baht(),
                    "date": domain::clock::format_bangkok(t.occurred_at),
                    "image": image.as_ref().map(|p| p.display().to_string()),
                });
                if count == 1 {
                    print(v);
                } else {
                    let _ = writeln!(std::io::stdout(), "{v}");
                }
            }
        }
        Sandbox::WalletTransfer {
            amount,
            image,
            sender_name,
            receiver_name,
            receiver_phone,
        } => {
            let amount = Satang::parse(&amount).map_err(|r| format!("--amount {r}"))?;
            let t = app
                .wallet
                .create_transfer(&gateway::NewWalletTransfer {
                    amount,
                    sender_name,
                    receiver_name,
                    receiver_phone,
                })
                .await?;
            if let Some(path) = &image {
                server::slip_image::write_png(&t.payload, "TRUEMONEY", path)?;
            }
            print(json!({
                "payload": t.payload,
                "transactionId": t.transaction_id,
                "amount": t.amount.as_baht(),
                "date": domain::clock::format_bangkok(t.occurred_at),
                "image": image.map(|p| p.display().to_string()),
            }));
        }
    }
    Ok(ExitCode::SUCCESS)
}
