//! Feeds arbitrary bytes to `classify` and `parse_bank_slip`.
//!
//! A random input almost never carries a valid CRC, so half of the runs (first byte odd) append
//! the correct CRC to the rest of the input: that lets the fuzzer reach the field checks behind it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slip_qr::{
    classify, crc16_ccitt_false, encode_bank_slip, encode_truemoney_slip, parse_bank_slip,
    NotSlipKind, ParsedQr, QrError,
};

fn with_valid_crc(body: &str) -> String {
    let tag = if body.trim_start().starts_with("000201") {
        "6304"
    } else {
        "9104"
    };
    let mut s = format!("{}{tag}", body.trim_start());
    let crc = crc16_ccitt_false(s.as_bytes());
    s.push_str(&format!("{crc:04X}"));
    s
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let input = if mode & 1 == 1 {
        with_valid_crc(&text)
    } else {
        text.into_owned()
    };
    check(&input);
});

fn check(input: &str) {
    let trimmed = input.trim();
    let classified = classify(input);
    let slip = parse_bank_slip(input);

    // The two entry points agree; the bank-slip one only adds "not a bank slip".
    match (&classified, &slip) {
        (Ok(ParsedQr::BankSlip(a)), Ok(b)) => assert_eq!(a, b),
        (Ok(ParsedQr::TrueMoneySlip(_)), Err(e)) => assert_eq!(
            e,
            &QrError::NotABankSlip {
                kind: NotSlipKind::TrueMoney
            }
        ),
        (Ok(ParsedQr::PaymentQr(_)), Err(e)) => assert_eq!(
            e,
            &QrError::NotABankSlip {
                kind: NotSlipKind::PromptPayPayment
            }
        ),
        (Err(a), Err(b)) => assert!(a == b || b.code() == "not_a_bank_slip", "{a:?} vs {b:?}"),
        (a, b) => panic!("entry points disagree: {a:?} vs {b:?}"),
    }

    if let Ok(slip) = &slip {
        assert_eq!(slip.payload, trimmed);
        assert_eq!(parse_bank_slip(&slip.payload).as_ref(), Ok(slip));
        // The canonical encoding of what we read reads back the same.
        let canonical = encode_bank_slip(&slip.sending_bank, &slip.trans_ref);
        let again = parse_bank_slip(&canonical).expect("canonical encoding parses");
        assert_eq!(
            (&again.sending_bank, &again.trans_ref),
            (&slip.sending_bank, &slip.trans_ref)
        );
        // Input in our own layout (TH, no extra tags, same order) with an upper-case CRC is
        // exactly what we would generate.
        let (body, crc) = trimmed.split_at(trimmed.len() - 4);
        if slip.country == "TH" && body == &canonical[..canonical.len() - 4] {
            assert!(trimmed.eq_ignore_ascii_case(&canonical));
            if !crc.bytes().any(|b| b.is_ascii_lowercase()) {
                assert_eq!(trimmed, canonical);
            }
        }
    }

    match &classified {
        Ok(ParsedQr::TrueMoneySlip(t)) => {
            assert_eq!(t.payload, trimmed);
            let canonical = encode_truemoney_slip(&t.event, &t.transaction_id, &t.date);
            match classify(&canonical) {
                Ok(ParsedQr::TrueMoneySlip(again)) => assert_eq!(
                    (&again.event, &again.transaction_id, &again.date),
                    (&t.event, &t.transaction_id, &t.date)
                ),
                other => panic!("canonical TrueMoney encoding: {other:?}"),
            }
        }
        Ok(ParsedQr::PaymentQr(p)) => {
            assert_eq!(p.payload, trimmed);
            assert_eq!(classify(&p.payload), classified);
        }
        _ => {}
    }
}
