//! The Thai banks' slip `data` object (KBank verslip, SCB billpayment transactions) mapped
//! into our [`Transfer`]. One module for both banks: their `data` has the same shape
//! (banks.md 1.4, 2.3, 5) with small differences this module absorbs — amounts as numbers
//! (KBank) or strings (SCB), empty proxies as nulls or empty strings, fields SCB leaves out
//! (`language`, `transFeeAmount`, `toMerchantId`).
//!
//! Stable API (the SCB connector uses it):
//! - [`transfer_from_bank_data`] — the whole mapping;
//! - [`parse_amount`] — a number or a decimal string, in baht;
//! - [`split_names`] — `displayName` / `name` into (Thai, English);
//! - [`parse_thai_datetime`] — `transDate` + `transTime`, Thai local time;
//! - [`currency_code`] — `paidLocalCurrency` (`"764"`) to `THB`.
//!
//! Errors are short texts for logs (the caller makes them `Cause::Malformed`); they never
//! repeat a value from the answer, which may be personal data.

use domain::model::{Party, Transfer};
use domain::Satang;
use serde_json::Value;
use time::macros::offset;
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

/// Maps a bank's `data` object into a [`Transfer`].
///
/// `payload` is the slip QR payload that was asked about (the bank does not echo it).
/// Required: `transRef`, `sendingBank`, `receivingBank`, `transDate`, `transTime`, `amount`.
/// Everything else defaults to empty. The whole `data` object is kept in
/// [`Transfer::bank_data`], so what our wire shape has no place for (proxies, `language`,
/// `paidLocalAmount`) stays in the stored verification.
pub fn transfer_from_bank_data(data: &Value, payload: &str) -> Result<Transfer, BankDataError> {
    use BankDataError::Missing;
    if !data.is_object() {
        return Err(BankDataError::NotAnObject);
    }
    let trans_ref = text(data, "transRef").ok_or(Missing("transRef"))?;
    let sending = text(data, "sendingBank").ok_or(Missing("sendingBank"))?;
    let receiving = text(data, "receivingBank").ok_or(Missing("receivingBank"))?;
    let date = text(data, "transDate").ok_or(Missing("transDate"))?;
    let time = text(data, "transTime").ok_or(Missing("transTime"))?;
    let occurred_at = parse_thai_datetime(&date, &time).map_err(BankDataError::DateTime)?;
    let amount = parse_amount(data.get("amount").unwrap_or(&Value::Null))
        .map_err(|why| BankDataError::Amount("amount", why))?;
    if let Some(cur) = text(data, "paidLocalCurrency") {
        // A transfer in another currency would be stored in baht at the wrong value: refuse it
        // rather than guess (the router asks the next connector).
        if currency_code(&cur) != Some("THB") {
            return Err(BankDataError::NotBaht);
        }
    }
    let fee = match data.get("transFeeAmount") {
        None | Some(Value::Null) => Satang(0),
        Some(Value::String(s)) if s.trim().is_empty() => Satang(0),
        Some(v) => parse_amount(v).map_err(|why| BankDataError::Amount("transFeeAmount", why))?,
    };
    Ok(Transfer {
        trans_ref,
        payload: payload.to_string(),
        occurred_at,
        country_code: text(data, "countryCode").unwrap_or_else(|| "TH".into()),
        amount,
        fee,
        ref1: text(data, "ref1").unwrap_or_default(),
        ref2: text(data, "ref2").unwrap_or_default(),
        ref3: text(data, "ref3").unwrap_or_default(),
        sender: party(data.get("sender"), sending),
        receiver: party(data.get("receiver"), receiving),
        receiver_merchant_id: text(data, "toMerchantId"),
        bank_data: Some(data.clone()),
    })
}

/// An amount in baht sent as a JSON number (`499.95`) or a decimal string (`"499.95"`,
/// SCB's documented type). Refuses negatives, more than 2 decimals, null and anything else.
pub fn parse_amount(v: &Value) -> Result<Satang, &'static str> {
    match v {
        Value::Number(n) => Satang::from_baht_f64(n.as_f64().ok_or("is not a number")?),
        // Thousands separators appear in bank-rendered strings; they carry no value.
        Value::String(s) => Satang::parse(&s.replace(',', "")),
        Value::Null => Err("is missing"),
        _ => Err("is not a number"),
    }
}

