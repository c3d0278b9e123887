//! `/v2/b2b`: the partner API (spec 4.2). Requests are signed over their exact bytes: the key,
//! timestamp and nonce format are checked from the headers first (a refused request costs no
//! body read), then the body is read raw (bounded), the signature checked, and only then
//! parsed. Two forms (compat.md): the spec's `X-Branch-Key` header form
//! (`/b2b/branch/quota…`) and the provider's published branch-in-path form
//! (`/b2b/branches/{branchId}/…`, signed over that path, no `X-Branch-Key`), which also has
//! the branch and bank-account operations (`branch:*`, `bank-account:*` scopes).

use crate::body::parse_object;
use crate::error::ApiError;
use crate::path::PathIds;
use crate::request::parse;
use crate::responses::{AccountNotFound, NewAccountErrors, ValidationError};
use crate::routing::Routes;
use crate::wire::v2::{
    AdjustQuota, Bank, BankAccount as AccountView, Deleted, NewBankAccount as NewAccountBody,
    PartnerBranch, PartnerBranchPatch, PartnerBranchRecord, PartnerNewBankAccount,
    PartnerNewBranch, PartnerQuota, PartnerService, SetQuota,
};
use crate::wire::{ErrorBody, Plain};
use axum::extract::Request;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use domain::clock::format_bangkok;
use domain::model::{Branch, Partner, Service};
use domain::partner::Permission;
use domain::quota::QuotaOp;
use domain::{BankAccountId, Error};
use serde_json::{Map, Value};
use services::partner::{BranchRef, PartnerCaller, PartnerHeaders, SignedRequest};
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
        .api(routes!(read_quota_at, set_quota_at))
        .api(routes!(adjust_quota_at))
        .api(routes!(reset_quota_at))
        .api(routes!(list_branches, create_branch))
        .api(routes!(get_branch, update_branch, delete_branch))
        .api(routes!(branch_accounts, add_branch_account))
        .api(routes!(remove_branch_account))
        .api(routes!(create_account))
        .api(routes!(list_banks))
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).map(|v| v.to_str().unwrap_or(""))
}

/// Authenticates the signed request (key, timestamp, nonce, body, signature, permission);
/// returns the partner, the raw body and the `X-Branch-Key` header.
async fn signed(
    svc: &Services,
    req: Request,
    needs: Permission,
) -> Result<(Partner, Vec<u8>, Option<String>), ApiError> {
    let (parts, body) = req.into_parts();
    let (method, uri, headers) = (&parts.method, &parts.uri, &parts.headers);
    let head = svc
        .partner()
        .partner_head(&PartnerHeaders {
            api_key: header(headers, "x-api-key"),
            timestamp: header(headers, "x-timestamp"),
            nonce: header(headers, "x-nonce"),
        })
        .await?;
    // A known partner key is a credential: its bounded body read is no longer a stranger's.
    crate::authed::vouch(&parts);
    let bytes = crate::body::read_at_most(body, MAX_PARTNER_BODY).await?;
    // Inside `/v2` the router already sees the path without the prefix, and `path()` has no
    // query: what is signed, in both forms.
    let req = SignedRequest {
        method: method.as_str(),
        path: uri.path(),
        signature: header(headers, "x-signature"),
        body: &bytes,
    };
    let partner = svc
        .partner()
        .authenticate_partner_request(head, &req, needs)
        .await?;
    let branch_key = header(headers, "x-branch-key").map(str::to_string);
    Ok((partner, bytes.to_vec(), branch_key))
}

/// The header form: the branch from `X-Branch-Key`.
async fn partner(
    svc: &Services,
    req: Request,
    needs: Permission,
) -> Result<(PartnerCaller, Vec<u8>), ApiError> {
    let (p, bytes, key) = signed(svc, req, needs).await?;
    let caller = svc
        .partner()
        .partner_caller(p, BranchRef::Header(key.as_deref()))
        .await?;
    Ok((caller, bytes))
}

