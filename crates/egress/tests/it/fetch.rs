use crate::common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use egress::{Egress, EgressConfig, EgressError};

#[tokio::test]
async fn fetches_small_image_with_content_type() {
    let srv = spawn_server().await;
    let got = loopback_egress()
        .get_limited(&srv.url("/image"), MB)
        .await
        .unwrap();
    assert_eq!(got.body, PNG);
    assert_eq!(got.content_type.as_deref(), Some("image/png"));
}

#[tokio::test]
async fn default_config_refuses_loopback_literal() {
    let srv = spawn_server().await;
    let eg = default_egress();
    for path in ["/image", "/big", "/missing", "/loop", "/slow"] {
        assert_fetch_fails(&eg, &srv.url(path), EgressError::InvalidIpRange).await;
    }
    assert_eq!(
        eg.post_bytes(
            &srv.url("/echo"),
            b"{}".to_vec(),
            &[],
            Duration::from_secs(2)
        )
        .await
        .unwrap_err(),
        EgressError::InvalidIpRange
    );
    assert_eq!(
        eg.check_url(&srv.url("/image"), false).await.unwrap_err(),
        EgressError::InvalidIpRange
    );
}

#[tokio::test]
async fn declared_content_length_over_limit_is_too_large() {
    let srv = spawn_server().await;
    assert_fetch_fails(&loopback_egress(), &srv.url("/big"), EgressError::TooLarge).await;
    // Under the limit it is fine.
    let got = loopback_egress()
        .get_limited(&srv.url("/big"), 2 * MB)
        .await
        .unwrap();
    assert_eq!(got.body.len(), 2 * MB);
}

#[tokio::test]
async fn streaming_body_is_cut_at_limit_without_buffering_it_all() {
    let srv = spawn_server().await;
    let started = std::time::Instant::now();
    let err = loopback_egress()
        .get_limited(&srv.url("/stream"), 4 * MB)
        .await
        .unwrap_err();
    assert_eq!(err, EgressError::TooLarge);
    // The server can produce up to 100 MB; we stopped long before that
    // (the slack is socket buffers on loopback).
    let produced = srv.seen.streamed.load(Ordering::Relaxed);
    eprintln!(
        "server produced {} KiB before the client hung up",
        produced / 1024
    );
    assert!(produced < 40 * MB, "server produced {produced} bytes");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn http_errors_are_unreachable() {
    let srv = spawn_server().await;
    let eg = loopback_egress();
    for path in ["/missing", "/broken"] {
        assert!(
            matches!(
                eg.get_limited(&srv.url(path), MB).await.unwrap_err(),
                EgressError::Status(_)
            ),
            "{path}"
        );
    }
}

/// Fetching `url` fails as `Unreachable`: nothing answers there.
async fn assert_unreachable(eg: &Egress, url: &str) {
    let err = eg.get_limited(url, MB).await.unwrap_err();
    assert!(matches!(err, EgressError::Unreachable(_)), "{url}: {err:?}");
}

#[tokio::test]
async fn closed_port_is_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    assert_unreachable(&loopback_egress(), &format!("http://{addr}/")).await;
}

#[tokio::test]
async fn redirects_are_followed_up_to_the_limit() {
    let srv = spawn_server().await;
    let eg = loopback_egress();
    // /chain/2 -> /chain/1 -> /chain/0 -> /image: three hops.
    let got = eg.get_limited(&srv.url("/chain/2"), MB).await.unwrap();
    assert_eq!(got.body, PNG);
    assert!(got.final_url.ends_with("/image"));
    // Four hops is one too many.
    assert_fetch_fails(&eg, &srv.url("/chain/3"), EgressError::TooManyRedirects).await;
    assert_fetch_fails(&eg, &srv.url("/loop"), EgressError::TooManyRedirects).await;
    // max_redirects = 0 refuses the first hop.
    let strict = Egress::new(EgressConfig {
        max_redirects: 0,
        ..loopback_cfg()
    })
    .unwrap();
    assert_fetch_fails(&strict, &srv.url("/chain/0"), EgressError::TooManyRedirects).await;
}

