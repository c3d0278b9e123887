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

    proptest! {
        #[test]
        fn room_iff_used_below_limit(limit in 0i64..1000, used in 0i64..2000) {
            let q = Quota { limit: Some(limit), used, total_used: used };
            prop_assert_eq!(q.has_room(), used < limit);
            prop_assert!(q.remaining().unwrap() >= 0);
        }
    }
}