/// The branch-in-path form: the branch is the path's first id.
async fn partner_at(
    svc: &Services,
    ids: &[String],
    req: Request,
    needs: Permission,
) -> Result<(PartnerCaller, Vec<u8>), ApiError> {
    let (p, bytes, _) = signed(svc, req, needs).await?;
    let id = ids.first().map(String::as_str).unwrap_or("");
    let caller = svc.partner().partner_caller(p, BranchRef::Path(id)).await?;
    Ok((caller, bytes))
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

/// One quota operation in both forms (compat.md), documented alike: `$header_form` at
/// `/b2b/branch/quota…` (the branch from `X-Branch-Key`) and `$path_form` at
/// `/b2b/branches/{branchId}/quota…`, whose summary says so. `$run` does the work on the
/// caller's branch, with the signed body.
macro_rules! quota_operation {
    (
        $method:ident $tail:literal => $header_form:ident, $path_form:ident, $needs:ident,
        summary = $what:literal $permission:literal,
        $(description = $description:literal,)?
        $(request_body = $body:ident,)?
        responses($($responses:tt)*),
        $run:ident -> $answer:ident
    ) => {
        #[utoipa::path($method, path = concat!("/b2b/branch/quota", $tail), tag = "partner",
            summary = concat!($what, " ", $permission),
            $(description = $description,)?
            $(request_body(content(($body = "application/json"))),)?
            responses($($responses)*))]
        async fn $header_form(State(svc): State<Services>, req: Request) -> Reply<$answer> {
            let (c, bytes) = partner(&svc, req, Permission::$needs).await?;
            $run(&svc, &c, &bytes).await
        }

        #[utoipa::path($method, path = concat!("/b2b/branches/{branchId}/quota", $tail),
            tag = "partner",
            summary = concat!($what, ", branch in the path ", $permission),
            $(description = $description,)?
            params(("branchId" = String, Path, description = "Branch id (UUID)")),
            $(request_body(content(($body = "application/json"))),)?
            responses($($responses)*))]
        async fn $path_form(
            State(svc): State<Services>,
            PathIds(ids): PathIds,
            req: Request,
        ) -> Reply<$answer> {
            let (c, bytes) = partner_at(&svc, &ids, req, Permission::$needs).await?;
            $run(&svc, &c, &bytes).await
        }
    };
}

quota_operation! {
    get "" => read_quota, read_quota_at, QuotaRead,
    summary = "The branch's and its service's quota" "(permission quota:read)",
    responses((status = 200, description = "Counters of the current cycle", body = Plain<PartnerQuota>)),
    quota -> PartnerQuota
}

quota_operation! {
    put "" => set_quota, set_quota_at, QuotaWrite,
    summary = "Set the branch limit" "(permission quota:write; audited)",
    description = "A limit below the branch's used quota of this cycle is refused with `VALIDATION_ERROR` (spec 4.2), as is any request that is not of the documented shape.",
    request_body = SetQuota,
    responses((status = 200, description = "The branch's counters", body = Plain<PartnerBranch>), ValidationError),
    set -> PartnerBranch
}

quota_operation! {
    post "/adjust" => adjust_quota, adjust_quota_at, QuotaWrite,
    summary = "Add to (or take from) the branch limit" "(permission quota:write; audited)",
    description = "What the branch's state does not allow is refused with `VALIDATION_ERROR` on `amount` too: a branch with no limit of its own (set one with PUT first), or a new limit out of range; a new limit below the used quota is `QUOTA_BELOW_USAGE`.",
    request_body = AdjustQuota,
    responses(
        (status = 200, description = "The branch's counters", body = Plain<PartnerBranch>),
        (status = 400, description = "VALIDATION_ERROR, QUOTA_BELOW_USAGE", body = ErrorBody)),
    adjust -> PartnerBranch
}

quota_operation! {
    post "/reset" => reset_quota, reset_quota_at, QuotaWrite,
    summary = "Reset the branch's used quota of this cycle" "(permission quota:write; audited); no body",
    responses((status = 200, description = "The branch's counters", body = Plain<PartnerBranch>)),
    reset -> PartnerBranch
}

async fn quota(svc: &Services, c: &PartnerCaller, _body: &[u8]) -> Reply<PartnerQuota> {
    let sq = c.service.quota_at(svc.now());
    Ok(Plain::json(PartnerQuota {
        branch: flat_branch(svc, &c.service, &c.branch),
        service: PartnerService {
            limit_quota: sq.limit,
            used_quota: sq.used,
            total_used_quota: sq.total_used,
        },
    }))
}

async fn set(svc: &Services, c: &PartnerCaller, body: &[u8]) -> Reply<PartnerBranch> {
    let limit = parse::<SetQuota>(&parse_object(body)?)?;
    apply(svc, c, QuotaOp::Set(limit)).await
}

async fn adjust(svc: &Services, c: &PartnerCaller, body: &[u8]) -> Reply<PartnerBranch> {
    let amount = parse::<AdjustQuota>(&parse_object(body)?)?;
    apply(svc, c, QuotaOp::Adjust(amount)).await
}

async fn reset(svc: &Services, c: &PartnerCaller, _body: &[u8]) -> Reply<PartnerBranch> {
    apply(svc, c, QuotaOp::Reset).await
}

async fn apply(svc: &Services, c: &PartnerCaller, op: QuotaOp) -> Reply<PartnerBranch> {
    let (s, b) = svc.partner().partner_quota_op(c, op).await?;
    Ok(Plain::json(flat_branch(svc, &s, &b)))
}

