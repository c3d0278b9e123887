//! `slipverify qr PAYLOAD`: explain a QR payload; pure, no database.

use super::print;
use serde_json::json;
use std::process::ExitCode;

pub(crate) fn run(payload: &str) -> anyhow::Result<ExitCode> {
    // Pure: no database needed to explain a QR.
    // Payment QRs may be longer than a slip's 128 characters (EMVCo allows 512).
    let parsed = match slip_qr::classify(payload) {
        Err(slip_qr::QrError::TooLong { .. }) if payload.trim().starts_with("000201") => {
            slip_qr::parse_payment_qr(payload).map(slip_qr::ParsedQr::PaymentQr)
        }
        other => other,
    };
    Ok(match parsed {
        Ok(parsed) => {
            let is_slip = matches!(parsed, slip_qr::ParsedQr::BankSlip(_));
            print(serde_json::to_value(parsed)?);
            if is_slip {
                ExitCode::SUCCESS
            } else {
                if let Err(e) = slip_qr::parse_bank_slip(payload) {
                    eprintln!("not a bank transfer slip: {e}");
                }
                ExitCode::from(1)
            }
        }
        Err(e) => {
            print(json!({ "error": e.code(), "message": e.to_string() }));
            ExitCode::from(1)
        }
    })
}
