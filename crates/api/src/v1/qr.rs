//! `POST /api/v1/qr/generate` (compat.md "v1 payment-QR generation"): a Thai QR Payment that a
//! customer scans to pay the merchant, as its EMVCo text and a PNG. Authenticated and
//! rate-limited like every v1 path, never charged (nothing is verified). The body is read as
//! `V1QrRequest` (its `Request` reader is here, beside the `slip_qr` rules it applies): every
//! problem is listed in `data.errors`, under the first field-specific v1 code.

use super::error::{errors_data, V1Error};
use crate::authed::AuthedV1;
use crate::body::json_object;
use crate::request::{parse, Fields, Request};
use crate::wire::v1::{V1Qr, V1QrRequest};
use crate::wire::{V1ErrorBody, V1Ok};
use axum::Json;
use domain::FieldError;
use serde_json::{Map, Value};
use slip_qr::{GenerateError, PaymentRequest, PaymentTarget};

const TYPES: [&str; 4] = ["PROMPTPAY", "KSHOP", "MAE_MANEE", "TUNGNGERN"];
const PROMPTPAY_TARGETS: [&str; 3] = ["msisdn", "natId", "eWalletId"];

#[utoipa::path(post, path = "/qr/generate", tag = "v1",
    summary = "Make a Thai QR Payment (PromptPay or merchant) as EMVCo text and PNG; not charged",
    request_body(content((V1QrRequest = "application/json"))),
    responses(
        (status = 200, description = "The QR", body = V1Ok<V1Qr>),
        (status = 400, description = "invalid_request, invalid_type, invalid_msisdn, invalid_natId, invalid_ref1", body = V1ErrorBody)))]
pub(super) async fn generate(
    AuthedV1(c): AuthedV1,
    req: axum::extract::Request,
) -> Result<Json<V1Ok<V1Qr>>, V1Error> {
    let mut map = json_object(req.into_body()).await?;
    // A merchant QR without a `billerId` of its own takes the branch's, checked like one sent.
    if let (None | Some(Value::Null), Some(biller)) = (map.get("billerId"), &c.branch.biller_id) {
        map.insert("billerId".into(), Value::String(biller.clone()));
    }
    let request = parse::<V1QrRequest>(&map)??;
    let payload = slip_qr::generate_payment_qr(&request).map_err(|e| {
        // Every field was checked above with the same validators; kept for completeness.
        failure(vec![Problem::from(e)])
    })?;
    let png = png(&payload)?;
    use base64::Engine;
    Ok(V1Ok::json(V1Qr {
        image: base64::engine::general_purpose::STANDARD.encode(png),
        mime: "image/png",
        payload,
    }))
}

/// One failed field: its v1 code, name and reason.
struct Problem {
    code: &'static str,
    field: String,
    message: String,
}

impl From<GenerateError> for Problem {
    fn from(e: GenerateError) -> Self {
        Problem {
            code: e.v1_code(),
            field: e.field().to_string(),
            message: e.to_string(),
        }
    }
}

fn schema(field: &str, message: &str) -> Problem {
    Problem {
        code: "invalid_request",
        field: field.to_string(),
        message: message.to_string(),
    }
}

/// The first field-specific code (`invalid_msisdn`, `invalid_natId`, `invalid_ref1`) if any,
/// else `invalid_request`; `data.errors` lists every problem either way.
fn failure(problems: Vec<Problem>) -> V1Error {
    let code = problems
        .iter()
        .map(|p| p.code)
        .find(|c| *c != "invalid_request")
        .unwrap_or("invalid_request");
    let list: Vec<FieldError> = problems
        .into_iter()
        .map(|p| FieldError::new(p.field, p.message))
        .collect();
    V1Error::code(400, code, Some(errors_data(&list)))
}

/// A field's text: `None` when absent or `null`, `Some(Err(()))` when not a string.
fn text<'a>(map: &'a Map<String, Value>, name: &str) -> Option<Result<&'a str, ()>> {
    match map.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Ok(s.as_str())),
        Some(_) => Some(Err(())),
    }
}

/// A validated field: a value of the wrong JSON type fails like a wrong value.
fn checked<T>(
    value: Result<&str, ()>,
    wrong: GenerateError,
    check: impl FnOnce(&str) -> Result<T, GenerateError>,
    problems: &mut Vec<Problem>,
) -> Option<T> {
    match value.map_err(|_| wrong).and_then(check) {
        Ok(v) => Some(v),
        Err(e) => {
            problems.push(e.into());
            None
        }
    }
}

/// A text field that must be there (`missing` is the problem otherwise), checked by `validate`.
fn required_text(
    value: Option<Result<&str, ()>>,
    missing: Problem,
    wrong: GenerateError,
    validate: fn(&str) -> Result<(), GenerateError>,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match value {
        None => {
            problems.push(missing);
            None
        }
        Some(v) => checked(v, wrong, |s| validate(s).map(|_| s.to_string()), problems),
    }
}

impl Request for V1QrRequest {
    /// The QR to make, or v1's answer to the body.
    type Parsed = Result<PaymentRequest, V1Error>;

    fn read(f: &mut Fields<'_>) -> Self::Parsed {
        payment_request(f.map)
    }
}

