//! Quota arithmetic. The store applies the same rule atomically in SQL; this is what reads
//! (`/v2/info`, pre-checks) use, and what the SQL is tested against.

/// A usage counter against an optional limit (`None`: no limit of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub limit: Option<i64>,
    pub used: i64,
    pub total_used: i64,
}

impl Quota {
    pub fn remaining(&self) -> Option<i64> {
        self.limit.map(|l| (l - self.used).max(0))
    }

    pub fn has_room(&self) -> bool {
        self.limit.is_none_or(|l| self.used < l)
    }
}

/// Both the service and the branch must have room for one more unit.
pub fn can_charge(service: &Quota, branch: &Quota) -> bool {
    service.has_room() && branch.has_room()
}

impl Quota {
    fn take(&mut self) {
        self.used += 1;
        self.total_used += 1;
    }
}

/// Grants a batch of charges in order, exactly as if each were applied alone: charge `i`
/// names indices into `services` and `branches` and is granted when both have room, which
/// then each give one unit. Counters are updated in place; returns which charges were granted.
pub fn grant(
    charges: &[(usize, usize)],
    services: &mut [Quota],
    branches: &mut [Quota],
) -> Vec<bool> {
    charges
        .iter()
        .map(|&(s, b)| {
            let ok = can_charge(&services[s], &branches[b]);
            if ok {
                services[s].take();
                branches[b].take();
            }
            ok
        })
        .collect()
}

/// A partner's change to a branch limit (spec 4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaOp {
    /// `PUT`: a new limit, or `None` for no branch limit.
    Set(Option<i64>),
    /// `adjust`: add to (or, negative, take from) the current limit.
    Adjust(i64),
    /// `reset`: usage of this cycle back to 0; the all-time total is kept.
    Reset,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaOpError {
    /// The new limit would be below what this cycle has already used.
    BelowUsed { limit: i64, used: i64 },
    /// `adjust` on a branch without a limit of its own.
    NoLimit,
    /// A negative limit (or one too large to represent).
    OutOfRange,
}

/// Applies an operation to a branch's counters as they stand in the current cycle.
pub fn apply_op(q: Quota, op: QuotaOp) -> Result<Quota, QuotaOpError> {
    let limit = |l: i64| {
        if l < 0 {
            Err(QuotaOpError::OutOfRange)
        } else if l < q.used {
            Err(QuotaOpError::BelowUsed {
                limit: l,
                used: q.used,
            })
        } else {
            Ok(Quota {
                limit: Some(l),
                ..q
            })
        }
    };
    match op {
        QuotaOp::Set(None) => Ok(Quota { limit: None, ..q }),
        QuotaOp::Set(Some(l)) => limit(l),
        QuotaOp::Adjust(delta) => {
            let current = q.limit.ok_or(QuotaOpError::NoLimit)?;
            let new = current.checked_add(delta).ok_or(QuotaOpError::OutOfRange)?;
            // Taking more than the limit holds is taking it below what was used (never
            // negative), the refusal the spec names for adjust; only overflow is out of range.
            if new < q.used {
                return Err(QuotaOpError::BelowUsed {
                    limit: new,
                    used: q.used,
                });
            }
            limit(new)
        }
        QuotaOp::Reset => Ok(Quota { used: 0, ..q }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn null_branch_limit_defers_to_service() {
        let s = Quota {
            limit: Some(10),
            used: 9,
            total_used: 50,
        };
        let b = Quota {
            limit: None,
            used: 9,
            total_used: 9,
        };
        assert!(can_charge(&s, &b));
        let s = Quota { used: 10, ..s };
        assert!(!can_charge(&s, &b));
        assert_eq!(s.remaining(), Some(0));
        assert_eq!(b.remaining(), None);
    }

    fn quota() -> impl Strategy<Value = Quota> {
        (proptest::option::of(0i64..20), 0i64..25).prop_map(|(limit, used)| Quota {
            limit,
            used,
            total_used: used + 100,
        })
    }

    #[test]
    fn quota_operations() {
        let q = Quota {
            limit: Some(10),
            used: 4,
            total_used: 40,
        };
        assert_eq!(apply_op(q, QuotaOp::Set(Some(4))).unwrap().limit, Some(4));
        assert_eq!(
            apply_op(q, QuotaOp::Set(Some(3))),
            Err(QuotaOpError::BelowUsed { limit: 3, used: 4 })
        );
        assert_eq!(apply_op(q, QuotaOp::Set(None)).unwrap().limit, None);
        assert_eq!(apply_op(q, QuotaOp::Adjust(5)).unwrap().limit, Some(15));
        assert_eq!(apply_op(q, QuotaOp::Adjust(-6)).unwrap().limit, Some(4));
        assert_eq!(
            apply_op(q, QuotaOp::Adjust(-7)),
            Err(QuotaOpError::BelowUsed { limit: 3, used: 4 })
        );
        assert_eq!(
            apply_op(q, QuotaOp::Adjust(i64::MAX)),
            Err(QuotaOpError::OutOfRange)
        );
        assert_eq!(
            apply_op(Quota { limit: None, ..q }, QuotaOp::Adjust(1)),
            Err(QuotaOpError::NoLimit)
        );
        let r = apply_op(q, QuotaOp::Reset).unwrap();
        assert_eq!((r.used, r.total_used, r.limit), (0, 40, Some(10)));
        assert_eq!(
            apply_op(Quota { used: 0, ..q }, QuotaOp::Set(Some(-1))),
            Err(QuotaOpError::OutOfRange)
        );
        assert_eq!(
            apply_op(Quota { used: 0, ..q }, QuotaOp::Adjust(-11)),
            Err(QuotaOpError::BelowUsed { limit: -1, used: 0 })
        );
    }

    proptest! {
        #[test]
        fn grants_never_exceed_limits_and_refuse_only_when_full(
            mut services in proptest::collection::vec(quota(), 1..4),
            mut branches in proptest::collection::vec(quota(), 1..6),
            raw in proptest::collection::vec((0usize..100, 0usize..100), 0..80),
        ) {
            let charges: Vec<(usize, usize)> =
                raw.iter().map(|(s, b)| (s % services.len(), b % branches.len())).collect();
            let (s0, b0) = (services.clone(), branches.clone());
            let granted = grant(&charges, &mut services, &mut branches);
            for (i, q) in services.iter().enumerate() {
                let n = charges.iter().zip(&granted).filter(|((s, _), g)| *s == i && **g).count() as i64;
                prop_assert_eq!(q.used, s0[i].used + n);
                prop_assert_eq!(q.total_used, s0[i].total_used + n);
                if let Some(l) = q.limit { prop_assert!(n == 0 || q.used <= l); }
            }
            for (i, q) in branches.iter().enumerate() {
                let n = charges.iter().zip(&granted).filter(|((_, b), g)| *b == i && **g).count() as i64;
                prop_assert_eq!(q.used, b0[i].used + n);
                if let Some(l) = q.limit { prop_assert!(n == 0 || q.used <= l); }
            }
            // A refused charge met a full service or branch, and they stay full.
            for (&(s, b), g) in charges.iter().zip(&granted) {
                if !g { prop_assert!(!services[s].has_room() || !branches[b].has_room()); }
            }
        }

        #[test]
        fn room_iff_used_below_limit(limit in 0i64..1000, used in 0i64..2000) {
            let q = Quota { limit: Some(limit), used, total_used: used };
            prop_assert_eq!(q.has_room(), used < limit);
            prop_assert!(q.remaining().unwrap() >= 0);
        }
    }
}
