//! TrueMoney Wallet slip QR: `00`{`00`=`01`, `01`=`01`, `02` event, `03` transaction id,
//! `04` date DDMMYYYY}, `91` CRC, and no country tag.

use serde::Serialize;

use crate::bank_slip::{push_crc, push_field};
use crate::frame::{require, SlipFrame};
use crate::QrError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrueMoneySlipQr {
    /// e.g. `"P2P"`.
    pub event: String,
    /// 14 digits.
    pub transaction_id: String,
    /// As in the QR: DDMMYYYY.
    pub date: String,
    pub payload: String,
}

const MAX_EVENT_LEN: usize = 20;

pub(crate) fn from_frame(slip: &SlipFrame<'_>) -> Result<TrueMoneySlipQr, QrError> {
    let version = require(&slip.data, "00.01", "TrueMoney slip version")?;
    if version.value != "01" {
        return Err(QrError::BadField {
            field: "TrueMoney slip version",
            reason: "this version is not supported",
        });
    }
    let event = require(&slip.data, "00.02", "event type")?;
    if event.value.is_empty()
        || event.value.len() > MAX_EVENT_LEN
        || !event.value.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Err(QrError::BadField {
            field: "event type",
            reason: "it must be 1 to 20 letters or digits",
        });
    }
    let id = require(&slip.data, "00.03", "transaction id")?;
    if !(id.value.len() == 14 && id.value.bytes().all(|b| b.is_ascii_digit())) {
        return Err(QrError::BadField {
            field: "transaction id",
            reason: "it must be 14 digits",
        });
    }
    let date = require(&slip.data, "00.04", "transaction date")?;
    if !is_plausible_ddmmyyyy(date.value) {
        return Err(QrError::BadField {
            field: "transaction date",
            reason: "it must be a date written DDMMYYYY",
        });
    }
    Ok(TrueMoneySlipQr {
        event: event.value.to_owned(),
        transaction_id: id.value.to_owned(),
        date: date.value.to_owned(),
        payload: slip.payload.to_owned(),
    })
}

/// Day and month in range. 29 February is allowed in every year: whether the year is Gregorian
/// or Buddhist (a 543-year offset that moves leap years) is not ours to guess.
fn is_plausible_ddmmyyyy(s: &str) -> bool {
    if s.len() != 8 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (day, month) = (num(0..2), num(2..4));
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 => 29,
        _ => return false,
    };
    (1..=days_in_month).contains(&day)
}

/// Builds a TrueMoney slip payload with an upper-case CRC. Does not validate its inputs.
///
/// # Panics
/// If the fields are so long that tag 00 would exceed 99 characters.
pub fn encode_truemoney_slip(event: &str, transaction_id: &str, date_ddmmyyyy: &str) -> String {
    let mut data = String::with_capacity(64);
    push_field(&mut data, "00", "01");
    push_field(&mut data, "01", "01");
    push_field(&mut data, "02", event);
    push_field(&mut data, "03", transaction_id);
    push_field(&mut data, "04", date_ddmmyyyy);
    let mut out = String::with_capacity(data.len() + 12);
    push_field(&mut out, "00", &data);
    push_crc(&mut out, "91");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{classify, parse_bank_slip, NotSlipKind, ParsedQr};

    // A real-shaped TrueMoney slip payload as published in an open-source slip reader.
    const REAL: &str = "00490002010102010203P2P03145004849403854604080412202591041751";

    fn truemoney(s: &str) -> Result<TrueMoneySlipQr, QrError> {
        match classify(s)? {
            ParsedQr::TrueMoneySlip(t) => Ok(t),
            other => panic!("not TrueMoney: {other:?}"),
        }
    }

    #[test]
    fn parses_real_payloads() {
        let t = truemoney(REAL).unwrap();
        assert_eq!(t.event, "P2P");
        assert_eq!(t.transaction_id, "50048494038546");
        assert_eq!(t.date, "04122025");
        assert_eq!(t.payload, REAL);
        assert_eq!(
            encode_truemoney_slip("P2P", "50048494038546", "04122025"),
            REAL
        );
    }

    #[test]
    fn bank_slip_entry_point_refuses_it() {
        let err = parse_bank_slip(REAL).unwrap_err();
        assert_eq!(
            err,
            QrError::NotABankSlip {
                kind: NotSlipKind::TrueMoney
            }
        );
        assert_eq!(err.code(), "not_a_bank_slip");
        assert_eq!(
            err.to_string(),
            "this is a TrueMoney Wallet slip, not a bank transfer slip"
        );
    }

    #[test]
    fn lower_case_crc_is_accepted() {
        // TrueMoney's own generator is known to write lower-case hex.
        let s = encode_truemoney_slip("P2P", "50048494038546", "31012025");
        let crc = &s[s.len() - 4..];
        let lower = format!("{}{}", &s[..s.len() - 4], crc.to_ascii_lowercase());
        assert!(truemoney(&lower).is_ok());
    }

    #[test]
    fn field_errors() {
        let field = |event: &str, id: &str, date: &str| match truemoney(&encode_truemoney_slip(
            event, id, date,
        ))
        .unwrap_err()
        {
            QrError::BadField { field, .. } => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field("", "50048494038546", "04122025"), "event type");
        assert_eq!(field("P-2P", "50048494038546", "04122025"), "event type");
        assert_eq!(field("P2P", "5004849403854", "04122025"), "transaction id");
        assert_eq!(field("P2P", "5004849403854X", "04122025"), "transaction id");
        for date in [
            "0412202", "32012025", "00012025", "31042025", "30022025", "01132025",
        ] {
            assert_eq!(
                field("P2P", "50048494038546", date),
                "transaction date",
                "{date}"
            );
        }
        for date in ["29022025", "31122568", "01012025"] {
            assert!(truemoney(&encode_truemoney_slip("P2P", "50048494038546", date)).is_ok());
        }
    }

    #[test]
    fn version_and_missing_fields() {
        let build = |data: &str| {
            let mut s = String::new();
            push_field(&mut s, "00", data);
            push_crc(&mut s, "91");
            s
        };
        let err = truemoney(&build("000201010202")).unwrap_err();
        assert_eq!(err.code(), "bad_field");
        assert_eq!(
            err.to_string(),
            "invalid TrueMoney slip version: this version is not supported"
        );
        assert_eq!(
            truemoney(&build("0002010102010203P2P040804122025")).unwrap_err(),
            QrError::MissingTag {
                tag: "00.03",
                field: "transaction id"
            }
        );
        assert_eq!(
            truemoney(&build("0002010203P2P031450048494038546")).unwrap_err(),
            QrError::MissingTag {
                tag: "00.01",
                field: "TrueMoney slip version"
            }
        );
    }
}
