//! Outbound HTTP to addresses the operator configured (bank connectors, the billing endpoint,
//! later LINE): not a customer's URL, so not put through the SSRF guard (a service on the
//! operator's private network is normal), but held to one rule: https, unless the host is
//! loopback, and every request goes through the configured outbound proxy.

use std::net::IpAddr;
use std::time::Duration;

use url::{Host, Url};

use crate::SetupError;

/// How operator-configured calls leave this node (`[outbound]` in the configuration).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OutboundSettings {
    /// An http(s) proxy every operator-configured call goes through; `None`: direct.
    pub proxy: Option<Url>,
}

/// Checks an operator-configured URL: http or https, with a host and no userinfo; plain http
/// only to a loopback host (127.0.0.0/8, ::1, `localhost`), since anything else would carry
/// credentials and verification answers in clear text.
pub fn check_operator_url(raw: &str) -> Result<Url, SetupError> {
    let url = Url::parse(raw.trim()).map_err(|e| SetupError::NotAUrl(e.to_string()))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SetupError::Credentials);
    }
    let Some(host) = url.host() else {
        return Err(SetupError::NoHost);
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback(&host) => Ok(url),
        "http" => Err(SetupError::PlainHttp),
        other => Err(SetupError::Scheme(other.to_string())),
    }
}

fn is_loopback(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => IpAddr::V4(*ip).is_loopback(),
        Host::Ipv6(ip) => IpAddr::V6(*ip).is_loopback(),
    }
}

/// A client for operator-configured calls: the proxy from `settings` (environment proxies
/// such as `HTTPS_PROXY` are ignored, so `[outbound]` is the one place that decides), no
/// redirects (an endpoint that moves is a configuration error, not something to follow with
/// our credentials), `timeout` for connecting and for the whole exchange.
pub fn operator_client(
    settings: &OutboundSettings,
    timeout: Duration,
) -> Result<reqwest::Client, SetupError> {
    operator_client_with_identity(settings, timeout, &OperatorTls::default())
}

/// Per-connector TLS additions: a client identity for mTLS and an extra trusted root.
#[derive(Clone, Default)]
pub struct OperatorTls {
    /// PEM: the certificate (chain) and the private key, in one buffer.
    pub identity_pem: Option<Vec<u8>>,
    /// PEM: one or more root CA certificates trusted besides the public roots.
    pub extra_roots_pem: Option<Vec<u8>>,
}

// The identity holds a private key: never printed.
impl std::fmt::Debug for OperatorTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperatorTls")
            .field(
                "identity",
                &self.identity_pem.as_ref().map(|_| "<redacted>"),
            )
            .field("extra_roots", &self.extra_roots_pem.is_some())
            .finish()
    }
}

/// [`operator_client`] with `tls` added: the same proxy and redirect rules, plus a client
/// certificate (a bank requiring two-way TLS) and/or an extra root CA. Errors name the part
/// that could not be read, never its contents.
pub fn operator_client_with_identity(
    settings: &OutboundSettings,
    timeout: Duration,
    tls: &OperatorTls,
) -> Result<reqwest::Client, SetupError> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .redirect(reqwest::redirect::Policy::none());
    if let Some(proxy) = &settings.proxy {
        let proxy = reqwest::Proxy::all(proxy.as_str()).map_err(|e| SetupError::Proxy {
            proxy: proxy.to_string(),
            reason: e.to_string(),
        })?;
        builder = builder.proxy(proxy);
    }
    if let Some(pem) = &tls.identity_pem {
        let id = reqwest::Identity::from_pem(pem).map_err(|_| SetupError::Identity)?;
        builder = builder.identity(id);
    }
    if let Some(pem) = &tls.extra_roots_pem {
        let roots =
            reqwest::Certificate::from_pem_bundle(pem).map_err(|_| SetupError::ExtraRoot)?;
        if roots.is_empty() {
            return Err(SetupError::NoExtraRoot);
        }
        for r in roots {
            builder = builder.add_root_certificate(r);
        }
    }
    builder
        .build()
        .map_err(|e| SetupError::Client(e.to_string()))
}

/// Checks a proxy URL for `[outbound] proxy`: http or https with a host.
pub fn check_proxy_url(raw: &str) -> Result<Url, SetupError> {
    let url = Url::parse(raw.trim()).map_err(|e| SetupError::NotAUrl(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(SetupError::ProxyUrl);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_or_loopback() {
        for ok in [
            "https://api.example.com/v1",
            "http://127.0.0.1:8080/renew",
            "http://127.3.4.5/",
            "http://[::1]:9/",
            "http://localhost:3000/",
            "http://LOCALHOST/",
            "https://10.0.0.5/",
        ] {
            assert!(check_operator_url(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://api.example.com/",
            "http://10.0.0.5/",
            "http://localhost.example.com/",
            "ftp://127.0.0.1/",
            "https://user:pw@api.example.com/",
            "not a url",
        ] {
            assert!(check_operator_url(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_operator_url("http://example.com/")
                .unwrap_err()
                .to_string(),
            "must be https unless the host is loopback"
        );
    }
}
