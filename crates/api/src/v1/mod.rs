//! `/api/v1`: the older interface (spec 7.3, compat.md "v1"). The same domain services as
//! `/v2` — `authenticate`, `rate_check`, `bank_slip`, `verify_bank` — behind the v1
//! spelling: `{status: 200, data}` on success, `{status, message: <code>, data?}` on error
//! (`error.rs`), a duplicate slip answered as the error `duplicate_slip` with the earlier
//! verification in `data`.

pub(crate) mod error;
mod qr;
mod wallet;

use crate::authed::AuthedV1;
use crate::responses::{V1UploadErrors, V1VerifyErrors};
use crate::routing::Routes;
use crate::submitted::Submitted;
use crate::wire::v1::{V1Me, V1VerifyForm, V1VerifyRequest, EXACTLY_ONE};
use crate::wire::V1Ok;
use axum::extract::{Query, State};
use axum::Json;
use domain::attempt::Outcome;
use domain::clock::format_bangkok;
use domain::model::{RawSlip, RawWalletSlip, VerifiedTransfer};
use domain::Error;
use error::V1Error;
use serde_json::{json, Value};
use services::auth::Caller;
use services::idempotency::IdemClaim;
use services::input::SlipInput;
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

/// Longest text field of a multipart form, in bytes.
const MAX_TEXT_FIELD_BYTES: usize = 1024;

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
        return Err(Error::invalid("query", "is not a valid query string").into());
    };
    for (name, value) in &pairs {
        crate::body::no_nul(name, value)?;
    }
    let req = crate::wire::v1::read_query(pairs)??.decoded()?;
    verify(&svc, &c, None, req, ()).await
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
            .flag("checkDuplicate", request.options.check_duplicate);
        (k, f.finish())
    });
    let svc = &svc;
    Ok(crate::idempotency::once(svc, c, key, |c, key| async move {
        let slot =
            crate::body::slot_for_url(svc, &c, slot, matches!(request.input, SlipInput::Url(_)))
                .await;
        verify(svc, &c, key, request, slot).await
    })
    .await)
}

/// The slip of a POST: a multipart form or a JSON body.
async fn request_input(req: axum::extract::Request) -> Result<Submitted, V1Error> {
    crate::body::multipart_or_json(req, multipart_input, |map| {
        Ok(crate::request::parse::<V1VerifyRequest>(map)??.decoded()?)
    })
    .await
}

/// v1's forms: the file in `file`, Base64 in `data` or `image`, each text field as long as its
/// value may be and sent at most once, one file.
const V1_FORM: crate::form::FormRules = crate::form::FormRules {
    files: &["file"],
    base64: &["data", "image"],
    cap: |name| match name {
        "data" | "image" => crate::request::MAX_BASE64_CHARS + 1024,
        "payload" => 128 * 4 + 256,
        "url" => 2048 * 4,
        _ => MAX_TEXT_FIELD_BYTES,
    },
    unique_text: true,
    second_file: Some(|| Error::invalid("file", EXACTLY_ONE)),
    not_utf8: |name| Error::invalid(name, "must be UTF-8 text"),
};

/// A multipart form: the file in `file` (capped at 4 MB while it streams), every other field
/// text (`checkDuplicate` `"true"`/`"false"`; or `payload`, `url`, `data` instead of a file).
async fn multipart_input(req: axum::extract::Request) -> Result<Submitted, V1Error> {
    let form = crate::form::read(req, &V1_FORM).await?;
    Ok(crate::wire::v1::read_form(form)??.decoded()?)
}

/// Image/URL → payload → parse → earlier verification (when asked) → verify → answer.
/// `upload_slot` is released once the image is read; `key`: the `Idempotency-Key` claim.
async fn verify(
    svc: &Services,
    c: &Caller,
    key: Option<IdemClaim>,
    req: Submitted,
    upload_slot: impl Send,
) -> Result<Json<V1Ok<Value>>, V1Error> {
    let unreadable = unreadable(&req.input);
    c.trace.input(req.input.kind(req.base64));
    let slip = svc
        .slips()
        .bank_slip(c, req.input)
        .await
        .map_err(unreadable)?;
    drop(upload_slot);
    // A keyed retry taken over from a node that died may be charged already: its slip is
    // then recorded, and the charge (not this check) answers it as the first run would have.
    let check_duplicate = req.options.check_duplicate;
    let request = plain_request(slip.clone(), check_duplicate).keyed(key);
    if check_duplicate && !request.taken_over() {
        // Before the bank and the charge: a re-sent slip costs no quota.
        if let Some(dup) = earlier(svc, c, &slip.sending_bank, &slip.trans_ref).await? {
            return Err(dup);
        }
    }
    let data = svc.verify().verify_bank(c, &request).await?;
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
        idempotency: None,
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
    let rec = svc
        .verify()
        .recorded_verification(c, bank, trans_ref)
        .await?;
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