fn payment_request(map: &Map<String, Value>) -> Result<PaymentRequest, V1Error> {
    let kind = match map.get("type") {
        None | Some(Value::Null) => return Err(failure(vec![schema("type", "is required")])),
        Some(Value::String(s)) if TYPES.contains(&s.as_str()) => s.as_str(),
        Some(_) => {
            return Err(V1Error::code(
                400,
                "invalid_type",
                Some(errors_data(&[FieldError::new(
                    "type",
                    format!("must be one of {}", TYPES.join(", ")),
                )])),
            ))
        }
    };
    let mut problems = Vec::new();
    let target = if kind == "PROMPTPAY" {
        promptpay_target(map, &mut problems)
    } else {
        biller_target(map, &mut problems)
    };
    let amount_satang = match map.get("amount") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => checked(
            Ok(n.to_string().as_str()),
            GenerateError::InvalidAmount(""),
            slip_qr::parse_amount,
            &mut problems,
        ),
        // Tolerated: amounts as text (`"150.50"`).
        Some(Value::String(s)) => checked(
            Ok(s.trim()),
            GenerateError::InvalidAmount(""),
            slip_qr::parse_amount,
            &mut problems,
        ),
        Some(_) => {
            problems.push(GenerateError::InvalidAmount("must be a number").into());
            None
        }
    };
    let merchant_name = text(map, "merchantName").and_then(|v| {
        checked(
            v,
            GenerateError::InvalidMerchantName,
            |s| slip_qr::validate_merchant_name(s).map(str::to_string),
            &mut problems,
        )
    });
    match target {
        Some(target) if problems.is_empty() => Ok(PaymentRequest {
            target,
            amount_satang,
            merchant_name,
        }),
        _ => Err(failure(problems)),
    }
}

/// Exactly one of `msisdn`, `natId`, `eWalletId`.
fn promptpay_target(
    map: &Map<String, Value>,
    problems: &mut Vec<Problem>,
) -> Option<PaymentTarget> {
    let given: Vec<&str> = PROMPTPAY_TARGETS
        .into_iter()
        .filter(|n| text(map, n).is_some())
        .collect();
    let [name] = given.as_slice() else {
        problems.push(schema(
            given.get(1).copied().unwrap_or("msisdn"),
            "send exactly one of msisdn, natId or eWalletId",
        ));
        return None;
    };
    let value = text(map, name)?;
    match *name {
        "msisdn" => checked(
            value,
            GenerateError::InvalidMsisdn,
            |s| slip_qr::normalize_msisdn(s).map(|_| PaymentTarget::Msisdn(s.to_string())),
            problems,
        ),
        "natId" => checked(
            value,
            GenerateError::InvalidNatId,
            |s| slip_qr::validate_nat_id(s).map(|_| PaymentTarget::NatId(s.to_string())),
            problems,
        ),
        _ => checked(
            value,
            GenerateError::InvalidEWalletId,
            |s| slip_qr::validate_ewallet_id(s).map(|_| PaymentTarget::EWalletId(s.to_string())),
            problems,
        ),
    }
}

/// KSHOP, MAE_MANEE, TUNGNGERN: a bill-payment QR under the merchant's biller id: a
/// `billerId` in the request, or the branch's (`admin branch update --biller-id`), which the
/// handler puts in its place.
fn biller_target(map: &Map<String, Value>, problems: &mut Vec<Problem>) -> Option<PaymentTarget> {
    let ref1 = required_text(
        text(map, "ref1"),
        schema("ref1", "is required"),
        GenerateError::InvalidRef1,
        slip_qr::validate_ref1,
        problems,
    );
    let ref2 = text(map, "ref2").and_then(|v| {
        checked(
            v,
            GenerateError::InvalidRef2,
            |s| slip_qr::validate_ref2(s).map(|_| s.to_string()),
            problems,
        )
    });
    let ref2_ok = text(map, "ref2").is_none() || ref2.is_some();
    let biller_id = required_text(
        text(map, "billerId"),
        schema("type", "this branch has no biller id configured"),
        GenerateError::InvalidBillerId,
        slip_qr::validate_biller_id,
        problems,
    );
    match (biller_id, ref1) {
        (Some(biller_id), Some(ref1)) if ref2_ok => Some(PaymentTarget::Biller {
            biller_id,
            ref1,
            ref2,
        }),
        _ => None,
    }
}

/// Pixels per module and modules of quiet zone around the code.
const SCALE: u32 = 8;
const QUIET: u32 = 4;

/// The payload as a black-on-white PNG (error correction M).
fn png(payload: &str) -> Result<Vec<u8>, V1Error> {
    use qrcode::{Color, EcLevel, QrCode};
    let code = QrCode::with_error_correction_level(payload.as_bytes(), EcLevel::M)
        .map_err(|e| domain::Error::internal(e))?;
    let w = code.width() as u32;
    let side = (w + 2 * QUIET) * SCALE;
    let mut img = image::GrayImage::from_pixel(side, side, image::Luma([255]));
    for (i, c) in code.to_colors().iter().enumerate() {
        if *c == Color::Dark {
            let (x0, y0) = (
                (i as u32 % w + QUIET) * SCALE,
                (i as u32 / w + QUIET) * SCALE,
            );
            for y in y0..y0 + SCALE {
                for x in x0..x0 + SCALE {
                    img.put_pixel(x, y, image::Luma([0]));
                }
            }
        }
    }
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png)
        .map_err(|e| domain::Error::internal(e))?;
    Ok(out.into_inner())
}
