//! What the services count for Prometheus (the registry and names are in the `metrics` crate),
//! and the values a scrape reads from the database and the connector router.

use crate::Services;
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

impl Services {
    /// This node's registry: every event is counted into it, `/metrics` renders it.
    pub fn metrics(&self) -> &::metrics::Metrics {
        &self.metrics
    }

    /// A registry of the wiring's (`server`, which also serves it); the default is private.
    pub fn set_metrics(&mut self, m: ::metrics::Metrics) {
        self.charger.metrics = m.clone();
        self.metrics = m;
        self.respace();
    }

    pub(crate) fn count_auth_refusal(&self, e: &Error) {
        if is_refusal(e) {
            self.metrics.auth_refused(e.code());
        }
    }

    pub(crate) fn count_rate_refusal(&self, e: &Error) {
        if is_refusal(e) {
            self.metrics.rate_limited(e.code());
        }
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

impl Services {
    /// One webhook POST (`jobs.rs`' `deliver`), by how it ended.
    pub(crate) fn count_delivery(
        &self,
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
            Err(
                E::Unreachable(_) | E::Status(_) | E::TooLarge | E::TooManyRedirects | E::Setup(_),
            ) => "connection_failed",
        };
        self.metrics.webhook_delivery(outcome, took);
    }
}
