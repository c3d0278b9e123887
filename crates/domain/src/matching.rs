//! Receiver-account matching (`matchAccount`, spec 7.2 `account_not_match`): does the receiver
//! printed on a slip — bank, masked account number, possibly truncated name — belong to one of
//! the bank accounts the merchant registered? Pure: no I/O. The rules, with examples, are in
//! `docs/matching.md`.

use crate::model::Party;

/// The pseudo-bank code of PromptPay receivers (see the `banks` crate).
pub const PROMPTPAY: &str = "PROMPTPAY";

/// The pseudo-bank code of TrueMoney Wallet receivers: the account is the wallet's phone.
pub const TRUEMONEY: &str = "TRUEMONEY";

/// A masked number must show at least this many digits to match anything by number.
pub const MIN_VISIBLE_DIGITS: usize = 3;

/// A slip name (after normalisation) shorter than this many characters matches only a
/// registered name that is exactly equal to it.
pub const MIN_NAME_CHARS: usize = 4;

/// Characters banks use to hide a digit.
const MASK_CHARS: &[char] = &['x', 'X', '*', '#', '\u{2022}'];

/// A bank account a merchant registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisteredAccount<'a> {
    pub id: &'a str,
    /// BOT code (`"004"`), `"PROMPTPAY"` or `"TRUEMONEY"`.
    pub bank_code: &'a str,
    /// The full number: account digits, for PromptPay the phone number (`0812345678`),
    /// national id (13 digits) or e-wallet id (15 digits), for TrueMoney the wallet's phone
    /// number. Separators are allowed.
    pub bank_number: &'a str,
    pub name_th: &'a str,
    pub name_en: &'a str,
    /// `NAME` / `NUMBER` / `NAME_NUMBER` (BBL), `MSISDN` / `NATID` / `EWALLETID` (PromptPay).
    pub extra_verify: Option<&'a str>,
}

/// The receiver as the slip shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlipReceiver<'a> {
    /// BOT code, `"PROMPTPAY"` or `"TRUEMONEY"`.
    pub bank_id: &'a str,
    /// The account number as the bank masks it, e.g. `xxx-x-x3707-x`; may be empty.
    pub account: &'a str,
    pub name_th: &'a str,
    pub name_en: Option<&'a str>,
    /// For PromptPay receivers, the proxy kind if the slip says it (`MSISDN`, `NATID`, ...).
    pub proxy_type: Option<&'a str>,
}

impl<'a> SlipReceiver<'a> {
    /// The receiver of a transfer as the bank reported it (the proxy kind is not known there).
    pub fn from_party(party: &'a Party) -> Self {
        SlipReceiver {
            bank_id: &party.bank_code,
            account: &party.account,
            name_th: &party.name_th,
            name_en: party.name_en.as_deref(),
            proxy_type: None,
        }
    }

    /// The receiver of a TrueMoney Wallet transfer: its phone as the wallet masks it
    /// (`xxx-xxx-5678`) and its name; wallets show one name.
    pub fn from_wallet(phone: &'a str, name: &'a str) -> Self {
        SlipReceiver {
            bank_id: TRUEMONEY,
            account: phone,
            name_th: name,
            name_en: None,
            proxy_type: None,
        }
    }
}

fn is_separator(c: char) -> bool {
    c == '-' || c.is_whitespace()
}

fn is_mask(c: char) -> bool {
    MASK_CHARS.contains(&c)
}

fn strip_separators(s: &str) -> Vec<char> {
    s.chars().filter(|&c| !is_separator(c)).collect()
}

