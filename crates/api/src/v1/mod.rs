//! `/api/v1`: the older interface (spec 7.3, compat.md "v1"). The same domain services as
//! `/v2` — `authenticate`, `rate_check`, `bank_slip`, `verify_bank` — behind the v1
//! spelling: `{status: 200, data}` on success, `{status, message: <code>, data?}` on error
//! (`error.rs`), a duplicate slip answered as the error `duplicate_slip` with the earlier
//! verification in `data`.

pub(crate) mod error;
mod qr;
mod wallet;

pub(crate) use error::v1_error;

use crate::authed::AuthedV1;
use crate::responses::{V1UploadErrors, V1VerifyErrors};
use crate::routing::Routes;
use crate::wire::v1::{V1Me, V1VerifyForm, V1VerifyRequest};
use crate::wire::V1Ok;
use axum::extract::{Query, State};
use axum::Json;
use domain::attempt::Outcome;
use domain::clock::format_bangkok;
use domain::model::{RawSlip, RawWalletSlip, VerifiedTransfer};
pub(crate) use error::V1Error;
use serde_json::{json, Map, Value};
use services::auth::Caller;
use services::input::{SlipInput, MAX_IMAGE_BYTES};
use services::verify::VerifyRequest;
use services::Services;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    // Uploads are capped field by field while they stream (see `multipart_input`).
    let uploads = || axum::extract::DefaultBodyLimit::disable();
    Routes::new()
        .api(
            routes!(verify_get, verify_post)
                .layer(uploads())
                .layer(axum::middleware::from_fn(crate::attempts::v1_bank)),
        )
        .api(
            routes!(wallet::verify_truewallet)
                .layer(uploads())
                .layer(axum::middleware::from_fn(crate::attempts::v1_wallet)),
        )
        .api(routes!(me))
        .api(routes!(qr::generate))
        .fallback(error::not_found)
}

/// Longest QR payload, in characters after trimming (compat.md).
const MAX_PAYLOAD_CHARS: usize = 128;
/// Longest image URL, in characters.
const MAX_URL_CHARS: usize = 2048;
/// Longest text field of a multipart form, in bytes.
const MAX_TEXT_FIELD_BYTES: usize = 1024;

/// One slip to verify, as the client sent it.
struct Request {
    input: SlipInput,
    check_duplicate: bool,
    /// The image came as Base64 text (the attempts log tells it from an upload).
    base64: bool,
}

fn one_error(field: &str, message: &str) -> V1Error {
    V1Error::invalid_request(&[domain::FieldError::new(field, message)])
}

/// `payload`: 1–128 characters after trimming.
fn payload_text(value: &str) -> Result<String, V1Error> {
    let p = value.trim();
    let n = p.chars().count();
    if n == 0 || n > MAX_PAYLOAD_CHARS {
        return Err(one_error(
            "payload",
            &format!("must be 1 to {MAX_PAYLOAD_CHARS} characters"),
        ));
    }
    Ok(p.to_string())
}

/// `checkDuplicate` as text (query string, multipart): exactly `true` or `false`.
fn flag_text(value: Option<&str>) -> Result<bool, V1Error> {
    match value {
        None => Ok(false),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => Err(V1Error::code(400, "invalid_check_duplicate", None)),
    }
}

#[utoipa::path(get, path = "/verify", tag = "v1",
    summary = "Verify a slip by its QR payload",
    params(
        ("payload" = String, Query, description = "The QR text, 1-128 characters after trimming", min_length = 1, max_length = 128, pattern = "\\S"),
        ("checkDuplicate" = Option<String>, Query, description = "`true` or `false`: refuse a slip this service verified before (`duplicate_slip`, no quota used)")),
    responses(
        (status = 200, description = "The verified slip", body = V1Ok<RawSlip>),
        V1VerifyErrors))]
/// `GET /api/v1/verify?payload=...&checkDuplicate=true|false`.
async fn verify_get(
    State(svc): State<Services>,
    AuthedV1(c): AuthedV1,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<V1Ok<Value>>, V1Error> {
    let Ok(Query(pairs)) = query else {
        return Err(one_error("query", "is not a valid query string"));
    };
    for (name, value) in &pairs {
        crate::body::no_nul(name, value)?;
    }
    let first = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let check_duplicate = flag_text(first("checkDuplicate"))?;
    let payload = match first("payload") {
        None => return Err(one_error("payload", "is required")),
        Some(p) => payload_text(p)?,
    };
    let req = Request {
        input: SlipInput::Payload(payload),
        check_duplicate,
        base64: false,
    };
    verify(&svc, &c, req, ()).await
}

#[utoipa::path(post, path = "/verify", tag = "v1",
    summary = "Verify a slip by payload, image URL, Base64 or file upload",
    request_body(content(
        (V1VerifyRequest = "application/json"),
        (V1VerifyForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "The verified slip", body = V1Ok<RawSlip>),
        V1UploadErrors))]
