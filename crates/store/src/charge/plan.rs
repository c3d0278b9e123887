//! The charge writer's decision, without I/O: from what the transaction read under its locks,
//! which charges are granted, which counters to write, and (once the slips are inserted) each
//! charge's outcome and what to record on its job or `Idempotency-Key` row.

use crate::{ChargeOutcome, Result, StoreError, VerificationRecord};
use domain::clock::{from_millis, to_millis};
use domain::cycle::{cycle_start, effective};
use domain::quota::{grant, Quota};
use time::OffsetDateTime;

/// A service's counters as they stand in the current cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceRow {
    pub id: String,
    pub quota: Quota,
    /// The current cycle's start (ms).
    pub cycle: i64,
}

/// A branch's counters as they stand in its service's current cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BranchRow {
    pub id: String,
    pub service_id: String,
    pub quota: Quota,
}

/// Everything the transaction read, under its locks.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub services: Vec<ServiceRow>,
    pub branches: Vec<BranchRow>,
    /// Jobs charged before (id, first verification then).
    pub jobs_before: Vec<(String, bool)>,
    /// `Idempotency-Key`s charged before (branch, key, first verification then).
    pub keys_before: Vec<(String, String, bool)>,
}

/// "Now" for cycle boundaries: the latest verification time in the batch (all are within the
/// batching delay of each other).
pub(crate) fn batch_now(recs: &[&VerificationRecord]) -> OffsetDateTime {
    recs.iter()
        .map(|r| r.verified_at)
        .max()
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// A service row as read: usage stored for an earlier cycle counts as 0.
pub(crate) fn service_row(
    id: String,
    stored: Quota,
    anchor: i64,
    stored_cycle: i64,
    now: OffsetDateTime,
) -> ServiceRow {
    let cycle = cycle_start(from_millis(anchor), now);
    let quota = effective(stored, from_millis(stored_cycle), cycle);
    ServiceRow {
        id,
        quota,
        cycle: to_millis(cycle),
    }
}

/// A branch row as read. A branch's cycle is its service's; a branch whose service is not in
/// this batch cannot be charged anyway.
pub(crate) fn branch_row(
    id: String,
    service_id: String,
    stored: Quota,
    stored_cycle: i64,
    services: &[ServiceRow],
    now: OffsetDateTime,
) -> BranchRow {
    let cycle = services
        .iter()
        .find(|s| s.id == service_id)
        .map(|s| from_millis(s.cycle))
        .unwrap_or(now);
    let quota = effective(stored, from_millis(stored_cycle), cycle);
    BranchRow {
        id,
        service_id,
        quota,
    }
}

/// New absolute `used` for a counter row, the units added, and the cycle it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CounterUpdate {
    pub id: String,
    pub used: i64,
    pub added: i64,
    pub cycle: i64,
}

/// The decision before the slips are inserted.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The outcome recorded when the charge's job or key was charged before.
    before: Vec<Option<bool>>,
    /// The earlier charge in this batch that this one may happen only once with.
    first_of_job: Vec<Option<usize>>,
    pub granted: Vec<bool>,
    pub service_updates: Vec<CounterUpdate>,
    pub branch_updates: Vec<CounterUpdate>,
}