/// Whether the masked number `masked` (as printed on a slip) can be the full number `full`.
///
/// Separators (`-`, whitespace) are ignored on both sides. `full` must then be all digits;
/// `masked` all digits or mask characters (`x`, `X`, `*`, `#`, `•`). The two are aligned on
/// their right ends: when `masked` is longer, its extra leading characters must all be mask
/// characters; when it is shorter, it covers the last digits of `full`. Every visible digit
/// must equal the digit at its position, and at least [`MIN_VISIBLE_DIGITS`] must be visible.
pub fn masked_number_matches(masked: &str, full: &str) -> bool {
    let m = strip_separators(masked);
    let f = strip_separators(full);
    if f.is_empty() || !f.iter().all(char::is_ascii_digit) {
        return false;
    }
    if !m.iter().all(|&c| c.is_ascii_digit() || is_mask(c)) {
        return false;
    }
    let (m, f) = if m.len() > f.len() {
        let (extra, rest) = m.split_at(m.len() - f.len());
        if !extra.iter().all(|&c| is_mask(c)) {
            return false;
        }
        (rest, &f[..])
    } else {
        (&m[..], &f[f.len() - m.len()..])
    };
    let mut visible = 0;
    for (mc, fc) in m.iter().zip(f) {
        if mc.is_ascii_digit() {
            if mc != fc {
                return false;
            }
            visible += 1;
        }
    }
    visible >= MIN_VISIBLE_DIGITS
}

/// A PromptPay phone number in international form (`66812345678`, `+66812345678`,
/// `0066812345678`, possibly masked) in the domestic form `0812345678`; anything else as is
/// (without separators).
fn domestic_msisdn(s: &str) -> String {
    let compact: String = s.chars().filter(|&c| !is_separator(c)).collect();
    for prefix in ["+66", "0066", "66"] {
        if let Some(rest) = compact.strip_prefix(prefix) {
            if rest.chars().count() == 9 {
                return format!("0{rest}");
            }
        }
    }
    compact
}

/// PromptPay proxies: international phone forms become domestic, and the lengths must be
/// equal (10 phone, 13 national id, 15 e-wallet id), so one kind never matches another.
fn promptpay_number_matches(masked: &str, full: &str) -> bool {
    let full = domestic_msisdn(full);
    let masked = if full.len() == 10 && full.starts_with('0') {
        domestic_msisdn(masked)
    } else {
        strip_separators(masked).into_iter().collect()
    };
    masked.chars().count() == full.chars().count() && masked_number_matches(&masked, &full)
}

// ---- names -------------------------------------------------------------------------------------

/// Leading titles (lower case), stripped repeatedly. Thai ones also when written attached to the
/// name (`นายสมชาย`); English ones only when followed by `.`, whitespace or the end.
const THAI_TITLES: &[&str] = &[
    "ห้างหุ้นส่วนจำกัด",
    "ห้างหุ้นส่วนสามัญ",
    "เด็กหญิง",
    "เด็กชาย",
    "นางสาว",
    "บริษัท",
    "บจก.",
    "บมจ.",
    "หจก.",
    "น.ส.",
    "ด.ช.",
    "ด.ญ.",
    "บจก",
    "บมจ",
    "หจก",
    "น.ส",
    "นาง",
    "นาย",
    "ดร.",
];
const ENGLISH_TITLES: &[&str] = &["mrs", "miss", "mr", "ms", "dr"];
/// Trailing English words (lower case, punctuation removed) of company names, stripped repeatedly.
const ENGLISH_SUFFIXES: &[&str] = &[
    "co", "coltd", "ltd", "limited", "company", "corp", "inc", "pcl", "plc", "public",
];
/// Trailing Thai words of company names, stripped repeatedly from the compact form.
const THAI_SUFFIXES: &[&str] = &["จำกัดมหาชน", "จำกัด", "มหาชน"];
/// The compact forms of the suffixes: a slip name may end inside one of them (`บริษัท ก จำ`).
const SUFFIX_FORMS: &[&str] = &[
    "จำกัดมหาชน",
    "publiccompanylimited",
    "companylimited",
    "colimited",
    "coltd",
    "limited",
    "ltd",
    "pcl",
    "plc",
    "inc",
    "corporation",
];

fn strip_title(s: &str) -> Option<&str> {
    for t in THAI_TITLES {
        if let Some(rest) = s.strip_prefix(t) {
            return Some(rest);
        }
    }
    for t in ENGLISH_TITLES {
        if let Some(rest) = s.strip_prefix(t) {
            match rest.chars().next() {
                None => return Some(rest),
                Some('.') => return Some(&rest[1..]),
                Some(c) if c.is_whitespace() => return Some(rest),
                Some(_) => {}
            }
        }
    }
    None
}

