//! Every metric a node exports, in one registry per [`Metrics`] value (one per `App`: tests run
//! many nodes in one process, each with its own counts). The events call the named methods
//! below where they happen (`services`, `connectors`, `api`); values that already live
//! elsewhere (the accept loop's counters, job rows, breaker states) are read at scrape time
//! and handed to [`Metrics::render`].
//!
//! Names follow `slipverify_<area>_<what>_<unit>`; counters end `_total` (the encoder appends
//! it to the registered name); durations are seconds, in histograms with the explicit buckets
//! below. Label values are `&'static str` from closed sets, except three chosen by the program
//! or the operator, never by a client: a route's pattern, a connector's configured name and a
//! job state read from the database. No label carries a reference, a key, or a service,
//! branch, user or job id.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// `Content-Type` of [`Metrics::render`]'s text (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// HTTP answers: most in milliseconds, image reads and bank calls up to seconds, the body
/// deadline at 30 s.
pub const HTTP_BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
/// Upstream calls: a connector's timeout is 100 ms to 60 s (default 10 s).
pub const CONNECTOR_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];
/// Webhook POSTs: the spec's timeout is 5 s (`webhooks.timeout_ms` up to 60 s).
pub const WEBHOOK_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// Why a verification was answered without an upstream call (`slipverify_local_decisions`).
pub const LOCAL_REASONS: [&str; 3] = ["bad_crc", "not_a_slip", "known_duplicate"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    api: &'static str,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    api: &'static str,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerificationLabels {
    kind: &'static str,
    input: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectorOutcomeLabels {
    connector: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ConnectorLabels {
    connector: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BreakerLabels {
    connector: String,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    kind: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LineEventLabels {
    r#type: &'static str,
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LineMessageLabels {
    call: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: String,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn http_histogram() -> Histogram {
    Histogram::new(HTTP_BUCKETS)
}
fn connector_histogram() -> Histogram {
    Histogram::new(CONNECTOR_BUCKETS)
}

/// The accept loop's counters (`edge::Stats`), copied at scrape time.
#[derive(Debug, Clone, Default)]
pub struct EdgeCounts {
    pub accepted: u64,
    pub open: u64,
    /// Shed at the cap, of which `shed_suspects` were suspects.
    pub shed: u64,
    pub shed_suspects: u64,
    /// Times accepting waited at the cap with nothing to shed.
    pub full: u64,
    pub accept_errors: u64,
    pub idle_closed: u64,
    pub header_timeouts: u64,
    pub body_timeouts: u64,
    /// Unread bodies discarded keeping the connection, and answers that closed it instead.
    pub drained: u64,
    pub closed: u64,
}

/// One job count read from the database.
#[derive(Debug, Clone)]
pub struct JobCount {
    pub kind: String,
    pub state: String,
    pub count: i64,
}

/// Values read at scrape time from where they live.
#[derive(Debug, Clone, Default)]
pub struct Scraped {
    pub edge: EdgeCounts,
    /// `None`: the database could not be read (`slipverify_database_up` 0).
    pub jobs: Option<Vec<JobCount>>,
    /// Each connector's breaker state: `closed`, `open` or `half_open`.
    pub breakers: Vec<(String, &'static str)>,
}

/// Breaker states, each exported as 0 or 1 for every connector.
pub const BREAKER_STATES: [&str; 3] = ["closed", "open", "half_open"];

struct Edge {
    accepted: Counter,
    open: Gauge,
    sheds: Family<ReasonLabels, Counter>,
    full: Counter,
    accept_errors: Counter,
    timeouts: Family<ReasonLabels, Counter>,
    unread_bodies: Family<ReasonLabels, Counter>,
}

struct Inner {
    exported: Names,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: Histograms<RouteLabels>,
    verifications: Family<VerificationLabels, Counter>,
    local_decisions: Family<ReasonLabels, Counter>,
    attempts_log_failures: Counter,
    connector_calls: Family<ConnectorOutcomeLabels, Counter>,
    connector_duration: Histograms<ConnectorLabels>,
    breaker: Family<BreakerLabels, Gauge>,
    jobs: Family<JobLabels, Gauge>,
    database_up: Gauge,
    webhook_deliveries: Family<OutcomeLabels, Counter>,
    webhook_duration: Histogram,
    auth_refusals: Family<CodeLabels, Counter>,
    rate_limit_refusals: Family<CodeLabels, Counter>,
    quota_low: Counter,
    line_events: Family<LineEventLabels, Counter>,
    line_messages: Family<LineMessageLabels, Counter>,
    edge: Edge,
    /// One scrape at a time: the scrape-time values are set, then encoded.
    scrape: Mutex<()>,
}

/// The registry being filled, and every family it exports as named in the text (counters
/// with `_total`): a family without a series yet is not in the text, but alert rules may
/// already read it.
#[derive(Default)]
struct Names {
    registry: Registry,
    names: Vec<String>,
}

impl Names {
    fn register(&mut self, name: &str, help: &str, metric: impl Metric) {
        let suffix = match metric.metric_type() {
            prometheus_client::metrics::MetricType::Counter => "_total",
            _ => "",
        };
        self.names.push(format!("{name}{suffix}"));
        self.registry.register(name, help, metric);
    }

    /// Registers `metric` and hands it back to be kept (the registry holds a clone that
    /// shares its values).
    fn add_with<M: Metric + Clone>(&mut self, name: &str, help: &str, metric: M) -> M {
        self.register(name, help, metric.clone());
        metric
    }

    /// [`Names::add_with`] for a metric whose default is the one wanted.
    fn add<M: Metric + Clone + Default>(&mut self, name: &str, help: &str) -> M {
        self.add_with(name, help, M::default())
    }

    /// Ends the list with `slipverify_build_info`, 1 labelled with `version`.
    fn with_build_info(mut self, version: &str) -> Self {
        let build = Family::<VersionLabels, Gauge>::default();
        build
            .get_or_create(&VersionLabels {
                version: version.to_string(),
            })
            .set(1);
        self.register(
            "slipverify_build_info",
            "1, labelled with the running version",
            build,
        );
        self
    }
}

/// Adds one to the series of `family` that `labels` name.
fn inc<L: EncodeLabelSet + Clone + Eq + std::hash::Hash>(family: &Family<L, Counter>, labels: L) {
    family.get_or_create(&labels).inc();
}

/// A node's metrics; cheap to clone (one registry behind an `Arc`).
#[derive(Clone)]
pub struct Metrics(Arc<Inner>);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(env!("CARGO_PKG_VERSION"))
    }
}

impl Metrics {
    /// A fresh registry; `version` goes into `slipverify_build_info`.
    pub fn new(version: &str) -> Self {
        let mut r = Names::default();
        // Registered in the order written: the order of the families in the text.
        let inner = Inner {
            http_requests: r.add(
                "slipverify_http_requests",
                "HTTP answers of the API by api (v2, v1, admin, partner, other), route (the matched pattern; `unmatched` for none) and status",
            ),
            http_duration: r.add_with(
                "slipverify_http_request_duration_seconds",
                "Time from a request's head to its answer, by api and route",
                Family::new_with_constructor(http_histogram),
            ),
            verifications: r.add(
                "slipverify_verifications",
                "Verifications, one per attempts-log record (authenticated and rate-checked; async jobs once, at their final outcome), by kind (bank, truewallet), input (payload, image, base64, url, none) and outcome",
            ),
            local_decisions: r.add(
                "slipverify_local_decisions",
                "Verifications answered without asking any bank or provider (upstream calls saved), by reason: bad_crc (the QR's checksum fails), not_a_slip (another kind of QR), known_duplicate (a slip this service verified before, answered from its stored verification)",
            ),
            attempts_log_failures: r.add(
                "slipverify_attempts_log_failures",
                "Attempts-log records that could not be written (the verification's answer went out regardless)",
            ),
            connector_calls: r.add(
                "slipverify_connector_calls",
                "Calls to a connector (its configured name) by outcome: found, not_found, pending, expired, or why it gave no answer (timeout, connect, rate_limited, server_error, status, malformed, ...; breaker_open and saturated: not sent)",
            ),
            connector_duration: r.add_with(
                "slipverify_connector_call_duration_seconds",
                "Time of the calls actually sent to a connector, by connector",
                Family::new_with_constructor(connector_histogram),
            ),
            breaker: r.add(
                "slipverify_connector_breaker_state",
                "1 for each connector's current circuit-breaker state (closed, open, half_open) on this node, else 0",
            ),
            jobs: r.add(
                "slipverify_jobs_stored",
                "Async jobs in the database by kind and state, read from the shared database at scrape time: every node reports the same numbers, so aggregate over nodes with max, not sum",
            ),
            database_up: r.add(
                "slipverify_database_up",
                "1 if this scrape could read the database, else 0",
            ),
            webhook_deliveries: r.add(
                "slipverify_webhook_deliveries",
                "Webhook POSTs by outcome: delivered (2xx), http_error (another status), timeout, connection_failed, refused_address (not a public address), invalid_url",
            ),
            webhook_duration: r.add_with(
                "slipverify_webhook_delivery_duration_seconds",
                "Time of webhook POSTs, whatever their outcome",
                Histogram::new(WEBHOOK_BUCKETS),
            ),
            auth_refusals: r.add(
                "slipverify_auth_refusals",
                "Requests refused by authentication (API key, IP allow-list, account state; partner signatures; the admin token), by error code",
            ),
            rate_limit_refusals: r.add(
                "slipverify_rate_limit_refusals",
                "Authenticated requests refused by the rate limit, by error code",
            ),
            quota_low: r.add(
                "slipverify_quota_low_requests",
                "Verification requests that came in when their service's or branch's quota had less than 10 % left (exhausted ones included): some service is about to run out",
            ),
            line_events: r.add(
                "slipverify_line_events",
                "LINE webhook events accepted (signed, answered 200), by type (LINE's event type; other for one not listed) and source (user, group, room, none); a redelivery counts again only when LINE did not see our 200",
            ),
            line_messages: r.add(
                "slipverify_line_messages",
                "The LINE bot's calls to send messages, by call (reply: free; push: billed) and outcome (sent; failed; over_limit: a push not sent, the branch's daily allowance used up)",
            ),
            edge: Edge {
                accepted: r.add(
                    "slipverify_edge_connections_accepted",
                    "Connections accepted by the API listener",
                ),
                open: r.add(
                    "slipverify_edge_connections_open",
                    "Connections open now on the API listener",
                ),
                sheds: r.add(
                    "slipverify_edge_connections_shed",
                    "Connections closed at the connection cap to make room, by reason: suspect (unauthenticated, slow body, lingering) or idle",
                ),
                full: r.add(
                    "slipverify_edge_accept_waits",
                    "Times accepting waited at the connection cap with nothing to shed",
                ),
                accept_errors: r.add(
                    "slipverify_edge_accept_errors",
                    "Failed accepts (out of file descriptors and the like)",
                ),
                timeouts: r.add(
                    "slipverify_edge_timeouts",
                    "Connections or bodies cut by a timeout, by reason: header (head not in time), idle (kept-alive, no next request), body (body deadline)",
                ),
                unread_bodies: r.add(
                    "slipverify_edge_unread_bodies",
                    "Request bodies the handler left unread, by reason: drained (discarded, connection kept) or closed (the answer closed the connection)",
                ),
            },
            exported: r.with_build_info(version),
            scrape: Mutex::new(()),
        };
        for reason in LOCAL_REASONS {
            inner
                .local_decisions
                .get_or_create(&ReasonLabels { reason })
                .get();
        }
        Metrics(Arc::new(inner))
    }

    /// One HTTP answer. `route` is the matched pattern (never the path a client sent).
    pub fn http_request(&self, api: &'static str, route: &str, status: u16, took: Duration) {
        let m = &self.0;
        m.http_requests
            .get_or_create(&HttpLabels {
                api,
                route: route.to_string(),
                status,
            })
            .inc();
        m.http_duration
            .get_or_create(&RouteLabels {
                api,
                route: route.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// One attempts-log record, and the local decision it was when it was one.
    pub fn verification(
        &self,
        kind: &'static str,
        input: &'static str,
        outcome: &'static str,
        local: Option<&'static str>,
    ) {
        inc(
            &self.0.verifications,
            VerificationLabels {
                kind,
                input,
                outcome,
            },
        );
        if let Some(reason) = local {
            inc(&self.0.local_decisions, ReasonLabels { reason });
        }
    }

    pub fn attempts_log_failed(&self) {
        self.0.attempts_log_failures.inc();
    }

    /// One call to a connector; `took` is `None` when none was sent (breaker open, cap full).
    pub fn connector_call(&self, connector: &str, outcome: &'static str, took: Option<Duration>) {
        let connector = connector.to_string();
        if let Some(t) = took {
            self.0
                .connector_duration
                .get_or_create(&ConnectorLabels {
                    connector: connector.clone(),
                })
                .observe(t.as_secs_f64());
        }
        inc(
            &self.0.connector_calls,
            ConnectorOutcomeLabels { connector, outcome },
        );
    }

    /// One webhook POST.
    pub fn webhook_delivery(&self, outcome: &'static str, took: Duration) {
        inc(&self.0.webhook_deliveries, OutcomeLabels { outcome });
        self.0.webhook_duration.observe(took.as_secs_f64());
    }

    pub fn auth_refused(&self, code: &'static str) {
        inc(&self.0.auth_refusals, CodeLabels { code });
    }

    pub fn rate_limited(&self, code: &'static str) {
        inc(&self.0.rate_limit_refusals, CodeLabels { code });
    }

    /// One LINE webhook event accepted; `ty` and `source` from closed sets
    /// (`domain::line::EVENT_TYPES`; user, group, room, none).
    pub fn line_event(&self, ty: &'static str, source: &'static str) {
        inc(&self.0.line_events, LineEventLabels { r#type: ty, source });
    }

    /// One reply or push of the LINE bot: `sent`, `failed`, or `over_limit` (a push not sent).
    pub fn line_message(&self, call: &'static str, outcome: &'static str) {
        inc(&self.0.line_messages, LineMessageLabels { call, outcome });
    }

    /// Every family this registry exports, as named in the text (counters with `_total`).
    pub fn names(&self) -> &[String] {
        &self.0.exported.names
    }

    /// A verification request met a quota with less than 10 % left.
    pub fn quota_low(&self) {
        self.0.quota_low.inc();
    }

    /// The Prometheus text of every metric, with `scraped`'s values in place.
    pub fn render(&self, scraped: &Scraped) -> String {
        let m = &self.0;
        let _one = m.scrape.lock().unwrap_or_else(|p| p.into_inner());
        self.set_edge(&scraped.edge);
        m.breaker.clear();
        for (connector, state) in &scraped.breakers {
            for s in BREAKER_STATES {
                m.breaker
                    .get_or_create(&BreakerLabels {
                        connector: connector.clone(),
                        state: s,
                    })
                    .set(i64::from(s == *state));
            }
        }
        m.jobs.clear();
        match &scraped.jobs {
            Some(jobs) => {
                m.database_up.set(1);
                for j in jobs {
                    m.jobs
                        .get_or_create(&JobLabels {
                            kind: j.kind.clone(),
                            state: j.state.clone(),
                        })
                        .set(j.count);
                }
            }
            None => {
                m.database_up.set(0);
            }
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ =
            prometheus_client::encoding::prometheus_text::encode(&mut out, &m.exported.registry);
        out
    }

    fn set_edge(&self, e: &EdgeCounts) {
        use std::sync::atomic::Ordering::Relaxed;
        let m = &self.0.edge;
        // Copies of monotonic counters kept by the accept loop: stored, not added.
        let set = |c: &Counter, v: u64| c.inner().store(v, Relaxed);
        let set_in = |f: &Family<ReasonLabels, Counter>, reason: &'static str, v: u64| {
            f.get_or_create(&ReasonLabels { reason })
                .inner()
                .store(v, Relaxed)
        };
        set(&m.accepted, e.accepted);
        m.open.set(i64::try_from(e.open).unwrap_or(i64::MAX));
        set_in(&m.sheds, "suspect", e.shed_suspects);
        set_in(&m.sheds, "idle", e.shed.saturating_sub(e.shed_suspects));
        set(&m.full, e.full);
        set(&m.accept_errors, e.accept_errors);
        set_in(&m.timeouts, "header", e.header_timeouts);
        set_in(&m.timeouts, "idle", e.idle_closed);
        set_in(&m.timeouts, "body", e.body_timeouts);
        set_in(&m.unread_bodies, "drained", e.drained);
        set_in(&m.unread_bodies, "closed", e.closed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    #[test]
    fn names_types_and_values() {
        let m = Metrics::new("9.9.9");
        m.verification("bank", "payload", "invalid_qr", Some("bad_crc"));
        m.verification("bank", "payload", "invalid_qr", Some("bad_crc"));
        m.http_request("v2", "/v2/verify/bank", 200, Duration::from_millis(30));
        m.connector_call("kbank", "found", Some(Duration::from_millis(400)));
        m.connector_call("kbank", "breaker_open", None);
        m.line_event("message", "group");
        m.line_event("message", "group");
        m.line_event("join", "room");
        m.line_message("push", "over_limit");
        let text = m.render(&Scraped {
            edge: EdgeCounts {
                shed: 5,
                shed_suspects: 3,
                ..EdgeCounts::default()
            },
            jobs: Some(vec![JobCount {
                kind: "verify".into(),
                state: "queued".into(),
                count: 7,
            }]),
            breakers: vec![("kbank".into(), "open")],
        });
        assert!(text.contains("# TYPE slipverify_verifications_total counter"));
        assert_eq!(
            line(&text, "slipverify_verifications_total{"),
            Some(
                r#"slipverify_verifications_total{kind="bank",input="payload",outcome="invalid_qr"} 2"#
            )
        );
        assert!(text.contains(r#"slipverify_local_decisions_total{reason="bad_crc"} 2"#));
        // Every reason is there from the start, so `rate()` has a series to work on.
        assert!(text.contains(r#"slipverify_local_decisions_total{reason="known_duplicate"} 0"#));
        assert!(text.contains(r#"slipverify_http_request_duration_seconds_bucket{api="v2",route="/v2/verify/bank",le="0.05"} 1"#));
        assert!(text.contains(r#"slipverify_http_request_duration_seconds_bucket{api="v2",route="/v2/verify/bank",le="0.025"} 0"#));
        assert!(text.contains(
            r#"slipverify_http_requests_total{api="v2",route="/v2/verify/bank",status="200"} 1"#
        ));
        // A call not sent has no duration.
        assert!(text
            .contains(r#"slipverify_connector_call_duration_seconds_count{connector="kbank"} 1"#));
        assert!(text
            .contains(r#"slipverify_connector_breaker_state{connector="kbank",state="open"} 1"#));
        assert!(text
            .contains(r#"slipverify_connector_breaker_state{connector="kbank",state="closed"} 0"#));
        assert!(text.contains(r#"slipverify_jobs_stored{kind="verify",state="queued"} 7"#));
        assert!(text.contains("slipverify_database_up 1"));
        assert!(text.contains(r#"slipverify_edge_connections_shed_total{reason="idle"} 2"#));
        assert!(text.contains(r#"slipverify_build_info{version="9.9.9"} 1"#));
        assert!(text.contains("# TYPE slipverify_line_events_total counter"));
        assert!(text.contains(r#"slipverify_line_events_total{type="message",source="group"} 2"#));
        assert!(text.contains(r#"slipverify_line_events_total{type="join",source="room"} 1"#));
        assert!(
            text.contains(r#"slipverify_line_messages_total{call="push",outcome="over_limit"} 1"#)
        );
    }

    #[test]
    fn scrape_time_values_replace_the_last_ones() {
        let m = Metrics::default();
        let first = Scraped {
            jobs: Some(vec![JobCount {
                kind: "verify".into(),
                state: "retrying".into(),
                count: 3,
            }]),
            edge: EdgeCounts {
                accepted: 10,
                ..EdgeCounts::default()
            },
            ..Scraped::default()
        };
        m.render(&first);
        let text = m.render(&Scraped {
            edge: EdgeCounts {
                accepted: 12,
                ..EdgeCounts::default()
            },
            ..Scraped::default()
        });
        // Stored, not added; a state gone from the database is gone from the scrape.
        assert!(text.contains("slipverify_edge_connections_accepted_total 12"));
        assert!(!text.contains("state=\"retrying\""));
        assert!(text.contains("slipverify_database_up 0"));
    }
}
