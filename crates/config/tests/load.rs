//! Loading: precedence, environment nesting and aliases, `_file` secrets, redaction,
//! unknown keys, validation messages and the operator-URL rule.

use config::{load, Config, ConnectorKind, Sources};
use std::io::Write;
use std::path::PathBuf;

fn file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slipverify-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

fn err(s: Sources) -> String {
    load(&s).expect_err("must be refused").to_string()
}

/// The refusal of a configuration that sets only the environment variable `var`.
fn env_err(var: &str, value: &str) -> String {
    err(Sources::new().env([(var, value)]))
}

#[test]
fn nothing_configured_is_todays_behaviour() {
    let c =
        load(&Sources::new().env([("SLIPVERIFY_LOG", "info"), ("SLIPVERIFY_TEST_PG_URL", "x")]))
            .unwrap();
    assert_eq!(c, Config::default());
    assert_eq!(c.server.listen, "127.0.0.1:8080");
    assert_eq!(c.database.url.expose(), "sqlite://slipverify.db");
    assert_eq!(c.jobs.poll_ms, 500);
    assert_eq!(c.schedules(), domain::job::Schedules::default());
    assert_eq!(c.routing.for_bank("004").connectors, vec!["sandbox"]);
    assert_eq!(c.routing.truewallet().connectors, vec!["sandbox"]);
    assert!(c.billing.url.is_none());
}

#[test]
fn flag_beats_env_beats_file_beats_default() {
    let f = file(
        "prec.toml",
        "[jobs]\npoll_ms = 100\nconcurrency = 3\nlease_secs = 90\n",
    );
    let only_file = load(&Sources::new().file(&f)).unwrap();
    assert_eq!(
        (only_file.jobs.poll_ms, only_file.jobs.concurrency),
        (100, 3)
    );
    assert_eq!(only_file.jobs.lease_secs, 90);
    let env = Sources::new().file(&f).env([
        ("SLIPVERIFY_JOBS__POLL_MS", "200"),
        ("SLIPVERIFY_JOBS__CONCURRENCY", "4"),
    ]);
    let c = load(&env.clone()).unwrap();
    assert_eq!(
        (c.jobs.poll_ms, c.jobs.concurrency, c.jobs.lease_secs),
        (200, 4, 90)
    );
    let c = load(&env.set("jobs.poll_ms", 300)).unwrap();
    assert_eq!((c.jobs.poll_ms, c.jobs.concurrency), (300, 4));
    // The file may come from SLIPVERIFY_CONFIG; the flag's file wins over it.
    let c = load(&Sources::new().env([("SLIPVERIFY_CONFIG", f.to_str().unwrap())])).unwrap();
    assert_eq!(c.jobs.poll_ms, 100);
    let other = file("other.toml", "[jobs]\npoll_ms = 50\n");
    let c = load(
        &Sources::new()
            .env([("SLIPVERIFY_CONFIG", f.to_str().unwrap())])
            .file(&other),
    )
    .unwrap();
    assert_eq!(c.jobs.poll_ms, 50);
    assert!(err(Sources::new().file("/nonexistent/slipverify.toml")).contains("cannot read"));
}

#[test]
fn env_nesting_reaches_every_level() {
    let c = load(&Sources::new().env([
        ("SLIPVERIFY_CONNECTORS__KBANK__KIND", "kbank"),
        (
            "SLIPVERIFY_CONNECTORS__KBANK__BASE_URL",
            "https://kbank.example",
        ),
        ("SLIPVERIFY_CONNECTORS__KBANK__CLIENT_ID", "12345"),
        ("SLIPVERIFY_CONNECTORS__KBANK__CLIENT_SECRET", "98765"),
        ("SLIPVERIFY_CONNECTORS__KBANK__MAX_CONCURRENCY", "4"),
        ("SLIPVERIFY_ROUTING__004", "[\"kbank\", \"sandbox\"]"),
        ("SLIPVERIFY_ROUTING__DEFAULT", "kbank,sandbox"),
        (
            "SLIPVERIFY_SERVER__ADMIN_TOKEN",
            "12345678901234567890123456789012",
        ),
        (
            "SLIPVERIFY_SERVER__TRUSTED_PROXIES",
            "10.0.0.0/8, 127.0.0.1",
        ),
    ]))
    .unwrap();
    let k = &c.connectors["kbank"];
    assert_eq!(k.kind, Some(ConnectorKind::KBank));
    // Digits stay strings where a string is expected.
    assert_eq!(k.client_id.as_deref(), Some("12345"));
    assert_eq!(k.client_secret.as_ref().unwrap().expose(), "98765");
    assert_eq!(k.max_concurrency, 4);
    assert_eq!(k.timeout_ms, 5000);
    assert_eq!(
        c.routing.for_bank("004").connectors,
        vec!["kbank", "sandbox"]
    );
    assert_eq!(
        c.routing.for_bank("014").connectors,
        vec!["kbank", "sandbox"]
    );
    assert_eq!(
        c.server.admin_token.as_ref().unwrap().expose(),
        "12345678901234567890123456789012"
    );
    assert_eq!(c.server.trusted_proxies, vec!["10.0.0.0/8", "127.0.0.1"]);
}

