//! Tries a route's connectors in order. Each connector sits behind a timeout, a concurrency
//! cap (full → skipped, never queued) and a circuit breaker; the next connector is asked only
//! when one is unavailable, or says "not found" on a route with `fallback_on_not_found`.

use crate::breaker::{self, Breaker, Permit};
use crate::outcome::{Cause, Outcome, Unavailable};
use crate::spec::{ConnectorSpec, Kind, RouteSpec, RoutingSpec};
use crate::{Connector, SlipQuery, WalletQuery};
use domain::model::{Transfer, WalletTransfer};
use domain::Clock;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Latencies kept per connector for the median in [`ConnectorStatus`].
const LATENCY_WINDOW: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

/// One connector as operators see it (`GET /admin/connectors` and the CLI).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorStatus {
    pub name: String,
    pub kind: String,
    pub state: BreakerState,
    /// Cause and detail of the last failure; never a secret or a URL.
    pub last_error: Option<String>,
    pub calls: u64,
    pub failures: u64,
    pub median_latency_ms: Option<u64>,
}

/// Why the connectors and routes given cannot make a router (said to the operator as it is).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BuildError(pub String);

/// One connector's `check`: reached or why not, and whether a client certificate went with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectorCheck {
    pub name: String,
    pub kind: String,
    /// `Ok` when the source answered (a token was issued); the error never holds a secret.
    pub result: Result<(), crate::CheckFailed>,
    /// A client certificate is configured and went with the call: with a server that
    /// requires one (KBank production), a successful check proves it was accepted.
    pub client_certificate: bool,
}

/// Who was asked and what each said, in order (for logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub connector: String,
    /// [`Outcome::label`]: `found`, `not_found`, `timeout`, `breaker_open`, ...
    pub outcome: &'static str,
}

/// An answer with the name of the connector that gave it (`None` when none could).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed<A> {
    pub answer: A,
    pub source: Option<String>,
    pub attempts: Vec<Attempt>,
}

struct Slot {
    name: String,
    kind: &'static str,
    connector: Arc<dyn Connector>,
    timeout: Duration,
    cap: Arc<Semaphore>,
    breaker: Mutex<Breaker>,
    calls: AtomicU64,
    failures: AtomicU64,
    last_error: Mutex<Option<String>>,
    latencies: Mutex<VecDeque<u64>>,
    /// Skip the "answered for another reference" check (`sandbox_fixture`).
    any_reference: bool,
    /// Calls by outcome and their duration (`slipverify_connector_*`).
    metrics: metrics::Metrics,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic elsewhere while holding these small locks leaves valid data; carry on.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Gives a half-open probe back if the lookup is dropped before it reports.
struct PermitGuard<'a> {
    slot: &'a Slot,
    permit: Option<Permit>,
}

impl Drop for PermitGuard<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.permit.take() {
            lock(&self.slot.breaker).on_abandon(p);
        }
    }
}

impl Slot {
    /// Ask this connector once, with its cap, breaker and timeout.
    async fn ask<T, F>(&self, clock: &dyn Clock, call: F) -> Outcome<T>
    where
        F: std::future::Future<Output = Outcome<T>>,
    {
        // A burst waits for a seat, but at most half a call's timeout: then the next
        // connector is tried (bounded in time; the number of waiters is bounded by the
        // requests in flight).
        let Ok(Ok(_seat)) =
            tokio::time::timeout(self.timeout / 2, self.cap.clone().acquire_owned()).await
        else {
            self.metrics
                .connector_call(&self.name, Cause::Saturated.as_str(), None);
            return Outcome::unavailable(Cause::Saturated, "concurrency cap full");
        };
        let Some(permit) = lock(&self.breaker).try_acquire(clock.now()) else {
            self.metrics
                .connector_call(&self.name, Cause::BreakerOpen.as_str(), None);
            return Outcome::unavailable(Cause::BreakerOpen, "circuit open");
        };
        let mut guard = PermitGuard {
            slot: self,
            permit: Some(permit),
        };
        self.calls.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let out = match tokio::time::timeout(self.timeout, call).await {
            Ok(o) => o,
            Err(_) => Outcome::unavailable(Cause::Timeout, "no answer within the timeout"),
        };
        let took = started.elapsed();
        self.metrics
            .connector_call(&self.name, out.label(), Some(took));
        let ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
        {
            let mut l = lock(&self.latencies);
            if l.len() == LATENCY_WINDOW {
                l.pop_front();
            }
            l.push_back(ms);
        }
        let permit = guard.permit.take().unwrap_or(Permit { probe: false });
        match &out {
            Outcome::Unavailable(u) if u.cause.is_failure() => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                *lock(&self.last_error) = Some(u.to_string());
                lock(&self.breaker).on_failure(permit, clock.now());
                tracing::warn!(connector = %self.name, cause = u.cause.as_str(), detail = %u.detail, "connector unavailable");
            }
            Outcome::Unavailable(_) => lock(&self.breaker).on_abandon(permit),
            _ => lock(&self.breaker).on_success(permit),
        }
        out
    }

    fn status(&self) -> ConnectorStatus {
        let state = match lock(&self.breaker).state() {
            breaker::State::Closed { .. } => BreakerState::Closed,
            breaker::State::Open { .. } => BreakerState::Open,
            breaker::State::HalfOpen { .. } => BreakerState::HalfOpen,
        };
        let median_latency_ms = {
            let mut v: Vec<u64> = lock(&self.latencies).iter().copied().collect();
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        ConnectorStatus {
            name: self.name.clone(),
            kind: self.kind.to_string(),
            state,
            last_error: lock(&self.last_error).clone(),
            calls: self.calls.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
            median_latency_ms,
        }
    }
}

