//! Refused URLs never reach the network, and DNS answers that change between
//! lookups (DNS rebinding) never make us dial a non-public address.
//!
//! How "no connection was attempted" is observed: a *trap* listener on the
//! dual-stack wildcard `[::]:P` (`0.0.0.0:P` without IPv6) counts every TCP
//! connection accepted on port P.
//! Every refused URL names port P, so any refused address that is local to the
//! machine (all of 127/8, `0.0.0.0`, `::1`, `::`, `::ffff:127.0.0.1`, …) would
//! show up in the count if it were dialled; a positive control checks that the
//! trap really does see such connections, also when made through `Egress`.
//! For addresses that are not local (10/8, 169.254.169.254, `fc00::1`, …) a
//! dial would go out to the network instead: there the proof is that the
//! answer is `InvalidIpRange` (only the guard produces it; a dial would give
//! `Unreachable`) and that it comes back well before the 30 s connect timeout
//! these tests configure.
//!
//! Host names go through `Egress::with_lookup`, the seam that replaces the
//! system resolver with scripted answers; the answers are vetted by the same
//! guard, and only vetted addresses reach the connector.

use crate::common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use common::*;
use egress::{is_public, Egress, EgressConfig, EgressError, Lookup};
use tokio::net::{TcpListener, TcpStream};

/// A public address used as the "good" DNS answer. Never dialled by these
/// tests: it is only ever returned to `check_url`, which does not connect.
const PUBLIC: IpAddr = IpAddr::V4(Ipv4Addr::new(93, 184, 216, 34));

/// Refused URLs; `{P}` is replaced by the trap's port.
const REFUSED: &[&str] = &[
    // IPv4 loopback, including the alternative spellings the WHATWG parser normalises.
    "http://127.0.0.1:{P}/",
    "https://127.0.0.1:{P}/",
    "http://127.0.0.2:{P}/",
    "http://127.255.255.254:{P}/",
    "http://2130706433:{P}/",
    "http://0177.0.0.1:{P}/",
    "http://0x7f.0.0.1:{P}/",
    "http://0x7f000001:{P}/",
    "http://017700000001:{P}/",
    "http://127.1:{P}/",
    "http://127.0.1:{P}/",
    // "This network" / unspecified (0.0.0.0 dials the local host on Linux).
    "http://0:{P}/",
    "http://0.0.0.0:{P}/",
    // Private.
    "http://10.0.0.1:{P}/",
    "http://10.255.255.255:{P}/",
    "http://172.16.0.1:{P}/",
    "http://172.31.255.255:{P}/",
    "http://192.168.0.1:{P}/",
    // Link-local (cloud metadata), also in hex.
    "http://169.254.169.254:{P}/latest/meta-data/",
    "http://0xa9fea9fe:{P}/latest/meta-data/",
    // CGNAT shared space.
    "http://100.64.0.1:{P}/",
    "http://100.127.255.254:{P}/",
    // IETF protocol assignments, documentation, benchmarking, 6to4 relay.
    "http://192.0.0.1:{P}/",
    "http://192.0.2.1:{P}/",
    "http://198.51.100.1:{P}/",
    "http://203.0.113.1:{P}/",
    "http://198.18.0.1:{P}/",
    "http://192.88.99.1:{P}/",
    // Multicast, reserved, broadcast.
    "http://224.0.0.1:{P}/",
    "http://239.255.255.250:{P}/",
    "http://240.0.0.1:{P}/",
    "http://255.255.255.255:{P}/",
    // IPv6 loopback and unspecified.
    "http://[::1]:{P}/",
    "https://[::1]:{P}/",
    "http://[::]:{P}/",
    // IPv4-mapped and IPv4-compatible.
    "http://[::ffff:127.0.0.1]:{P}/",
    "http://[::ffff:7f00:1]:{P}/",
    "http://[::ffff:169.254.169.254]:{P}/",
    "http://[::ffff:10.0.0.1]:{P}/",
    "http://[::127.0.0.1]:{P}/",
    // NAT64 (well-known prefix judged by the embedded IPv4; local-use prefix refused).
    "http://[64:ff9b::7f00:1]:{P}/",
    "http://[64:ff9b::a9fe:a9fe]:{P}/",
    "http://[64:ff9b::a00:1]:{P}/",
    "http://[64:ff9b:1::808:808]:{P}/",
    // 6to4 embedding a private IPv4.
    "http://[2002:7f00:1::1]:{P}/",
    "http://[2002:c0a8:101::1]:{P}/",
    "http://[2002:a9fe:a9fe::1]:{P}/",
    // Teredo, ORCHID, documentation.
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]:{P}/",
    "http://[2001:10::1]:{P}/",
    "http://[2001:db8::1]:{P}/",
    "http://[3fff::1]:{P}/",
    // Unique-local, link-local, site-local, multicast, discard, unallocated.
    "http://[fc00::1]:{P}/",
    "https://[fc00::1]:{P}/",
    "http://[fd12:3456::1]:{P}/",
    "http://[fe80::1]:{P}/",
    "http://[fec0::1]:{P}/",
    "http://[ff02::1]:{P}/",
    "http://[100::1]:{P}/",
    "http://[4000::1]:{P}/",
];