#[test]
fn old_flat_names_are_aliases_and_the_nested_name_wins() {
    let c = load(&Sources::new().env([
        ("SLIPVERIFY_JOB_POLL_MS", "250"),
        ("SLIPVERIFY_MAX_UPLOADS", "16"),
        ("SLIPVERIFY_VERIFY_RETRY_SCHEDULE", "1,2"),
        ("SLIPVERIFY_DATABASE_URL", "sqlite://other.db"),
        ("SLIPVERIFY_SANDBOX_DELAY_MS", ""),
        ("SLIPVERIFY_EGRESS_ALLOW_CIDRS", "127.0.0.0/8,::1/128"),
    ]))
    .unwrap();
    assert_eq!(c.jobs.poll_ms, 250);
    assert_eq!(c.server.max_uploads, 16);
    assert_eq!(c.jobs.verify_retry_schedule, vec![1, 2]);
    assert_eq!(c.database.url.expose(), "sqlite://other.db");
    assert_eq!(c.sandbox.delay_ms, 0, "empty is unset");
    assert_eq!(c.egress.allow_cidrs, vec!["127.0.0.0/8", "::1/128"]);
    for order in [true, false] {
        let mut vars = vec![
            ("SLIPVERIFY_JOB_POLL_MS", "250"),
            ("SLIPVERIFY_JOBS__POLL_MS", "40"),
        ];
        if order {
            vars.reverse();
        }
        assert_eq!(load(&Sources::new().env(vars)).unwrap().jobs.poll_ms, 40);
    }
}

#[test]
fn secrets_from_files() {
    let secret = file("billing-secret", "0123456789abcdef-from-file\n");
    let c = load(&Sources::new().env([
        ("SLIPVERIFY_BILLING__URL", "https://billing.example/renew"),
        ("SLIPVERIFY_BILLING__SECRET_FILE", secret.to_str().unwrap()),
    ]))
    .unwrap();
    assert_eq!(
        c.billing.secret.as_ref().unwrap().expose(),
        "0123456789abcdef-from-file"
    );
    let key = file("api-key", "k-123\n");
    let toml = format!(
        "[connectors.upstream]\nkind = \"easyslip\"\nbase_url = \"https://api.example.com\"\napi_key_file = {:?}\n",
        key.to_str().unwrap()
    );
    let f = file("with-key-file.toml", &toml);
    let c = load(&Sources::new().file(&f)).unwrap();
    assert_eq!(
        c.connectors["upstream"].api_key.as_ref().unwrap().expose(),
        "k-123"
    );
    // Both forms: refused, naming the key.
    let e = err(Sources::new()
        .file(&f)
        .env([("SLIPVERIFY_CONNECTORS__UPSTREAM__API_KEY", "inline")]));
    assert!(
        e.contains("connectors.upstream.api_key: give either api_key or api_key_file"),
        "{e}"
    );
    let e = env_err("SLIPVERIFY_SERVER__ADMIN_TOKEN_FILE", "/nonexistent/t");
    assert!(e.starts_with("server.admin_token_file: cannot read"), "{e}");
}

