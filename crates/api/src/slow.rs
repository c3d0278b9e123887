//! Bodies that did not arrive in time: the accept loop (`edge`) ends every request body at its
//! deadline; here that becomes the one `body: was not received within …` validation error.

use domain::Error;

/// The error for a body cut off at `limit`.
pub(crate) fn too_slow(limit: edge::BodyTimedOut) -> Error {
    let d = limit.0;
    let within = if d.subsec_millis() == 0 {
        format!("{} seconds", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    };
    Error::invalid("body", format!("was not received within {within}"))
}

/// A body read failed: the deadline's error when that is the cause, else `otherwise`.
pub(crate) fn read_failed(e: &axum::Error, otherwise: Error) -> Error {
    match edge::BodyTimedOut::find(e) {
        Some(t) => too_slow(*t),
        None => otherwise,
    }
}

/// For readers whose own errors hide the cause (multipart): the request's deadline, if it
/// passed, explains the failure.
pub(crate) fn explain<E: From<Error>>(deadline: Option<&edge::BodyDeadline>, e: E) -> E {
    match deadline.and_then(edge::BodyDeadline::expired) {
        Some(t) => too_slow(t).into(),
        None => e,
    }
}
