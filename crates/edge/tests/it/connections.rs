//! Connection bounds over raw TCP with short timeouts: the cap (suspects shed first, then idle
//! connections), the idle keep-alive timeout, the head timeout, and the body deadline.

use axum::routing::{get, post};
use axum::{Extension, Router};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use crate::raw::{ask, closed, idle_then_one_more, response, until, GET_OK};

const SHORT: Duration = Duration::from_millis(200);

struct Server {
    addr: std::net::SocketAddr,
    stats: Arc<edge::Stats>,
    /// `/hold` waits for a permit.
    gate: Arc<Semaphore>,
    /// Requests `/hold` has begun.
    holding: Arc<std::sync::atomic::AtomicUsize>,
    /// Requests `/authed-read` has vouched for.
    vouched: Arc<std::sync::atomic::AtomicUsize>,
}

async fn start(policy: edge::Policy) -> Server {
    let gate = Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let holding = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = holding.clone();
    let vouched = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let vouches = vouched.clone();
    let router = Router::new()
        .route("/ok", get(|| async { "ok" }))
        // An authenticated request that waits for a permit.
        .route(
            "/hold",
            get(move |Extension(mark): Extension<edge::AuthMark>| {
                mark.mark();
                let g = held.clone();
                count.fetch_add(1, Ordering::Relaxed);
                async move {
                    let _p = g.acquire().await;
                    "released"
                }
            }),
        )
        // Reads its body without vouching for the caller.
        .route("/read", post(read))
        // Vouches for the caller, then reads its body.
        .route(
            "/authed-read",
            post(
                move |Extension(mark): Extension<edge::AuthMark>, body: axum::body::Body| {
                    mark.mark();
                    vouches.fetch_add(1, Ordering::Relaxed);
                    read(body)
                },
            ),
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
        vouched,
    }
}

async fn read(body: axum::body::Body) -> (axum::http::StatusCode, String) {
    match axum::body::to_bytes(body, 1 << 20).await {
        Ok(b) => (axum::http::StatusCode::OK, format!("{}", b.len())),
        Err(e) => match edge::BodyTimedOut::find(&e) {
            Some(_) => (axum::http::StatusCode::BAD_REQUEST, "too slow".into()),
            None => (axum::http::StatusCode::BAD_REQUEST, "broken".into()),
        },
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

/// A connection whose request is in progress: a head declaring 100,000 body bytes and the
/// first 10 of them; the rest never comes unless the test sends it.
async fn mid_body(addr: std::net::SocketAddr, path: &str) -> TcpStream {
    let mut c = TcpStream::connect(addr).await.unwrap();
    let head = format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 100000\r\n\r\n");
    c.write_all(head.as_bytes()).await.unwrap();
    c.write_all(b"0123456789").await.unwrap();
    c
}

/// A kept-alive connection that has had its answer and sends nothing more.
async fn idle_after_answer(addr: std::net::SocketAddr) -> TcpStream {
    let mut c = TcpStream::connect(addr).await.unwrap();
    let (head, _) = ask(&mut c, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    c
}

/// Waits until `n` requests have begun (the idle connection's included).
async fn begun(s: &Server, n: u64) {
    until("requests begun", || {
        s.stats.requests.load(Ordering::Relaxed) >= n
    })
    .await;
}

#[tokio::test]
async fn at_the_cap_an_unauthenticated_request_mid_body_is_shed_before_an_idle_connection() {
    let s = capped(2).await;
    let mut idle = idle_after_answer(s.addr).await;
    let mut stranger = mid_body(s.addr, "/read").await;
    begun(&s, 2).await;
    let mut fresh = TcpStream::connect(s.addr).await.unwrap();
    let (head, body) = ask(&mut fresh, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(body, "ok");
    // The stranger's request is dropped unanswered; the idle client still has its connection.
    closed(&mut stranger).await;
    assert_eq!(s.stats.shed.load(Ordering::Relaxed), 1);
    assert_eq!(s.stats.shed_suspects.load(Ordering::Relaxed), 1);
    let (head, _) = ask(&mut idle, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

#[tokio::test]
async fn at_the_cap_an_authenticated_request_whose_body_keeps_coming_is_not_shed() {
    let s = start(edge::Policy {
        max_connections: 2,
        body_min_rate_after: SHORT,
        ..Default::default()
    })
    .await;
    let idle = idle_after_answer(s.addr).await;
    let mut vouched = mid_body(s.addr, "/authed-read").await;
    until("vouched for", || s.vouched.load(Ordering::Relaxed) == 1).await;
    // Well above the floor (1 KiB/s) since the body was first awaited.
    vouched.write_all(&[b'x'; 20_000]).await.unwrap();
    let mut fresh = TcpStream::connect(s.addr).await.unwrap();
    let (head, _) = ask(&mut fresh, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    // The idle one made room; the authenticated body is still read to its end.
    assert_eq!(s.stats.shed_suspects.load(Ordering::Relaxed), 0);
    assert_eq!(s.stats.shed.load(Ordering::Relaxed), 1);
    let mut idle = idle;
    closed(&mut idle).await;
    vouched.write_all(&[b'x'; 79_990]).await.unwrap();
    let (head, body) = response(&mut vouched).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(body, "100000");
}

#[tokio::test]
async fn at_the_cap_an_authenticated_body_below_the_rate_floor_is_shed_before_an_idle_connection() {
    let s = start(edge::Policy {
        max_connections: 2,
        body_min_rate: 1024,
        body_min_rate_after: SHORT,
        ..Default::default()
    })
    .await;
    let mut idle = idle_after_answer(s.addr).await;
    // 10 bytes, then nothing: far below 1 KiB/s once `SHORT` has passed.
    let mut slow = mid_body(s.addr, "/authed-read").await;
    until("vouched for", || s.vouched.load(Ordering::Relaxed) == 1).await;
    tokio::time::sleep(SHORT * 2).await;
    let mut fresh = TcpStream::connect(s.addr).await.unwrap();
    let (head, _) = ask(&mut fresh, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    closed(&mut slow).await;
    assert_eq!(s.stats.shed_suspects.load(Ordering::Relaxed), 1);
    let (head, _) = ask(&mut idle, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
}

#[tokio::test]
async fn among_suspects_the_oldest_request_is_shed_first() {
    let s = capped(2).await;
    let mut older = mid_body(s.addr, "/read").await;
    begun(&s, 1).await;
    let mut newer = mid_body(s.addr, "/read").await;
    begun(&s, 2).await;
    let mut fresh = TcpStream::connect(s.addr).await.unwrap();
    let (head, _) = ask(&mut fresh, GET_OK).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    closed(&mut older).await;
    assert_eq!(s.stats.shed.load(Ordering::Relaxed), 1);
    // The newer request is still being read: finishing its body gets its answer.
    newer.write_all(&[b'x'; 99_990]).await.unwrap();
    let (head, body) = response(&mut newer).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert_eq!(body, "100000");
}
