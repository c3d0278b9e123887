//! The circuit breaker as a pure state machine: no I/O, the caller passes `now`.
//!
//! Closed → (`threshold` consecutive failures) → Open → (cooldown over, next request) →
//! HalfOpen with exactly one probe in flight → success closes, failure re-opens.

use time::{Duration, OffsetDateTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Closed {
        failures: u32,
    },
    Open {
        until: OffsetDateTime,
    },
    /// Cooldown over. `probing` while the one probe request is in flight.
    HalfOpen {
        probing: bool,
    },
}

/// Leave to send one request. Hand it back with the request's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct Permit {
    /// This request is the half-open probe: its result decides the state.
    pub probe: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breaker {
    threshold: u32,
    cooldown: Duration,
    state: State,
}

impl Breaker {
    /// `threshold` 0 is read as 1: a breaker that can never open would hide an outage.
    pub fn new(threshold: u32, cooldown: Duration) -> Self {
        Self {
            threshold: threshold.max(1),
            cooldown,
            state: State::Closed { failures: 0 },
        }
    }

    pub fn state(&self) -> State {
        self.state
    }

    /// May a request go out now? `None`: skip this connector.
    pub fn try_acquire(&mut self, now: OffsetDateTime) -> Option<Permit> {
        match self.state {
            State::Closed { .. } => Some(Permit { probe: false }),
            State::Open { until } if now >= until => {
                self.state = State::HalfOpen { probing: true };
                Some(Permit { probe: true })
            }
            State::Open { .. } => None,
            State::HalfOpen { probing: true } => None,
            State::HalfOpen { probing: false } => {
                self.state = State::HalfOpen { probing: true };
                Some(Permit { probe: true })
            }
        }
    }

    pub fn on_success(&mut self, permit: Permit) {
        match self.state {
            State::Closed { .. } => self.state = State::Closed { failures: 0 },
            State::HalfOpen { .. } if permit.probe => self.state = State::Closed { failures: 0 },
            // A request sent before the breaker opened says nothing about now.
            _ => {}
        }
    }

    pub fn on_failure(&mut self, permit: Permit, now: OffsetDateTime) {
        match self.state {
            State::Closed { failures } => {
                let failures = failures.saturating_add(1);
                self.state = if failures >= self.threshold {
                    State::Open {
                        until: now + self.cooldown,
                    }
                } else {
                    State::Closed { failures }
                };
            }
            State::HalfOpen { .. } if permit.probe => {
                self.state = State::Open {
                    until: now + self.cooldown,
                }
            }
            _ => {}
        }
    }

    /// The request never reached the connector (cancelled, or the cap was full): a probe
    /// slot is given back so the next request can probe.
    pub fn on_abandon(&mut self, permit: Permit) {
        if permit.probe && self.state == (State::HalfOpen { probing: true }) {
            self.state = State::HalfOpen { probing: false };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t0() -> OffsetDateTime {
        OffsetDateTime::UNIX_EPOCH
    }

    #[test]
    fn opens_half_opens_and_closes() {
        let mut b = Breaker::new(2, Duration::seconds(10));
        let p = b.try_acquire(t0()).unwrap();
        b.on_failure(p, t0());
        assert_eq!(b.state(), State::Closed { failures: 1 });
        let p = b.try_acquire(t0()).unwrap();
        b.on_failure(p, t0());
        assert!(matches!(b.state(), State::Open { .. }));
        assert!(b.try_acquire(t0() + Duration::seconds(9)).is_none());
        let probe = b.try_acquire(t0() + Duration::seconds(10)).unwrap();
        assert!(probe.probe);
        assert!(b.try_acquire(t0() + Duration::seconds(10)).is_none());
        b.on_success(probe);
        assert_eq!(b.state(), State::Closed { failures: 0 });
    }

    #[test]
    fn failed_probe_reopens_for_a_new_cooldown() {
        let mut b = Breaker::new(1, Duration::seconds(10));
        let p = b.try_acquire(t0()).unwrap();
        b.on_failure(p, t0());
        let at = t0() + Duration::seconds(12);
        let probe = b.try_acquire(at).unwrap();
        b.on_failure(probe, at);
        assert_eq!(
            b.state(),
            State::Open {
                until: at + Duration::seconds(10)
            }
        );
    }

    #[derive(Debug, Clone)]
    enum Op {
        Acquire,
        /// Finish the oldest request in flight.
        Succeed,
        Fail,
        Abandon,
        Advance(i64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => Just(Op::Acquire),
            2 => Just(Op::Succeed),
            3 => Just(Op::Fail),
            1 => Just(Op::Abandon),
            2 => (0i64..20).prop_map(Op::Advance),
        ]
    }

    proptest! {
        #[test]
        fn breaker_invariants(threshold in 1u32..5, ops in proptest::collection::vec(op(), 0..200)) {
            let cooldown = Duration::seconds(10);
            let mut b = Breaker::new(threshold, cooldown);
            let mut now = t0();
            let mut in_flight: Vec<Permit> = Vec::new();
            // Consecutive failures reported while closed, as the model counts them.
            let mut streak = 0u32;
            for op in ops {
                let before = b.state();
                match op {
                    Op::Acquire => {
                        let got = b.try_acquire(now);
                        match before {
                            State::Closed { .. } => prop_assert_eq!(got, Some(Permit { probe: false })),
                            State::Open { until } => prop_assert_eq!(got.is_some(), now >= until),
                            State::HalfOpen { probing } => prop_assert_eq!(got.is_some(), !probing),
                        }
                        if let Some(p) = got { in_flight.push(p); }
                    }
                    Op::Succeed | Op::Fail | Op::Abandon => {
                        if in_flight.is_empty() { continue; }
                        let p = in_flight.remove(0);
                        match op {
                            Op::Succeed => {
                                b.on_success(p);
                                if matches!(before, State::Closed { .. }) || (p.probe && matches!(before, State::HalfOpen { .. })) {
                                    prop_assert_eq!(b.state(), State::Closed { failures: 0 });
                                    streak = 0;
                                }
                            }
                            Op::Fail => {
                                b.on_failure(p, now);
                                if let State::Closed { .. } = before {
                                    streak += 1;
                                    if streak >= threshold {
                                        prop_assert_eq!(b.state(), State::Open { until: now + cooldown });
                                        streak = 0;
                                    } else {
                                        prop_assert_eq!(b.state(), State::Closed { failures: streak });
                                    }
                                } else if p.probe && matches!(before, State::HalfOpen { .. }) {
                                    prop_assert_eq!(b.state(), State::Open { until: now + cooldown });
                                }
                            }
                            _ => b.on_abandon(p),
                        }
                        if matches!(b.state(), State::Closed { failures: 0 }) { streak = 0; }
                    }
                    Op::Advance(s) => now += Duration::seconds(s),
                }
                // Never more than one probe in flight, and a probe exists only while half-open.
                let probes = in_flight.iter().filter(|p| p.probe).count();
                prop_assert!(probes <= 1);
                if let State::HalfOpen { probing } = b.state() {
                    prop_assert_eq!(probing, probes == 1);
                }
                if let State::Closed { failures } = b.state() {
                    prop_assert!(failures < threshold);
                }
            }
        }
    }
}
