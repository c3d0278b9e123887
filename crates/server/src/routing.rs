//! The connector router from the configuration: `[connectors.*]` and `[routing]` become
//! `connectors` specs; the built-in ledgers are the connector `sandbox`.

use config::Config;
use connectors::{Connector, ConnectorSpec, RouteSpec, Router, RoutingSpec};
use domain::Clock;
use egress::operator::OperatorTls;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Builds the router. Every outbound call goes through the operator client (`[outbound]`
/// proxy, https unless loopback — checked when the configuration was validated); `ledger` is
/// the connector of kind `sandbox`.
pub fn build(
    cfg: &Config,
    ledger: Arc<dyn Connector>,
    clock: Arc<dyn Clock>,
    metrics: metrics::Metrics,
) -> anyhow::Result<Router> {
    let mut specs = Vec::new();
    // Connectors with their own TLS settings (mTLS, an extra root) get their own client.
    let mut own_tls: HashMap<String, (OperatorTls, bool)> = HashMap::new();
    for (name, c) in &cfg.connectors {
        let at = |key: &str| format!("connectors.{name}.{key}");
        // Validation refused a connector without a kind; a kind it accepts is built below.
        let kind = c
            .kind
            .ok_or_else(|| anyhow::anyhow!("{}: is required", at("kind")))?;
        let mut spec =
            ConnectorSpec::new(name.clone(), kind, c.base_url.clone().unwrap_or_default());
        if let Some(k) = &c.api_key {
            spec = spec.with_api_key(k.expose());
        }
        if let (Some(id), Some(secret)) = (&c.client_id, &c.client_secret) {
            spec = spec.with_client(id.clone(), secret.expose());
        }
        spec.api_secret = c.api_secret.as_ref().map(|s| s.expose().into());
        spec.timeout = c.timeout();
        spec.max_concurrency = c.max_concurrency.max(1) as usize;
        spec.breaker_failures = c.breaker_failures.max(1);
        spec.breaker_cooldown = c.breaker_cooldown();
        if let Some(p) = &c.token_path {
            spec.token.path = p.clone();
        }
        if let Some(codes) = &c.not_found_codes {
            spec.not_found_codes = codes.iter().map(|c| c.trim().to_string()).collect();
        }
        spec.sandbox_fixture = c.sandbox_fixture;
        if c.test_mode {
            // banks.md 1.2/1.3 [S]: the sandbox wants these; production ignores nothing else.
            spec.headers.push(("x-test-mode".into(), "true".into()));
            spec.token.headers = vec![
                ("x-test-mode".into(), "true".into()),
                ("env-id".into(), "OAUTH2".into()),
            ];
        }
        if let Some(env) = &c.verify_env_id {
            spec.headers.push(("env-id".into(), env.clone()));
        }
        let mut tls = OperatorTls::default();
        if let (Some(cert), Some(key)) = (&c.client_cert, &c.client_key) {
            let mut pem = std::fs::read(cert)
                .map_err(|e| anyhow::anyhow!("{}: cannot read {cert}: {e}", at("client_cert")))?;
            if !pem.ends_with(b"\n") {
                pem.push(b'\n');
            }
            pem.extend_from_slice(key.expose().as_bytes());
            pem.push(b'\n');
            tls.identity_pem = Some(pem);
        }
        if let Some(ca) = &c.ca_file {
            let pem = std::fs::read(ca)
                .map_err(|e| anyhow::anyhow!("{}: cannot read {ca}: {e}", at("ca_file")))?;
            tls.extra_roots_pem = Some(pem);
        }
        if tls.identity_pem.is_some() || tls.extra_roots_pem.is_some() {
            let has_cert = tls.identity_pem.is_some();
            own_tls.insert(name.clone(), (tls, has_cert));
        }
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
    let mut builder = Router::builder(client, clock.clone())
        .sandbox(ledger)
        .metrics(metrics);
    let outbound = cfg.outbound_settings()?;
    for spec in specs {
        let Some((tls, has_cert)) = own_tls.remove(&spec.name) else {
            builder = builder.spec(spec);
            continue;
        };
        let client = egress::operator::operator_client_with_identity(&outbound, longest, &tls)
            .map_err(|e| {
                let key = if has_cert { "client_cert" } else { "ca_file" };
                anyhow::anyhow!("connectors.{}.{key}: {e}", spec.name)
            })?;
        // `sandbox` is not built here: its owner supplied it above.
        let Some(connector) = spec.kind.connector(&spec, client, clock.clone(), has_cert) else {
            builder = builder.spec(spec);
            continue;
        };
        builder = builder.connector(spec, connector);
    }
    builder.build(routing).map_err(anyhow::Error::msg)
}
