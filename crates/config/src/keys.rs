//! Every key, for `docs/configuration.md`: the table there is [`markdown_table`]'s output,
//! and a test checks that it matches and that every key of [`Config`](crate::Config) is here.

use crate::load::ALIASES;

/// One configuration key. `<name>` stands for a connector's name, `<bank code>` for a
/// routing key.
pub struct Key {
    pub key: &'static str,
    /// Shown when the default is not a plain value of [`Config::default`](crate::Config).
    pub default: Option<&'static str>,
    pub meaning: &'static str,
}

const fn k(key: &'static str, meaning: &'static str) -> Key {
    Key {
        key,
        default: None,
        meaning,
    }
}

const fn d(key: &'static str, default: &'static str, meaning: &'static str) -> Key {
    Key {
        key,
        default: Some(default),
        meaning,
    }
}

pub const KEYS: &[Key] = &[
    k("server.listen", "Address `serve` listens on (`serve --listen` wins)."),
    k("server.trusted_proxies", "Peers (addresses or CIDRs) whose `X-Forwarded-For` is believed; a list or a comma-separated string (`serve --trusted-proxy` wins)."),
    d("server.admin_token", "none (admin API off)", "Secret. Bearer token of the admin API, at least 32 characters (`serve --admin-token` wins); or `admin_token_file`."),
    k("server.max_uploads", "Image-carrying requests read and decoded at once, 1 to 1024."),
    d("server.max_connections", "derived: the soft file-descriptor limit (raised to the hard one at start) less a quarter of it, at least 256 kept for the database, outbound connections and files; 16 to 10,000", "Connections open at once, 1 to 1,000,000. At the cap one is closed for a new one: first a request not (yet) authenticated, a body below `body_min_rate` or a connection lingering after its answer (the oldest first, its request dropped), else the connection idle the longest; when every connection is busy with an authenticated request, new ones wait in the listen queue."),
    k("server.header_timeout_ms", "How long a client may take to send a request's head, from its first byte (from accepting, for a connection's first request), 50 to 600000 ms."),
    k("server.idle_timeout_ms", "How long a kept-alive connection may wait for the first byte of its next request before it is closed, 50 to 3600000 ms."),
    k("server.body_deadline_ms", "How long any request's body may take to arrive in full; later, the request fails with 400 `VALIDATION_ERROR` (`body: was not received within …`) and the connection closes, 50 to 600000 ms. Slip requests also keep their own 30 s bound."),
    k("server.idempotency_lease_secs", "How long a running request holds its `Idempotency-Key`, 10 to 3600 s: a retry meanwhile gets `409 IDEMPOTENCY_KEY_IN_USE` with `Retry-After` (the lease's end); after it (the node presumed dead) a retry takes the key over."),
    k("server.body_min_rate", "Bytes a second, 0 to 1,000,000,000 (0: no floor). A request body averaging less, once awaited for `body_min_rate_after_ms`, puts its connection among the first closed at `max_connections`, with requests not (yet) authenticated and connections lingering after their answer; idle connections go only when there are none of those."),
    k("server.body_min_rate_after_ms", "How long a body may arrive below `body_min_rate` before the floor applies, 50 to 600000 ms."),
    d("server.cors_origins", "none (no CORS: browsers cannot call the API)", "Browser origins allowed to call `/v2` and `/api/v1` from a page, each exactly `http(s)://host[:port]` in lower case (a list or a comma-separated string): their preflights are answered and their answers carry `Access-Control-Allow-Origin`; never `*`, never on `/admin` or the partner API. Keys belong on servers: list an origin only for a page whose users hold their own key (docs/decisions.md)."),
    k("limits.decode_memory_mb", "Memory all image decodes may hold at once, 16 to 65536 MB, each decode admitted from its header's pixel count; an image costing more than the whole budget is decoded alone (docs/decisions.md)."),
    k("limits.decode_wait_secs", "How long a decode waits for room in that budget before `429 RATE_LIMIT_EXCEEDED` with `Retry-After`, 1 to 60 s."),
    k("limits.max_image_side", "Longest image side, 64 to 65535 px, checked from the header (`IMAGE_SIZE_TOO_LARGE`)."),
    k("limits.max_image_aspect", "Largest long-to-short side ratio of an image, 1 to 1000 (`IMAGE_SIZE_TOO_LARGE`)."),
    k("limits.scan_ms", "Last-resort cap on the QR search of one image, 1 to 10000 ms, counted from the start of the read: no pass starts after it (the first two always run). The work budget is `limits.scan_passes`; keep this generous so reads do not depend on the machine's load (docs/decisions.md, reader scan budget)."),
    k("limits.scan_passes", "Most detector passes spent on one image, 2 to 64."),
    k("limits.max_uploads_per_service", "Upload slots one service (all its branch keys together) may hold at once, 1 to 1024 (at most `server.max_uploads`, to which a larger value is clamped): one customer's slow uploads leave the others room. The old name `max_uploads_per_branch` is read as an alias."),
    k("limits.decode_slots", "Image decodes running at once, 1 to 256; each is also admitted against `limits.decode_memory_mb`. Both are shared fairly between services: a freed slot goes to the waiting service holding the fewest decodes."),
    k("limits.scan_exhaustive", "The reader's exhaustive scan: no evidence gate and no scan budget, every strategy until one reads (`slipverify read --exhaustive`). Checks the default scan's recall; seconds per image without a QR, not for serving."),
    k("database.url", "`sqlite://FILE` or `postgres://USER:PASSWORD@HOST:PORT/DB` (`--database-url` wins); the password is redacted when printed."),
    d("database.pool", "8 (SQLite), 16 (PostgreSQL)", "Connections per pool, 1 to 1000."),
    k("jobs.poll_ms", "How often an idle job worker looks for due jobs, 10 to 60000 ms."),
    k("jobs.concurrency", "Jobs handled at once on this node, 0 (worker off) to 4096."),
    k("jobs.lease_secs", "How long a claimed job is reserved for its worker, 5 to 3600 s, at least 3 webhook timeouts."),
    k("jobs.verify_retry_schedule", "Retries after \"not found\" or BBL \"pending\", seconds (a list or `\"30,60\"`); other values than the spec's are logged."),
    k("jobs.outage_retry_schedule", "Retries after a bank outage or an internal failure, seconds."),
    k("jobs.billing_retry_schedule", "Retries while billing cannot renew the subscription, seconds."),
    k("jobs.periodic", "Whether this node takes part in periodic jobs (`expire-jobs`, `idempotency-keys`); each period of each job runs on one node, decided by the database."),
    k("jobs.periodic_lease_secs", "How long a periodic run is held without renewal (a run renews every third of it) before another node takes it over, 5 to 86400 s."),
    k("jobs.expire_every_secs", "Period of `expire-jobs`, which deletes finished jobs past their 7-day retention, 1 to 86400 s."),
    k("jobs.idempotency_sweep_every_secs", "Period of `idempotency-keys`, which forgets `Idempotency-Key`s past their 24 h, 1 to 86400 s."),
    k("jobs.line_sweep_every_secs", "Period of `line-replies`, which forgets the LINE bot's reply marks (which events' reply tokens were handed to LINE) past their 24 h, 1 to 86400 s."),
    k("webhooks.retry_schedule", "Webhook retries after the first attempt, seconds."),
    k("webhooks.timeout_ms", "One webhook attempt, 50 to 60000 ms."),
    d("billing.url", "none (credit ledger)", "The operator's billing endpoint; https unless the host is loopback; through `outbound.proxy`."),
    d("billing.secret", "none", "Secret. Signs billing requests, at least 16 characters, required with `billing.url`; or `secret_file`."),
    k("billing.timeout_ms", "Billing call timeout, 100 to 60000 ms."),
    k("egress.allow_cidrs", "Test only: non-public ranges customer URLs may reach anyway (logged loudly)."),
    d("egress.ca_file", "none", "Test only: a PEM file with an extra trusted root CA for customer URLs (logged loudly)."),
    d("outbound.proxy", "none (direct)", "An http(s) proxy for every operator-configured call (connectors, billing); not for customer URLs."),
    k("line.api_base", "LINE's Messaging API (reply, push); https unless the host is loopback; through `outbound.proxy`."),
    k("line.data_api_base", "LINE's content host (images customers send); https unless the host is loopback."),
    k("line.timeout_ms", "One call to LINE, 100 to 60000 ms."),
    k("line.reply_window_secs", "A reply token older than this is not used (the verdict is pushed if allowed), 5 to 60 s."),
    k("retention.attempts_days", "Days the attempts log keeps a record, 0 (for ever) to 3650."),
    k("retention.personal_data_days", "Days after which a stored transfer's names, masked accounts and phone numbers are blanked (the duplicate check keeps working), 0 (never) to 3650."),
    k("retention.purge_interval_secs", "How often the retention purge runs (a periodic job, one node per period), 60 to 86400 s."),
    d("metrics.listen", "none (no metrics listener)", "`HOST:PORT` of a separate listener serving Prometheus metrics at `GET /metrics` (`serve --metrics-listen` wins). It has no authentication: bind loopback or a private address (a warning is logged otherwise). See docs/operations.md."),
    k("sandbox.delay_ms", "Added to every sandbox bank look-up (load and crash tests), 0 to 60000 ms."),
    d("connectors.<name>.kind", "required", "One of `sandbox`, `easyslip`, `kbank`, `scb` (a service speaking EasySlip's v2, such as Thunder, is `easyslip` with its `base_url`). `sandbox` (the built-in ledger) is always defined."),
    d("connectors.<name>.base_url", "none", "The API's base URL; https unless the host is loopback; required for easyslip, kbank, scb."),
    d("connectors.<name>.api_key", "none", "Secret. Required for easyslip and scb (SCB's API key, also sent as `resourceOwnerId`); or `api_key_file`."),
    d("connectors.<name>.client_id", "none", "OAuth client id; required for kbank."),
    d("connectors.<name>.client_secret", "none", "Secret. OAuth client secret; required for kbank; or `client_secret_file`."),
    d("connectors.<name>.api_secret", "none", "Secret. SCB's API secret; required for scb; or `api_secret_file`."),
    k("connectors.<name>.timeout_ms", "One call, 100 to 60000 ms."),
    k("connectors.<name>.max_concurrency", "Calls in flight at once through this connector, per node, 1 to 4096."),
    k("connectors.<name>.breaker_failures", "Consecutive failures that open the circuit breaker, 1 to 1000."),
    k("connectors.<name>.breaker_cooldown_s", "Seconds an open breaker waits before one probe (half-open), 1 to 3600."),
    d("connectors.<name>.client_cert", "none (no mTLS)", "mTLS (kbank): a PEM file with the client certificate presented to the bank; needs `client_key`. Unreadable: start-up fails naming this key."),
    d("connectors.<name>.client_key", "none", "Secret. mTLS (kbank): the certificate's private key as PEM text; usually `client_key_file`; needs `client_cert`."),
    d("connectors.<name>.ca_file", "none (public roots)", "A PEM file with an extra root CA trusted for this connector only (UAT hosts, the simulator's HTTPS mode)."),
    d("connectors.<name>.token_path", "`/v2/oauth/token`", "OAuth token path appended to `base_url` (one KBank source uses `/oauth/token`)."),
    d("connectors.<name>.not_found_codes", "`[\"8404\"]` (kbank), none (scb)", "Bank status codes meaning \"no such transfer\"; every other non-success code is unavailable (next connector). SCB's code is undocumented: list it once confirmed (docs/connectors.md)."),
    k("connectors.<name>.sandbox_fixture", "Accept an answer about another reference than asked (KBank's sandbox answers one fixed fixture). Never in production."),
    k("connectors.<name>.test_mode", "KBank sandbox headers: `x-test-mode: true` on every call and `env-id: OAUTH2` on token requests."),
    d("connectors.<name>.verify_env_id", "none", "`env-id` header on KBank verify calls (sandbox; sources disagree: `VERSLIP`, `SLIP_VERIFICATION`)."),
    k("routing.default", "Connectors tried in order for a bank without a route of its own."),
    k("routing.truewallet", "Connectors tried in order for TrueMoney Wallet slips."),
    d("routing.<bank code>", "`routing.default`", "Connectors for slips from this sending bank (a code of the bank registry, e.g. `\"004\"`): a list, or `{ connectors = [...], fallback_on_not_found = true }` to ask the next connector also when one answers \"not found\"."),
];

