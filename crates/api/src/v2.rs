//! `/v2`: the verification API (spec 4.1) with its `success` envelope.

use crate::authed::Authed;
use crate::error::{Answer, ApiError};
use crate::form::FormRules;
use crate::idempotency::Fingerprint;
use crate::request::MAX_BASE64_CHARS;
use crate::responses::VerifyBankErrors;
use crate::routing::Routes;
use crate::submitted::Submitted;
use crate::wire::v2::AsyncRequest;
use crate::wire::v2::{
    Bank, Info, InfoAccount, InfoApplication, InfoAutoRenew, InfoBranch, InfoPackage, InfoProduct,
    InfoQuota, VerifyBody, VerifyForm,
};
use crate::wire::V2Ok;
use axum::extract::{Request, State};
use axum::Json;
use serde_json::{Map, Value};
use services::auth::Caller;
use services::budget::UploadSlot;
use services::idempotency::IdemClaim;
use services::input::SlipInput;
use services::Services;
use std::future::Future;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(routes!(list_banks))
        .api(routes!(info))
        // Uploads are capped field by field while they stream (see `multipart_request`).
        .api(
            routes!(verify_bank)
                .layer(axum::extract::DefaultBodyLimit::disable())
                .layer(axum::middleware::from_fn(crate::attempts::v2_bank)),
        )
}

#[utoipa::path(get, path = "/banks", tag = "v2",
    summary = "The banks and their extraVerify options",
    responses((status = 200, description = "Every bank, by code, then the pseudo-banks PROMPTPAY and TRUEMONEY", body = V2Ok<Vec<Bank>>,
        example = json!({"success": true, "message": "Banks retrieved", "data": [
            {"code": "002", "nameEn": "Bangkok Bank", "nameTh": "ธนาคารกรุงเทพ", "shortCode": "BBL",
             "swiftCode": "BKKBTHBK", "extraVerify": [{"value": "NAME", "label": "Account name"}],
             "extraVerifyRequired": true}]}))))]
async fn list_banks(_: Authed) -> Json<V2Ok<Vec<Bank>>> {
    V2Ok::json(
        "Banks retrieved",
        banks::all().iter().map(Bank::from).collect(),
    )
}

#[utoipa::path(get, path = "/info", tag = "v2",
    summary = "The calling key's service and branch with their quota",
    responses((status = 200, description = "Quota in the current billing cycle", body = V2Ok<Info>,
        example = json!({"success": true, "message": "Application info retrieved", "data": {
            "application": {"name": "My shop", "quota": {"used": 12, "max": 5000, "remaining": 4988, "totalUsed": 140, "sandboxUsed": 0},
                "package": {"name": "Standard", "quota": 5000, "durationDays": 30},
                "expiresAt": "2026-12-22T10:00:00.000+07:00",
                "autoRenew": {"expired": true, "quota": true,
                    "createdAt": "2026-11-22T10:00:00.000+07:00", "expiresAt": "2026-12-22T10:00:00.000+07:00"}},
            "account": {"email": null, "credit": 250.0},
            "product": {"name": "Standard"},
            "branch": {"name": "Main", "isActive": true, "isMain": true, "sandbox": false,
                "quota": {"used": 12, "max": null, "remaining": null, "totalUsed": 140, "sandboxUsed": 0}}}}))))]
async fn info(
    State(svc): State<Services>,
    Authed(c): Authed,
) -> Result<Json<V2Ok<Info>>, ApiError> {
    // Usage in the current billing cycle, also when no request has arrived since it began.
    let (s, b) = c.quotas_at(svc.now());
    // Test branches' verifications are never charged: counted apart.
    let (sandbox_service, sandbox_branch) = svc.verify().sandbox_used(&c).await?;
    let sub = &c.service.subscription;
    let package = match &sub.package_id {
        Some(id) => svc.billing().package(id.as_str()).await?,
        None => None,
    };
    use domain::clock::format_bangkok;
    let expires = c.service.expires_at.map(format_bangkok);
    Ok(V2Ok::json(
        "Application info retrieved",
        Info {
            application: InfoApplication {
                name: c.service.name.clone(),
                quota: InfoQuota::new(&s, sandbox_service),
                package: package.as_ref().map(|p| InfoPackage {
                    name: p.name.clone(),
                    quota: p.quota,
                    duration_days: p.duration_days,
                }),
                expires_at: expires.clone(),
                // compat.md's shape: whether the package renews on expiry and on a used-up
                // quota, and the current period.
                auto_renew: InfoAutoRenew {
                    expired: sub.auto_renew.on_expiry,
                    quota: sub.auto_renew.on_quota,
                    created_at: sub.started_at.map(format_bangkok),
                    expires_at: expires,
                },
            },
            // What clients of hosted services read: the account's email (we keep none) and
            // credit in baht, and the product (the subscribed package's name).
            account: InfoAccount {
                email: None,
                credit: domain::Satang(sub.credit).as_baht(),
            },
            product: InfoProduct {
                name: package.map(|p| p.name),
            },
            branch: InfoBranch {
                name: c.branch.name.clone(),
                is_active: c.branch.active,
                is_main: c.branch.is_main,
                sandbox: c.branch.sandbox,
                quota: InfoQuota::new(&b, sandbox_branch),
            },
        },
    ))
}