pub struct Router {
    slots: HashMap<String, Arc<Slot>>,
    /// Status and checks list connectors in the order they were added.
    order: Vec<String>,
    routing: RoutingSpec,
    clock: Arc<dyn Clock>,
}

partial_debug!(Router { order as connectors, routing });

/// Builds a [`Router`]: connectors from specs (by kind) or ready-made ones, then the routing.
pub struct RouterBuilder {
    client: reqwest::Client,
    clock: Arc<dyn Clock>,
    sandbox: Option<Arc<dyn Connector>>,
    entries: Vec<(ConnectorSpec, Option<Arc<dyn Connector>>)>,
    metrics: metrics::Metrics,
}

impl RouterBuilder {
    /// `client` carries the operator's proxy and TLS rules; every HTTP connector uses it.
    pub fn new(client: reqwest::Client, clock: Arc<dyn Clock>) -> Self {
        Self {
            client,
            clock,
            sandbox: None,
            entries: Vec::new(),
            metrics: metrics::Metrics::default(),
        }
    }

    /// The registry the connectors' calls are counted into (default: a private one).
    pub fn metrics(mut self, m: metrics::Metrics) -> Self {
        self.metrics = m;
        self
    }

    /// The connector specs of kind `sandbox` stand for. A route naming `sandbox` with no spec
    /// of that name gets it with default limits.
    pub fn sandbox(mut self, c: Arc<dyn Connector>) -> Self {
        self.sandbox = Some(c);
        self
    }

    /// A connector built from its spec by kind.
    pub fn spec(mut self, spec: ConnectorSpec) -> Self {
        self.entries.push((spec, None));
        self
    }

    /// A ready connector with the limits (timeout, cap, breaker) of `spec`.
    pub fn connector(mut self, spec: ConnectorSpec, c: Arc<dyn Connector>) -> Self {
        self.entries.push((spec, Some(c)));
        self
    }

    /// Fails on duplicate names, unknown connectors in routes, or a sandbox spec without a
    /// sandbox.
    pub fn build(self, routing: RoutingSpec) -> Result<Router, BuildError> {
        let mut slots = HashMap::new();
        let mut order = Vec::new();
        let mut entries = self.entries;
        let named_in_routes = routing
            .by_bank
            .values()
            .chain([&routing.default, &routing.truewallet])
            .flat_map(|r| r.connectors.iter());
        if self.sandbox.is_some()
            && named_in_routes.clone().any(|n| n == "sandbox")
            && !entries.iter().any(|(s, _)| s.name == "sandbox")
        {
            entries.push((ConnectorSpec::new("sandbox", Kind::Sandbox, ""), None));
        }
        for (spec, ready) in entries {
            // Without a client identity: a kbank connector with mTLS is built by the caller
            // and added with `connector` (its client differs).
            let built = || {
                spec.kind
                    .connector(&spec, self.client.clone(), self.clock.clone(), false)
            };
            let connector: Arc<dyn Connector> = match ready.or_else(built) {
                Some(c) => c,
                None => self.sandbox.clone().ok_or_else(|| {
                    BuildError(format!(
                        "connector {}: kind sandbox needs the built-in ledger",
                        spec.name
                    ))
                })?,
            };
            if slots.contains_key(&spec.name) {
                return Err(BuildError(format!(
                    "connector {} is defined twice",
                    spec.name
                )));
            }
            let slot = Slot {
                name: spec.name.clone(),
                kind: connector.kind(),
                connector,
                timeout: spec.timeout,
                cap: Arc::new(Semaphore::new(spec.max_concurrency.max(1))),
                breaker: Mutex::new(Breaker::new(
                    spec.breaker_failures,
                    time::Duration::try_from(spec.breaker_cooldown)
                        .unwrap_or(time::Duration::seconds(30)),
                )),
                calls: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                last_error: Mutex::new(None),
                latencies: Mutex::new(VecDeque::with_capacity(LATENCY_WINDOW)),
                any_reference: spec.sandbox_fixture,
                metrics: self.metrics.clone(),
            };
            if spec.sandbox_fixture {
                tracing::warn!(connector = %spec.name, "sandbox_fixture: answers about another reference are accepted; never use this in production");
            }
            order.push(spec.name.clone());
            slots.insert(spec.name, Arc::new(slot));
        }
        for name in named_in_routes {
            if !slots.contains_key(name) {
                return Err(BuildError(format!(
                    "routing names unknown connector {name}"
                )));
            }
        }
        Ok(Router {
            slots,
            order,
            routing,
            clock: self.clock,
        })
    }
}