/// `connectors.<name>.api_key` → `SLIPVERIFY_CONNECTORS__<NAME>__API_KEY`.
pub fn env_name(key: &str) -> String {
    format!("SLIPVERIFY_{}", key.to_ascii_uppercase().replace('.', "__"))
}

fn alias_of(key: &str) -> Option<&'static str> {
    ALIASES.iter().find(|(_, k)| *k == key).map(|(a, _)| *a)
}

/// The default as shown in the table: from [`Config::default`](crate::Config), else the
/// key's own text.
fn default_shown(key: &Key, defaults: &serde_json::Value) -> String {
    if let Some(d) = key.default {
        return d.to_string();
    }
    let mut v = defaults;
    for part in key.key.split('.') {
        v = match v.get(part) {
            Some(next) => next,
            None => return "none".into(),
        };
    }
    let text = match v {
        serde_json::Value::Object(o) if o.contains_key("connectors") => o["connectors"].to_string(),
        other => other.to_string(),
    };
    format!("`{}`", text.replace(',', ", "))
}

/// The defaults as a tree, with one connector named `<name>` holding a connector's defaults.
fn defaults_tree() -> serde_json::Value {
    let mut v = serde_json::to_value(crate::Config::default()).expect("serializable");
    v["connectors"]["<name>"] =
        serde_json::to_value(crate::ConnectorConfig::default()).expect("serializable");
    v
}