/// The comparable core of a name: lower case, titles and company suffixes removed, then all
/// whitespace and ASCII punctuation removed (`นาย สมชาย ใจดี` → `สมชายใจดี`,
/// `MR. SOMCHAI J` → `somchaij`, `ABC CO., LTD.` → `abc`).
pub fn normalize_name(name: &str) -> String {
    let lower = name
        .trim()
        .to_lowercase()
        // Sara am typed as nikhahit + sara aa.
        .replace("\u{0E4D}\u{0E32}", "\u{0E33}")
        .replace(['\u{200B}', '\u{FEFF}'], "");
    let mut s = lower.trim_start();
    while let Some(rest) = strip_title(s) {
        s = rest.trim_start();
    }
    let mut tokens: Vec<String> = s
        .split_whitespace()
        .map(|t| t.chars().filter(|c| !c.is_ascii_punctuation()).collect())
        .filter(|t: &String| !t.is_empty())
        .collect();
    while tokens
        .last()
        .is_some_and(|t| ENGLISH_SUFFIXES.contains(&t.as_str()))
    {
        tokens.pop();
    }
    let mut compact = tokens.concat();
    while let Some(suffix) = THAI_SUFFIXES.iter().find(|s| compact.ends_with(*s)) {
        compact.truncate(compact.len() - suffix.len());
    }
    compact
}

/// Whether a slip's receiver name (perhaps with a title, perhaps truncated by the bank) can be
/// the registered name. Both are normalised ([`normalize_name`]); then the slip name must equal
/// the registered one, or be at least [`MIN_NAME_CHARS`] characters long and either a prefix of
/// it, or the registered name followed by the beginning of a company suffix (`... จำ`, `... CO., L`).
pub fn names_match(slip_name: &str, registered: &str) -> bool {
    let s = normalize_name(slip_name);
    let r = normalize_name(registered);
    if s.is_empty() || r.is_empty() {
        return false;
    }
    if s == r {
        return true;
    }
    if s.chars().count() < MIN_NAME_CHARS {
        return false;
    }
    if r.starts_with(&s) {
        return true;
    }
    match s.strip_prefix(&r) {
        Some(tail) => SUFFIX_FORMS.iter().any(|f| f.starts_with(tail)),
        None => false,
    }
}

// ---- accounts ----------------------------------------------------------------------------------

/// How well one account matches: `None` when it does not, else the evidence (how many of
/// number and name matched), to rank several matches.
fn account_score(receiver: &SlipReceiver<'_>, account: &RegisteredAccount<'_>) -> Option<u8> {
    if !receiver
        .bank_id
        .trim()
        .eq_ignore_ascii_case(account.bank_code.trim())
    {
        return None;
    }
    let promptpay = account.bank_code.trim().eq_ignore_ascii_case(PROMPTPAY);
    let wallet = account.bank_code.trim().eq_ignore_ascii_case(TRUEMONEY);
    let number_ok = if wallet {
        // A phone number, digit by digit against the mask, whole length (+66 forms too).
        promptpay_number_matches(receiver.account, account.bank_number)
    } else if promptpay {
        if let (Some(p), Some(k)) = (receiver.proxy_type, account.extra_verify) {
            if !p.trim().eq_ignore_ascii_case(k.trim()) {
                return None;
            }
        }
        promptpay_number_matches(receiver.account, account.bank_number)
    } else {
        masked_number_matches(receiver.account, account.bank_number)
    };

    let slip_names: Vec<&str> = [Some(receiver.name_th), receiver.name_en]
        .into_iter()
        .flatten()
        .filter(|n| !n.trim().is_empty())
        .collect();
    let registered_names = [account.name_th, account.name_en];
    let name_ok = slip_names
        .iter()
        .any(|s| registered_names.iter().any(|r| names_match(s, r)));

    let rule = if promptpay {
        None
    } else {
        account.extra_verify.map(|v| v.trim().to_ascii_uppercase())
    };
    let ok = match rule.as_deref() {
        Some("NAME") => name_ok,
        Some("NUMBER") => number_ok,
        Some("NAME_NUMBER") => name_ok && number_ok,
        _ => number_ok && (slip_names.is_empty() || name_ok),
    };
    ok.then_some(u8::from(number_ok) + u8::from(name_ok))
}

