//! `/admin`: the operator's API (what the CLI's `admin` commands do), for a dashboard. It is
//! off unless a token is configured (`serve --admin-token`), and then needs
//! `Authorization: Bearer <token>`. Answers use the `/v2` envelope.

use crate::authed::Admin;
use crate::body::{json_object, Fields};
use crate::error::ApiError;
use crate::path::Path;
use crate::responses::{AdminErrors, RedeliverErrors};
use crate::routing::Routes;
use crate::views;
use crate::wire::admin as w;
use crate::wire::Plain;
use axum::body::Body;
use axum::extract::State;
use axum::Json;
use domain::billing::{AutoRenew, CreditKind};
use domain::model::ServiceState;
use domain::{BranchId, Error, Satang, ServiceId, UserId};
use serde_json::Value;
use services::admin::{BranchUpdate, NewBranch, ServiceUpdate};
use services::subscriptions::NewPackage;
use services::Services;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
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

#[utoipa::path(post, path = "/services", tag = "admin",
    summary = "Create a service",
    request_body(content((w::NewService = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::ServiceView>), AdminErrors))]
async fn create_service(
    State(svc): State<Services>,
    _: Admin,
    body: Body,
) -> Reply<w::ServiceView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    let name = f.string("name", 1, 100);
    if !f.present("name") {
        f.v.fail("name", "is required");
    }
    let quota = f.whole("quota", 0);
    f.finish()?;
    let s = svc.create_service(&name.unwrap_or_default(), quota).await?;
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
    body: Body,
) -> Reply<w::ServiceView> {
    let map = json_object(body).await?;
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
        owner_id: owner_id.map(|o| UserId::from(o.unwrap_or_default())),
        plan,
        rate_limit_rps: rate,
        owner_verified,
    };
    let s = svc.update_service(&id, &upd).await?;
    Ok(Plain::json(views::service(&s)))
}

#[utoipa::path(post, path = "/branches", tag = "admin",
    summary = "Create a branch; its API key is shown once",
    request_body(content((w::NewBranch = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::BranchView>), AdminErrors))]
async fn create_branch(State(svc): State<Services>, _: Admin, body: Body) -> Reply<w::BranchView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    for required in ["serviceId", "name"] {
        if !f.present(required) {
            f.v.fail(required, "is required");
        }
    }
    let req = NewBranch {
        service_id: f.string("serviceId", 1, 64).unwrap_or_default().into(),
        name: f.string("name", 1, 100).unwrap_or_default(),
        is_main: f.boolean("main").unwrap_or(false),
        allow_ips: match f.strings("allowIps") {
            // Absent means `*`; an explicit empty list is refused, as in a PATCH.
            Some(l) if l.is_empty() => {
                f.v.fail("allowIps", services::admin::EMPTY_ALLOW_LIST);
                l
            }
            l => l.unwrap_or_default(),
        },
        limit_quota: f.whole("limitQuota", 0),
        sandbox: f.boolean("sandbox").unwrap_or(false),
    };
    f.finish()?;
    let (b, key) = svc.create_branch(&req).await?;
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
    body: Body,
) -> Reply<w::BranchView> {
    let map = json_object(body).await?;
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
        sandbox: f.boolean("sandbox"),
        line: line_patch(&mut f),
    };
    f.finish()?;
    let b = svc.update_branch(&id, &upd).await?;
    let mut view = views::branch(&b, None);
    view.line = svc.line_settings(&b.id).await?.as_ref().map(views::line);
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
    body: Body,
) -> Reply<w::RotatedKey> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    let grace = f.whole("graceSeconds", 0).map(time::Duration::seconds);
    f.finish()?;
    let key = svc.rotate_key(&id, grace).await?;
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
    let entries = svc.list_audit(&id).await.map_err(Error::from)?;
    Ok(Plain::json(views::audit(&entries)))
}

#[utoipa::path(post, path = "/users", tag = "admin",
    summary = "Create a user (a service owner)",
    request_body(content((w::NewUser = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::UserView>), AdminErrors))]
async fn create_user(State(svc): State<Services>, _: Admin, body: Body) -> Reply<w::UserView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    if !f.present("name") {
        f.v.fail("name", "is required");
    }
    let name = f.string("name", 1, 100);
    f.finish()?;
    let u = svc.create_user(&name.unwrap_or_default()).await?;
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
    body: Body,
) -> Reply<w::UserView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    let banned = f.boolean("banned");
    if banned.is_none() && !f.present("banned") {
        f.v.fail("banned", "is required");
    }
    f.finish()?;
    let u = svc.set_user_banned(&id, banned.unwrap_or(false)).await?;
    Ok(Plain::json(views::user(&u)))
}

