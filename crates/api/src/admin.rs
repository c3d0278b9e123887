//! `/admin`: the operator's API (what the CLI's `admin` commands do), for a dashboard. It is
//! off unless a token is configured (`serve --admin-token`), and then needs
//! `Authorization: Bearer <token>`. Answers use the `/v2` envelope.

use crate::authed::Admin;
use crate::error::ApiError;
use crate::path::Path;
use crate::request::Valid;
use crate::responses::{AdminErrors, RedeliverErrors};
use crate::routing::Routes;
use crate::views;
use crate::wire::admin as w;
use crate::wire::Plain;
use axum::extract::State;
use axum::Json;
use domain::billing::AutoRenew;
use domain::{BranchId, Error, ServiceId, UserId};
use services::subscriptions::NewPackage;
use services::Services;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(routes!(create_service))
        .api(routes!(update_service))
        .api(routes!(create_branch))
        .api(routes!(update_branch))
        .api(routes!(rotate_key))
        .api(routes!(audit))
        .api(routes!(create_user))
        .api(routes!(update_user))
        .api(routes!(create_partner))
        .api(routes!(list_connectors))
        .api(routes!(list_plans))
        .api(routes!(set_plan))
        .api(routes!(list_packages))
        .api(routes!(set_package))
        .api(routes!(subscribe))
        .api(routes!(set_auto_renew))
        .api(routes!(credit_history, move_credit))
        .api(routes!(service_audit))
        .api(routes!(redeliver_job))
}

/// Who the admin API's changes are recorded as (ledger rows, audit entries).
const ACTOR: &str = "admin-api";

type Reply<T> = Result<Json<Plain<T>>, ApiError>;

#[utoipa::path(post, path = "/services", tag = "admin",
    summary = "Create a service",
    request_body(content((w::NewService = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::ServiceView>), AdminErrors))]
async fn create_service(
    State(svc): State<Services>,
    _: Admin,
    Valid(req): Valid<w::NewService>,
) -> Reply<w::ServiceView> {
    let s = svc.admin().create_service(&req.name, req.quota).await?;
    Ok(Plain::json(views::service(&s)))
}

#[utoipa::path(patch, path = "/services/{id}", tag = "admin",
    summary = "Change a service (name, quota, expiry, state, owner, plan, rate)",
    params(("id" = String, Path, description = "Service id")),
    request_body(content((w::ServiceChange = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::ServiceView>), AdminErrors))]
async fn update_service(
    State(svc): State<Services>,
    Path(id): Path<ServiceId>,
    _: Admin,
    Valid(upd): Valid<w::ServiceChange>,
) -> Reply<w::ServiceView> {
    let s = svc.admin().update_service(&id, &upd).await?;
    Ok(Plain::json(views::service(&s)))
}

#[utoipa::path(post, path = "/branches", tag = "admin",
    summary = "Create a branch; its API key is shown once",
    description = "A service has at most one main branch: a second `main: true` is refused with `VALIDATION_ERROR` on `main`, whatever the request's shape.",
    request_body(content((w::NewBranch = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::BranchView>), AdminErrors))]
async fn create_branch(
    State(svc): State<Services>,
    _: Admin,
    Valid(req): Valid<w::NewBranch>,
) -> Reply<w::BranchView> {
    let (b, key) = svc.admin().create_branch(&req).await?;
    Ok(Plain::json(views::branch(&b, Some(&key))))
}

#[utoipa::path(patch, path = "/branches/{id}", tag = "admin",
    summary = "Change a branch (name, active, IP allow-list, webhook, limit, test branch)",
    params(("id" = String, Path, description = "Branch id")),
    request_body(content((w::BranchChange = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::BranchView>), AdminErrors))]
