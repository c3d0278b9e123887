//! Registry of the Thai banks the service knows, keyed by Bank of Thailand code.
//!
//! Pure data: no I/O. Codes are the 3-digit BOT codes that appear in slip QR payloads, plus the
//! non-numeric pseudo-banks `GET /banks` exposes: `PROMPTPAY` for PromptPay receivers and
//! `TRUEMONEY` for TrueMoney Wallet receivers (the wallet's phone number).

use serde::Serialize;

/// One choice of what a merchant registers about a receiving account, so that the (possibly
/// masked) receiver printed on a slip can still be matched against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExtraVerifyOption {
    pub value: &'static str,
    pub label: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bank {
    /// Bank of Thailand code (`"002"`), or `"PROMPTPAY"`.
    pub code: &'static str,
    pub name_th: &'static str,
    pub name_en: &'static str,
    pub short: &'static str,
    /// `None` where the bank has no SWIFT code or we could not confirm it.
    pub swift: Option<&'static str>,
    pub extra_verify: Option<&'static [ExtraVerifyOption]>,
    pub extra_verify_required: bool,
}

const PROMPTPAY: &str = "PROMPTPAY";
const TRUEMONEY: &str = "TRUEMONEY";

// BBL slips mask either the receiver's name or number, so an account must say which it matches on.
const BBL_EXTRA_VERIFY: &[ExtraVerifyOption] = &[
    ExtraVerifyOption {
        value: "NAME",
        label: "Account name",
    },
    ExtraVerifyOption {
        value: "NUMBER",
        label: "Account number",
    },
    ExtraVerifyOption {
        value: "NAME_NUMBER",
        label: "Account name and number",
    },
];

// A PromptPay receiver is identified by its proxy, so the account must say which kind it is.
const PROMPTPAY_EXTRA_VERIFY: &[ExtraVerifyOption] = &[
    ExtraVerifyOption {
        value: "MSISDN",
        label: "Mobile number",
    },
    ExtraVerifyOption {
        value: "NATID",
        label: "National ID",
    },
    ExtraVerifyOption {
        value: "EWALLETID",
        label: "e-Wallet ID",
    },
];

/// Shorthand for the common case: a bank with no extra verification options.
const fn plain(
    code: &'static str,
    short: &'static str,
    name_en: &'static str,
    name_th: &'static str,
    swift: Option<&'static str>,
) -> Bank {
    Bank {
        code,
        name_th,
        name_en,
        short,
        swift,
        extra_verify: None,
        extra_verify_required: false,
    }
}

