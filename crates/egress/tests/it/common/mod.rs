#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use egress::{Egress, EgressConfig, EgressError};
use futures_util::StreamExt;

/// A tiny valid PNG (1x1).
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

pub const MB: usize = 1024 * 1024;

/// (content-type, x-signature, body) of a POST to /echo.
pub type Posted = (String, String, Vec<u8>);

#[derive(Clone, Default)]
pub struct Seen {
    /// Bytes the endless stream has produced so far.
    pub streamed: Arc<AtomicUsize>,
    /// Last POST to /echo: (content-type, x-signature, body).
    pub posted: Arc<Mutex<Option<Posted>>>,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub seen: Seen,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

fn redirect(to: String) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

async fn slow() -> &'static str {
    tokio::time::sleep(Duration::from_secs(5)).await;
    "late"
}

pub async fn spawn_server() -> TestServer {
    let seen = Seen::default();
    let app = Router::new()
        .route(
            "/image",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG) }),
        )
        // Declares a 2 MB Content-Length.
        .route("/big", get(|| async { vec![0u8; 2 * MB] }))
        // Endless chunked body, no Content-Length; counts what it produced.
        .route(
            "/stream",
            get(|State(seen): State<Seen>| async move {
                let counter = seen.streamed.clone();
                let stream = futures_util::stream::repeat_with(move || {
                    counter.fetch_add(64 * 1024, Ordering::Relaxed);
                    Ok::<_, std::io::Error>(vec![7u8; 64 * 1024])
                })
                .take(100 * 1024 / 64); // 100 MB at most, so the test always ends
                Body::from_stream(stream)
            }),
        )
        .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
        .route(
            "/broken",
            get(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .route("/loop", get(|| async { redirect("/loop".into()) }))
        .route(
            "/chain/{n}",
            get(
                |axum::extract::Path(n): axum::extract::Path<u32>| async move {
                    if n == 0 {
                        redirect("/image".into())
                    } else {
                        redirect(format!("/chain/{}", n - 1))
                    }
                },
            ),
        )
        .route(
            "/to-metadata",
            get(|| async { redirect("http://169.254.169.254/latest/meta-data/".into()) }),
        )
        .route(
            "/to-decimal-loopback",
            get(|| async { redirect("http://2130706433/image".into()) }),
        )
        .route(
            "/to-file",
            get(|| async { redirect("file:///etc/passwd".into()) }),
        )
        .route("/slow", get(slow).post(slow))
        .route(
            "/echo",
            post(
                |State(seen): State<Seen>, headers: HeaderMap, body: axum::body::Bytes| async move {
                    let h = |n: &str| {
                        headers
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned()
                    };
                    *seen.posted.lock().unwrap() =
                        Some((h("content-type"), h("x-signature"), body.to_vec()));
                    StatusCode::CREATED
                },
            ),
        )
        .route(
            "/post-redirect",
            post(|| async {
                (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, "/echo")],
                )
                    .into_response()
            }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    TestServer { addr, seen }
}

/// Config that lets the tests reach 127.0.0.1 only.
pub fn loopback_cfg() -> EgressConfig {
    EgressConfig {
        allow_cidrs: vec!["127.0.0.1/32".parse().unwrap()],
        ..EgressConfig::default()
    }
}

pub fn loopback_egress() -> Egress {
    Egress::new(loopback_cfg()).unwrap()
}

pub fn default_egress() -> Egress {
    Egress::new(EgressConfig::default()).unwrap()
}

/// Fetching `url` (with a 1 MB cap) fails with `want`.
pub async fn assert_fetch_fails(eg: &Egress, url: &str, want: EgressError) {
    let err = eg.get_limited(url, MB).await.unwrap_err();
    assert_eq!(err, want, "{url}");
}
