//! A request body that remembers how it was used, and hands back what the handler left of it.

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

#[derive(Default)]
pub(crate) struct State {
    /// Data bytes the handler read.
    pub read: u64,
    /// The handler asked for data at least once (so hyper sent `100 Continue` if asked for).
    pub polled: bool,
    /// The whole body was read.
    pub ended: bool,
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
}

impl Tracked {
    pub fn new(inner: Incoming) -> (Self, Leftover) {
        let state = Arc::new(Mutex::new(State::default()));
        (
            Self {
                inner: Some(inner),
                read: 0,
                polled: false,
                state: state.clone(),
            },
            Leftover(state),
        )
    }
}

impl Body for Tracked {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        this.polled = true;
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.read += d.len() as u64;
                }
            }
            Poll::Ready(None) => {
                this.inner = None;
                this.state.lock().unwrap_or_else(|p| p.into_inner()).ended = true;
            }
            // A broken body: nothing is left to hand back, and the connection is not reused.
            Poll::Ready(Some(Err(_))) => this.inner = None,
            Poll::Pending => {}
        }
        polled
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
                state.ended = true;
            } else {
                state.rest = Some(inner);
            }
        }
    }
}
