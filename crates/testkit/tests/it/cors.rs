//! Browsers (`[server] cors_origins`): off by default; for a listed origin preflights are
//! answered and answers name that origin; never another origin, never `/admin` or the partner
//! API. Then a real headless chromium page on another loopback port verifies a slip.

use axum::routing::{get, post};
use std::time::Duration;
use testkit::browser::Browser;
use testkit::{both, Backend, TestApp};
use tokio::sync::mpsc;

const PAGE: &str = "http://127.0.0.1:9";

async fn with_origins(b: Backend, origins: &[&str]) -> TestApp {
    let list = origins
        .iter()
        .map(|o| format!("{o:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    TestApp::spawn_with_config(b, &format!("[server]\ncors_origins = [{list}]\n")).await
}

async fn preflight(t: &TestApp, path: &str, origin: &str) -> reqwest::Response {
    t.http
        .request(reqwest::Method::OPTIONS, format!("{}{path}", t.base))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type,idempotency-key",
        )
        .send()
        .await
        .unwrap()
}

/// A `GET` of `path` from a page at `origin`, with `key` as the bearer when given.
async fn get_from(t: &TestApp, path: &str, origin: &str, key: Option<&str>) -> reqwest::Response {
    let mut req = t
        .http
        .get(format!("{}{path}", t.base))
        .header("origin", origin);
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    req.send().await.unwrap()
}

fn cors_headers(r: &reqwest::Response) -> Vec<String> {
    r.headers()
        .keys()
        .map(|k| k.as_str().to_string())
        .filter(|k| k.starts_with("access-control-"))
        .collect()
}

fn header<'a>(r: &'a reqwest::Response, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

both!(off_by_default, |b: Backend| async move {
    let (t, ten) = TestApp::spawn_with_tenant(b, 10).await;
    let r = preflight(&t, "/v2/verify/bank", PAGE).await;
    assert_eq!(r.status(), 404);
    assert!(cors_headers(&r).is_empty(), "{:?}", r.headers());
    let r = get_from(&t, "/v2/info", PAGE, Some(&ten.api_key)).await;
    assert_eq!(r.status(), 200);
    assert!(cors_headers(&r).is_empty(), "{:?}", r.headers());
    assert!(r.headers().get("vary").is_none(), "{:?}", r.headers());
});

both!(listed_origin_only, |b: Backend| async move {
    let t = with_origins(b, &[PAGE, "https://shop.example"]).await;
    let ten = t.tenant(10).await;
    for path in ["/v2/verify/bank", "/v2/verify/truewallet", "/api/v1/verify"] {
        let r = preflight(&t, path, PAGE).await;
        assert!(r.status().is_success(), "{path}: {}", r.status());
        assert_eq!(header(&r, "access-control-allow-origin"), PAGE, "{path}");
        let methods = header(&r, "access-control-allow-methods");
        assert!(
            methods.contains("POST") && methods.contains("GET"),
            "{methods}"
        );
        let allowed = header(&r, "access-control-allow-headers");
        for h in ["authorization", "content-type", "idempotency-key"] {
            assert!(allowed.contains(h), "{path}: {allowed}");
        }
    }
    // Another origin: tower-http still lists methods and headers, never the origin.
    let r = preflight(&t, "/v2/verify/bank", "http://127.0.0.1:10").await;
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let key = Some(ten.api_key.as_str());
    let other = get_from(&t, "/v2/info", "https://evil.example", key).await;
    assert_eq!(other.status(), 200);
    assert!(other.headers().get("access-control-allow-origin").is_none());
    // A listed origin reads answers, errors included.
    let ok = get_from(&t, "/v2/info", "https://shop.example", key).await;
    assert_eq!(ok.status(), 200);
    assert_eq!(
        header(&ok, "access-control-allow-origin"),
        "https://shop.example"
    );
    assert!(header(&ok, "access-control-expose-headers").contains("retry-after"));
    let refused = get_from(&t, "/v2/info", PAGE, None).await;
    assert_eq!(refused.status(), 401);
    assert_eq!(header(&refused, "access-control-allow-origin"), PAGE);
    // Never the admin or the partner API, nor anything outside the client APIs.
    for path in [
        "/admin/services",
        "/v2/b2b/branch/quota",
        "/v2/b2b/branches",
        "/health",
    ] {
        let r = preflight(&t, path, PAGE).await;
        assert!(cors_headers(&r).is_empty(), "{path}: {:?}", r.headers());
        let r = get_from(&t, path, PAGE, None).await;
        assert!(cors_headers(&r).is_empty(), "{path}: {:?}", r.headers());
    }
});

/// What the page does: verify a slip with `fetch` (a preflighted request: a key, JSON and an
/// `Idempotency-Key`), then report to its own origin what it could read.
const SCRIPT: &str = r#"<!doctype html><script>
const p = new URLSearchParams(location.search);
fetch(p.get('api') + '/v2/verify/bank', {
  method: 'POST',
  headers: {'Authorization': 'Bearer ' + p.get('key'), 'Content-Type': 'application/json',
            'Idempotency-Key': 'browser-' + p.get('n')},
  body: JSON.stringify({payload: p.get('payload')}),
}).then(r => r.json().then(j => 'read ' + r.status + ' ' + j.data.rawSlip.transRef))
  .catch(e => 'failed ' + e.name)
  .then(m => fetch('/result', {method: 'POST', body: m}));
</script>"#;

/// A page server on its own loopback port; returns its origin and what its page reports.
async fn page_server() -> (String, mpsc::Receiver<String>) {
    let (tx, rx) = mpsc::channel(4);
    let app = axum::Router::new()
        .route("/", get(|| async { axum::response::Html(SCRIPT) }))
        .route(
            "/result",
            post(move |body: String| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(body).await;
                }
            }),
        );
    let addr = testkit::serve_on_loopback(app).await;
    (format!("http://{addr}"), rx)
}

async fn report(rx: &mut mpsc::Receiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("the page reported within 30 s")
        .expect("page server alive")
}

both!(
    a_browser_page_verifies_only_from_a_listed_origin,
    |b: Backend| async move {
        let (listed, mut listed_rx) = page_server().await;
        let (other, mut other_rx) = page_server().await;
        let t = with_origins(b, &[&listed]).await;
        let ten = t.tenant(10).await;
        let one = t.transfer("004", "014", 15050).await;
        let two = t.transfer("004", "014", 20000).await;
        let url = |origin: &str, payload: &str, n: u8| {
            format!(
                "{origin}/?api={}&key={}&payload={payload}&n={n}",
                t.base, ten.api_key
            )
        };
        // Both pages at once: one browser start's worth of time.
        let _a = Browser::open(&url(&listed, &one.payload, 1));
        let _b = Browser::open(&url(&other, &two.payload, 2));
        assert_eq!(
            report(&mut listed_rx).await,
            format!("read 200 {}", one.trans_ref)
        );
        assert_eq!(report(&mut other_rx).await, "failed TypeError");
        // The refused page's request never reached a handler: nothing was charged for it.
        assert_eq!(t.used(&ten.api_key).await, 1);
    }
);
