//! Connection bounds through the real server and its configuration (`[server]`): a body
//! trickled to any endpoint family is ended at `body_deadline_ms`; at `max_connections` idle
//! connections are shed so `/health` still answers; `idle_timeout_ms` closes kept-alive
//! connections. Short values here; the mechanism is proved with the accept loop's counters.

use domain::Clock;
use std::sync::atomic::Ordering;
use std::time::Duration;
use testkit::raw::{ask, idle_then_one_more, response, until, GENEROUS};
use testkit::{both, Backend, TestApp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "admin-token-0123456789abcdef0123456789";

fn config(extra: &str) -> String {
    format!("[server]\nadmin_token = \"{TOKEN}\"\n{extra}\n")
}

/// Sends a head declaring 10,000 body bytes, then trickles the body a byte every 20 ms (each
/// byte well within any timeout, the whole never) until the server answers.
async fn trickle(t: &TestApp, path: &str, headers: &str, content_type: &str) -> (String, String) {
    let c = TcpStream::connect(t.addr).await.unwrap();
    let (mut r, mut w) = c.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: {content_type}\r\n\
         content-length: 10000\r\n{headers}\r\n"
    );
    w.write_all(head.as_bytes()).await.unwrap();
    let writer = tokio::spawn(async move {
        for _ in 0..1000 {
            if w.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let answer = response(&mut r).await;
    writer.abort();
    answer
}

const HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n";

fn bearer(key: &str) -> String {
    format!("authorization: Bearer {key}\r\n")
}

both!(
    a_trickled_body_is_ended_at_the_deadline_on_every_endpoint_family,
    |b| async move {
        let t = TestApp::spawn_with_config(b, &config("body_deadline_ms = 300")).await;
        let tenant = t.tenant(100).await;
        let key = bearer(&tenant.api_key);
        let admin = bearer(TOKEN);
        let (_, partner_key) = t
            .app
            .services
            .partner()
            .create_partner(
                "Reseller",
                std::slice::from_ref(&tenant.service_id),
                &["quota:write".to_string()],
            )
            .await
            .unwrap();
        let partner = format!(
            "x-api-key: {partner_key}\r\nx-timestamp: {}\r\nx-nonce: nonce-0001\r\n",
            t.clock.now().unix_timestamp()
        );
        let json = "application/json";
        let form = "multipart/form-data; boundary=XyZ";
        let cases = [
            ("/v2/bank-accounts", key.as_str(), json),
            ("/api/v1/qr/generate", key.as_str(), json),
            // Partner requests are read (after their headers pass) before their signature is
            // checked.
            ("/v2/b2b/branch/quota/adjust", partner.as_str(), json),
            ("/admin/services", admin.as_str(), json),
            ("/v2/verify/bank", key.as_str(), json),
            ("/v2/verify/bank", key.as_str(), form),
            ("/api/v1/verify", key.as_str(), form),
        ];
        for (n, (path, headers, ct)) in cases.iter().enumerate() {
            let (head, body) = trickle(&t, path, headers, ct).await;
            let case = format!("{path} ({ct})");
            assert!(head.starts_with("http/1.1 400"), "{case}: {head} {body}");
            assert!(head.contains("connection: close"), "{case}: {head}");
            // v2's `body: …`; v1's field `body` with the message.
            assert!(body.contains("body"), "{case}: {body}");
            assert!(
                body.contains("was not received within 300 ms"),
                "{case}: {body}"
            );
            assert_eq!(
                t.conn_stats.body_timeouts.load(Ordering::Relaxed),
                n as u64 + 1,
                "{case}"
            );
        }
        t.stop().await;
    }
);

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_the_connection_cap_idle_connections_are_shed_and_health_answers() {
    let t = TestApp::spawn_with_config(Backend::Sqlite, &config("max_connections = 16")).await;
    let (idle, mut c) = idle_then_one_more(t.addr, 60).await;
    let (head, body) = ask(&mut c, HEALTH).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(body.contains("\"ok\""), "{body}");
    // 61 connections, 16 at a time.
    assert_eq!(t.conn_stats.shed.load(Ordering::Relaxed), 61 - 16);
    // A shed connection stops counting against the cap when it is chosen; its task ends (and
    // `open` falls) when the runtime next polls it, which under load can be after the answer.
    until("shed connections closed", || {
        t.conn_stats.open.load(Ordering::Relaxed) <= 16
    })
    .await;
    assert_eq!(t.conn_stats.open.load(Ordering::Relaxed), 16);
    drop(idle);
    t.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn configured_idle_and_head_timeouts_close_connections() {
    let t = TestApp::spawn_with_config(
        Backend::Sqlite,
        &config("idle_timeout_ms = 200\nheader_timeout_ms = 300"),
    )
    .await;
    // Kept alive after an answer, then nothing: closed at the idle timeout.
    let mut c = TcpStream::connect(t.addr).await.unwrap();
    let (head, _) = ask(&mut c, HEALTH).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let mut rest = Vec::new();
    let end = tokio::time::timeout(GENEROUS, c.read_to_end(&mut rest)).await;
    assert!(end.is_ok() && rest.is_empty(), "closed without an answer");
    // A head that never ends: closed at the head timeout.
    let mut slow = TcpStream::connect(t.addr).await.unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nhost:")
        .await
        .unwrap();
    let end = tokio::time::timeout(GENEROUS, slow.read_to_end(&mut rest)).await;
    assert!(end.is_ok(), "closed");
    until("counted", || {
        t.conn_stats.header_timeouts.load(Ordering::Relaxed) >= 1
            && t.conn_stats.idle_closed.load(Ordering::Relaxed) >= 1
    })
    .await;
    assert_eq!(t.conn_stats.idle_closed.load(Ordering::Relaxed), 1);
    assert_eq!(t.conn_stats.header_timeouts.load(Ordering::Relaxed), 1);
    t.stop().await;
}
