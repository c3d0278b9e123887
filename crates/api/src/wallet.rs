//! `POST /v2/verify/truewallet`: a TrueMoney Wallet slip by payload, image, Base64 or URL.

use crate::authed::Authed;
use crate::error::{Answer, ApiError};
use crate::responses::VerifyWalletErrors;
use crate::routing::Routes;
use crate::v2::submit_once;
use crate::wire::v2::{VerifyBody, VerifyForm};
use crate::wire::V2Ok;
use axum::extract::{Request, State};
use services::Services;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new().api(
        routes!(verify_truewallet)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .layer(axum::middleware::from_fn(crate::attempts::v2_wallet)),
    )
}

#[utoipa::path(post, path = "/verify/truewallet", tag = "v2",
    summary = "Verify a TrueMoney Wallet slip by payload, image, Base64 or URL",
    request_body(content(
        (VerifyBody = "application/json"),
        (VerifyForm = "multipart/form-data"))),
    responses(
        (status = 200, description = "The verified slip", body = V2Ok<domain::model::VerifyWalletData>),
        VerifyWalletErrors))]
async fn verify_truewallet(State(svc): State<Services>, Authed(c): Authed, req: Request) -> Answer {
    let svc = &svc;
    submit_once(
        svc,
        c,
        req,
        "v2.verify.truewallet",
        |c, claim, sub, slot| async move {
            let slip = svc.slips().truemoney_slip(&c, sub.input).await?;
            drop(slot);
            // `matchAccount` compares the receiver with the branch's `TRUEMONEY` accounts.
            let req = sub.options.verify(slip).keyed(claim);
            let data = svc.verify().verify_truewallet(&c, &req).await?;
            Ok::<_, ApiError>(V2Ok::json("Slip verified", data))
        },
    )
    .await
}