/// `POST /api/v1/verify`: JSON `{payload | url | data | image, checkDuplicate?}`, or a
/// multipart form with the file in `file`.
async fn verify_post(
    State(svc): State<Services>,
    AuthedV1(c): AuthedV1,
    req: axum::extract::Request,
) -> Result<axum::response::Response, V1Error> {
    let key = crate::idempotency::key(req.headers())?;
    // Held until the image is read, as in v2: a burst of uploads waits for slots.
    let slot = crate::body::upload_slot(&svc, &c, req.headers()).await;
    let request = request_input(req).await?;
    let key = key.map(|k| {
        let mut f = crate::idempotency::Fingerprint::new("v1.verify");
        f.input(&request.input)
            .flag("checkDuplicate", request.check_duplicate);
        (k, f.finish())
    });
    let svc = &svc;
    Ok(crate::idempotency::once(svc, c, key, |c| async move {
        let slot =
            crate::body::slot_for_url(svc, &c, slot, matches!(request.input, SlipInput::Url(_)))
                .await;
        verify(svc, &c, request, slot).await
    })
    .await)
}

/// The slip of a POST: a multipart form or a JSON body.
async fn request_input(req: axum::extract::Request) -> Result<Request, V1Error> {
    crate::body::multipart_or_json(req, multipart_input, json_input).await
}

/// The names a slip may arrive under; `data` and `image` both carry Base64 (older clients
/// send `image`).
const JSON_INPUTS: [&str; 4] = ["payload", "url", "data", "image"];

fn json_input(map: &Map<String, Value>) -> Result<Request, V1Error> {
    let present = |n: &str| map.get(n).is_some_and(|v| !v.is_null());
    let inputs: Vec<&str> = JSON_INPUTS.into_iter().filter(|n| present(n)).collect();
    let input_name = match inputs.as_slice() {
        [one] => *one,
        [] => return Err(one_error("payload", EXACTLY_ONE)),
        _ => return Err(one_error(inputs[1], EXACTLY_ONE)),
    };
    let check_duplicate = match map.get("checkDuplicate") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        // Some clients send the flag as text even in JSON.
        Some(Value::String(s)) => flag_text(Some(s))?,
        Some(_) => return Err(V1Error::code(400, "invalid_check_duplicate", None)),
    };
    let Some(Value::String(text)) = map.get(input_name) else {
        return Err(one_error(input_name, "must be a string"));
    };
    let input = slip_input(input_name, text)?;
    Ok(Request {
        base64: matches!(input, SlipInput::Image(_)),
        input,
        check_duplicate,
    })
}

const EXACTLY_ONE: &str = "send exactly one of payload, url, data (Base64) or a multipart file";

/// A text input by its name (`payload`, `url`, `data`/`image` as Base64).
fn slip_input(name: &str, text: &str) -> Result<SlipInput, V1Error> {
    match name {
        "payload" => Ok(SlipInput::Payload(payload_text(text)?)),
        "url" => {
            let u = text.trim();
            if u.is_empty() || u.chars().count() > MAX_URL_CHARS {
                return Err(V1Error::code(400, "invalid_url", None));
            }
            Ok(SlipInput::Url(u.to_string()))
        }
        _ => Ok(SlipInput::Image(decode_base64(text)?)),
    }
}

/// Base64 of an image of at most 4 MB (4/3 of it, plus padding).
const MAX_BASE64_CHARS: usize = MAX_IMAGE_BYTES.div_ceil(3) * 4;

/// `data:image/png;base64,....` or bare Base64; line breaks tolerated (as in v2).
fn decode_base64(text: &str) -> Result<Vec<u8>, V1Error> {
    use base64::Engine;
    let data = match text.split_once(',') {
        Some((head, rest)) if head.trim_start().starts_with("data:") => rest,
        _ => text,
    };
    let compact: String = data.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    if compact.len() > MAX_BASE64_CHARS {
        return Err(domain::Error::ImageSizeTooLarge.into());
    }
    base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .map_err(|_| domain::Error::InvalidImageFormat.into())
}

