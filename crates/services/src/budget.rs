//! What image work may hold at once: the decode memory and slots shared by every decode
//! (`limits.decode_memory_mb`, `limits.decode_slots`), and the upload slots
//! (`server.max_uploads`), both shared fairly between services (customers), not branches: one
//! customer's many branch keys count as one (`limits.max_uploads_per_service`).

use domain::Error;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Memory and decode slots all decodes may hold at once, shared fairly between services
/// (customers): a service flooding within its plan queues behind itself, not in front of
/// the others. Memory is counted in KiB from each image's header (`reader::decode_cost`).
///
/// Hand-written because a semaphore (tokio's, or any crate's we found) is first come, first
/// served: whoever queued most is served most. Here every freed unit goes to the waiting
/// service holding the fewest decodes, then the one served longest ago (round robin), then
/// the oldest waiter.
#[derive(Debug)]
pub struct DecodeBudget {
    state: Arc<Mutex<Fair>>,
    total_kib: u64,
    wait: Duration,
}

#[derive(Debug)]
struct Fair {
    free_kib: u64,
    free_slots: usize,
    /// Decodes and KiB each service holds now.
    held: HashMap<domain::ServiceId, (usize, u64)>,
    /// Each service's waiters, oldest first.
    waiting: HashMap<domain::ServiceId, VecDeque<Waiter>>,
    /// When each service was last granted (a grant counter): ties go to the one served
    /// longest ago. Pruned to those holding or waiting when it grows large.
    last_grant: HashMap<domain::ServiceId, u64>,
    seq: u64,
    grants: u64,
}

#[derive(Debug)]
struct Waiter {
    seq: u64,
    kib: u64,
    tx: oneshot::Sender<()>,
}

/// Room held in the budget until dropped (after the decode and the QR scan).
#[derive(Debug)]
pub struct Admission {
    state: Arc<Mutex<Fair>>,
    service: domain::ServiceId,
    kib: u64,
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut st = lock(&self.state);
        st.give_back(&self.service, self.kib);
        st.dispatch();
    }
}

fn lock(m: &Mutex<Fair>) -> std::sync::MutexGuard<'_, Fair> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Fair {
    fn give_back(&mut self, service: &domain::ServiceId, kib: u64) {
        self.free_kib += kib;
        self.free_slots += 1;
        if let Some(h) = self.held.get_mut(service) {
            h.0 = h.0.saturating_sub(1);
            h.1 = h.1.saturating_sub(kib);
            if h.0 == 0 {
                self.held.remove(service);
            }
        }
    }

    fn take(&mut self, service: &domain::ServiceId, kib: u64) {
        self.free_kib -= kib;
        self.free_slots -= 1;
        let h = self.held.entry(service.clone()).or_default();
        h.0 += 1;
        h.1 += kib;
        self.grants += 1;
        if self.last_grant.len() > 4096 {
            let (held, waiting) = (&self.held, &self.waiting);
            self.last_grant
                .retain(|s, _| held.contains_key(s) || waiting.contains_key(s));
        }
        self.last_grant.insert(service.clone(), self.grants);
    }

    /// Grants waiters in fair order while the chosen one fits. The chosen one is never
    /// skipped for a smaller one behind it, so a large image is not starved.
    fn dispatch(&mut self) {
        loop {
            let next = self
                .waiting
                .iter()
                .filter_map(|(svc, q)| q.front().map(|w| (svc, w.seq)))
                .min_by_key(|(svc, seq)| {
                    let n = self.held.get(*svc).map_or(0, |h| h.0);
                    let last = self.last_grant.get(*svc).copied().unwrap_or(0);
                    (n, last, *seq)
                })
                .map(|(svc, _)| svc.clone());
            let Some(service) = next else { return };
            let queue = self.waiting.get_mut(&service).expect("chosen from the map");
            let head = queue.front().expect("non-empty");
            if head.kib > self.free_kib || self.free_slots == 0 {
                return;
            }
            let w = queue.pop_front().expect("non-empty");
            if queue.is_empty() {
                self.waiting.remove(&service);
            }
            // A waiter that timed out has dropped its receiver: nothing is taken for it.
            if w.tx.send(()).is_ok() {
                self.take(&service, w.kib);
            }
        }
    }

    fn forget(&mut self, service: &domain::ServiceId, seq: u64) -> bool {
        let Some(q) = self.waiting.get_mut(service) else {
            return false;
        };
        let before = q.len();
        q.retain(|w| w.seq != seq);
        let removed = q.len() < before;
        if q.is_empty() {
            self.waiting.remove(service);
        }
        removed
    }
}

