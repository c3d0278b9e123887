//! HTTPS to a local rustls server whose certificate chains to a throw-away CA:
//! trusted only when that CA is configured as the extra root.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::certs::Certs;
use egress::{Egress, EgressConfig, EgressError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Tls {
    addr: SocketAddr,
    ca_pem: String,
}

/// Minimal HTTPS server: answers every request with a fixed body.
async fn spawn_tls_server() -> Tls {
    let certs = Certs::generate();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(certs.server_config()));

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                // Handshake failures (untrusted CA) are expected in one test.
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let _ = tls
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\
                          Content-Length: 6\r\nConnection: close\r\n\r\nsecure",
                    )
                    .await;
                let _ = tls.shutdown().await;
            });
        }
    });
    Tls {
        addr,
        ca_pem: certs.ca.pem(),
    }
}

/// An egress that may reach loopback and trusts `ca_pem` as an extra root, when given.
fn loopback_trusting(ca_pem: Option<&str>) -> Egress {
    Egress::new(EgressConfig {
        allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        extra_root_ca_pem: ca_pem.map(|pem| pem.as_bytes().to_vec()),
        ..EgressConfig::default()
    })
    .unwrap()
}

#[tokio::test]
async fn https_with_extra_root_ca() {
    let srv = spawn_tls_server().await;
    let url = format!("https://localhost:{}/", srv.addr.port());
    let eg = loopback_trusting(Some(&srv.ca_pem));
    let got = eg.get_limited(&url, 1024).await.unwrap();
    assert_eq!(got.body, b"secure");
    assert_eq!(got.content_type.as_deref(), Some("text/plain"));
    eg.check_url(&url, true).await.unwrap();
}

#[tokio::test]
async fn https_without_extra_ca_is_unreachable() {
    let srv = spawn_tls_server().await;
    let url = format!("https://localhost:{}/", srv.addr.port());
    let eg = loopback_trusting(None);
    let err = eg.get_limited(&url, 1024).await.unwrap_err();
    assert!(matches!(err, EgressError::Unreachable(_)), "{err:?}");
}

#[tokio::test]
async fn https_to_loopback_refused_by_default_even_with_ca() {
    let srv = spawn_tls_server().await;
    let eg = Egress::new(EgressConfig {
        extra_root_ca_pem: Some(srv.ca_pem.into_bytes()),
        ..EgressConfig::default()
    })
    .unwrap();
    for url in [
        format!("https://localhost:{}/", srv.addr.port()),
        format!("https://127.0.0.1:{}/", srv.addr.port()),
    ] {
        assert_eq!(
            eg.get_limited(&url, 1024).await.unwrap_err(),
            EgressError::InvalidIpRange,
            "{url}"
        );
    }
}

#[test]
fn bad_extra_ca_is_a_setup_error() {
    let err = Egress::new(EgressConfig {
        extra_root_ca_pem: Some(b"not a pem".to_vec()),
        ..EgressConfig::default()
    })
    .unwrap_err();
    assert!(matches!(err, EgressError::Setup(_)), "{err:?}");
}