/// Counts every TCP connection accepted on `[::]:port` (dual-stack: IPv4 too),
/// or on `0.0.0.0:port` where the host has no IPv6.
struct Trap {
    port: u16,
    accepted: Arc<AtomicUsize>,
    /// Listening on IPv6 too.
    v6: bool,
}

impl Trap {
    async fn on(addr: SocketAddr) -> Trap {
        Trap::listen(TcpListener::bind(addr).await.unwrap(), addr.is_ipv6())
    }

    fn listen(listener: TcpListener, v6: bool) -> Trap {
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Trap { port, accepted, v6 }
    }

    async fn wildcard() -> Trap {
        match TcpListener::bind("[::]:0").await {
            Ok(l) => Trap::listen(l, true),
            Err(_) => Trap::listen(TcpListener::bind("0.0.0.0:0").await.unwrap(), false),
        }
    }

    /// The accept count once pending connections have had time to be accepted.
    async fn settled(&self) -> usize {
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits (up to 5 s) until the count reaches `n`.
    async fn wait_for(&self, n: usize) {
        let start = Instant::now();
        while self.accepted.load(Ordering::SeqCst) < n {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "trap saw no connection"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn url(&self, template: &str) -> String {
        template.replace("{P}", &self.port.to_string())
    }
}

/// Long connect timeout: a dial to a black-holed address would take this long,
/// so a quick answer shows none was made.
fn patient(cfg: EgressConfig) -> EgressConfig {
    EgressConfig {
        connect_timeout: Duration::from_secs(30),
        total_timeout: Duration::from_secs(60),
        ..cfg
    }
}

/// The answer for each call, by call number (the last one repeats), and the
/// names asked.
#[derive(Clone, Default)]
struct Script {
    calls: Arc<AtomicUsize>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Script {
    fn lookup(
        &self,
        answer: impl Fn(&str, usize) -> std::io::Result<Vec<IpAddr>> + Send + Sync + 'static,
    ) -> Lookup {
        let me = self.clone();
        Arc::new(move |host: &str| {
            let n = me.calls.fetch_add(1, Ordering::SeqCst);
            me.asked.lock().unwrap().push(host.to_owned());
            let res = answer(host, n);
            Box::pin(async move { res })
        })
    }

    /// Answers `seq[n]` on the n-th call, whatever the name.
    fn sequence(&self, seq: Vec<Vec<IpAddr>>) -> Lookup {
        self.lookup(move |_, n| Ok(seq[n.min(seq.len() - 1)].clone()))
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// The IP a literal URL names, after the URL parser's normalisation.
fn literal_ip(url: &str) -> IpAddr {
    match url::Url::parse(url).unwrap().host().unwrap() {
        url::Host::Ipv4(v4) => IpAddr::V4(v4),
        url::Host::Ipv6(v6) => IpAddr::V6(v6),
        url::Host::Domain(d) => panic!("{url}: not an IP literal ({d})"),
    }
}

/// `http://h<i>.rebind.test:P/` for the i-th entry of a table.
fn host_url(scheme: &str, i: usize, port: u16) -> String {
    format!("{scheme}://h{i}.rebind.test:{port}/")
}

/// The host-name index of `h<i>.rebind.test`.
fn host_index(host: &str) -> usize {
    host.strip_prefix('h')
        .and_then(|h| h.strip_suffix(".rebind.test"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected lookup of {host}"))
}

/// Every way in: GET (following redirects), POST (never following), check.
/// Each must be refused with `InvalidIpRange`, quickly.
async fn assert_refused_everywhere(eg: &Egress, url: &str) {
    let quick = Duration::from_secs(5);
    let t = Instant::now();
    assert_eq!(
        eg.get_limited(url, MB).await.unwrap_err(),
        EgressError::InvalidIpRange,
        "get_limited {url}"
    );
    assert_eq!(
        eg.post_bytes(url, b"{}".to_vec(), &[], Duration::from_secs(30))
            .await
            .unwrap_err(),
        EgressError::InvalidIpRange,
        "post_bytes {url}"
    );
    assert_eq!(
        eg.check_url(url, false).await.unwrap_err(),
        EgressError::InvalidIpRange,
        "check_url {url}"
    );
    assert!(t.elapsed() < quick, "{url}: refusal took {:?}", t.elapsed());
}

#[tokio::test]
async fn trap_sees_connections_when_they_are_made() {
    // The control for every "accept count stays 0" below: the same kind of URL,
    // allowed, does reach the trap.
    let trap = Trap::wildcard().await;
    let mut seen = 1;
    TcpStream::connect(("127.0.0.1", trap.port)).await.unwrap();
    if trap.v6 {
        TcpStream::connect(("::1", trap.port)).await.unwrap();
        seen += 1;
    }
    trap.wait_for(seen).await;

    let eg = Egress::new(patient(EgressConfig {
        allow_cidrs: vec!["127.0.0.0/8".parse().unwrap(), "::/0".parse().unwrap()],
        ..EgressConfig::default()
    }))
    .unwrap();
    let mut urls = vec!["http://127.0.0.2:{P}/", "http://2130706433:{P}/"];
    if trap.v6 {
        urls.extend(["http://[::1]:{P}/", "http://[::ffff:127.0.0.1]:{P}/"]);
    }
    for url in urls {
        // The trap hangs up at once, so the fetch fails, but only after a dial.
        let err = eg.get_limited(&trap.url(url), MB).await.unwrap_err();
        assert!(matches!(err, EgressError::Unreachable(_)), "{url}: {err:?}");
        seen += 1;
        trap.wait_for(seen).await;
    }

    // A host name resolving to loopback, through the lookup seam.
    let script = Script::default();
    let eg = Egress::with_lookup(
        patient(EgressConfig {
            allow_cidrs: vec!["127.0.0.0/8".parse().unwrap()],
            ..EgressConfig::default()
        }),
        script.sequence(vec![vec![ip("127.0.0.3")]]),
    )
    .unwrap();
    let err = eg
        .get_limited(&host_url("http", 0, trap.port), MB)
        .await
        .unwrap_err();
    assert!(matches!(err, EgressError::Unreachable(_)), "{err:?}");
    trap.wait_for(seen + 1).await;
    assert_eq!(script.calls(), 1);
}

#[tokio::test]
async fn refused_literals_are_never_dialled() {
    assert!(REFUSED.len() >= 40);
    let trap = Trap::wildcard().await;
    let eg = Egress::new(patient(EgressConfig::default())).unwrap();
    for template in REFUSED {
        let url = trap.url(template);
        assert!(!is_public(literal_ip(&url)), "{url} is public");
        assert_refused_everywhere(&eg, &url).await;
    }
    assert_eq!(trap.settled().await, 0, "a refused literal was dialled");
}

#[tokio::test]
async fn host_names_resolving_to_refused_addresses_are_never_dialled() {
    let trap = Trap::wildcard().await;
    let ips: Vec<IpAddr> = REFUSED.iter().map(|t| literal_ip(&trap.url(t))).collect();

    // h<i> resolves to the i-th refused address alone; h<i+N> to a public
    // decoy plus that address (we never "pick the good one").
    let n = ips.len();
    let script = Script::default();
    let table = ips.clone();
    let eg = Egress::with_lookup(
        patient(EgressConfig::default()),
        script.lookup(move |host, _| {
            let i = host_index(host);
            Ok(if i < n {
                vec![table[i]]
            } else {
                vec![PUBLIC, table[i - n], PUBLIC]
            })
        }),
    )
    .unwrap();
    for i in 0..2 * n {
        for scheme in ["http", "https"] {
            let before = script.calls();
            assert_refused_everywhere(&eg, &host_url(scheme, i, trap.port)).await;
            // One lookup per attempt: the guard judged exactly what it was told.
            assert_eq!(script.calls() - before, 3, "h{i}");
        }
    }
    assert_eq!(trap.settled().await, 0, "a refused host name was dialled");

    // The system resolver: `localhost` is in /etc/hosts everywhere.
    let eg = Egress::new(patient(EgressConfig::default())).unwrap();
    for url in ["http://localhost:{P}/", "https://LocalHost:{P}/x"] {
        assert_refused_everywhere(&eg, &trap.url(url)).await;
    }
    assert_eq!(trap.settled().await, 0, "localhost was dialled");
}

#[tokio::test]
async fn redirects_to_refused_addresses_are_never_dialled() {
    let trap = Trap::wildcard().await;
    // 127.0.0.1 is allowed here (it is the redirecting server), so targets
    // that normalise to exactly 127.0.0.1 are left out.
    let allowed = ip("127.0.0.1");
    let mut targets: Vec<String> = REFUSED
        .iter()
        .map(|t| trap.url(t))
        .filter(|u| literal_ip(u) != allowed)
        .collect();
    let literal_count = targets.len();
    let ips: Vec<IpAddr> = targets.iter().map(|u| literal_ip(u)).collect();
    for i in 0..literal_count {
        targets.push(host_url("http", i, trap.port));
    }
    let targets = Arc::new(targets);

    let routes = targets.clone();
    let app = Router::new().route(
        "/r/{i}",
        get(
            move |axum::extract::Path(i): axum::extract::Path<usize>| async move {
                (StatusCode::FOUND, [(header::LOCATION, routes[i].clone())]).into_response()
            },
        ),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let script = Script::default();
    let eg = Egress::with_lookup(
        patient(loopback_cfg()),
        script.lookup(move |host, _| Ok(vec![ips[host_index(host)]])),
    )
    .unwrap();
    for (i, target) in targets.iter().enumerate() {
        let t = Instant::now();
        assert_eq!(
            eg.get_limited(&format!("http://{origin}/r/{i}"), MB)
                .await
                .unwrap_err(),
            EgressError::InvalidIpRange,
            "redirect to {target}"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{target}");
    }
    assert_eq!(script.calls(), targets.len() - literal_count);
    assert_eq!(trap.settled().await, 0, "a redirect target was dialled");
}

/// The classic time-of-check/time-of-use gap: a URL checked while its name
/// pointed at a public address is later fetched after the name was re-pointed
/// at loopback. The fetch resolves again, vets again, and refuses.
#[tokio::test]
async fn rebinding_after_check_is_refused_at_fetch() {
    let trap = Trap::wildcard().await;
    let url = host_url("http", 0, trap.port);

    // Production rules (no allow-list): public first, loopback afterwards.
    let script = Script::default();
    let eg = Egress::with_lookup(
        patient(EgressConfig::default()),
        script.sequence(vec![vec![PUBLIC], vec![ip("127.0.0.1")]]),
    )
    .unwrap();
    eg.check_url(&url, false).await.unwrap();
    assert_eq!(script.calls(), 1);
    assert_refused_everywhere(&eg, &url).await;
    assert_eq!(script.calls(), 4);

    // Vice versa: loopback first (refused), then public (passes the check,
    // which does not connect).
    let script = Script::default();
    let eg = Egress::with_lookup(
        patient(EgressConfig::default()),
        script.sequence(vec![vec![ip("::1")], vec![PUBLIC]]),
    )
    .unwrap();
    assert_eq!(
        eg.check_url(&url, false).await.unwrap_err(),
        EgressError::InvalidIpRange
    );
    eg.check_url(&url, false).await.unwrap();

    assert_eq!(trap.settled().await, 0, "the rebound address was dialled");
}

/// Within one request the address vetted is the address dialled: the name is
/// resolved once, and the connector gets only the vetted answer, so a second
/// (rebound) answer is never asked for and never used.
///
/// "Public" is played by 127.0.0.1 (allowed with the test allow-list, serving
/// the image) and "private" by 127.0.0.2 (refused), a trap on the same port.
#[tokio::test]
async fn fetch_dials_only_the_address_it_checked() {
    let good = spawn_server().await;
    let bad = Trap::on(SocketAddr::new(ip("127.0.0.2"), good.addr.port())).await;
    let url = format!("http://rebind.test:{}/image", good.addr.port());
    let allowed = ip("127.0.0.1");
    let private = ip("127.0.0.2");

    // Good first, then rebound to the private address.
    let script = Script::default();
    let eg = Egress::with_lookup(
        patient(loopback_cfg()),
        script.sequence(vec![vec![allowed], vec![private]]),
    )
    .unwrap();
    let got = eg.get_limited(&url, MB).await.unwrap();
    assert_eq!(got.body, PNG);
    assert_eq!(script.calls(), 1, "the connector resolved again");
    assert_eq!(*script.asked.lock().unwrap(), ["rebind.test"]);
    // A later request on a new connection gets the rebound answer and is refused.
    let fresh = Egress::with_lookup(
        patient(loopback_cfg()),
        script.sequence(vec![vec![private]]),
    )
    .unwrap();
    assert_eq!(
        fresh.get_limited(&url, MB).await.unwrap_err(),
        EgressError::InvalidIpRange
    );

    // Private first, then good: the first fetch is refused, the second succeeds.
    let script = Script::default();
    let eg = Egress::with_lookup(
        patient(loopback_cfg()),
        script.sequence(vec![vec![private], vec![allowed]]),
    )
    .unwrap();
    assert_eq!(
        eg.get_limited(&url, MB).await.unwrap_err(),
        EgressError::InvalidIpRange
    );
    assert_eq!(eg.get_limited(&url, MB).await.unwrap().body, PNG);
    assert_eq!(script.calls(), 2);

    // Both in one answer, either order: refused as a whole, nothing dialled.
    for answer in [vec![allowed, private], vec![private, allowed]] {
        let script = Script::default();
        let eg =
            Egress::with_lookup(patient(loopback_cfg()), script.sequence(vec![answer])).unwrap();
        assert_eq!(
            eg.get_limited(&url, MB).await.unwrap_err(),
            EgressError::InvalidIpRange
        );
        assert_eq!(script.calls(), 1);
    }

    // A redirect hop onto a name that points at the private address: the hop
    // is resolved and vetted on its own. The control (the same hop answered
    // with the allowed address) is followed and fetches the image.
    let port = good.addr.port();
    let app = Router::new().route(
        "/hop",
        get(move || async move {
            let to = format!("http://other.test:{port}/image");
            (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
        }),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let hop = format!("http://rebind.test:{}/hop", origin.port());
    for (other, ok) in [(private, false), (allowed, true)] {
        let script = Script::default();
        let eg = Egress::with_lookup(
            patient(loopback_cfg()),
            script.lookup(move |host, _| {
                Ok(vec![if host == "rebind.test" {
                    allowed
                } else {
                    other
                }])
            }),
        )
        .unwrap();
        let res = eg.get_limited(&hop, MB).await;
        if ok {
            assert_eq!(res.unwrap().body, PNG);
        } else {
            assert_eq!(res.unwrap_err(), EgressError::InvalidIpRange);
        }
        assert_eq!(*script.asked.lock().unwrap(), ["rebind.test", "other.test"]);
    }

    assert_eq!(bad.settled().await, 0, "the private address was dialled");
}
