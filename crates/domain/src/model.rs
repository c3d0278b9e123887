//! The records the service works with, and the wire shape of a verified slip (spec 2.1).

use crate::clock::format_bangkok;
use crate::ids::{BankAccountId, BranchId, PartnerId, ServiceId, UserId};
use crate::ip::AllowList;
use crate::money::Satang;
use crate::quota::Quota;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// What the operator says about a service as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceState {
    Active,
    Banned,
    Deleted,
}

impl ServiceState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceState::Active => "active",
            ServiceState::Banned => "banned",
            ServiceState::Deleted => "deleted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(ServiceState::Active),
            "banned" => Some(ServiceState::Banned),
            "deleted" => Some(ServiceState::Deleted),
            _ => None,
        }
    }
}

/// An application: it owns branches and the service-wide quota.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub id: ServiceId,
    pub name: String,
    /// Counters as stored; `used` counts the cycle starting at `cycle_start` (see `cycle`).
    pub quota: Quota,
    pub created_at: OffsetDateTime,
    pub state: ServiceState,
    /// End of the subscription; `None` never expires.
    pub expires_at: Option<OffsetDateTime>,
    /// The user who owns the service, if any, and whether that user is banned.
    pub owner_id: Option<UserId>,
    pub owner_banned: bool,
    /// False when the operator marked the owner's verification (KYC) incomplete.
    pub owner_verified: bool,
    /// Monthly cycles start on this instant's day and time (Thai time).
    pub billing_anchor: OffsetDateTime,
    pub cycle_start: OffsetDateTime,
    /// The plan's name and its rate; `rate_limit_rps` overrides the plan's rate.
    pub plan: Plan,
    pub rate_limit_rps: Option<u32>,
    /// Package, current period, auto-renewal and credit (see `billing`).
    pub subscription: Subscription,
}

/// A named requests-per-second allowance for every branch of a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub name: String,
    pub rps: u32,
    pub burst: u32,
}

impl Service {
    /// The limit each branch of this service gets.
    pub fn rate_limit(&self) -> crate::rate::Gcra {
        match self.rate_limit_rps {
            Some(rps) => crate::rate::Gcra::new(rps, rps.div_ceil(2)),
            None => crate::rate::Gcra::new(self.plan.rps, self.plan.burst),
        }
    }

    /// Whether the service may verify now, in the documented order: deleted, banned, owner
    /// banned, expired. (Key, IP allow-list and branch state are checked before this.)
    pub fn check_access(&self, now: OffsetDateTime) -> Result<(), crate::Error> {
        use crate::Error;
        match self.state {
            ServiceState::Deleted => return Err(Error::ServiceDeleted),
            ServiceState::Banned => return Err(Error::ServiceBanned),
            ServiceState::Active => {}
        }
        if self.owner_banned {
            return Err(Error::UserBanned);
        }
        if !self.owner_verified {
            return Err(Error::AccountNotVerified);
        }
        if matches!(self.expires_at, Some(t) if now >= t) {
            return Err(Error::ServiceExpired);
        }
        Ok(())
    }

    /// Start of the billing cycle that contains `now`.
    pub fn current_cycle(&self, now: OffsetDateTime) -> OffsetDateTime {
        crate::cycle::cycle_start(self.billing_anchor, now)
    }

    /// The service's counters as they stand in the cycle containing `now`.
    pub fn quota_at(&self, now: OffsetDateTime) -> Quota {
        crate::cycle::effective(self.quota, self.cycle_start, self.current_cycle(now))
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct Branch {
    pub id: BranchId,
    pub service_id: ServiceId,
    pub name: String,
    pub is_main: bool,
    pub active: bool,
    pub allow_ips: AllowList,
    pub webhook_url: Option<String>,
    /// Kept in clear: it is needed to sign callbacks. Never logged or returned by the API.
    pub webhook_secret: Option<String>,
    /// Biller id (15 digits) of the branch's merchant payment QRs.
    pub biller_id: Option<String>,
    /// A test branch: verifies on the sandbox ledger, never charged, duplicates kept apart
    /// from production.
    pub sandbox: bool,
    pub quota: Quota,
    pub created_at: OffsetDateTime,
    /// The cycle the branch's `used` counts (cycles follow the service's billing anchor).
    pub cycle_start: OffsetDateTime,
}

// Written out so the webhook secret never reaches a log through `{:?}`.
impl std::fmt::Debug for Branch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Branch")
            .field("id", &self.id)
            .field("service_id", &self.service_id)
            .field("name", &self.name)
            .field("is_main", &self.is_main)
            .field("active", &self.active)
            .field("allow_ips", &self.allow_ips)
            .field("webhook_url", &self.webhook_url)
            .field(
                "webhook_secret",
                &self.webhook_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("sandbox", &self.sandbox)
            .field("quota", &self.quota)
            .finish_non_exhaustive()
    }
}

impl Branch {
    /// The branch's counters as they stand in `current_cycle` (from its service).
    pub fn quota_in(&self, current_cycle: OffsetDateTime) -> Quota {
        crate::cycle::effective(self.quota, self.cycle_start, current_cycle)
    }
}

/// A person or company owning services; banning them stops all their services.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: UserId,
    pub name: String,
    pub banned: bool,
    pub created_at: OffsetDateTime,
}

