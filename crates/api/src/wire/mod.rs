//! The wire: every JSON body the API answers (and the request bodies it documents), defined
//! once. Handlers build these types and the OpenAPI schemas are derived from them, so the
//! document and the bytes cannot drift apart. Field order is the order on the wire
//! (`serde_json` keeps declaration order); `Option` fields answer `null` unless marked
//! `skip_serializing_if`, in which case they are left out. Kept in one module, by family, so
//! the contract reads in one place and the CLI shares the admin views.
//!
//! A request body is one type here: `ToSchema` documents it with the limits on its fields, and
//! its `request::Request` impl (beside it) parses it against those limits, collecting every
//! failure into one `VALIDATION_ERROR`.

pub mod admin;
pub mod v1;
pub mod v2;

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

/// `{success: true, message, data}`: the `/v2` success envelope.
#[derive(Debug, Serialize, ToSchema)]
pub struct V2Ok<T> {
    pub success: bool,
    pub message: &'static str,
    pub data: T,
}

impl<T> V2Ok<T> {
    pub fn json(message: &'static str, data: T) -> Json<Self> {
        Json(V2Ok {
            success: true,
            message,
            data,
        })
    }
}

/// `{success: true, data}`: the admin and partner success envelope, and `/health`'s.
#[derive(Debug, Serialize, ToSchema)]
pub struct Plain<T> {
    pub success: bool,
    pub data: T,
}

impl<T> Plain<T> {
    pub fn json(data: T) -> Json<Self> {
        Json(Plain {
            success: true,
            data,
        })
    }
}

/// `{status: 200, data}`: the `/api/v1` success envelope.
#[derive(Debug, Serialize, ToSchema)]
pub struct V1Ok<T> {
    /// Always 200.
    pub status: u16,
    pub data: T,
}

impl<T> V1Ok<T> {
    pub fn json(data: T) -> Json<Self> {
        Json(V1Ok { status: 200, data })
    }
}

/// v2 error envelope: `{success: false, error: {code, message}}` (written by `error.rs`).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Always `false`.
    pub success: bool,
    pub error: ErrorDetail,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// One of the codes listed for the response (e.g. `VALIDATION_ERROR`).
    pub code: String,
    /// Human-readable; for `VALIDATION_ERROR` `field: reason; field: reason`.
    pub message: String,
}

/// v1 error envelope: `{status, message: <code>, data?}`, `status` equal to the HTTP status
/// (written by `v1/error.rs`).
#[derive(Debug, Serialize, ToSchema)]
pub struct V1ErrorBody {
    pub status: u16,
    /// The v1 code (e.g. `unauthorized`, `invalid_request`).
    pub message: String,
    /// `invalid_request` and the QR codes: `{errors: [{field, message}]}`; `duplicate_slip`:
    /// the earlier slip `{transRef, date, amount, verifiedAt, sendingBank}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<serde_json::Value>,
}

/// `GET /health`'s data.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`
    pub status: &'static str,
}