/// Why a bank's `data` object is not a transfer we can answer with (the connector reports
/// it as malformed and the router asks the next one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BankDataError {
    #[error("data is not an object")]
    NotAnObject,
    #[error("no {0}")]
    Missing(&'static str),
    /// The field, and why its amount is refused.
    #[error("{0} {1}")]
    Amount(&'static str, &'static str),
    #[error("paidLocalCurrency is not THB (764)")]
    NotBaht,
    #[error("{0}")]
    DateTime(&'static str),
}

// An unavailable outcome carries its detail as text.
impl From<BankDataError> for String {
    fn from(e: BankDataError) -> Self {
        e.to_string()
    }
}

/// `(name_th, name_en)` from a party's `displayName` and `name`.
///
/// The banks give `displayName` in Thai or English depending on the issuing bank and `name`
/// in English (banks.md 1.4, [C]); either may be empty. The first one in Thai script becomes
/// the Thai name, the first one without Thai script the English name. With no Thai-script
/// name, the Thai slot (always present on our wire) holds `displayName` (or `name`), since
/// clients read it as "the name".
pub fn split_names(display_name: &str, name: &str) -> (String, Option<String>) {
    let candidates: Vec<&str> = [display_name.trim(), name.trim()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    let th = candidates.iter().find(|s| has_thai(s));
    let en = candidates.iter().find(|s| !has_thai(s));
    let th = th
        .or(candidates.first())
        .map_or(String::new(), |s| s.to_string());
    (th, en.map(|s| s.to_string()))
}

fn has_thai(s: &str) -> bool {
    s.chars().any(|c| ('\u{0E00}'..='\u{0E7F}').contains(&c))
}

/// `transDate` (`yyyyMMdd`, or `yyyy-MM-dd`) and `transTime` (`HH:mm:ss`, or `HH:mm`), Thai
/// local time (+07:00, banks.md 1.4 [C]; SCB's formats are assumed the same, [U]).
pub fn parse_thai_datetime(date: &str, time: &str) -> Result<OffsetDateTime, &'static str> {
    let d: String = date.trim().chars().filter(|c| *c != '-').collect();
    if d.len() != 8 || !d.bytes().all(|b| b.is_ascii_digit()) {
        return Err("transDate is not yyyyMMdd");
    }
    let num = |s: &str| s.parse::<u32>().unwrap_or(u32::MAX);
    let year = i32::try_from(num(&d[0..4])).map_err(|_| "transDate year")?;
    let month = u8::try_from(num(&d[4..6]))
        .ok()
        .and_then(|m| Month::try_from(m).ok())
        .ok_or("transDate month")?;
    let day = u8::try_from(num(&d[6..8])).map_err(|_| "transDate day")?;
    let date = Date::from_calendar_date(year, month, day).map_err(|_| "transDate is no date")?;

    let parts: Vec<&str> = time.trim().split(':').collect();
    let field = |i: usize| -> Result<u8, &'static str> {
        match parts.get(i) {
            None if i == 2 => Ok(0),
            Some(p) if p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit()) => {
                p.parse::<u8>().map_err(|_| "transTime")
            }
            _ => Err("transTime is not HH:mm:ss"),
        }
    };
    if parts.len() < 2 || parts.len() > 3 {
        return Err("transTime is not HH:mm:ss");
    }
    let t = Time::from_hms(field(0)?, field(1)?, field(2)?)
        .map_err(|_| "transTime is no time of day")?;
    Ok(PrimitiveDateTime::new(date, t).assume_offset(offset!(+7)))
}

/// ISO 4217: `"764"` (numeric, as the banks send it) or `"THB"` → `THB`; others unknown.
pub fn currency_code(code: &str) -> Option<&'static str> {
    match code.trim() {
        "764" | "THB" | "thb" => Some("THB"),
        _ => None,
    }
}

