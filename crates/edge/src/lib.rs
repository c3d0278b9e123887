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
//!
//! And the connections themselves are bounded (see `conn`): at most `Policy::max_connections`
//! are open (at the cap a suspect, else the one idle the longest, is shed, or accepting waits
//! while all are busy); a connection waiting for a request closes after `idle_timeout` without a byte of it,
//! or `header_read_timeout` after its first byte (after accepting, for the first request)
//! without the whole head; a body not in within `body_deadline` fails with [`BodyTimedOut`].
//! At the cap, suspects go first: a request not marked authenticated ([`AuthMark`], which the
//! layer that authenticates sets), a body arriving below `body_min_rate`, a connection only
//! lingering; they are cut at once, without finishing their request.

mod body;
mod conn;
mod fds;

pub use body::{BodyDeadline, BodyTimedOut};
pub use conn::AuthMark;
pub use fds::{max_connections_for, raise_nofile_limit};

use axum::extract::ConnectInfo;
use axum::http::{header, HeaderValue, Request, Response};
use body::{Leftover, Tracked};
use conn::{Answered, ConnState, Open, Progress, Registry, Watched};
use http_body::Body as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
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
    /// The longest a client may take to send a request's head, from its first byte (for a new
    /// connection, from accepting it).
    pub header_read_timeout: Duration,
    /// How long a kept-alive connection may wait for the first byte of its next request.
    pub idle_timeout: Duration,
    /// The longest a request body may take to arrive in full.
    pub body_deadline: Duration,
    /// Connections open at once; see [`max_connections_for`].
    pub max_connections: usize,
    /// A body awaited for `body_min_rate_after` that has averaged fewer bytes a second than
    /// this makes its connection a suspect at the cap (0: no floor).
    pub body_min_rate: u64,
    /// How long a body may come slowly before the floor applies.
    pub body_min_rate_after: Duration,
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
            idle_timeout: Duration::from_secs(60),
            body_deadline: Duration::from_secs(30),
            max_connections: 768,
            body_min_rate: 1024,
            body_min_rate_after: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Counters of what the loop did, for operators and tests (read with `Ordering::Relaxed`).
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Requests begun (their head read).
    pub requests: AtomicU64,
    /// Requests the layer above marked authenticated ([`AuthMark`]).
    pub authenticated: AtomicU64,
    /// Unread request bodies read and discarded, keeping the connection.
    pub drained: AtomicU64,
    /// Answers that closed their connection because of an unread body.
    pub closed: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections closed to make room for a new one at the cap (suspects and idle ones).
    pub shed: AtomicU64,
    /// Of those, suspects: unauthenticated requests, bodies below the floor, lingerers.
    pub shed_suspects: AtomicU64,
    /// Times the accept loop waited at the cap with nothing to shed.
    pub full: AtomicU64,
    /// Kept-alive connections closed after `idle_timeout` without a next request.
    pub idle_closed: AtomicU64,
    /// Connections closed because a request head was not complete in time.
    pub header_timeouts: AtomicU64,
    /// Request bodies not in within `body_deadline`.
    pub body_timeouts: AtomicU64,
    /// Failed accepts (out of descriptors and the like).
    pub accept_errors: AtomicU64,
}

/// The listen queue's length (the kernel clamps it to `net.core.somaxconn`). Tokio's default
/// of 1,024 fills when more clients than the connection cap keep reconnecting: new connections'
/// SYNs are then dropped and retried a second later, so `/health` misses its second even
/// though every accepted connection is served at once.
pub const LISTEN_BACKLOG: u32 = 65_535;

