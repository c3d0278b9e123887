//! `GET /metrics` (Prometheus text) on a listener of its own (`metrics.listen`, off by
//! default): kept off the API's port so that it is never exposed with the API, needs no key,
//! and is not counted in the API's own request metrics or shed by its connection cap.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use services::Services;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Binds `addr`, warning when it is not loopback: the listener has no authentication.
pub async fn bind(addr: &str) -> anyhow::Result<TcpListener> {
    let l = TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr} (metrics.listen): {e}"))?;
    let local = l.local_addr()?;
    if local.ip().is_loopback() {
        tracing::info!(addr = %local, "metrics at /metrics");
    } else {
        tracing::warn!(addr = %local, "metrics at /metrics on a non-loopback address: it has no authentication; restrict it to your Prometheus (firewall, private network)");
    }
    Ok(l)
}

#[derive(Clone)]
struct Scrape {
    services: Services,
    stats: Arc<edge::Stats>,
}

/// Serves `/metrics` on `listener` until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    services: Services,
    stats: Arc<edge::Stats>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let app = axum::Router::new()
        .route("/metrics", get(scrape))
        .with_state(Scrape { services, stats });
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stopped)
        .await
    {
        tracing::error!(error = %e, "metrics listener failed");
    }
}

async fn scrape(State(s): State<Scrape>) -> impl IntoResponse {
    let (jobs, breakers) = s.services.status().scraped().await;
    let st = &s.stats;
    let edge = metrics::EdgeCounts {
        accepted: st.accepted.load(Relaxed),
        open: st.open.load(Relaxed),
        shed: st.shed.load(Relaxed),
        shed_suspects: st.shed_suspects.load(Relaxed),
        full: st.full.load(Relaxed),
        accept_errors: st.accept_errors.load(Relaxed),
        idle_closed: st.idle_closed.load(Relaxed),
        header_timeouts: st.header_timeouts.load(Relaxed),
        body_timeouts: st.body_timeouts.load(Relaxed),
        drained: st.drained.load(Relaxed),
        closed: st.closed.load(Relaxed),
    };
    let text = s.services.metrics().render(&metrics::Scraped {
        edge,
        jobs,
        breakers,
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        text,
    )
}
