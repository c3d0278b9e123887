//! `slipverify sandbox ...`: transfers in the built-in sandbox bank and wallet.

use super::print;
use clap::{Args, Subcommand};
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
        #[command(flatten)]
        slip: SlipArgs,
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
        #[command(flatten)]
        slip: SlipArgs,
        /// Receiver phone number, e.g. 0812345678 (shown masked).
        #[arg(long)]
        receiver_phone: Option<String>,
    },
}

/// What both kinds of transfer take besides their own fields.
#[derive(Args)]
pub(crate) struct SlipArgs {
    /// Also write a PNG slip image carrying the QR.
    #[arg(long)]
    image: Option<PathBuf>,
    /// The sender's name on the transfer.
    #[arg(long)]
    sender_name: Option<String>,
    /// The receiver's name on the transfer.
    #[arg(long)]
    receiver_name: Option<String>,
}

impl SlipArgs {
    /// Writes the slip image when `--image` was given; its path as printed.
    fn write_image(&self, payload: &str, bank: &str) -> anyhow::Result<Option<String>> {
        let Some(path) = &self.image else {
            return Ok(None);
        };
        server::slip_image::write_png(payload, bank, path)?;
        Ok(Some(path.display().to_string()))
    }
}

pub(crate) async fn run(app: &App, cmd: Sandbox) -> anyhow::Result<ExitCode> {
    match cmd {
        Sandbox::Transfer {
            from,
            to,
            amount,
            slip,
            receiver_account,
            count,
        } => {
            let amount = Satang::parse(&amount).map_err(|r| anyhow::anyhow!("--amount {r}"))?;
            if count > 1 && slip.image.is_some() {
                anyhow::bail!("--image takes a single transfer (no --count)");
            }
            let req = NewSandboxTransfer {
                from_bank: from,
                to_bank: to,
                amount,
                sender_name_th: slip.sender_name.clone(),
                sender_name_en: None,
                receiver_name_th: slip.receiver_name.clone(),
                receiver_name_en: None,
                receiver_account,
            };
            for _ in 0..count {
                transfer(app, &req, &slip, count == 1).await?;
            }
        }
        Sandbox::WalletTransfer {
            amount,
            slip,
            receiver_phone,
        } => {
            let amount = Satang::parse(&amount).map_err(|r| anyhow::anyhow!("--amount {r}"))?;
            wallet_transfer(app, amount, &slip, receiver_phone).await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One bank transfer, printed pretty when it is the only one, else as one line.
async fn transfer(
    app: &App,
    req: &NewSandboxTransfer,
    slip: &SlipArgs,
    alone: bool,
) -> anyhow::Result<()> {
    let t = app.sandbox.create_transfer(req).await?;
    let image = slip.write_image(&t.payload, &t.sender.bank_code)?;
    let v = json!({
        "payload": t.payload,
        "transRef": t.trans_ref,
        "sendingBank": t.sender.bank_code,
        "receivingBank": t.receiver.bank_code,
        "amount": t.amount.as_baht(),
        "date": domain::clock::format_bangkok(t.occurred_at),
        "image": image,
    });
    if alone {
        print(v);
    } else {
        let _ = writeln!(std::io::stdout(), "{v}");
    }
    Ok(())
}

async fn wallet_transfer(
    app: &App,
    amount: Satang,
    slip: &SlipArgs,
    receiver_phone: Option<String>,
) -> anyhow::Result<()> {
    let t = app
        .wallet
        .create_transfer(&gateway::NewWalletTransfer {
            amount,
            sender_name: slip.sender_name.clone(),
            receiver_name: slip.receiver_name.clone(),
            receiver_phone,
        })
        .await?;
    let image = slip.write_image(&t.payload, "TRUEMONEY")?;
    print(json!({
        "payload": t.payload,
        "transactionId": t.transaction_id,
        "amount": t.amount.as_baht(),
        "date": domain::clock::format_bangkok(t.occurred_at),
        "image": image,
    }));
    Ok(())
}
