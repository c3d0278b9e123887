//! API keys are UUID v4 strings shown once; only their SHA-256 is stored. A plain (unsalted,
//! fast) hash is enough because a v4 UUID carries 122 random bits: there is nothing to brute-force.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of the key's canonical (lower-case hyphenated) form.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.to_ascii_lowercase().as_bytes()))
}

/// A key must look like a UUID v4 (8-4-4-4-12 hex, version nibble 4, RFC 4122 variant).
/// Checked before any database look-up, so malformed keys cost nothing.
pub fn is_well_formed(key: &str) -> bool {
    let b = key.as_bytes();
    if b.len() != 36 {
        return false;
    }
    for (i, c) in b.iter().enumerate() {
        let ok = match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        };
        if !ok {
            return false;
        }
    }
    b[14] == b'4' && matches!(b[19].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed() {
        for (key, well_formed) in [
            ("7c9e6679-7425-40de-944b-e07fc1f90ae7", true),
            ("7C9E6679-7425-40DE-944B-E07FC1F90AE7", true),
            ("7c9e6679-7425-10de-944b-e07fc1f90ae7", false),
            ("7c9e6679742540de944be07fc1f90ae7", false),
            ("", false),
            ("7c9e6679-7425-40de-944b-e07fc1f90ae7 ", false),
        ] {
            assert_eq!(is_well_formed(key), well_formed, "{key:?}");
        }
    }

    #[test]
    fn hash_is_case_insensitive() {
        assert_eq!(
            hash_key("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
            hash_key("7C9E6679-7425-40DE-944B-E07FC1F90AE7")
        );
        assert_eq!(hash_key("x").len(), 64);
    }
}
