//! What the services count for Prometheus (the registry and names are in the `metrics` crate),
//! and the values a scrape reads from the database and the connector router.

pub use crate::handles::Status;
use ::metrics::Metrics;
use domain::Error;

/// A refusal by authentication or the rate limit, not a failure of ours (a database error
/// is an internal error, a disabled admin API is "not found", a malformed header is a
/// validation error).
fn is_refusal(e: &Error) -> bool {
    !matches!(
        e,
        Error::Internal(_) | Error::NotFound | Error::Validation(_)
    )
}

pub(crate) fn count_auth_refusal(metrics: &Metrics, e: &Error) {
    if is_refusal(e) {
        metrics.auth_refused(e.code());
    }
}

pub(crate) fn count_rate_refusal(metrics: &Metrics, e: &Error) {
    if is_refusal(e) {
        metrics.rate_limited(e.code());
    }
}

impl Status<'_> {
    /// Each connector as operators see it (`GET /admin/connectors`): state, last error,
    /// counts, median latency; never a secret.
    pub fn connector_status(&self) -> Vec<connectors::ConnectorStatus> {
        self.router.status()
    }

    /// Reaches each connector (a token request where there is one) and verifies nothing.
    pub async fn check_connectors(&self) -> Vec<connectors::ConnectorCheck> {
        self.router.check_report().await
    }

    /// What a scrape reads at the moment it runs: job counts from the database (`None` when
    /// it cannot be read) and each connector's breaker state on this node.
    pub async fn scraped(
        &self,
    ) -> (
        Option<Vec<::metrics::JobCount>>,
        Vec<(String, &'static str)>,
    ) {
        let jobs = match self.store.job_counts().await {
            Ok(rows) => Some(
                rows.into_iter()
                    .map(|(kind, state, count)| ::metrics::JobCount { kind, state, count })
                    .collect(),
            ),
            Err(e) => {
                tracing::warn!(error = %e, "metrics: cannot read job counts");
                None
            }
        };
        let breakers = self
            .connector_status()
            .into_iter()
            .map(|c| {
                let state = match c.state {
                    connectors::BreakerState::Closed => "closed",
                    connectors::BreakerState::Open => "open",
                    connectors::BreakerState::HalfOpen => "half_open",
                };
                (c.name, state)
            })
            .collect();
        (jobs, breakers)
    }
}

/// One webhook POST (`jobs.rs`' `deliver`), by how it ended.
pub(crate) fn count_delivery(
    metrics: &Metrics,
    sent: &Result<u16, egress::EgressError>,
    took: std::time::Duration,
) {
    use egress::EgressError as E;
    let outcome = match sent {
        Ok(status) if (200..300).contains(status) => "delivered",
        Ok(_) => "http_error",
        Err(E::Timeout) => "timeout",
        Err(E::InvalidIpRange) => "refused_address",
        Err(E::ProtocolNotAllowed | E::InvalidUrl) => "invalid_url",
        Err(E::Unreachable(_) | E::Status(_) | E::TooLarge | E::TooManyRedirects | E::Setup(_)) => {
            "connection_failed"
        }
    };
    metrics.webhook_delivery(outcome, took);
}
