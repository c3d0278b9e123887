//! The 160 real-shaped slip payloads of the shared corpus as test vectors.

use slip_qr::{classify, encode_bank_slip, parse_bank_slip, ParsedQr, QrError};

const MANIFEST: &str = include_str!("../../../../../shared/corpus/slips/manifest.json");

fn payloads() -> Vec<String> {
    let entries: Vec<serde_json::Value> = serde_json::from_str(MANIFEST).unwrap();
    entries
        .iter()
        .map(|e| e["payload"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn every_manifest_payload_parses_and_re_encodes_exactly() {
    let payloads = payloads();
    assert_eq!(payloads.len(), 160);
    for p in &payloads {
        let slip = parse_bank_slip(p).unwrap_or_else(|e| panic!("{p}: {e:?}"));
        assert_eq!(&slip.payload, p);
        assert_eq!(slip.country, "TH");
        assert!(banks::is_slip_bank(&slip.sending_bank));
        assert_eq!(&encode_bank_slip(&slip.sending_bank, &slip.trans_ref), p);
        assert_eq!(classify(p), Ok(ParsedQr::BankSlip(slip)));
    }
}

#[test]
fn every_single_character_substitution_is_rejected() {
    // Exhaustive over the corpus: CRC-16 catches every single-symbol error at these lengths;
    // structural damage is caught before the CRC. Case-only changes of the CRC's hex letters
    // are the one tolerated edit.
    let mut tried = 0usize;
    for p in payloads() {
        let crc_start = p.len() - 4;
        for (i, original) in p.char_indices() {
            for c in ' '..='~' {
                if c == original || (i >= crc_start && c.eq_ignore_ascii_case(&original)) {
                    continue;
                }
                let mut changed = p.clone();
                changed.replace_range(i..i + 1, c.encode_utf8(&mut [0; 4]));
                assert!(parse_bank_slip(&changed).is_err(), "{changed}");
                assert!(classify(&changed).is_err(), "{changed}");
                tried += 1;
            }
        }
    }
    assert!(tried > 800_000, "{tried}");
}

#[test]
fn json_shape_for_the_cli() {
    let p = &payloads()[0];
    let json = serde_json::to_value(classify(p).unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "type": "bankSlip",
            "sendingBank": "006",
            "transRef": "EQH524YNG5BY1A2ROGUBBB",
            "country": "TH",
            "payload": p,
        })
    );
    let tm = slip_qr::encode_truemoney_slip("P2P", "50048494038546", "04122025");
    let json = serde_json::to_value(classify(&tm).unwrap()).unwrap();
    assert_eq!(json["type"], "trueMoneySlip");
    assert_eq!(json["transactionId"], "50048494038546");
    let pay = "00020101021129370016A000000677010111011300668123456785802TH530376463045D82";
    let json = serde_json::to_value(classify(pay).unwrap()).unwrap();
    assert_eq!(json["type"], "paymentQr");
    assert_eq!(json["proxyType"], "msisdn");
    assert_eq!(json["merchantName"], serde_json::Value::Null);
}

#[test]
fn unknown_bank_and_bad_reference_and_country() {
    let err = parse_bank_slip(&encode_bank_slip("999", "ABC123")).unwrap_err();
    assert_eq!(err.to_string(), "unknown sending bank code 999");
    assert!(matches!(
        parse_bank_slip(&encode_bank_slip("PROMPTPAY", "ABC123")),
        Err(QrError::UnknownBank { .. })
    ));
    let json = serde_json::to_value(&err).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"code": "unknown_bank", "bankCode": "999"})
    );

    use slip_qr::ReferenceProblem::*;
    let problem = |r: &str| match parse_bank_slip(&encode_bank_slip("004", r)) {
        Err(QrError::BadReference { problem }) => problem,
        other => panic!("{r:?}: {other:?}"),
    };
    assert_eq!(problem(""), Empty);
    assert_eq!(problem(&"A".repeat(36)), TooLong { length: 36 });
    // The reference starts at position 25 of the payload.
    assert_eq!(problem("AB-12"), InvalidCharacter { position: 27 });
    assert_eq!(problem("AB 12"), InvalidCharacter { position: 27 });
    assert!(parse_bank_slip(&encode_bank_slip("004", &"A".repeat(35))).is_ok());

    let with_country = |country: &str| {
        let good = encode_bank_slip("004", "ABC123");
        let body =
            good[..good.len() - 14].to_owned() + &format!("51{:02}{country}9104", country.len());
        let crc = format!("{:04X}", slip_qr::crc16_ccitt_false(body.as_bytes()));
        parse_bank_slip(&(body + &crc))
    };
    assert!(with_country("TH").is_ok());
    assert!(with_country("LA").is_ok());
    for bad in ["th", "THA", "T", "", "1H"] {
        assert_eq!(
            with_country(bad),
            Err(QrError::BadCountry { found: bad.into() }),
            "{bad:?}"
        );
    }
}

#[test]
fn bad_api_id() {
    let good = encode_bank_slip("004", "ABC123");
    let body = good[..good.len() - 4].replace("0006000001", "0006000002");
    let crc = format!("{:04X}", slip_qr::crc16_ccitt_false(body.as_bytes()));
    let err = parse_bank_slip(&(body + &crc)).unwrap_err();
    assert_eq!(
        err,
        QrError::BadApiId {
            found: "000002".into()
        }
    );
    assert_eq!(err.code(), "bad_api_id");
}
