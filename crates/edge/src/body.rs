//! A request body that remembers how it was used, hands back what the handler left of it, and
//! fails once it has not arrived in full within the body deadline.

use crate::conn::Progress;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// The error a handler reads when the request body did not arrive in full within
/// `Policy::body_deadline` (the rest of it is not read; the answer closes the connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyTimedOut(pub Duration);

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request body not received within {:?}", self.0)
    }
}

impl std::error::Error for BodyTimedOut {}

/// In each request's extensions: whether its body deadline passed, for a handler that has
/// only its own error left (a multipart reader's, say).
#[derive(Debug, Clone)]
pub struct BodyDeadline {
    limit: Duration,
    expired: Arc<std::sync::atomic::AtomicBool>,
}

impl BodyDeadline {
    /// The deadline's error once it has passed with the body incomplete.
    pub fn expired(&self) -> Option<BodyTimedOut> {
        self.expired
            .load(std::sync::atomic::Ordering::Acquire)
            .then_some(BodyTimedOut(self.limit))
    }
}

impl BodyTimedOut {
    /// Whether `e`, or an error it wraps, is a body deadline.
    pub fn find<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a BodyTimedOut> {
        let mut cur = Some(e);
        while let Some(err) = cur {
            if let Some(t) = err.downcast_ref::<BodyTimedOut>() {
                return Some(t);
            }
            cur = err.source();
        }
        None
    }
}

#[derive(Default)]
pub(crate) struct State {
    /// Data bytes the handler read.
    pub read: u64,
    /// The handler asked for data at least once (so hyper sent `100 Continue` if asked for).
    pub polled: bool,
    /// The whole body was read.
    pub ended: bool,
    /// The body deadline passed before the whole body arrived.
    pub timed_out: bool,
    /// The unread rest, once the handler dropped the body without reading it all.
    pub rest: Option<Incoming>,
}

/// The connection's view of a body it gave to the handler.
pub(crate) struct Leftover(Arc<Mutex<State>>);

impl Leftover {
    pub fn take(self) -> State {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

pub(crate) struct Tracked {
    inner: Option<Incoming>,
    read: u64,
    polled: bool,
    state: Arc<Mutex<State>>,
    limit: Duration,
    deadline: Pin<Box<Sleep>>,
    expired: bool,
    clock: BodyDeadline,
    progress: Progress,
}

impl Tracked {
    pub fn new(
        inner: Incoming,
        limit: Duration,
        progress: Progress,
    ) -> (Self, Leftover, BodyDeadline) {
        let state = Arc::new(Mutex::new(State::default()));
        let clock = BodyDeadline {
            limit,
            expired: Arc::default(),
        };
        (
            Self {
                inner: Some(inner),
                read: 0,
                polled: false,
                state: state.clone(),
                limit,
                deadline: Box::pin(tokio::time::sleep(limit)),
                expired: false,
                clock: clock.clone(),
                progress,
            },
            Leftover(state),
            clock,
        )
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        this.polled = true;
        this.progress.awaited();
        if this.expired {
            // Never a clean end after the deadline: the body is incomplete.
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.limit)))));
        }
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.read += d.len() as u64;
                    this.progress.received(d.len());
                }
            }
            Poll::Ready(None) => {
                this.progress.done();
                this.inner = None;
                this.state.lock().unwrap_or_else(|p| p.into_inner()).ended = true;
            }
            // A broken body: nothing is left to hand back, and the connection is not reused.
            Poll::Ready(Some(Err(_))) => {
                this.progress.done();
                this.inner = None;
            }
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    // Dropping the rest: hyper stops reading it, and the answer closes.
                    this.progress.done();
                    this.inner = None;
                    this.expired = true;
                    this.clock
                        .expired
                        .store(true, std::sync::atomic::Ordering::Release);
                    this.state
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .timed_out = true;
                    return Poll::Ready(Some(Err(Box::new(BodyTimedOut(this.limit)))));
                }
            }
        }
        polled.map(|p| p.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.read = self.read;
        state.polled = self.polled;
        if let Some(inner) = self.inner.take() {
            if inner.is_end_stream() {
                self.progress.done();
                state.ended = true;
            } else {
                state.rest = Some(inner);
            }
        }
    }
}
