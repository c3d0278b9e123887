//! The one path-id extractor: `Path(id): Path<String>` (or an id type: `Path<ServiceId>`) as
//! with axum's, but a bad id becomes `VALIDATION_ERROR` naming the parameter (U+0000 included:
//! PostgreSQL text cannot hold it).

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use domain::Error;

pub(crate) struct Path<T>(pub T);

impl<S: Send + Sync, T: From<String>> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let bad = |why: &str| ApiError(Error::invalid("path", why));
        let axum::extract::Path(pairs) =
            axum::extract::Path::<Vec<(String, String)>>::from_request_parts(parts, state)
                .await
                .map_err(|_| bad("is not valid UTF-8"))?;
        let (name, value) = pairs.into_iter().next().ok_or_else(|| bad("is missing"))?;
        crate::body::no_nul(&name, &value)?;
        Ok(Path(T::from(value)))
    }
}

/// Every path parameter in order (`/b2b/branches/{branchId}/bank-accounts/{bankAccountId}`),
/// each checked as [`Path`] checks its one.
pub(crate) struct PathIds(pub Vec<String>);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let axum::extract::Path(pairs) =
            axum::extract::Path::<Vec<(String, String)>>::from_request_parts(parts, state)
                .await
                .map_err(|_| ApiError(Error::invalid("path", "is not valid UTF-8")))?;
        for (name, value) in &pairs {
            crate::body::no_nul(name, value)?;
        }
        Ok(PathIds(pairs.into_iter().map(|(_, v)| v).collect()))
    }
}