/// A reseller or POS vendor managing quotas of some services through the partner API.
#[derive(Clone, PartialEq, Eq)]
pub struct Partner {
    pub id: PartnerId,
    pub name: String,
    /// Kept in clear: needed to check signatures. Shown once at creation.
    pub secret: String,
    pub permissions: Vec<crate::partner::Permission>,
    pub service_ids: Vec<ServiceId>,
    pub created_at: OffsetDateTime,
}

// Written out so the secret never reaches a log through `{:?}`.
impl std::fmt::Debug for Partner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Partner")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("secret", &"<redacted>")
            .field("permissions", &self.permissions)
            .field("service_ids", &self.service_ids)
            .finish_non_exhaustive()
    }
}

/// One recorded change (who, what, before and after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    pub id: String,
    pub at: OffsetDateTime,
    /// `partner:<id>`, `cli`, ...
    pub actor: String,
    pub action: String,
    pub service_id: Option<ServiceId>,
    pub branch_id: Option<BranchId>,
    /// JSON with the values before and after.
    pub detail: String,
}

/// One side of a transfer as the bank reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Party {
    pub bank_code: String,
    pub name_th: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_en: Option<String>,
    /// Account type code as banks report it (`BANKAC`, `TOKEN`, `DUMMY`).
    pub account_type: String,
    /// The account number as the bank masks it, e.g. `xxx-x-x3707-x`.
    pub account: String,
}

/// A transfer as the sending bank reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transfer {
    pub trans_ref: String,
    pub payload: String,
    #[serde(rename = "occurredAtMs", with = "unix_millis")]
    pub occurred_at: OffsetDateTime,
    pub country_code: String,
    #[serde(rename = "amountSatang")]
    pub amount: Satang,
    #[serde(rename = "feeSatang")]
    pub fee: Satang,
    pub ref1: String,
    pub ref2: String,
    pub ref3: String,
    pub sender: Party,
    pub receiver: Party,
    pub receiver_merchant_id: Option<String>,
    /// The bank's own `data` object as it answered (bank-API connectors only). Kept because
    /// the wire shape has no place for some of it (proxies, kbankTxnId-era fields), and an
    /// operator disputing a slip wants the bank's words. Optional: older stored JSON lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_data: Option<serde_json::Value>,
}

// ---- wire shape of a verified slip (spec 2.1) -------------------------------------------------

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyBankData {
    pub remark: String,
    pub is_duplicate: bool,
    pub amount_in_slip: f64,
    /// Only when `matchAmount` was sent: the published client type makes it optional, and
    /// clients that reject on `false` must not reject every slip checked without an amount.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_amount_matched: Option<bool>,
    /// The `matchAmount` sent, when one was (compat.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount_in_order: Option<f64>,
    /// The registered account the receiver matched (with `matchAccount: true`); always
    /// present, null otherwise, as clients parse it.
    #[schema(required = true)]
    pub matched_account: Option<MatchedAccount>,
    /// The requested checks that failed, as the spec's codes (`amount_not_match`,
    /// `account_not_match`); empty when every requested check passed.
    pub mismatches: Vec<&'static str>,
    pub raw_slip: RawSlip,
}