/// A multipart form: the file in `file` (capped at 4 MB while it streams), every other field
/// text (`checkDuplicate` `"true"`/`"false"`; or `payload`, `url`, `data` instead of a file).
async fn multipart_input(req: axum::extract::Request) -> Result<Request, V1Error> {
    use axum::extract::FromRequest;
    let size_hint = crate::body::image_size_hint(req.headers());
    let (req, trip) = crate::body::guard_multipart(req);
    let bad = || {
        let (field, why) = crate::body::multipart_failure(&trip);
        one_error(field, &why)
    };
    let mut mp = axum::extract::Multipart::from_request(req, &())
        .await
        .map_err(|_| bad())?;
    let mut file: Option<Vec<u8>> = None;
    let mut text: Vec<(String, String)> = Vec::new();
    let mut count = 0;
    while let Some(mut field) = mp.next_field().await.map_err(|_| bad())? {
        count += 1;
        if count > 20 {
            return Err(one_error("body", "has too many fields"));
        }
        let name = field.name().unwrap_or("").to_string();
        let is_file = name == "file";
        // Each field as long as its value may be (UTF-8: up to 4 bytes a character), and
        // each name once: repeats would multiply what one request holds.
        if !is_file && text.iter().any(|(k, _)| *k == name) {
            return Err(one_error(&name, "is sent more than once"));
        }
        let cap = match name.as_str() {
            _ if is_file => MAX_IMAGE_BYTES,
            // Base64 sent as a form field.
            "data" | "image" => MAX_BASE64_CHARS + 1024,
            "payload" => MAX_PAYLOAD_CHARS * 4 + 256,
            "url" => MAX_URL_CHARS * 4,
            _ => MAX_TEXT_FIELD_BYTES,
        };
        let mut buf = Vec::with_capacity(if is_file { size_hint } else { 0 });
        while let Some(chunk) = field.chunk().await.map_err(|_| bad())? {
            if buf.len() + chunk.len() > cap {
                return Err(if is_file || name == "data" || name == "image" {
                    domain::Error::ImageSizeTooLarge.into()
                } else {
                    one_error(&name, "is too long")
                });
            }
            buf.extend_from_slice(&chunk);
        }
        if is_file {
            if file.is_some() {
                return Err(one_error("file", EXACTLY_ONE));
            }
            file = Some(buf);
        } else {
            let s = String::from_utf8(buf).map_err(|_| one_error(&name, "must be UTF-8 text"))?;
            crate::body::no_nul(&name, &s)?;
            text.push((name, s));
        }
    }
    let get = |n: &str| text.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let texts: Vec<&str> = JSON_INPUTS
        .into_iter()
        .filter(|n| get(n).is_some())
        .collect();
    let check_duplicate = flag_text(get("checkDuplicate"))?;
    let base64 = file.is_none();
    let input = match (file, texts.as_slice()) {
        (Some(bytes), []) => SlipInput::Image(bytes),
        (None, [one]) => slip_input(one, get(one).unwrap_or_default())?,
        (None, []) => return Err(one_error("file", EXACTLY_ONE)),
        _ => return Err(one_error("file", EXACTLY_ONE)),
    };
    Ok(Request {
        base64: base64 && matches!(input, SlipInput::Image(_)),
        input,
        check_duplicate,
    })
}

/// Image/URL → payload → parse → earlier verification (when asked) → verify → answer.
/// `upload_slot` is released once the image is read.
async fn verify(
    svc: &Services,
    c: &Caller,
    req: Request,
    upload_slot: impl Send,
) -> Result<Json<V1Ok<Value>>, V1Error> {
    let unreadable = unreadable(&req.input);
    c.trace.input(req.input.kind(req.base64));
    let slip = svc.bank_slip(c, req.input).await.map_err(unreadable)?;
    drop(upload_slot);
    // A keyed retry taken over from a node that died may be charged already: its slip is
    // then recorded, and the charge (not this check) answers it as the first run would have.
    let taken_over = c.idempotency.as_ref().is_some_and(|i| i.takeover);
    if req.check_duplicate && !taken_over {
        // Before the bank and the charge: a re-sent slip costs no quota.
        if let Some(dup) = earlier(svc, c, &slip.sending_bank, &slip.trans_ref).await? {
            return Err(dup);
        }
    }
    let data = svc
        .verify_bank(c, &plain_request(slip.clone(), req.check_duplicate))
        .await?;
    if data.is_duplicate {
        // Two requests with the same slip raced past the check above; the charge decided this
        // one was second (and it was charged).
        if let Some(dup) = earlier(svc, c, &slip.sending_bank, &slip.trans_ref).await? {
            return Err(dup);
        }
    }
    Ok(V1Ok::json(v1_slip(&data.raw_slip)?))
}