#[test]
fn secrets_are_redacted_in_debug_and_output() {
    let c = load(&Sources::new().env([
        (
            "SLIPVERIFY_ADMIN_TOKEN",
            "admin-token-that-is-long-enough-123456",
        ),
        ("SLIPVERIFY_BILLING_URL", "http://127.0.0.1:9/renew"),
        ("SLIPVERIFY_BILLING_SECRET", "billing-secret-1234567"),
        (
            "SLIPVERIFY_DATABASE_URL",
            "postgres://app:db-password@db/sv",
        ),
        ("SLIPVERIFY_CONNECTORS__X__KIND", "kbank"),
        (
            "SLIPVERIFY_CONNECTORS__X__BASE_URL",
            "https://kbank.example",
        ),
        ("SLIPVERIFY_CONNECTORS__X__CLIENT_ID", "cid"),
        (
            "SLIPVERIFY_CONNECTORS__X__CLIENT_SECRET",
            "client-secret-value",
        ),
        ("SLIPVERIFY_CONNECTORS__Y__KIND", "scb"),
        ("SLIPVERIFY_CONNECTORS__Y__BASE_URL", "https://scb.example"),
        ("SLIPVERIFY_CONNECTORS__Y__API_KEY", "scb-key-value"),
        ("SLIPVERIFY_CONNECTORS__Y__API_SECRET", "scb-secret-value"),
    ]))
    .unwrap();
    for text in [format!("{c:?}"), c.to_toml(), c.to_json()] {
        for secret in [
            "admin-token-that-is-long-enough",
            "billing-secret-1234567",
            "db-password",
            "client-secret-value",
            "scb-key-value",
            "scb-secret-value",
        ] {
            assert!(!text.contains(secret), "{secret} shown in {text}");
        }
        assert!(text.contains("[redacted]"));
        assert!(text.contains("cid"));
    }
}

#[test]
fn unknown_keys_are_errors_from_file_and_env() {
    let f = file("unknown.toml", "[jobs]\npoll = 100\n");
    let e = err(Sources::new().file(&f));
    assert!(e.starts_with("jobs.poll: unknown key"), "{e}");
    let f = file("unknown-section.toml", "[nope]\nx = 1\n");
    let e = err(Sources::new().file(&f));
    assert!(e.starts_with("nope: unknown key"), "{e}");
    let e = env_err("SLIPVERIFY_JOBS__POLL", "100");
    assert!(e.starts_with("jobs.poll: unknown key"), "{e}");
    let e = err(Sources::new().env([
        ("SLIPVERIFY_CONNECTORS__U__KIND", "sandbox"),
        ("SLIPVERIFY_CONNECTORS__U__API_TOKEN", "x"),
    ]));
    assert!(e.starts_with("connectors.u.api_token: unknown key"), "{e}");
    let f = file(
        "route-unknown.toml",
        "[routing]\n\"004\" = { connectors = [\"sandbox\"], fallback = true }\n",
    );
    assert!(err(Sources::new().file(&f)).contains("routing.004"));
}

#[test]
fn validation_names_the_key() {
    // One variable set to a bad value: the whole message.
    for (var, value, want) in [
        (
            "SLIPVERIFY_JOB_POLL_MS",
            "5",
            "jobs.poll_ms: must be 10 to 60000",
        ),
        (
            "SLIPVERIFY_MAX_UPLOADS",
            "0",
            "server.max_uploads: must be 1 to 1024",
        ),
        (
            "SLIPVERIFY_ADMIN_TOKEN",
            "short",
            "server.admin_token: must be at least 32 characters",
        ),
    ] {
        assert_eq!(env_err(var, value), want, "{var}");
    }
    // The same where the message goes on with the details: how it starts.
    for (var, value, start) in [
        (
            "SLIPVERIFY_WEBHOOK_RETRY_SCHEDULE",
            "ten",
            "webhooks.retry_schedule:",
        ),
        (
            "SLIPVERIFY_CONNECTORS__X__KIND",
            "foo",
            "connectors.x.kind: unknown kind \"foo\"",
        ),
    ] {
        let e = env_err(var, value);
        assert!(e.starts_with(start), "{e}");
    }
    let e = env_err("SLIPVERIFY_JOB_LEASE_SECS", "5");
    assert!(
        e.contains("jobs.lease_secs: must be at least 3 webhook timeouts"),
        "{e}"
    );
    let f = file(
        "connectors.toml",
        "[connectors.k]\nkind = \"kbank\"\nbase_url = \"https://k.example\"\n\
         [routing]\n\"004\" = [\"k\", \"missing\"]\n\"999\" = [\"k\"]\n",
    );
    let e = err(Sources::new().file(&f));
    for want in [
        "connectors.k.client_id: required for kind \"kbank\"",
        "connectors.k.client_secret: required for kind \"kbank\"",
        "routing.004: unknown connector \"missing\"",
        "routing.999: not a bank code",
    ] {
        assert!(e.contains(want), "{want} not in {e}");
    }
    let e = env_err("SLIPVERIFY_BILLING_URL", "https://b.example/");
    assert_eq!(e, "billing.secret: required with billing.url");
}

