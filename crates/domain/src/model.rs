//! The records the service works with, and the wire shape of a verified slip (spec 2.1).

use crate::clock::format_bangkok;
use crate::ip::AllowList;
use crate::money::Satang;
use crate::quota::Quota;
use serde::Serialize;
use time::OffsetDateTime;

/// An application: it owns branches and the service-wide quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub id: String,
    pub name: String,
    pub quota: Quota,
    pub created_at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Branch {
    pub id: String,
    pub service_id: String,
    pub name: String,
    pub is_main: bool,
    pub active: bool,
    pub allow_ips: AllowList,
    pub webhook_url: Option<String>,
    /// Kept in clear: it is needed to sign callbacks. Never logged or returned by the API.
    pub webhook_secret: Option<String>,
    pub quota: Quota,
    pub created_at: OffsetDateTime,
}

/// One side of a transfer as the bank reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Party {
    pub bank_code: String,
    pub name_th: String,
    pub name_en: Option<String>,
    /// Account type code as banks report it (`BANKAC`, `TOKEN`, `DUMMY`).
    pub account_type: String,
    /// The account number as the bank masks it, e.g. `xxx-x-x3707-x`.
    pub account: String,
}

/// A transfer as the sending bank reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub trans_ref: String,
    pub payload: String,
    pub occurred_at: OffsetDateTime,
    pub country_code: String,
    pub amount: Satang,
    pub fee: Satang,
    pub ref1: String,
    pub ref2: String,
    pub ref3: String,
    pub sender: Party,
    pub receiver: Party,
    pub receiver_merchant_id: Option<String>,
}

// ---- wire shape of a verified slip (spec 2.1) -------------------------------------------------

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VerifyBankData {
    pub remark: String,
    pub is_duplicate: bool,
    pub amount_in_slip: f64,
    pub is_amount_matched: bool,
    /// The `matchAmount` sent, when one was (compat.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount_in_order: Option<f64>,
    pub raw_slip: RawSlip,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RawSlip {
    pub payload: String,
    pub trans_ref: String,
    pub date: String,
    pub country_code: String,
    pub amount: RawAmount,
    pub fee: f64,
    pub ref1: String,
    pub ref2: String,
    pub ref3: String,
    pub sender: RawParty,
    pub receiver: RawReceiver,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RawAmount {
    pub amount: f64,
    pub local: LocalAmount,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LocalAmount {
    pub amount: f64,
    pub currency: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RawBank {
    pub id: String,
    pub name: String,
    pub short: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RawName {
    pub th: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub en: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RawAccountBank {
    #[serde(rename = "type")]
    pub kind: String,
    pub account: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RawAccount {
    pub name: RawName,
    pub bank: RawAccountBank,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RawParty {
    pub bank: RawBank,
    pub account: RawAccount,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RawReceiver {
    pub bank: RawBank,
    pub account: RawAccount,
    pub merchant_id: Option<String>,
}

fn raw_bank(code: &str) -> RawBank {
    match banks::find(code) {
        Some(b) => RawBank {
            id: b.code.to_string(),
            name: b.name_th.to_string(),
            short: b.short.to_string(),
        },
        // A connector may report a bank we do not list; show its code rather than fail.
        None => RawBank {
            id: code.to_string(),
            name: String::new(),
            short: String::new(),
        },
    }
}

fn raw_account(p: &Party) -> RawAccount {
    RawAccount {
        name: RawName {
            th: p.name_th.clone(),
            en: p.name_en.clone(),
        },
        bank: RawAccountBank {
            kind: p.account_type.clone(),
            account: p.account.clone(),
        },
    }
}

impl RawSlip {
    pub fn from_transfer(t: &Transfer) -> Self {
        RawSlip {
            payload: t.payload.clone(),
            trans_ref: t.trans_ref.clone(),
            date: format_bangkok(t.occurred_at),
            country_code: t.country_code.clone(),
            amount: RawAmount {
                amount: t.amount.as_baht(),
                local: LocalAmount {
                    amount: t.amount.as_baht(),
                    currency: "THB".to_string(),
                },
            },
            fee: t.fee.as_baht(),
            ref1: t.ref1.clone(),
            ref2: t.ref2.clone(),
            ref3: t.ref3.clone(),
            sender: RawParty {
                bank: raw_bank(&t.sender.bank_code),
                account: raw_account(&t.sender),
            },
            receiver: RawReceiver {
                bank: raw_bank(&t.receiver.bank_code),
                account: raw_account(&t.receiver),
                merchant_id: t.receiver_merchant_id.clone(),
            },
        }
    }
}
