//! Connection bounds over raw TCP with short timeouts: the cap (idle connections shed first),
//! the idle keep-alive timeout, the head timeout, and the body deadline.

use axum::routing::{get, post};
use axum::Router;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::raw::{ask, idle_then_one_more, response, until, GENEROUS, GET_OK};

const SHORT: Duration = Duration::from_millis(200);

struct Server {
    addr: std::net::SocketAddr,
    stats: Arc<edge::Stats>,
    /// `/hold` waits for a permit.
    gate: Arc<Semaphore>,
    /// Requests `/hold` has begun.
    holding: Arc<std::sync::atomic::AtomicUsize>,
}

async fn start(policy: edge::Policy) -> Server {
    let gate = Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let holding = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = holding.clone();
    let router = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/hold",
            get(move || {
                let g = held.clone();
                count.fetch_add(1, Ordering::Relaxed);
                async move {
                    let _p = g.acquire().await;
                    "released"
                }
            }),
        )
        .route(
            "/read",
            post(|body: axum::body::Body| async move {
                match axum::body::to_bytes(body, 1 << 20).await {
                    Ok(b) => (axum::http::StatusCode::OK, format!("{}", b.len())),
                    Err(e) => match edge::BodyTimedOut::find(&e) {
                        Some(_) => (axum::http::StatusCode::BAD_REQUEST, "too slow".into()),
                        None => (axum::http::StatusCode::BAD_REQUEST, "broken".into()),
                    },
                }
            }),
        );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stats = Arc::new(edge::Stats::default());
    tokio::spawn(edge::serve(
        listener,
        router,
        policy,
        stats.clone(),
        std::future::pending(),
    ));
    Server {
        addr,
        stats,
        gate,
        holding,
    }
}

/// A server that holds at most `max_connections` connections.
async fn capped(max_connections: usize) -> Server {
    start(edge::Policy {
        max_connections,
        ..Default::default()
    })
    .await
}

/// The server closed the connection (end of stream or a reset), without answering.
async fn closed(c: &mut TcpStream) {
    let mut rest = Vec::new();
    let read = tokio::time::timeout(GENEROUS, c.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection");
    if read.is_ok() {
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    }
}

#[tokio::test]
async fn at_the_cap_idle_connections_are_shed_oldest_first_and_a_new_one_is_answered() {
    let s = capped(8).await;
    let (mut idle, mut fresh) = idle_then_one_more(s.addr, 20).await;
    let (head, body) = ask(&mut fresh, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(body, "ok");
    // 21 connections, 8 at a time: 13 shed, the oldest first.
    assert_eq!(s.stats.shed.load(Ordering::Relaxed), 13);
    assert_eq!(s.stats.full.load(Ordering::Relaxed), 0);
    assert!(s.stats.open.load(Ordering::Relaxed) <= 8);
    for c in idle.iter_mut().take(13) {
        closed(c).await;
    }
    // The newest idle ones are still served.
    let last = idle.last_mut().unwrap();
    let (head, _) = ask(last, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

#[tokio::test]
async fn at_the_cap_with_every_connection_busy_accepting_waits_for_one_to_finish() {
    let s = capped(2).await;
    let mut busy = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(b"GET /hold HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        busy.push(c);
    }
    until("both requests are in progress", || {
        s.holding.load(Ordering::Relaxed) == 2
    })
    .await;
    let mut third = TcpStream::connect(s.addr).await.unwrap();
    third
        .write_all(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    // Nothing idle to shed: the loop waits, and the third is not accepted yet.
    until("the loop waits at the cap", || {
        s.stats.full.load(Ordering::Relaxed) >= 1
    })
    .await;
    assert_eq!(s.stats.shed.load(Ordering::Relaxed), 0);
    // One request finishes: its connection is idle now, so it is shed for the third.
    s.gate.add_permits(1);
    let (head, _) = response(&mut third).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(s.stats.shed.load(Ordering::Relaxed), 1);
    s.gate.add_permits(1);
}

#[tokio::test]
async fn a_kept_alive_connection_without_a_next_request_is_closed_after_the_idle_timeout() {
    let s = start(edge::Policy {
        idle_timeout: SHORT,
        header_read_timeout: Duration::from_secs(30),
        ..Default::default()
    })
    .await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let (head, _) = ask(&mut c, GET_OK).await;
    assert!(!head.contains("connection: close"), "{head}");
    closed(&mut c).await;
    until("the connection is counted closed", || {
        s.stats.open.load(Ordering::Relaxed) == 0
    })
    .await;
    assert_eq!(s.stats.idle_closed.load(Ordering::Relaxed), 1);
    assert_eq!(s.stats.header_timeouts.load(Ordering::Relaxed), 0);
}

/// A server with a short head timeout and a long idle timeout.
async fn head_timeout_server() -> Server {
    start(edge::Policy {
        header_read_timeout: SHORT,
        idle_timeout: Duration::from_secs(60),
        ..Default::default()
    })
    .await
}

/// The connection is counted as a head timeout, not as an idle one.
async fn counted_as_head_timeout(s: &Server) {
    until("counted", || {
        s.stats.header_timeouts.load(Ordering::Relaxed) == 1
    })
    .await;
    assert_eq!(s.stats.idle_closed.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn a_new_connection_that_sends_nothing_is_closed_after_the_head_timeout() {
    let s = head_timeout_server().await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    closed(&mut c).await;
    counted_as_head_timeout(&s).await;
}

#[tokio::test]
async fn a_head_trickled_byte_by_byte_is_cut_off_at_the_head_timeout() {
    let s = head_timeout_server().await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    // Each byte comes well within the timeout; the head as a whole never does.
    let head = b"GET /ok HTTP/1.1\r\nhost: x\r\nx-pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut cut = false;
    for b in head.iter().cycle().take(2000) {
        if c.write_all(&[*b]).await.is_err() {
            cut = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        if s.stats.header_timeouts.load(Ordering::Relaxed) == 1 {
            cut = true;
            break;
        }
    }
    assert!(cut, "the trickle was never cut off");
    closed(&mut c).await;
    assert_eq!(s.stats.header_timeouts.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_slow_head_on_a_kept_alive_connection_is_cut_off_too() {
    let s = head_timeout_server().await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let (head, _) = ask(&mut c, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    // The next request's head starts and never ends.
    c.write_all(b"GET /ok HTTP/1.1\r\nhost:").await.unwrap();
    closed(&mut c).await;
    counted_as_head_timeout(&s).await;
}

#[tokio::test]
async fn a_body_not_in_by_the_deadline_fails_for_the_handler_and_the_answer_closes() {
    let s = start(edge::Policy {
        body_deadline: SHORT,
        ..Default::default()
    })
    .await;
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let post = b"POST /read HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n0123456789";
    let (head, body) = ask(&mut c, post).await;
    assert!(head.starts_with("http/1.1 400"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(body, "too slow");
    assert_eq!(s.stats.body_timeouts.load(Ordering::Relaxed), 1);
    c.shutdown().await.unwrap();
    closed(&mut c).await;
    // A body that arrives in time is read whole, on a connection that stays open.
    let mut c = TcpStream::connect(s.addr).await.unwrap();
    let post = b"POST /read HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\n0123456789";
    let (head, body) = ask(&mut c, post).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    assert_eq!(body, "10");
}
