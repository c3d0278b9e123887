//! `/v2/bank-accounts` (compat.md): the receiving accounts of the calling key's branch.

use crate::authed::Authed;
use crate::error::ApiError;
use crate::path::Path;
use crate::request::Valid;
use crate::responses::{AccountNotFound, NewAccountErrors};
use crate::routing::Routes;
use crate::wire::v2::{
    BankAccount as View, BankAccountUpdate, Deleted, NewBankAccount as NewAccountBody,
};
use crate::wire::{ErrorBody, V2Ok};
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use domain::BankAccountId;
use services::Services;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(routes!(list, create))
        .api(routes!(one, update, remove))
}

#[utoipa::path(post, path = "/bank-accounts", tag = "v2 bank accounts",
    summary = "Register a receiving account for the calling key's branch",
    request_body(content((NewAccountBody = "application/json"))),
    responses((status = 201, description = "Created", body = V2Ok<View>), NewAccountErrors))]
async fn create(
    State(svc): State<Services>,
    Authed(c): Authed,
    Valid(new): Valid<NewAccountBody>,
) -> Result<(StatusCode, Json<V2Ok<View>>), ApiError> {
    let a = svc.accounts().create_bank_account(&c, new).await?;
    Ok((
        StatusCode::CREATED,
        V2Ok::json("Bank account created", View::from(&a)),
    ))
}

#[utoipa::path(get, path = "/bank-accounts", tag = "v2 bank accounts",
    summary = "The branch's receiving accounts",
    responses((status = 200, description = "The accounts", body = V2Ok<Vec<View>>)))]
async fn list(
    State(svc): State<Services>,
    Authed(c): Authed,
) -> Result<Json<V2Ok<Vec<View>>>, ApiError> {
    let all = svc.accounts().list_bank_accounts(&c).await?;
    Ok(V2Ok::json(
        "Bank accounts retrieved",
        all.iter().map(View::from).collect(),
    ))
}

#[utoipa::path(get, path = "/bank-accounts/{id}", tag = "v2 bank accounts",
    summary = "One account",
    params(("id" = String, Path, description = "Account id")),
    responses((status = 200, description = "The account", body = V2Ok<View>), AccountNotFound))]
async fn one(
    State(svc): State<Services>,
    Path(id): Path<BankAccountId>,
    Authed(c): Authed,
) -> Result<Json<V2Ok<View>>, ApiError> {
    let a = svc.accounts().get_bank_account(&c, &id).await?;
    Ok(V2Ok::json("Bank account retrieved", View::from(&a)))
}

#[utoipa::path(patch, path = "/bank-accounts/{id}", tag = "v2 bank accounts",
    summary = "Change an account's extraVerify option",
    params(("id" = String, Path, description = "Account id")),
    request_body(content((BankAccountUpdate = "application/json"))),
    responses(
        (status = 200, description = "The account", body = V2Ok<View>),
        (status = 400, description = "VALIDATION_ERROR, INVALID_EXTRA_VERIFY", body = ErrorBody),
        AccountNotFound))]
/// `{extraVerify}`: a string, or null to clear it.
async fn update(
    State(svc): State<Services>,
    Path(id): Path<BankAccountId>,
    Authed(c): Authed,
    Valid(extra): Valid<BankAccountUpdate>,
) -> Result<Json<V2Ok<View>>, ApiError> {
    let a = svc.accounts().update_bank_account(&c, &id, extra).await?;
    Ok(V2Ok::json("Bank account updated", View::from(&a)))
}

#[utoipa::path(delete, path = "/bank-accounts/{id}", tag = "v2 bank accounts",
    summary = "Delete an account",
    params(("id" = String, Path, description = "Account id")),
    responses((status = 200, description = "Deleted", body = V2Ok<Deleted>), AccountNotFound))]
async fn remove(
    State(svc): State<Services>,
    Path(id): Path<BankAccountId>,
    Authed(c): Authed,
) -> Result<Json<V2Ok<Deleted>>, ApiError> {
    svc.accounts().delete_bank_account(&c, &id).await?;
    let id = id.as_str().trim().to_string();
    Ok(V2Ok::json("Bank account deleted", Deleted { id }))
}