#[test]
fn operator_urls_must_be_https_unless_loopback() {
    let connector = |url: &str| {
        Sources::new().env([
            (
                "SLIPVERIFY_CONNECTORS__UPSTREAM__KIND",
                "easyslip".to_string(),
            ),
            ("SLIPVERIFY_CONNECTORS__UPSTREAM__BASE_URL", url.to_string()),
            ("SLIPVERIFY_CONNECTORS__UPSTREAM__API_KEY", "k".to_string()),
        ])
    };
    assert!(load(&connector("https://api.example.com")).is_ok());
    assert!(load(&connector("http://127.0.0.1:8081")).is_ok());
    assert!(load(&connector("http://localhost:8081")).is_ok());
    assert_eq!(
        err(connector("http://api.example.com")),
        "connectors.upstream.base_url: must be https unless the host is loopback"
    );
    let billing = |url: &str| {
        Sources::new().env([
            ("SLIPVERIFY_BILLING_URL", url.to_string()),
            ("SLIPVERIFY_BILLING_SECRET", "0123456789abcdef".to_string()),
        ])
    };
    assert!(load(&billing("http://[::1]:9/renew")).is_ok());
    assert_eq!(
        err(billing("http://10.0.0.5/renew")),
        "billing.url: must be https unless the host is loopback"
    );
}

#[test]
fn the_issue_example_parses() {
    let f = file(
        "example.toml",
        r#"
[connectors.upstream]
kind = "easyslip"
base_url = "https://api.example.com"
api_key = "..."
timeout_ms = 5000
max_concurrency = 16
breaker_failures = 5
breaker_cooldown_s = 30
[connectors.kbank]
kind = "kbank"
base_url = "https://kbank.example"
client_id = "id"
client_secret = "s"
[connectors.scb]
kind = "scb"
base_url = "https://scb.example"
api_key = "k"
api_secret = "s"
[routing]
"004" = ["kbank", "upstream"]
"014" = { connectors = ["scb", "upstream"], fallback_on_not_found = true }
default = ["upstream"]
truewallet = ["upstream"]
[outbound]
proxy = "http://proxy.internal:3128"
"#,
    );
    let c = load(&Sources::new().file(&f)).unwrap();
    let r = c.routing.for_bank("014");
    assert_eq!(r.connectors, vec!["scb", "upstream"]);
    assert!(r.fallback_on_not_found);
    assert!(!c.routing.for_bank("004").fallback_on_not_found);
    assert_eq!(c.routing.for_bank("002").connectors, vec!["upstream"]);
    assert_eq!(
        c.outbound_settings().unwrap().proxy.unwrap().as_str(),
        "http://proxy.internal:3128/"
    );
    assert_eq!(
        c.connector("sandbox").unwrap().kind,
        Some(ConnectorKind::Sandbox)
    );
    // What `config check` prints loads back to the same configuration (secrets aside).
    let again = load(&Sources::new().file(file("printed.toml", &c.to_toml())));
    assert!(again.is_ok(), "{:?}", again.err());
}

#[test]
fn scb_needs_its_key_and_secret_and_reads_the_secret_from_a_file() {
    let e = err(Sources::new().env([
        ("SLIPVERIFY_CONNECTORS__S__KIND", "scb"),
        ("SLIPVERIFY_CONNECTORS__S__CLIENT_ID", "id"),
    ]));
    for want in [
        "connectors.s.base_url: required for kind \"scb\"",
        "connectors.s.api_key: required for kind \"scb\"",
        "connectors.s.api_secret: required for kind \"scb\"",
    ] {
        assert!(e.contains(want), "{want} not in {e}");
    }
    let secret = file("scb-secret", "scb-secret-from-file\n");
    let c = load(&Sources::new().env([
        ("SLIPVERIFY_CONNECTORS__S__KIND", "scb"),
        ("SLIPVERIFY_CONNECTORS__S__BASE_URL", "https://scb.example"),
        ("SLIPVERIFY_CONNECTORS__S__API_KEY", "k"),
        (
            "SLIPVERIFY_CONNECTORS__S__API_SECRET_FILE",
            secret.to_str().unwrap(),
        ),
    ]))
    .unwrap();
    let s = &c.connectors["s"];
    assert_eq!(s.kind, Some(ConnectorKind::Scb));
    assert_eq!(
        s.api_secret.as_ref().unwrap().expose(),
        "scb-secret-from-file"
    );
}

