//! The HTTP/1 accept loop: the one place where connection policy lives.
//!
//! `axum::serve` has no hook for what happens to a request body the handler did not read. Hyper
//! then reads only what is already buffered and closes; the unread upload left in the socket
//! makes the kernel answer with a reset, and clients lose the answer (EPIPE / ECONNRESET) or
//! find their kept-alive connection dead. Here, after the router answers:
//!
//! - a body the handler left unread is read and discarded up to `Policy::drain_bytes` in all
//!   and `Policy::drain_time`; then the connection stays usable;
//! - past that bound (or when `Content-Length` already says so, or the client waits for
//!   `100 Continue` that was never sent) the answer carries `Connection: close`, and the socket
//!   is closed gracefully: the answer is flushed, the write side half-closed, and what the
//!   client still sends is read and discarded for `Policy::linger` before the socket is
//!   dropped, so the client reads the whole answer instead of a reset.

mod body;

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, Response};
use body::{Leftover, Tracked};
use http_body::Body as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout_at, Instant};
use tower::ServiceExt;

/// How connections are treated. One value per server; see the module comment.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The most request-body bytes (read by the handler plus discarded) after which the
    /// connection is still kept; beyond, the answer closes it.
    pub drain_bytes: u64,
    /// The longest time spent discarding an unread body before closing instead.
    pub drain_time: Duration,
    /// After an answer that closes the connection: how long the client's remaining bytes are
    /// read and discarded (after our half-close) before the socket is dropped.
    pub linger: Duration,
    /// The longest a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// On shutdown, how long connections may take to finish their requests.
    pub shutdown_grace: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            // The largest body a handler reads (6 MiB) plus multipart framing.
            drain_bytes: 6 * 1024 * 1024 + 64 * 1024,
            drain_time: Duration::from_secs(5),
            linger: Duration::from_secs(5),
            header_read_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Counters of what the loop did, for operators and tests (read with `Ordering::Relaxed`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Unread request bodies read and discarded, keeping the connection.
    pub drained: AtomicU64,
    /// Answers that closed their connection because of an unread body.
    pub closed: AtomicU64,
}

/// Serves `router` on `listener` until `shutdown` resolves; then stops accepting, lets each
/// connection finish its request in flight (at most `Policy::shutdown_grace`), and returns.
/// Handlers see the peer as `ConnectInfo<SocketAddr>`.
pub async fn serve(
    listener: TcpListener,
    router: axum::Router,
    policy: Policy,
    stats: Arc<Stats>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let policy = Arc::new(policy);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // Every connection task holds a sender; when all are gone, `recv` returns `None`.
    let (alive_tx, mut alive_rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let conn = Connection {
            router: router.clone(),
            policy: policy.clone(),
            stats: stats.clone(),
            peer,
        };
        let stop = stop_rx.clone();
        let alive = alive_tx.clone();
        tokio::spawn(async move {
            conn.run(stream, stop).await;
            drop(alive);
        });
    }
    let _ = stop_tx.send(true);
    drop(alive_tx);
    let _ = tokio::time::timeout(policy.shutdown_grace, alive_rx.recv()).await;
    Ok(())
}

struct Connection {
    router: axum::Router,
    policy: Arc<Policy>,
    stats: Arc<Stats>,
    peer: SocketAddr,
}

type BoxFuture =
    Pin<Box<dyn Future<Output = Result<Response<axum::body::Body>, Infallible>> + Send>>;

impl Connection {
    async fn run(self, stream: TcpStream, mut stop: tokio::sync::watch::Receiver<bool>) {
        let Connection {
            router,
            policy,
            stats,
            peer,
        } = self;
        let svc_policy = policy.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| -> BoxFuture {
            Box::pin(answer(
                router.clone(),
                svc_policy.clone(),
                stats.clone(),
                peer,
                req,
            ))
        });
        let mut conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(policy.header_read_timeout)
            .serve_connection(TokioIo::new(stream), service);
        let mut stopping = std::pin::pin!(async move {
            // A dropped sender also means stop.
            let _ = stop.wait_for(|s| *s).await;
        });
        let mut signalled = false;
        let ended = std::future::poll_fn(|cx| {
            if !signalled && stopping.as_mut().poll(cx).is_ready() {
                signalled = true;
                // Finish the request in flight, then close; an idle connection closes now.
                Pin::new(&mut conn).graceful_shutdown();
            }
            conn.poll_without_shutdown(cx)
        })
        .await;
        if let Err(e) = ended {
            tracing::debug!(error = %e, %peer, "connection ended with an error");
        }
        // Hyper has flushed its last answer but not closed the socket: close it gracefully.
        let parts = conn.into_parts();
        linger(parts.io.into_inner(), policy.linger).await;
    }
}

/// Half-closes (FIN after the answer), then reads and discards until the client closes or
/// `time` passes. Dropping a socket with unread bytes would send a reset, which can destroy an
/// answer the client has not read yet.
async fn linger(mut stream: TcpStream, time: Duration) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let deadline = Instant::now() + time;
    let mut buf = vec![0u8; 16 * 1024];
    while let Ok(Ok(n)) = timeout_at(deadline, stream.read(&mut buf)).await {
        if n == 0 {
            break;
        }
    }
}

/// One request: the router answers, then the unread body is settled (see the module comment).
async fn answer(
    router: axum::Router,
    policy: Arc<Policy>,
    stats: Arc<Stats>,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Result<Response<axum::body::Body>, Infallible> {
    let expects_continue = req
        .headers()
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"));
    let (mut parts, incoming) = req.into_parts();
    parts.extensions.insert(ConnectInfo(peer));
    let declared = incoming.size_hint().exact();
    let (tracked, leftover) = Tracked::new(incoming);
    let req = Request::from_parts(parts, tracked);
    let mut response = router.oneshot(req).await?;
    let settled = settle(&policy, leftover, expects_continue, declared).await;
    match settled {
        Settled::Whole => {}
        Settled::Drained => {
            stats.drained.fetch_add(1, Ordering::Relaxed);
        }
        Settled::Close => {
            stats.closed.fetch_add(1, Ordering::Relaxed);
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
    }
    Ok(response)
}

enum Settled {
    /// The handler read the whole body.
    Whole,
    /// The rest was read and discarded: the connection can serve another request.
    Drained,
    /// The answer must close the connection.
    Close,
}

/// Discards what the handler left of the body, within the policy's bounds.
async fn settle(
    policy: &Policy,
    leftover: Leftover,
    expects_continue: bool,
    declared: Option<u64>,
) -> Settled {
    let state = leftover.take();
    if state.ended {
        return Settled::Whole;
    }
    let Some(mut rest) = state.rest else {
        // The body is still held elsewhere, or broke mid-way: do not reuse the connection.
        return Settled::Close;
    };
    if expects_continue && !state.polled {
        // Answer with the final status instead of `100 Continue`: the client then sends no body
        // (or we discard it while lingering).
        return Settled::Close;
    }
    if declared.is_some_and(|n| n > policy.drain_bytes) {
        return Settled::Close;
    }
    let mut total = state.read;
    let deadline = Instant::now() + policy.drain_time;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut rest).poll_frame(cx));
        match timeout_at(deadline, frame).await {
            Ok(None) => return Settled::Drained,
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    total += data.len() as u64;
                    if total > policy.drain_bytes {
                        return Settled::Close;
                    }
                }
            }
            Ok(Some(Err(_))) | Err(_) => return Settled::Close,
        }
    }
}