#[utoipa::path(post, path = "/partners", tag = "admin",
    summary = "Create a partner; its key and secret are shown once",
    request_body(content((w::NewPartner = "application/json"))),
    responses((status = 200, description = "Done", body = Plain<w::PartnerView>), AdminErrors))]
async fn create_partner(
    State(svc): State<Services>,
    _: Admin,
    body: Body,
) -> Reply<w::PartnerView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    let name = f.string("name", 1, 100).unwrap_or_default();
    let services: Vec<ServiceId> = f
        .strings("serviceIds")
        .unwrap_or_default()
        .into_iter()
        .map(ServiceId::from)
        .collect();
    let permissions = f.strings("permissions").unwrap_or_default();
    f.finish()?;
    let (p, key) = svc.create_partner(&name, &services, &permissions).await?;
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
    let status = svc.connector_status().into_iter().map(Into::into).collect();
    Ok(Plain::json(status))
}

#[utoipa::path(get, path = "/plans", tag = "admin",
    summary = "Every rate plan",
    responses((status = 200, description = "Done", body = Plain<Vec<w::PlanView>>), AdminErrors))]
async fn list_plans(State(svc): State<Services>, _: Admin) -> Reply<Vec<w::PlanView>> {
    let plans = svc.list_plans().await.map_err(Error::from)?;
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
    body: Body,
) -> Reply<w::PlanView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    if !f.present("rps") {
        f.v.fail("rps", "is required");
    }
    let rps = f.whole("rps", 1).and_then(|n| u32::try_from(n).ok());
    let burst = f.whole("burst", 1).and_then(|n| u32::try_from(n).ok());
    f.finish()?;
    let p = svc.set_plan(&name, rps.unwrap_or(1), burst).await?;
    Ok(Plain::json(views::plan(&p)))
}

// ---- packages, subscriptions and credit ----------------------------------------------------

fn no_service() -> ApiError {
    Error::unknown("service", "no such service").into()
}

/// A required field: `is required` noted when absent (or null).
fn require(f: &mut Fields, names: &[&str]) {
    for &name in names {
        if !f.present(name) {
            f.v.fail(name, "is required");
        }
    }
}

/// Baht as a JSON number, either sign (at most 2 decimals).
fn signed_amount(f: &mut Fields, name: &str) -> Option<Satang> {
    let map = f.map;
    let parsed = match map.get(name).filter(|v| !v.is_null())? {
        Value::Number(n) => match n.as_f64() {
            Some(x) => {
                Satang::from_baht_f64(x.abs()).map(|s| Satang(if x < 0.0 { -s.0 } else { s.0 }))
            }
            None => Err("must be a number"),
        },
        _ => Err("must be a number"),
    };
    match parsed {
        Ok(s) => Some(s),
        Err(reason) => {
            f.v.fail(name, reason);
            None
        }
    }
}

/// `true`/`false` (both triggers) or `{onExpiry, onQuota}` (each a boolean, absent false).
fn auto_renew_setting(f: &mut Fields, name: &str) -> Option<AutoRenew> {
    let shape = "must be a boolean or an object {onExpiry, onQuota}";
    let map = f.map;
    match map.get(name).filter(|v| !v.is_null())? {
        Value::Bool(b) => Some(AutoRenew {
            on_expiry: *b,
            on_quota: *b,
        }),
        Value::Object(o) => {
            let mut flag = |key: &str| match o.get(key) {
                None | Some(Value::Null) => Some(false),
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => {
                    f.v.fail(format!("{name}.{key}"), "must be a boolean");
                    None
                }
            };
            let (on_expiry, on_quota) = (flag("onExpiry"), flag("onQuota"));
            if let Some(k) = o.keys().find(|k| *k != "onExpiry" && *k != "onQuota") {
                f.v.fail(name, format!("unknown field {k}; {shape}"));
                return None;
            }
            Some(AutoRenew {
                on_expiry: on_expiry?,
                on_quota: on_quota?,
            })
        }
        _ => {
            f.v.fail(name, shape);
            None
        }
    }
}

#[utoipa::path(get, path = "/packages", tag = "admin",
    summary = "Every package (quota, duration and price of a subscription)",
    responses((status = 200, description = "Done", body = Plain<Vec<w::PackageView>>), AdminErrors))]
