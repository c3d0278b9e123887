//! Prometheus metrics (issue 33): a scrape of the metrics listener after a scripted run shows
//! exactly the counts that run produced — one verification per attempts-log record —, no
//! label value holds a reference, key or id of the run, histograms have buckets, the alert
//! rules name only exported metrics, and the listener exists only when configured.

use crate::common::code;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use testkit::{both, Backend, TestApp};

const LISTEN: &str = "[metrics]\nlisten = \"127.0.0.1:0\"\n";

/// One sample: its name and labels (sorted), and its value.
type Samples = BTreeMap<(String, Vec<(String, String)>), f64>;

pub(crate) struct Scrape {
    text: String,
    samples: Samples,
}

impl Scrape {
    /// The value of `name` with exactly these labels (0 when absent: a series appears at its
    /// first event).
    pub(crate) fn get(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut l: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.sort();
        self.samples
            .get(&(name.to_string(), l))
            .copied()
            .unwrap_or(0.0)
    }

    /// Every sample of `name` whose labels include `having`.
    pub(crate) fn sum(&self, name: &str, having: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|((n, l), _)| {
                n == name
                    && having
                        .iter()
                        .all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|(_, v)| v)
            .sum()
    }

    /// `slipverify_verifications_total` of bank slips, by input and outcome.
    fn bank_verifications(&self, input: &str, outcome: &str) -> f64 {
        let labels = [("kind", "bank"), ("input", input), ("outcome", outcome)];
        self.get("slipverify_verifications_total", &labels)
    }

    /// `slipverify_connector_calls_total` of one connector, by outcome.
    fn connector_calls(&self, connector: &str, outcome: &str) -> f64 {
        let labels = [("connector", connector), ("outcome", outcome)];
        self.get("slipverify_connector_calls_total", &labels)
    }

    /// `slipverify_connector_breaker_state` of one connector: 1 for the state it is in.
    fn breaker(&self, connector: &str, state: &str) -> f64 {
        let labels = [("connector", connector), ("state", state)];
        self.get("slipverify_connector_breaker_state", &labels)
    }

    /// How many calls to one connector were timed (the duration histogram's count).
    fn timed_calls(&self, connector: &str) -> f64 {
        let labels = [("connector", connector)];
        self.get("slipverify_connector_call_duration_seconds_count", &labels)
    }

    /// Names declared by `# TYPE` lines.
    fn families(&self) -> BTreeSet<String> {
        self.text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .filter_map(|l| l.split(' ').next())
            .map(str::to_string)
            .collect()
    }

    fn label_values(&self) -> BTreeSet<String> {
        self.samples
            .keys()
            .flat_map(|(_, l)| l.iter().map(|(_, v)| v.clone()))
            .collect()
    }
}

/// Prometheus text format 0.0.4: `name{k="v",...} value`.
fn parse(text: &str) -> Samples {
    let mut out = Samples::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (series, value) = line.rsplit_once(' ').expect("a value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("value in {line}")),
        };
        let (name, mut labels) = match series.split_once('{') {
            None => (series.to_string(), Vec::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').expect("closing brace");
                (name.to_string(), parse_labels(body))
            }
        };
        labels.sort();
        assert!(
            out.insert((name, labels), value).is_none(),
            "one series twice: {line}"
        );
    }
    out
}

fn parse_labels(body: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (key, after) = rest.split_once("=\"").expect("key=\"");
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            match chars.next().expect("closing quote") {
                (_, '\\') => {
                    let (_, c) = chars.next().unwrap();
                    value.push(if c == 'n' { '\n' } else { c });
                }
                (i, '"') => break i,
                (_, c) => value.push(c),
            }
        };
        out.push((key.to_string(), value));
        rest = after[end + 1..].trim_start_matches(',');
    }
    out
}

/// A `GET` of `path` on the metrics listener.
async fn get_on_metrics_port(t: &TestApp, path: &str) -> reqwest::Response {
    let addr = t.metrics_addr.expect("metrics listener configured");
    let req = t.http.get(format!("http://{addr}{path}"));
    req.send().await.unwrap()
}

pub(crate) async fn scrape(t: &TestApp) -> Scrape {
    let resp = get_on_metrics_port(t, "/metrics").await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let text = resp.text().await.unwrap();
    Scrape {
        samples: parse(&text),
        text,
    }
}

/// A bank slip whose CRC does not match its content (damaged or altered).
fn bad_crc(payload: &str) -> String {
    let (body, crc) = payload.split_at(payload.len() - 4);
    let other = if crc == "0000" { "FFFF" } else { "0000" };
    format!("{body}{other}")
}

