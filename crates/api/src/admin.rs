//! `/admin`: the operator's API (what the CLI's `admin` commands do), for a dashboard. It is
//! off unless a token is configured (`serve --admin-token`), and then needs
//! `Authorization: Bearer <token>`. Answers use the `/v2` envelope.

use crate::body::{json_object, Fields};
use crate::error::ApiError;
use crate::openapi::{
    AuditResponse, BranchChange, BranchResponse, ErrorBody, NewBranchRequest, NewPartner,
    NewService, NewUser, PartnerResponse, PlanChange, PlanResponse, PlansResponse, RotateKey,
    RotatedKeyResponse, ServiceChange, ServiceResponse, UserChange, UserResponse,
};
use crate::views;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, patch, post, put};
use axum::{Json, Router};
use domain::model::ServiceState;
use domain::Error;
use serde_json::{json, Value};
use services::admin::{BranchUpdate, NewBranch, ServiceUpdate};
use services::Services;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

pub(crate) fn routes() -> Router<Services> {
    Router::new()
        .route("/services", post(create_service))
        .route("/services/{id}", patch(update_service))
        .route("/branches", post(create_branch))
        .route("/branches/{id}", patch(update_branch))
        .route("/branches/{id}/rotate-key", post(rotate_key))
        .route("/branches/{id}/audit", get(audit))
        .route("/users", post(create_user))
        .route("/users/{id}", patch(update_user))
        .route("/partners", post(create_partner))
        .route("/plans", get(list_plans))
        .route("/plans/{name}", put(set_plan))
}

type Reply = Result<Json<Value>, ApiError>;

fn admin(svc: &Services, headers: &HeaderMap) -> Result<(), ApiError> {
    let auth = headers
        .get(axum::http::header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or(""));
    Ok(svc.authenticate_admin(auth)?)
}

/// The admin check, then the JSON body.
async fn admin_body(
    svc: &Services,
    headers: &HeaderMap,
    body: Body,
) -> Result<serde_json::Map<String, Value>, ApiError> {
    admin(svc, headers)?;
    Ok(json_object(body).await?)
}

fn ok(data: Value) -> Json<Value> {
    Json(json!({ "success": true, "data": data }))
}

/// Absent → `None`; `null` → `Some(None)`; a value → `Some(Some(v))` (or a failure noted).
fn tri<T>(
    f: &mut Fields,
    name: &str,
    read: impl FnOnce(&mut Fields) -> Option<T>,
) -> Option<Option<T>> {
    if f.is_null(name) {
        Some(None)
    } else if f.present(name) {
        read(f).map(Some)
    } else {
        None
    }
}

