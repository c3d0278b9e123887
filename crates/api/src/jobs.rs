//! `/v2/verify/bank/async`, `/batch` and `/jobs/:jobId` (spec 3, 4.1, 6): thin handlers over
//! `services::jobs`. An accepted submission answers `202 Accepted` with the job ids.

use crate::authed::Authed;
use crate::body::json_object;
use crate::error::{Answer, ApiError};
use crate::path::Path;
use crate::responses::SubmitErrors;
use crate::routing::Routes;
use crate::submitted::Submitted;
use crate::v2::{json_request, submit_once};
use crate::wire::v2::{AsyncRequest, BatchAccepted, BatchRequest, Job, JobAccepted, VerifyForm};
use crate::wire::{ErrorBody, V2Ok};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::Json;
use domain::Error;
use serde_json::Value;
use services::input::SlipInput;
use services::jobs::MAX_BATCH;
use services::verify::VerifyRequest;
use services::Services;
use utoipa_axum::router::UtoipaMethodRouterExt;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new()
        .api(
            routes!(submit_one)
                .layer(axum::extract::DefaultBodyLimit::disable())
                .layer(axum::middleware::from_fn(crate::attempts::async_bank)),
        )
        .api(
            routes!(submit_batch)
                .layer(axum::extract::DefaultBodyLimit::disable())
                .layer(axum::middleware::from_fn(crate::attempts::async_bank)),
        )
        .api(routes!(poll))
}

/// One slip of a submission: its input as sent, with its options.
fn slip(s: Submitted) -> VerifyRequest<SlipInput> {
    s.options.verify(s.input)
}

#[utoipa::path(post, path = "/verify/bank/async", tag = "v2 async",
    summary = "Submit one slip for asynchronous verification; the result is POSTed to callbackUrl",
    description = "Images are read and URLs fetched at submission; the job stores only the QR text. The multipart form also takes `callbackUrl`.",
    request_body(content(
        (AsyncRequest = "application/json"),
        (VerifyForm = "multipart/form-data"))),
    responses(
        (status = 202, description = "Accepted", body = V2Ok<JobAccepted>),
        SubmitErrors))]
async fn submit_one(State(svc): State<Services>, Authed(c): Authed, req: Request) -> Answer {
    let svc = &svc;
    submit_once(
        svc,
        c,
        req,
        "v2.verify.bank.async",
        |c, claim, mut sub, slot| async move {
            // Held through submission: images are read and URLs fetched when the job is submitted.
            let _slot = slot;
            let callback = sub.options.callback_url.take();
            let done = svc
                .jobs()
                .submit_jobs(&c, claim, vec![slip(sub)], callback, false)
                .await?;
            let id = done
                .job_ids
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            Ok::<_, ApiError>((
                StatusCode::ACCEPTED,
                V2Ok::json(
                    "Job accepted",
                    JobAccepted {
                        job_id: id,
                        batch_id: None,
                        status: "queued",
                    },
                ),
            ))
        },
    )
    .await
}

#[utoipa::path(post, path = "/verify/bank/batch", tag = "v2 async",
    summary = "Submit 1-100 slips at once (one job each, one batchId); all or nothing",
    request_body(content((BatchRequest = "application/json"))),
    responses(
        (status = 202, description = "Accepted", body = V2Ok<BatchAccepted>),
        (status = 400, description = "VALIDATION_ERROR, INVALID_CALLBACK_URL", body = ErrorBody)))]
/// `{slips: [{payload | base64 | url, checkDuplicate?, matchAmount?, remark?}], callbackUrl?}`.
async fn submit_batch(State(svc): State<Services>, Authed(c): Authed, req: Request) -> Answer {
    let key = crate::idempotency::key(req.headers())?;
    let slot = crate::body::upload_slot(&svc, &c, req.headers()).await;
    // The whole batch is one JSON body of at most `MAX_BODY_BYTES` (slips with large Base64
    // images belong in single async submissions or behind URLs).
    let map = tokio::time::timeout(crate::body::BODY_DEADLINE, json_object(req.into_body()))
        .await
        .map_err(|_| crate::body::body_too_slow())??;
    // The same `callbackUrl` rule as a single submission's, before the slips.
    let mut f = crate::request::Fields::of::<BatchRequest>(&map);
    let callback = f.callback_url();
    f.finish()?;
    let items = match map.get("slips") {
        Some(Value::Array(a)) if !a.is_empty() && a.len() <= MAX_BATCH => a,
        Some(Value::Array(_)) => {
            return Err(Error::invalid("slips", format!("must hold 1 to {MAX_BATCH} slips")).into())
        }
        _ => return Err(Error::invalid("slips", "is required (a list of slips)").into()),
    };
    let mut slips = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(obj) = item else {
            return Err(Error::invalid(format!("slips[{i}]"), "must be an object").into());
        };
        if obj.contains_key(crate::request::CALLBACK_URL) {
            return Err(Error::invalid(
                format!("slips[{i}].callbackUrl"),
                "set callbackUrl once, for the whole batch",
            )
            .into());
        }
        let sub = json_request(obj).map_err(|e| match e {
            // The slip is the field; its own failures, as text, the reason.
            Error::Validation(_) => Error::invalid(format!("slips[{i}]"), e.public_message()),
            other => Error::invalid(
                format!("slips[{i}]"),
                format!("{}: {}", other.code(), other.public_message()),
            ),
        })?;
        slips.push(sub);
    }
    let key = key.map(|k| {
        let mut f = crate::idempotency::Fingerprint::new("v2.verify.bank.batch");
        f.opt("callbackUrl", callback.as_deref());
        for s in &slips {
            s.add_to(&mut f);
        }
        (k, f.finish())
    });
    let slips: Vec<_> = slips.into_iter().map(slip).collect();
    let svc = &svc;
    Ok(crate::idempotency::once(svc, c, key, |c, key| async move {
        // URLs are fetched one after another at submission: one slot for the batch.
        let any_url = slips.iter().any(|s| matches!(s.slip, SlipInput::Url(_)));
        let _slot = crate::body::slot_for_url(svc, &c, slot, any_url).await;
        let done = svc
            .jobs()
            .submit_jobs(&c, key, slips, callback, true)
            .await?;
        Ok::<_, ApiError>((
            StatusCode::ACCEPTED,
            V2Ok::json(
                "Batch accepted",
                BatchAccepted {
                    batch_id: done.batch_id.map(String::from),
                    count: done.job_ids.len(),
                    job_ids: done.job_ids.into_iter().map(String::from).collect(),
                },
            ),
        ))
    })
    .await)
}

#[utoipa::path(get, path = "/verify/bank/jobs/{job_id}", tag = "v2 async",
    summary = "Poll a job (kept 7 days)",
    params(("job_id" = String, Path, description = "The jobId of the submission")),
    responses(
        (status = 200, description = "The job", body = V2Ok<Job>),
        (status = 404, description = "JOB_NOT_FOUND", body = ErrorBody)))]
async fn poll(
    State(svc): State<Services>,
    Path(job_id): Path<domain::JobId>,
    Authed(c): Authed,
) -> Result<Json<V2Ok<Job>>, ApiError> {
    let job = svc.jobs().job(&c, &job_id).await?;
    Ok(V2Ok::json("Job retrieved", Job::from(&job)))
}
