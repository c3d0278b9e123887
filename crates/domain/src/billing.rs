//! Packages, subscriptions and renewal: when a service renews, what a renewal changes, and the
//! credit arithmetic. The store applies exactly these rules with the service row locked, so
//! however many requests (or nodes) see the boundary at once, one renewal happens.

/// Defined with the service that holds them (`Service::subscription`).
pub use crate::model::{AutoRenew, Subscription};
use crate::model::{Service, ServiceState};
use crate::money::Satang;
use time::{Duration, OffsetDateTime};

/// What a service buys: a quota per billing cycle for a duration, at a price in credit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    pub id: crate::PackageId,
    /// Unique; what admins and `/v2/info` call it.
    pub name: String,
    /// Verifications per billing cycle.
    pub quota: i64,
    pub duration_days: u32,
    /// Drawn from the service's credit on each auto-renewal.
    pub price: Satang,
    pub created_at: OffsetDateTime,
}

impl Package {
    pub fn duration(&self) -> Duration {
        Duration::days(i64::from(self.duration_days))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenewReason {
    Expiry,
    Quota,
}

impl RenewReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RenewReason::Expiry => "expiry",
            RenewReason::Quota => "quota",
        }
    }
}

/// Whether the service's package renews at `now`, and why. Only a subscribed, otherwise
/// usable service renews (a banned or deleted one is refused for that, not for expiry).
/// Expiry comes first: an expired service is refused as expired even when its quota is
/// also used up. Only the service's quota counts: a branch's own limit is that branch's.
pub fn renewal_due(s: &Service, now: OffsetDateTime) -> Option<RenewReason> {
    s.subscription.package_id.as_ref()?;
    if s.state != ServiceState::Active || s.owner_banned || !s.owner_verified {
        return None;
    }
    let auto = s.subscription.auto_renew;
    if s.expires_at.is_some_and(|t| now >= t) {
        return auto.on_expiry.then_some(RenewReason::Expiry);
    }
    if auto.on_quota && !s.quota_at(now).has_room() {
        return Some(RenewReason::Quota);
    }
    None
}

/// A new period of `p` starting at `now`: its quota, a fresh cycle (usage 0, anchored now)
/// and its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Period {
    pub limit: i64,
    pub starts: OffsetDateTime,
    pub expires: OffsetDateTime,
}

/// A period starts at the renewal, not at the old expiry: a lapsed service renewed days
/// later gets its full duration from then.
pub fn period(p: &Package, now: OffsetDateTime) -> Period {
    Period {
        limit: p.quota,
        starts: now,
        expires: now + p.duration(),
    }
}

/// The balance after a movement of `amount` (negative draws), or `None` when it would go
/// below zero or overflow: then nothing moves.
pub fn apply_credit(balance: i64, amount: i64) -> Option<i64> {
    balance.checked_add(amount).filter(|b| *b >= 0)
}

/// How a renewal is paid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payment {
    /// Drawn from the service's credit in the renewal's own transaction.
    Ledger,
    /// Approved by the external billing system under this reference.
    External { reference: String },
}

/// Why credit moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreditKind {
    TopUp,
    Renewal,
    /// An operator's correction (either sign).
    Adjustment,
}

impl CreditKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CreditKind::TopUp => "topup",
            CreditKind::Renewal => "renewal",
            CreditKind::Adjustment => "adjustment",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "topup" => Some(CreditKind::TopUp),
            "renewal" => Some(CreditKind::Renewal),
            "adjustment" => Some(CreditKind::Adjustment),
            _ => None,
        }
    }
}

/// One row of the append-only credit ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub id: String,
    pub service_id: crate::ServiceId,
    pub at: OffsetDateTime,
    pub kind: CreditKind,
    /// Satang; negative draws.
    pub amount: i64,
    pub balance_after: i64,
    /// `cli`, `admin-api`, `renewal`...
    pub actor: String,
    pub note: Option<String>,
}