/// What every verified slip answers about the caller's options, whatever its kind: the
/// remark echoed, whether it was verified before, and the `matchAmount` check.
#[derive(Debug, Clone, PartialEq)]
pub struct Checks {
    pub remark: String,
    pub is_duplicate: bool,
    pub amount_in_slip: f64,
    pub is_amount_matched: Option<bool>,
    pub amount_in_order: Option<f64>,
    /// The requested checks that failed (see [`VerifyBankData::mismatches`]).
    pub mismatches: Vec<&'static str>,
}

impl VerifyBankData {
    pub fn new(checks: Checks, matched_account: Option<MatchedAccount>, raw_slip: RawSlip) -> Self {
        VerifyBankData {
            remark: checks.remark,
            is_duplicate: checks.is_duplicate,
            amount_in_slip: checks.amount_in_slip,
            is_amount_matched: checks.is_amount_matched,
            amount_in_order: checks.amount_in_order,
            matched_account,
            mismatches: checks.mismatches,
            raw_slip,
        }
    }
}

/// compat.md `data.matchedAccount`.
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchedAccount {
    // A plain string in the schema, as every id (a doc comment here would add a description).
    #[schema(value_type = String)]
    pub id: BankAccountId,
    pub bank: MatchedBank,
    pub name_th: String,
    pub name_en: String,
    /// `PERSONAL` or `JURISTIC`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub bank_number: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchedBank {
    pub name_th: String,
    pub name_en: String,
    pub code: String,
    pub short_code: String,
}