/// How v1 names a slip that could not be read from `input`: only a malformed URL is a
/// validation error on the URL path, and a payload the client typed that is no slip (of the
/// route's kind) is malformed.
fn unreadable(input: &SlipInput) -> impl FnOnce(domain::Error) -> V1Error {
    let is_payload = matches!(input, SlipInput::Payload(_));
    let is_url = matches!(input, SlipInput::Url(_));
    move |e| match e {
        domain::Error::Validation(_) if is_url => V1Error::code(400, "invalid_url", None),
        domain::Error::NotASlip(_) if is_payload => {
            V1Error::code(400, "invalid_payload", None).with_outcome(Outcome::InvalidQr)
        }
        other => other.into(),
    }
}

/// A verification with v1's one option, `checkDuplicate`.
fn plain_request<S>(slip: S, check_duplicate: bool) -> VerifyRequest<S> {
    VerifyRequest {
        slip,
        check_duplicate,
        match_amount: None,
        remark: None,
        match_account: false,
        job_id: None,
    }
}

/// A bank slip as v1 shows it: v2's `rawSlip`, with `receiver.merchantId` left out when there
/// is none (v1 clients test for the key; v2 keeps `null`, spec 2.1).
fn v1_slip(raw: &RawSlip) -> Result<Value, V1Error> {
    let mut v = serde_json::to_value(raw).map_err(|e| domain::Error::internal(e))?;
    if let Some(r) = v.get_mut("receiver").and_then(Value::as_object_mut) {
        if r.get("merchantId").is_some_and(Value::is_null) {
            r.remove("merchantId");
        }
    }
    Ok(v)
}

/// `duplicate_slip` with the slip's first verification in this service (in the caller's
/// space: production or test), if there was one.
async fn earlier(
    svc: &Services,
    c: &Caller,
    bank: &str,
    trans_ref: &str,
) -> Result<Option<V1Error>, V1Error> {
    // The caller's own space: a test branch sees only test verifications, and the reverse.
    let rec = svc.recorded_verification(c, bank, trans_ref).await?;
    let Some(r) = rec else { return Ok(None) };
    let verified_at = json!(format_bangkok(r.verified_at));
    // The slip as its first verification answered it, plus when that was; rows recorded
    // before the transfer was stored (migration 0011) only have the reduced shape.
    let data = match &r.transfer {
        Some(VerifiedTransfer::Bank(t)) => v1_slip(&RawSlip::from_transfer(t))?,
        Some(VerifiedTransfer::Wallet(t)) => serde_json::to_value(RawWalletSlip::from_transfer(t))
            .map_err(|e| domain::Error::internal(e))?,
        None => json!({
            "transRef": r.trans_ref,
            "date": format_bangkok(r.transferred_at),
            "amount": r.amount.as_baht(),
            "sendingBank": r.sending_bank,
        }),
    };
    let mut data = data;
    if let Some(m) = data.as_object_mut() {
        m.insert("verifiedAt".into(), verified_at);
    }
    Ok(Some(
        V1Error::code(400, "duplicate_slip", Some(data)).with_outcome(Outcome::Duplicate),
    ))
}

#[utoipa::path(get, path = "/me", tag = "v1",
    summary = "The application (service) and its quota in the current billing cycle",
    responses((status = 200, description = "The application", body = V1Ok<V1Me>,
        example = json!({"status": 200, "data": {"application": "My shop", "usedQuota": 12,
            "maxQuota": 5000, "remainingQuota": 4988, "expiredAt": "2027-12-31T00:00:00.000+07:00",
            "currentCredit": 250.0}}))))]
/// `GET /api/v1/me`: the application (service) and its quota in the current billing cycle.
async fn me(State(svc): State<Services>, AuthedV1(c): AuthedV1) -> Json<V1Ok<V1Me>> {
    let (s, _) = c.quotas_at(svc.now());
    V1Ok::json(V1Me {
        application: c.service.name.clone(),
        used_quota: s.used,
        max_quota: s.limit,
        remaining_quota: s.remaining(),
        expired_at: c.service.expires_at.map(format_bangkok),
        // The service's prepaid credit in baht (the credit ledger's balance).
        current_credit: domain::Satang(c.service.subscription.credit).as_baht(),
    })
}
