//! Property tests: round trips, tamper detection, and no panics on any input.

use proptest::prelude::*;
use slip_qr::{classify, encode_bank_slip, encode_truemoney_slip, parse_bank_slip, ParsedQr};

fn slip_bank() -> impl Strategy<Value = &'static str> {
    let codes: Vec<&'static str> = banks::all()
        .iter()
        .map(|b| b.code)
        .filter(|c| banks::is_slip_bank(c))
        .collect();
    proptest::sample::select(codes)
}

fn reference() -> impl Strategy<Value = String> {
    "[A-Za-z0-9]{1,35}"
}

fn ddmmyyyy() -> impl Strategy<Value = String> {
    (1u32..=28, 1u32..=12, 1900u32..=2999).prop_map(|(d, m, y)| format!("{d:02}{m:02}{y:04}"))
}

fn printable() -> impl Strategy<Value = char> {
    (0x20u8..=0x7E).prop_map(char::from)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn bank_slip_round_trip(bank in slip_bank(), trans_ref in reference()) {
        let payload = encode_bank_slip(bank, &trans_ref);
        let slip = parse_bank_slip(&payload).unwrap();
        prop_assert_eq!(&slip.sending_bank, bank);
        prop_assert_eq!(&slip.trans_ref, &trans_ref);
        prop_assert_eq!(&slip.country, "TH");
        prop_assert_eq!(&slip.payload, &payload);
        prop_assert_eq!(classify(&payload).unwrap(), ParsedQr::BankSlip(slip));
    }

    #[test]
    fn truemoney_round_trip(
        event in "[A-Z0-9]{1,20}",
        id in "[0-9]{14}",
        date in ddmmyyyy(),
    ) {
        let payload = encode_truemoney_slip(&event, &id, &date);
        let ParsedQr::TrueMoneySlip(t) = classify(&payload).unwrap() else {
            panic!("not TrueMoney: {payload}");
        };
        prop_assert_eq!(t.event, event);
        prop_assert_eq!(t.transaction_id, id);
        prop_assert_eq!(t.date, date);
        prop_assert_eq!(t.payload, payload.clone());
        prop_assert!(parse_bank_slip(&payload).is_err());
    }

    #[test]
    fn any_single_character_change_breaks_a_slip(
        bank in slip_bank(),
        trans_ref in reference(),
        index in any::<prop::sample::Index>(),
        c in printable(),
    ) {
        let payload = encode_bank_slip(bank, &trans_ref);
        let i = index.index(payload.len());
        let original = payload.as_bytes()[i] as char;
        // The only tolerated edit: the case of a CRC hex letter.
        let crc_case_only = i >= payload.len() - 4 && c.eq_ignore_ascii_case(&original);
        prop_assume!(c != original && !crc_case_only);
        let mut changed = payload.clone();
        changed.replace_range(i..=i, c.encode_utf8(&mut [0; 4]));
        prop_assert!(parse_bank_slip(&changed).is_err(), "{}", changed);
        prop_assert!(classify(&changed).is_err(), "{}", changed);
    }

    #[test]
    fn never_panics_on_arbitrary_strings(s in any::<String>()) {
        let _ = classify(&s);
        let _ = parse_bank_slip(&s);
    }

    #[test]
    fn never_panics_on_tlv_like_strings(s in "[0-9A-F ]{0,8}(00|29|30|51|54|63|91)[0-9]{2}[0-9A-Za-z\\r\\n\tก]{0,130}") {
        let _ = classify(&s);
        let _ = parse_bank_slip(&s);
    }
}