impl MatchedAccount {
    pub fn from_account(a: &BankAccount) -> Self {
        let bank = banks::find(&a.bank_code);
        MatchedAccount {
            id: a.id.clone(),
            bank: MatchedBank {
                name_th: bank.map_or("", |b| b.name_th).to_string(),
                name_en: bank.map_or("", |b| b.name_en).to_string(),
                code: a.bank_code.clone(),
                short_code: bank.map_or("", |b| b.short).to_string(),
            },
            name_th: a.name_th.clone(),
            name_en: a.name_en.clone(),
            kind: a.kind.as_str(),
            bank_number: a.bank_number.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
/// The slip as the bank reports it (spec 2.1).
pub struct RawSlip {
    pub payload: String,
    pub trans_ref: String,
    /// ISO 8601 with milliseconds, `+07:00`.
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

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct RawAmount {
    pub amount: f64,
    pub local: LocalAmount,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct LocalAmount {
    pub amount: f64,
    /// `THB`.
    pub currency: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct RawBank {
    pub id: String,
    /// Thai name.
    pub name: String,
    pub short: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct RawName {
    pub th: String,
    /// Absent when the bank gives none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub en: Option<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct RawAccountBank {
    /// e.g. `BANKAC`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Masked, e.g. `xxx-x-x1234-x`.
    pub account: String,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct RawAccount {
    pub name: RawName,
    pub bank: RawAccountBank,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct RawParty {
    pub bank: RawBank,
    pub account: RawAccount,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RawReceiver {
    pub bank: RawBank,
    pub account: RawAccount,
    /// v2: always present (null when none, spec 2.1); v1: left out when none.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_do_not_print() {
        let p = Partner {
            id: "p".into(),
            name: "n".into(),
            secret: "s3cr3t-value".into(),
            permissions: vec![],
            service_ids: vec![],
            created_at: OffsetDateTime::UNIX_EPOCH,
        };
        assert!(!format!("{p:?}").contains("s3cr3t-value"));
        let b = Branch {
            id: "b".into(),
            service_id: "s".into(),
            name: "n".into(),
            is_main: true,
            active: true,
            allow_ips: AllowList::allow_all(),
            webhook_url: None,
            webhook_secret: Some("hook-s3cr3t".into()),
            biller_id: None,
            sandbox: false,
            quota: Quota {
                limit: None,
                used: 0,
                total_used: 0,
            },
            created_at: OffsetDateTime::UNIX_EPOCH,
            cycle_start: OffsetDateTime::UNIX_EPOCH,
        };
        assert!(!format!("{b:?}").contains("hook-s3cr3t"));
    }
}

/// PERSONAL or JURISTIC (compat.md bank account `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccountType {
    Personal,
    Juristic,
}

impl AccountType {
    pub fn as_str(self) -> &'static str {
        match self {
            AccountType::Personal => "PERSONAL",
            AccountType::Juristic => "JURISTIC",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_uppercase().as_str() {
            "PERSONAL" => Some(AccountType::Personal),
            "JURISTIC" => Some(AccountType::Juristic),
            _ => None,
        }
    }
}

/// A receiving account a branch registered, matched against slips' receivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BankAccount {
    pub id: BankAccountId,
    pub service_id: ServiceId,
    pub branch_id: BranchId,
    /// BOT code or `PROMPTPAY`.
    pub bank_code: String,
    /// Digits only (separators removed on the way in).
    pub bank_number: String,
    pub name_th: String,
    pub name_en: String,
    pub kind: AccountType,
    pub extra_verify: Option<String>,
    pub created_at: OffsetDateTime,
}

/// A TrueMoney Wallet transfer as the wallet reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletTransfer {
    /// 14 digits, as in the slip QR.
    pub transaction_id: String,
    /// e.g. `P2P`.
    pub event: String,
    pub payload: String,
    #[serde(rename = "occurredAtMs", with = "unix_millis")]
    pub occurred_at: OffsetDateTime,
    #[serde(rename = "amountSatang")]
    pub amount: Satang,
    pub sender_name: String,
    /// Masked the way the wallet shows it (`xxx-xxx-5678`).
    pub sender_phone: String,
    pub receiver_name: String,
    pub receiver_phone: String,
}

/// The verified TrueMoney slip (our own shape; no spec section describes it).
#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyWalletData {
    pub remark: String,
    pub is_duplicate: bool,
    pub amount_in_slip: f64,
    /// Only when `matchAmount` was sent (as for bank slips).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_amount_matched: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amount_in_order: Option<f64>,
    /// The registered `TRUEMONEY` account the receiver matched (with `matchAccount: true`);
    /// always present, null otherwise, as for bank slips.
    #[schema(required = true)]
    pub matched_account: Option<MatchedAccount>,
    pub mismatches: Vec<&'static str>,
    pub raw_slip: RawWalletSlip,
}

impl VerifyWalletData {
    pub fn new(
        checks: Checks,
        matched_account: Option<MatchedAccount>,
        raw_slip: RawWalletSlip,
    ) -> Self {
        VerifyWalletData {
            remark: checks.remark,
            is_duplicate: checks.is_duplicate,
            amount_in_slip: checks.amount_in_slip,
            is_amount_matched: checks.is_amount_matched,
            amount_in_order: checks.amount_in_order,
            matched_account,
            mismatches: checks.mismatches,
            raw_slip,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RawWalletSlip {
    pub payload: String,
    pub transaction_id: String,
    /// e.g. `P2P`.
    pub event: String,
    pub date: String,
    pub amount: f64,
    pub currency: &'static str,
    pub sender: WalletParty,
    pub receiver: WalletParty,
}

#[derive(Debug, Clone, Serialize, PartialEq, utoipa::ToSchema)]
pub struct WalletParty {
    pub name: String,
    pub phone: String,
}

impl RawWalletSlip {
    pub fn from_transfer(t: &WalletTransfer) -> Self {
        RawWalletSlip {
            payload: t.payload.clone(),
            transaction_id: t.transaction_id.clone(),
            event: t.event.clone(),
            date: format_bangkok(t.occurred_at),
            amount: t.amount.as_baht(),
            currency: "THB",
            sender: WalletParty {
                name: t.sender_name.clone(),
                phone: t.sender_phone.clone(),
            },
            receiver: WalletParty {
                name: t.receiver_name.clone(),
                phone: t.receiver_phone.clone(),
            },
        }
    }
}

/// The transfer a verification confirmed, as stored with the verification (column
/// `verifications.transfer_json`) so repeats can be answered without asking again.
///
/// Internal storage format — keep it stable; add fields only as optional ones:
/// `{"kind": "bank", "transRef", "payload", "occurredAtMs" (Unix ms), "countryCode",
/// "amountSatang", "feeSatang", "ref1", "ref2", "ref3", "sender" and "receiver" as
/// {"bankCode", "nameTh", "nameEn"?, "accountType", "account"}, "receiverMerchantId" (or null),
/// "bankData"? (the bank API's raw `data` object)}`,
/// or `{"kind": "wallet", "transactionId", "event", "payload", "occurredAtMs", "amountSatang",
/// "senderName", "senderPhone", "receiverName", "receiverPhone"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum VerifiedTransfer {
    Bank(Box<Transfer>),
    Wallet(Box<WalletTransfer>),
}

impl VerifiedTransfer {
    pub fn to_json(&self) -> String {
        // Plain data without maps keyed by non-strings: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(s: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(s)
    }

    pub fn amount(&self) -> Satang {
        match self {
            VerifiedTransfer::Bank(t) => t.amount,
            VerifiedTransfer::Wallet(t) => t.amount,
        }
    }

    pub fn occurred_at(&self) -> OffsetDateTime {
        match self {
            VerifiedTransfer::Bank(t) => t.occurred_at,
            VerifiedTransfer::Wallet(t) => t.occurred_at,
        }
    }

    /// The transfer with its personal data blanked (retention, PDPA): names, accounts, phone
    /// numbers and the bank's own `data` go; bank, reference, amount and time stay, which is
    /// all the duplicate check needs.
    pub fn without_personal(&self) -> VerifiedTransfer {
        fn blank(p: &Party) -> Party {
            Party {
                bank_code: p.bank_code.clone(),
                name_th: String::new(),
                name_en: None,
                account_type: p.account_type.clone(),
                account: String::new(),
            }
        }
        match self {
            VerifiedTransfer::Bank(t) => VerifiedTransfer::Bank(Box::new(Transfer {
                sender: blank(&t.sender),
                receiver: blank(&t.receiver),
                bank_data: None,
                ..(**t).clone()
            })),
            VerifiedTransfer::Wallet(t) => VerifiedTransfer::Wallet(Box::new(WalletTransfer {
                sender_name: String::new(),
                sender_phone: String::new(),
                receiver_name: String::new(),
                receiver_phone: String::new(),
                ..(**t).clone()
            })),
        }
    }
}

/// Instants in the stored transfer: Unix milliseconds, as every other stored instant.
mod unix_millis {
    use serde::{Deserialize, Deserializer, Serializer};
    use time::OffsetDateTime;

    pub fn serialize<S: Serializer>(t: &OffsetDateTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(crate::clock::to_millis(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
        Ok(crate::clock::from_millis(i64::deserialize(d)?))
    }
}

#[cfg(test)]
mod stored_transfer_tests {
    use super::*;

    #[test]
    fn the_stored_format_is_stable() {
        let p = |code: &str| Party {
            bank_code: code.into(),
            name_th: "ก".into(),
            name_en: None,
            account_type: "BANKAC".into(),
            account: "xxx-x-x3707-x".into(),
        };
        let t = VerifiedTransfer::Bank(Box::new(Transfer {
            trans_ref: "R1".into(),
            payload: "P".into(),
            occurred_at: crate::clock::from_millis(1_700_000_000_123),
            country_code: "TH".into(),
            amount: Satang(15050),
            fee: Satang(0),
            ref1: String::new(),
            ref2: String::new(),
            ref3: String::new(),
            sender: p("004"),
            receiver: p("014"),
            receiver_merchant_id: None,
            bank_data: None,
        }));
        let json = t.to_json();
        assert_eq!(
            json,
            r#"{"kind":"bank","transRef":"R1","payload":"P","occurredAtMs":1700000000123,"countryCode":"TH","amountSatang":15050,"feeSatang":0,"ref1":"","ref2":"","ref3":"","sender":{"bankCode":"004","nameTh":"ก","accountType":"BANKAC","account":"xxx-x-x3707-x"},"receiver":{"bankCode":"014","nameTh":"ก","accountType":"BANKAC","account":"xxx-x-x3707-x"},"receiverMerchantId":null}"#
        );
        assert_eq!(VerifiedTransfer::from_json(&json).unwrap(), t);
    }
}

/// When the package renews by itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AutoRenew {
    /// At (or after) the expiry.
    pub on_expiry: bool,
    /// When the service's quota of the cycle is used up.
    pub on_quota: bool,
}

impl AutoRenew {
    pub const ON: AutoRenew = AutoRenew {
        on_expiry: true,
        on_quota: true,
    };
}

/// A service's subscription: the package and its current period (the service's
/// `expires_at` ends it; `billing_anchor` starts its cycles).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    pub package_id: Option<crate::PackageId>,
    /// Start of the current period (subscription or last renewal).
    pub started_at: Option<OffsetDateTime>,
    pub auto_renew: AutoRenew,
    /// Renewals so far: names a period, so an external billing system can be asked for one
    /// renewal of it idempotently (`<service id>:<seq>`).
    pub renewal_seq: i64,
    /// Prepaid credit (satang); never negative.
    pub credit: i64,
}
