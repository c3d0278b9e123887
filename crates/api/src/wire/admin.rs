//! `/admin`: the operator's views (shared with the CLI through `views.rs`) and request bodies.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::request::{Fields, Request};
use domain::billing::{AutoRenew, CreditKind};
use domain::line::{GroupMode, Lang, LinePatch};
use domain::model::ServiceState;
use domain::{Satang, UserId};
use services::admin::{BranchUpdate, ServiceUpdate};
use services::subscriptions::NewPackage;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// When the package renews by itself (drawing its price from the credit). In a request,
/// a trigger left out is false and no other field is allowed.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoRenewView {
    /// At the expiry.
    pub on_expiry: bool,
    /// When the service's quota of the cycle is used up.
    pub on_quota: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceView {
    pub id: String,
    pub name: String,
    /// `active`, `banned` or `deleted`.
    pub state: &'static str,
    pub limit_quota: Option<i64>,
    pub expires_at: Option<String>,
    pub owner_id: Option<String>,
    pub billing_anchor: String,
    pub plan: String,
    pub rate_limit: u32,
    pub owner_verified: bool,
    /// The subscribed package's id, or null.
    pub package: Option<String>,
    /// Start of the current period (subscription or last renewal), or null.
    pub subscribed_at: Option<String>,
    pub auto_renew: AutoRenewView,
    /// Prepaid credit in baht.
    pub credit: f64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageView {
    pub id: String,
    pub name: String,
    pub quota: i64,
    pub duration_days: u32,
    /// Baht.
    pub price: f64,
}

/// One credit movement; `amount` is signed (negative draws).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntryView {
    pub id: String,
    pub at: String,
    /// `topup`, `renewal` or `adjustment`.
    pub kind: &'static str,
    /// Baht; negative draws.
    pub amount: f64,
    /// Baht.
    pub balance_after: f64,
    /// `cli`, `admin-api`, `renewal`...
    pub actor: String,
    pub note: Option<String>,
}

/// A service's balance and every movement, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreditHistory {
    /// Baht.
    pub balance: f64,
    pub entries: Vec<LedgerEntryView>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchView {
    pub id: String,
    pub service_id: String,
    pub name: String,
    pub is_main: bool,
    pub active: bool,
    pub allow_ips: Vec<String>,
    pub webhook_url: Option<String>,
    pub has_webhook_secret: bool,
    pub biller_id: Option<String>,
    pub limit_quota: Option<i64>,
    /// A test branch: sandbox ledger, never charged, duplicates apart.
    pub sandbox: bool,
    /// Only when the branch is created (shown once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The branch's LINE slip bot, in the answer to a change, when it has settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<LineView>,
}

/// A branch's LINE Official Account; the secret and the token only as set / not set.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineView {
    pub has_channel_secret: bool,
    pub has_channel_token: bool,
    pub notify_to: Option<String>,
    /// `th` or `en`.
    pub language: &'static str,
    /// `silent` (only problems in groups) or `verbose`.
    pub group_mode: &'static str,
    pub push: bool,
    pub push_daily_limit: u32,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserView {
    pub id: String,
    pub name: String,
    pub banned: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PlanView {
    pub name: String,
    pub rps: u32,
    pub burst: u32,
}

/// A new partner: the key and secret are shown only here.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartnerView {
    pub id: String,
    pub name: String,
    pub api_key: String,
    pub secret: String,
    /// `quota:read`, `quota:write`, `branch:read`, `branch:write`, `bank-account:read`,
    /// `bank-account:write`.
    pub permissions: Vec<&'static str>,
    pub services: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub at: String,
    /// `partner:<id>`, `cli`, `admin-api`...
    pub actor: String,
    /// `quota.set`, `subscription.start`, ...
    pub action: String,
    pub service_id: Option<String>,
    pub branch_id: Option<String>,
    /// `{before, after}`.
    #[schema(value_type = Object)]
    pub detail: Value,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotatedKey {
    pub id: String,
    pub api_key: String,
}

/// One connector as this node sees it (counts since it started).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorView {
    pub name: String,
    /// `sandbox`, `easyslip`, ...
    pub kind: String,
    /// `closed` (in use), `open` (skipped after consecutive failures), `half-open` (one probe).
    #[schema(value_type = String)]
    pub state: connectors::BreakerState,
    /// Cause and detail of the last failure; never a secret or a URL.
    pub last_error: Option<String>,
    pub calls: u64,
    pub failures: u64,
    pub median_latency_ms: Option<u64>,
}

