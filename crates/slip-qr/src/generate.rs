//! Builds Thai QR Payment (EMVCo merchant-presented) payloads: the QR a customer scans to pay.
//!
//! Validation helpers are public so that an HTTP layer can report the same field errors as
//! [`generate_payment_qr`]. Layout and limits are documented in `docs/qr-generation.md`.

use crate::bank_slip::{push_crc, push_field};
use crate::payment::{BILL_PAYMENT_AID, PROMPTPAY_AID};

/// Largest amount accepted, in satang: 9,999,999.99 THB. Its text ("9999999.99", 10 characters)
/// fits the 13-character EMV limit of tag 54 with room to spare.
pub const MAX_AMOUNT_SATANG: i64 = 999_999_999;
/// Longest merchant name (tag 59), in characters.
pub const MAX_MERCHANT_NAME_LEN: usize = 25;
/// Longest ref1 / ref2, in characters.
pub const MAX_REF_LEN: usize = 20;

/// Who gets paid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PaymentTarget {
    /// Mobile number in the local form `0` + 9 digits (tag 29 sub 01, written as `0066` + 9).
    Msisdn(String),
    /// 13-digit national id or tax id, checksum included (tag 29 sub 02).
    NatId(String),
    /// 15-digit e-wallet id (tag 29 sub 03).
    EWalletId(String),
    /// Bill payment / merchant QR: biller id (15 digits, tag 30 sub 01), ref1 (sub 02),
    /// optional ref2 (sub 03).
    Biller {
        biller_id: String,
        ref1: String,
        ref2: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentRequest {
    pub target: PaymentTarget,
    /// `None` makes a static QR (the payer types the amount), `Some` a dynamic one.
    pub amount_satang: Option<i64>,
    /// Printable ASCII, 1–25 characters after trimming (tag 59).
    pub merchant_name: Option<String>,
}

/// Why a request cannot become a payment QR. `field()` names the v1 JSON field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    #[error("phone must be 10 digits in the form 0 followed by 9 digits")]
    InvalidMsisdn,
    #[error("national id must be 13 digits with a valid check digit")]
    InvalidNatId,
    #[error("e-wallet id must be 15 digits")]
    InvalidEWalletId,
    #[error("ref1 must be 1 to 20 uppercase characters (A-Z, 0-9)")]
    InvalidRef1,
    #[error("ref2 must be 1 to 20 uppercase characters (A-Z, 0-9)")]
    InvalidRef2,
    #[error("amount {0}")]
    InvalidAmount(&'static str),
    #[error("merchant name must be 1 to 25 ASCII characters (Thai text is not supported)")]
    InvalidMerchantName,
    #[error("biller id must be 15 digits")]
    InvalidBillerId,
}

impl GenerateError {
    /// The request field at fault, spelled as in the v1 API.
    pub fn field(&self) -> &'static str {
        match self {
            GenerateError::InvalidMsisdn => "msisdn",
            GenerateError::InvalidNatId => "natId",
            GenerateError::InvalidEWalletId => "eWalletId",
            GenerateError::InvalidRef1 => "ref1",
            GenerateError::InvalidRef2 => "ref2",
            GenerateError::InvalidAmount(_) => "amount",
            GenerateError::InvalidMerchantName => "merchantName",
            GenerateError::InvalidBillerId => "billerId",
        }
    }

    /// The v1 error code (spec §7): its own code where the spec has one, else `invalid_request`.
    pub fn v1_code(&self) -> &'static str {
        match self {
            GenerateError::InvalidMsisdn => "invalid_msisdn",
            GenerateError::InvalidNatId => "invalid_natId",
            GenerateError::InvalidRef1 => "invalid_ref1",
            _ => "invalid_request",
        }
    }
}

fn all_digits(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_digit())
}

/// `0812345678` → `0066812345678`, the 13-digit form PromptPay carries.
pub fn normalize_msisdn(msisdn: &str) -> Result<String, GenerateError> {
    match msisdn.strip_prefix('0') {
        Some(rest) if all_digits(rest, 9) => Ok(format!("0066{rest}")),
        _ => Err(GenerateError::InvalidMsisdn),
    }
}