/// Decides every charge of the batch (sorted as in `run`) against the locked rows.
pub(crate) fn decide(recs: &[&VerificationRecord], snap: &Snapshot) -> Plan {
    // Jobs charged before (their worker crashed after the charge) and requests under an
    // `Idempotency-Key` charged before (a node died after charging one) are not charged
    // again: they get the outcome recorded then.
    let before: Vec<Option<bool>> = recs
        .iter()
        .map(|rec| {
            let job = rec
                .job_id
                .as_ref()
                .map(domain::JobId::as_str)
                .and_then(|j| {
                    snap.jobs_before
                        .iter()
                        .find(|(id, _)| id == j)
                        .map(|(_, f)| *f)
                });
            job.or_else(|| {
                let k = rec.idempotency_key.as_deref()?;
                snap.keys_before
                    .iter()
                    .find(|(b, kk, _)| b == rec.branch_id.as_str() && kk == k)
                    .map(|(_, _, f)| *f)
            })
        })
        .collect();

    // Charges whose service or branch is missing, or whose branch belongs to another
    // service, are refused like an exhausted quota (as the conditional UPDATEs would).
    // The same job twice in one batch (its lease ran out while its first charge was
    // queued, and another worker queued it again): only the first is charged; the others
    // get its outcome.
    let first_of_job: Vec<Option<usize>> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| recs[..i].iter().position(|o| charged_once_together(o, r)))
        .collect();
    let mut charges = Vec::with_capacity(recs.len());
    let mut valid = Vec::with_capacity(recs.len());
    for (i, rec) in recs.iter().enumerate() {
        if before[i].is_some() || first_of_job[i].is_some() {
            valid.push(false);
            continue;
        }
        let s = snap
            .services
            .iter()
            .position(|s| s.id == rec.service_id.as_str());
        let b = snap.branches.iter().position(|b| {
            b.id == rec.branch_id.as_str() && b.service_id == rec.service_id.as_str()
        });
        match (s, b) {
            (Some(s), Some(b)) => {
                charges.push((s, b));
                valid.push(true);
            }
            _ => valid.push(false),
        }
    }
    let mut sq: Vec<Quota> = snap.services.iter().map(|s| s.quota).collect();
    let mut bq: Vec<Quota> = snap.branches.iter().map(|b| b.quota).collect();
    let granted_valid = grant(&charges, &mut sq, &mut bq);

    let service_updates = snap
        .services
        .iter()
        .zip(&sq)
        .filter(|(s, q)| q.used > s.quota.used)
        .map(|(s, q)| CounterUpdate {
            id: s.id.clone(),
            used: q.used,
            added: q.used - s.quota.used,
            cycle: s.cycle,
        })
        .collect();
    let branch_updates = snap
        .branches
        .iter()
        .zip(&bq)
        .filter_map(|(b, q)| {
            let added = q.used - b.quota.used;
            let cycle = snap
                .services
                .iter()
                .find(|s| s.id == b.service_id)
                .map(|s| s.cycle)?;
            (added > 0).then(|| CounterUpdate {
                id: b.id.clone(),
                used: q.used,
                added,
                cycle,
            })
        })
        .collect();

    let mut granted_iter = granted_valid.into_iter();
    let granted = valid
        .iter()
        .map(|v| *v && granted_iter.next().unwrap_or(false))
        .collect();
    Plan {
        before,
        first_of_job,
        granted,
        service_updates,
        branch_updates,
    }
}

/// Outcomes and what to record once the granted slips are inserted.
#[derive(Debug)]
pub(crate) struct Settled<'a> {
    pub outcomes: Vec<Result<ChargeOutcome>>,
    /// `Idempotency-Key` rows to mark charged (branch, key, first verification), in batch order.
    pub keys: Vec<(&'a str, &'a str, bool)>,
    /// Jobs to mark charged (id, first verification), in batch order.
    pub jobs: Vec<(&'a str, bool)>,
}

impl Plan {
    /// The slips to insert: those of the granted charges, in batch order.
    pub(crate) fn to_insert<'a>(
        &self,
        recs: &[&'a VerificationRecord],
    ) -> Vec<&'a VerificationRecord> {
        recs.iter()
            .zip(&self.granted)
            .filter(|(_, g)| **g)
            .map(|(r, _)| *r)
            .collect()
    }

    /// `inserted` are the (service, bank, trans_ref) rows the insert returned: a slip inserted
    /// here is its service's first verification; the first charge for it in this batch is the
    /// one that gets it.
    pub(crate) fn settle<'a>(
        &self,
        recs: &[&'a VerificationRecord],
        mut inserted: Vec<(String, String, String)>,
    ) -> Settled<'a> {
        let mut outcomes: Vec<Result<ChargeOutcome>> = recs
            .iter()
            .zip(&self.granted)
            .zip(&self.before)
            .map(|((rec, g), before)| {
                if let Some(first) = before {
                    return Ok(ChargeOutcome {
                        first_verification: *first,
                        attempt_logged: false,
                    });
                }
                if !*g {
                    return Err(StoreError::QuotaExceeded);
                }
                let key = (rec.service_id.as_str(), &rec.sending_bank, &rec.trans_ref);
                let first = match inserted
                    .iter()
                    .position(|(s, b, t)| (s.as_str(), b, t) == key)
                {
                    Some(i) => {
                        inserted.swap_remove(i);
                        true
                    }
                    None => false,
                };
                Ok(ChargeOutcome {
                    first_verification: first,
                    attempt_logged: false,
                })
            })
            .collect();
        for (i, first) in self.first_of_job.iter().enumerate() {
            if let (Some(f), None) = (first, self.before[i]) {
                outcomes[i] = match &outcomes[*f] {
                    Ok(o) => Ok(*o),
                    Err(_) => Err(StoreError::QuotaExceeded),
                };
            }
        }
        let charged = || {
            recs.iter()
                .zip(&self.granted)
                .zip(&outcomes)
                .filter_map(|((rec, g), outcome)| match (*g, outcome) {
                    (true, Ok(o)) => Some((*rec, o.first_verification)),
                    _ => None,
                })
        };
        let keys = charged()
            .filter_map(|(rec, first)| {
                Some((
                    rec.branch_id.as_str(),
                    rec.idempotency_key.as_deref()?,
                    first,
                ))
            })
            .collect();
        let jobs = charged()
            .filter_map(|(rec, first)| {
                Some((rec.job_id.as_ref().map(domain::JobId::as_str)?, first))
            })
            .collect();
        Settled {
            outcomes,
            keys,
            jobs,
        }
    }
}

