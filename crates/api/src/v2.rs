//! `/v2`: the verification API (spec 4.1) with its `success` envelope.

use crate::body::{json_object, Fields};
use crate::error::ApiError;
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Map, Value};
use services::auth::Caller;
use services::verify::VerifyRequest;
use services::Services;
use std::net::SocketAddr;

pub(crate) fn routes() -> Router<Services> {
    Router::new()
        .route("/banks", get(list_banks))
        .route("/info", get(info))
        .route("/verify/bank", post(verify_bank))
}

async fn caller(svc: &Services, headers: &HeaderMap, peer: SocketAddr) -> Result<Caller, ApiError> {
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("\u{0}"));
    let forwarded_for = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let c = svc.authenticate(auth, peer.ip(), forwarded_for).await?;
    // Before any body is read: a refused request costs nothing but this check.
    svc.rate_check(&c).await?;
    Ok(c)
}

fn ok(message: &str, data: Value) -> Json<Value> {
    Json(json!({ "success": true, "message": message, "data": data }))
}

async fn list_banks(
    State(svc): State<Services>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    caller(&svc, &headers, peer).await?;
    let list: Vec<Value> = banks::all()
        .iter()
        .map(|b| {
            json!({
                "code": b.code,
                "nameEn": b.name_en,
                "nameTh": b.name_th,
                "shortCode": b.short,
                "swiftCode": b.swift,
                "extraVerify": b.extra_verify,
                "extraVerifyRequired": b.extra_verify_required,
            })
        })
        .collect();
    Ok(ok("Banks retrieved", Value::Array(list)))
}

async fn info(
    State(svc): State<Services>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let c = caller(&svc, &headers, peer).await?;
    // Usage in the current billing cycle, also when no request has arrived since it began.
    let (s, b) = c.quotas_at(svc.clock.now());
    let (s, b) = (&s, &b);
    Ok(ok(
        "Application info retrieved",
        json!({
            "application": {
                "name": c.service.name,
                "quota": {
                    "used": s.used,
                    "max": s.limit,
                    "remaining": s.remaining(),
                    "totalUsed": s.total_used,
                },
            },
            "branch": {
                "name": c.branch.name,
                "isActive": c.branch.active,
                "isMain": c.branch.is_main,
                "quota": {
                    "used": b.used,
                    "max": b.limit,
                    "remaining": b.remaining(),
                    "totalUsed": b.total_used,
                },
            },
        }),
    ))
}

/// Image inputs (upload, `base64`, `url`) arrive with the image reader; until then they are
/// refused clearly rather than ignored.
const IMAGE_INPUTS: [&str; 3] = ["image", "base64", "url"];

/// The inputs of a verification, checked field by field (shared by every way of submitting one).
fn verify_request(map: &Map<String, Value>) -> Result<VerifyRequest, domain::Error> {
    let mut f = Fields::new(map);
    let inputs: Vec<&str> = std::iter::once("payload")
        .chain(IMAGE_INPUTS)
        .filter(|n| f.present(n))
        .collect();
    if inputs.len() > 1 {
        f.v.fail(
            "payload",
            "send exactly one of payload, image, base64 or url",
        );
    }
    for name in inputs.iter().filter(|n| IMAGE_INPUTS.contains(n)) {
        f.v.fail(
            *name,
            "image inputs are not supported by this server version; send payload",
        );
    }
    let payload = f.string("payload", 1, 128);
    if inputs.is_empty() {
        f.v.fail("payload", "is required");
    }
    let check_duplicate = f.boolean("checkDuplicate").unwrap_or(false);
    let match_amount = f.amount("matchAmount");
    let remark = f.string("remark", 1, 255);
    if f.boolean("matchAccount") == Some(true) {
        f.v.fail(
            "matchAccount",
            "receiver-account matching is not supported by this server version",
        );
    }
    f.v.into_result()?;
    Ok(VerifyRequest {
        payload: payload.unwrap_or_default(),
        check_duplicate,
        match_amount,
        remark,
    })
}

async fn verify_bank(
    State(svc): State<Services>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let c = caller(&svc, &headers, peer).await?;
    let req = verify_request(&json_object(body).await?)?;
    let data = svc.verify_bank(&c, &req).await?;
    Ok(ok(
        "Slip verified",
        serde_json::to_value(data).map_err(domain::Error::internal)?,
    ))
}