async fn update_branch(
    State(svc): State<Services>,
    Path(id): Path<BranchId>,
    _: Admin,
    Valid(upd): Valid<w::BranchChange>,
) -> Reply<w::BranchView> {
    let b = svc.admin().update_branch(&id, &upd).await?;
    let mut view = views::branch(&b, None);
    view.line = svc
        .admin()
        .line_settings(&b.id)
        .await?
        .as_ref()
        .map(views::line);
    Ok(Plain::json(view))
}

#[utoipa::path(post, path = "/branches/{id}/rotate-key", tag = "admin",
    summary = "Issue a new API key (shown once), optionally keeping the old one for a grace period",
    params(("id" = String, Path, description = "Branch id")),
    request_body(content((w::RotateKey = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::RotatedKey>), AdminErrors))]
async fn rotate_key(
    State(svc): State<Services>,
    Path(id): Path<BranchId>,
    _: Admin,
    Valid(grace): Valid<w::RotateKey>,
) -> Reply<w::RotatedKey> {
    let key = svc.admin().rotate_key(&id, grace).await?;
    Ok(Plain::json(w::RotatedKey {
        id: id.into_string(),
        api_key: key,
    }))
}

#[utoipa::path(get, path = "/branches/{id}/audit", tag = "admin",
    summary = "The partner quota changes of a branch",
    params(("id" = String, Path, description = "Branch id")),
    responses((status = 200, description = "Done", body = Plain<Vec<w::AuditEntry>>), AdminErrors))]
async fn audit(
    State(svc): State<Services>,
    Path(id): Path<BranchId>,
    _: Admin,
) -> Reply<Vec<w::AuditEntry>> {
    let entries = svc.admin().list_audit(&id).await.map_err(Error::from)?;
    Ok(Plain::json(views::audit(&entries)))
}

#[utoipa::path(post, path = "/users", tag = "admin",
    summary = "Create a user (a service owner)",
    request_body(content((w::NewUser = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::UserView>), AdminErrors))]
async fn create_user(
    State(svc): State<Services>,
    _: Admin,
    Valid(req): Valid<w::NewUser>,
) -> Reply<w::UserView> {
    let u = svc.admin().create_user(&req.name).await?;
    Ok(Plain::json(views::user(&u)))
}

#[utoipa::path(patch, path = "/users/{id}", tag = "admin",
    summary = "Ban or unban a user",
    params(("id" = String, Path, description = "User id")),
    request_body(content((w::UserChange = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::UserView>), AdminErrors))]
async fn update_user(
    State(svc): State<Services>,
    Path(id): Path<UserId>,
    _: Admin,
    Valid(req): Valid<w::UserChange>,
) -> Reply<w::UserView> {
    let u = svc.admin().set_user_banned(&id, req.banned).await?;
    Ok(Plain::json(views::user(&u)))
}

#[utoipa::path(post, path = "/partners", tag = "admin",
    summary = "Create a partner; its key and secret are shown once",
    request_body(content((w::NewPartner = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::PartnerView>), AdminErrors))]
async fn create_partner(
    State(svc): State<Services>,
    _: Admin,
    Valid(req): Valid<w::NewPartner>,
) -> Reply<w::PartnerView> {
    let services: Vec<ServiceId> = req.service_ids.into_iter().map(ServiceId::from).collect();
    let (p, key) = svc
        .partner()
        .create_partner(&req.name, &services, &req.permissions)
        .await?;
    Ok(Plain::json(views::new_partner(&p, &key)))
}

#[utoipa::path(get, path = "/connectors", tag = "admin",
    summary = "Each bank / provider connector: breaker state, last error, calls, failures, median latency (since this node started)",
    responses(
        (status = 200, description = "Done", body = Plain<Vec<w::ConnectorView>>,
            example = json!({"success": true, "data": [{"name": "upstream", "kind": "easyslip",
                "state": "closed", "lastError": null, "calls": 12, "failures": 0,
                "medianLatencyMs": 84}]}))))]
async fn list_connectors(State(svc): State<Services>, _: Admin) -> Reply<Vec<w::ConnectorView>> {
    let status = svc
        .status()
        .connector_status()
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(Plain::json(status))
}