/// `slipverify_verifications_total` as the attempts log has it: by (kind, input, outcome).
async fn log_counts(t: &TestApp) -> BTreeMap<(String, String, String), f64> {
    let rows = t.attempts(1000).await;
    let mut out = BTreeMap::new();
    for r in rows {
        let a = r.attempt;
        let key = (
            a.kind.as_str().to_string(),
            a.input.map_or("none", |i| i.as_str()).to_string(),
            a.outcome.as_str().to_string(),
        );
        *out.entry(key).or_insert(0.0) += 1.0;
    }
    out
}

fn scraped_verifications(s: &Scrape) -> BTreeMap<(String, String, String), f64> {
    s.samples
        .iter()
        .filter(|((n, _), _)| n == "slipverify_verifications_total")
        .map(|((_, l), v)| {
            let get = |k: &str| l.iter().find(|(lk, _)| lk == k).unwrap().1.clone();
            ((get("kind"), get("input"), get("outcome")), *v)
        })
        .collect()
}

both!(
    a_scripted_run_is_counted_exactly_once,
    |b: Backend| async move {
        let rx = testkit::receiver::Receiver::spawn().await;
        let eg = rx.egress();
        let t = TestApp::spawn_with_config_and(b, LISTEN, move |a| a.services.set_egress(eg)).await;
        let ten = t.tenant(100).await;
        let v2 = "/v2/verify/bank";

        // Verified, then the same slip again checked for duplicates (answered locally).
        let tr = t.transfer("004", "014", 125_050).await;
        let body = json!({"payload": tr.payload, "checkDuplicate": true});
        t.post_ok(v2, &ten.api_key, body.clone()).await;
        let v = t.post_ok(v2, &ten.api_key, body).await;
        assert_eq!(v["data"]["isDuplicate"], true);
        // Not found; a bad CRC; a QR that is no slip.
        let unknown = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
        let (s, v) = t.post(v2, &ten.api_key, json!({"payload": unknown})).await;
        assert_eq!((s, code(&v)), (404, "SLIP_NOT_FOUND"));
        let damaged = bad_crc(&slip_qr::encode_bank_slip("014", "MTR0000000000000001"));
        let (s, v) = t.post(v2, &ten.api_key, json!({"payload": damaged})).await;
        assert_eq!((s, code(&v)), (404, "SLIP_NOT_FOUND"), "{v}");
        let (s, _) = t.post(v2, &ten.api_key, json!({"payload": "hello"})).await;
        assert_eq!(s, 404);
        // An async job, delivered to the receiver.
        let job_tr = t.transfer("004", "014", 900).await;
        let hook = rx.url("hook");
        let job_id = t.submit_job_to(&ten.api_key, &job_tr.payload, &hook).await;
        // Saved `done` before its callback, then again with the delivery.
        t.poll_job(&ten.api_key, &job_id, |j| {
            j["webhook"]["state"] == "delivered"
        })
        .await;
        assert_eq!(rx.received().len(), 1);
        // Refused by authentication (no record), then by the rate limit (5/s, bursts of 3).
        let (s, _) = t.post_raw(v2, None, "{}").await;
        assert_eq!(s, 401);
        let limited = t.tenant(100).await;
        t.set_rate_limit(&limited.service_id, Some(5)).await;
        let mut statuses = Vec::new();
        for _ in 0..4 {
            statuses.push(t.get("/v2/info", Some(&limited.api_key)).await.0);
        }
        assert_eq!(statuses, [200, 200, 200, 429]);

        let m = scrape(&t).await;
        // One per attempts-log record, by the record's own labels.
        let logged = log_counts(&t).await;
        assert_eq!(scraped_verifications(&m), logged);
        assert_eq!(logged.values().sum::<f64>(), 6.0, "{logged:?}");
        assert_eq!(m.bank_verifications("payload", "verified"), 1.0);
        assert_eq!(m.bank_verifications("payload", "duplicate"), 1.0);
        assert_eq!(m.bank_verifications("payload", "not_found"), 1.0);
        assert_eq!(m.bank_verifications("payload", "invalid_qr"), 2.0);
        // The job's verification: its input is not known to the worker.
        assert_eq!(m.bank_verifications("none", "verified"), 1.0);
        let local = |reason: &str| m.get("slipverify_local_decisions_total", &[("reason", reason)]);
        assert_eq!(
            (
                local("bad_crc"),
                local("not_a_slip"),
                local("known_duplicate")
            ),
            (1.0, 1.0, 1.0)
        );
        // The sandbox connector: two found (sync and job), one not found; the duplicate and
        // the two bad QRs never reached it.
        let calls = |outcome: &str| m.connector_calls("sandbox", outcome);
        assert_eq!((calls("found"), calls("not_found")), (2.0, 1.0));
        assert_eq!(m.sum("slipverify_connector_calls_total", &[]), 3.0);
        assert_eq!(m.timed_calls("sandbox"), 3.0);
        assert_eq!(m.breaker("sandbox", "closed"), 1.0);
        // Each 1: the delivery, the stored job, the database up, the refusals by code.
        let once: [(&str, &[(&str, &str)]); 6] = [
            (
                "slipverify_webhook_deliveries_total",
                &[("outcome", "delivered")],
            ),
            ("slipverify_webhook_delivery_duration_seconds_count", &[]),
            (
                "slipverify_jobs_stored",
                &[("kind", "verify"), ("state", "done")],
            ),
            ("slipverify_database_up", &[]),
            (
                "slipverify_auth_refusals_total",
                &[("code", "MISSING_API_KEY")],
            ),
            (
                "slipverify_rate_limit_refusals_total",
                &[("code", "RATE_LIMIT_EXCEEDED")],
            ),
        ];
        for (name, labels) in once {
            assert_eq!(m.get(name, labels), 1.0, "{name} {labels:?}");
        }
        // ... and nothing else delivered or refused by authentication.
        for family in [
            "slipverify_webhook_deliveries_total",
            "slipverify_auth_refusals_total",
        ] {
            assert_eq!(m.sum(family, &[]), 1.0, "{family}");
        }
        // HTTP answers by route pattern: the job's id is not in its route.
        let http = |route: &str, status: &str| {
            m.get(
                "slipverify_http_requests_total",
                &[("api", "v2"), ("route", route), ("status", status)],
            )
        };
        assert_eq!(http(v2, "200"), 2.0);
        assert_eq!(http(v2, "404"), 3.0);
        assert_eq!(http(v2, "401"), 1.0);
        assert_eq!(http("/v2/verify/bank/async", "202"), 1.0);
        assert!(http("/v2/verify/bank/jobs/{job_id}", "200") >= 1.0);
        assert_eq!(http("/v2/info", "429"), 1.0);
        assert_eq!(
            m.get(
                "slipverify_http_request_duration_seconds_count",
                &[("api", "v2"), ("route", v2)]
            ),
            6.0
        );
        for histogram in [
            "slipverify_http_request_duration_seconds",
            "slipverify_connector_call_duration_seconds",
            "slipverify_webhook_delivery_duration_seconds",
        ] {
            assert!(
                m.text.contains(&format!("{histogram}_bucket{{")),
                "{histogram} has buckets"
            );
        }
        assert!(m.get("slipverify_edge_connections_accepted_total", &[]) >= 1.0);
        assert_eq!(
            m.sum(
                "slipverify_build_info",
                &[("version", env!("CARGO_PKG_VERSION"))]
            ),
            1.0
        );

        // No label value holds a reference, a key or an id of the run.
        let secrets = [
            tr.trans_ref.clone(),
            job_tr.trans_ref.clone(),
            "0123456789ABCDEFGHIJ".into(),
            "MTR0000000000000001".into(),
            ten.api_key.clone(),
            limited.api_key.clone(),
            ten.service_id.to_string(),
            ten.branch_id.to_string(),
            limited.service_id.to_string(),
            limited.branch_id.to_string(),
            job_id.clone(),
        ];
        for value in m.label_values() {
            for s in &secrets {
                assert!(
                    !value.contains(s.as_str()),
                    "label value {value:?} holds {s}"
                );
            }
            // Nothing a client typed: every value is a name, a pattern, a code or a number.
            assert!(
                value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_/{}.+-".contains(c)),
                "{value:?}"
            );
        }

        // A scrape reads; it counts nothing. One more record moves its counter by one.
        let again = scrape(&t).await;
        assert_eq!(scraped_verifications(&again), logged);
        let (s, _) = t.post(v2, &ten.api_key, json!({"payload": "hello"})).await;
        assert_eq!(s, 404);
        let after = scrape(&t).await;
        assert_eq!(after.bank_verifications("payload", "invalid_qr"), 3.0);
        assert_eq!(scraped_verifications(&after), log_counts(&t).await);
        t.stop().await;
    }
);

