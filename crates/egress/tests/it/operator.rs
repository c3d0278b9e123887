//! Operator-configured calls go through `[outbound] proxy`: a loopback "proxy" counts what
//! reaches it (absolute-form requests for http targets, CONNECT for https ones).

use egress::operator::{operator_client, OutboundSettings};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers every request with 200 "via-proxy"; counts request lines by method.
async fn counting_proxy() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (gets, connects) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (g, c) = (gets.clone(), connects.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (g, c) = (g.clone(), c.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = sock.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]);
                if head.starts_with("CONNECT ") {
                    c.fetch_add(1, Ordering::SeqCst);
                    // Refuse the tunnel: the count is what the test wants.
                    let _ = sock.write_all(b"HTTP/1.1 403 Forbidden\r\n\r\n").await;
                } else if head.starts_with("GET http://") {
                    g.fetch_add(1, Ordering::SeqCst);
                    let _ = sock
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\nconnection: close\r\n\r\nvia-proxy")
                        .await;
                }
            });
        }
    });
    (format!("http://{addr}"), gets, connects)
}

#[tokio::test]
async fn operator_calls_go_through_the_configured_proxy() {
    let (proxy, gets, connects) = counting_proxy().await;
    let settings = OutboundSettings {
        proxy: Some(proxy.parse().unwrap()),
    };
    let client = operator_client(&settings, Duration::from_secs(5)).unwrap();
    // Nothing listens on this port: only the proxy can answer.
    let body = client
        .get("http://127.0.0.1:9/status")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(body, "via-proxy");
    assert_eq!(gets.load(Ordering::SeqCst), 1);
    // An https target is tunnelled: the proxy sees a CONNECT.
    assert!(client.get("https://api.example.com/").send().await.is_err());
    assert_eq!(connects.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn without_a_proxy_calls_go_direct() {
    let (_proxy, gets, _) = counting_proxy().await;
    let client = operator_client(&OutboundSettings::default(), Duration::from_secs(5)).unwrap();
    assert!(client.get("http://127.0.0.1:9/").send().await.is_err());
    assert_eq!(gets.load(Ordering::SeqCst), 0);
}
