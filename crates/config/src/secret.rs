//! Values that must never be printed: secrets, and URLs that may carry a password.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// What every secret prints as, in Debug, Display and serialized output.
pub const REDACTED: &str = "[redacted]";

/// A secret (token, key, password). Debug, Display and Serialize print `"[redacted]"`;
/// [`Secret::expose`] is the one way to read it, so every use is greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(REDACTED)
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::lenient::string(d).map(Secret)
    }
}

/// A URL that may carry a password (`postgres://user:pw@host/db`, a proxy with credentials):
/// printed with the password replaced by `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct CredentialUrl(String);

impl CredentialUrl {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with its password (if any) replaced: in the userinfo, and in any
    /// `password=`-like parameter (`?password=`, `sslpassword=`, key=value forms).
    pub fn redacted(&self) -> String {
        redact_params(&self.redact_userinfo())
    }

    fn redact_userinfo(&self) -> String {
        // scheme://user:password@host…: only the part between the first ':' after the
        // scheme's "//" and the last '@' before the path is the password.
        let Some(start) = self.0.find("://").map(|i| i + 3) else {
            return self.0.clone();
        };
        let rest = &self.0[start..];
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => format!(
                "{}{}{REDACTED}{}",
                &self.0[..start],
                &authority[..=colon],
                &self.0[start + at..]
            ),
            _ => self.0.clone(),
        }
    }
}

/// Parameter names whose values are secrets (compared without case; any name containing one).
const SECRET_PARAMS: [&str; 5] = ["password", "passwd", "pwd", "secret", "token"];

/// Every `name=value` whose name looks secret, value replaced up to the next `&`, `;`, space
/// or `#`. Names start the text or follow `?`, `&`, `;` or whitespace.
fn redact_params(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(eq) = rest.find('=') {
        let before = &rest[..eq];
        let name_start = before
            .rfind(|c: char| matches!(c, '?' | '&' | ';') || c.is_whitespace())
            .map_or(0, |i| i + 1);
        let name = before[name_start..].to_ascii_lowercase();
        out.push_str(&rest[..=eq]);
        let after = &rest[eq + 1..];
        let end = after
            .find(|c: char| matches!(c, '&' | ';' | '#') || c.is_whitespace())
            .unwrap_or(after.len());
        if SECRET_PARAMS.iter().any(|p| name.contains(p)) && end > 0 {
            out.push_str(REDACTED);
        } else {
            out.push_str(&after[..end]);
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

impl fmt::Debug for CredentialUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.redacted())
    }
}

impl fmt::Display for CredentialUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl Serialize for CredentialUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.redacted())
    }
}

impl<'de> Deserialize<'de> for CredentialUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::lenient::string(d).map(CredentialUrl)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_printed() {
        let s = Secret::new("hunter2");
        assert_eq!(format!("{s:?} {s}"), "[redacted] [redacted]");
        assert_eq!(serde_json::to_string(&s).unwrap(), "\"[redacted]\"");
        assert_eq!(s.expose(), "hunter2");
        let u = CredentialUrl::new("postgres://app:pw@db:5432/sv");
        assert_eq!(u.to_string(), "postgres://app:[redacted]@db:5432/sv");
        assert_eq!(
            CredentialUrl::new("sqlite://slipverify.db").to_string(),
            "sqlite://slipverify.db"
        );
        assert_eq!(
            CredentialUrl::new("http://proxy:3128").to_string(),
            "http://proxy:3128"
        );
        for (given, shown) in [
            (
                "postgres://app@db/sv?password=pw&sslmode=require",
                "postgres://app@db/sv?password=[redacted]&sslmode=require",
            ),
            (
                "postgres://db/sv?sslmode=verify-full&sslpassword=k3y",
                "postgres://db/sv?sslmode=verify-full&sslpassword=[redacted]",
            ),
            (
                "postgres://app:p@ss@db?PASSWORD=x",
                "postgres://app:[redacted]@db?PASSWORD=[redacted]",
            ),
            (
                "host=db user=app password=pw dbname=sv",
                "host=db user=app password=[redacted] dbname=sv",
            ),
            ("sqlite://a.db?mode=rwc", "sqlite://a.db?mode=rwc"),
        ] {
            assert_eq!(CredentialUrl::new(given).to_string(), shown);
        }
    }
}