/// Two charges that may happen only once between them: the same job, or the same branch's
/// `Idempotency-Key`.
fn charged_once_together(a: &VerificationRecord, b: &VerificationRecord) -> bool {
    let same_job = a.job_id.is_some() && a.job_id == b.job_id;
    let same_key = a.idempotency_key.is_some()
        && a.idempotency_key == b.idempotency_key
        && a.branch_id == b.branch_id;
    same_job || same_key
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::money::Satang;

    fn rec(service: &str, branch: &str, trans_ref: &str) -> VerificationRecord {
        VerificationRecord {
            service_id: service.into(),
            branch_id: branch.into(),
            sending_bank: "004".into(),
            trans_ref: trans_ref.into(),
            amount: Satang(100),
            transferred_at: OffsetDateTime::UNIX_EPOCH,
            verified_at: OffsetDateTime::UNIX_EPOCH,
            job_id: None,
            idempotency_key: None,
            transfer: None,
            source: None,
        }
    }

    /// [`rec`] of service `s`, branch `b`, made by job `job`.
    fn job_rec(trans_ref: &str, job: &str) -> VerificationRecord {
        VerificationRecord {
            job_id: Some(job.into()),
            ..rec("s", "b", trans_ref)
        }
    }

    /// [`rec`] of service `s`, branch `b`, under the `Idempotency-Key` `key`.
    fn keyed_rec(trans_ref: &str, key: &str) -> VerificationRecord {
        VerificationRecord {
            idempotency_key: Some(key.into()),
            ..rec("s", "b", trans_ref)
        }
    }

    fn quota(limit: Option<i64>, used: i64) -> Quota {
        Quota {
            limit,
            used,
            total_used: used,
        }
    }

    /// Service `s` (limit `s_limit`, used `s_used`) with branch `b`, cycle start 0.
    fn snap(s_limit: Option<i64>, s_used: i64) -> Snapshot {
        Snapshot {
            services: vec![ServiceRow {
                id: "s".into(),
                quota: quota(s_limit, s_used),
                cycle: 0,
            }],
            branches: vec![BranchRow {
                id: "b".into(),
                service_id: "s".into(),
                quota: quota(None, s_used),
            }],
            ..Snapshot::default()
        }
    }

    fn firsts(s: &Settled) -> Vec<std::result::Result<bool, ()>> {
        s.outcomes
            .iter()
            .map(|o| match o {
                Ok(o) => Ok(o.first_verification),
                Err(StoreError::QuotaExceeded) => Err(()),
                Err(e) => panic!("unexpected {e:?}"),
            })
            .collect()
    }

    fn inserted(rows: &[&str]) -> Vec<(String, String, String)> {
        rows.iter()
            .map(|t| ("s".into(), "004".into(), t.to_string()))
            .collect()
    }

    #[test]
    fn grants_up_to_the_limit_and_writes_the_counters_once() {
        let (a, b, c) = (rec("s", "b", "1"), rec("s", "b", "2"), rec("s", "b", "3"));
        let recs = [&a, &b, &c];
        let plan = decide(&recs, &snap(Some(5), 3));
        assert_eq!(plan.granted, [true, true, false]);
        let update = |id: &str| CounterUpdate {
            id: id.into(),
            used: 5,
            added: 2,
            cycle: 0,
        };
        assert_eq!(plan.service_updates, [update("s")]);
        assert_eq!(plan.branch_updates, [update("b")]);
        assert_eq!(plan.to_insert(&recs).len(), 2);
        // "2" was already stored: charged, but not the first verification.
        let settled = plan.settle(&recs, inserted(&["1"]));
        assert_eq!(firsts(&settled), [Ok(true), Ok(false), Err(())]);
        assert!(settled.keys.is_empty() && settled.jobs.is_empty());
    }

    #[test]
    fn nothing_granted_writes_nothing() {
        let a = rec("s", "b", "1");
        let plan = decide(&[&a], &snap(Some(1), 1));
        assert_eq!(plan.granted, [false]);
        assert!(plan.service_updates.is_empty() && plan.branch_updates.is_empty());
        assert!(plan.to_insert(&[&a]).is_empty());
    }

    #[test]
    fn missing_or_foreign_rows_are_refused_like_an_exhausted_quota() {
        let (a, b) = (rec("other", "b", "1"), rec("s", "nope", "2"));
        let mut s = snap(None, 0);
        s.branches.push(BranchRow {
            id: "x".into(),
            service_id: "other".into(),
            quota: quota(None, 0),
        });
        let c = rec("s", "x", "3"); // branch of another service
        let recs = [&a, &b, &c];
        let plan = decide(&recs, &s);
        assert_eq!(plan.granted, [false, false, false]);
        assert_eq!(
            firsts(&plan.settle(&recs, vec![])),
            [Err(()), Err(()), Err(())]
        );
    }

    #[test]
    fn the_same_slip_twice_in_a_batch_is_first_once() {
        let (a, b) = (rec("s", "b", "1"), rec("s", "b", "1"));
        let recs = [&a, &b];
        let plan = decide(&recs, &snap(None, 0));
        assert_eq!(plan.granted, [true, true]);
        assert_eq!(
            firsts(&plan.settle(&recs, inserted(&["1"]))),
            [Ok(true), Ok(false)]
        );
    }

    #[test]
    fn a_job_or_key_charged_before_gets_its_recorded_outcome_and_no_charge() {
        let (a, b) = (job_rec("1", "j"), keyed_rec("2", "k"));
        let mut s = snap(Some(0), 0); // no room left: a new charge would be refused
        s.jobs_before.push(("j".into(), true));
        s.keys_before.push(("b".into(), "k".into(), false));
        let recs = [&a, &b];
        let plan = decide(&recs, &s);
        assert_eq!(plan.granted, [false, false]);
        assert!(plan.service_updates.is_empty());
        let settled = plan.settle(&recs, vec![]);
        assert_eq!(firsts(&settled), [Ok(true), Ok(false)]);
        assert!(settled.keys.is_empty() && settled.jobs.is_empty());
    }

    #[test]
    fn a_key_charged_before_on_another_branch_does_not_count() {
        let a = keyed_rec("1", "k");
        let mut s = snap(None, 0);
        s.keys_before.push(("other".into(), "k".into(), true));
        let recs = [&a];
        let plan = decide(&recs, &s);
        assert_eq!(plan.granted, [true]);
        let settled = plan.settle(&recs, vec![]);
        assert_eq!(firsts(&settled), [Ok(false)]);
        assert_eq!(settled.keys, [("b", "k", false)]);
    }

    #[test]
    fn the_same_job_or_key_twice_in_a_batch_is_charged_once() {
        let (a, c) = (job_rec("1", "j"), keyed_rec("2", "k"));
        let (b, d) = (a.clone(), c.clone());
        let recs = [&a, &b, &c, &d];
        let plan = decide(&recs, &snap(None, 0));
        assert_eq!(plan.granted, [true, false, true, false]);
        assert_eq!(plan.service_updates[0].added, 2);
        let settled = plan.settle(&recs, inserted(&["1", "2"]));
        assert_eq!(firsts(&settled), [Ok(true), Ok(true), Ok(true), Ok(true)]);
        assert_eq!(settled.jobs, [("j", true)]);
        assert_eq!(settled.keys, [("b", "k", true)]);
    }

    #[test]
    fn a_repeat_of_a_refused_job_is_refused_too() {
        let a = job_rec("1", "j");
        let b = a.clone();
        let recs = [&a, &b];
        let plan = decide(&recs, &snap(Some(0), 0));
        let settled = plan.settle(&recs, vec![]);
        assert_eq!(firsts(&settled), [Err(()), Err(())]);
        assert!(settled.jobs.is_empty());
    }

    #[test]
    fn usage_of_an_earlier_cycle_counts_as_zero() {
        let day = 86_400_000;
        let now = from_millis(40 * day);
        // Anchored at day 0: the current cycle began a month in, after the stored one.
        let s = service_row("s".into(), quota(Some(10), 10), 0, 0, now);
        assert_eq!(s.quota.used, 0);
        assert!(s.cycle > 0);
        let b = branch_row(
            "b".into(),
            "s".into(),
            quota(None, 7),
            0,
            std::slice::from_ref(&s),
            now,
        );
        assert_eq!(b.quota.used, 0);
        // Stored in the current cycle: kept.
        let kept = service_row("s".into(), quota(Some(10), 4), 0, s.cycle, now);
        assert_eq!(kept.quota.used, 4);
        // A branch whose service is not in the batch is measured against `now`.
        let orphan = branch_row("b".into(), "gone".into(), quota(None, 7), 0, &[], now);
        assert_eq!(orphan.quota.used, 0);
    }

    #[test]
    fn batch_now_is_the_latest_verification() {
        let mut a = rec("s", "b", "1");
        a.verified_at = from_millis(5);
        let mut b = rec("s", "b", "2");
        b.verified_at = from_millis(9);
        assert_eq!(batch_now(&[&a, &b]), from_millis(9));
        assert_eq!(batch_now(&[]), OffsetDateTime::UNIX_EPOCH);
    }
}
