//! Monthly billing cycles. A service's cycle starts on its billing anchor's day of the month at
//! the anchor's time of day, in Thai time (UTC+07:00); an anchor on the 29th–31st starts the
//! cycle on the last day of shorter months. Usage counted in an earlier cycle is not usage now:
//! readers and the charge writer compare a counter's stored cycle start with the current one,
//! so a reset needs no job at the boundary and no request to arrive then.

use crate::clock::bangkok;
use crate::quota::Quota;
use time::{Date, Month, OffsetDateTime};

/// The anchor moved by `k` months (day clamped to the month's length).
fn shift_months(anchor: OffsetDateTime, k: i64) -> OffsetDateTime {
    let a = bangkok(anchor);
    let index = a.year() as i64 * 12 + (a.month() as i64 - 1) + k;
    let (year, month0) = (index.div_euclid(12) as i32, index.rem_euclid(12) as u8);
    let month = Month::try_from(month0 + 1).unwrap_or(Month::January);
    let day = a.day().min(month.length(year));
    match Date::from_calendar_date(year, month, day) {
        Ok(d) => d.with_time(a.time()).assume_offset(a.offset()),
        Err(_) => a,
    }
}

/// Start of the cycle that contains `now`.
pub fn cycle_start(anchor: OffsetDateTime, now: OffsetDateTime) -> OffsetDateTime {
    let (a, n) = (bangkok(anchor), bangkok(now));
    let mut k = (n.year() as i64 - a.year() as i64) * 12 + (n.month() as i64 - a.month() as i64);
    let mut start = shift_months(anchor, k);
    while start > now {
        k -= 1;
        start = shift_months(anchor, k);
    }
    start
}

/// Start of the cycle after the one that contains `now`.
pub fn next_cycle_start(anchor: OffsetDateTime, now: OffsetDateTime) -> OffsetDateTime {
    let start = cycle_start(anchor, now);
    let (a, s) = (bangkok(anchor), bangkok(start));
    let k = (s.year() as i64 - a.year() as i64) * 12 + (s.month() as i64 - a.month() as i64);
    shift_months(anchor, k + 1)
}

/// A counter as it stands in the current cycle: usage stored for an earlier cycle counts as 0.
pub fn effective(q: Quota, stored_cycle: OffsetDateTime, current_cycle: OffsetDateTime) -> Quota {
    if stored_cycle < current_cycle {
        Quota { used: 0, ..q }
    } else {
        q
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use time::macros::datetime;

    #[test]
    fn month_ends_clamp() {
        let anchor = datetime!(2026-01-31 10:00 +7);
        // (now, the start of its cycle)
        for (now, start) in [
            (
                datetime!(2026-02-15 0:00 +7),
                datetime!(2026-01-31 10:00 +7),
            ),
            (
                datetime!(2026-02-28 10:00 +7),
                datetime!(2026-02-28 10:00 +7),
            ),
            (
                datetime!(2026-02-28 09:59 +7),
                datetime!(2026-01-31 10:00 +7),
            ),
            (
                datetime!(2028-02-29 12:00 +7),
                datetime!(2028-02-29 10:00 +7),
            ),
        ] {
            assert_eq!(cycle_start(anchor, now), start, "now {now}");
        }
        assert_eq!(
            next_cycle_start(anchor, datetime!(2026-02-28 10:00 +7)),
            datetime!(2026-03-31 10:00 +7)
        );
    }

    #[test]
    fn before_the_anchor_and_across_years() {
        let anchor = datetime!(2026-11-22 03:00 UTC); // 10:00 in Bangkok
        assert_eq!(cycle_start(anchor, datetime!(2026-11-22 03:00 UTC)), anchor);
        assert_eq!(
            cycle_start(anchor, datetime!(2026-11-22 02:59 UTC)),
            datetime!(2026-10-22 10:00 +7)
        );
        assert_eq!(
            cycle_start(anchor, datetime!(2027-01-05 0:00 UTC)),
            datetime!(2026-12-22 10:00 +7)
        );
    }

    #[test]
    fn stale_usage_is_zero() {
        let q = Quota {
            limit: Some(10),
            used: 10,
            total_used: 40,
        };
        let (old, cur) = (
            datetime!(2026-10-22 10:00 +7),
            datetime!(2026-11-22 10:00 +7),
        );
        assert_eq!(effective(q, old, cur), Quota { used: 0, ..q });
        assert_eq!(effective(q, cur, cur), q);
    }

    proptest! {
        #[test]
        fn now_is_inside_its_cycle(anchor_s in 0i64..4_000_000_000, delta in -2_000_000_000i64..2_000_000_000) {
            let anchor = OffsetDateTime::from_unix_timestamp(anchor_s).unwrap();
            let now = OffsetDateTime::from_unix_timestamp(anchor_s + delta).unwrap();
            let start = cycle_start(anchor, now);
            let next = next_cycle_start(anchor, now);
            prop_assert!(start <= now && now < next);
            // Cycles are between 28 and 31 days long.
            let days = (next - start).whole_days();
            prop_assert!((28..=31).contains(&days), "{} days", days);
            prop_assert_eq!(cycle_start(anchor, next), next);
        }
    }
}