impl DecodeBudget {
    /// `megabytes` of decode memory and `slots` decodes at once (CPU work: more than a few
    /// per core only slows each one down).
    pub fn new(megabytes: u64, slots: usize, wait: Duration) -> Self {
        let total_kib = megabytes.saturating_mul(1024).max(1);
        Self {
            state: Arc::new(Mutex::new(Fair {
                free_kib: total_kib,
                free_slots: slots.max(1),
                held: HashMap::new(),
                waiting: HashMap::new(),
                last_grant: HashMap::new(),
                seq: 0,
                grants: 0,
            })),
            total_kib,
            wait,
        }
    }

    /// Room for a decode estimated at `bytes` for `service`, waiting at most the configured
    /// time (fairly between services); then `RATE_LIMIT_EXCEEDED`. An image estimated above
    /// the whole budget waits for all of it and is decoded alone (docs/decisions.md).
    pub async fn admit(&self, service: &domain::ServiceId, bytes: u64) -> Result<Admission, Error> {
        let kib = bytes.div_ceil(1024).clamp(1, self.total_kib);
        let (rx, seq) = {
            let mut st = lock(&self.state);
            let (tx, rx) = oneshot::channel();
            st.seq += 1;
            let seq = st.seq;
            st.waiting
                .entry(service.clone())
                .or_default()
                .push_back(Waiter { seq, kib, tx });
            st.dispatch();
            (rx, seq)
        };
        let admitted = |state: &Arc<Mutex<Fair>>| Admission {
            state: state.clone(),
            service: service.clone(),
            kib,
        };
        let mut rx = rx;
        match tokio::time::timeout(self.wait, &mut rx).await {
            Ok(Ok(())) => return Ok(admitted(&self.state)),
            Ok(Err(_)) => {}
            Err(_) => {
                let mut st = lock(&self.state);
                // Granted in the instant the wait ended: keep it rather than lose it.
                if !st.forget(service, seq) && rx.try_recv().is_ok() {
                    drop(st);
                    return Ok(admitted(&self.state));
                }
            }
        }
        let retry = self.wait.as_secs().clamp(1, 60);
        Err(Error::RateLimited {
            // Not the plan's request rate: the decode budget, which has no per-second
            // allowance to report (docs/decisions.md).
            limit: 0,
            retry_after_secs: retry,
            reset_at: time::OffsetDateTime::now_utc().unix_timestamp() + retry as i64,
        })
    }

    /// KiB free right now (tests and diagnostics).
    pub fn available_kib(&self) -> usize {
        lock(&self.state).free_kib as usize
    }

    /// Decodes waiting for room right now (tests and diagnostics).
    pub fn waiting(&self) -> usize {
        lock(&self.state).waiting.values().map(VecDeque::len).sum()
    }
}

impl Default for DecodeBudget {
    fn default() -> Self {
        Self::new(256, DEFAULT_DECODE_SLOTS, Duration::from_secs(10))
    }
}

/// Decodes at once unless `limits.decode_slots` says otherwise.
pub const DEFAULT_DECODE_SLOTS: usize = 4;

/// Upload slots: a global count, of which one service (all its branches together) may hold
/// at most `per_service`. A service at its share waits on its own queue, so its slow uploads
/// never hold every slot, however many branch keys it has.
#[derive(Debug)]
pub struct UploadSlots {
    global: Arc<Semaphore>,
    per_service: usize,
    services: Mutex<HashMap<domain::ServiceId, Arc<Semaphore>>>,
}

/// An upload slot (and the service's share of it), held until the image is read.
#[derive(Debug)]
pub struct UploadSlot {
    _global: OwnedSemaphorePermit,
    _service: OwnedSemaphorePermit,
}

impl UploadSlots {
    pub fn new(total: usize, per_service: usize) -> Self {
        Self {
            global: Arc::new(Semaphore::new(total.max(1))),
            per_service: per_service.clamp(1, total.max(1)),
            services: Mutex::default(),
        }
    }

