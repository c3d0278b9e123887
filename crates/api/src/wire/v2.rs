//! `/v2`: banks, info, verification requests, async jobs, bank accounts, the partner API.

use domain::clock::format_bangkok;
use domain::quota::Quota;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::form::Form;
use crate::request::{decode_base64, Fields, Request};
use crate::submitted::{SlipOptions, Submitted};
use domain::Error;
use services::input::SlipInput;

// ---- GET /v2/banks --------------------------------------------------------------------------

#[derive(Debug, Serialize, ToSchema)]
pub struct ExtraVerify {
    pub value: &'static str,
    pub label: &'static str,
}

/// A bank of `GET /v2/banks`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Bank {
    /// Bank of Thailand code (`004`) or `PROMPTPAY`.
    pub code: &'static str,
    pub name_en: &'static str,
    pub name_th: &'static str,
    pub short_code: &'static str,
    pub swift_code: Option<&'static str>,
    /// The options a bank account of this bank may carry, or null.
    pub extra_verify: Option<Vec<ExtraVerify>>,
    pub extra_verify_required: bool,
}

impl From<&banks::Bank> for Bank {
    fn from(b: &banks::Bank) -> Self {
        Bank {
            code: b.code,
            name_en: b.name_en,
            name_th: b.name_th,
            short_code: b.short,
            swift_code: b.swift,
            extra_verify: b.extra_verify.map(|l| {
                l.iter()
                    .map(|o| ExtraVerify {
                        value: o.value,
                        label: o.label,
                    })
                    .collect()
            }),
            extra_verify_required: b.extra_verify_required,
        }
    }
}

// ---- GET /v2/info ---------------------------------------------------------------------------

/// `/v2/info`'s counters of the current cycle, plus `sandboxUsed` (our addition).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfoQuota {
    pub used: i64,
    /// null: no limit.
    pub max: Option<i64>,
    /// null: no limit.
    pub remaining: Option<i64>,
    pub total_used: i64,
    /// Verifications by test branches, duplicates included, ever: never charged, so not in
    /// `used` or `totalUsed` (for the application: all its test branches).
    pub sandbox_used: i64,
}

impl InfoQuota {
    pub fn new(q: &Quota, sandbox_used: i64) -> Self {
        InfoQuota {
            used: q.used,
            max: q.limit,
            remaining: q.remaining(),
            total_used: q.total_used,
            sandbox_used,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfoApplication {
    pub name: String,
    pub quota: InfoQuota,
    /// The subscribed package, or null when the service has none.
    pub package: Option<InfoPackage>,
    /// End of the current period; null never expires.
    pub expires_at: Option<String>,
    pub auto_renew: InfoAutoRenew,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfoPackage {
    pub name: String,
    /// Verifications per billing cycle.
    pub quota: i64,
    pub duration_days: u32,
}

/// Auto-renewal (compat.md): `expired` renews at expiry, `quota` when the service quota is
/// used up; `createdAt`/`expiresAt` bound the current period.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfoAutoRenew {
    pub expired: bool,
    pub quota: bool,
    pub created_at: Option<String>,
    pub expires_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InfoBranch {
    pub name: String,
    pub is_active: bool,
    pub is_main: bool,
    /// A test branch: verifies on the sandbox ledger, never charged (our addition).
    pub sandbox: bool,
    pub quota: InfoQuota,
}

/// The account behind the service, as clients of hosted services read it: no email is kept
/// (always null); credit in baht.
#[derive(Debug, Serialize, ToSchema)]
pub struct InfoAccount {
    #[schema(required = true, value_type = Option<String>)]
    pub email: Option<()>,
    pub credit: f64,
}

/// The product: the subscribed package's name, or null.
#[derive(Debug, Serialize, ToSchema)]
pub struct InfoProduct {
    #[schema(required = true)]
    pub name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Info {
    pub application: InfoApplication,
    pub account: InfoAccount,
    pub product: InfoProduct,
    pub branch: InfoBranch,
}

// ---- verification requests ----------------------------------------------------------------

/// One slip: exactly one of `payload`, `base64`, `url` (an image upload uses multipart).
/// Strings are trimmed before their lengths are checked.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyBody {
    /// The slip's QR text.
    #[schema(min_length = 1, max_length = 128)]
    pub payload: Option<String>,
    /// The slip image as Base64 (optional `data:image/...;base64,` prefix), at most 4 MB decoded.
    pub base64: Option<String>,
    /// An http(s) image URL on a public address.
    #[schema(min_length = 1, max_length = 255)]
    pub url: Option<String>,
    /// Report whether this service verified the slip before (`isDuplicate`).
    pub check_duplicate: Option<bool>,
    /// Expected amount in baht, at most 2 decimals, at most 10^12 (`domain::money::MAX_SATANG`).
    #[schema(minimum = 0, maximum = 1_000_000_000_000_f64)]
    pub match_amount: Option<f64>,
    /// Echoed in `data.remark`.
    #[schema(min_length = 1, max_length = 255)]
    pub remark: Option<String>,
    /// Compare the receiver with the branch's bank accounts (`data.matchedAccount`).
    pub match_account: Option<bool>,
}

/// The same fields as the JSON body, as text fields, with the file in `image`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyForm {
    /// JPEG, PNG, GIF or WebP, at most 4 MB.
    #[schema(value_type = Option<String>, format = Binary)]
    pub image: Option<Vec<u8>>,
    #[schema(min_length = 1, max_length = 128)]
    pub payload: Option<String>,
    pub base64: Option<String>,
    #[schema(min_length = 1, max_length = 255)]
    pub url: Option<String>,
    #[schema(value_type = Option<FormFlag>)]
    pub check_duplicate: Option<String>,
    /// e.g. `150.5`.
    pub match_amount: Option<String>,
    #[schema(min_length = 1, max_length = 255)]
    pub remark: Option<String>,
    #[schema(value_type = Option<FormFlag>)]
    pub match_account: Option<String>,
    /// Async submissions only.
    #[schema(min_length = 1, max_length = 2048)]
    pub callback_url: Option<String>,
}

/// A flag sent as a form field.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FormFlag {
    True,
    False,
}

/// An async submission: one slip as for `POST /v2/verify/bank`, plus `callbackUrl`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncRequest {
    #[serde(flatten)]
    pub slip: VerifyBody,
    /// https URL on a public address; defaults to the branch's webhook URL.
    #[schema(min_length = 1, max_length = 2048)]
    pub callback_url: Option<String>,
}

/// 1–100 slips, one JSON body of at most 6 MB; all or nothing. `callbackUrl` is set once,
/// for the whole batch.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchRequest {
    #[schema(min_length = 1, max_length = 2048)]
    pub callback_url: Option<String>,
    #[schema(min_items = 1, max_items = 100)]
    pub slips: Vec<VerifyBody>,
}

