//! Unauthenticated work is bounded first (issue 28, item 4), through the real server: the
//! partner API refuses a bad key, a stale timestamp or a malformed nonce from its headers,
//! before any body byte; at `max_connections`, a request not authenticated (on every route
//! family) or an authenticated body below `body_min_rate` is shed before an idle connection.

use domain::Clock;
use std::sync::atomic::Ordering;
use std::time::Duration;
use testkit::raw::{ask, response, until, GENEROUS};
use testkit::{both, TestApp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::partner_sign;

const TOKEN: &str = "admin-token-0123456789abcdef0123456789";
const HEALTH: &[u8] = b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n";
const HEALTH_AND_CLOSE: &[u8] = b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
const ADJUST: &str = "/b2b/branch/quota/adjust";

fn config(extra: &str) -> String {
    format!("[server]\nadmin_token = \"{TOKEN}\"\n{extra}\n")
}

/// The server closed the connection without (another) answer.
async fn closed(c: &mut TcpStream) {
    let mut rest = Vec::new();
    let read = tokio::time::timeout(GENEROUS, c.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection");
    if read.is_ok() {
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    }
}

/// A partner request's head declaring 100 body bytes, none of them sent. With `Expect:
/// 100-continue`, a server that reads the body first answers `100 Continue`; one that refuses
/// from the headers answers with the final status at once.
async fn partner_head_only(t: &TestApp, headers: &str) -> (String, String) {
    let mut c = TcpStream::connect(t.addr).await.unwrap();
    let head = format!(
        "POST /v2{ADJUST} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 100\r\nexpect: 100-continue\r\n{headers}\r\n"
    );
    ask(&mut c, head.as_bytes()).await
}

both!(
    the_partner_route_refuses_from_its_headers_before_the_body_arrives,
    |b| async move {
        let t = TestApp::spawn(b).await;
        let tenant = t.tenant(100).await;
        let (p, key) = t
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
        let now = t.clock.now().unix_timestamp();
        let branch = format!("x-branch-key: {}\r\n", tenant.branch_id);
        let good = |ts: i64, nonce: &str| {
            format!("x-api-key: {key}\r\n{branch}x-timestamp: {ts}\r\nx-nonce: {nonce}\r\nx-signature: 00\r\n")
        };
        let cases = [
            (String::new(), "MISSING_API_KEY"),
            (
                good(now, "nonce-0001").replace(&key, &"ab".repeat(32)),
                "INVALID_API_KEY",
            ),
            (good(now - 3600, "nonce-0002"), "INVALID_TIMESTAMP"),
            (good(now, "bad nonce!"), "INVALID_NONCE"),
        ];
        for (headers, want) in &cases {
            let (head, body) = partner_head_only(&t, headers).await;
            assert!(head.starts_with("http/1.1 401"), "{want}: {head}");
            assert!(body.contains(want), "{want}: {body}");
        }
        // No `Expect`, and the body never sent: the answer still comes (after the unread
        // body's short drain), refused from the headers.
        let mut c = TcpStream::connect(t.addr).await.unwrap();
        let head = format!(
            "POST /v2{ADJUST} HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n{}\r\n",
            good(now, "nonce-0003").replace(&key, &"cd".repeat(32))
        );
        let (head, body) = ask(&mut c, head.as_bytes()).await;
        assert!(head.starts_with("http/1.1 401"), "{head}");
        assert!(body.contains("INVALID_API_KEY"), "{body}");
        // Good headers: only now is the body asked for, and its signature checked.
        let payload = r#"{"amount": 5}"#;
        let ts = now.to_string();
        let sig = partner_sign("POST", ADJUST, &ts, "nonce-0004", &p.secret, payload);
        let mut c = TcpStream::connect(t.addr).await.unwrap();
        let head = format!(
            "POST /v2{ADJUST} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nexpect: 100-continue\r\nx-api-key: {key}\r\n{branch}\
             x-timestamp: {ts}\r\nx-nonce: nonce-0004\r\nx-signature: {sig}\r\n\r\n",
            payload.len()
        );
        let (head, _) = ask(&mut c, head.as_bytes()).await;
        assert!(head.starts_with("http/1.1 100"), "{head}");
        c.write_all(payload.as_bytes()).await.unwrap();
        let (head, body) = response(&mut c).await;
        // The branch has no limit of its own to adjust: past every authentication check.
        assert!(head.starts_with("http/1.1 400"), "{head} {body}");
        assert!(body.contains("VALIDATION_ERROR"), "{body}");
        t.stop().await;
    }
);

/// A request head declaring 10,000 body bytes and the first 10 of them.
async fn mid_body(t: &TestApp, path: &str, headers: &str) -> TcpStream {
    let mut c = TcpStream::connect(t.addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 10000\r\n{headers}\r\n{{\"payload\""
    );
    c.write_all(head.as_bytes()).await.unwrap();
    c
}

/// A kept-alive connection that has had an answer and sends nothing more.
async fn idle(t: &TestApp) -> TcpStream {
    let mut c = TcpStream::connect(t.addr).await.unwrap();
    let (head, _) = ask(&mut c, HEALTH).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    c
}

/// `/health` on a new connection, which then closes.
async fn health_on_a_new_connection(t: &TestApp) {
    let mut c = TcpStream::connect(t.addr).await.unwrap();
    let (head, body) = ask(&mut c, HEALTH_AND_CLOSE).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(body.contains("\"ok\""), "{body}");
}

/// Waits until at most `n` connections are open.
async fn open_at_most(t: &TestApp, n: u64) {
    until("connections closed", || {
        t.conn_stats.open.load(Ordering::Relaxed) <= n
    })
    .await;
}

both!(
    at_the_cap_an_unauthenticated_request_mid_body_is_shed_before_an_idle_connection,
    |b| async move {
        let t = TestApp::spawn_with_config(b, &config("max_connections = 2")).await;
        let tenant = t.tenant(100).await;
        let mut kept = idle(&t).await;
        // No key, a wrong key, no token: each refused from its head, its body still coming.
        let wrong = "authorization: Bearer 00000000-0000-4000-8000-000000000000\r\n";
        let cases = [
            ("/v2/verify/bank", ""),
            ("/v2/verify/bank", wrong),
            ("/api/v1/verify", ""),
            ("/v2/b2b/branch/quota/adjust", ""),
            ("/admin/services", ""),
        ];
        for (n, (path, headers)) in cases.iter().enumerate() {
            let begun = t.conn_stats.requests.load(Ordering::Relaxed);
            let mut stranger = mid_body(&t, path, headers).await;
            until("its request begun", || {
                t.conn_stats.requests.load(Ordering::Relaxed) > begun
            })
            .await;
            health_on_a_new_connection(&t).await;
            closed(&mut stranger).await;
            open_at_most(&t, 1).await;
            assert_eq!(
                t.conn_stats.shed_suspects.load(Ordering::Relaxed),
                n as u64 + 1,
                "{path}"
            );
            // The idle client kept its connection.
            let (head, _) = ask(&mut kept, HEALTH).await;
            assert!(head.starts_with("http/1.1 200"), "{path}: {head}");
        }
        // A tenant's request mid-body is authenticated: the idle connection goes instead.
        let key = format!("authorization: Bearer {}\r\n", tenant.api_key);
        let mut tenant_conn = mid_body(&t, "/v2/verify/bank", &key).await;
        until("authenticated", || {
            t.conn_stats.authenticated.load(Ordering::Relaxed) >= 1
        })
        .await;
        health_on_a_new_connection(&t).await;
        closed(&mut kept).await;
        open_at_most(&t, 1).await;
        assert_eq!(
            t.conn_stats.shed_suspects.load(Ordering::Relaxed),
            cases.len() as u64
        );
        tenant_conn.write_all(b": \"x\"}").await.unwrap();
        tenant_conn.write_all(&[b' '; 10000 - 16]).await.unwrap();
        let (head, body) = response(&mut tenant_conn).await;
        // Read whole and answered (the payload is no slip).
        assert!(head.starts_with("http/1.1 4"), "{head}");
        assert!(body.contains("\"success\":false"), "{body}");
        t.stop().await;
    }
);

both!(
    at_the_cap_an_authenticated_body_below_the_floor_is_shed_before_an_idle_connection,
    |b| async move {
        let t = TestApp::spawn_with_config(
            b,
            &config("max_connections = 2\nbody_min_rate = 1024\nbody_min_rate_after_ms = 200"),
        )
        .await;
        let tenant = t.tenant(100).await;
        let mut kept = idle(&t).await;
        let key = format!("authorization: Bearer {}\r\n", tenant.api_key);
        // 10 bytes, then nothing: far below 1 KiB/s once 200 ms have passed.
        let mut slow = mid_body(&t, "/v2/verify/bank", &key).await;
        until("authenticated", || {
            t.conn_stats.authenticated.load(Ordering::Relaxed) >= 1
        })
        .await;
        // A lower bound (the floor's grace), not an assertion on time.
        tokio::time::sleep(Duration::from_millis(600)).await;
        health_on_a_new_connection(&t).await;
        closed(&mut slow).await;
        assert_eq!(t.conn_stats.shed_suspects.load(Ordering::Relaxed), 1);
        let (head, _) = ask(&mut kept, HEALTH).await;
        assert!(head.starts_with("http/1.1 200"), "{head}");
        t.stop().await;
    }
);