/// `sha256=<hex>` of HMAC-SHA256 over `<timestamp>.<body>`, keyed with the billing secret:
/// what a request to an external billing endpoint carries in `X-Billing-Signature`. The
/// timestamp is signed so a captured request cannot be replayed later.
pub fn sign_billing_request(secret: &str, timestamp: i64, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Plan;
    use crate::quota::Quota;
    use proptest::prelude::*;
    use time::macros::datetime;

    fn service(limit: i64, used: i64, expires: OffsetDateTime, auto: AutoRenew) -> Service {
        let start = datetime!(2026-11-01 00:00 UTC);
        Service {
            id: "s".into(),
            name: "shop".into(),
            quota: Quota {
                limit: Some(limit),
                used,
                total_used: used,
            },
            created_at: start,
            state: ServiceState::Active,
            expires_at: Some(expires),
            owner_id: None,
            owner_banned: false,
            owner_verified: true,
            billing_anchor: start,
            cycle_start: start,
            plan: Plan {
                name: "default".into(),
                rps: 10,
                burst: 5,
            },
            rate_limit_rps: None,
            subscription: Subscription {
                package_id: Some("p".into()),
                started_at: Some(start),
                auto_renew: auto,
                renewal_seq: 0,
                credit: 0,
            },
        }
    }

    #[test]
    fn due_by_expiry_then_quota() {
        let exp = datetime!(2026-12-01 00:00 UTC);
        let before = datetime!(2026-11-20 00:00 UTC);
        let s = service(10, 10, exp, AutoRenew::ON);
        assert_eq!(renewal_due(&s, before), Some(RenewReason::Quota));
        assert_eq!(renewal_due(&s, exp), Some(RenewReason::Expiry));
        let s = service(10, 9, exp, AutoRenew::ON);
        assert_eq!(renewal_due(&s, before), None);
        // Expired without renewal on expiry: refused as expired, not renewed for quota.
        let only_quota = AutoRenew {
            on_expiry: false,
            on_quota: true,
        };
        assert_eq!(renewal_due(&service(10, 10, exp, only_quota), exp), None);
        let mut s = service(10, 10, exp, AutoRenew::ON);
        s.subscription.package_id = None;
        assert_eq!(renewal_due(&s, before), None);
        s = service(10, 10, exp, AutoRenew::ON);
        s.state = ServiceState::Banned;
        assert_eq!(renewal_due(&s, before), None);
        // Usage of an earlier cycle is not usage now: nothing to renew.
        let s = service(10, 10, datetime!(2027-06-01 00:00 UTC), AutoRenew::ON);
        assert_eq!(renewal_due(&s, datetime!(2026-12-02 00:00 UTC)), None);
    }

    #[test]
    fn billing_signature_vector() {
        // printf '1700000000.{}' | openssl dgst -sha256 -hmac secret
        assert_eq!(
            sign_billing_request("secret", 1_700_000_000, b"{}"),
            "sha256=b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163"
        );
    }

    proptest! {
        #[test]
        fn credit_never_negative(start in 0i64..1_000_000, moves in prop::collection::vec(-500_000i64..500_000, 0..50)) {
            let mut balance = start;
            for m in moves {
                match apply_credit(balance, m) {
                    Some(b) => { prop_assert!(b >= 0); prop_assert_eq!(b, balance + m); balance = b; }
                    None => prop_assert!(balance + m < 0),
                }
            }
        }

        #[test]
        fn a_renewed_service_is_not_due(limit in 1i64..10_000, used in 0i64..20_000, days in 1u32..400, offset_h in 0i64..20_000) {
            let exp = datetime!(2026-12-01 00:00 UTC);
            let now = datetime!(2026-11-01 00:00 UTC) + Duration::hours(offset_h);
            let mut s = service(limit, used, exp, AutoRenew::ON);
            let p = Package { id: "p".into(), name: "p".into(), quota: limit, duration_days: days, price: Satang(100), created_at: now };
            if renewal_due(&s, now).is_some() {
                let per = period(&p, now);
                s.quota = Quota { limit: Some(per.limit), used: 0, total_used: s.quota.total_used };
                s.billing_anchor = per.starts;
                s.cycle_start = per.starts;
                s.expires_at = Some(per.expires);
                prop_assert_eq!(renewal_due(&s, now), None);
                prop_assert!(per.expires > now);
            }
        }
    }
}
