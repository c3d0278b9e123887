//! What image work may hold at once: the decode memory budget shared by every decode
//! (`limits.decode_memory_mb`), and the upload slots (`server.max_uploads`) shared fairly
//! between branches (`limits.max_uploads_per_branch`).

use domain::Error;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Memory all decodes may hold at once, counted in KiB from each image's header.
#[derive(Debug)]
pub struct DecodeBudget {
    kib: Arc<Semaphore>,
    total_kib: u32,
    wait: Duration,
}

/// Room held in the budget until dropped (after the decode and the QR scan).
#[derive(Debug)]
pub struct Admission(#[allow(dead_code)] OwnedSemaphorePermit);

impl DecodeBudget {
    pub fn new(megabytes: u64, wait: Duration) -> Self {
        let total_kib = u32::try_from(megabytes.saturating_mul(1024)).unwrap_or(u32::MAX >> 4);
        Self {
            kib: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            wait,
        }
    }

    /// Room for a decode estimated at `bytes`, waiting (first come, first served) at most the
    /// configured time; then `RATE_LIMIT_EXCEEDED`. An image estimated above the whole
    /// budget waits for all of it and is decoded alone (docs/decisions.md).
    pub async fn admit(&self, bytes: u64) -> Result<Admission, Error> {
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .clamp(1, self.total_kib);
        match tokio::time::timeout(self.wait, self.kib.clone().acquire_many_owned(kib)).await {
            Ok(Ok(permit)) => Ok(Admission(permit)),
            _ => {
                let retry = self.wait.as_secs().clamp(1, 60);
                Err(Error::RateLimited {
                    // Not the plan's request rate: the decode budget, which has no per-second
                    // allowance to report (docs/decisions.md).
                    limit: 0,
                    retry_after_secs: retry,
                    reset_at: time::OffsetDateTime::now_utc().unix_timestamp() + retry as i64,
                })
            }
        }
    }

    /// KiB free right now (tests and diagnostics).
    pub fn available_kib(&self) -> usize {
        self.kib.available_permits()
    }
}

impl Default for DecodeBudget {
    fn default() -> Self {
        Self::new(256, Duration::from_secs(10))
    }
}

/// Upload slots: a global count, of which one branch may hold at most `per_branch`. A branch
/// at its share waits on its own queue, so its slow uploads never hold every slot.
#[derive(Debug)]
pub struct UploadSlots {
    global: Arc<Semaphore>,
    per_branch: usize,
    branches: Mutex<HashMap<domain::BranchId, Arc<Semaphore>>>,
}

/// An upload slot (and the branch's share of it), held until the image is read.
#[derive(Debug)]
pub struct UploadSlot {
    _global: OwnedSemaphorePermit,
    _branch: OwnedSemaphorePermit,
}

impl UploadSlots {
    pub fn new(total: usize, per_branch: usize) -> Self {
        Self {
            global: Arc::new(Semaphore::new(total.max(1))),
            per_branch: per_branch.clamp(1, total.max(1)),
            branches: Mutex::default(),
        }
    }

    pub async fn acquire(&self, branch_id: &domain::BranchId) -> Option<UploadSlot> {
        let branch = {
            let mut map = self.branches.lock().unwrap_or_else(|e| e.into_inner());
            // Forget branches nobody holds or waits for (the map holds the only reference).
            if map.len() > 1024 {
                map.retain(|_, s| Arc::strong_count(s) > 1);
            }
            map.entry(branch_id.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_branch)))
                .clone()
        };
        // The branch's share first: a branch at its share never queues for the global slots.
        let b = branch.acquire_owned().await.ok()?;
        let g = self.global.clone().acquire_owned().await.ok()?;
        Some(UploadSlot {
            _global: g,
            _branch: b,
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
    async fn a_branch_holds_at_most_its_share() {
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
        let budget = DecodeBudget::new(16, Duration::from_millis(50));
        // Larger than the budget: admitted alone.
        let big = budget.admit(1 << 40).await.unwrap();
        assert_eq!(budget.available_kib(), 0);
        let e = budget.admit(1024).await.unwrap_err();
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
        let _small = budget.admit(1024).await.unwrap();
        assert_eq!(budget.available_kib(), 16 * 1024 - 1);
    }
}
