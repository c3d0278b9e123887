//! Deserializers that take a string however the source spelled it: an environment value
//! such as `SLIPVERIFY_SERVER__ADMIN_TOKEN=1234…` arrives as a number, and a list may be
//! given as TOML array or as one comma-separated string (the old flat variables' form).

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use std::fmt;

/// `visit_<scalar>` methods that take the scalar as its text.
macro_rules! visit_as_text {
    ($($visit:ident($scalar:ty)),+ $(,)?) => {$(
        fn $visit<E: de::Error>(self, v: $scalar) -> Result<String, E> {
            Ok(v.to_string())
        }
    )+};
}

struct StringVisitor;

impl<'de> Visitor<'de> for StringVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    visit_as_text!(
        visit_u64(u64),
        visit_i64(i64),
        visit_u128(u128),
        visit_i128(i128),
        visit_f64(f64),
        visit_bool(bool),
        visit_char(char),
    );
}

pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_any(StringVisitor)
}

pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    string(d).map(Some)
}

struct ListVisitor;

impl<'de> Visitor<'de> for ListVisitor {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list, or a comma-separated string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<String>, E> {
        Ok(v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<String>, E> {
        Ok(vec![v.to_string()])
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<String>, E> {
        Ok(vec![v.to_string()])
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        struct Item(String);
        impl<'de> serde::Deserialize<'de> for Item {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                string(d).map(Item)
            }
        }
        let mut out = Vec::new();
        while let Some(Item(s)) = seq.next_element()? {
            out.push(s);
        }
        Ok(out)
    }
}

/// A list of strings: a TOML array, or `"a, b, c"`.
pub fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    d.deserialize_any(ListVisitor)
}

struct SecondsVisitor;

impl<'de> Visitor<'de> for SecondsVisitor {
    type Value = Vec<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of seconds, or a comma-separated string such as \"30,60,120\"")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u64>, E> {
        domain::job::parse_schedule(v).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Vec<u64>, E> {
        Ok(vec![v])
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Vec<u64>, E> {
        u64::try_from(v)
            .map(|v| vec![v])
            .map_err(|_| E::custom("seconds must not be negative"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u64>, A::Error> {
        let mut out = Vec::new();
        while let Some(n) = seq.next_element::<u64>()? {
            out.push(n);
        }
        Ok(out)
    }
}

/// A retry schedule in seconds: `[30, 60, 120]` or `"30,60,120"`.
pub fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    d.deserialize_any(SecondsVisitor)
}

/// [`list`], for an optional key whose absence means "the kind's default".
pub fn opt_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    list(d).map(Some)
}