impl From<connectors::ConnectorStatus> for ConnectorView {
    fn from(c: connectors::ConnectorStatus) -> Self {
        ConnectorView {
            name: c.name,
            kind: c.kind,
            state: c.state,
            last_error: c.last_error,
            calls: c.calls,
            failures: c.failures,
            median_latency_ms: c.median_latency_ms,
        }
    }
}

// ---- requests -------------------------------------------------------------------------------
// Strings are trimmed before their lengths are checked.

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewService {
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// Quota per billing cycle; absent: 1000 (`services::admin::DEFAULT_SERVICE_QUOTA`).
    #[schema(minimum = 0)]
    pub quota: Option<i64>,
}

/// Every field optional; null clears `quota`, `expiresAt`, `ownerId`, `rateLimit`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceChange {
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
    #[schema(minimum = 0)]
    pub quota: Option<i64>,
    /// RFC 3339.
    #[schema(min_length = 1, max_length = 64, format = DateTime)]
    pub expires_at: Option<String>,
    pub state: Option<ServiceStateName>,
    #[schema(min_length = 1, max_length = 64)]
    pub owner_id: Option<String>,
    #[schema(min_length = 1, max_length = 100)]
    pub plan: Option<String>,
    #[schema(minimum = 1, maximum = 4294967295_i64)]
    pub rate_limit: Option<u32>,
    /// false: every verification is refused with `ACCOUNT_NOT_VERIFIED`.
    pub owner_verified: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ServiceStateName {
    Active,
    Banned,
    Deleted,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewBranch {
    #[schema(min_length = 1, max_length = 64)]
    pub service_id: String,
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    pub main: Option<bool>,
    /// Absent: `*`; an empty list is refused.
    #[schema(min_items = 1)]
    pub allow_ips: Option<Vec<String>>,
    #[schema(minimum = 0)]
    pub limit_quota: Option<i64>,
    /// A test branch: sandbox ledger, never charged, duplicates apart (default false).
    pub sandbox: Option<bool>,
}

/// Every field optional; null clears `webhookUrl`, `webhookSecret`, `billerId`, `limitQuota`,
/// `lineChannelSecret`, `lineChannelToken`, `lineNotifyTo`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchChange {
    #[schema(min_length = 1, max_length = 100)]
    pub name: Option<String>,
    pub active: Option<bool>,
    pub allow_ips: Option<Vec<String>>,
    #[schema(
        min_length = 1,
        max_length = 2048,
        pattern = "^https?://[a-z0-9]+(\\.[a-z0-9]+)*(:[1-9][0-9]{0,3})?(/[A-Za-z0-9._~-]*)*$"
    )]
    pub webhook_url: Option<String>,
    #[schema(min_length = 1, max_length = 256)]
    pub webhook_secret: Option<String>,
    /// The merchant biller id for v1 merchant QRs (15 digits).
    #[schema(min_length = 1, max_length = 32, pattern = "^[0-9]{15}$")]
    pub biller_id: Option<String>,
    #[schema(minimum = 0)]
    pub limit_quota: Option<i64>,
    /// Make it a test branch (`true`) or a production one (`false`).
    pub sandbox: Option<bool>,
    /// The LINE channel secret (checks `X-Line-Signature`; printable ASCII, as LINE issues it);
    /// `null` clears it.
    #[schema(min_length = 1, max_length = 256, pattern = "^[!-~]+$")]
    pub line_channel_secret: Option<String>,
    /// The LINE channel access token (downloads, replies, pushes; printable ASCII); `null`
    /// clears it.
    #[schema(min_length = 1, max_length = 1024, pattern = "^[!-~]+$")]
    pub line_channel_token: Option<String>,
    /// A LINE user, group or room id (`U`, `C` or `R` and 32 hex digits) for staff notices
    /// and each verified payment; `null` clears it.
    #[schema(min_length = 1, max_length = 64, pattern = "^[UCR][0-9a-fA-F]{32}$")]
    pub line_notify_to: Option<String>,
    /// `th` (default) or `en`.
    #[schema(value_type = Option<LineLanguage>)]
    pub line_language: Option<String>,
    /// `silent` (default: in groups, speak only on problems) or `verbose`.
    #[schema(value_type = Option<LineGroupMode>)]
    pub line_group_mode: Option<String>,
    /// Allow push messages (they cost money); off by default.
    pub line_push: Option<bool>,
    /// Pushes per branch per Thai day (default 50).
    #[schema(minimum = 0, maximum = 10000)]
    pub line_push_daily_limit: Option<i64>,
}

