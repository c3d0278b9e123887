//! A branch's IP allow-list: `*`, single addresses or CIDR blocks (IPv4 and IPv6).

use ipnet::IpNet;
use std::net::IpAddr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowEntry {
    Any,
    Net(IpNet),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowList(Vec<AllowEntry>);

/// An allow-list entry that is not `*`, an address or a CIDR block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not *, an IP address or a CIDR block")]
pub struct BadEntry(pub String);

// Validation failures are collected as text (`Validation::fail(field, reason)`).
impl From<BadEntry> for String {
    fn from(e: BadEntry) -> Self {
        e.to_string()
    }
}

impl AllowList {
    /// Parses entries; the error names the first bad one.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, BadEntry> {
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let e = e.as_ref().trim();
            if e == "*" {
                out.push(AllowEntry::Any);
            } else if let Ok(net) = e.parse::<IpNet>() {
                out.push(AllowEntry::Net(net.trunc()));
            } else if let Ok(ip) = e.parse::<IpAddr>() {
                out.push(AllowEntry::Net(IpNet::from(ip)));
            } else {
                return Err(BadEntry(e.to_string()));
            }
        }
        Ok(Self(out))
    }

    /// Admits nobody.
    pub fn none() -> Self {
        Self(Vec::new())
    }

    pub fn allow_all() -> Self {
        Self(vec![AllowEntry::Any])
    }

    /// An empty list admits nobody: a branch is opened to all only by an explicit `*`.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|e| match e {
            AllowEntry::Any => true,
            AllowEntry::Net(n) => n.contains(&ip),
        })
    }

    pub fn to_strings(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|e| match e {
                AllowEntry::Any => "*".to_string(),
                AllowEntry::Net(n) if n.prefix_len() == n.max_prefix_len() => n.addr().to_string(),
                AllowEntry::Net(n) => n.to_string(),
            })
            .collect()
    }
}

/// The address a request came from. `X-Forwarded-For` is believed only when the peer is a
/// trusted proxy, and only as far as the chain of trusted proxies goes: walking from the
/// right, the first address that is not a trusted proxy is the client. Anything malformed
/// stops the walk at the last address known good.
pub fn client_ip(peer: IpAddr, forwarded_for: Option<&str>, trusted: &AllowList) -> IpAddr {
    let mut ip = canonical(peer);
    if !trusted.allows(ip) {
        return ip;
    }
    let Some(chain) = forwarded_for else {
        return ip;
    };
    for hop in chain.rsplit(',') {
        match hop.trim().parse::<IpAddr>() {
            Ok(addr) => {
                ip = canonical(addr);
                if !trusted.allows(ip) {
                    return ip;
                }
            }
            Err(_) => break,
        }
    }
    ip
}

/// A dual-stack socket reports IPv4 callers as `::ffff:a.b.c.d`; compare them as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn entries() {
        let l = AllowList::parse(&["203.0.113.7", "10.1.0.0/16", "2001:db8::/32"]).unwrap();
        assert!(l.allows(ip("203.0.113.7")));
        assert!(!l.allows(ip("203.0.113.8")));
        assert!(l.allows(ip("10.1.200.3")));
        assert!(l.allows(ip("::ffff:10.1.0.1")));
        assert!(l.allows(ip("2001:db8::1")));
        assert!(!l.allows(ip("2001:db9::1")));
        assert_eq!(
            l.to_strings(),
            vec!["203.0.113.7", "10.1.0.0/16", "2001:db8::/32"]
        );
    }

    #[test]
    fn forwarded_for_only_from_trusted_proxies() {
        let trusted = AllowList::parse(&["10.0.0.0/8"]).unwrap();
        let none = AllowList::parse::<&str>(&[]).unwrap();
        let xff = Some("198.51.100.9, 203.0.113.7, 10.0.0.2");
        // Not behind a trusted proxy: the header is the client's own text and is ignored.
        assert_eq!(
            client_ip(ip("203.0.113.50"), xff, &trusted),
            ip("203.0.113.50")
        );
        assert_eq!(client_ip(ip("10.0.0.1"), xff, &none), ip("10.0.0.1"));
        // Behind trusted proxies: the first untrusted hop from the right, not the leftmost
        // (which the client could have written).
        assert_eq!(client_ip(ip("10.0.0.1"), xff, &trusted), ip("203.0.113.7"));
        assert_eq!(client_ip(ip("10.0.0.1"), None, &trusted), ip("10.0.0.1"));
        assert_eq!(
            client_ip(ip("10.0.0.1"), Some("garbage, 10.0.0.3"), &trusted),
            ip("10.0.0.3")
        );
        assert_eq!(
            client_ip(ip("::ffff:10.0.0.1"), Some("203.0.113.7"), &trusted),
            ip("203.0.113.7")
        );
    }

    #[test]
    fn star_and_empty() {
        assert!(AllowList::parse(&["*"]).unwrap().allows(ip("8.8.8.8")));
        assert!(!AllowList::parse::<&str>(&[]).unwrap().allows(ip("8.8.8.8")));
        assert!(AllowList::parse(&["nope"]).is_err());
        assert!(AllowList::parse(&["10.0.0.0/33"]).is_err());
    }
}
