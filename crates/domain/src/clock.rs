//! Time is injected so tests can move it (pending windows, later cycles and schedules).

use std::sync::atomic::{AtomicI64, Ordering};
use time::OffsetDateTime;

pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> OffsetDateTime;
}

#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock {
    unix_millis: AtomicI64,
}

impl ManualClock {
    pub fn new(at: OffsetDateTime) -> Self {
        Self {
            unix_millis: AtomicI64::new(to_millis(at)),
        }
    }

    pub fn advance(&self, by: time::Duration) {
        self.unix_millis
            .fetch_add(by.whole_milliseconds() as i64, Ordering::SeqCst);
    }

    pub fn set(&self, at: OffsetDateTime) {
        self.unix_millis.store(to_millis(at), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        from_millis(self.unix_millis.load(Ordering::SeqCst))
    }
}

/// Storage keeps instants as Unix milliseconds: the same on SQLite and PostgreSQL.
pub fn to_millis(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

pub fn from_millis(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Thai time (UTC+07:00), the offset slips are shown in.
pub fn bangkok(t: OffsetDateTime) -> OffsetDateTime {
    t.to_offset(time::macros::offset!(+7))
}

/// ISO 8601 with the `+07:00` offset and millisecond precision, e.g. `2026-11-22T10:15:00.000+07:00`.
pub fn format_bangkok(t: OffsetDateTime) -> String {
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3][offset_hour sign:mandatory]:[offset_minute]"
    );
    bangkok(t).format(&fmt).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_in_bangkok_time() {
        let t = time::macros::datetime!(2026-11-22 03:04:05.678 UTC);
        assert_eq!(format_bangkok(t), "2026-11-22T10:04:05.678+07:00");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let t = time::macros::datetime!(2026-01-01 0:00 UTC);
        let c = ManualClock::new(t);
        assert_eq!(c.now(), t);
        c.advance(time::Duration::minutes(5));
        assert_eq!(c.now(), t + time::Duration::minutes(5));
        assert_eq!(from_millis(to_millis(c.now())), c.now());
    }
}