/// 13 digits whose last is the Thai id check digit (citizen and juristic ids alike).
pub fn validate_nat_id(nat_id: &str) -> Result<(), GenerateError> {
    if !all_digits(nat_id, 13) {
        return Err(GenerateError::InvalidNatId);
    }
    let d: Vec<u32> = nat_id.bytes().map(|b| u32::from(b - b'0')).collect();
    let sum: u32 = d[..12].iter().zip((2..=13).rev()).map(|(x, w)| x * w).sum();
    if (11 - sum % 11) % 10 == d[12] {
        Ok(())
    } else {
        Err(GenerateError::InvalidNatId)
    }
}

pub fn validate_ewallet_id(id: &str) -> Result<(), GenerateError> {
    all_digits(id, 15)
        .then_some(())
        .ok_or(GenerateError::InvalidEWalletId)
}

pub fn validate_biller_id(id: &str) -> Result<(), GenerateError> {
    all_digits(id, 15)
        .then_some(())
        .ok_or(GenerateError::InvalidBillerId)
}

fn is_ref(s: &str) -> bool {
    (1..=MAX_REF_LEN).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// 1–20 characters of `A-Z0-9`; lower case is refused, not folded, as the v1 API does.
pub fn validate_ref1(ref1: &str) -> Result<(), GenerateError> {
    is_ref(ref1).then_some(()).ok_or(GenerateError::InvalidRef1)
}

/// Same rule as ref1.
pub fn validate_ref2(ref2: &str) -> Result<(), GenerateError> {
    is_ref(ref2).then_some(()).ok_or(GenerateError::InvalidRef2)
}

/// Trims, then requires 1–25 printable ASCII characters. Our own TLV reader (like many
/// scanners) refuses non-ASCII, so Thai names are rejected rather than half-supported.
pub fn validate_merchant_name(name: &str) -> Result<&str, GenerateError> {
    let name = name.trim();
    let ok = (1..=MAX_MERCHANT_NAME_LEN).contains(&name.len())
        && name.bytes().all(|b| (0x20..=0x7E).contains(&b));
    ok.then_some(name).ok_or(GenerateError::InvalidMerchantName)
}

pub fn validate_amount_satang(satang: i64) -> Result<(), GenerateError> {
    if satang <= 0 {
        Err(GenerateError::InvalidAmount("must be greater than 0"))
    } else if satang > MAX_AMOUNT_SATANG {
        Err(GenerateError::InvalidAmount("must be at most 9999999.99"))
    } else {
        Ok(())
    }
}

/// Reads a decimal amount in baht (`"150"`, `"150.5"`, `"150.50"`) into satang. For a JSON
/// number, pass its shortest text (`serde_json::Number::to_string`): `150.5` → `"150.5"`.
pub fn parse_amount(text: &str) -> Result<i64, GenerateError> {
    const FORMAT: GenerateError =
        GenerateError::InvalidAmount("must be a number with at most 2 decimals");
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FORMAT);
    }
    if (text.contains('.') && frac.is_empty()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(FORMAT);
    }
    if frac.len() > 2 {
        return Err(GenerateError::InvalidAmount("must have at most 2 decimals"));
    }
    // Leading zeros are harmless; anything longer than the maximum is rejected before overflow.
    let whole = whole.trim_start_matches('0');
    if whole.len() > 7 {
        return Err(GenerateError::InvalidAmount("must be at most 9999999.99"));
    }
    let baht: i64 = whole.parse().unwrap_or(0);
    let satang: i64 = format!("{frac:0<2}").parse().unwrap_or(0);
    let total = baht * 100 + satang;
    validate_amount_satang(total)?;
    Ok(total)
}

/// Tag 54 text: always two decimals, `.` separator, no grouping (`15050` → `"150.50"`).
pub fn format_amount(satang: i64) -> String {
    format!("{}.{:02}", satang / 100, satang % 100)
}

