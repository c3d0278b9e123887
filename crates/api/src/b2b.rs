//! `/v2/b2b`: the partner API (spec 4.2). Requests are signed over their exact bytes: the key,
//! timestamp and nonce format are checked from the headers first (a refused request costs no
//! body read), then the body is read raw (bounded), the signature checked, and only then
//! parsed.

use crate::body::parse_object;
use crate::error::ApiError;
use crate::routing::Routes;
use crate::wire::v2::{AdjustQuota, PartnerBranch, PartnerQuota, PartnerService, SetQuota};
use crate::wire::{ErrorBody, Plain};
use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use domain::model::{Branch, Service};
use domain::partner::Permission;
use domain::quota::QuotaOp;
use domain::{Error, Validation};
use serde_json::{Map, Value};
use services::partner::{PartnerCaller, PartnerHeaders, SignedRequest};
use services::Services;
use utoipa_axum::routes;

type Reply<T> = Result<Json<Plain<T>>, ApiError>;

/// Partner bodies are tiny; anything bigger is refused before it is hashed.
const MAX_PARTNER_BODY: usize = 64 * 1024;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(routes!(read_quota, set_quota))
        .api(routes!(adjust_quota))
        .api(routes!(reset_quota))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).map(|v| v.to_str().unwrap_or(""))
}

/// Authenticates the signed request; returns the caller and the raw body.
async fn partner(
    svc: &Services,
    req: Request,
    needs: Permission,
) -> Result<(PartnerCaller, Vec<u8>), ApiError> {
    let (parts, body) = req.into_parts();
    let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
    let head = svc
        .partner_head(&PartnerHeaders {
            api_key: header(headers, "x-api-key"),
            timestamp: header(headers, "x-timestamp"),
            nonce: header(headers, "x-nonce"),
        })
        .await?;
    // A known partner key is a credential: its bounded body read is no longer a stranger's.
    crate::authed::vouch(&parts);
    let bytes = crate::body::read_at_most(body, MAX_PARTNER_BODY).await?;
    // Inside `/v2` the router already sees the path without the prefix: what is signed.
    let req = SignedRequest {
        method: method.as_str(),
        path: uri.path(),
        branch_key: header(headers, "x-branch-key"),
        signature: header(headers, "x-signature"),
        body: &bytes,
    };
    let caller = svc.authenticate_partner(head, &req, needs).await?;
    Ok((caller, bytes.to_vec()))
}

/// A required whole number; with `nullable`, `null` is a value (`None`).
fn whole(map: &Map<String, Value>, name: &str, nullable: bool) -> Result<Option<i64>, Error> {
    let mut v = Validation::new();
    let out = match map.get(name) {
        None => {
            v.fail(name, "is required");
            None
        }
        Some(Value::Null) if nullable => None,
        // `3.0` is the whole number 3, as in every other whole-number field.
        Some(Value::Number(n)) => match n.as_i64().or_else(|| crate::body::whole_float(n)) {
            Some(i) => Some(i),
            None => {
                v.fail(name, "must be a whole number");
                None
            }
        },
        Some(_) if nullable => {
            v.fail(name, "must be a whole number or null");
            None
        }
        Some(_) => {
            v.fail(name, "must be a whole number");
            None
        }
    };
    v.into_result()?;
    Ok(out)
}

/// Counters as they stand in the current cycle.
fn flat_branch(svc: &Services, s: &Service, b: &Branch) -> PartnerBranch {
    let q = b.quota_in(s.current_cycle(svc.now()));
    PartnerBranch {
        id: b.id.to_string(),
        name: b.name.clone(),
        limit_quota: q.limit,
        used_quota: q.used,
        total_used_quota: q.total_used,
    }
}

#[utoipa::path(get, path = "/b2b/branch/quota", tag = "partner",
    summary = "The branch's and its service's quota (permission quota:read)",
    responses((status = 200, description = "Counters of the current cycle", body = Plain<PartnerQuota>)))]
async fn read_quota(State(svc): State<Services>, req: Request) -> Reply<PartnerQuota> {
    let (c, _) = partner(&svc, req, Permission::QuotaRead).await?;
    let sq = c.service.quota_at(svc.now());
    Ok(Plain::json(PartnerQuota {
        branch: flat_branch(&svc, &c.service, &c.branch),
        service: PartnerService {
            limit_quota: sq.limit,
            used_quota: sq.used,
            total_used_quota: sq.total_used,
        },
    }))
}

async fn apply(svc: &Services, c: &PartnerCaller, op: QuotaOp) -> Reply<PartnerBranch> {
    let (s, b) = svc.partner_quota_op(c, op).await?;
    Ok(Plain::json(flat_branch(svc, &s, &b)))
}

#[utoipa::path(put, path = "/b2b/branch/quota", tag = "partner",
    summary = "Set the branch limit (permission quota:write; audited)",
    request_body(content((SetQuota = "application/json"))),
    responses(
        (status = 200, description = "The branch's counters", body = Plain<PartnerBranch>),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn set_quota(State(svc): State<Services>, req: Request) -> Reply<PartnerBranch> {
    let (c, bytes) = partner(&svc, req, Permission::QuotaWrite).await?;
    let limit = whole(&parse_object(&bytes)?, "limitQuota", true)?;
    if matches!(limit, Some(l) if l < 0) {
        return Err(Error::invalid("limitQuota", "must not be negative").into());
    }
    apply(&svc, &c, QuotaOp::Set(limit)).await
}

#[utoipa::path(post, path = "/b2b/branch/quota/adjust", tag = "partner",
    summary = "Add to (or take from) the branch limit (permission quota:write; audited)",
    request_body(content((AdjustQuota = "application/json"))),
    responses(
        (status = 200, description = "The branch's counters", body = Plain<PartnerBranch>),
        (status = 400, description = "VALIDATION_ERROR, QUOTA_BELOW_USAGE", body = ErrorBody)))]
async fn adjust_quota(State(svc): State<Services>, req: Request) -> Reply<PartnerBranch> {
    let (c, bytes) = partner(&svc, req, Permission::QuotaWrite).await?;
    let amount = whole(&parse_object(&bytes)?, "amount", false)?.unwrap_or(0);
    if amount == 0 {
        return Err(Error::invalid("amount", "must not be 0").into());
    }
    apply(&svc, &c, QuotaOp::Adjust(amount)).await
}

#[utoipa::path(post, path = "/b2b/branch/quota/reset", tag = "partner",
    summary = "Reset the branch's used quota of this cycle (permission quota:write; audited); no body",
    responses((status = 200, description = "The branch's counters", body = Plain<PartnerBranch>)))]
async fn reset_quota(State(svc): State<Services>, req: Request) -> Reply<PartnerBranch> {
    let (c, _) = partner(&svc, req, Permission::QuotaWrite).await?;
    apply(&svc, &c, QuotaOp::Reset).await
}
