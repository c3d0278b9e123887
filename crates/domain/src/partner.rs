//! Partner API request signing (compat.md): `X-Signature` is the lower-case hex HMAC-SHA256,
//! keyed with the partner secret (its 64 hex characters as ASCII bytes), of
//! `METHOD\nPATH\nTIMESTAMP\nNONCE\nSHA256_HEX(body)`, where PATH has no `/v2` prefix.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Timestamps further than this from the server's clock are refused (and nonces are kept at
/// least this long, so a replay inside the window is always caught).
pub const TIMESTAMP_TOLERANCE_SECS: i64 = 300;

/// How long a used nonce is remembered. A timestamp is compared in whole seconds, so a request
/// first seen at `t` (timestamp up to `floor(t) + 300`) passes the check until just before
/// `t + 601`: both ends of the window plus the second lost to truncation.
pub const NONCE_KEEP_SECS: i64 = 2 * TIMESTAMP_TOLERANCE_SECS + 1;

/// The permissions a partner can hold (the branch and bank-account scopes are the
/// provider's published ones, compat.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Permission {
    QuotaRead,
    QuotaWrite,
    BranchRead,
    BranchWrite,
    BankAccountRead,
    BankAccountWrite,
}

impl Permission {
    pub const ALL: [Permission; 6] = [
        Permission::QuotaRead,
        Permission::QuotaWrite,
        Permission::BranchRead,
        Permission::BranchWrite,
        Permission::BankAccountRead,
        Permission::BankAccountWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::QuotaRead => "quota:read",
            Permission::QuotaWrite => "quota:write",
            Permission::BranchRead => "branch:read",
            Permission::BranchWrite => "branch:write",
            Permission::BankAccountRead => "bank-account:read",
            Permission::BankAccountWrite => "bank-account:write",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Every permission's name, for messages: `quota:read, quota:write, …`.
    pub fn names() -> String {
        Self::ALL.map(Permission::as_str).join(", ")
    }
}

/// The string that is signed.
pub fn canonical(method: &str, path: &str, timestamp: &str, nonce: &str, body: &[u8]) -> String {
    let body_hash = hex::encode(Sha256::digest(body));
    format!("{method}\n{path}\n{timestamp}\n{nonce}\n{body_hash}")
}

pub fn sign(secret: &str, canonical: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(canonical.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Constant-time comparison of a received signature (hex, any case) with the expected one.
pub fn verify(secret: &str, canonical: &str, signature_hex: &str) -> bool {
    let Ok(sig) = hex::decode(signature_hex.trim()) else {
        return false;
    };
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(canonical.as_bytes());
    mac.verify_slice(&sig).is_ok()
}

/// Whether a Unix-seconds timestamp is within the tolerance of `now`.
pub fn timestamp_fresh(timestamp: i64, now_unix: i64) -> bool {
    (timestamp - now_unix).abs() <= TIMESTAMP_TOLERANCE_SECS
}

/// 64 lower-case hex characters, as partner keys and secrets are.
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_vector() {
        // Computed independently: printf 'GET\n/b2b/branch/quota\n1700000000\nn-1\n<sha256 of "">'
        //   | openssl dgst -sha256 -hmac "$(printf 'a%.0s' {1..64})"
        let c = canonical("GET", "/b2b/branch/quota", "1700000000", "n-1", b"");
        assert!(c.ends_with("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        let secret = "a".repeat(64);
        let sig = sign(&secret, &c);
        assert_eq!(
            sig,
            "6cdea248c8cd9cbaa6b39fb014fbd42a792290dc851a387799b358b48076d3ce"
        );
        assert!(verify(&secret, &c, &sig));
        assert!(verify(&secret, &c, &sig.to_uppercase()));
        assert!(!verify(&secret, &c, "zz"));
        assert!(!verify(&"b".repeat(64), &c, &sig));
    }

    #[test]
    fn permissions_round_trip() {
        for p in Permission::ALL {
            assert_eq!(Permission::parse(p.as_str()), Some(p));
        }
        assert_eq!(
            Permission::parse(" branch:read "),
            Some(Permission::BranchRead)
        );
        assert_eq!(Permission::parse("branch:*"), None);
        assert!(Permission::names().ends_with("bank-account:write"));
    }

    #[test]
    fn freshness_window() {
        assert!(timestamp_fresh(1000, 1300));
        assert!(!timestamp_fresh(1000, 1301));
        assert!(timestamp_fresh(1300, 1000));
        assert!(!timestamp_fresh(1301, 1000));
    }

    proptest! {
        #[test]
        fn any_change_breaks_the_signature(body in proptest::collection::vec(any::<u8>(), 0..64), flip in 0usize..64) {
            let secret = "0123456789abcdef".repeat(4);
            let c = canonical("POST", "/b2b/branch/quota/adjust", "1700000000", "nonce", &body);
            let sig = sign(&secret, &c);
            prop_assert!(verify(&secret, &c, &sig));
            let mut changed = body.clone();
            if changed.is_empty() { changed.push(0) } else { let i = flip % changed.len(); changed[i] ^= 1; }
            let c2 = canonical("POST", "/b2b/branch/quota/adjust", "1700000000", "nonce", &changed);
            prop_assert!(!verify(&secret, &c2, &sig));
        }
    }
}
