//! Bank-transfer slip mini-QR: `00`{`00` API id `000001`, `01` sending bank, `02` reference},
//! `51` country, `91` CRC.

use serde::Serialize;

use crate::frame::{self, require, SlipFrame, SlipKind};
use crate::{crc, payment, NotSlipKind, QrError, ReferenceProblem, MAX_REFERENCE_LEN};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BankSlipQr {
    /// 3-digit Bank of Thailand code, e.g. `"004"`.
    pub sending_bank: String,
    pub trans_ref: String,
    pub country: String,
    /// The payload trimmed, otherwise exactly as received.
    pub payload: String,
}

/// Reads a bank slip. Other recognised kinds give [`QrError::NotABankSlip`].
pub fn parse_bank_slip(input: &str) -> Result<BankSlipQr, QrError> {
    let payload = frame::prepare(input)?;
    // A `000201` start is a payment QR whatever follows: a slip's tag 00 cannot be 2 characters.
    if payment::is_payment_format(payload) {
        return Err(QrError::NotABankSlip {
            kind: NotSlipKind::PromptPayPayment,
        });
    }
    let slip = SlipFrame::read(payload)?;
    match slip.kind {
        SlipKind::Bank => from_frame(&slip),
        SlipKind::TrueMoney => Err(QrError::NotABankSlip {
            kind: NotSlipKind::TrueMoney,
        }),
    }
}

pub(crate) fn from_frame(slip: &SlipFrame<'_>) -> Result<BankSlipQr, QrError> {
    let bank = require(&slip.data, "00.01", "sending bank")?;
    if !banks::is_slip_bank(bank.value) {
        return Err(QrError::UnknownBank {
            code: bank.value.to_owned(),
        });
    }
    let reference = require(&slip.data, "00.02", "transaction reference")?;
    check_reference(reference.value, reference.value_start)
        .map_err(|problem| QrError::BadReference { problem })?;
    // Other top-level tags are ignored: the CRC already vouches for them.
    let country = require(&slip.top, "51", "country code")?;
    if !(country.value.len() == 2 && country.value.bytes().all(|b| b.is_ascii_uppercase())) {
        return Err(QrError::BadCountry {
            found: country.value.to_owned(),
        });
    }
    Ok(BankSlipQr {
        sending_bank: bank.value.to_owned(),
        trans_ref: reference.value.to_owned(),
        country: country.value.to_owned(),
        payload: slip.payload.to_owned(),
    })
}

/// `offset` is where the reference starts in the payload, so positions point into the payload.
fn check_reference(value: &str, offset: usize) -> Result<(), ReferenceProblem> {
    if value.is_empty() {
        return Err(ReferenceProblem::Empty);
    }
    if value.len() > MAX_REFERENCE_LEN {
        return Err(ReferenceProblem::TooLong {
            length: value.len(),
        });
    }
    match value.bytes().position(|b| !b.is_ascii_alphanumeric()) {
        Some(i) => Err(ReferenceProblem::InvalidCharacter {
            position: offset + i,
        }),
        None => Ok(()),
    }
}

/// Appends one TLV field.
///
/// # Panics
/// If `value` is longer than 99 bytes, which a 2-digit length cannot express.
pub(crate) fn push_field(out: &mut String, tag: &str, value: &str) {
    assert!(
        value.len() <= 99,
        "TLV value of tag {tag} is {} bytes; at most 99 fit",
        value.len()
    );
    out.push_str(tag);
    out.push_str(&format!("{:02}", value.len()));
    out.push_str(value);
}

/// Appends the `91` CRC field over everything written so far.
pub(crate) fn push_crc(out: &mut String, tag: &str) {
    out.push_str(tag);
    out.push_str("04");
    let crc = crc::crc_hex(out.as_bytes());
    out.push_str(&crc);
}