/// The table of `docs/configuration.md`.
pub fn markdown_table() -> String {
    let defaults = defaults_tree();
    let mut out = String::from(
        "| key | environment | old alias | default | meaning |\n|---|---|---|---|---|\n",
    );
    for key in KEYS {
        let alias = alias_of(key.key).map_or(String::new(), |a| format!("`{a}`"));
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} |\n",
            key.key,
            env_name(key.key),
            alias,
            default_shown(key, &defaults),
            key.meaning
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, ConnectorConfig, ConnectorKind, Route, Secret};
    use std::collections::BTreeSet;

    /// Leaf keys of a serialized config; connector names become `<name>`, routing keys other
    /// than default/truewallet `<bank code>`, and a route is one leaf.
    fn leaves(v: &serde_json::Value, path: &str, out: &mut BTreeSet<String>) {
        let obj = match v {
            serde_json::Value::Object(o) if !path.starts_with("routing.") => o,
            _ => {
                out.insert(path.to_string());
                return;
            }
        };
        for (k, child) in obj {
            let k = match path {
                "connectors" => "<name>",
                "routing" if k != "default" && k != "truewallet" => "<bank code>",
                _ => k.as_str(),
            };
            let p = if path.is_empty() {
                k.to_string()
            } else {
                format!("{path}.{k}")
            };
            leaves(child, &p, out);
        }
    }

    #[test]
    fn every_key_of_the_struct_is_documented() {
        // Every optional value set, so that nothing is skipped when serialized.
        let mut c = Config::default();
        c.server.admin_token = Some(Secret::new("x"));
        c.server.max_connections = Some(100);
        c.database.pool = Some(8);
        c.billing.url = Some("https://b".into());
        c.billing.secret = Some(Secret::new("x"));
        c.egress.ca_file = Some("ca.pem".into());
        c.outbound.proxy = Some(crate::CredentialUrl::new("http://p:1"));
        c.metrics.listen = Some("127.0.0.1:9090".into());
        c.connectors.insert(
            "x".into(),
            ConnectorConfig {
                kind: Some(ConnectorKind::KBank),
                base_url: Some("https://k".into()),
                api_key: Some(Secret::new("k")),
                client_id: Some("i".into()),
                client_secret: Some(Secret::new("s")),
                api_secret: Some(Secret::new("s")),
                client_cert: Some("c.pem".into()),
                client_key: Some(Secret::new("k")),
                ca_file: Some("ca.pem".into()),
                token_path: Some("/oauth/token".into()),
                not_found_codes: Some(vec!["8404".into()]),
                verify_env_id: Some("VERSLIP".into()),
                ..ConnectorConfig::default()
            },
        );
        c.routing.0.insert("004".into(), Route::to(&["x"]));
        let mut from_struct = BTreeSet::new();
        leaves(&serde_json::to_value(&c).unwrap(), "", &mut from_struct);
        let documented: BTreeSet<String> = KEYS.iter().map(|k| k.key.to_string()).collect();
        assert_eq!(from_struct, documented);
        for (_, key) in ALIASES {
            assert!(
                documented.contains(*key),
                "alias of an undocumented key {key}"
            );
        }
    }

    const DOC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/configuration.md");
    const START: &str =
        "<!-- keys:start (generated by `cargo test -p config -- --ignored write_key_table`) -->\n";
    const END: &str = "<!-- keys:end -->";

    /// The documented kinds are the connectors' list, in its order.
    #[test]
    fn the_kind_row_lists_every_kind() {
        let row = KEYS
            .iter()
            .find(|k| k.key == "connectors.<name>.kind")
            .expect("the kind row");
        let listed = ConnectorKind::ALL
            .map(|k| format!("`{}`", k.as_str()))
            .join(", ");
        assert!(
            row.meaning.starts_with(&format!("One of {listed} ")),
            "{}",
            row.meaning
        );
    }

    #[test]
    fn doc_table_matches_the_struct() {
        let doc = std::fs::read_to_string(DOC).expect("docs/configuration.md");
        let start = doc.find(START).expect("start marker") + START.len();
        let end = doc.find(END).expect("end marker");
        assert!(
            doc[start..end] == markdown_table(),
            "docs/configuration.md is out of date: run `cargo test -p config -- --ignored write_key_table`"
        );
    }

    /// Rewrites the table in docs/configuration.md.
    #[test]
    #[ignore]
    fn write_key_table() {
        let doc = std::fs::read_to_string(DOC).expect("docs/configuration.md");
        let start = doc.find(START).expect("start marker") + START.len();
        let end = doc.find(END).expect("end marker");
        let new = format!("{}{}{}", &doc[..start], markdown_table(), &doc[end..]);
        std::fs::write(DOC, new).unwrap();
    }
}
