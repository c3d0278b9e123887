//! Per-branch request rates (GCRA, `domain::rate`). With SQLite — one process per database
//! file — the state lives in this process; with PostgreSQL it lives in the database, so every
//! node draws from the same allowance.

use crate::auth::{Auth, Caller};
use crate::metrics::count_rate_refusal;
use domain::clock::to_millis;
use domain::rate::Decision;
use domain::Error;
use std::collections::HashMap;
use std::sync::Mutex;

pub enum RateLimiter {
    Local(Mutex<HashMap<domain::BranchId, i64>>),
    Shared,
}

impl RateLimiter {
    pub fn for_backend(backend: &str) -> Self {
        if backend == "sqlite" {
            RateLimiter::Local(Mutex::new(HashMap::new()))
        } else {
            RateLimiter::Shared
        }
    }
}

impl Auth<'_> {
    /// Takes one request from the caller's branch allowance, or refuses with the numbers the
    /// 429 headers need.
    /// Refusals are counted (`slipverify_rate_limit_refusals_total`).
    pub async fn rate_check(&self, caller: &Caller) -> Result<(), Error> {
        self.take_rate_token(caller)
            .await
            .inspect_err(|e| count_rate_refusal(self.metrics, e))
    }

    async fn take_rate_token(&self, caller: &Caller) -> Result<(), Error> {
        let limit = caller.service.rate_limit();
        let now = self.clock.now();
        let now_us = to_millis(now) * 1000;
        let decision = match self.rate {
            RateLimiter::Local(map) => {
                let mut map = map.lock().unwrap_or_else(|p| p.into_inner());
                let tat = map.get(&caller.branch.id).copied();
                let d = limit.check(tat, now_us);
                if let Decision::Allowed { new_tat_us, .. } = d {
                    map.insert(caller.branch.id.clone(), new_tat_us);
                }
                d
            }
            RateLimiter::Shared => {
                self.store
                    .rate_take(&caller.branch.id, &limit, now_us)
                    .await?
            }
        };
        match decision {
            Decision::Allowed { .. } => Ok(()),
            Decision::Limited { retry_after_us } => {
                let tat = now_us + retry_after_us + limit.tolerance_us;
                Err(Error::RateLimited {
                    limit: limit.rps,
                    retry_after_secs: (retry_after_us as u64).div_ceil(1_000_000).max(1),
                    reset_at: (tat + 999_999) / 1_000_000,
                })
            }
        }
    }
}