#[utoipa::path(get, path = "/plans", tag = "admin",
    summary = "Every rate plan",
    responses((status = 200, description = "Done", body = Plain<Vec<w::PlanView>>), AdminErrors))]
async fn list_plans(State(svc): State<Services>, _: Admin) -> Reply<Vec<w::PlanView>> {
    let plans = svc.admin().list_plans().await.map_err(Error::from)?;
    Ok(Plain::json(plans.iter().map(views::plan).collect()))
}

#[utoipa::path(put, path = "/plans/{name}", tag = "admin",
    summary = "Create or change a rate plan",
    params(("name" = String, Path, description = "Plan name")),
    request_body(content((w::PlanChange = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::PlanView>), AdminErrors))]
async fn set_plan(
    State(svc): State<Services>,
    Path(name): Path<String>,
    _: Admin,
    Valid(req): Valid<w::PlanChange>,
) -> Reply<w::PlanView> {
    let p = svc.admin().set_plan(&name, req.rps, req.burst).await?;
    Ok(Plain::json(views::plan(&p)))
}

// ---- packages, subscriptions and credit ----------------------------------------------------

fn no_service() -> ApiError {
    Error::unknown("service", "no such service").into()
}

#[utoipa::path(get, path = "/packages", tag = "admin",
    summary = "Every package (quota, duration and price of a subscription)",
    responses((status = 200, description = "Done", body = Plain<Vec<w::PackageView>>), AdminErrors))]
async fn list_packages(State(svc): State<Services>, _: Admin) -> Reply<Vec<w::PackageView>> {
    let packages = svc.billing().packages().await?;
    Ok(Plain::json(packages.iter().map(views::package).collect()))
}

#[utoipa::path(put, path = "/packages/{name}", tag = "admin",
    summary = "Create a package or change its terms (takes effect at the next period)",
    params(("name" = String, Path, description = "Package name")),
    request_body(content((w::PackageChange = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::PackageView>), AdminErrors))]
async fn set_package(
    State(svc): State<Services>,
    Path(name): Path<String>,
    _: Admin,
    Valid(terms): Valid<w::PackageChange>,
) -> Reply<w::PackageView> {
    let p = svc
        .billing()
        .set_package(&NewPackage { name, ..terms })
        .await?;
    Ok(Plain::json(views::package(&p)))
}

#[utoipa::path(post, path = "/services/{id}/subscription", tag = "admin",
    summary = "Subscribe a service to a package: a new period (quota, cycle, expiry) starts now",
    description = "`payFromCredit: true` draws the package price from the service's credit (refused when short); otherwise the operator was paid some other way. `autoRenew` absent keeps the current setting.",
    params(("id" = String, Path, description = "Service id")),
    request_body(content((w::SubscribeRequest = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::ServiceView>), AdminErrors))]
async fn subscribe(
    State(svc): State<Services>,
    Path(id): Path<ServiceId>,
    _: Admin,
    Valid(req): Valid<w::SubscribeRequest>,
) -> Reply<w::ServiceView> {
    let s = svc
        .billing()
        .subscribe(
            &id,
            &req.package,
            req.auto_renew,
            req.pay_from_credit,
            ACTOR,
        )
        .await?;
    Ok(Plain::json(views::service(&s)))
}

#[utoipa::path(put, path = "/services/{id}/auto-renew", tag = "admin",
    summary = "Turn a service's auto-renewal on or off (at expiry, when the quota is used up)",
    description = "`enabled` sets both triggers; `onExpiry` / `onQuota` set one each (and override `enabled`). A trigger not given keeps its current value.",
    params(("id" = String, Path, description = "Service id")),
    request_body(content((w::AutoRenewChange = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::ServiceView>), AdminErrors))]
