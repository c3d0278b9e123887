//! URL-level refusals: no server needed, nothing is dialled.

use crate::common;

use common::*;
use egress::EgressError;

/// Both a fetch and a callback-URL check refuse `url` with `want`, before dialling.
async fn assert_refused(eg: &egress::Egress, url: &str, want: EgressError) {
    let fetched = eg.get_limited(url, MB).await.unwrap_err();
    assert_eq!(fetched, want, "get_limited {url:?}");
    let checked = eg.check_url(url, false).await.unwrap_err();
    assert_eq!(checked, want, "check_url {url:?}");
}

/// `assert_refused` of each of `urls`.
async fn assert_all_refused<'a>(
    eg: &egress::Egress,
    urls: impl IntoIterator<Item = &'a str>,
    want: EgressError,
) {
    for url in urls {
        assert_refused(eg, url, want.clone()).await;
    }
}

#[tokio::test]
async fn only_http_and_https() {
    let urls = [
        "ftp://example.com/x.png",
        "file:///etc/passwd",
        "gopher://example.com/",
        "data:image/png;base64,iVBORw0KGgo=",
        "javascript:alert(1)",
        "ws://example.com/",
        "example.com/x.png",
        "//example.com/x.png",
        "",
    ];
    assert_all_refused(&loopback_egress(), urls, EgressError::ProtocolNotAllowed).await;
}

#[tokio::test]
async fn userinfo_and_hostless_urls_are_invalid() {
    let eg = loopback_egress();
    for url in [
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "https://:pass@example.com/",
        "http://user:pass@127.0.0.1/",
        "http://",
        "http://[::1",
        "http://exa mple.com/",
    ] {
        assert_fetch_fails(&eg, url, EgressError::InvalidUrl).await;
    }
}

/// 127.0.0.1 spelled as one number, in octal, in hex, or with parts left out.
const ODD_LOOPBACK_SPELLINGS: [&str; 5] = [
    "http://2130706433/",
    "http://0177.0.0.1/",
    "http://0x7f.0.0.1/",
    "http://127.1/",
    "http://0x7f000001/",
];

#[test]
fn url_crate_normalises_odd_ipv4_spellings() {
    let more = ["http://017700000001/", "http://127.0.1/"];
    for spelled in ODD_LOOPBACK_SPELLINGS.into_iter().chain(more) {
        let u = url::Url::parse(spelled).unwrap();
        assert_eq!(u.host_str(), Some("127.0.0.1"), "{spelled}");
    }
}

#[tokio::test]
async fn odd_ipv4_spellings_and_special_literals_are_refused() {
    let special = [
        "http://0/",
        "http://0.0.0.0/",
        "http://10.0.0.1/",
        "http://172.16.5.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://100.64.0.1/",
        "http://255.255.255.255/",
        "http://224.0.0.1/",
        "http://[::1]/",
        "http://[::]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:7f00:1::]/",
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "https://[fc00::1]:8443/",
    ];
    let urls = ODD_LOOPBACK_SPELLINGS.into_iter().chain(special);
    assert_all_refused(&default_egress(), urls, EgressError::InvalidIpRange).await;
}

#[tokio::test]
async fn allow_list_is_exact() {
    // 127.0.0.1/32 does not open 127.0.0.2, 10/8, or the metadata address.
    let outside = [
        "http://127.0.0.2/",
        "http://10.0.0.1/",
        "http://169.254.169.254/",
        "http://[::ffff:127.0.0.1]/",
    ];
    let eg = loopback_egress();
    for url in outside {
        assert_eq!(
            eg.check_url(url, false).await.unwrap_err(),
            EgressError::InvalidIpRange,
            "{url}"
        );
    }
    eg.check_url("http://127.0.0.1:9/", false).await.unwrap();
}

#[tokio::test]
async fn check_url_require_https() {
    let eg = loopback_egress();
    assert_eq!(
        eg.check_url("http://127.0.0.1/hook", true)
            .await
            .unwrap_err(),
        EgressError::ProtocolNotAllowed
    );
    eg.check_url("https://127.0.0.1/hook", true).await.unwrap();
    // Public literals pass without any network access.
    default_egress()
        .check_url("https://93.184.216.34/hook", true)
        .await
        .unwrap();
    default_egress()
        .check_url("https://[2606:4700:4700::1111]/hook", true)
        .await
        .unwrap();
}
