//! Reading the text of Thai slip mini-QRs and Thai QR payment codes.
//!
//! Three kinds are recognised: bank-transfer slips (what the service verifies), TrueMoney Wallet
//! slips, and PromptPay / Thai QR *payment* codes, which people often upload by mistake. Pure:
//! no I/O, no clock.

mod bank_slip;
mod crc;
mod error;
mod frame;
mod generate;
mod payment;
mod tlv;
mod truemoney;

use serde::Serialize;

pub use bank_slip::{encode_bank_slip, parse_bank_slip, BankSlipQr};
pub use crc::crc16_ccitt_false;
pub use error::{NotSlipKind, QrError, ReferenceProblem};
pub use generate::{
    format_amount, generate_payment_qr, normalize_msisdn, parse_amount, validate_amount_satang,
    validate_biller_id, validate_ewallet_id, validate_merchant_name, validate_nat_id,
    validate_ref1, validate_ref2, GenerateError, PaymentRequest, PaymentTarget, MAX_AMOUNT_SATANG,
    MAX_MERCHANT_NAME_LEN, MAX_REF_LEN,
};
pub use payment::{parse_payment_qr, PaymentQr, MAX_PAYMENT_QR_LEN};
pub use truemoney::{encode_truemoney_slip, TrueMoneySlipQr};

/// Longest payload accepted, in characters, after trimming (compat.md: payload is 1–128 chars).
pub const MAX_PAYLOAD_LEN: usize = 128;
/// Longest bank-slip transaction reference accepted.
pub const MAX_REFERENCE_LEN: usize = 35;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum ParsedQr {
    BankSlip(BankSlipQr),
    TrueMoneySlip(TrueMoneySlipQr),
    PaymentQr(PaymentQr),
}

/// Reads any of the three kinds, checking its structure and CRC.
pub fn classify(input: &str) -> Result<ParsedQr, QrError> {
    let payload = frame::prepare(input)?;
    if payment::is_payment_format(payload) {
        return payment::parse(payload).map(ParsedQr::PaymentQr);
    }
    let slip = frame::SlipFrame::read(payload)?;
    match slip.kind {
        frame::SlipKind::Bank => bank_slip::from_frame(&slip).map(ParsedQr::BankSlip),
        frame::SlipKind::TrueMoney => truemoney::from_frame(&slip).map(ParsedQr::TrueMoneySlip),
    }
}