both!(
    a_failing_connector_opens_its_breaker_in_the_scrape,
    |b: Backend| async move {
        // The only connector listens nowhere; one failure opens its breaker.
        let t = TestApp::spawn_with_config(
            b,
            &format!(
                "{LISTEN}[connectors.down]\nkind = \"easyslip\"\nbase_url = \"http://127.0.0.1:9\"\n\
                 api_key = \"k\"\ntimeout_ms = 500\nbreaker_failures = 1\n[routing]\ndefault = [\"down\"]\n"
            ),
        )
        .await;
        let ten = t.tenant(100).await;
        let payload = slip_qr::encode_bank_slip("004", "0123456789ABCDEFGHIJ");
        for _ in 0..2 {
            let (s, v) = t
                .verify_bank(&ten.api_key, json!({"payload": payload}))
                .await;
            assert_eq!((s, code(&v)), (500, "API_SERVER_ERROR"));
        }
        let m = scrape(&t).await;
        let state = |s: &str| m.breaker("down", s);
        assert_eq!(
            (state("open"), state("closed"), state("half_open")),
            (1.0, 0.0, 0.0)
        );
        let calls = |outcome: &str| m.connector_calls("down", outcome);
        assert_eq!((calls("connect"), calls("breaker_open")), (1.0, 1.0));
        // Only the call that was sent has a duration.
        assert_eq!(m.timed_calls("down"), 1.0);
        assert_eq!(m.bank_verifications("payload", "unavailable"), 2.0);
        t.stop().await;
    }
);