#[tokio::test]
async fn redirect_targets_are_rechecked() {
    let srv = spawn_server().await;
    let eg = loopback_egress();
    assert_fetch_fails(&eg, &srv.url("/to-metadata"), EgressError::InvalidIpRange).await;
    // reqwest itself declines to follow a redirect to a non-http(s) scheme and
    // hands back the 3xx, which is not a success: unreachable, nothing read.
    let err = eg.get_limited(&srv.url("/to-file"), MB).await.unwrap_err();
    assert!(matches!(err, EgressError::Status(_)), "{err:?}");
    // A redirect to a decimal spelling of 127.0.0.1 is parsed as an IP literal
    // and re-checked; with the default config even the first hop is refused.
    let err = default_egress()
        .get_limited(&srv.url("/to-decimal-loopback"), MB)
        .await
        .unwrap_err();
    assert_eq!(err, EgressError::InvalidIpRange);
    let decimal = "http://2130706433/image";
    assert_fetch_fails(&default_egress(), decimal, EgressError::InvalidIpRange).await;
}

#[tokio::test]
async fn slow_endpoint_times_out() {
    let srv = spawn_server().await;
    let eg = Egress::new(EgressConfig {
        total_timeout: Duration::from_millis(300),
        ..loopback_cfg()
    })
    .unwrap();
    let started = std::time::Instant::now();
    let err = eg.get_limited(&srv.url("/slow"), MB).await.unwrap_err();
    assert!(matches!(err, EgressError::Timeout), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
    // post_bytes has its own per-call timeout.
    let started = std::time::Instant::now();
    let err = loopback_egress()
        .post_bytes(
            &srv.url("/slow"),
            b"{}".to_vec(),
            &[],
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, EgressError::Timeout), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn hostname_resolving_to_loopback_is_refused_by_default() {
    let srv = spawn_server().await;
    let url = format!("http://localhost:{}/image", srv.addr.port());
    assert_fetch_fails(&default_egress(), &url, EgressError::InvalidIpRange).await;
    assert_eq!(
        default_egress().check_url(&url, false).await.unwrap_err(),
        EgressError::InvalidIpRange
    );
    // Allowed when every address localhost resolves to is allow-listed.
    let eg = Egress::new(EgressConfig {
        allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        ..EgressConfig::default()
    })
    .unwrap();
    assert_eq!(eg.get_limited(&url, MB).await.unwrap().body, PNG);
    eg.check_url(&url, false).await.unwrap();
}

#[tokio::test]
async fn unresolvable_host_is_unreachable() {
    assert_unreachable(&default_egress(), "http://does-not-exist.invalid/x.png").await;
}

#[tokio::test]
async fn post_bytes_sends_exact_body_and_headers_and_never_follows_redirects() {
    let srv = spawn_server().await;
    let eg = loopback_egress();
    let body = br#"{"event":"slip.verified","id":1}"#.to_vec();
    let status = eg
        .post_bytes(
            &srv.url("/echo"),
            body.clone(),
            &[("X-Signature", "sha256=abc".to_owned())],
            Duration::from_secs(2),
        )
        .await
        .unwrap();
    assert_eq!(status, 201);
    let (ct, sig, got) = srv.seen.posted.lock().unwrap().take().unwrap();
    assert_eq!(ct, "application/json");
    assert_eq!(sig, "sha256=abc");
    assert_eq!(got, body);

    let status = eg
        .post_bytes(
            &srv.url("/post-redirect"),
            body,
            &[],
            Duration::from_secs(2),
        )
        .await
        .unwrap();
    assert_eq!(status, 307);
    assert!(
        srv.seen.posted.lock().unwrap().is_none(),
        "redirect followed"
    );
}
