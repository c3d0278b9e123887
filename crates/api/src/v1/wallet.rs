//! `POST /api/v1/verify/truewallet`: a TrueMoney Wallet slip, with v1's inputs (JSON
//! `payload | url | data | image`, or multipart `file`) and envelope.

use super::error::V1Error;
use super::{earlier, plain_request, unreadable};
use crate::authed::AuthedV1;
use crate::responses::V1WalletErrors;
use crate::wire::v1::{V1VerifyForm, V1VerifyRequest};
use crate::wire::V1Ok;
use axum::extract::State;
use axum::Json;
use domain::model::RawWalletSlip;
use services::input::SlipInput;
use services::wallet::TRUEMONEY;
use services::Services;

#[utoipa::path(post, path = "/verify/truewallet", tag = "v1",
    summary = "Verify a TrueMoney Wallet slip by payload, image URL, Base64 or file upload",
    request_body(content(
        (V1VerifyRequest = "application/json"),
        (V1VerifyForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "The verified slip", body = V1Ok<RawWalletSlip>),
        V1WalletErrors))]
pub(super) async fn verify_truewallet(
    State(svc): State<Services>,
    AuthedV1(c): AuthedV1,
    req: axum::extract::Request,
) -> Result<Json<V1Ok<RawWalletSlip>>, V1Error> {
    let slot = crate::body::upload_slot(&svc, &c, req.headers()).await;
    let request = super::request_input(req).await?;
    let is_url = matches!(request.input, SlipInput::Url(_));
    let slot = crate::body::slot_for_url(&svc, &c, slot, is_url).await;
    let unreadable = unreadable(&request.input);
    c.trace.input(request.input.kind(request.base64));
    let slip = svc
        .slips()
        .truemoney_slip(&c, request.input)
        .await
        .map_err(unreadable)?;
    drop(slot);
    if request.options.check_duplicate {
        // Before the wallet and the charge: a re-sent slip costs no quota.
        if let Some(dup) = earlier(&svc, &c, TRUEMONEY, &slip.transaction_id).await? {
            return Err(dup);
        }
    }
    let data = svc
        .verify()
        .verify_truewallet(
            &c,
            &plain_request(slip.clone(), request.options.check_duplicate),
        )
        .await?;
    if data.is_duplicate {
        if let Some(dup) = earlier(&svc, &c, TRUEMONEY, &slip.transaction_id).await? {
            return Err(dup);
        }
    }
    Ok(V1Ok::json(data.raw_slip))
}