async fn list_packages(State(svc): State<Services>, _: Admin) -> Reply<Vec<w::PackageView>> {
    let packages = svc.packages().await?;
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
    body: Body,
) -> Reply<w::PackageView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    require(&mut f, &["quota", "durationDays", "price"]);
    let quota = f.whole("quota", 1);
    let days = f
        .whole("durationDays", 1)
        .and_then(|n| match u32::try_from(n) {
            Ok(d) => Some(d),
            Err(_) => {
                f.v.fail("durationDays", "is too large");
                None
            }
        });
    let price = f.amount("price");
    f.finish()?;
    let p = svc
        .set_package(&NewPackage {
            name,
            quota: quota.unwrap_or_default(),
            duration_days: days.unwrap_or_default(),
            price: price.unwrap_or_default(),
        })
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
    body: Body,
) -> Reply<w::ServiceView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    require(&mut f, &["package"]);
    let package = f.string("package", 1, 100);
    let auto = auto_renew_setting(&mut f, "autoRenew");
    let pay = f.boolean("payFromCredit").unwrap_or(false);
    f.finish()?;
    let s = svc
        .subscribe(&id, &package.unwrap_or_default(), auto, pay, ACTOR)
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
    body: Body,
) -> Reply<w::ServiceView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    let enabled = f.boolean("enabled");
    let on_expiry = f.boolean("onExpiry");
    let on_quota = f.boolean("onQuota");
    if !["enabled", "onExpiry", "onQuota"]
        .iter()
        .any(|n| f.present(n))
    {
        f.v.fail("onExpiry", "is required (or onQuota, or enabled)");
    }
    f.finish()?;
    let current = svc
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
    let s = svc.set_auto_renew(&id, auto, ACTOR).await?;
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
    body: Body,
) -> Reply<w::LedgerEntryView> {
    let map = json_object(body).await?;
    let mut f = Fields::new(&map);
    require(&mut f, &["amount"]);
    let amount = signed_amount(&mut f, "amount");
    let kind = match f.string("kind", 1, 16).as_deref() {
        None | Some("topup") => Some(CreditKind::TopUp),
        Some("adjustment") => Some(CreditKind::Adjustment),
        Some(_) => {
            f.v.fail("kind", "must be topup or adjustment");
            None
        }
    };
    let note = f.string("note", 1, 255);
    f.finish()?;
    let e = svc
        .move_credit(
            &id,
            kind.unwrap_or(CreditKind::TopUp),
            amount.unwrap_or_default(),
            note.as_deref(),
            ACTOR,
        )
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
    let (balance, entries) = svc.credit_history(&id).await?;
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
    let entries = svc.service_audit(&id).await?;
    Ok(Plain::json(views::audit(&entries)))
}

/// The LINE fields of a branch change (`null` or `""` clears a text).
fn line_patch(f: &mut Fields) -> domain::line::LinePatch {
    use domain::line::{GroupMode, Lang, LinePatch};
    let text = |f: &mut Fields, name: &str, max: usize| {
        tri(f, name, |f| f.string(name, 1, max)).map(Option::unwrap_or_default)
    };
    let channel_secret = text(f, "lineChannelSecret", 256);
    let channel_token = text(f, "lineChannelToken", 1024);
    let notify_to = text(f, "lineNotifyTo", 64);
    let language = f.string("lineLanguage", 1, 8).and_then(|l| {
        let parsed = Lang::parse(&l);
        if parsed.is_none() {
            f.v.fail("lineLanguage", "must be th or en");
        }
        parsed
    });
    let group_mode = f.string("lineGroupMode", 1, 16).and_then(|m| {
        let parsed = GroupMode::parse(&m);
        if parsed.is_none() {
            f.v.fail("lineGroupMode", "must be silent or verbose");
        }
        parsed
    });
    LinePatch {
        channel_secret,
        channel_token,
        notify_to,
        language,
        group_mode,
        push: f.boolean("linePush"),
        push_daily_limit: f
            .whole("linePushDailyLimit", 0)
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
    }
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
    body: Body,
) -> Result<(axum::http::StatusCode, Json<Plain<w::RedeliveryView>>), ApiError> {
    let map = json_object(body).await?;
    if let Some(field) = map.keys().next() {
        return Err(
            Error::invalid(field.as_str(), "unknown field: send an empty body or {}").into(),
        );
    }
    let r = svc.redeliver_job(&id, ACTOR).await?;
    Ok((
        axum::http::StatusCode::ACCEPTED,
        Plain::json(views::redelivery(&r)),
    ))
}
