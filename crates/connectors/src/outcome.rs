//! What a connector says, with the reasons it could not say anything kept apart for logs and
//! metrics.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    Found(T),
    NotFound,
    /// Known but not confirmable yet (Bangkok Bank's first minutes).
    Pending,
    /// Older than the source keeps.
    Expired,
    Unavailable(Unavailable),
}

impl<T> Outcome<T> {
    pub fn unavailable(cause: Cause, detail: impl Into<String>) -> Self {
        Outcome::Unavailable(Unavailable::new(cause, detail))
    }

    pub fn is_unavailable(&self) -> bool {
        matches!(self, Outcome::Unavailable(_))
    }

    /// A short label for logs and metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Found(_) => "found",
            Outcome::NotFound => "not_found",
            Outcome::Pending => "pending",
            Outcome::Expired => "expired",
            Outcome::Unavailable(u) => u.cause.as_str(),
        }
    }
}

/// Why a connector gave no answer. Every one of these makes the router try the next connector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    Timeout,
    /// Could not connect, or the connection broke before headers.
    Connect,
    /// HTTP 429.
    RateLimited,
    /// HTTP 5xx.
    ServerError(u16),
    /// Another unexpected status (401 after a refresh, 403, 400, ...).
    Status(u16),
    /// Not the wire format we expect: bad JSON, missing fields, cut-short or oversize body,
    /// an error code we do not know.
    Malformed,
    /// The answer was about another reference or bank than the one asked.
    Mismatch,
    /// Skipped: the circuit breaker is open.
    BreakerOpen,
    /// Skipped: the concurrency cap is full.
    Saturated,
    /// The connector cannot answer this kind of question (e.g. no wallet support).
    Unsupported,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Timeout => "timeout",
            Cause::Connect => "connect",
            Cause::RateLimited => "rate_limited",
            Cause::ServerError(_) => "server_error",
            Cause::Status(_) => "status",
            Cause::Malformed => "malformed",
            Cause::Mismatch => "mismatch",
            Cause::BreakerOpen => "breaker_open",
            Cause::Saturated => "saturated",
            Cause::Unsupported => "unsupported",
        }
    }

    /// Whether this counts against the connector's breaker. Skips are our own doing, and a
    /// connector that cannot answer a kind of question is not failing.
    pub fn is_failure(self) -> bool {
        !matches!(
            self,
            Cause::BreakerOpen | Cause::Saturated | Cause::Unsupported
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub cause: Cause,
    /// For logs only; never holds a secret or a URL.
    pub detail: String,
}

impl Unavailable {
    pub fn new(cause: Cause, detail: impl Into<String>) -> Self {
        Self {
            cause,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.cause {
            Cause::ServerError(s) | Cause::Status(s) => {
                write!(f, "{} {s}: {}", self.cause.as_str(), self.detail)
            }
            c => write!(f, "{}: {}", c.as_str(), self.detail),
        }
    }
}