/// Validates `req` and builds its payload: tags 00, 01, 29 or 30, 53, 54, 58, 59, 63, in
/// ascending order. Every payload is at most 167 characters (the EMV limit is 512).
pub fn generate_payment_qr(req: &PaymentRequest) -> Result<String, GenerateError> {
    let mut account = String::with_capacity(91);
    let account_tag = match &req.target {
        PaymentTarget::Msisdn(m) => {
            let proxy = normalize_msisdn(m)?;
            push_field(&mut account, "00", PROMPTPAY_AID);
            push_field(&mut account, "01", &proxy);
            "29"
        }
        PaymentTarget::NatId(id) => {
            validate_nat_id(id)?;
            push_field(&mut account, "00", PROMPTPAY_AID);
            push_field(&mut account, "02", id);
            "29"
        }
        PaymentTarget::EWalletId(id) => {
            validate_ewallet_id(id)?;
            push_field(&mut account, "00", PROMPTPAY_AID);
            push_field(&mut account, "03", id);
            "29"
        }
        PaymentTarget::Biller {
            biller_id,
            ref1,
            ref2,
        } => {
            validate_biller_id(biller_id)?;
            validate_ref1(ref1)?;
            if let Some(r) = ref2 {
                validate_ref2(r)?;
            }
            push_field(&mut account, "00", BILL_PAYMENT_AID);
            push_field(&mut account, "01", biller_id);
            push_field(&mut account, "02", ref1);
            if let Some(r) = ref2 {
                push_field(&mut account, "03", r);
            }
            "30"
        }
    };
    if let Some(satang) = req.amount_satang {
        validate_amount_satang(satang)?;
    }
    let name = req
        .merchant_name
        .as_deref()
        .map(validate_merchant_name)
        .transpose()?;

    let mut out = String::with_capacity(168);
    push_field(&mut out, "00", "01");
    // 11 = static (reusable, payer enters the amount), 12 = dynamic (amount fixed).
    push_field(
        &mut out,
        "01",
        if req.amount_satang.is_some() {
            "12"
        } else {
            "11"
        },
    );
    push_field(&mut out, account_tag, &account);
    push_field(&mut out, "53", "764");
    if let Some(satang) = req.amount_satang {
        push_field(&mut out, "54", &format_amount(satang));
    }
    push_field(&mut out, "58", "TH");
    if let Some(name) = name {
        push_field(&mut out, "59", name);
    }
    push_crc(&mut out, "63");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amount_text_edges() {
        assert_eq!(parse_amount("0.01"), Ok(1));
        assert_eq!(parse_amount("150"), Ok(15000));
        assert_eq!(parse_amount("150.5"), Ok(15050));
        assert_eq!(parse_amount("007.05"), Ok(705));
        assert_eq!(parse_amount("9999999.99"), Ok(MAX_AMOUNT_SATANG));
        let too_big = GenerateError::InvalidAmount("must be at most 9999999.99");
        assert_eq!(parse_amount("10000000"), Err(too_big));
        assert_eq!(parse_amount("99999999999999999999999"), Err(too_big));
        for zero in ["0", "0.00", "000"] {
            assert_eq!(
                parse_amount(zero),
                Err(GenerateError::InvalidAmount("must be greater than 0"))
            );
        }
        assert_eq!(
            parse_amount("1.005"),
            Err(GenerateError::InvalidAmount("must have at most 2 decimals"))
        );
        for bad in [
            "", ".5", "5.", "-5", "+5", "1e3", "1,000", " 5", "5 ", "1.2.3", "NaN",
        ] {
            assert_eq!(
                parse_amount(bad),
                Err(GenerateError::InvalidAmount(
                    "must be a number with at most 2 decimals"
                )),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn format_amount_pads() {
        assert_eq!(format_amount(1), "0.01");
        assert_eq!(format_amount(15050), "150.50");
        assert_eq!(format_amount(MAX_AMOUNT_SATANG), "9999999.99");
        assert!(format_amount(MAX_AMOUNT_SATANG).len() <= 13);
    }
}
