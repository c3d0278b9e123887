//! Which connections may be shed at the cap, and the socket wrapper that closes a connection
//! waiting too long for a request.
//!
//! At the cap, the first to go is a *suspect*: a connection whose request is not (yet)
//! authenticated, whose body arrives below `Policy::body_min_rate`, or that is only lingering
//! after its last answer; the one whose request (or linger) began first. Only when there is no
//! suspect is an idle connection shed, the one idle the longest. An authenticated request that
//! keeps its body coming is never cut.

use crate::{Policy, Stats};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::{Instant, Sleep};

/// One connection as the registry sees it.
#[derive(Default)]
pub(crate) struct ConnState {
    /// A request is in progress (from its head until its answer has been written).
    busy: AtomicBool,
    /// Bumped each time the connection becomes idle after an answer (0: no request yet).
    idle_gen: AtomicU64,
    /// Its key in the idle map while idle.
    key: Mutex<Option<u64>>,
    /// Chosen to be shed: the accept loop counts it as closing.
    shedding: AtomicBool,
    pub shed: Notify,
    /// `Watched` gave up waiting for a request.
    expired: AtomicBool,
    /// The task reading the socket: woken when the connection becomes idle, since hyper reads
    /// (and so arms the idle deadline) only when woken.
    reader: Mutex<Option<std::task::Waker>>,
    /// Its key in the registry's map of all connections.
    id: u64,
    /// Bumped at each request, so that a stale [`AuthMark`] cannot vouch for a later one.
    request: AtomicU64,
    /// The current request was marked authenticated.
    authed: AtomicBool,
    /// Milliseconds after the registry's epoch when the current request (or the linger)
    /// began.
    since_ms: AtomicU64,
    /// 1 + milliseconds after the epoch when the body was first awaited (0: not yet).
    body_since_ms: AtomicU64,
    /// Body bytes received so far in the current request.
    body_bytes: AtomicU64,
    /// The body arrived whole (or was dropped): it can no longer be slow.
    body_done: AtomicBool,
    /// Answered and closing: only lingering for the client's last bytes.
    lingering: AtomicBool,
}

impl ConnState {
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::Acquire)
    }
}

/// In each request's extensions: the layer that authenticates callers marks the request with
/// it, which takes its connection out of the first rank to be shed at the cap (see the module
/// comment). Marking a request that has ended does nothing.
#[derive(Clone)]
pub struct AuthMark {
    state: Arc<ConnState>,
    request: u64,
    stats: Arc<Stats>,
}

impl AuthMark {
    /// The current request's caller is authenticated.
    pub fn mark(&self) {
        if self.state.request.load(Ordering::Acquire) == self.request
            && !self.state.authed.swap(true, Ordering::AcqRel)
        {
            self.stats.authenticated.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl std::fmt::Debug for AuthMark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthMark")
            .field("request", &self.request)
            .finish()
    }
}

/// How one request's body is coming along, for the rate floor; the body wrapper reports here.
#[derive(Clone)]
pub(crate) struct Progress {
    state: Arc<ConnState>,
    epoch: Instant,
}

impl Progress {
    /// The body is awaited (the handler, or the drain after it, asked for data).
    pub fn awaited(&self) {
        let now = ms_since(self.epoch) + 1;
        let _ =
            self.state
                .body_since_ms
                .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire);
    }

    pub fn received(&self, n: usize) {
        self.state.body_bytes.fetch_add(n as u64, Ordering::AcqRel);
    }

    pub fn done(&self) {
        self.state.body_done.store(true, Ordering::Release);
    }
}