both!(a_quota_near_its_end_is_counted, |b: Backend| async move {
    let t = TestApp::spawn_with_config(b, LISTEN).await;
    let ten = t.tenant(1).await;
    let first = t.transfer("004", "014", 100).await;
    t.verify_bank_ok(&ten.api_key, json!({"payload": first.payload}))
        .await;
    let m = scrape(&t).await;
    assert_eq!(m.get("slipverify_quota_low_requests_total", &[]), 0.0);
    // The one verification is used: the next one finds nothing left, and is refused.
    let second = t.transfer("004", "014", 200).await;
    let (s, v) = t
        .verify_bank(&ten.api_key, json!({"payload": second.payload}))
        .await;
    assert_eq!((s, code(&v)), (403, "QUOTA_EXCEEDED"));
    let m = scrape(&t).await;
    assert_eq!(m.get("slipverify_quota_low_requests_total", &[]), 1.0);
    assert_eq!(m.bank_verifications("payload", "refused"), 1.0);
    t.stop().await;
});

both!(
    the_listener_exists_only_when_configured,
    |b: Backend| async move {
        let t = TestApp::spawn(b).await;
        assert_eq!(t.app.metrics_listen, None);
        assert_eq!(t.metrics_addr, None);
        // Never on the API's own listener.
        let resp = t.get_response("/metrics", None).await;
        assert_eq!(resp.status(), 404);
        t.stop().await;
        let t = TestApp::spawn_with_config(b, LISTEN).await;
        let resp = t.get_response("/metrics", None).await;
        assert_eq!(
            resp.status(),
            404,
            "not on the API's port when configured either"
        );
        let m = scrape(&t).await;
        assert!(m.families().contains("slipverify_build_info"));
        // Only /metrics there.
        let other = get_on_metrics_port(&t, "/v2/info").await;
        assert_eq!(other.status(), 404);
        t.stop().await;
    }
);

/// `docs/alerts.yml`: each rule has an expression, a duration, a severity and a summary, and
/// every metric it reads is one a node exports. `promtool check rules` also runs when it is
/// installed (Debian's `prometheus` package).
#[tokio::test]
async fn the_alert_rules_read_exported_metrics() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/alerts.yml");
    let rules = std::fs::read_to_string(path).unwrap();
    let t = TestApp::spawn_with_config(Backend::Sqlite, LISTEN).await;
    // A family without a series yet is not in the text: the registry names them all.
    let families: BTreeSet<String> = t.app.services.metrics().names().iter().cloned().collect();
    let scraped = scrape(&t).await.families();
    assert!(scraped.is_subset(&families), "{scraped:?}");
    t.stop().await;
    let alerts: Vec<&str> = rules.split("- alert: ").skip(1).collect();
    assert!(alerts.len() >= 5, "{} alerts", alerts.len());
    for a in &alerts {
        let name = a.lines().next().unwrap();
        for field in ["expr: ", "for: ", "severity: ", "summary: "] {
            assert!(a.contains(field), "{name}: no {field}");
        }
        let expr = a
            .lines()
            .find_map(|l| l.trim().strip_prefix("expr: "))
            .unwrap();
        let mut used = 0;
        for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !word.starts_with("slipverify_") {
                continue;
            }
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| word.strip_suffix(s))
                .filter(|f| families.contains(*f))
                .unwrap_or(word);
            assert!(families.contains(family), "{name}: {word} is not exported");
            used += 1;
        }
        assert!(used > 0, "{name} reads no slipverify metric");
    }
    if let Ok(out) = std::process::Command::new("promtool")
        .args(["check", "rules", path])
        .output()
    {
        assert!(
            out.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
