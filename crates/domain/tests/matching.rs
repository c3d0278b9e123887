//! Receiver-account matching: a table of slip receivers against registered accounts, plus
//! properties of masked-number and name matching. Rules: docs/matching.md.

use domain::matching::{
    masked_number_matches, match_receiver, names_match, RegisteredAccount, SlipReceiver,
    MIN_VISIBLE_DIGITS,
};
use proptest::prelude::*;

const fn acc(
    id: &'static str,
    bank_code: &'static str,
    bank_number: &'static str,
    name_th: &'static str,
    name_en: &'static str,
    extra_verify: Option<&'static str>,
) -> RegisteredAccount<'static> {
    RegisteredAccount {
        id,
        bank_code,
        bank_number,
        name_th,
        name_en,
        extra_verify,
    }
}

/// One merchant's accounts, one per bank style.
const ACCOUNTS: &[RegisteredAccount<'static>] = &[
    acc(
        "kbank",
        "004",
        "058-1-33707-2",
        "นาย สมชาย ใจดี",
        "MR. SOMCHAI JAIDEE",
        None,
    ),
    acc(
        "scb",
        "014",
        "4071256609",
        "บริษัท ตัวอย่าง จำกัด",
        "EXAMPLE CO., LTD.",
        None,
    ),
    acc(
        "ktb",
        "006",
        "9870004567",
        "นางสาว สมหญิง รักไทย",
        "MISS SOMYING RAKTHAI",
        None,
    ),
    acc(
        "bbl-name",
        "002",
        "1112223334",
        "นาง มาลี ศรีสุข",
        "MRS. MALEE SRISUK",
        Some("NAME"),
    ),
    acc(
        "bbl-number",
        "002",
        "5556667778",
        "นาย ปกรณ์ ทองดี",
        "MR. PAKORN THONGDEE",
        Some("NUMBER"),
    ),
    acc(
        "bbl-both",
        "002",
        "9990001112",
        "บจก. ร้านดี",
        "RANDEE CO., LTD.",
        Some("NAME_NUMBER"),
    ),
    acc(
        "bay",
        "025",
        "1234567890",
        "นาย วิชัย มั่นคง",
        "MR. WICHAI MUNKONG",
        None,
    ),
    acc(
        "ttb",
        "011",
        "2223337890",
        "น.ส. อรุณี แสงทอง",
        "MS. ARUNEE SAENGTHONG",
        None,
    ),
    acc(
        "gsb",
        "030",
        "020000001234",
        "นาย ธนา สุขใจ",
        "MR. THANA SUKJAI",
        None,
    ),
    acc(
        "pp-phone",
        "PROMPTPAY",
        "0812345678",
        "นาย สมชาย ใจดี",
        "SOMCHAI JAIDEE",
        Some("MSISDN"),
    ),
    acc(
        "pp-natid",
        "PROMPTPAY",
        "1103700000123",
        "นางสาว สมหญิง รักไทย",
        "SOMYING RAKTHAI",
        Some("NATID"),
    ),
];

/// Two KBANK accounts whose numbers end alike: the first registered wins a tie.
const SAME_DIGITS: &[RegisteredAccount<'static>] = &[
    acc("k1", "004", "1110037072", "นาย เอก ชัยชนะ", "", None),
    acc("k2", "004", "2220037072", "นาย สมชาย ใจดี", "", None),
];

/// Two BBL accounts: the first matches by number only, the second by number and name.
const MORE_EVIDENCE: &[RegisteredAccount<'static>] = &[
    acc(
        "b-number",
        "002",
        "5556667778",
        "นาย ปกรณ์ ทองดี",
        "",
        Some("NUMBER"),
    ),
    acc(
        "b-name",
        "002",
        "1116667778",
        "นาย สมชาย ใจดี",
        "",
        Some("NAME"),
    ),
];

/// The table's text: every case is a constant.
type S = &'static str;

struct Case {
    what: S,
    accounts: &'static [RegisteredAccount<'static>],
    bank: S,
    account: S,
    name_th: S,
    name_en: Option<S>,
    proxy: Option<S>,
    expected: Option<S>,
}

const fn case(
    what: S,
    bank: S,
    account: S,
    name_th: S,
    name_en: Option<S>,
    expected: Option<S>,
) -> Case {
    Case {
        what,
        accounts: ACCOUNTS,
        bank,
        account,
        name_th,
        name_en,
        proxy: None,
        expected,
    }
}

