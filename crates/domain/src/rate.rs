//! Requests-per-second limits by GCRA (the generic cell rate algorithm): one number per branch,
//! the "theoretical arrival time", decides every request. The same arithmetic runs here (for
//! one process) and in SQL (for many nodes on PostgreSQL).

/// A limit of `rps` requests per second with bursts of up to `burst` requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    pub rps: u32,
    /// Microseconds between requests at the steady rate (T).
    pub interval_us: i64,
    /// How far ahead of now the arrival time may run (τ = T × (burst − 1)).
    pub tolerance_us: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed { new_tat_us: i64, remaining: u32 },
    Limited { retry_after_us: i64 },
}

impl Gcra {
    /// `rps` ≥ 1; `burst` ≥ 1 (clamped).
    pub fn new(rps: u32, burst: u32) -> Self {
        let rps = rps.max(1);
        // At least 1 µs: rates above a million per second are "unlimited" in practice.
        let interval_us = (1_000_000 / rps as i64).max(1);
        Gcra {
            rps,
            interval_us,
            tolerance_us: interval_us * (burst.max(1) as i64 - 1),
        }
    }

    /// Decides one request at `now_us` given the stored arrival time (`None`: never seen).
    pub fn check(&self, tat_us: Option<i64>, now_us: i64) -> Decision {
        let start = tat_us.map_or(now_us, |t| t.max(now_us));
        let ahead = start - now_us;
        if ahead <= self.tolerance_us {
            let new_tat_us = start + self.interval_us;
            Decision::Allowed {
                new_tat_us,
                remaining: self.remaining(new_tat_us, now_us),
            }
        } else {
            Decision::Limited {
                retry_after_us: ahead - self.tolerance_us,
            }
        }
    }

    /// Requests still allowed right now after the arrival time moved to `tat_us`.
    pub fn remaining(&self, tat_us: i64, now_us: i64) -> u32 {
        let room = now_us + self.tolerance_us + self.interval_us - tat_us;
        (room.max(0) / self.interval_us) as u32
    }

    /// Microseconds until the limiter is back to a full burst.
    pub fn reset_after_us(&self, tat_us: i64, now_us: i64) -> i64 {
        (tat_us - now_us).max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(g: &Gcra, times: &[i64]) -> usize {
        let mut tat = None;
        let mut ok = 0;
        for &t in times {
            if let Decision::Allowed { new_tat_us, .. } = g.check(tat, t) {
                tat = Some(new_tat_us);
                ok += 1;
            }
        }
        ok
    }

    #[test]
    fn burst_then_steady() {
        let g = Gcra::new(10, 5);
        // 20 requests at the same instant: the burst passes.
        assert_eq!(run(&g, &[0; 20]), 5);
        let d = g.check(Some(500_000), 0);
        assert_eq!(
            d,
            Decision::Limited {
                retry_after_us: 100_000
            }
        );
        assert_eq!(
            g.check(None, 0),
            Decision::Allowed {
                new_tat_us: 100_000,
                remaining: 4
            }
        );
    }

    #[test]
    fn huge_rates_do_not_divide_by_zero() {
        let g = Gcra::new(u32::MAX, u32::MAX);
        assert!(matches!(g.check(None, 0), Decision::Allowed { .. }));
        assert!(g.remaining(10, 0) > 0);
    }

    proptest! {
        /// Over any span, accepted ≤ rate × span + burst, and a steady stream at the rate
        /// is never refused.
        #[test]
        fn never_more_than_rate_plus_burst(rps in 1u32..200, burst in 1u32..50, n in 1usize..400, gap in 0i64..20_000) {
            let g = Gcra::new(rps, burst);
            let times: Vec<i64> = (0..n as i64).map(|i| i * gap).collect();
            let span = times.last().copied().unwrap_or(0);
            let ok = run(&g, &times) as i64;
            prop_assert!(ok <= span / g.interval_us + burst as i64 + 1);
            let steady: Vec<i64> = (0..n as i64).map(|i| i * g.interval_us).collect();
            prop_assert_eq!(run(&g, &steady), n);
        }
    }
}