fn ms_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Every open connection, and the idle ones by the time they became idle.
pub(crate) struct Registry {
    next: AtomicU64,
    idle: Mutex<BTreeMap<u64, Arc<ConnState>>>,
    /// Every open connection, by id: scanned for suspects at the cap.
    all: Mutex<HashMap<u64, Arc<ConnState>>>,
    next_id: AtomicU64,
    epoch: Instant,
    /// `Policy::body_min_rate` (bytes a second; 0: no floor) and after how long it applies.
    min_rate: u64,
    min_rate_after_ms: u64,
    open: AtomicUsize,
    /// Connections chosen to be shed that have not closed yet.
    shedding: AtomicUsize,
    /// Signalled when a connection closes or becomes idle: the accept loop may go on.
    pub room: Notify,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Registry {
    pub fn new(policy: &Policy) -> Self {
        Self {
            next: AtomicU64::new(0),
            idle: Mutex::default(),
            all: Mutex::default(),
            next_id: AtomicU64::new(0),
            epoch: Instant::now(),
            min_rate: policy.body_min_rate,
            min_rate_after_ms: u64::try_from(policy.body_min_rate_after.as_millis())
                .unwrap_or(u64::MAX),
            open: AtomicUsize::new(0),
            shedding: AtomicUsize::new(0),
            room: Notify::new(),
        }
    }

    /// A new connection, idle until its first request.
    pub fn open(&self) -> Arc<ConnState> {
        self.open.fetch_add(1, Ordering::AcqRel);
        let c = Arc::new(ConnState {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            ..ConnState::default()
        });
        lock(&self.all).insert(c.id, c.clone());
        self.enter_idle(&c);
        c
    }

    /// A new request on `c`: unauthenticated, its body not yet awaited. Returns the request's
    /// mark and the body's progress reporter.
    pub fn begin(&self, c: &Arc<ConnState>, stats: &Arc<Stats>) -> (AuthMark, Progress) {
        let request = c.request.fetch_add(1, Ordering::AcqRel) + 1;
        c.authed.store(false, Ordering::Release);
        c.body_since_ms.store(0, Ordering::Release);
        c.body_bytes.store(0, Ordering::Release);
        c.body_done.store(false, Ordering::Release);
        c.since_ms.store(ms_since(self.epoch), Ordering::Release);
        self.set_busy(c);
        (
            AuthMark {
                state: c.clone(),
                request,
                stats: stats.clone(),
            },
            Progress {
                state: c.clone(),
                epoch: self.epoch,
            },
        )
    }

    /// Answered, and only lingering now: a suspect from here on.
    pub fn lingering(&self, c: &ConnState) {
        self.leave_idle(c);
        c.since_ms.store(ms_since(self.epoch), Ordering::Release);
        c.lingering.store(true, Ordering::Release);
    }

    /// Whether `c` goes before any idle connection at the cap.
    fn suspect(&self, c: &ConnState, now_ms: u64) -> bool {
        if c.lingering.load(Ordering::Acquire) {
            return true;
        }
        if !c.busy() {
            return false;
        }
        if !c.authed.load(Ordering::Acquire) {
            return true;
        }
        self.below_floor(c, now_ms)
    }

    /// The body, awaited for at least `min_rate_after`, has averaged less than `min_rate`.
    fn below_floor(&self, c: &ConnState, now_ms: u64) -> bool {
        let since = c.body_since_ms.load(Ordering::Acquire);
        if self.min_rate == 0 || since == 0 || c.body_done.load(Ordering::Acquire) {
            return false;
        }
        let waited = now_ms.saturating_sub(since - 1);
        if waited < self.min_rate_after_ms {
            return false;
        }
        let got = c.body_bytes.load(Ordering::Acquire);
        u128::from(got) * 1000 < u128::from(self.min_rate) * u128::from(waited)
    }

    /// Asks up to `most` suspects to close, those whose request began first; returns how many
    /// (0: there is none). One scan of every connection serves several arrivals.
    pub fn shed_suspects(&self, most: usize) -> usize {
        let now_ms = ms_since(self.epoch);
        let mut chosen: Vec<(u64, Arc<ConnState>)> = {
            let all = lock(&self.all);
            all.values()
                .filter(|c| !c.shedding.load(Ordering::Acquire) && self.suspect(c, now_ms))
                .map(|c| (c.since_ms.load(Ordering::Acquire), c.clone()))
                .collect()
        };
        if chosen.len() > most {
            chosen.select_nth_unstable_by_key(most - 1, |(since, _)| *since);
            chosen.truncate(most);
        }
        for (_, c) in &chosen {
            self.leave_idle(c);
            self.mark_shed(c);
        }
        chosen.len()
    }

    fn mark_shed(&self, c: &ConnState) {
        if !c.shedding.swap(true, Ordering::AcqRel) {
            self.shedding.fetch_add(1, Ordering::AcqRel);
        }
        c.shed.notify_one();
    }

    /// Open connections not already being shed.
    pub fn counted(&self) -> usize {
        self.open
            .load(Ordering::Acquire)
            .saturating_sub(self.shedding.load(Ordering::Acquire))
    }

    fn enter_idle(&self, c: &Arc<ConnState>) {
        let mut key = lock(&c.key);
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.idle).insert(k, c.clone());
        if let Some(old) = key.replace(k) {
            lock(&self.idle).remove(&old);
        }
    }

    pub fn leave_idle(&self, c: &ConnState) {
        if let Some(k) = lock(&c.key).take() {
            lock(&self.idle).remove(&k);
        }
    }

    pub fn set_busy(&self, c: &Arc<ConnState>) {
        c.busy.store(true, Ordering::Release);
        self.leave_idle(c);
    }