#[rustfmt::skip]
const CASES: &[Case] = &[
    // KBANK
    case("kbank masked, Thai name truncated", "004", "xxx-x-x3707-x", "นาย สมชาย ใ", None, Some("kbank")),
    case("kbank full number, title attached", "004", "058-1-33707-2", "นายสมชาย ใจดี", None, Some("kbank")),
    case("kbank spaces as separators", "004", "xxx x x3707 x", "นาย สมชาย ใจดี", None, Some("kbank")),
    case("kbank English name only, truncated", "004", "xxx-x-x3707-x", "", Some("MR. SOMCHAI J"), Some("kbank")),
    case("kbank English name in the Thai field, lower case", "004", "xxx-x-x3707-x", "mr. somchai jaidee", None, Some("kbank")),
    case("kbank no name on slip: number alone", "004", "xxx-x-x3707-x", "", None, Some("kbank")),
    case("kbank right number, someone else's name", "004", "xxx-x-x3707-x", "นาย ปกรณ์ ทองดี", None, None),
    case("kbank a visible digit differs", "004", "xxx-x-x3708-x", "นาย สมชาย ใจดี", None, None),
    case("kbank fully masked", "004", "xxx-x-xxxxx-x", "นาย สมชาย ใจดี", None, None),
    case("kbank empty account", "004", "", "นาย สมชาย ใจดี", None, None),
    case("kbank only two visible digits", "004", "xxxxxxxx72", "นาย สมชาย ใจดี", None, None),
    case("kbank number but another bank id", "014", "xxx-x-x3707-x", "นาย สมชาย ใจดี", None, None),
    case("kbank name truncated too short", "004", "xxx-x-x3707-x", "นาย สม", None, None),
    // SCB
    case("scb company, suffix truncated", "014", "XXX-X-XX660-9", "บริษัท ตัวอย่าง จำ", None, Some("scb")),
    case("scb company English, suffix truncated", "014", "XXX-X-XX660-9", "", Some("example co., l"), Some("scb")),
    case("scb company abbreviated form", "014", "XXX-X-XX660-9", "บจก. ตัวอย่าง", None, Some("scb")),
    case("scb last visible digit differs", "014", "XXX-X-XX660-8", "บริษัท ตัวอย่าง จำกัด", None, None),
    // KTB
    case("ktb last four, น.ส. for นางสาว", "006", "xxx-xxx-4567", "น.ส. สมหญิง รักไ", None, Some("ktb")),
    case("ktb MS. for MISS", "006", "xxx-xxx-4567", "", Some("MS. SOMYING"), Some("ktb")),
    // BAY
    case("bay leading and trailing digits visible", "025", "1234xxxx90", "นาย วิชัย มั่นคง", None, Some("bay")),
    case("bay leading digit differs", "025", "1235xxxx90", "นาย วิชัย มั่นคง", None, None),
    // TTB
    case("ttb stars", "011", "******7890", "น.ส. อรุณี แสงท", None, Some("ttb")),
    // GSB: 12-digit account, 11-character mask
    case("gsb shorter mask, right-aligned", "030", "x-xxxx-xx123-4", "นาย ธนา สุขใจ", None, Some("gsb")),
    // BBL with extraVerify
    case("bbl NAME: fully masked number, name matches", "002", "xxx-x-xxxxx-x", "นาง มาลี ศรีส", None, Some("bbl-name")),
    case("bbl NAME: right number, wrong name", "002", "xxx-x-x2333-x", "นาย อื่น ใดใด", None, None),
    case("bbl NAME: no name on slip", "002", "xxx-x-x2333-x", "", None, None),
    case("bbl NUMBER: name ignored", "002", "xxx-x-x6777-x", "นาย คนอื่น ทั้งนั้น", None, Some("bbl-number")),
    case("bbl NUMBER: visible digit differs", "002", "xxx-x-x6787-x", "นาย ปกรณ์ ทองดี", None, None),
    case("bbl NAME_NUMBER: both match", "002", "xxx-x-x0111-x", "", Some("RANDEE CO"), Some("bbl-both")),
    case("bbl NAME_NUMBER: wrong name", "002", "xxx-x-x0111-x", "บจก. ร้านอื่น", None, None),
    case("bbl NAME_NUMBER: wrong number", "002", "xxx-x-x0112-x", "บจก. ร้านดี", None, None),
    // PromptPay
    case("promptpay phone", "PROMPTPAY", "xxx-xxx-5678", "นาย สมชาย ใจดี", None, Some("pp-phone")),
    case("promptpay phone, international form", "PROMPTPAY", "66-8x-xxx-5678", "SOMCHAI JAIDEE", None, Some("pp-phone")),
    case("promptpay bank id in lower case", "promptpay", "xxx-xxx-5678", "", None, Some("pp-phone")),
    case("promptpay national id", "PROMPTPAY", "x-xxxx-xxxxx-12-3", "น.ส. สมหญิง ร", None, Some("pp-natid")),
    case("promptpay national-id mask never matches a phone", "PROMPTPAY", "x-xxxx-xxxxx-67-8", "SOMCHAI JAIDEE", None, None),
    case("promptpay phone digits on a bank account", "004", "xxx-xxx-5678", "นาย สมชาย ใจดี", None, None),
    case("promptpay phone digit differs", "PROMPTPAY", "xxx-xxx-5679", "นาย สมชาย ใจดี", None, None),
    // Ambiguity
    Case { accounts: SAME_DIGITS, ..case("two accounts match: first registered", "004", "xxx-x-x3707-x", "", None, Some("k1")) },
    Case { accounts: SAME_DIGITS, ..case("two numbers match, the name decides", "004", "xxx-x-x3707-x", "นาย สมชาย ใ", None, Some("k2")) },
    Case { accounts: MORE_EVIDENCE, ..case("more evidence beats first registered", "002", "xxx-x-x6777-x", "นาย สมชาย ใจ", None, Some("b-name")) },
    Case { accounts: &[], ..case("no registered accounts", "004", "xxx-x-x3707-x", "นาย สมชาย ใจดี", None, None) },
    Case { proxy: Some("MSISDN"), ..case("promptpay proxy kind agrees", "PROMPTPAY", "xxx-xxx-5678", "", None, Some("pp-phone")) },
    Case { proxy: Some("NATID"), ..case("promptpay proxy kind disagrees", "PROMPTPAY", "xxx-xxx-5678", "", None, None) },
];

