//! The connector router from the configuration: `[connectors.*]` and `[routing]` become
//! `connectors` specs; the built-in ledgers are the connector `sandbox`.

use config::{Config, ConnectorKind};
use connectors::{ConnectorSpec, Kind, RouteSpec, Router, RoutingSpec, SandboxConnector};
use domain::Clock;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Builds the router. Every outbound call goes through the operator client (`[outbound]`
/// proxy, https unless loopback — checked when the configuration was validated).
pub fn build(
    cfg: &Config,
    sandbox: Arc<gateway::SandboxBank>,
    wallet: Arc<gateway::SandboxWallet>,
    clock: Arc<dyn Clock>,
) -> Result<Router, String> {
    let mut specs = Vec::new();
    for (name, c) in &cfg.connectors {
        let at = |key: &str| format!("connectors.{name}.{key}");
        let kind = match c.kind {
            Some(ConnectorKind::EasySlip) => Kind::EasySlip,
            Some(ConnectorKind::Sandbox) => Kind::Sandbox,
            Some(ConnectorKind::Scb) => Kind::Scb,
            Some(other) => {
                return Err(format!(
                    "{}: the {other:?} connector is not available in this version",
                    at("kind")
                ))
            }
            None => return Err(format!("{}: is required", at("kind"))),
        };
        let mut spec =
            ConnectorSpec::new(name.clone(), kind, c.base_url.clone().unwrap_or_default());
        if let Some(k) = &c.api_key {
            spec = spec.with_api_key(k.expose());
        }
        if let (Some(id), Some(secret)) = (&c.client_id, &c.client_secret) {
            spec = spec.with_client(id.clone(), secret.expose());
        }
        spec.api_secret = c.api_secret.as_ref().map(|s| s.expose().into());
        spec.not_found_codes = c.not_found_codes.clone();
        spec.timeout = c.timeout();
        spec.max_concurrency = c.max_concurrency.max(1) as usize;
        spec.breaker_failures = c.breaker_failures.max(1);
        spec.breaker_cooldown = c.breaker_cooldown();
        specs.push(spec);
    }
    let route = |r: &config::Route| RouteSpec {
        connectors: r.connectors.clone(),
        fallback_on_not_found: r.fallback_on_not_found,
    };
    let mut by_bank = HashMap::new();
    for (key, r) in &cfg.routing.0 {
        if key != config::ROUTE_DEFAULT && key != config::ROUTE_TRUEWALLET {
            by_bank.insert(key.clone(), route(r));
        }
    }
    let routing = RoutingSpec {
        by_bank,
        default: route(cfg.routing.for_bank(config::ROUTE_DEFAULT)),
        truewallet: route(cfg.routing.truewallet()),
    };
    // The client's own timeout only backs up each connector's (the router enforces those).
    let longest = specs
        .iter()
        .map(|s| s.timeout)
        .max()
        .unwrap_or(Duration::from_secs(5));
    let client = egress::operator::operator_client(&cfg.outbound_settings()?, longest)?;
    let mut builder =
        Router::builder(client, clock).sandbox(SandboxConnector::new(sandbox, Some(wallet)));
    for spec in specs {
        builder = builder.spec(spec);
    }
    builder.build(routing)
}
