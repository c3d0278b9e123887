//! PromptPay / Thai QR payment codes (EMVCo merchant-presented): a request to pay, not a proof
//! of payment. Recognised so that users who upload one get told what it is.

use serde::Serialize;

use crate::frame::{checked_fields, get, prepare_up_to};
use crate::tlv::Field;
use crate::QrError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PaymentQr {
    /// `"static"` (tag 01 = 11), `"dynamic"` (12), `"unspecified"` (no tag 01), else the raw value.
    pub initiation: String,
    /// `"promptpay"`, `"billPayment"` or `"other"`.
    pub kind: String,
    /// `"msisdn"`, `"natId"` or `"eWalletId"`.
    pub proxy_type: Option<String>,
    pub proxy: Option<String>,
    pub biller_id: Option<String>,
    pub ref1: Option<String>,
    pub ref2: Option<String>,
    /// Tag 54 as written, e.g. `"150.50"`.
    pub amount: Option<String>,
    pub currency: Option<String>,
    pub country: Option<String>,
    pub merchant_name: Option<String>,
    pub payload: String,
}

// Methods rather than fields: more fields would make `ParsedQr` trip clippy's
// large_enum_variant.
impl PaymentQr {
    /// The msisdn proxy in local form (`0066812345678` → `0812345678`), for people to read.
    pub fn phone_number(&self) -> Option<String> {
        match self.proxy_type.as_deref() {
            Some("msisdn") => local_phone(self.proxy.as_deref()?),
            _ => None,
        }
    }

    /// Tag 54 in satang, when it is a plain decimal with at most 2 decimals.
    pub fn amount_satang(&self) -> Option<i64> {
        satang(self.amount.as_deref()?)
    }
}

pub(crate) const PROMPTPAY_AID: &str = "A000000677010111";
pub(crate) const BILL_PAYMENT_AID: &str = "A000000677010112";

/// Longest payment QR [`parse_payment_qr`] accepts: the EMV QRCPS limit. Bill-payment QRs with a
/// merchant name and two references exceed the 128 characters that [`crate::classify`] allows.
pub const MAX_PAYMENT_QR_LEN: usize = 512;

/// Payload format indicator `01` in tag 00, which EMVCo requires to come first.
pub(crate) fn is_payment_format(payload: &str) -> bool {
    payload.starts_with("000201")
}

/// Reads a payment QR of up to [`MAX_PAYMENT_QR_LEN`] characters (surrounding whitespace
/// trimmed), checking its structure and CRC.
pub fn parse_payment_qr(input: &str) -> Result<PaymentQr, QrError> {
    let payload = prepare_up_to(input, MAX_PAYMENT_QR_LEN)?;
    if !is_payment_format(payload) {
        return Err(QrError::BadField {
            field: "payload format indicator",
            reason: "a payment QR starts with 000201",
        });
    }
    parse(payload)
}

/// `0066` + 9 digits is how PromptPay writes a Thai mobile number `0` + 9 digits.
fn local_phone(proxy: &str) -> Option<String> {
    let rest = proxy.strip_prefix("0066")?;
    (rest.len() == 9 && rest.bytes().all(|b| b.is_ascii_digit())).then(|| format!("0{rest}"))
}

