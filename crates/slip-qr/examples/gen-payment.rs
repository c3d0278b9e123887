//! Prints a Thai QR payment payload, for `scripts/check-promptpay-vectors` and manual checks.
//!
//! gen-payment msisdn|natid|ewallet ID [--amount BAHT] [--name NAME]
//! gen-payment biller BILLER_ID REF1 [--ref2 REF2] [--amount BAHT] [--name NAME]

use std::process::ExitCode;

use slip_qr::{generate_payment_qr, parse_amount, PaymentRequest, PaymentTarget};

const USAGE: &str = "usage: gen-payment msisdn|natid|ewallet ID [--amount BAHT] [--name NAME]\n       gen-payment biller BILLER_ID REF1 [--ref2 REF2] [--amount BAHT] [--name NAME]";

fn run(args: &[String]) -> Result<String, Box<dyn std::error::Error>> {
    let mut positional = Vec::new();
    let (mut amount, mut name, mut ref2) = (None, None, None);
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let slot = match arg.as_str() {
            "--amount" => &mut amount,
            "--name" => &mut name,
            "--ref2" => &mut ref2,
            _ => {
                positional.push(arg.clone());
                continue;
            }
        };
        *slot = Some(it.next().ok_or(format!("{arg} needs a value"))?.clone());
    }
    let target = match positional.as_slice() {
        [kind, id] if kind == "msisdn" => PaymentTarget::Msisdn(id.clone()),
        [kind, id] if kind == "natid" => PaymentTarget::NatId(id.clone()),
        [kind, id] if kind == "ewallet" => PaymentTarget::EWalletId(id.clone()),
        [kind, biller_id, ref1] if kind == "biller" => PaymentTarget::Biller {
            biller_id: biller_id.clone(),
            ref1: ref1.clone(),
            ref2,
        },
        _ => return Err(USAGE.into()),
    };
    let amount_satang = amount
        .map(|a| parse_amount(&a))
        .transpose()
        .map_err(|e| format!("{}: {e}", e.field()))?;
    let req = PaymentRequest {
        target,
        amount_satang,
        merchant_name: name,
    };
    Ok(generate_payment_qr(&req).map_err(|e| format!("{}: {e}", e.field()))?)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(payload) => {
            println!("{payload}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}