/// Builds a slip payload in the banks' own layout: sub-tags 00, 01, 02; then 51 `TH`; then 91
/// with an upper-case CRC. Does not validate its inputs (tests and the sandbox bank want to build
/// deliberately odd slips too).
///
/// # Panics
/// If `trans_ref` is so long that tag 00 would exceed 99 characters.
pub fn encode_bank_slip(sending_bank: &str, trans_ref: &str) -> String {
    let mut data = String::with_capacity(64);
    push_field(&mut data, "00", "000001");
    push_field(&mut data, "01", sending_bank);
    push_field(&mut data, "02", trans_ref);
    let mut out = String::with_capacity(data.len() + 20);
    push_field(&mut out, "00", &data);
    push_field(&mut out, "51", "TH");
    push_crc(&mut out, "91");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "0043000600000101030060222EQH524YNG5BY1A2ROGUBBB5102TH91041EE9";

    /// Wraps `body` (top-level fields without CRC) with a correct CRC field.
    fn with_crc(body: &str) -> String {
        let mut s = body.to_owned();
        push_crc(&mut s, "91");
        s
    }

    /// A slip built from raw sub-fields of tag 00 and raw further top-level fields.
    fn slip(data: &str, rest: &str) -> String {
        let mut body = String::new();
        push_field(&mut body, "00", data);
        body.push_str(rest);
        with_crc(&body)
    }

    #[test]
    fn parses_the_reference_example() {
        let s = parse_bank_slip(GOOD).unwrap();
        assert_eq!(s.sending_bank, "006");
        assert_eq!(s.trans_ref, "EQH524YNG5BY1A2ROGUBBB");
        assert_eq!(s.country, "TH");
        assert_eq!(s.payload, GOOD);
        assert_eq!(encode_bank_slip("006", "EQH524YNG5BY1A2ROGUBBB"), GOOD);
    }

    #[test]
    fn tolerates_whitespace_and_lower_case_crc() {
        for input in [
            format!("  {GOOD}\r\n"),
            format!("\t{GOOD}\n"),
            format!("{GOOD}\r\n\r\n"),
        ] {
            assert_eq!(parse_bank_slip(&input).unwrap().payload, GOOD);
        }
        let lower = GOOD.replace("1EE9", "1ee9");
        assert_eq!(parse_bank_slip(&lower).unwrap().payload, lower);
    }

    #[test]
    fn ignores_unknown_top_level_and_sub_tags_under_the_crc() {
        let s = slip("000600000101030040204AB120503xyz", "5102TH6205hello");
        let parsed = parse_bank_slip(&s).unwrap();
        assert_eq!(
            (parsed.sending_bank.as_str(), parsed.trans_ref.as_str()),
            ("004", "AB12")
        );
        // ... but they are still covered by the CRC.
        let tampered = s.replace("hello", "hellp");
        assert!(matches!(
            parse_bank_slip(&tampered),
            Err(QrError::CrcMismatch { .. })
        ));
    }

    #[test]
    fn empty_and_too_long() {
        assert_eq!(parse_bank_slip(""), Err(QrError::Empty));
        assert_eq!(parse_bank_slip(" \r\n"), Err(QrError::Empty));
        let long = format!("{GOOD}{}", "0".repeat(129 - GOOD.len()));
        let err = parse_bank_slip(&long).unwrap_err();
        assert_eq!(err, QrError::TooLong { max: 128 });
        assert_eq!(err.to_string(), "payload is longer than 128 characters");
        assert_eq!(err.code(), "too_long");
    }

    #[test]
    fn bad_tlv() {
        let truncated = &GOOD[..GOOD.len() - 2];
        assert_eq!(
            parse_bank_slip(truncated),
            Err(QrError::BadTlv {
                position: 55,
                reason: "field is longer than the rest of the payload"
            })
        );
        let thai = GOOD.replace("EQH5", "EQHก");
        assert!(matches!(
            parse_bank_slip(&thai),
            Err(QrError::BadTlv { position: 28, .. })
        ));
        let nested = slip("0006000001010300", "5102TH");
        assert!(matches!(
            parse_bank_slip(&nested),
            Err(QrError::BadTlv { position: 16, .. })
        ));
    }

    #[test]
    fn crc_errors() {
        let body = &GOOD[..GOOD.len() - 8];
        assert_eq!(parse_bank_slip(body), Err(QrError::MissingCrc));
        let not_last = format!("{body}91041EE95102TH");
        assert_eq!(
            parse_bank_slip(&not_last),
            Err(QrError::MalformedCrc {
                reason: "it must be the last field"
            })
        );
        assert_eq!(
            parse_bank_slip(&format!("{body}91031EE")),
            Err(QrError::MalformedCrc {
                reason: "it must be 4 characters long"
            })
        );
        assert_eq!(
            parse_bank_slip(&format!("{body}91041EEG")),
            Err(QrError::MalformedCrc {
                reason: "it must be a hexadecimal number"
            })
        );
        let err = parse_bank_slip(&GOOD.replace("1EE9", "1EE8")).unwrap_err();
        assert_eq!(
            err,
            QrError::CrcMismatch {
                expected: "1EE9".into(),
                found: "1EE8".into()
            }
        );
        assert_eq!(err.code(), "crc_mismatch");
        assert_eq!(
            err.to_string(),
            "CRC mismatch: the payload is damaged or was altered"
        );
    }

    #[test]
    fn missing_and_duplicate_fields() {
        let missing = |data: &str, rest: &str| parse_bank_slip(&slip(data, rest)).unwrap_err();
        assert_eq!(
            parse_bank_slip(&with_crc("5102TH")),
            Err(QrError::MissingTag {
                tag: "00",
                field: "slip data"
            })
        );
        assert_eq!(
            missing("01030040204AB12", "5102TH"),
            QrError::MissingTag {
                tag: "00.00",
                field: "format identifier"
            }
        );
        assert_eq!(
            missing("0006000001020412AB", "5102TH"),
            QrError::MissingTag {
                tag: "00.01",
                field: "sending bank"
            }
        );
        assert_eq!(
            missing("00060000010103004", "5102TH"),
            QrError::MissingTag {
                tag: "00.02",
                field: "transaction reference"
            }
        );
        let no_country = missing("000600000101030040204AB12", "");
        assert_eq!(
            no_country,
            QrError::MissingTag {
                tag: "51",
                field: "country code"
            }
        );
        assert_eq!(
            no_country.to_string(),
            "the QR payload has no country code (tag 51)"
        );
        assert_eq!(
            missing("000600000101030040204AB120103006", "5102TH"),
            QrError::DuplicateTag {
                tag: "00.01",
                field: "sending bank"
            }
        );
        assert_eq!(
            missing("000600000101030040204AB12", "5102TH5102TH"),
            QrError::DuplicateTag {
                tag: "51",
                field: "country code"
            }
        );
    }
}