async fn set_auto_renew(
    State(svc): State<Services>,
    Path(id): Path<ServiceId>,
    _: Admin,
    Valid(req): Valid<w::AutoRenewChange>,
) -> Reply<w::ServiceView> {
    let (enabled, on_expiry, on_quota) = (req.enabled, req.on_expiry, req.on_quota);
    let current = svc
        .admin()
        .get_service(&id)
        .await
        .map_err(Error::from)?
        .ok_or_else(no_service)?
        .subscription
        .auto_renew;
    let auto = AutoRenew {
        on_expiry: on_expiry.or(enabled).unwrap_or(current.on_expiry),
        on_quota: on_quota.or(enabled).unwrap_or(current.on_quota),
    };
    let s = svc.billing().set_auto_renew(&id, auto, ACTOR).await?;
    Ok(Plain::json(views::service(&s)))
}

#[utoipa::path(post, path = "/services/{id}/credit", tag = "admin",
    summary = "Top up or adjust a service's prepaid credit",
    description = "`topup` (default) adds a positive amount; `adjustment` corrects either way. The balance never goes below zero: such a movement is refused and nothing moves.",
    params(("id" = String, Path, description = "Service id")),
    request_body(content((w::CreditMove = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::LedgerEntryView>), AdminErrors))]
async fn move_credit(
    State(svc): State<Services>,
    Path(id): Path<ServiceId>,
    _: Admin,
    Valid(c): Valid<w::CreditMove>,
) -> Reply<w::LedgerEntryView> {
    let e = svc
        .billing()
        .move_credit(&id, c.kind, c.amount, c.note.as_deref(), ACTOR)
        .await?;
    Ok(Plain::json(views::ledger_entry(&e)))
}

#[utoipa::path(get, path = "/services/{id}/credit", tag = "admin",
    summary = "A service's credit balance and every movement, oldest first",
    params(("id" = String, Path, description = "Service id")),
    responses((status = 200, description = "Done", body = Plain<w::CreditHistory>), AdminErrors))]
async fn credit_history(
    State(svc): State<Services>,
    Path(id): Path<ServiceId>,
    _: Admin,
) -> Reply<w::CreditHistory> {
    let (balance, entries) = svc.billing().credit_history(&id).await?;
    Ok(Plain::json(views::credit_history(balance, &entries)))
}

#[utoipa::path(get, path = "/services/{id}/audit", tag = "admin",
    summary = "The audit log of a service (subscriptions, renewals, auto-renew changes), oldest first",
    params(("id" = String, Path, description = "Service id")),
    responses((status = 200, description = "Done", body = Plain<Vec<w::AuditEntry>>), AdminErrors))]
async fn service_audit(
    State(svc): State<Services>,
    Path(id): Path<ServiceId>,
    _: Admin,
) -> Reply<Vec<w::AuditEntry>> {
    let entries = svc.billing().service_audit(&id).await?;
    Ok(Plain::json(views::audit(&entries)))
}

#[utoipa::path(post, path = "/jobs/{id}/redeliver", tag = "admin",
    summary = "Send a finished job's callback again (same jobId and body, signed with the branch's current secret)",
    description = "Queues a redelivery, a job of its own: the callback bytes of the job are POSTed again to its callback URL through the same egress rules, with the usual webhook retries, signed with the branch's webhook secret as it is now. Audited on the branch (`job.redeliver`). The body is empty or `{}`.",
    params(("id" = String, Path, description = "The jobId")),
    request_body(content((w::RedeliverRequest = "application/json"))),
    responses(
        (status = 202, description = "Queued", body = Plain<w::RedeliveryView>),
        RedeliverErrors))]
async fn redeliver_job(
    State(svc): State<Services>,
    Path(id): Path<domain::JobId>,
    _: Admin,
    Valid(()): Valid<w::RedeliverRequest>,
) -> Result<(axum::http::StatusCode, Json<Plain<w::RedeliveryView>>), ApiError> {
    let r = svc.jobs().redeliver_job(&id, ACTOR).await?;
    Ok((
        axum::http::StatusCode::ACCEPTED,
        Plain::json(views::redelivery(&r)),
    ))
}
