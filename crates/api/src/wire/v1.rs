//! `/api/v1`: the older interface's request and answer bodies.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Exactly one of `payload`, `url`, `data` (Base64) or `image` (Base64, older clients).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct V1VerifyRequest {
    /// The QR text, 1–128 characters after trimming.
    #[schema(min_length = 1, max_length = 128)]
    pub payload: Option<String>,
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    pub data: Option<String>,
    pub image: Option<String>,
    /// A boolean, or the text `true`/`false`.
    pub check_duplicate: Option<bool>,
}

/// The file in `file`, or one of `payload`, `url`, `data` as text; `checkDuplicate` as text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct V1VerifyForm {
    #[schema(value_type = Option<String>, format = Binary)]
    pub file: Option<Vec<u8>>,
    #[schema(min_length = 1, max_length = 128)]
    pub payload: Option<String>,
    #[schema(min_length = 1, max_length = 2048)]
    pub url: Option<String>,
    pub data: Option<String>,
    #[schema(value_type = Option<super::v2::FormFlag>)]
    pub check_duplicate: Option<String>,
}

/// The application (service) and its quota in the current billing cycle.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct V1Me {
    /// The service's name.
    pub application: String,
    pub used_quota: i64,
    pub max_quota: Option<i64>,
    pub remaining_quota: Option<i64>,
    /// ISO 8601 `+07:00`, or null.
    pub expired_at: Option<String>,
    /// The service's prepaid credit in baht.
    pub current_credit: f64,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum QrType {
    Promptpay,
    Kshop,
    #[serde(rename = "MAE_MANEE")]
    MaeManee,
    Tungngern,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct V1QrRequest {
    #[serde(rename = "type")]
    pub kind: QrType,
    /// PROMPTPAY: exactly one of `msisdn`, `natId`, `eWalletId`. `msisdn`: 10 digits starting with 0.
    pub msisdn: Option<String>,
    /// 13 digits with a valid check digit.
    pub nat_id: Option<String>,
    pub e_wallet_id: Option<String>,
    /// Merchant types: 1–20 upper-case letters or digits.
    pub ref1: Option<String>,
    pub ref2: Option<String>,
    /// Merchant types: 15 digits (the branch's when absent).
    pub biller_id: Option<String>,
    /// > 0, ≤ 9,999,999.99, at most 2 decimals (number or text).
    #[schema(exclusive_minimum = 0, maximum = 9999999.99)]
    pub amount: Option<f64>,
    /// 1–25 printable ASCII characters.
    #[schema(min_length = 1, max_length = 25)]
    pub merchant_name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct V1Qr {
    /// Base64 PNG (no `data:` prefix).
    pub image: String,
    /// `image/png`.
    pub mime: &'static str,
    /// The EMVCo text.
    pub payload: String,
}
