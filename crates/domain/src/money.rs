//! Amounts are kept as whole satang (1/100 baht) so comparisons are exact; JSON shows baht.

use std::fmt;

/// Stored and serialised as the whole number of satang.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Satang(pub i64);

/// Largest amount we accept anywhere: 10^12 baht, far above any real transfer and far below
/// where f64 stops representing satang exactly.
pub const MAX_SATANG: i64 = 100_000_000_000_000;

const TOO_PRECISE: &str = "must have at most 2 decimal places";

impl Satang {
    /// Baht as a JSON number (e.g. 150.5).
    pub fn as_baht(self) -> f64 {
        self.0 as f64 / 100.0
    }

    /// From a JSON number given in baht. Refuses NaN, negatives, more than 2 decimals and
    /// absurd sizes rather than rounding them silently.
    pub fn from_baht_f64(v: f64) -> Result<Self, &'static str> {
        if !v.is_finite() {
            return Err("must be a finite number");
        }
        if v < 0.0 {
            return Err("must not be negative");
        }
        if v == 0.0 {
            return Ok(Satang(0));
        }
        // Rust prints the shortest text that reads back as the same f64, so `150.1` stays
        // `150.1` and `1.005` stays `1.005`: decide on that text, not on float arithmetic.
        let exact = Satang::parse(&format!("{v}"));
        if exact != Err(TOO_PRECISE) {
            return exact;
        }
        // Float noise of a client's own arithmetic (`0.1 + 0.2` is 0.30000000000000004, `57 *
        // 0.01` is 0.5700000000000001): a whole number of satang within a billionth is that
        // amount. `1.005` (half a satang away) is still refused.
        let cents = v * 100.0;
        let whole = cents.round();
        if (cents - whole).abs() <= 1e-9 * whole.max(1.0) && whole <= MAX_SATANG as f64 {
            return Ok(Satang(whole as i64));
        }
        exact
    }

    /// From decimal text such as `150`, `150.5` or `150.00`.
    pub fn parse(s: &str) -> Result<Self, &'static str> {
        let s = s.trim();
        let (whole, frac) = match s.split_once('.') {
            Some((w, f)) => (w, f),
            None => (s, ""),
        };
        if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
            return Err("must be a decimal number such as 150.00");
        }
        if frac.len() > 2 || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(TOO_PRECISE);
        }
        if s.ends_with('.') {
            return Err("must be a decimal number such as 150.00");
        }
        if whole.len() > 12 {
            return Err("is too large");
        }
        let w: i64 = whole.parse().map_err(|_| "is too large")?;
        let mut f: i64 = if frac.is_empty() {
            0
        } else {
            frac.parse().map_err(|_| "must be a decimal number")?
        };
        if frac.len() == 1 {
            f *= 10;
        }
        Ok(Satang(w * 100 + f))
    }
}

impl fmt::Display for Satang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_decimal_text() {
        assert_eq!(Satang::parse("150.00"), Ok(Satang(15000)));
        assert_eq!(Satang::parse("150.5"), Ok(Satang(15050)));
        assert_eq!(Satang::parse("7"), Ok(Satang(700)));
        assert!(Satang::parse("1.234").is_err());
        assert!(Satang::parse("-1").is_err());
        assert!(Satang::parse("1.").is_err());
        assert!(Satang::parse(".5").is_err());
        assert!(Satang::parse("").is_err());
        assert_eq!(Satang(15050).to_string(), "150.50");
    }

    #[test]
    fn f64_amounts() {
        assert_eq!(Satang::from_baht_f64(150.1), Ok(Satang(15010)));
        assert_eq!(Satang::from_baht_f64(0.0), Ok(Satang(0)));
        assert!(Satang::from_baht_f64(1.005).is_err());
        assert!(Satang::from_baht_f64(1582008.5664457576).is_err());
        assert!(Satang::from_baht_f64(0.001).is_err());
        // A client's float noise is the amount it meant.
        assert_eq!(Satang::from_baht_f64(0.1 + 0.2), Ok(Satang(30)));
        assert_eq!(Satang::from_baht_f64(57.0 * 0.01), Ok(Satang(57)));
        assert!(Satang::from_baht_f64(f64::NAN).is_err());
        assert!(Satang::from_baht_f64(-0.5).is_err());
        assert!(Satang::from_baht_f64(1e300).is_err());
    }

    proptest! {
        #[test]
        fn text_and_f64_agree(s in 0i64..MAX_SATANG) {
            let a = Satang(s);
            prop_assert_eq!(Satang::parse(&a.to_string()), Ok(a));
            prop_assert_eq!(Satang::from_baht_f64(a.as_baht()), Ok(a));
            // What a generator of multiples of 0.01 sends reads as that many satang.
            prop_assert_eq!(Satang::from_baht_f64(s as f64 * 0.01), Ok(a));
        }
    }
}
