//! `/v2/bank-accounts` (compat.md): the receiving accounts of the calling key's branch.

use crate::authed::Authed;
use crate::body::{json_object, Fields};
use crate::error::ApiError;
use crate::openapi::{
    BankAccountResponse, BankAccountUpdate, BankAccountsResponse, DeletedResponse, ErrorBody,
    NewBankAccount as NewAccountBody,
};
use crate::path::Path;
use crate::routing::Routes;
use crate::v2::ok;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use domain::clock::format_bangkok;
use domain::model::BankAccount;
use serde_json::{json, Value};
use services::accounts::NewBankAccount;
use services::Services;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(routes!(list, create))
        .api(routes!(one, update, remove))
}

pub(crate) fn view(a: &BankAccount) -> Value {
    let bank = banks::find(&a.bank_code);
    json!({
        "id": a.id,
        "bankCode": a.bank_code,
        "bankNumber": a.bank_number,
        "nameTh": a.name_th,
        "nameEn": a.name_en,
        "type": a.kind.as_str(),
        "extraVerify": a.extra_verify,
        "bank": {
            "code": a.bank_code,
            "nameTh": bank.map(|b| b.name_th),
            "nameEn": bank.map(|b| b.name_en),
            "shortCode": bank.map(|b| b.short),
        },
        "createdAt": format_bangkok(a.created_at),
    })
}

#[utoipa::path(post, path = "/bank-accounts", tag = "v2 bank accounts",
    summary = "Register a receiving account for the calling key's branch",
    security(("bearerAuth" = [])),
    request_body(content((NewAccountBody = "application/json"))),
    responses(
        (status = 201, description = "Created", body = BankAccountResponse),
        (status = 400, description = "VALIDATION_ERROR, INVALID_BANK_CODE, INVALID_EXTRA_VERIFY", body = ErrorBody),
        (status = 409, description = "BANK_ACCOUNT_DUPLICATE", body = ErrorBody)))]
async fn create(
    State(svc): State<Services>,
    Authed(c): Authed,
    req: axum::extract::Request,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let map = json_object(req.into_body()).await?;
    let mut f = Fields::new(&map);
    // Lengths and presence are checked by the service; here only the JSON types.
    let mut text = |name: &str| f.string(name, 0, 10_000);
    let new = NewBankAccount {
        bank_code: text("bankCode"),
        bank_number: text("bankNumber"),
        name_th: text("nameTh"),
        name_en: text("nameEn"),
        kind: text("type"),
        extra_verify: text("extraVerify"),
    };
    f.finish()?;
    let a = svc.create_bank_account(&c, new).await?;
    Ok((StatusCode::CREATED, ok("Bank account created", view(&a))))
}

#[utoipa::path(get, path = "/bank-accounts", tag = "v2 bank accounts",
    summary = "The branch's receiving accounts",
    security(("bearerAuth" = [])),
    responses((status = 200, description = "The accounts", body = BankAccountsResponse)))]
async fn list(State(svc): State<Services>, Authed(c): Authed) -> Result<Json<Value>, ApiError> {
    let all = svc.list_bank_accounts(&c).await?;
    Ok(ok(
        "Bank accounts retrieved",
        Value::Array(all.iter().map(view).collect()),
    ))
}

#[utoipa::path(get, path = "/bank-accounts/{id}", tag = "v2 bank accounts",
    summary = "One account",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "Account id")),
    responses(
        (status = 200, description = "The account", body = BankAccountResponse),
        (status = 404, description = "BANK_ACCOUNT_NOT_FOUND", body = ErrorBody)))]
async fn one(
    State(svc): State<Services>,
    Path(id): Path<String>,
    Authed(c): Authed,
) -> Result<Json<Value>, ApiError> {
    let a = svc.get_bank_account(&c, &id).await?;
    Ok(ok("Bank account retrieved", view(&a)))
}

#[utoipa::path(patch, path = "/bank-accounts/{id}", tag = "v2 bank accounts",
    summary = "Change an account's extraVerify option",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "Account id")),
    request_body(content((BankAccountUpdate = "application/json"))),
    responses(
        (status = 200, description = "The account", body = BankAccountResponse),
        (status = 400, description = "VALIDATION_ERROR, INVALID_EXTRA_VERIFY", body = ErrorBody),
        (status = 404, description = "BANK_ACCOUNT_NOT_FOUND", body = ErrorBody)))]
/// `{extraVerify}`: a string, or null to clear it.
async fn update(
    State(svc): State<Services>,
    Path(id): Path<String>,
    Authed(c): Authed,
    req: axum::extract::Request,
) -> Result<Json<Value>, ApiError> {
    let map = json_object(req.into_body()).await?;
    let mut f = Fields::new(&map);
    if !map.contains_key("extraVerify") {
        f.v.fail("extraVerify", "is required (a string, or null to clear it)");
    }
    let extra = f.string("extraVerify", 1, 32);
    f.finish()?;
    let a = svc.update_bank_account(&c, &id, extra).await?;
    Ok(ok("Bank account updated", view(&a)))
}

#[utoipa::path(delete, path = "/bank-accounts/{id}", tag = "v2 bank accounts",
    summary = "Delete an account",
    security(("bearerAuth" = [])),
    params(("id" = String, Path, description = "Account id")),
    responses(
        (status = 200, description = "Deleted", body = DeletedResponse),
        (status = 404, description = "BANK_ACCOUNT_NOT_FOUND", body = ErrorBody)))]
async fn remove(
    State(svc): State<Services>,
    Path(id): Path<String>,
    Authed(c): Authed,
) -> Result<Json<Value>, ApiError> {
    svc.delete_bank_account(&c, &id).await?;
    Ok(ok("Bank account deleted", json!({ "id": id.trim() })))
}