fn instant(f: &mut Fields, name: &str) -> Option<OffsetDateTime> {
    let s = f.string(name, 1, 64)?;
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

#[utoipa::path(post, path = "/admin/services", tag = "admin",
    summary = "Create a service",
    security(("adminToken" = [])),
    request_body(content((NewService = "application/json"))),
    responses(
        (status = 200, description = "Done", body = ServiceResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn create_service(State(svc): State<Services>, headers: HeaderMap, body: Body) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    let name = f.string("name", 1, 100);
    if !f.present("name") {
        f.v.fail("name", "is required");
    }
    let quota = f.whole("quota", 0);
    f.finish()?;
    let s = svc.create_service(&name.unwrap_or_default(), quota).await?;
    Ok(ok(views::service(&s)))
}

#[utoipa::path(patch, path = "/admin/services/{id}", tag = "admin",
    summary = "Change a service (name, quota, expiry, state, owner, plan, rate)",
    security(("adminToken" = [])),
    params(("id" = String, Path, description = "Service id")),
    request_body(content((ServiceChange = "application/json"))),
    responses(
        (status = 200, description = "Done", body = ServiceResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn update_service(
    State(svc): State<Services>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    let name = f.string("name", 1, 100);
    let limit_quota = tri(&mut f, "quota", |f| f.whole("quota", 0));
    let expires_at = tri(&mut f, "expiresAt", |f| instant(f, "expiresAt"));
    let state = f.string("state", 1, 16).and_then(|s| {
        let st = ServiceState::parse(&s);
        if st.is_none() {
            f.v.fail("state", "must be active, banned or deleted");
        }
        st
    });
    let owner_id = tri(&mut f, "ownerId", |f| f.string("ownerId", 1, 64));
    let plan = f.string("plan", 1, 100);
    let rate = tri(&mut f, "rateLimit", |f| {
        f.whole("rateLimit", 1).and_then(|n| u32::try_from(n).ok())
    });
    let owner_verified = f.boolean("ownerVerified");
    f.finish()?;
    let upd = ServiceUpdate {
        name,
        limit_quota,
        state,
        expires_at,
        // The service layer takes "" as "no owner".
        owner_id: owner_id.map(|o| o.unwrap_or_default()),
        plan,
        rate_limit_rps: rate,
        owner_verified,
    };
    let s = svc.update_service(&id, &upd).await?;
    Ok(ok(views::service(&s)))
}

#[utoipa::path(post, path = "/admin/branches", tag = "admin",
    summary = "Create a branch; its API key is shown once",
    security(("adminToken" = [])),
    request_body(content((NewBranchRequest = "application/json"))),
    responses(
        (status = 200, description = "Done", body = BranchResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn create_branch(State(svc): State<Services>, headers: HeaderMap, body: Body) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    for required in ["serviceId", "name"] {
        if !f.present(required) {
            f.v.fail(required, "is required");
        }
    }
    let req = NewBranch {
        service_id: f.string("serviceId", 1, 64).unwrap_or_default(),
        name: f.string("name", 1, 100).unwrap_or_default(),
        is_main: f.boolean("main").unwrap_or(false),
        allow_ips: f.strings("allowIps").unwrap_or_default(),
        limit_quota: f.whole("limitQuota", 0),
    };
    f.finish()?;
    let (b, key) = svc.create_branch(&req).await?;
    Ok(ok(views::branch(&b, Some(&key))))
}

#[utoipa::path(patch, path = "/admin/branches/{id}", tag = "admin",
    summary = "Change a branch (name, active, IP allow-list, webhook, limit)",
    security(("adminToken" = [])),
    params(("id" = String, Path, description = "Branch id")),
    request_body(content((BranchChange = "application/json"))),
    responses(
        (status = 200, description = "Done", body = BranchResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn update_branch(
    State(svc): State<Services>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    let upd = BranchUpdate {
        name: f.string("name", 1, 100),
        active: f.boolean("active"),
        allow_ips: f.strings("allowIps"),
        // The service layer takes "" as "clear".
        webhook_url: tri(&mut f, "webhookUrl", |f| f.string("webhookUrl", 1, 2048))
            .map(Option::unwrap_or_default),
        webhook_secret: tri(&mut f, "webhookSecret", |f| {
            f.string("webhookSecret", 1, 256)
        })
        .map(Option::unwrap_or_default),
        limit_quota: tri(&mut f, "limitQuota", |f| f.whole("limitQuota", 0)),
        biller_id: tri(&mut f, "billerId", |f| f.string("billerId", 1, 32))
            .map(Option::unwrap_or_default),
    };
    f.finish()?;
    let b = svc.update_branch(&id, &upd).await?;
    Ok(ok(views::branch(&b, None)))
}

#[utoipa::path(post, path = "/admin/branches/{id}/rotate-key", tag = "admin",
    summary = "Issue a new API key (shown once), optionally keeping the old one for a grace period",
    security(("adminToken" = [])),
    params(("id" = String, Path, description = "Branch id")),
    request_body(content((RotateKey = "application/json"))),
    responses(
        (status = 200, description = "Done", body = RotatedKeyResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn rotate_key(
    State(svc): State<Services>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    let grace = f.whole("graceSeconds", 0).map(time::Duration::seconds);
    f.finish()?;
    let key = svc.rotate_key(&id, grace).await?;
    Ok(ok(json!({ "id": id, "apiKey": key })))
}

#[utoipa::path(get, path = "/admin/branches/{id}/audit", tag = "admin",
    summary = "The partner quota changes of a branch",
    security(("adminToken" = [])),
    params(("id" = String, Path, description = "Branch id")),
    responses(
        (status = 200, description = "Done", body = AuditResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn audit(State(svc): State<Services>, Path(id): Path<String>, headers: HeaderMap) -> Reply {
    admin(&svc, &headers)?;
    let entries = svc.store.list_audit(&id).await.map_err(Error::from)?;
    Ok(ok(views::audit(&entries)))
}

#[utoipa::path(post, path = "/admin/users", tag = "admin",
    summary = "Create a user (a service owner)",
    security(("adminToken" = [])),
    request_body(content((NewUser = "application/json"))),
    responses(
        (status = 200, description = "Done", body = UserResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn create_user(State(svc): State<Services>, headers: HeaderMap, body: Body) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    if !f.present("name") {
        f.v.fail("name", "is required");
    }
    let name = f.string("name", 1, 100);
    f.finish()?;
    let u = svc.create_user(&name.unwrap_or_default()).await?;
    Ok(ok(views::user(&u)))
}

#[utoipa::path(patch, path = "/admin/users/{id}", tag = "admin",
    summary = "Ban or unban a user",
    security(("adminToken" = [])),
    params(("id" = String, Path, description = "User id")),
    request_body(content((UserChange = "application/json"))),
    responses(
        (status = 200, description = "Done", body = UserResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn update_user(
    State(svc): State<Services>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    let banned = f.boolean("banned");
    if banned.is_none() && !f.present("banned") {
        f.v.fail("banned", "is required");
    }
    f.finish()?;
    let u = svc.set_user_banned(&id, banned.unwrap_or(false)).await?;
    Ok(ok(views::user(&u)))
}

#[utoipa::path(post, path = "/admin/partners", tag = "admin",
    summary = "Create a partner; its key and secret are shown once",
    security(("adminToken" = [])),
    request_body(content((NewPartner = "application/json"))),
    responses(
        (status = 200, description = "Done", body = PartnerResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn create_partner(State(svc): State<Services>, headers: HeaderMap, body: Body) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    let name = f.string("name", 1, 100).unwrap_or_default();
    let services = f.strings("serviceIds").unwrap_or_default();
    let permissions = f.strings("permissions").unwrap_or_default();
    f.finish()?;
    let (p, key) = svc.create_partner(&name, &services, &permissions).await?;
    Ok(ok(views::new_partner(&p, &key)))
}

#[utoipa::path(get, path = "/admin/plans", tag = "admin",
    summary = "Every rate plan",
    security(("adminToken" = [])),
    responses(
        (status = 200, description = "Done", body = PlansResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn list_plans(State(svc): State<Services>, headers: HeaderMap) -> Reply {
    admin(&svc, &headers)?;
    let plans = svc.store.list_plans().await.map_err(Error::from)?;
    Ok(ok(Value::Array(plans.iter().map(views::plan).collect())))
}

#[utoipa::path(put, path = "/admin/plans/{name}", tag = "admin",
    summary = "Create or change a rate plan",
    security(("adminToken" = [])),
    params(("name" = String, Path, description = "Plan name")),
    request_body(content((PlanChange = "application/json"))),
    responses(
        (status = 200, description = "Done", body = PlanResponse),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody)))]
async fn set_plan(
    State(svc): State<Services>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Reply {
    let map = admin_body(&svc, &headers, body).await?;
    let mut f = Fields::new(&map);
    if !f.present("rps") {
        f.v.fail("rps", "is required");
    }
    let rps = f.whole("rps", 1).and_then(|n| u32::try_from(n).ok());
    let burst = f.whole("burst", 1).and_then(|n| u32::try_from(n).ok());
    f.finish()?;
    let p = svc.set_plan(&name, rps.unwrap_or(1), burst).await?;
    Ok(ok(views::plan(&p)))
}
