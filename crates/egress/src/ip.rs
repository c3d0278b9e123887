//! Which IP addresses a stranger-supplied URL may make us connect to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `true` only for addresses that are globally routable unicast and safe to
/// dial on a stranger's behalf.
///
/// This is deliberately conservative: an IPv6 address must lie in global
/// unicast `2000::/3` (or be a NAT64 `64:ff9b::/96` address whose embedded IPv4
/// is itself public); whole special-purpose blocks are refused outright.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // 0.0.0.0/8 "this network", incl. unspecified
        || a == 10 // 10/8 private
        || (a == 100 && (b & 0xC0) == 64) // 100.64/10 CGNAT shared space
        || a == 127 // 127/8 loopback
        || (a == 169 && b == 254) // 169.254/16 link-local (cloud metadata!)
        || (a == 172 && (b & 0xF0) == 16) // 172.16/12 private
        || (a == 192 && b == 0 && c == 0) // 192.0.0/24 IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // 192.0.2/24 TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 192.88.99/24 6to4 relay anycast (deprecated)
        || (a == 192 && b == 168) // 192.168/16 private
        || (a == 198 && (b & 0xFE) == 18) // 198.18/15 benchmarking
        || (a == 198 && b == 51 && c == 100) // 198.51.100/24 TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // 203.0.113/24 TEST-NET-3
        || a >= 224; // 224/4 multicast, 240/4 reserved, 255.255.255.255 broadcast
    !refused
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();

    // ::ffff:0:0/96 IPv4-mapped: the socket really talks IPv4 to the embedded address.
    if s[..5] == [0, 0, 0, 0, 0] && s[5] == 0xffff {
        return is_public_v4(embedded_v4(s[6], s[7]));
    }
    // 64:ff9b::/96 well-known NAT64 prefix: judge the embedded IPv4.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded_v4(s[6], s[7]));
    }
    // 2002::/16 6to4: the embedded IPv4 is in segments 1 and 2.
    if s[0] == 0x2002 {
        return is_public_v4(embedded_v4(s[1], s[2]));
    }

    let refused =
        // Everything outside 2000::/3 global unicast: ::, ::1, ::/96 IPv4-compatible,
        // 64:ff9b:1::/48 local-use NAT64, 100::/64 discard, fc00::/7 unique-local,
        // fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast, unallocated.
        (s[0] & 0xE000) != 0x2000
        // 2001::/23 IETF protocol assignments, incl. 2001::/32 Teredo and ORCHID.
        || (s[0] == 0x2001 && s[1] < 0x0200)
        // 2001:db8::/32 documentation.
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        // 3fff::/20 documentation (RFC 9637).
        || (s[0] == 0x3fff && (s[1] & 0xF000) == 0);
    !refused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let cases: &[(&str, bool)] = &[
            // IPv4 public
            ("1.1.1.1", true),
            ("8.8.8.8", true),
            ("93.184.216.34", true),
            ("100.63.255.255", true),
            ("100.128.0.0", true),
            ("172.15.255.255", true),
            ("172.32.0.0", true),
            ("192.0.1.1", true),
            ("198.17.255.255", true),
            ("198.20.0.0", true),
            ("223.255.255.255", true),
            ("11.0.0.1", true),
            // IPv4 refused
            ("0.0.0.0", false),
            ("0.1.2.3", false),
            ("10.0.0.1", false),
            ("10.255.255.255", false),
            ("100.64.0.1", false),
            ("100.127.255.255", false),
            ("127.0.0.1", false),
            ("127.255.255.254", false),
            ("169.254.169.254", false),
            ("172.16.0.1", false),
            ("172.31.255.255", false),
            ("192.0.0.1", false),
            ("192.0.2.1", false),
            ("192.88.99.1", false),
            ("192.168.1.1", false),
            ("198.18.0.1", false),
            ("198.19.255.255", false),
            ("198.51.100.7", false),
            ("203.0.113.9", false),
            ("224.0.0.1", false),
            ("239.255.255.250", false),
            ("240.0.0.1", false),
            ("255.255.255.255", false),
            // IPv6 public
            ("2606:4700:4700::1111", true),
            ("2a00:1450:4001:81b::200e", true),
            ("::ffff:8.8.8.8", true),
            ("64:ff9b::808:808", true),
            ("2002:808:808::1", true),
            ("2001:4860:4860::8888", true),
            // IPv6 refused
            ("::", false),
            ("::1", false),
            ("::127.0.0.1", false),
            ("::8.8.8.8", false),
            ("::ffff:127.0.0.1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:169.254.169.254", false),
            ("64:ff9b::7f00:1", false),
            ("64:ff9b::a9fe:a9fe", false),
            ("64:ff9b:1::808:808", false),
            ("2002:7f00:1::1", false),
            ("2002:c0a8:101::1", false),
            ("100::1", false),
            ("2001::1", false),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", false),
            ("2001:10::1", false),
            ("2001:db8::1", false),
            ("2001:db8:ffff::1", false),
            ("3fff::1", false),
            ("3fff:0fff::1", false),
            ("3fff:1000::1", true),
            ("fc00::1", false),
            ("fd12:3456::1", false),
            ("fe80::1", false),
            ("febf::1", false),
            ("fec0::1", false),
            ("feff::1", false),
            ("ff02::1", false),
            ("ff0e::1", false),
            ("4000::1", false),
        ];
        for (s, want) in cases {
            let ip: IpAddr = s.parse().unwrap();
            assert_eq!(is_public(ip), *want, "{s}");
        }
    }

    /// Every IPv4 prefix at /16 granularity (plus a sample address in each /24
    /// of the finer-grained blocks) agrees with an independent ipnet-based list.
    #[test]
    fn v4_exhaustive_against_ipnet_list() {
        let blocked: Vec<ipnet::Ipv4Net> = [
            "0.0.0.0/8",
            "10.0.0.0/8",
            "100.64.0.0/10",
            "127.0.0.0/8",
            "169.254.0.0/16",
            "172.16.0.0/12",
            "192.0.0.0/24",
            "192.0.2.0/24",
            "192.88.99.0/24",
            "192.168.0.0/16",
            "198.18.0.0/15",
            "198.51.100.0/24",
            "203.0.113.0/24",
            "224.0.0.0/3",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
        // Every /24 (16.7M/256 = 65536 * 256 samples would be slow; step the last
        // two octets through edge values).
        for hi in 0u32..=0xFFFF {
            for c in [0u32, 1, 2, 99, 100, 113, 255] {
                for d in [0u32, 1, 255] {
                    let ip = Ipv4Addr::from((hi << 16) | (c << 8) | d);
                    let want = !blocked.iter().any(|n| n.contains(&ip));
                    assert_eq!(is_public(IpAddr::V4(ip)), want, "{ip}");
                }
            }
        }
    }

    proptest::proptest! {
        /// The IPv4-mapped, NAT64 and 6to4 forms never disagree with the plain v4 check.
        #[test]
        fn embedded_v4_forms_agree(bits: u32) {
            let v4 = Ipv4Addr::from(bits);
            let want = is_public(IpAddr::V4(v4));
            let [hi, lo] = [(bits >> 16) as u16, bits as u16];
            let mapped = v4.to_ipv6_mapped();
            let nat64 = Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, hi, lo);
            let sixtofour = Ipv6Addr::new(0x2002, hi, lo, 0, 0, 0, 0, 1);
            proptest::prop_assert_eq!(is_public(IpAddr::V6(mapped)), want);
            proptest::prop_assert_eq!(is_public(IpAddr::V6(nat64)), want);
            proptest::prop_assert_eq!(is_public(IpAddr::V6(sixtofour)), want);
            // IPv4-compatible ::a.b.c.d is always refused.
            let compat = Ipv6Addr::new(0, 0, 0, 0, 0, 0, hi, lo);
            proptest::prop_assert!(!is_public(IpAddr::V6(compat)));
        }

        /// Anything std already knows to be special is never public.
        #[test]
        fn std_special_never_public(bits: u128) {
            let v6 = Ipv6Addr::from(bits);
            if v6.is_loopback() || v6.is_unspecified() || v6.is_multicast()
                || v6.is_unicast_link_local() || v6.is_unique_local()
            {
                proptest::prop_assert!(!is_public(IpAddr::V6(v6)));
            }
        }

        #[test]
        fn std_special_v4_never_public(bits: u32) {
            let v4 = Ipv4Addr::from(bits);
            if v4.is_loopback() || v4.is_private() || v4.is_link_local() || v4.is_broadcast()
                || v4.is_documentation() || v4.is_unspecified() || v4.is_multicast()
            {
                proptest::prop_assert!(!is_public(IpAddr::V4(v4)));
            }
        }
    }
}