    pub async fn acquire(&self, service_id: &domain::ServiceId) -> Option<UploadSlot> {
        let share = {
            let mut map = self.services.lock().unwrap_or_else(|e| e.into_inner());
            // Forget services nobody holds or waits for (the map holds the only reference).
            if map.len() > 1024 {
                map.retain(|_, s| Arc::strong_count(s) > 1);
            }
            map.entry(service_id.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_service)))
                .clone()
        };
        // The service's share first: a service at its share never queues for the global slots.
        let own = share.acquire_owned().await.ok()?;
        let g = self.global.clone().acquire_owned().await.ok()?;
        Some(UploadSlot {
            _global: g,
            _service: own,
        })
    }

    /// Global slots free right now.
    pub fn available(&self) -> usize {
        self.global.available_permits()
    }
}

impl Default for UploadSlots {
    fn default() -> Self {
        Self::new(crate::DEFAULT_UPLOAD_SLOTS, crate::DEFAULT_UPLOAD_SLOTS / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_service_holds_at_most_its_share() {
        let slots = UploadSlots::new(4, 2);
        let a1 = slots.acquire(&"a".into()).await.unwrap();
        let _a2 = slots.acquire(&"a".into()).await.unwrap();
        // A third for `a` waits on a's share, not on the global slots…
        let third =
            tokio::time::timeout(Duration::from_millis(50), slots.acquire(&"a".into())).await;
        assert!(third.is_err());
        // …which another branch still finds free.
        let _b1 = slots.acquire(&"b".into()).await.unwrap();
        let _b2 = slots.acquire(&"b".into()).await.unwrap();
        assert_eq!(slots.available(), 0);
        drop(a1);
        assert!(slots.acquire(&"a".into()).await.is_some());
    }

    #[tokio::test]
    async fn the_budget_refuses_after_the_wait_and_caps_one_image_at_the_whole() {
        let budget = DecodeBudget::new(16, 4, Duration::from_millis(50));
        let a = domain::ServiceId::from("a");
        // Larger than the budget: admitted alone.
        let big = budget.admit(&a, 1 << 40).await.unwrap();
        assert_eq!(budget.available_kib(), 0);
        let e = budget.admit(&a, 1024).await.unwrap_err();
        assert!(
            matches!(
                e,
                Error::RateLimited {
                    retry_after_secs: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        drop(big);
        let _small = budget.admit(&a, 1024).await.unwrap();
        assert_eq!(budget.available_kib(), 16 * 1024 - 1);
    }

    #[tokio::test]
    async fn a_flooding_service_queues_behind_itself() {
        let budget = Arc::new(DecodeBudget::new(64, 2, Duration::from_secs(30)));
        let (a, b) = (domain::ServiceId::from("a"), domain::ServiceId::from("b"));
        // `a` holds both slots and queues ten more.
        let first = budget.admit(&a, 1024).await.unwrap();
        let _second = budget.admit(&a, 1024).await.unwrap();
        let mut flood = Vec::new();
        for _ in 0..10 {
            let (budget, a) = (budget.clone(), a.clone());
            flood.push(tokio::spawn(async move { budget.admit(&a, 1024).await }));
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let other = {
            let (budget, b) = (budget.clone(), b.clone());
            tokio::spawn(async move { budget.admit(&b, 1024).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The first slot freed goes to `b`, though ten of `a`'s waiters came before it.
        drop(first);
        let got = tokio::time::timeout(Duration::from_secs(5), other).await;
        assert!(matches!(got, Ok(Ok(Ok(_)))), "b was not served next");
        assert!(flood.iter().all(|h| !h.is_finished()));
        for h in flood {
            h.abort();
        }
    }

    #[tokio::test]
    async fn a_waiter_that_gave_up_takes_nothing() {
        let budget = DecodeBudget::new(1, 1, Duration::from_millis(30));
        let a = domain::ServiceId::from("a");
        let held = budget.admit(&a, 1024).await.unwrap();
        assert!(budget.admit(&a, 1024).await.is_err());
        drop(held);
        assert_eq!(budget.available_kib(), 1024);
        let _again = budget.admit(&a, 1024).await.unwrap();
    }
}