/// A branch record for the answer.
fn record(
    svc: &Services,
    r: &services::partner_branches::PartnerBranchRecord,
    api_key: Option<String>,
) -> PartnerBranchRecord {
    let flat = flat_branch(svc, &r.service, &r.branch);
    let ips = r.branch.allow_ips.to_strings();
    PartnerBranchRecord {
        id: flat.id,
        service_id: r.service.id.to_string(),
        name: flat.name,
        is_main: r.branch.is_main,
        is_active: r.branch.active,
        ip_address: (!ips.iter().any(|i| i == "*")).then(|| ips.join(",")),
        limit_quota: flat.limit_quota,
        used_quota: flat.used_quota,
        total_used_quota: flat.total_used_quota,
        bank_accounts: r.accounts.iter().map(AccountView::from).collect(),
        created_at: format_bangkok(r.branch.created_at),
        api_key,
    }
}

/// The JSON object of a signed body; an empty body is `{}` (no field given).
fn object(bytes: &[u8]) -> Result<Map<String, Value>, Error> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    parse_object(bytes)
}

#[utoipa::path(get, path = "/b2b/branches", tag = "partner",
    summary = "Every branch of the partner's services (permission branch:read)",
    responses((status = 200, description = "The branches", body = Plain<Vec<PartnerBranchRecord>>)))]
async fn list_branches(
    State(svc): State<Services>,
    req: Request,
) -> Reply<Vec<PartnerBranchRecord>> {
    let (p, _, _) = signed(&svc, req, Permission::BranchRead).await?;
    let all = svc.partner().partner_branches(&p).await?;
    Ok(Plain::json(
        all.iter().map(|r| record(&svc, r, None)).collect(),
    ))
}

#[utoipa::path(post, path = "/b2b/branches", tag = "partner",
    summary = "Create a branch in one of the partner's services (permission branch:write); its API key is in this answer only",
    request_body(content((PartnerNewBranch = "application/json"))),
    responses((status = 201, description = "The new branch with its apiKey", body = Plain<PartnerBranchRecord>), ValidationError))]
async fn create_branch(
    State(svc): State<Services>,
    req: Request,
) -> Result<(StatusCode, Json<Plain<PartnerBranchRecord>>), ApiError> {
    let (p, bytes, _) = signed(&svc, req, Permission::BranchWrite).await?;
    let new = parse::<PartnerNewBranch>(&object(&bytes)?)?;
    let (r, key) = svc.partner().partner_create_branch(&p, new).await?;
    Ok((
        StatusCode::CREATED,
        Plain::json(record(&svc, &r, Some(key))),
    ))
}

#[utoipa::path(get, path = "/b2b/branches/{branchId}", tag = "partner",
    summary = "One branch (permission branch:read)",
    params(("branchId" = String, Path, description = "Branch id (UUID)")),
    responses((status = 200, description = "The branch", body = Plain<PartnerBranchRecord>)))]
async fn get_branch(
    State(svc): State<Services>,
    PathIds(ids): PathIds,
    req: Request,
) -> Reply<PartnerBranchRecord> {
    let (c, _) = partner_at(&svc, &ids, req, Permission::BranchRead).await?;
    let r = svc.partner().partner_branch_record(&c).await?;
    Ok(Plain::json(record(&svc, &r, None)))
}

#[utoipa::path(patch, path = "/b2b/branches/{branchId}", tag = "partner",
    summary = "Rename, (de)activate or restrict a branch (permission branch:write)",
    params(("branchId" = String, Path, description = "Branch id (UUID)")),
    request_body(content((PartnerBranchPatch = "application/json"))),
    responses((status = 200, description = "The branch", body = Plain<PartnerBranchRecord>), ValidationError))]
async fn update_branch(
    State(svc): State<Services>,
    PathIds(ids): PathIds,
    req: Request,
) -> Reply<PartnerBranchRecord> {
    let (c, bytes) = partner_at(&svc, &ids, req, Permission::BranchWrite).await?;
    let patch = parse::<PartnerBranchPatch>(&object(&bytes)?)?;
    let r = svc.partner().partner_update_branch(&c, patch).await?;
    Ok(Plain::json(record(&svc, &r, None)))
}

#[utoipa::path(delete, path = "/b2b/branches/{branchId}", tag = "partner",
    summary = "End a sub-branch: inactive and its key revoked, kept for its history (permission branch:write)",
    params(("branchId" = String, Path, description = "Branch id (UUID)")),
    responses((status = 200, description = "Ended", body = Plain<Deleted>), ValidationError))]