// ---- async jobs -----------------------------------------------------------------------------

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobAccepted {
    pub job_id: String,
    /// null for a single submission.
    #[schema(required = true, value_type = Option<String>)]
    pub batch_id: Option<()>,
    /// `queued`.
    pub status: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchAccepted {
    pub batch_id: Option<String>,
    /// In request order.
    pub job_ids: Vec<String>,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// `pending`, `delivered` or `failed`.
    pub state: &'static str,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
    pub first_attempt_at: Option<String>,
    pub last_attempt_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct JobError {
    pub code: String,
    pub message: String,
    /// `failed` when every callback was refused (then `delivery` is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
}

/// A polled job (spec 2.4).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub job_id: String,
    pub batch_id: Option<String>,
    /// `queued`, `processing`, `retrying`, `done`, `not_found`, `failed`.
    pub status: &'static str,
    /// `done`: the verification data; `not_found`: `{payload, reason, attempts}`.
    #[schema(value_type = Option<Object>)]
    pub data: Value,
    pub error: Option<JobError>,
    pub attempts: u32,
    pub callback_url: Option<String>,
    pub webhook: Option<Delivery>,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    pub expires_at: String,
}

impl From<&domain::job::Job> for Job {
    /// `error.webhook: "failed"` (with the delivery details) is added to a failed job whose
    /// callbacks were all refused; `webhook` shows delivery for every job with a callback.
    fn from(j: &domain::job::Job) -> Self {
        use domain::job::{JobStatus, WebhookState};
        let w = &j.webhook;
        let delivery = Delivery {
            state: w.state.as_str(),
            attempts: w.attempts,
            last_status: w.last_status,
            last_error: w.last_error.clone(),
            first_attempt_at: w.first_at.map(format_bangkok),
            last_attempt_at: w.last_at.map(format_bangkok),
        };
        let undelivered = j.status == JobStatus::Failed && w.state == WebhookState::Failed;
        let error = match (&j.error_code, &j.error_message) {
            (Some(code), Some(message)) => Some(JobError {
                code: code.clone(),
                message: message.clone(),
                webhook: undelivered.then_some("failed"),
                delivery: undelivered.then(|| delivery.clone()),
            }),
            _ => None,
        };
        Job {
            job_id: j.id.to_string(),
            batch_id: j.batch_id.as_ref().map(ToString::to_string),
            status: j.status.as_str(),
            data: if j.status == JobStatus::Failed {
                Value::Null
            } else {
                j.result.clone().unwrap_or(Value::Null)
            },
            error,
            attempts: j.attempts,
            callback_url: j.callback_url.clone(),
            webhook: j.callback_url.is_some().then_some(delivery),
            next_attempt_at: (!j.status.is_terminal()).then(|| format_bangkok(j.due_at)),
            created_at: format_bangkok(j.created_at),
            updated_at: format_bangkok(j.updated_at),
            finished_at: j.finished_at.map(format_bangkok),
            expires_at: format_bangkok(j.expires_at),
        }
    }
}

// ---- bank accounts --------------------------------------------------------------------------

/// Lengths and formats are checked by the service (`INVALID_BANK_CODE`, `VALIDATION_ERROR`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewBankAccount {
    /// A code of `GET /v2/banks`.
    #[schema(min_length = 1, max_length = 16)]
    pub bank_code: String,
    /// 10–15 digits (dashes and spaces allowed); PromptPay: by `extraVerify`.
    pub bank_number: String,
    #[schema(min_length = 1, max_length = 200)]
    pub name_th: String,
    #[schema(min_length = 1, max_length = 200)]
    pub name_en: String,
    #[serde(rename = "type")]
    pub kind: AccountKind,
    /// One of the bank's `extraVerify` options (required for some banks).
    pub extra_verify: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum AccountKind {
    Personal,
    Juristic,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BankAccountUpdate {
    /// Required: a string, or null to clear it.
    #[schema(required = true, min_length = 1, max_length = 32)]
    pub extra_verify: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountBank {
    pub code: String,
    pub name_th: Option<&'static str>,
    pub name_en: Option<&'static str>,
    pub short_code: Option<&'static str>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BankAccount {
    pub id: String,
    pub bank_code: String,
    pub bank_number: String,
    pub name_th: String,
    pub name_en: String,
    /// `PERSONAL` or `JURISTIC`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub extra_verify: Option<String>,
    pub bank: AccountBank,
    pub created_at: String,
}

impl From<&domain::model::BankAccount> for BankAccount {
    fn from(a: &domain::model::BankAccount) -> Self {
        let bank = banks::find(&a.bank_code);
        BankAccount {
            id: a.id.to_string(),
            bank_code: a.bank_code.clone(),
            bank_number: a.bank_number.clone(),
            name_th: a.name_th.clone(),
            name_en: a.name_en.clone(),
            kind: a.kind.as_str(),
            extra_verify: a.extra_verify.clone(),
            bank: AccountBank {
                code: a.bank_code.clone(),
                name_th: bank.map(|b| b.name_th),
                name_en: bank.map(|b| b.name_en),
                short_code: bank.map(|b| b.short),
            },
            created_at: format_bangkok(a.created_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Deleted {
    pub id: String,
}

// ---- partner --------------------------------------------------------------------------------

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerBranch {
    pub id: String,
    pub name: String,
    /// null: no branch limit.
    pub limit_quota: Option<i64>,
    pub used_quota: i64,
    pub total_used_quota: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerService {
    pub limit_quota: Option<i64>,
    pub used_quota: i64,
    pub total_used_quota: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PartnerQuota {
    pub branch: PartnerBranch,
    pub service: PartnerService,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetQuota {
    /// Required: a whole number ≥ the used quota, or null for no branch limit.
    #[schema(required = true, minimum = 0)]
    pub limit_quota: Option<i64>,
}

/// A branch as the partner API's branch operations show it (compat.md's published object,
/// plus `serviceId`; `apiKey` only in the answer that created it).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerBranchRecord {
    pub id: String,
    pub service_id: String,
    pub name: String,
    pub is_main: bool,
    pub is_active: bool,
    /// The address (or CIDR) the branch's key may be used from; null: any. Several entries
    /// (set by the operator) are joined with commas.
    pub ip_address: Option<String>,
    /// null: no branch limit.
    pub limit_quota: Option<i64>,
    pub used_quota: i64,
    pub total_used_quota: i64,
    pub bank_accounts: Vec<BankAccount>,
    pub created_at: String,
    /// The new branch's API key, shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
}

/// `POST /b2b/branches`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerNewBranch {
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// One address or CIDR; absent, null or `*`: any address.
    pub ip_address: Option<String>,
    /// A branch limit; absent or null: only the service's limit.
    #[schema(minimum = 0)]
    pub limit_quota: Option<i64>,
    /// Required only when the partner manages several services.
    pub service_id: Option<String>,
}

/// `PATCH /b2b/branches/{branchId}`: any of the fields.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerBranchPatch {
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
    pub is_active: Option<bool>,
    /// One address or CIDR; null or `*`: any address.
    pub ip_address: Option<String>,
}

/// `POST /b2b/bank-accounts`: an account for one of the partner's branches.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerNewBankAccount {
    /// The branch the account receives for (UUID).
    pub branch_id: String,
    #[serde(flatten)]
    pub account: NewBankAccount,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AdjustQuota {
    /// A non-zero whole number added to the branch limit.
    pub amount: i64,
}

// ---- reading the verification requests -----------------------------------------------------

/// A slip request as read (v1's too), its Base64 image not yet decoded.
pub(crate) struct SlipRequest {
    pub input: Option<SlipText>,
    pub options: SlipOptions,
}

/// The one input of a slip request.
pub(crate) enum SlipText {
    Payload(String),
    Url(String),
    Base64(String),
    Image(Vec<u8>),
}

impl SlipRequest {
    /// The request with its Base64 image decoded (too large or not Base64 fails here, after
    /// the field checks, with its own code).
    pub(crate) fn decoded(self) -> Result<Submitted, Error> {
        let base64 = matches!(self.input, Some(SlipText::Base64(_)));
        let input = match self.input {
            Some(SlipText::Payload(p)) => SlipInput::Payload(p),
            Some(SlipText::Url(u)) => SlipInput::Url(u),
            Some(SlipText::Base64(b)) => SlipInput::Image(decode_base64(&b)?),
            Some(SlipText::Image(bytes)) => SlipInput::Image(bytes),
            None => return Err(Error::invalid("payload", "is required")),
        };
        Ok(Submitted {
            input,
            options: self.options,
            base64,
        })
    }
}

/// The ways a slip arrives in a JSON body; `image` (an upload) is named to be refused.
const JSON_INPUTS: [&str; 4] = ["payload", "image", "base64", "url"];

/// `VerifyBody`'s fields and `callbackUrl` (which the synchronous endpoint reads and ignores).
impl Request for AsyncRequest {
    type Parsed = SlipRequest;

    fn read(f: &mut Fields<'_>) -> SlipRequest {
        let inputs: Vec<&str> = JSON_INPUTS.into_iter().filter(|n| f.present(n)).collect();
        if inputs.len() > 1 {
            f.v.fail(
                "payload",
                "send exactly one of payload, image, base64 or url",
            );
        }
        if inputs.is_empty() {
            f.v.fail("payload", "is required");
        }
        if inputs.contains(&"image") {
            f.v.fail(
                "image",
                "upload the file as multipart/form-data, or send it as base64",
            );
        }
        let payload = f.text("payload");
        let url = f.text("url");
        let base64 = f.string("base64");
        let options = SlipOptions {
            check_duplicate: f.boolean("checkDuplicate").unwrap_or(false),
            match_amount: f.amount("matchAmount"),
            remark: f.text("remark"),
            callback_url: f.callback_url(),
            match_account: f.boolean("matchAccount").unwrap_or(false),
        };
        let input = match (payload, url, base64) {
            (Some(p), _, _) => Some(SlipText::Payload(p)),
            (_, Some(u), _) => Some(SlipText::Url(u)),
            (_, _, Some(b)) => Some(SlipText::Base64(b)),
            _ => None,
        };
        SlipRequest { input, options }
    }
}

/// A form read as `VerifyForm`: exactly one of the file, `payload`, `base64`, `url`; flags and
/// the amount as text.
pub(crate) fn read_form(mut form: Form) -> Result<SlipRequest, Error> {
    let images = form.files.len();
    let image = form.files.pop();
    let mut f = Fields::of::<VerifyForm>(&form.text);
    let inputs = ["payload", "base64", "url"]
        .iter()
        .filter(|n| f.present(n))
        .count()
        + images;
    if inputs != 1 {
        f.v.fail("image", "send exactly one of payload, image, base64 or url");
    }
    let check_duplicate = f.flag_text("checkDuplicate").unwrap_or(false);
    let match_account = f.flag_text("matchAccount").unwrap_or(false);
    let match_amount = f.amount_text("matchAmount");
    let options = SlipOptions {
        check_duplicate,
        match_account,
        match_amount,
        remark: f.text("remark"),
        callback_url: f.callback_url(),
    };
    let payload = f.text("payload");
    let url = f.text("url");
    f.finish()?;
    let base64 = form.text.get("base64").and_then(Value::as_str);
    let input = match (image, payload, url, base64) {
        (Some(bytes), ..) => Some(SlipText::Image(bytes)),
        (_, Some(p), ..) => Some(SlipText::Payload(p)),
        (_, _, Some(u), _) => Some(SlipText::Url(u)),
        (_, _, _, Some(b)) => Some(SlipText::Base64(b.to_string())),
        _ => return Err(Error::invalid("image", "is required")),
    };
    Ok(SlipRequest { input, options })
}

// ---- reading the bank-account requests ------------------------------------------------------

/// Lengths and presence are checked by the service (its own reasons); here only the JSON types.
impl Request for NewBankAccount {
    type Parsed = services::accounts::NewBankAccount;

    fn read(f: &mut Fields<'_>) -> services::accounts::NewBankAccount {
        services::accounts::NewBankAccount {
            bank_code: f.loose_text("bankCode"),
            bank_number: f.loose_text("bankNumber"),
            name_th: f.loose_text("nameTh"),
            name_en: f.loose_text("nameEn"),
            kind: f.loose_text("type"),
            extra_verify: f.loose_text("extraVerify"),
        }
    }
}

/// The partner API's form: `branchId` names the branch (read by the handler, which needs it
/// before the branch is known); an existing account cannot be linked.
impl Request for PartnerNewBankAccount {
    type Parsed = services::accounts::NewBankAccount;

    fn read(f: &mut Fields<'_>) -> services::accounts::NewBankAccount {
        if f.map.contains_key("bankAccountId") {
            // Accounts belong to one branch here: there is nothing to link (compatibility.md).
            f.v.fail(
                "bankAccountId",
                "accounts belong to one branch: send the account's fields to create it on this branch",
            );
        }
        NewBankAccount::read(f)
    }
}

impl Request for BankAccountUpdate {
    /// The new option; `None` clears it.
    type Parsed = Option<String>;

    fn read(f: &mut Fields<'_>) -> Option<String> {
        if !f.map.contains_key("extraVerify") {
            f.v.fail("extraVerify", "is required (a string, or null to clear it)");
        }
        f.text("extraVerify")
    }
}

// ---- reading the partner API's requests ----------------------------------------------------

/// `limitQuota` is required, and `null` is a value: no branch limit of its own.
impl Request for SetQuota {
    /// The new limit; `None` removes the branch's own.
    type Parsed = Option<i64>;

    fn read(f: &mut Fields<'_>) -> Option<i64> {
        const NAME: &str = "limitQuota";
        match f.map.get(NAME) {
            None => {
                f.v.fail(NAME, "is required");
                None
            }
            Some(Value::Null) => None,
            Some(Value::Number(_)) => {
                let n = f.whole_number(NAME);
                if n.is_some_and(|n| n < 0) {
                    f.v.fail(NAME, "must not be negative");
                }
                n
            }
            Some(_) => {
                f.v.fail(NAME, "must be a whole number or null");
                None
            }
        }
    }
}

impl Request for AdjustQuota {
    /// What is added to the branch's limit (never 0).
    type Parsed = i64;

    fn read(f: &mut Fields<'_>) -> i64 {
        if !f.map.contains_key("amount") {
            f.v.fail("amount", "is required");
        }
        let amount = f.whole_number("amount");
        if amount == Some(0) {
            f.v.fail("amount", "must not be 0");
        }
        amount.unwrap_or(0)
    }
}

impl Request for PartnerNewBranch {
    type Parsed = services::partner_branches::PartnerNewBranch;

    fn read(f: &mut Fields<'_>) -> services::partner_branches::PartnerNewBranch {
        services::partner_branches::PartnerNewBranch {
            // The service checks the name's length with its own reason.
            name: f.loose_text("name"),
            // An address, a service id: the lengths are only a guard.
            ip_address: f.string_within("ipAddress", 1, 64),
            limit_quota: f.whole("limitQuota"),
            service_id: f.string_within("serviceId", 1, 64),
        }
    }
}

impl Request for PartnerBranchPatch {
    type Parsed = services::partner_branches::PartnerBranchPatch;

    fn read(f: &mut Fields<'_>) -> services::partner_branches::PartnerBranchPatch {
        services::partner_branches::PartnerBranchPatch {
            name: f.loose_text("name"),
            is_active: f.boolean("isActive"),
            // Present (even null) sets it: null or `*` is any address.
            ip_address: f
                .map
                .contains_key("ipAddress")
                .then(|| f.string_within("ipAddress", 1, 64)),
        }
    }
}