/// A string field; numbers are accepted as their text (refs are digits at some banks);
/// null, absent and empty are all "none".
fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn party(p: Option<&Value>, bank_code: String) -> Party {
    let null = Value::Null;
    let p = p.unwrap_or(&null);
    let account = p.get("account").unwrap_or(&null);
    let (name_th, name_en) = split_names(
        &text(p, "displayName").unwrap_or_default(),
        &text(p, "name").unwrap_or_default(),
    );
    Party {
        bank_code,
        name_th,
        name_en,
        account_type: text(account, "type").unwrap_or_default(),
        // Masked by the bank (`xxx-x-x0209-x`); kept exactly as sent, never re-masked.
        account: match account.get("value") {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::model::RawSlip;
    use serde_json::json;

    /// banks.md 1.4: the KBank example, both empty-proxy forms, number amounts.
    fn kbank_data() -> Value {
        sim::kbank_example()
    }

    #[test]
    fn golden_kbank_example() {
        let t = transfer_from_bank_data(&kbank_data(), "P").unwrap();
        let raw = serde_json::to_value(RawSlip::from_transfer(&t)).unwrap();
        assert_eq!(
            raw,
            json!({
                "payload": "P",
                "transRef": "010092101507665143",
                "date": "2020-04-01T10:15:07.000+07:00",
                "countryCode": "TH",
                "amount": {"amount": 1.0, "local": {"amount": 1.0, "currency": "THB"}},
                "fee": 0.0,
                "ref1": "", "ref2": "", "ref3": "",
                "sender": {
                    "bank": {"id": "004", "name": "ธนาคารกสิกรไทย", "short": "KBANK"},
                    "account": {"name": {"th": "นาย ธนาคาร ก", "en": "Mr. Thanakarn K"},
                                "bank": {"type": "BANKAC", "account": "xxx-x-x0209-x"}}
                },
                "receiver": {
                    "bank": {"id": "004", "name": "ธนาคารกสิกรไทย", "short": "KBANK"},
                    "account": {"name": {"th": "กสิกร ร", "en": "KASIKORN R"},
                                "bank": {"type": "BANKAC", "account": "xxx-x-x3109-x"}},
                    "merchantId": null
                }
            })
        );
        // Proxies have no place on the wire: they stay in the stored bank answer.
        let stored = t.bank_data.as_ref().unwrap();
        assert_eq!(
            stored["receiver"]["proxy"],
            json!({"type": "", "value": ""})
        );
        assert_eq!(stored["sender"]["proxy"]["type"], Value::Null);
    }

    #[test]
    fn scb_shape_string_amounts_and_refs() {
        let mut d = kbank_data();
        let o = d.as_object_mut().unwrap();
        o.insert("amount".into(), json!("1,499.95"));
        o.insert("transFeeAmount".into(), json!("2.50"));
        o.insert("sendingBank".into(), json!("014"));
        o.insert("ref1".into(), json!("INV1"));
        o.insert("ref3".into(), Value::Null);
        o.insert("toMerchantId".into(), json!("M123"));
        o.remove("language");
        o.remove("paidLocalCurrency");
        let t = transfer_from_bank_data(&d, "P").unwrap();
        assert_eq!(t.amount, Satang(149_995));
        assert_eq!(t.fee, Satang(250));
        assert_eq!(t.sender.bank_code, "014");
        assert_eq!(t.ref1, "INV1");
        assert_eq!(t.ref3, "");
        assert_eq!(t.receiver_merchant_id.as_deref(), Some("M123"));
    }

    #[test]
    fn names_split_by_script() {
        assert_eq!(
            split_names("กสิกร ร", "KASIKORN R"),
            ("กสิกร ร".into(), Some("KASIKORN R".into()))
        );
        // Some banks put English in displayName and Thai nowhere.
        assert_eq!(
            split_names("JOHN D", ""),
            ("JOHN D".into(), Some("JOHN D".into()))
        );
        assert_eq!(split_names("", "นาย ก"), ("นาย ก".into(), None));
        assert_eq!(split_names(" ", ""), (String::new(), None));
        // Order does not matter: the script decides.
        assert_eq!(
            split_names("MR A", "นาย ก"),
            ("นาย ก".into(), Some("MR A".into()))
        );
    }

    #[test]
    fn amounts() {
        assert_eq!(parse_amount(&json!(499.95)), Ok(Satang(49_995)));
        assert_eq!(parse_amount(&json!("499.95")), Ok(Satang(49_995)));
        assert_eq!(parse_amount(&json!(" 10 ")), Ok(Satang(1000)));
        assert!(parse_amount(&json!(-1)).is_err());
        assert!(parse_amount(&json!("1.005")).is_err());
        assert!(parse_amount(&json!("abc")).is_err());
        assert!(parse_amount(&Value::Null).is_err());
        assert!(parse_amount(&json!({"a": 1})).is_err());
    }

    #[test]
    fn dates_are_thai_time() {
        let t = parse_thai_datetime("20200401", "10:15:07").unwrap();
        assert_eq!(
            domain::clock::format_bangkok(t),
            "2020-04-01T10:15:07.000+07:00"
        );
        assert_eq!(t.unix_timestamp(), 1_585_710_907);
        assert_eq!(parse_thai_datetime("2020-04-01", "10:15"), {
            parse_thai_datetime("20200401", "10:15:00")
        });
        for (d, t) in [
            ("20201301", "10:00:00"),
            ("20200230", "10:00:00"),
            ("2020041", "10:00:00"),
            ("2020040a", "10:00:00"),
            ("20200401", "25:00:00"),
            ("20200401", "10:00:00:00"),
            ("20200401", "1:00:00"),
            ("20200401", ""),
            ("", ""),
            ("๒๐๒๐๐๔๐๑", "10:00:00"),
        ] {
            assert!(parse_thai_datetime(d, t).is_err(), "{d} {t}");
        }
    }

    #[test]
    fn currency() {
        assert_eq!(currency_code("764"), Some("THB"));
        assert_eq!(currency_code("840"), None);
        let mut d = kbank_data();
        d["paidLocalCurrency"] = json!("840");
        assert!(transfer_from_bank_data(&d, "P").is_err());
    }

    #[test]
    fn missing_pieces_are_errors_not_panics() {
        assert!(transfer_from_bank_data(&json!([]), "P").is_err());
        assert!(transfer_from_bank_data(&json!({}), "P").is_err());
        for key in ["transRef", "sendingBank", "transDate", "amount"] {
            let mut d = kbank_data();
            d.as_object_mut().unwrap().remove(key);
            assert!(transfer_from_bank_data(&d, "P").is_err(), "{key}");
        }
        // Parties may be absent or odd: empty names, no panic.
        let mut d = kbank_data();
        d["sender"] = json!("x");
        d["receiver"] = Value::Null;
        let t = transfer_from_bank_data(&d, "P").unwrap();
        assert_eq!(t.sender.name_th, "");
        assert_eq!(t.receiver.account, "");
    }
}
