//! Auto-renewal: when a request meets an expired service or a used-up service quota with
//! auto-renew on, the package renews once, through the billing component, and the request
//! goes on. Many requests (on many nodes) may see the same boundary: each asks the store to
//! start the period "as of renewal N", and the store, with the service row locked, lets
//! exactly one of them do it; the others find it done and carry on with the new period.

use billing::{Decision, RenewalRequest};
use domain::billing::renewal_due;
use domain::model::{Branch, Service};
use domain::quota::can_charge;
use domain::Error;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use store::{ChargeOutcome, PeriodOutcome, PeriodStart, StoreError, VerificationRecord};

/// Per-service locks, each with the last "billing unavailable" seen for a period and when:
/// requests that were already waiting while that answer came get it too, instead of
/// queueing for the endpoint one by one through its timeout. Later arrivals ask afresh.
#[derive(Default)]
pub struct RenewalLocks {
    by_service: Mutex<HashMap<domain::ServiceId, ServiceLock>>,
}

/// The last "billing unavailable" for a period (`<service>:<seq>`) and when it came.
type ServiceLock = Arc<tokio::sync::Mutex<Option<(String, Instant)>>>;

impl RenewalLocks {
    fn of(&self, service_id: &domain::ServiceId) -> ServiceLock {
        let mut map = self.by_service.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(service_id.clone()).or_default().clone()
    }
}

/// How often a charge refused for quota is tried again. Every retry follows progress
/// elsewhere (a renewal, or other requests using up a fresh period), and credit runs out, so
/// a request loops only while many others race it for small periods; this bounds the
/// worst case.
const CHARGE_TRIES: usize = 64;

/// The charge writer with auto-renewal: production's way of recording a verification (its
/// space holds one). Holds only what charging and renewing use.
#[derive(Clone)]
pub(crate) struct Charger {
    pub(crate) store: Arc<store::SqlStore>,
    pub(crate) clock: Arc<dyn domain::Clock>,
    /// Who approves renewals: the credit ledger (default) or an external endpoint.
    pub(crate) billing: Arc<dyn billing::Billing>,
    /// One renewal attempt per service at a time on this node (the database decides
    /// between nodes).
    pub(crate) renewals: Arc<RenewalLocks>,
    /// Counts requests meeting a low quota at the pre-check.
    pub(crate) metrics: ::metrics::Metrics,
}

impl Charger {
    /// Renews the service's package if auto-renewal is due now. `Some(service)`: the
    /// service as it now stands, renewed by this call or by another request (the caller
    /// checks it again); `None`: no renewal (not due, no credit, declined), so the caller's
    /// own refusal stands; `RenewalTemporarilyUnavailable`: billing could not answer.
    pub(crate) async fn renew_if_due(&self, service: &Service) -> Result<Option<Service>, Error> {
        if renewal_due(service, self.clock.now()).is_none() {
            return Ok(None);
        }
        let arrived = Instant::now();
        let lock = self.renewals.of(&service.id);
        let mut last_unavailable = lock.lock().await;
        let Some(fresh) = self.store.get_service(&service.id).await? else {
            return Ok(None);
        };
        let now = self.clock.now();
        let Some(reason) = renewal_due(&fresh, now) else {
            // Renewed meanwhile (or no longer due): go on with the service as it stands.
            return Ok(Some(fresh));
        };
        let Some(package_id) = fresh.subscription.package_id.as_ref() else {
            return Ok(None);
        };
        let Some(package) = self.store.get_package(package_id.as_str()).await? else {
            return Ok(None);
        };
        // A period without quota would be due again at once: never pay for one.
        if package.quota < 1 {
            return Ok(None);
        }
        let seq = fresh.subscription.renewal_seq;
        let key = format!("{}:{}", fresh.id, seq);
        if matches!(&*last_unavailable, Some((k, at)) if *k == key && *at >= arrived) {
            return Err(Error::RenewalTemporarilyUnavailable);
        }
        let req = RenewalRequest {
            service_id: fresh.id.clone(),
            service_name: fresh.name.clone(),
            package,
            reason,
            idempotency_key: key.clone(),
            requested_at: now,
        };
        let payment = match self.billing.approve(&req).await {
            Decision::Approved(p) => p,
            Decision::Declined(why) => {
                tracing::info!(service = %fresh.id, %why, "renewal declined by billing");
                return Ok(None);
            }
            Decision::Unavailable(why) => {
                tracing::warn!(service = %fresh.id, %why, "billing unavailable; not renewed");
                *last_unavailable = Some((key, Instant::now()));
                return Err(Error::RenewalTemporarilyUnavailable);
            }
        };
        let start = PeriodStart::Renew { expected_seq: seq };
        match self
            .store
            .start_period(&fresh.id, &start, Some(&payment), now, "auto-renew")
            .await?
        {
            PeriodOutcome::Started { .. } => {
                tracing::info!(service = %fresh.id, reason = reason.as_str(), billing = self.billing.kind(), "subscription renewed");
            }
            // Another node renewed first.
            PeriodOutcome::NotDue => {}
            PeriodOutcome::InsufficientCredit => {
                tracing::info!(service = %fresh.id, "not renewed: credit too low");
                return Ok(None);
            }
            PeriodOutcome::NoPackage | PeriodOutcome::NoService => return Ok(None),
        }
        Ok(self.store.get_service(&fresh.id).await?)
    }