/// `"150"`, `"150.5"`, `"150.50"` → satang; anything else (signs, exponents, 3 decimals) → None.
fn satang(amount: &str) -> Option<i64> {
    let (whole, frac) = amount.split_once('.').unwrap_or((amount, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // 13 characters (the EMV limit) always fit an i64.
    if !digits(whole) || !digits(frac) || frac.len() > 2 || amount.len() > 13 {
        return None;
    }
    Some(whole.parse::<i64>().ok()? * 100 + format!("{frac:0<2}").parse::<i64>().ok()?)
}

fn owned(field: Option<Field<'_>>) -> Option<String> {
    field.map(|f| f.value.to_owned())
}

pub(crate) fn parse(payload: &str) -> Result<PaymentQr, QrError> {
    let top = checked_fields(payload, "63")?;
    get(&top, "00", "payload format indicator")?;
    let initiation = match get(&top, "01", "point of initiation method")? {
        None => "unspecified",
        Some(f) if f.value == "11" => "static",
        Some(f) if f.value == "12" => "dynamic",
        Some(f) => f.value,
    };
    let mut qr = PaymentQr {
        initiation: initiation.to_owned(),
        kind: "other".to_owned(),
        proxy_type: None,
        proxy: None,
        biller_id: None,
        ref1: None,
        ref2: None,
        amount: owned(get(&top, "54", "transaction amount")?),
        currency: owned(get(&top, "53", "transaction currency")?),
        country: owned(get(&top, "58", "country code")?),
        merchant_name: owned(get(&top, "59", "merchant name")?),
        payload: payload.to_owned(),
    };

    if let Some(account) = get(&top, "29", "PromptPay account")? {
        let sub = account.nested()?;
        if get(&sub, "29.00", "application id")?.is_some_and(|f| f.value == PROMPTPAY_AID) {
            qr.kind = "promptpay".to_owned();
            // A well-formed code carries exactly one proxy; take the first if it has more.
            let proxy = sub.iter().find_map(|f| {
                let kind = match f.tag {
                    "01" => "msisdn",
                    "02" => "natId",
                    "03" => "eWalletId",
                    _ => return None,
                };
                Some((kind, f.value))
            });
            if let Some((kind, value)) = proxy {
                qr.proxy_type = Some(kind.to_owned());
                qr.proxy = Some(value.to_owned());
            }
            return Ok(qr);
        }
    }
    if let Some(account) = get(&top, "30", "bill payment account")? {
        let sub = account.nested()?;
        if get(&sub, "30.00", "application id")?.is_some_and(|f| f.value == BILL_PAYMENT_AID) {
            qr.kind = "billPayment".to_owned();
            qr.biller_id = owned(get(&sub, "30.01", "biller id")?);
            qr.ref1 = owned(get(&sub, "30.02", "reference 1")?);
            qr.ref2 = owned(get(&sub, "30.03", "reference 2")?);
        }
    }
    Ok(qr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bank_slip::{push_crc, push_field};
    use crate::{classify, parse_bank_slip, NotSlipKind, ParsedQr};

    // Published PromptPay payloads (from open-source generators' test suites).
    const STATIC_MSISDN: &str =
        "00020101021129370016A000000677010111011300668123456785802TH530376463045D82";
    const DYNAMIC_AMOUNT: &str =
        "00020101021229370016A000000677010111011300668123456785802TH53037645406150.006304CC46";

    fn payment(s: &str) -> PaymentQr {
        match classify(s).unwrap() {
            ParsedQr::PaymentQr(p) => p,
            other => panic!("{other:?}"),
        }
    }

    fn build(fields: &[(&str, &str)]) -> String {
        let mut s = String::new();
        for (tag, value) in fields {
            push_field(&mut s, tag, value);
        }
        push_crc(&mut s, "63");
        s
    }

    #[test]
    fn promptpay_static_and_dynamic() {
        let p = payment(STATIC_MSISDN);
        assert_eq!(p.initiation, "static");
        assert_eq!(p.kind, "promptpay");
        assert_eq!(p.proxy_type.as_deref(), Some("msisdn"));
        assert_eq!(p.proxy.as_deref(), Some("0066812345678"));
        assert_eq!(p.phone_number().as_deref(), Some("0812345678"));
        assert_eq!(p.amount, None);
        assert_eq!(p.amount_satang(), None);
        assert_eq!(p.currency.as_deref(), Some("764"));
        assert_eq!(p.country.as_deref(), Some("TH"));
        assert_eq!(p.payload, STATIC_MSISDN);

        let p = payment(&format!(" {DYNAMIC_AMOUNT}\n"));
        assert_eq!(p.initiation, "dynamic");
        assert_eq!(p.amount.as_deref(), Some("150.00"));
        assert_eq!(p.amount_satang(), Some(15000));
        assert_eq!(p.payload, DYNAMIC_AMOUNT);
    }

    #[test]
    fn phone_number_only_for_0066_msisdn() {
        assert_eq!(local_phone("0066812345678").as_deref(), Some("0812345678"));
        for other in [
            "0812345678",
            "006681234567",
            "00668123456789",
            "0066x12345678",
            "",
        ] {
            assert_eq!(local_phone(other), None, "{other:?}");
        }
        // A natId proxy that happens to start with 0066 is not a phone number.
        let mut account = String::new();
        push_field(&mut account, "00", PROMPTPAY_AID);
        push_field(&mut account, "02", "0066812345678");
        let p = payment(&build(&[("00", "01"), ("29", &account)]));
        assert_eq!(p.proxy_type.as_deref(), Some("natId"));
        assert_eq!(p.phone_number(), None);
    }

    #[test]
    fn amount_in_satang() {
        let cases = [
            ("150", Some(15000)),
            ("150.5", Some(15050)),
            ("0.01", Some(1)),
            ("9999999999.99", Some(999_999_999_999)),
            ("1.005", None),
            ("150.", None),
            (".5", None),
            ("-1", None),
            ("1e3", None),
            ("99999999999999", None),
        ];
        for (text, want) in cases {
            assert_eq!(satang(text), want, "{text:?}");
            let p = payment(&build(&[("00", "01"), ("54", text)]));
            assert_eq!(p.amount.as_deref(), Some(text));
            assert_eq!(p.amount_satang(), want, "{text:?}");
        }
    }

    #[test]
    fn parse_payment_qr_allows_long_payloads_only_of_its_kind() {
        let long_name = "N".repeat(99);
        let s = build(&[("00", "01"), ("59", &long_name), ("60", &long_name)]);
        assert!(s.len() > crate::MAX_PAYLOAD_LEN);
        assert!(matches!(classify(&s), Err(QrError::TooLong { max: 128 })));
        let p = parse_payment_qr(&format!("\n{s} ")).unwrap();
        assert_eq!(p.merchant_name.as_deref(), Some(long_name.as_str()));
        assert_eq!(p.payload, s);
        assert_eq!(
            parse_payment_qr(STATIC_MSISDN).unwrap(),
            payment(STATIC_MSISDN)
        );

        assert_eq!(parse_payment_qr(" \t"), Err(QrError::Empty));
        assert_eq!(
            parse_payment_qr(&"0".repeat(MAX_PAYMENT_QR_LEN + 1)),
            Err(QrError::TooLong { max: 512 })
        );
        let slip = crate::encode_bank_slip("004", "REF123");
        assert!(matches!(
            parse_payment_qr(&slip),
            Err(QrError::BadField {
                field: "payload format indicator",
                ..
            })
        ));
        let broken = STATIC_MSISDN.replace("5D82", "5D83");
        assert!(matches!(
            parse_payment_qr(&broken),
            Err(QrError::CrcMismatch { .. })
        ));
    }

    #[test]
    fn other_proxies() {
        for (tag, kind) in [("02", "natId"), ("03", "eWalletId")] {
            let mut account = String::new();
            push_field(&mut account, "00", PROMPTPAY_AID);
            push_field(&mut account, tag, "1234567890123");
            let p = payment(&build(&[("00", "01"), ("01", "11"), ("29", &account)]));
            assert_eq!(p.proxy_type.as_deref(), Some(kind));
            assert_eq!(p.proxy.as_deref(), Some("1234567890123"));
        }
    }

    #[test]
    fn bill_payment() {
        let mut account = String::new();
        push_field(&mut account, "00", BILL_PAYMENT_AID);
        push_field(&mut account, "01", "010555012345601");
        push_field(&mut account, "02", "INV001");
        push_field(&mut account, "03", "CUST9");
        let s = build(&[
            ("00", "01"),
            ("01", "12"),
            ("30", &account),
            ("53", "764"),
            ("54", "99.50"),
            ("58", "TH"),
            ("59", "ACME SHOP"),
        ]);
        let p = payment(&s);
        assert_eq!(p.kind, "billPayment");
        assert_eq!(p.biller_id.as_deref(), Some("010555012345601"));
        assert_eq!(p.ref1.as_deref(), Some("INV001"));
        assert_eq!(p.ref2.as_deref(), Some("CUST9"));
        assert_eq!(p.amount.as_deref(), Some("99.50"));
        assert_eq!(p.merchant_name.as_deref(), Some("ACME SHOP"));
        assert_eq!(p.proxy_type, None);
    }

    #[test]
    fn other_merchant_qr_and_unspecified_initiation() {
        let mut account = String::new();
        push_field(&mut account, "00", "A000000999999999");
        push_field(&mut account, "01", "123");
        let p = payment(&build(&[("00", "01"), ("29", &account), ("58", "TH")]));
        assert_eq!(p.kind, "other");
        assert_eq!(p.initiation, "unspecified");
        assert_eq!(p.proxy, None);
        let p = payment(&build(&[("00", "01"), ("01", "13")]));
        assert_eq!(p.initiation, "13");
    }

    #[test]
    fn crc_is_checked_under_tag_63() {
        let broken = STATIC_MSISDN.replace("5D82", "5D83");
        assert!(matches!(
            classify(&broken),
            Err(QrError::CrcMismatch { .. })
        ));
        let no_crc = &STATIC_MSISDN[..STATIC_MSISDN.len() - 8];
        assert_eq!(classify(no_crc), Err(QrError::MissingCrc));
        let lower = STATIC_MSISDN.replace("5D82", "5d82");
        assert_eq!(payment(&lower).kind, "promptpay");
    }

    #[test]
    fn malformed_account_template() {
        let s = build(&[("00", "01"), ("29", "0016A0000006770101")]);
        assert!(matches!(classify(&s), Err(QrError::BadTlv { .. })));
        let s = build(&[("00", "01"), ("59", "A"), ("59", "B")]);
        assert_eq!(
            classify(&s),
            Err(QrError::DuplicateTag {
                tag: "59",
                field: "merchant name"
            })
        );
    }

    #[test]
    fn bank_slip_entry_point_refuses_payment_qr() {
        let err = parse_bank_slip(STATIC_MSISDN).unwrap_err();
        assert_eq!(
            err,
            QrError::NotABankSlip {
                kind: NotSlipKind::PromptPayPayment
            }
        );
        assert_eq!(
            err.to_string(),
            "this is a PromptPay payment QR (a request to pay), not a transfer slip"
        );
    }
}