static BANKS: &[Bank] = &[
    Bank {
        code: "002",
        name_th: "ธนาคารกรุงเทพ",
        name_en: "Bangkok Bank",
        short: "BBL",
        swift: Some("BKKBTHBK"),
        extra_verify: Some(BBL_EXTRA_VERIFY),
        extra_verify_required: true,
    },
    plain(
        "004",
        "KBANK",
        "Kasikornbank",
        "ธนาคารกสิกรไทย",
        Some("KASITHBK"),
    ),
    plain(
        "006",
        "KTB",
        "Krungthai Bank",
        "ธนาคารกรุงไทย",
        Some("KRTHTHBK"),
    ),
    plain(
        "011",
        "TTB",
        "TMBThanachart Bank",
        "ธนาคารทหารไทยธนชาต",
        Some("TMBKTHBK"),
    ),
    plain(
        "014",
        "SCB",
        "Siam Commercial Bank",
        "ธนาคารไทยพาณิชย์",
        Some("SICOTHBK"),
    ),
    plain("017", "CITI", "Citibank", "ธนาคารซิตี้แบงก์", Some("CITITHBX")),
    plain(
        "020",
        "SCBT",
        "Standard Chartered Bank (Thai)",
        "ธนาคารสแตนดาร์ดชาร์เตอร์ด (ไทย)",
        Some("SCBLTHBX"),
    ),
    plain(
        "022",
        "CIMBT",
        "CIMB Thai Bank",
        "ธนาคารซีไอเอ็มบี ไทย",
        Some("UBOBTHBK"),
    ),
    plain(
        "024",
        "UOB",
        "United Overseas Bank (Thai)",
        "ธนาคารยูโอบี",
        Some("UOVBTHBK"),
    ),
    plain(
        "025",
        "BAY",
        "Bank of Ayudhya",
        "ธนาคารกรุงศรีอยุธยา",
        Some("AYUDTHBK"),
    ),
    plain(
        "030",
        "GSB",
        "Government Savings Bank",
        "ธนาคารออมสิน",
        Some("GSBATHBK"),
    ),
    plain(
        "031",
        "HSBC",
        "The Hongkong and Shanghai Banking Corporation",
        "ธนาคารฮ่องกงและเซี่ยงไฮ้แบงกิ้งคอร์ปอเรชั่น",
        Some("HSBCTHBK"),
    ),
    plain(
        "033",
        "GHB",
        "Government Housing Bank",
        "ธนาคารอาคารสงเคราะห์",
        Some("GOHUTHB1"),
    ),
    plain(
        "034",
        "BAAC",
        "Bank for Agriculture and Agricultural Cooperatives",
        "ธนาคารเพื่อการเกษตรและสหกรณ์การเกษตร",
        Some("BAABTHBK"),
    ),
    plain(
        "035",
        "EXIM",
        "Export-Import Bank of Thailand",
        "ธนาคารเพื่อการส่งออกและนำเข้าแห่งประเทศไทย",
        Some("EXTHTHBK"),
    ),
    plain("039", "MHCB", "Mizuho Bank", "ธนาคารมิซูโฮ", Some("MHCBTHBK")),
    plain(
        "045",
        "BNPP",
        "BNP Paribas",
        "ธนาคารบีเอ็นพี พารีบาส์",
        Some("BNPATHBK"),
    ),
    plain(
        "052",
        "BOC",
        "Bank of China (Thai)",
        "ธนาคารแห่งประเทศจีน (ไทย)",
        Some("BKCHTHBK"),
    ),
    plain(
        "066",
        "ISBT",
        "Islamic Bank of Thailand",
        "ธนาคารอิสลามแห่งประเทศไทย",
        Some("TIBTTHBK"),
    ),
    plain("067", "TISCO", "TISCO Bank", "ธนาคารทิสโก้", Some("TFPCTHB1")),
    plain(
        "069",
        "KKP",
        "Kiatnakin Phatra Bank",
        "ธนาคารเกียรตินาคินภัทร",
        Some("KKPBTHBK"),
    ),
    plain(
        "070",
        "ICBCT",
        "Industrial and Commercial Bank of China (Thai)",
        "ธนาคารไอซีบีซี (ไทย)",
        Some("ICBKTHBK"),
    ),
    plain(
        "071",
        "TCD",
        "Thai Credit Bank",
        "ธนาคารไทยเครดิต",
        Some("THCETHB1"),
    ),
    plain(
        "073",
        "LHB",
        "Land and Houses Bank",
        "ธนาคารแลนด์ แอนด์ เฮ้าส์",
        Some("LAHRTHB2"),
    ),
    // Public sources disagree on SME D Bank's BIC (SMEBTHB1 vs SMEBTHBK): no code beats a wrong one.
    plain(
        "098",
        "SME",
        "SME Development Bank",
        "ธนาคารพัฒนาวิสาหกิจขนาดกลางและขนาดย่อมแห่งประเทศไทย",
        None,
    ),
    Bank {
        code: PROMPTPAY,
        name_th: "พร้อมเพย์",
        name_en: "PromptPay",
        short: "PROMPTPAY",
        swift: None,
        extra_verify: Some(PROMPTPAY_EXTRA_VERIFY),
        extra_verify_required: true,
    },
    // A wallet account is its phone number; wallet slips show it masked and the name.
    Bank {
        code: TRUEMONEY,
        name_th: "ทรูมันนี่ วอลเล็ท",
        name_en: "TrueMoney Wallet",
        short: "TRUEMONEY",
        swift: None,
        extra_verify: None,
        extra_verify_required: false,
    },
];

/// Every known bank, ordered by code, then the pseudo-banks `PROMPTPAY` and `TRUEMONEY`.
pub fn all() -> &'static [Bank] {
    BANKS
}

/// The bank with exactly this code (no trimming, no case folding).
pub fn find(code: &str) -> Option<&'static Bank> {
    BANKS.iter().find(|b| b.code == code)
}