    pub fn set_idle(&self, c: &Arc<ConnState>) {
        if !c.busy.swap(false, Ordering::AcqRel) {
            return;
        }
        c.idle_gen.fetch_add(1, Ordering::AcqRel);
        self.enter_idle(c);
        if let Some(w) = lock(&c.reader).take() {
            w.wake();
        }
        self.room.notify_one();
    }

    pub fn close(&self, c: &ConnState) {
        self.leave_idle(c);
        lock(&self.all).remove(&c.id);
        if c.shedding.load(Ordering::Acquire) {
            self.shedding.fetch_sub(1, Ordering::AcqRel);
        }
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.room.notify_one();
    }

    /// Asks the connection idle the longest to close; false when none is idle.
    pub fn shed_oldest(&self) -> bool {
        loop {
            let Some((k, c)) = lock(&self.idle).pop_first() else {
                return false;
            };
            let mut key = lock(&c.key);
            if *key != Some(k) {
                // It became busy (or idle again under a new key) meanwhile.
                continue;
            }
            *key = None;
            drop(key);
            self.mark_shed(&c);
            return true;
        }
    }
}

/// Decrements the registry when the connection task ends, however it ends.
pub(crate) struct Open {
    pub registry: Arc<Registry>,
    pub state: Arc<ConnState>,
    pub stats: Arc<Stats>,
}

impl Open {
    /// Closing after its answer: lingering, the first to be shed at the cap.
    pub fn closing(&self) {
        self.registry.lingering(&self.state);
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.registry.close(&self.state);
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// A request is in progress: no deadline here (the body has its own).
    Busy,
    /// Kept alive after an answer, no byte of the next request yet.
    Idle,
    /// Reading a request's head.
    Head,
}

/// The socket as hyper sees it: while no request is in progress, a connection with no byte of
/// its next request within `idle_timeout`, or whose head is not complete `header_read_timeout`
/// after its first byte (after accepting, for the first request), fails with `TimedOut`.
pub(crate) struct Watched {
    pub stream: TcpStream,
    state: Arc<ConnState>,
    stats: Arc<Stats>,
    idle_timeout: std::time::Duration,
    header_read_timeout: std::time::Duration,
    phase: Phase,
    armed_gen: Option<u64>,
    timer: Pin<Box<Sleep>>,
}

impl Watched {
    pub fn new(
        stream: TcpStream,
        state: Arc<ConnState>,
        stats: Arc<Stats>,
        policy: &Policy,
    ) -> Self {
        Self {
            stream,
            state,
            stats,
            idle_timeout: policy.idle_timeout,
            header_read_timeout: policy.header_read_timeout,
            phase: Phase::Busy,
            armed_gen: None,
            timer: Box::pin(tokio::time::sleep(policy.header_read_timeout)),
        }
    }

    fn arm(&mut self, phase: Phase, wait: std::time::Duration) {
        self.phase = phase;
        self.timer.as_mut().reset(Instant::now() + wait);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.state.busy() {
            this.phase = Phase::Busy;
            let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
            if polled.is_pending() {
                *lock(&this.state.reader) = Some(cx.waker().clone());
            }
            return polled;
        }
        let generation = this.state.idle_gen.load(Ordering::Acquire);
        if this.armed_gen != Some(generation) || this.phase == Phase::Busy {
            this.armed_gen = Some(generation);
            if generation == 0 {
                // A new connection: its first head is due `header_read_timeout` after accepting.
                let wait = this.header_read_timeout;
                this.arm(Phase::Head, wait);
            } else {
                let wait = this.idle_timeout;
                this.arm(Phase::Idle, wait);
            }
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if this.phase == Phase::Idle && buf.filled().len() > before {
                    let wait = this.header_read_timeout;
                    this.arm(Phase::Head, wait);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                if this.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let counter = if this.phase == Phase::Idle {
                    &this.stats.idle_closed
                } else {
                    &this.stats.header_timeouts
                };
                counter.fetch_add(1, Ordering::Relaxed);
                this.state.expired.store(true, Ordering::Release);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no request in time",
                )))
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// The answer's body; when hyper has written it (or dropped it), the connection is idle.
pub(crate) struct Answered {
    pub inner: axum::body::Body,
    pub done: Option<(Arc<Registry>, Arc<ConnState>)>,
}

impl Answered {
    fn finish(&mut self) {
        if let Some((r, c)) = self.done.take() {
            r.set_idle(&c);
        }
    }
}

impl http_body::Body for Answered {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            this.finish();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Answered {
    fn drop(&mut self) {
        self.finish();
    }
}
