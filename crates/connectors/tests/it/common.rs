//! Helpers both connector test modules use: an EasySlip spec for a simulator, routing to a
//! list of connectors, and the causes of "unavailable" every connector kind must fall back on.

use connectors::{ConnectorSpec, Kind, RouteSpec, RoutingSpec};
use sim::{Fault, Sim};
use std::time::Duration;

/// An EasySlip connector named `name` on the simulator, with a 10 s timeout.
pub fn easyslip(name: &str, sim: &Sim, api_key: &str) -> ConnectorSpec {
    let mut s = ConnectorSpec::new(name, Kind::EasySlip, sim.base_url()).with_api_key(api_key);
    s.timeout = Duration::from_secs(10);
    s
}

/// Bank and wallet slips both go to `connectors`, in order.
pub fn routing(connectors: &[&str]) -> RoutingSpec {
    RoutingSpec {
        by_bank: Default::default(),
        default: RouteSpec::new(connectors.iter().copied()),
        truewallet: RouteSpec::new(connectors.iter().copied()),
    }
}

/// The faults that make any connector unavailable, and the outcome each is recorded as.
pub fn unavailable_causes() -> Vec<(Fault, &'static str)> {
    vec![
        (Fault::Status(503), "server_error"),
        (Fault::Status(500), "server_error"),
        (Fault::Status(429), "rate_limited"),
        (Fault::Malformed, "malformed"),
        (Fault::Truncated, "malformed"),
        (Fault::OtherReference, "mismatch"),
    ]
}