/// Binds `addr` (`host:port`, the first address it resolves to) with [`LISTEN_BACKLOG`].
pub async fn listen(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket = if a.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(a).and_then(|()| socket.listen(LISTEN_BACKLOG)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "no address to listen on",
        )
    }))
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
    let registry = Arc::new(Registry::new(&policy));
    let cap = policy.max_connections.max(1);
    let mut backoff = Duration::from_millis(10);
    'serve: loop {
        let (stream, peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of descriptors and the like: back off (up to 1 s) instead of spinning.
                    stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            },
        };
        backoff = Duration::from_millis(10);
        // At the cap: shed a suspect, else the connection idle the longest, else wait (not
        // accepting others) for one to close or become idle. Only a connection that arrived
        // sheds one.
        while registry.counted() >= cap {
            let room = registry.room.notified();
            let mut room = std::pin::pin!(room);
            room.as_mut().enable();
            // A flood of strangers reconnects as fast as it is shed: one scan frees room for
            // the next arrivals too (1/64 of the cap), so accepting keeps up with it.
            let n = registry.shed_suspects((cap / 64).max(1)) as u64;
            if n > 0 {
                stats.shed.fetch_add(n, Ordering::Relaxed);
                stats.shed_suspects.fetch_add(n, Ordering::Relaxed);
                continue;
            }
            if registry.shed_oldest() {
                stats.shed.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            stats.full.fetch_add(1, Ordering::Relaxed);
            tokio::select! {
                _ = &mut shutdown => break 'serve,
                _ = room => {}
            }
        }
        let _ = stream.set_nodelay(true);
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        let open = Open {
            state: registry.open(),
            registry: registry.clone(),
            stats: stats.clone(),
        };
        stats.open.fetch_add(1, Ordering::Relaxed);
        let conn = Connection {
            router: router.clone(),
            policy: policy.clone(),
            stats: stats.clone(),
            peer,
        };
        let stop = stop_rx.clone();
        let alive = alive_tx.clone();
        tokio::spawn(async move {
            conn.run(stream, open, stop).await;
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
    async fn run(
        self,
        stream: TcpStream,
        open: Open,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let Connection {
            router,
            policy,
            stats,
            peer,
        } = self;
        let state = open.state.clone();
        let registry = open.registry.clone();
        let io = Watched::new(stream, state.clone(), stats.clone(), &policy);
        let svc_policy = policy.clone();
        let svc_state = state.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| -> BoxFuture {
            let (mark, progress) = registry.begin(&svc_state, &stats);
            stats.requests.fetch_add(1, Ordering::Relaxed);
            Box::pin(answer(
                router.clone(),
                svc_policy.clone(),
                stats.clone(),
                peer,
                req,
                (mark, progress),
                (registry.clone(), svc_state.clone()),
            ))
        });
        // Head and idle deadlines are `Watched`'s: hyper's own would run from the end of the
        // previous answer, making the idle timeout and the head timeout one.
        let mut conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(None)
            .serve_connection(TokioIo::new(io), service);
        let mut stopping = std::pin::pin!(async move {
            // A dropped sender also means stop.
            let _ = stop.wait_for(|s| *s).await;
        });
        let shed = state.shed.notified();
        let mut shed = std::pin::pin!(shed);
        let mut signalled = false;
        let mut shedding = false;
        let ended = std::future::poll_fn(|cx| {
            if !signalled && stopping.as_mut().poll(cx).is_ready() {
                signalled = true;
                // Finish the request in flight, then close; an idle connection closes now.
                Pin::new(&mut conn).graceful_shutdown();
            }
            if !shedding && shed.as_mut().poll(cx).is_ready() {
                shedding = true;
                if state.busy() {
                    // A suspect: its request is dropped with the socket, unanswered.
                    return Poll::Ready(None);
                }
                // Idle: one more poll flushes what an answer that just ended may still have
                // buffered; then the socket is dropped, without lingering.
                Pin::new(&mut conn).graceful_shutdown();
                let _ = conn.poll_without_shutdown(cx);
                return Poll::Ready(None);
            }
            conn.poll_without_shutdown(cx).map(Some)
        })
        .await;
        match ended {
            None => return,
            Some(Err(e)) => {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
                if state.expired() {
                    // A head that never came: there is no answer to protect.
                    return;
                }
            }
            Some(Ok(())) => {}
        }
        open.closing();
        // Hyper has flushed its last answer but not closed the socket: close it gracefully,
        // unless the connection is shed meanwhile.
        let parts = conn.into_parts();
        tokio::select! {
            _ = linger(parts.io.into_inner().stream, policy.linger) => {}
            _ = shed => {}
        }
        drop(open);
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
    (mark, progress): (AuthMark, Progress),
    done: (Arc<Registry>, Arc<ConnState>),
) -> Result<Response<axum::body::Body>, Infallible> {
    let expects_continue = req
        .headers()
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("100-continue"));
    let (mut parts, incoming) = req.into_parts();
    parts.extensions.insert(ConnectInfo(peer));
    parts.extensions.insert(mark);
    let declared = incoming.size_hint().exact();
    let (tracked, leftover, clock) = Tracked::new(incoming, policy.body_deadline, progress.clone());
    parts.extensions.insert(clock);
    let tracked = axum::body::Body::new(tracked);
    let req = Request::from_parts(parts, tracked);
    let mut response = router.oneshot(req).await?;
    let settled = settle(&policy, leftover, expects_continue, declared, &progress).await;
    match settled {
        Settled::TimedOut => {
            stats.body_timeouts.fetch_add(1, Ordering::Relaxed);
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
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
    let response = response.map(|inner| {
        axum::body::Body::new(Answered {
            inner,
            done: Some(done),
        })
    });
    Ok(response)
}

enum Settled {
    /// The handler read the whole body.
    Whole,
    /// The rest was read and discarded: the connection can serve another request.
    Drained,
    /// The answer must close the connection.
    Close,
    /// The body deadline passed: the answer closes the connection.
    TimedOut,
}

/// Discards what the handler left of the body, within the policy's bounds.
async fn settle(
    policy: &Policy,
    leftover: Leftover,
    expects_continue: bool,
    declared: Option<u64>,
    progress: &Progress,
) -> Settled {
    let state = leftover.take();
    if state.timed_out {
        return Settled::TimedOut;
    }
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
    progress.awaited();
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut rest).poll_frame(cx));
        match timeout_at(deadline, frame).await {
            Ok(None) => return Settled::Drained,
            Ok(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    total += data.len() as u64;
                    progress.received(data.len());
                    if total > policy.drain_bytes {
                        return Settled::Close;
                    }
                }
            }
            Ok(Some(Err(_))) | Err(_) => return Settled::Close,
        }
    }
}