/// The language of a branch's LINE replies (`domain::line::Lang`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LineLanguage {
    Th,
    En,
}

/// How the LINE bot speaks in groups (`domain::line::GroupMode`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum LineGroupMode {
    Silent,
    Verbose,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RotateKey {
    /// The old key keeps working this long (at most 7 days); absent: it stops at once.
    #[schema(minimum = 0)]
    pub grace_seconds: Option<i64>,
}

/// `POST /admin/jobs/{id}/redeliver`: no fields (an empty body or `{}`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeliverRequest {}

/// A queued redelivery: the job's callback will be POSTed again (same `jobId`, same body,
/// signed with the branch's current secret), with the usual retries.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedeliveryView {
    /// The job whose callback is sent again (the callback's `jobId`).
    pub job_id: String,
    /// The redelivery's own job (kind `redeliver`).
    pub redelivery_id: String,
    /// `queued`.
    pub status: &'static str,
    /// Where it goes: the job's callback target.
    pub callback_url: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewUser {
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct UserChange {
    pub banned: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewPartner {
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    #[schema(min_items = 1)]
    pub service_ids: Vec<String>,
    #[schema(min_items = 1, value_type = Vec<PartnerPermission>)]
    pub permissions: Vec<String>,
}

/// What a partner may do.
#[derive(Debug, Deserialize, ToSchema)]
pub enum PartnerPermission {
    #[serde(rename = "quota:read")]
    QuotaRead,
    #[serde(rename = "quota:write")]
    QuotaWrite,
    #[serde(rename = "branch:read")]
    BranchRead,
    #[serde(rename = "branch:write")]
    BranchWrite,
    #[serde(rename = "bank-account:read")]
    BankAccountRead,
    #[serde(rename = "bank-account:write")]
    BankAccountWrite,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PlanChange {
    #[schema(minimum = 1, maximum = 4294967295_i64)]
    pub rps: u32,
    /// Defaults to half the rate.
    #[schema(minimum = 1, maximum = 4294967295_i64)]
    pub burst: Option<u32>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PackageChange {
    /// Verifications per billing cycle.
    #[schema(minimum = 1)]
    pub quota: i64,
    #[schema(minimum = 1, maximum = 3650)]
    pub duration_days: u32,
    /// Baht, at most 2 decimals (e.g. 990.00).
    #[schema(minimum = 0)]
    pub price: f64,
}

/// `true` / `false` sets both triggers; an object sets each (absent: false).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum AutoRenewSetting {
    Both(bool),
    Each(AutoRenewView),
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeRequest {
    /// Package id or name.
    #[schema(min_length = 1, max_length = 100)]
    pub package: String,
    /// Absent: the current setting stays.
    pub auto_renew: Option<AutoRenewSetting>,
    /// Draw the price from the service's credit (refused when short). Default false.
    pub pay_from_credit: Option<bool>,
}

/// At least one field; a trigger not given keeps its current value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoRenewChange {
    /// Both triggers at once.
    pub enabled: Option<bool>,
    pub on_expiry: Option<bool>,
    pub on_quota: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CreditKindName {
    Topup,
    Adjustment,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct CreditMove {
    /// Baht, at most 2 decimals; positive for `topup`, either sign for `adjustment`.
    pub amount: f64,
    /// `topup` (default) or `adjustment`.
    pub kind: Option<CreditKindName>,
    #[schema(min_length = 1, max_length = 255)]
    pub note: Option<String>,
}

/// One record of the attempts log (`GET /admin/verifications`). No image, key or name.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationView {
    /// When the request arrived (Asia/Bangkok).
    pub at: String,
    pub service_id: String,
    pub branch_id: String,
    /// `v2`, `v1` or `async`.
    pub channel: &'static str,
    /// `bank` or `truewallet`.
    pub kind: &'static str,
    /// `payload`, `image`, `base64` or `url`; null when the request failed before it was read.
    pub input: Option<&'static str>,
    pub sending_bank: Option<String>,
    pub trans_ref: Option<String>,
    /// Baht: the transfer's amount when known, else the `matchAmount` asked.
    pub amount: Option<f64>,
    /// `verified`, `duplicate`, `not_found`, `pending`, `no_qr`, `invalid_qr`, `refused`,
    /// `unavailable` or `error`.
    pub outcome: &'static str,
    /// The code the answer carried (v1 answers: v1's spelling).
    pub error_code: Option<String>,
    pub mismatches: Vec<String>,
    /// Who answered: a connector's name, `local` (a stored verification) or `sandbox`.
    pub source: Option<String>,
    pub latency_ms: u32,
    pub request_id: Option<String>,
    pub job_id: Option<String>,
}

/// A page of the attempts log, newest first; `next` continues it (`cursor=`), null at the end.
#[derive(Debug, Serialize, ToSchema)]
pub struct VerificationPage {
    pub items: Vec<VerificationView>,
    pub next: Option<String>,
}

// ---- reading the requests (each type's fields in the order their failures are reported) -----

impl Request for NewService {
    type Parsed = Self;

    fn read(f: &mut Fields<'_>) -> Self {
        let name = f.text("name");
        f.require(&["name"]);
        NewService {
            name: name.unwrap_or_default(),
            quota: f.whole("quota"),
        }
    }
}

/// An RFC 3339 instant.
fn instant(f: &mut Fields<'_>, name: &str) -> Option<OffsetDateTime> {
    let s = f.text(name)?;
    match OffsetDateTime::parse(&s, &Rfc3339) {
        Ok(t) => Some(t),
        Err(_) => {
            f.v.fail(
                name,
                "must be an RFC 3339 time such as 2027-01-01T00:00:00+07:00",
            );
            None
        }
    }
}

/// A whole number that fits `u32` (a larger one reads as absent).
fn whole_u32(f: &mut Fields<'_>, name: &str) -> Option<u32> {
    f.whole(name).and_then(|n| u32::try_from(n).ok())
}

impl Request for ServiceChange {
    type Parsed = ServiceUpdate;

    fn read(f: &mut Fields<'_>) -> ServiceUpdate {
        let name = f.text("name");
        let limit_quota = f.tri("quota", Fields::whole);
        let expires_at = f.tri("expiresAt", instant);
        // The document names the states (an enum): the length is only a guard.
        let state = f.string_within("state", 1, 16).and_then(|s| {
            let st = ServiceState::parse(&s);
            if st.is_none() {
                f.v.fail("state", "must be active, banned or deleted");
            }
            st
        });
        let owner_id = f.tri("ownerId", Fields::text);
        let plan = f.text("plan");
        let rate_limit_rps = f.tri("rateLimit", whole_u32);
        ServiceUpdate {
            name,
            limit_quota,
            state,
            expires_at,
            // The service layer takes "" as "no owner".
            owner_id: owner_id.map(|o| UserId::from(o.unwrap_or_default())),
            plan,
            rate_limit_rps,
            owner_verified: f.boolean("ownerVerified"),
        }
    }
}

impl Request for NewBranch {
    type Parsed = services::admin::NewBranch;

    fn read(f: &mut Fields<'_>) -> services::admin::NewBranch {
        f.require(&["serviceId", "name"]);
        services::admin::NewBranch {
            service_id: f.text("serviceId").unwrap_or_default().into(),
            name: f.text("name").unwrap_or_default(),
            is_main: f.boolean("main").unwrap_or(false),
            allow_ips: match f.strings("allowIps") {
                // Absent means `*`; an explicit empty list is refused, as in a PATCH.
                Some(l) if l.is_empty() => {
                    f.v.fail("allowIps", services::admin::EMPTY_ALLOW_LIST);
                    l
                }
                l => l.unwrap_or_default(),
            },
            limit_quota: f.whole("limitQuota"),
            sandbox: f.boolean("sandbox").unwrap_or(false),
        }
    }
}

/// A text a PATCH may clear: `null` → `Some("")`, which the service takes as "clear".
fn clearable(f: &mut Fields<'_>, name: &str) -> Option<String> {
    f.tri(name, Fields::text).map(Option::unwrap_or_default)
}

impl Request for BranchChange {
    type Parsed = BranchUpdate;

    fn read(f: &mut Fields<'_>) -> BranchUpdate {
        BranchUpdate {
            name: f.text("name"),
            active: f.boolean("active"),
            allow_ips: f.strings("allowIps"),
            webhook_url: clearable(f, "webhookUrl"),
            webhook_secret: clearable(f, "webhookSecret"),
            limit_quota: f.tri("limitQuota", Fields::whole),
            biller_id: clearable(f, "billerId"),
            sandbox: f.boolean("sandbox"),
            line: line_patch(f),
        }
    }
}

/// The LINE fields of a branch change (`null` clears a text).
fn line_patch(f: &mut Fields<'_>) -> LinePatch {
    let channel_secret = clearable(f, "lineChannelSecret");
    let channel_token = clearable(f, "lineChannelToken");
    let notify_to = clearable(f, "lineNotifyTo");
    // Named values (`th`, `en`; `silent`, `verbose`): the lengths are only a guard.
    let language = f.string_within("lineLanguage", 1, 8).and_then(|l| {
        let parsed = Lang::parse(&l);
        if parsed.is_none() {
            f.v.fail("lineLanguage", "must be th or en");
        }
        parsed
    });
    let group_mode = f.string_within("lineGroupMode", 1, 16).and_then(|m| {
        let parsed = GroupMode::parse(&m);
        if parsed.is_none() {
            f.v.fail("lineGroupMode", "must be silent or verbose");
        }
        parsed
    });
    LinePatch {
        channel_secret,
        channel_token,
        notify_to,
        language,
        group_mode,
        push: f.boolean("linePush"),
        push_daily_limit: f
            .whole("linePushDailyLimit")
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
    }
}

impl Request for RotateKey {
    /// The grace period of the old key.
    type Parsed = Option<time::Duration>;

    fn read(f: &mut Fields<'_>) -> Option<time::Duration> {
        f.whole("graceSeconds").map(time::Duration::seconds)
    }
}

impl Request for NewUser {
    type Parsed = Self;

    fn read(f: &mut Fields<'_>) -> Self {
        f.require(&["name"]);
        NewUser {
            name: f.text("name").unwrap_or_default(),
        }
    }
}

impl Request for UserChange {
    type Parsed = Self;

    fn read(f: &mut Fields<'_>) -> Self {
        let banned = f.boolean("banned");
        if banned.is_none() && !f.present("banned") {
            f.v.fail("banned", "is required");
        }
        UserChange {
            banned: banned.unwrap_or(false),
        }
    }
}

impl Request for NewPartner {
    type Parsed = Self;

    fn read(f: &mut Fields<'_>) -> Self {
        NewPartner {
            name: f.text("name").unwrap_or_default(),
            service_ids: f.strings("serviceIds").unwrap_or_default(),
            permissions: f.strings("permissions").unwrap_or_default(),
        }
    }
}

impl Request for PlanChange {
    type Parsed = Self;

    fn read(f: &mut Fields<'_>) -> Self {
        f.require(&["rps"]);
        let rps = whole_u32(f, "rps");
        PlanChange {
            rps: rps.unwrap_or(1),
            burst: whole_u32(f, "burst"),
        }
    }
}

impl Request for PackageChange {
    /// The package's terms; its name comes from the path.
    type Parsed = NewPackage;

    fn read(f: &mut Fields<'_>) -> NewPackage {
        f.require(&["quota", "durationDays", "price"]);
        let quota = f.whole("quota");
        let duration_days = f
            .whole("durationDays")
            .and_then(|n| match u32::try_from(n) {
                Ok(d) => Some(d),
                Err(_) => {
                    f.v.fail("durationDays", "is too large");
                    None
                }
            });
        NewPackage {
            name: String::new(),
            quota: quota.unwrap_or_default(),
            duration_days: duration_days.unwrap_or_default(),
            price: f.amount("price").unwrap_or_default(),
        }
    }
}

/// A subscription as asked.
pub(crate) struct Subscription {
    pub package: String,
    /// `None`: the current setting stays.
    pub auto_renew: Option<AutoRenew>,
    pub pay_from_credit: bool,
}

impl Request for SubscribeRequest {
    type Parsed = Subscription;

    fn read(f: &mut Fields<'_>) -> Subscription {
        f.require(&["package"]);
        let package = f.text("package").unwrap_or_default();
        Subscription {
            package,
            auto_renew: auto_renew_setting(f, "autoRenew"),
            pay_from_credit: f.boolean("payFromCredit").unwrap_or(false),
        }
    }
}

/// `true`/`false` (both triggers) or `{onExpiry, onQuota}` (each a boolean, absent false).
fn auto_renew_setting(f: &mut Fields<'_>, name: &str) -> Option<AutoRenew> {
    let shape = "must be a boolean or an object {onExpiry, onQuota}";
    let map = f.map;
    match map.get(name).filter(|v| !v.is_null())? {
        Value::Bool(b) => Some(AutoRenew {
            on_expiry: *b,
            on_quota: *b,
        }),
        Value::Object(o) => {
            let mut flag = |key: &str| match o.get(key) {
                None | Some(Value::Null) => Some(false),
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => {
                    f.v.fail(format!("{name}.{key}"), "must be a boolean");
                    None
                }
            };
            let (on_expiry, on_quota) = (flag("onExpiry"), flag("onQuota"));
            if let Some(k) = o.keys().find(|k| *k != "onExpiry" && *k != "onQuota") {
                f.v.fail(name, format!("unknown field {k}; {shape}"));
                return None;
            }
            Some(AutoRenew {
                on_expiry: on_expiry?,
                on_quota: on_quota?,
            })
        }
        _ => {
            f.v.fail(name, shape);
            None
        }
    }
}

impl Request for AutoRenewChange {
    type Parsed = Self;

    fn read(f: &mut Fields<'_>) -> Self {
        let change = AutoRenewChange {
            enabled: f.boolean("enabled"),
            on_expiry: f.boolean("onExpiry"),
            on_quota: f.boolean("onQuota"),
        };
        if !["enabled", "onExpiry", "onQuota"]
            .iter()
            .any(|n| f.present(n))
        {
            f.v.fail("onExpiry", "is required (or onQuota, or enabled)");
        }
        change
    }
}

/// A credit movement as asked.
pub(crate) struct Credit {
    pub amount: Satang,
    pub kind: CreditKind,
    pub note: Option<String>,
}

impl Request for CreditMove {
    type Parsed = Credit;

    fn read(f: &mut Fields<'_>) -> Credit {
        f.require(&["amount"]);
        let amount = f.signed_amount("amount");
        // The document names the kinds (an enum): the length is only a guard.
        let kind = match f.string_within("kind", 1, 16).as_deref() {
            None | Some("topup") => Some(CreditKind::TopUp),
            Some("adjustment") => Some(CreditKind::Adjustment),
            Some(_) => {
                f.v.fail("kind", "must be topup or adjustment");
                None
            }
        };
        Credit {
            amount: amount.unwrap_or_default(),
            kind: kind.unwrap_or(CreditKind::TopUp),
            note: f.text("note"),
        }
    }
}

impl Request for RedeliverRequest {
    type Parsed = ();

    fn read(f: &mut Fields<'_>) {
        if let Some(field) = f.map.keys().next() {
            f.v.fail(field.as_str(), "unknown field: send an empty body or {}");
        }
    }
}