/// The admin token stays off the command line: from the environment or from a file.
#[test]
fn admin_token_from_env_or_file() {
    let token = "an-admin-token-of-at-least-32-characters";
    let c = load(&Sources::new().env([("SLIPVERIFY_ADMIN_TOKEN", token)])).unwrap();
    assert_eq!(c.server.admin_token.as_ref().unwrap().expose(), token);
    let f = file("admin-token", &format!("{token}\n"));
    let c =
        load(&Sources::new().env([("SLIPVERIFY_SERVER__ADMIN_TOKEN_FILE", f.to_str().unwrap())]))
            .unwrap();
    assert_eq!(c.server.admin_token.as_ref().unwrap().expose(), token);
    let toml = format!("[server]\nadmin_token_file = {:?}\n", f.to_str().unwrap());
    let cf = file("admin-token-file.toml", &toml);
    let c = load(&Sources::new().file(&cf)).unwrap();
    assert_eq!(c.server.admin_token.as_ref().unwrap().expose(), token);
}

#[test]
fn connection_bounds_are_configured_and_checked() {
    let c = load(&Sources::new()).unwrap();
    assert_eq!(c.server.max_connections, None, "derived at start");
    assert_eq!(c.server.header_timeout_ms, 30_000);
    assert_eq!(c.server.idle_timeout_ms, 60_000);
    assert_eq!(c.server.body_deadline_ms, 30_000);
    let c = load(&Sources::new().env([
        ("SLIPVERIFY_SERVER__MAX_CONNECTIONS", "5000"),
        ("SLIPVERIFY_SERVER__HEADER_TIMEOUT_MS", "200"),
        ("SLIPVERIFY_SERVER__IDLE_TIMEOUT_MS", "300"),
        ("SLIPVERIFY_SERVER__BODY_DEADLINE_MS", "400"),
    ]))
    .unwrap();
    assert_eq!(c.server.max_connections, Some(5000));
    assert_eq!(c.server.header_timeout_ms, 200);
    assert_eq!(c.server.idle_timeout_ms, 300);
    assert_eq!(c.server.body_deadline_ms, 400);
    for (key, value, want) in [
        (
            "MAX_CONNECTIONS",
            "0",
            "server.max_connections: must be 1 to 1000000",
        ),
        (
            "HEADER_TIMEOUT_MS",
            "10",
            "server.header_timeout_ms: must be 50 to 600000",
        ),
        (
            "IDLE_TIMEOUT_MS",
            "3600001",
            "server.idle_timeout_ms: must be 50 to 3600000",
        ),
        (
            "BODY_DEADLINE_MS",
            "0",
            "server.body_deadline_ms: must be 50 to 600000",
        ),
    ] {
        let name = format!("SLIPVERIFY_SERVER__{key}");
        assert_eq!(env_err(name.as_str(), value), want);
    }
}

/// The reader's scan budget is configured, bounded, and a larger per-branch upload share than
/// the slots themselves is accepted (clamped where the slots are built).
#[test]
fn reader_scan_budget_is_configured_and_checked() {
    let c = load(&Sources::new()).unwrap();
    assert_eq!((c.limits.scan_ms, c.limits.scan_passes), (5000, 12));
    let c = load(&Sources::new().env([
        ("SLIPVERIFY_LIMITS__SCAN_MS", "40"),
        ("SLIPVERIFY_LIMITS__SCAN_PASSES", "6"),
    ]))
    .unwrap();
    assert_eq!((c.limits.scan_ms, c.limits.scan_passes), (40, 6));
    assert_eq!(
        env_err("SLIPVERIFY_LIMITS__SCAN_MS", "0"),
        "limits.scan_ms: must be 1 to 10000"
    );
    assert_eq!(
        env_err("SLIPVERIFY_LIMITS__SCAN_PASSES", "1"),
        "limits.scan_passes: must be 2 to 64"
    );
    assert!(load(&Sources::new().env([("SLIPVERIFY_MAX_UPLOADS", "2")])).is_ok());
}

/// The metrics listener is off unless configured; its address is checked like `server.listen`
/// and may not be the API's own.
#[test]
fn metrics_listener_is_off_by_default_and_checked() {
    assert_eq!(load(&Sources::new()).unwrap().metrics.listen, None);
    let c = load(&Sources::new().env([("SLIPVERIFY_METRICS__LISTEN", "127.0.0.1:9464")])).unwrap();
    assert_eq!(c.metrics.listen.as_deref(), Some("127.0.0.1:9464"));
    let c = load(&Sources::new().set("metrics.listen", "[::1]:9464")).unwrap();
    assert_eq!(c.metrics.listen.as_deref(), Some("[::1]:9464"));
    assert_eq!(
        env_err("SLIPVERIFY_METRICS__LISTEN", "9464"),
        "metrics.listen: \"9464\" is not HOST:PORT"
    );
    assert_eq!(
        err(Sources::new()
            .set("server.listen", "127.0.0.1:8080")
            .set("metrics.listen", "127.0.0.1:8080")),
        "metrics.listen: must differ from server.listen"
    );
}
