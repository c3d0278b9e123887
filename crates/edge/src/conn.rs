//! Which connections are idle (no request in progress), so that the oldest can be shed at the
//! cap, and the socket wrapper that closes a connection waiting too long for a request.

use crate::{Policy, Stats};
use std::collections::BTreeMap;
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
}

impl ConnState {
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::Acquire)
    }
}

/// Every open connection, and the idle ones by the time they became idle.
#[derive(Default)]
pub(crate) struct Registry {
    next: AtomicU64,
    idle: Mutex<BTreeMap<u64, Arc<ConnState>>>,
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
    /// A new connection, idle until its first request.
    pub fn open(&self) -> Arc<ConnState> {
        self.open.fetch_add(1, Ordering::AcqRel);
        let c = Arc::new(ConnState::default());
        self.enter_idle(&c);
        c
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
            if !c.shedding.swap(true, Ordering::AcqRel) {
                self.shedding.fetch_add(1, Ordering::AcqRel);
            }
            c.shed.notify_one();
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
    /// Closing: no longer a candidate for shedding (it still counts until dropped).
    pub fn closing(&self) {
        self.registry.leave_idle(&self.state);
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