async fn delete_branch(
    State(svc): State<Services>,
    PathIds(ids): PathIds,
    req: Request,
) -> Reply<Deleted> {
    let (c, _) = partner_at(&svc, &ids, req, Permission::BranchWrite).await?;
    svc.partner().partner_delete_branch(&c).await?;
    Ok(Plain::json(Deleted {
        id: c.branch.id.to_string(),
    }))
}

#[utoipa::path(get, path = "/b2b/branches/{branchId}/bank-accounts", tag = "partner",
    summary = "The branch's receiving accounts (permission bank-account:read)",
    params(("branchId" = String, Path, description = "Branch id (UUID)")),
    responses((status = 200, description = "The accounts", body = Plain<Vec<AccountView>>)))]
async fn branch_accounts(
    State(svc): State<Services>,
    PathIds(ids): PathIds,
    req: Request,
) -> Reply<Vec<AccountView>> {
    let (c, _) = partner_at(&svc, &ids, req, Permission::BankAccountRead).await?;
    let r = svc.partner().partner_branch_record(&c).await?;
    Ok(Plain::json(
        r.accounts.iter().map(AccountView::from).collect(),
    ))
}

/// Creates an account from the body's fields on the caller's branch.
async fn new_account_on(
    svc: &Services,
    c: &PartnerCaller,
    map: &Map<String, Value>,
) -> Result<(StatusCode, Json<Plain<AccountView>>), ApiError> {
    let new = parse::<PartnerNewBankAccount>(map)?;
    let a = svc.partner().partner_create_bank_account(c, new).await?;
    Ok((StatusCode::CREATED, Plain::json(AccountView::from(&a))))
}

#[utoipa::path(post, path = "/b2b/branches/{branchId}/bank-accounts", tag = "partner",
    summary = "Register a receiving account for the branch (permission bank-account:write)",
    params(("branchId" = String, Path, description = "Branch id (UUID)")),
    request_body(content((NewAccountBody = "application/json"))),
    responses((status = 201, description = "Created", body = Plain<AccountView>), NewAccountErrors))]
async fn add_branch_account(
    State(svc): State<Services>,
    PathIds(ids): PathIds,
    req: Request,
) -> Result<(StatusCode, Json<Plain<AccountView>>), ApiError> {
    let (c, bytes) = partner_at(&svc, &ids, req, Permission::BankAccountWrite).await?;
    new_account_on(&svc, &c, &object(&bytes)?).await
}

#[utoipa::path(delete, path = "/b2b/branches/{branchId}/bank-accounts/{bankAccountId}", tag = "partner",
    summary = "Remove one of the branch's receiving accounts (permission bank-account:write)",
    params(
        ("branchId" = String, Path, description = "Branch id (UUID)"),
        ("bankAccountId" = String, Path, description = "Account id")),
    responses((status = 200, description = "Deleted", body = Plain<Deleted>), AccountNotFound))]
async fn remove_branch_account(
    State(svc): State<Services>,
    PathIds(ids): PathIds,
    req: Request,
) -> Reply<Deleted> {
    let (c, _) = partner_at(&svc, &ids, req, Permission::BankAccountWrite).await?;
    let id = BankAccountId::from(ids.get(1).map(|s| s.trim()).unwrap_or(""));
    svc.partner().partner_delete_bank_account(&c, &id).await?;
    Ok(Plain::json(Deleted { id: id.to_string() }))
}

#[utoipa::path(post, path = "/b2b/bank-accounts", tag = "partner",
    summary = "Register a receiving account for one of the partner's branches, named by branchId (permission bank-account:write)",
    request_body(content((PartnerNewBankAccount = "application/json"))),
    responses((status = 201, description = "Created", body = Plain<AccountView>), NewAccountErrors))]
async fn create_account(
    State(svc): State<Services>,
    req: Request,
) -> Result<(StatusCode, Json<Plain<AccountView>>), ApiError> {
    let (p, bytes, _) = signed(&svc, req, Permission::BankAccountWrite).await?;
    let map = object(&bytes)?;
    let branch = match map.get("branchId") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(Error::invalid("branchId", "is required: the branch's UUID").into()),
    };
    let c = svc
        .partner()
        .partner_caller(p, BranchRef::Body(&branch))
        .await?;
    new_account_on(&svc, &c, &map).await
}

#[utoipa::path(get, path = "/b2b/banks", tag = "partner",
    summary = "The banks and their extraVerify options, as GET /v2/banks (permission bank-account:read)",
    responses((status = 200, description = "Every bank", body = Plain<Vec<Bank>>)))]
async fn list_banks(State(svc): State<Services>, req: Request) -> Reply<Vec<Bank>> {
    signed(&svc, req, Permission::BankAccountRead).await?;
    Ok(Plain::json(banks::all().iter().map(Bank::from).collect()))
}