/// The id of the registered account the slip's receiver matches, or `None`
/// (`account_not_match`). When several match, the one with the most evidence (number and name
/// both matched beats only one) wins; among equals, the first registered.
pub fn match_receiver<'a>(
    receiver: &SlipReceiver<'_>,
    accounts: &[RegisteredAccount<'a>],
) -> Option<&'a str> {
    let mut best: Option<(u8, &'a str)> = None;
    for account in accounts {
        if let Some(score) = account_score(receiver, account) {
            if best.is_none_or(|(b, _)| score > b) {
                best = Some((score, account.id));
            }
        }
    }
    best.map(|(_, id)| id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_names() {
        // Each normalised name with spellings of it: titles, company forms, case and spaces.
        let cases: [(&str, &[&str]); 7] = [
            ("สมชายใจดี", &["นาย สมชาย ใจดี", "นายสมชาย ใจดี"]),
            ("สมหญิง", &["น.ส. สมหญิง", "นางสาวสมหญิง"]),
            (
                "ตัวอย่าง",
                &[
                    "บริษัท ตัวอย่าง จำกัด",
                    "บจก. ตัวอย่าง",
                    "บริษัท ตัวอย่าง จำกัด (มหาชน)",
                    "ตัวอย่าง จํากัด",
                ],
            ),
            ("somchaij", &["  MR.  Somchai   J "]),
            ("somchai", &["MR.SOMCHAI"]),
            ("mridulsen", &["MRIDUL SEN"]),
            ("example", &["EXAMPLE CO., LTD.", "Example Company Limited"]),
        ];
        for (want, spellings) in cases {
            for name in spellings {
                assert_eq!(normalize_name(name), want, "{name:?}");
            }
        }
    }

    fn wallet_account<'a>(id: &'a str, phone: &'a str, name: &'a str) -> RegisteredAccount<'a> {
        RegisteredAccount {
            id,
            bank_code: TRUEMONEY,
            bank_number: phone,
            name_th: name,
            name_en: "",
            extra_verify: None,
        }
    }

    #[test]
    fn truemoney_receivers_by_phone_and_name() {
        let shop = wallet_account("w1", "0812345678", "ร้านกาแฟ ดีดี");
        let other = wallet_account("w2", "0899995678", "ร้านกาแฟ ดีดี");
        let accounts = [other, shop];
        let slip = |phone, name| match_receiver(&SlipReceiver::from_wallet(phone, name), &accounts);
        // Every visible digit at its place: only the shop's number fits `081-xxx-5678`.
        assert_eq!(slip("081-xxx-5678", "ร้านกาแฟ ดีดี"), Some("w1"));
        assert_eq!(slip("xxx-xxx-5678", "ร้านกาแฟ ดีดี"), Some("w2"));
        assert_eq!(slip("082-xxx-5678", "ร้านกาแฟ ดีดี"), None);
        // A truncated name still matches; another name does not.
        assert_eq!(slip("081-xxx-5678", "ร้านกาแฟ ดี"), Some("w1"));
        assert_eq!(slip("081-xxx-5678", "สมชาย ใจดี"), None);
        // Too short a mask, or a bank slip's receiver with the same digits: no.
        assert_eq!(slip("xxx-5678", "ร้านกาแฟ ดีดี"), None);
        let bank = SlipReceiver {
            bank_id: "004",
            ..SlipReceiver::from_wallet("081-xxx-5678", "ร้านกาแฟ ดีดี")
        };
        assert_eq!(match_receiver(&bank, &accounts), None);
    }

    #[test]
    fn promptpay_international_phone() {
        assert!(promptpay_number_matches("66812345678", "0812345678"));
        assert!(promptpay_number_matches("+66-8x-xxx-5678", "0812345678"));
        assert!(promptpay_number_matches("xxx-xxx-5678", "+66812345678"));
        assert!(!promptpay_number_matches("x-xxxx-xxxxx-67-8", "0812345678"));
    }
}
