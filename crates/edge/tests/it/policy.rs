//! The connection policy over raw TCP, against a router whose handler never reads the body
//! (as an authentication failure does), with small bounds so each limit is reached quickly.

use axum::routing::{get, post};
use axum::Router;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::raw::{ask, response, GET_OK};

const BOUND: u64 = 64 * 1024;

async fn start() -> (std::net::SocketAddr, Arc<edge::Stats>) {
    let router = Router::new()
        .route(
            "/refuse",
            post(|| async { (axum::http::StatusCode::UNAUTHORIZED, "no") }),
        )
        .route("/ok", get(|| async { "ok" }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(edge::Stats::default());
    let policy = edge::Policy {
        drain_bytes: BOUND,
        drain_time: Duration::from_millis(300),
        linger: Duration::from_secs(2),
        ..Default::default()
    };
    let s = stats.clone();
    tokio::spawn(edge::serve(
        listener,
        router,
        policy,
        s,
        std::future::pending(),
    ));
    (addr, stats)
}

/// A connection to a fresh server, and the server's counters.
async fn connected() -> (TcpStream, Arc<edge::Stats>) {
    let (addr, stats) = start().await;
    (TcpStream::connect(addr).await.unwrap(), stats)
}

/// The server closed gracefully after its answer, and counted it.
async fn closed_gracefully(c: &mut TcpStream, stats: &edge::Stats) {
    expect_eof(c).await;
    assert_eq!(stats.closed.load(Ordering::Relaxed), 1);
}

fn post_head(len: usize, extra: &str) -> String {
    format!("POST /refuse HTTP/1.1\r\nhost: x\r\ncontent-length: {len}\r\n{extra}\r\n")
}

/// Reads a 401 that closes the connection; returns its body.
async fn refused_and_closing(c: &mut TcpStream) -> String {
    let (head, text) = response(c).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    text
}

async fn expect_eof(c: &mut TcpStream) {
    let mut rest = Vec::new();
    c.read_to_end(&mut rest)
        .await
        .expect("a graceful close, not a reset");
    assert!(rest.is_empty(), "nothing after the answer");
}

#[tokio::test]
async fn an_unread_body_within_the_bound_is_discarded_and_the_connection_kept() {
    let (mut c, stats) = connected().await;
    let body = vec![b'x'; 60 * 1024];
    for _ in 0..3 {
        c.write_all(post_head(body.len(), "").as_bytes())
            .await
            .unwrap();
        c.write_all(&body).await.unwrap();
        let (head, text) = response(&mut c).await;
        assert!(head.starts_with("http/1.1 401"), "{head}");
        assert!(!head.contains("connection: close"), "{head}");
        assert_eq!(text, "no");
    }
    let (head, text) = ask(&mut c, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(text, "ok");
    assert_eq!(stats.accepted.load(Ordering::Relaxed), 1);
    assert_eq!(stats.drained.load(Ordering::Relaxed), 3);
}

#[tokio::test]
async fn a_declared_length_past_the_bound_is_answered_whole_then_closed_gracefully() {
    let (mut c, stats) = connected().await;
    let len = 4 * BOUND as usize;
    c.write_all(post_head(len, "").as_bytes()).await.unwrap();
    // The client goes on sending while the answer comes: the server discards it while it
    // lingers, so no reset destroys the answer.
    c.write_all(&vec![b'x'; len]).await.unwrap();
    assert_eq!(refused_and_closing(&mut c).await, "no");
    c.shutdown().await.unwrap();
    closed_gracefully(&mut c, &stats).await;
}

#[tokio::test]
async fn a_chunked_body_past_the_bound_closes() {
    let (mut c, stats) = connected().await;
    c.write_all(b"POST /refuse HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    let chunk = vec![b'x'; 16 * 1024];
    for _ in 0..(2 * BOUND as usize / chunk.len()) {
        c.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .unwrap();
        c.write_all(&chunk).await.unwrap();
        c.write_all(b"\r\n").await.unwrap();
    }
    let (head, _) = response(&mut c).await;
    assert!(head.contains("connection: close"), "{head}");
    c.shutdown().await.unwrap();
    closed_gracefully(&mut c, &stats).await;
}

#[tokio::test]
async fn a_body_that_stalls_is_given_up_after_the_drain_time() {
    let (mut c, stats) = connected().await;
    c.write_all(post_head(10_000, "").as_bytes()).await.unwrap();
    c.write_all(&[b'x'; 100]).await.unwrap();
    // Nothing more is sent: the answer still comes, closing the connection.
    refused_and_closing(&mut c).await;
    closed_gracefully(&mut c, &stats).await;
}

#[tokio::test]
async fn expect_continue_refused_before_its_body_gets_the_final_status() {
    let (mut c, _) = connected().await;
    c.write_all(post_head(50_000, "expect: 100-continue\r\n").as_bytes())
        .await
        .unwrap();
    // No `100 Continue` first: the final status, and the connection closes.
    assert_eq!(refused_and_closing(&mut c).await, "no");
    expect_eof(&mut c).await;
}