/// The inputs of a verification from a JSON body (`AsyncRequest`: the slip fields of
/// `VerifyBody` and `callbackUrl`, which the synchronous endpoint ignores).
pub(crate) fn json_request(map: &Map<String, Value>) -> Result<Submitted, domain::Error> {
    crate::request::parse::<AsyncRequest>(map)?.decoded()
}

/// The slip of a request: a multipart form or a JSON body.
pub(crate) async fn submitted(req: Request) -> Result<Submitted, domain::Error> {
    crate::body::multipart_or_json(req, multipart_request, json_request).await
}

/// v2's forms: the file in `image` (or v1's `file`: clients moving from v1 keep their form),
/// each text field as long as its value may be.
const V2_FORM: FormRules = FormRules {
    files: &["image", "file"],
    base64: &["base64"],
    cap: |name| match name {
        "base64" => MAX_BASE64_CHARS + 1024,
        "callbackUrl" => 2048 * 4,
        "remark" | "url" => 255 * 4,
        _ => 1024,
    },
    unique_text: false,
    second_file: None,
    not_utf8: |_| domain::Error::invalid("body", "text fields must be UTF-8"),
};

/// A multipart form read as `VerifyForm`: the file in `image`, the other fields as text
/// (`"true"`, `"150.5"`).
pub(crate) async fn multipart_request(req: Request) -> Result<Submitted, domain::Error> {
    let form = crate::form::read(req, &V2_FORM).await?;
    crate::wire::v2::read_form(form)?.decoded()
}

#[utoipa::path(post, path = "/verify/bank", tag = "v2",
    summary = "Verify a bank slip by QR payload, image upload, Base64 or URL",
    description = "Charges one unit of quota per successful verification (duplicates included); rejected requests charge nothing.",
    request_body(content(
        (VerifyBody = "application/json"),
        (VerifyForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "The verified slip", body = V2Ok<domain::model::VerifyBankData>),
        VerifyBankErrors))]
async fn verify_bank(State(svc): State<Services>, Authed(c): Authed, req: Request) -> Answer {
    let svc = &svc;
    submit_once(
        svc,
        c,
        req,
        "v2.verify.bank",
        |c, key, sub, slot| async move {
            let slip = svc.slips().bank_slip(&c, sub.input).await?;
            drop(slot);
            let req = sub.options.verify(slip).keyed(key);
            let data = svc.verify().verify_bank(&c, &req).await?;
            Ok::<_, ApiError>(V2Ok::json("Slip verified", data))
        },
    )
    .await
}

/// A slip submitted to a v2 route (`route` names it in the fingerprint), start to finish: the
/// `Idempotency-Key`, an upload slot held while the request is read, the request, then `work`
/// once per key with the caller, the key's claim, the request and the slot (taken now for a
/// URL, which is fetched in `work`; `work` drops it once the slip is read).
pub(crate) async fn submit_once<T, Fut>(
    svc: &Services,
    c: Caller,
    req: Request,
    route: &str,
    work: impl FnOnce(Caller, Option<IdemClaim>, Submitted, Option<UploadSlot>) -> Fut,
) -> Answer
where
    Fut: Future<Output = Result<T, ApiError>>,
    T: axum::response::IntoResponse,
{
    let key = crate::idempotency::key(req.headers())?;
    let slot = crate::body::upload_slot(svc, &c, req.headers()).await;
    let sub = submitted(req).await?;
    c.trace.input(sub.input.kind(sub.base64));
    let key = key.map(|k| (k, fingerprint(route, &sub)));
    Ok(crate::idempotency::once(svc, c, key, |c, key| async move {
        let slot =
            crate::body::slot_for_url(svc, &c, slot, matches!(sub.input, SlipInput::Url(_))).await;
        work(c, key, sub, slot).await
    })
    .await)
}

/// The parsed request as the idempotency key compares it.
pub(crate) fn fingerprint(route: &str, sub: &Submitted) -> String {
    let mut f = Fingerprint::new(route);
    sub.add_to(&mut f);
    f.opt("callbackUrl", sub.options.callback_url.as_deref());
    f.finish()
}