    /// The service if it may verify now, renewing an expired one when auto-renew says so.
    pub(crate) async fn usable_service(&self, service: Service) -> Result<Service, Error> {
        match service.check_access(self.clock.now()) {
            Err(Error::ServiceExpired) => match self.renew_if_due(&service).await? {
                Some(s) => {
                    s.check_access(self.clock.now())?;
                    Ok(s)
                }
                None => Err(Error::ServiceExpired),
            },
            Err(e) => Err(e),
            Ok(()) => Ok(service),
        }
    }

    /// The cheap refusal before asking the bank: room for one more verification, after
    /// renewing a used-up service quota when auto-renew says so.
    pub(crate) async fn precheck_quota(
        &self,
        service: &Service,
        branch: &Branch,
    ) -> Result<(), Error> {
        let (service_quota, branch_quota) = quotas_at(service, branch, self.clock.now());
        if [&service_quota, &branch_quota].into_iter().any(low) {
            self.metrics.quota_low();
        }
        if can_charge(&service_quota, &branch_quota) {
            return Ok(());
        }
        if !branch_quota.has_room() {
            return Err(Error::QuotaExceeded);
        }
        match self.renew_if_due(service).await? {
            Some(s) => {
                let (sq, bq) = quotas_at(&s, branch, self.clock.now());
                if can_charge(&sq, &bq) {
                    Ok(())
                } else {
                    Err(Error::QuotaExceeded)
                }
            }
            None => Err(Error::QuotaExceeded),
        }
    }

    /// Charges and records; when the service quota ran out meanwhile (the boundary was
    /// crossed after the pre-check, or this is a job), renews if due and tries again.
    pub(crate) async fn charge_with_renewal(
        &self,
        rec: &VerificationRecord,
        draft: Option<domain::attempt::AttemptDraft>,
    ) -> Result<ChargeOutcome, Error> {
        for _ in 0..CHARGE_TRIES {
            let charged = match &draft {
                Some(d) => self.store.charge_and_log(rec, d.clone()).await,
                None => self.store.charge_and_record(rec).await,
            };
            match charged {
                Err(StoreError::QuotaExceeded) => {}
                other => return other.map_err(Error::from),
            }
            let Some(service) = self.store.get_service(&rec.service_id).await? else {
                return Err(Error::QuotaExceeded);
            };
            // Another request may have renewed since our charge was refused: then there is
            // room again without a renewal of our own.
            let room = service.quota_at(self.clock.now()).has_room();
            if !room && self.renew_if_due(&service).await?.is_none() {
                return Err(Error::QuotaExceeded);
            }
        }
        Err(Error::QuotaExceeded)
    }
}

/// Service and branch counters as they stand in the cycle containing `now`.
pub(crate) fn quotas_at(
    service: &Service,
    branch: &Branch,
    now: time::OffsetDateTime,
) -> (domain::quota::Quota, domain::quota::Quota) {
    let cycle = service.current_cycle(now);
    (service.quota_at(now), branch.quota_in(cycle))
}

/// Less than 10 % of a limited quota left (`slipverify_quota_low_requests_total`).
fn low(q: &domain::quota::Quota) -> bool {
    q.limit
        .zip(q.remaining())
        .is_some_and(|(limit, left)| left == 0 || left * 10 < limit)
}