impl Router {
    pub fn builder(client: reqwest::Client, clock: Arc<dyn Clock>) -> RouterBuilder {
        RouterBuilder::new(client, clock)
    }

    /// Ask the route of `q.sending_bank`. An answer about another reference or bank than the
    /// one asked counts as unavailable, never as a confirmation.
    pub async fn route(&self, q: &SlipQuery) -> Routed<Outcome<Transfer>> {
        let route = self.routing.route_for(&q.sending_bank);
        self.walk(route, |slot| async move {
            // Checked inside `ask` so a mismatch counts against the breaker.
            let call = async {
                let out = slot.connector.lookup_bank(q).await;
                if slot.any_reference {
                    out
                } else {
                    check_bank(out, q)
                }
            };
            slot.ask(&*self.clock, call).await
        })
        .await
    }

    /// Ask the TrueMoney route. The wallet has no pending window: a pending or expired answer
    /// is "not found" for it.
    pub async fn route_wallet(&self, q: &WalletQuery) -> Routed<Outcome<WalletTransfer>> {
        let mut r = self
            .walk(&self.routing.truewallet, |slot| async move {
                let call = async { check_wallet(slot.connector.lookup_wallet(q).await, q) };
                slot.ask(&*self.clock, call).await
            })
            .await;
        if matches!(r.answer, Outcome::Pending | Outcome::Expired) {
            r.answer = Outcome::NotFound;
        }
        r
    }

    async fn walk<'a, T, F, Fut>(&'a self, route: &RouteSpec, ask: F) -> Routed<Outcome<T>>
    where
        F: Fn(&'a Slot) -> Fut,
        Fut: std::future::Future<Output = Outcome<T>>,
    {
        let mut attempts = Vec::new();
        let mut not_found_from: Option<String> = None;
        let mut last: Option<Unavailable> = None;
        for name in &route.connectors {
            // Build checked every name; a missing one is skipped rather than trusted.
            let Some(slot) = self.slots.get(name) else {
                continue;
            };
            let out = ask(slot).await;
            attempts.push(Attempt {
                connector: name.clone(),
                outcome: out.label(),
            });
            match out {
                Outcome::Unavailable(u) => last = Some(u),
                Outcome::NotFound if route.fallback_on_not_found => {
                    not_found_from.get_or_insert_with(|| name.clone());
                }
                definite => {
                    return Routed {
                        answer: definite,
                        source: Some(name.clone()),
                        attempts,
                    }
                }
            }
        }
        // A "not found" from one source outweighs another's outage: the slip stays
        // unconfirmed either way, and async jobs retry not-found slips.
        if let Some(name) = not_found_from {
            return Routed {
                answer: Outcome::NotFound,
                source: Some(name),
                attempts,
            };
        }
        let u = last.unwrap_or_else(|| Unavailable::new(Cause::Unsupported, "no connector"));
        Routed {
            answer: Outcome::Unavailable(Unavailable::new(
                u.cause,
                format!("every connector unavailable; last: {u}"),
            )),
            source: None,
            attempts,
        }
    }

    pub fn status(&self) -> Vec<ConnectorStatus> {
        self.order
            .iter()
            .filter_map(|n| self.slots.get(n))
            .map(|s| s.status())
            .collect()
    }

    /// Reach every connector (a token request where there is one); verifies no slip.
    pub async fn check_all(&self) -> Vec<(String, Result<(), crate::CheckFailed>)> {
        let mut out = Vec::new();
        for name in &self.order {
            let Some(slot) = self.slots.get(name) else {
                continue;
            };
            let r = match tokio::time::timeout(slot.timeout, slot.connector.check()).await {
                Ok(r) => r,
                Err(_) => Err("no answer within the timeout".into()),
            };
            out.push((name.clone(), r));
        }
        out
    }

    /// [`Router::check_all`] with each connector's kind and client-certificate use.
    pub async fn check_report(&self) -> Vec<ConnectorCheck> {
        let results = self.check_all().await;
        results
            .into_iter()
            .map(|(name, result)| {
                let slot = self.slots.get(&name);
                ConnectorCheck {
                    kind: slot.map_or("", |s| s.kind).to_string(),
                    client_certificate: slot.is_some_and(|s| s.connector.client_certificate()),
                    name,
                    result,
                }
            })
            .collect()
    }
}

fn check_bank(out: Outcome<Transfer>, q: &SlipQuery) -> Outcome<Transfer> {
    match out {
        Outcome::Found(t) if t.trans_ref != q.trans_ref || t.sender.bank_code != q.sending_bank => {
            Outcome::unavailable(
                Cause::Mismatch,
                "answered for another reference or bank than asked",
            )
        }
        o => o,
    }
}

fn check_wallet(out: Outcome<WalletTransfer>, q: &WalletQuery) -> Outcome<WalletTransfer> {
    match out {
        Outcome::Found(t) if t.transaction_id != q.transaction_id => Outcome::unavailable(
            Cause::Mismatch,
            "answered for another transaction than asked",
        ),
        o => o,
    }
}