#[test]
fn receiver_table() {
    assert!(CASES.len() >= 25);
    let mut failures = Vec::new();
    for c in CASES {
        let receiver = SlipReceiver {
            bank_id: c.bank,
            account: c.account,
            name_th: c.name_th,
            name_en: c.name_en,
            proxy_type: c.proxy,
        };
        let got = match_receiver(&receiver, c.accounts);
        if got != c.expected {
            failures.push(format!(
                "{}: expected {:?}, got {:?}",
                c.what, c.expected, got
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn from_party() {
    let party = domain::model::Party {
        bank_code: "004".into(),
        name_th: "นาย สมชาย ใ".into(),
        name_en: Some("MR. SOMCHAI J".into()),
        account_type: "BANKAC".into(),
        account: "xxx-x-x3707-x".into(),
    };
    let receiver = SlipReceiver::from_party(&party);
    assert_eq!(match_receiver(&receiver, ACCOUNTS), Some("kbank"));
}

#[test]
fn masked_number_rules() {
    assert!(masked_number_matches("xxx-x-x3707-x", "0581337072"));
    // Longer mask: extra leading mask characters are allowed, extra leading digits are not.
    assert!(masked_number_matches("xx-xxx-x-x3707-x", "0581337072"));
    assert!(!masked_number_matches("10581337072", "0581337072"));
    // Shorter mask covers the last digits.
    assert!(masked_number_matches("x7072", "0581337072"));
    assert!(!masked_number_matches("0581x", "0581337072"));
    // Unknown characters, non-digit registered numbers, too few digits.
    assert!(!masked_number_matches("xxx?x3707x", "0581337072"));
    assert!(!masked_number_matches("xxxxx3707x", "05813370x2"));
    assert!(!masked_number_matches("xxxxxxxx72", "0581337072"));
    assert!(!masked_number_matches("", "0581337072"));
    assert!(!masked_number_matches("0581337072", ""));
}

#[test]
fn names_rules() {
    assert!(names_match("นาย สมชาย ใ", "สมชาย ใจดี"));
    assert!(names_match("SOMCHAI J", "Mr. Somchai Jaidee"));
    assert!(names_match("บริษัท ตัวอย่าง จำกัด", "ตัวอย่าง"));
    assert!(names_match("LI", "MR. LI"));
    assert!(!names_match("SOM", "SOMCHAI JAIDEE"));
    assert!(!names_match("SOMCHAI JAIDEE", "SOMCHAI"));
    assert!(!names_match("", "SOMCHAI"));
    assert!(!names_match("นาย", "นาย"));
}

/// A full number, which positions are visible (at least the minimum), the mask character,
/// where separators go and how many extra leading mask characters the bank adds.
fn masked_case() -> impl Strategy<Value = (Vec<u8>, Vec<bool>, char, Vec<bool>, usize)> {
    (10usize..=15)
        .prop_flat_map(|len| {
            (
                proptest::collection::vec(0u8..10, len),
                proptest::collection::vec(any::<bool>(), len),
                proptest::sample::select(vec!['x', 'X', '*', '#', '\u{2022}']),
                proptest::collection::vec(proptest::bool::weighted(0.2), len),
                0usize..3,
                proptest::sample::subsequence((0..len).collect::<Vec<_>>(), MIN_VISIBLE_DIGITS),
            )
        })
        .prop_map(|(digits, mut visible, mask, seps, extra, forced)| {
            for i in forced {
                visible[i] = true;
            }
            (digits, visible, mask, seps, extra)
        })
}

fn render(digits: &[u8], visible: &[bool], mask: char, seps: &[bool], extra: usize) -> String {
    let mut s: String = std::iter::repeat_n(mask, extra).collect();
    for (i, d) in digits.iter().enumerate() {
        if seps[i] {
            s.push('-');
        }
        s.push(if visible[i] {
            char::from(b'0' + d)
        } else {
            mask
        });
    }
    s
}

fn full(digits: &[u8]) -> String {
    digits.iter().map(|d| char::from(b'0' + d)).collect()
}

proptest! {
    #[test]
    fn any_masking_with_enough_digits_matches((digits, visible, mask, seps, extra) in masked_case()) {
        let masked = render(&digits, &visible, mask, &seps, extra);
        prop_assert!(masked_number_matches(&masked, &full(&digits)), "{masked}");
        let account = RegisteredAccount {
            id: "a", bank_code: "004", bank_number: &full(&digits),
            name_th: "", name_en: "", extra_verify: None,
        };
        let receiver = SlipReceiver {
            bank_id: "004", account: &masked, name_th: "", name_en: None, proxy_type: None,
        };
        prop_assert_eq!(match_receiver(&receiver, &[account]), Some("a"));
    }

    #[test]
    fn a_changed_visible_digit_never_matches(
        (digits, visible, mask, seps, extra) in masked_case(),
        pick in any::<prop::sample::Index>(),
        delta in 1u8..10,
    ) {
        let shown: Vec<usize> = (0..digits.len()).filter(|&i| visible[i]).collect();
        let i = shown[pick.index(shown.len())];
        let mut changed = digits.clone();
        changed[i] = (changed[i] + delta) % 10;
        let masked = render(&changed, &visible, mask, &seps, extra);
        prop_assert!(!masked_number_matches(&masked, &full(&digits)), "{masked}");
        let account = RegisteredAccount {
            id: "a", bank_code: "004", bank_number: &full(&digits),
            name_th: "", name_en: "", extra_verify: None,
        };
        let receiver = SlipReceiver {
            bank_id: "004", account: &masked, name_th: "", name_en: None, proxy_type: None,
        };
        prop_assert_eq!(match_receiver(&receiver, &[account]), None);
    }

    #[test]
    fn truncated_names_match(
        first in "[A-Z]{4,10}",
        last in "[A-Z]{2,10}",
        title in proptest::sample::select(vec!["", "MR. ", "Mrs. ", "ms ", "นาย ", "นางสาว"]),
        cut in any::<prop::sample::Index>(),
        lower in any::<bool>(),
    ) {
        prop_assume!(
            !["MRS", "MISS", "CORP", "COLTD", "COMPANY", "LIMITED", "PUBLIC"].contains(&first.as_str())
        );
        let whole = format!("{first} {last}");
        let keep = first.len() + cut.index(whole.len() - first.len() + 1);
        let mut slip = format!("{title}{}", &whole[..keep]);
        if lower {
            slip = slip.to_lowercase();
        }
        prop_assert!(names_match(&slip, &format!("MR. {whole}")), "{slip}");
        // A different first letter never matches.
        let other = if first.starts_with('Q') { 'Z' } else { 'Q' };
        let wrong = format!("{title}{other}{}", &whole[1..keep]);
        prop_assert!(!names_match(&wrong, &format!("MR. {whole}")), "{wrong}");
    }
}