/// Whether `code` can be a slip's sending bank: a registered 3-digit BOT code, not `PROMPTPAY`.
pub fn is_slip_bank(code: &str) -> bool {
    code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit()) && find(code).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const EXPECTED: &[(&str, &str)] = &[
        ("002", "BBL"),
        ("004", "KBANK"),
        ("006", "KTB"),
        ("011", "TTB"),
        ("014", "SCB"),
        ("017", "CITI"),
        ("020", "SCBT"),
        ("022", "CIMBT"),
        ("024", "UOB"),
        ("025", "BAY"),
        ("030", "GSB"),
        ("031", "HSBC"),
        ("033", "GHB"),
        ("034", "BAAC"),
        ("035", "EXIM"),
        ("039", "MHCB"),
        ("045", "BNPP"),
        ("052", "BOC"),
        ("066", "ISBT"),
        ("067", "TISCO"),
        ("069", "KKP"),
        ("070", "ICBCT"),
        ("071", "TCD"),
        ("073", "LHB"),
        ("098", "SME"),
        ("PROMPTPAY", "PROMPTPAY"),
        ("TRUEMONEY", "TRUEMONEY"),
    ];

    #[test]
    fn every_listed_code_present_exactly_once_with_its_short_name() {
        assert_eq!(all().len(), EXPECTED.len());
        for (code, short) in EXPECTED {
            let hits: Vec<_> = all().iter().filter(|b| b.code == *code).collect();
            assert_eq!(hits.len(), 1, "{code}");
            assert_eq!(hits[0].short, *short, "{code}");
        }
    }

    #[test]
    fn codes_and_short_names_are_unique() {
        let codes: HashSet<_> = all().iter().map(|b| b.code).collect();
        let shorts: HashSet<_> = all().iter().map(|b| b.short).collect();
        assert_eq!(codes.len(), all().len());
        assert_eq!(shorts.len(), all().len());
    }

    #[test]
    fn ordered_by_code_with_the_pseudo_banks_last() {
        let codes: Vec<_> = all().iter().map(|b| b.code).collect();
        assert_eq!(codes[codes.len() - 2..], [PROMPTPAY, TRUEMONEY]);
        let numeric = &codes[..codes.len() - 2];
        assert!(numeric.windows(2).all(|w| w[0] < w[1]), "{numeric:?}");
    }

    #[test]
    fn numeric_codes_are_three_digits() {
        for b in all()
            .iter()
            .filter(|b| ![PROMPTPAY, TRUEMONEY].contains(&b.code))
        {
            assert_eq!(b.code.len(), 3, "{}", b.code);
            assert!(b.code.bytes().all(|c| c.is_ascii_digit()), "{}", b.code);
        }
    }

    #[test]
    fn names_and_swift_codes_are_well_formed() {
        for b in all() {
            assert!(
                b.name_th.starts_with("ธนาคาร") || [PROMPTPAY, TRUEMONEY].contains(&b.code),
                "{}",
                b.code
            );
            assert!(!b.name_en.is_empty() && !b.short.is_empty(), "{}", b.code);
            if let Some(swift) = b.swift {
                // ISO 9362: bank (4 letters) + country TH + location (2 alphanumerics).
                assert_eq!(swift.len(), 8, "{swift}");
                assert!(
                    swift[..4].bytes().all(|c| c.is_ascii_uppercase()),
                    "{swift}"
                );
                assert_eq!(&swift[4..6], "TH", "{swift}");
                assert!(
                    swift[6..].bytes().all(|c| c.is_ascii_alphanumeric()),
                    "{swift}"
                );
            }
        }
        assert_eq!(find("002").unwrap().swift, Some("BKKBTHBK"));
        assert_eq!(find(PROMPTPAY).unwrap().swift, None);
    }

    #[test]
    fn find_is_exact() {
        let kbank = find("004").unwrap();
        assert_eq!(kbank.short, "KBANK");
        assert_eq!(kbank.name_en, "Kasikornbank");
        assert_eq!(find("PROMPTPAY").unwrap().name_en, "PromptPay");
        for miss in [
            "",
            "4",
            "04",
            "0004",
            " 004",
            "004 ",
            "999",
            "promptpay",
            "BBL",
        ] {
            assert!(find(miss).is_none(), "{miss:?}");
        }
    }

    #[test]
    fn slip_banks_are_registered_bot_codes_only() {
        assert!(is_slip_bank("002"));
        assert!(is_slip_bank("098"));
        for no in [
            "PROMPTPAY",
            "TRUEMONEY",
            "999",
            "001",
            "",
            "02",
            "0020",
            "BBL",
        ] {
            assert!(!is_slip_bank(no), "{no:?}");
        }
        let slip_banks = all().iter().filter(|b| is_slip_bank(b.code)).count();
        assert_eq!(slip_banks, all().len() - 2);
    }

    #[test]
    fn extra_verify_only_where_compat_requires_it() {
        let values = |code: &str| -> Vec<&str> {
            find(code)
                .unwrap()
                .extra_verify
                .unwrap()
                .iter()
                .map(|o| o.value)
                .collect()
        };
        assert_eq!(values("002"), ["NAME", "NUMBER", "NAME_NUMBER"]);
        assert_eq!(values(PROMPTPAY), ["MSISDN", "NATID", "EWALLETID"]);
        for b in all() {
            let special = b.code == "002" || b.code == PROMPTPAY;
            assert_eq!(b.extra_verify.is_some(), special, "{}", b.code);
            assert_eq!(b.extra_verify_required, special, "{}", b.code);
        }
    }
}
