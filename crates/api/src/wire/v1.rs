//! `/api/v1`: the older interface's request and answer bodies.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::v2::{SlipRequest, SlipText};
use crate::form::Form;
use crate::request::{Fields, Request};
use crate::submitted::SlipOptions;
use crate::v1::error::V1Error;

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

// ---- reading the verification requests ----------------------------------------------------
//
// v1 answers the first failure only, in the order below; two fields have their own codes
// (`invalid_check_duplicate`, `invalid_url` for a URL of the wrong length), returned as `Err`
// where they arise: a failure noted before them is still answered first.

/// A v1 slip request as read: the input (Base64 not yet decoded) or v1's own refusal.
pub(crate) type V1Read = Result<SlipRequest, V1Error>;

/// The names a slip may arrive under; `data` and `image` both carry Base64 (older clients
/// send `image`).
const TEXT_INPUTS: [&str; 4] = ["payload", "url", "data", "image"];

pub(crate) const EXACTLY_ONE: &str =
    "send exactly one of payload, url, data (Base64) or a multipart file";

/// `checkDuplicate`: a boolean, or the text `true`/`false` (query strings, forms, and clients
/// that send text in JSON); absent or null is `false`.
fn check_duplicate(f: &Fields<'_>) -> Result<bool, V1Error> {
    match f.map.get("checkDuplicate") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" => Ok(true),
        Some(Value::String(s)) if s == "false" => Ok(false),
        Some(_) => Err(V1Error::code(400, "invalid_check_duplicate", None)),
    }
}

/// The one text input `name`: the payload, an image URL, or Base64 (`data`, `image`).
fn text_input(f: &mut Fields<'_>, name: &str) -> Result<Option<SlipText>, V1Error> {
    Ok(match name {
        "payload" => f.text(name).map(SlipText::Payload),
        "url" => match f.sized_text(name) {
            Some(Err(_)) => return Err(V1Error::code(400, "invalid_url", None)),
            sized => sized.and_then(Result::ok).map(SlipText::Url),
        },
        _ => f.string(name).map(SlipText::Base64),
    })
}

fn slip(input: Option<SlipText>, check_duplicate: bool) -> SlipRequest {
    SlipRequest {
        input,
        options: SlipOptions {
            check_duplicate,
            ..SlipOptions::default()
        },
    }
}

/// The JSON body: exactly one input, `checkDuplicate`, then the input itself.
impl Request for V1VerifyRequest {
    type Parsed = V1Read;
    const FIRST_FAILURE_ONLY: bool = true;

    fn read(f: &mut Fields<'_>) -> V1Read {
        let inputs: Vec<&str> = TEXT_INPUTS.into_iter().filter(|n| f.present(n)).collect();
        match inputs.as_slice() {
            [] => f.v.fail("payload", EXACTLY_ONE),
            [_] => {}
            [_, second, ..] => f.v.fail(*second, EXACTLY_ONE),
        }
        let check_duplicate = check_duplicate(f)?;
        let input = match inputs.as_slice() {
            [one] => text_input(f, one)?,
            _ => None,
        };
        Ok(slip(input, check_duplicate))
    }
}

/// `GET /api/v1/verify`'s query (each name's first value): `checkDuplicate`, then `payload`,
/// read as the JSON body's field of that name.
pub(crate) fn read_query(pairs: Vec<(String, String)>) -> Result<V1Read, domain::Error> {
    let mut map = serde_json::Map::new();
    for (name, value) in pairs {
        map.entry(name).or_insert(Value::String(value));
    }
    first_failure::<V1VerifyRequest>(&map, |f| {
        let check_duplicate = check_duplicate(f)?;
        f.require(&["payload"]);
        let input = f.text("payload").map(SlipText::Payload);
        Ok(slip(input, check_duplicate))
    })
}

/// A form read as `V1VerifyForm`: `checkDuplicate`, then exactly one of the file and the text
/// inputs, then that input.
pub(crate) fn read_form(mut form: Form) -> Result<V1Read, domain::Error> {
    let file = form.files.pop();
    first_failure::<V1VerifyForm>(&form.text, |f| {
        let check_duplicate = check_duplicate(f)?;
        let texts: Vec<&str> = TEXT_INPUTS.into_iter().filter(|n| f.present(n)).collect();
        let input = match (file, texts.as_slice()) {
            (Some(bytes), []) => Some(SlipText::Image(bytes)),
            (None, [one]) => text_input(f, one)?,
            _ => {
                f.v.fail("file", EXACTLY_ONE);
                None
            }
        };
        Ok(slip(input, check_duplicate))
    })
}

/// `read` over `map`'s fields as `T` documents them, answering only the first failure (what
/// `request::parse` does for a `Request` type, here for the query and the form).
fn first_failure<T: ToSchema>(
    map: &serde_json::Map<String, Value>,
    read: impl FnOnce(&mut Fields<'_>) -> V1Read,
) -> Result<V1Read, domain::Error> {
    let mut f = Fields::of::<T>(map);
    f.first_only = true;
    let read = read(&mut f);
    f.finish()?;
    Ok(read)
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
    #[schema(pattern = "^0[0-9]{9}$")]
    pub msisdn: Option<String>,
    /// 13 digits with a valid check digit.
    #[schema(pattern = "^[0-9]{13}$")]
    pub nat_id: Option<String>,
    #[schema(pattern = "^[0-9]{15}$")]
    pub e_wallet_id: Option<String>,
    /// Merchant types: 1–20 upper-case letters or digits.
    #[schema(pattern = "^[A-Z0-9]{1,20}$")]
    pub ref1: Option<String>,
    #[schema(pattern = "^[A-Z0-9]{1,20}$")]
    pub ref2: Option<String>,
    /// Merchant types: 15 digits (the branch's when absent).
    #[schema(pattern = "^[0-9]{15}$")]
    pub biller_id: Option<String>,
    /// > 0, ≤ 9,999,999.99, at most 2 decimals (number or text).
    #[schema(exclusive_minimum = 0, maximum = 9999999.99)]
    pub amount: Option<f64>,
    /// 1–25 printable ASCII characters.
    #[schema(
        min_length = 1,
        max_length = 25,
        pattern = "^[!-~]([ -~]{0,23}[!-~])?$"
    )]
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
