//! Periodic jobs: work done once per period by one node at a time, whatever the number of
//! nodes, decided by the database (`store` `periodic_jobs`: one lease row per job). Every node
//! runs `run_periodic`; for each job, each period, one node's guarded `UPDATE` takes the lease
//! and runs it, the others see it taken (or done) and wait for the next period. A run renews
//! its lease while it works; a node that dies mid-run stops renewing, and when the lease runs
//! out another node takes the run over. A failed run is tried again after `retry_after`.
//!
//! Periodic work must be safe to run again (a run cut short by a crash is repeated): deletes
//! of what is past its time, recomputed sums, ...
//!
//! To add one: a type implementing `PeriodicJob` (name, period, `run`), and one line in
//! `builtin` (its period from the configuration, if it has one).

use crate::Services;
use domain::clock::{from_millis, to_millis};
use domain::Error;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use store::PeriodicClaim;
use time::OffsetDateTime;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// Work that runs once per period (periods are aligned on the epoch: a 60 s job's periods
/// start at whole minutes, on every node alike).
#[async_trait::async_trait]
pub trait PeriodicJob: Send + Sync + 'static {
    /// Its row in `periodic_jobs`. Never renamed (a new name runs at once, as a new job).
    fn name(&self) -> &'static str;
    /// How often it runs.
    fn every(&self) -> Duration;
    /// Does one period's work; the text (e.g. `deleted 12`) is kept on the row as the last
    /// outcome. An error leaves the period due (tried again after `retry_after`).
    async fn run(&self, svc: &Services) -> Result<String, Error>;
}

/// Declares a periodic job that deletes what is past its time: its type (with its period,
/// `every`), its name, and the delete (`|svc, now| …`, the number of rows deleted).
macro_rules! sweep {
    ($(#[$doc:meta])* $ty:ident, $name:literal, |$svc:ident, $now:ident| $delete:expr) => {
        $(#[$doc])*
        pub struct $ty {
            pub every: Duration,
        }

        #[async_trait::async_trait]
        impl PeriodicJob for $ty {
            fn name(&self) -> &'static str {
                $name
            }

            fn every(&self) -> Duration {
                self.every
            }

            async fn run(&self, $svc: &Services) -> Result<String, Error> {
                let $now = $svc.now();
                let n = $delete.await?;
                Ok(format!("deleted {n}"))
            }
        }
    };
}

sweep!(
    /// Deletes jobs (of every kind) whose retention ended and whose work is finished; polling
    /// already answers `JOB_NOT_FOUND` for them.
    ExpireJobs,
    "expire-jobs",
    |svc, now| svc.store.sweep_jobs(now)
);

sweep!(
    /// Forgets `Idempotency-Key`s past their 24 h (a request with an old key forgets that key
    /// itself; this keeps the table small).
    SweepIdempotencyKeys,
    "idempotency-keys",
    |svc, now| svc.store.sweep_idempotency_keys(now - crate::idempotency::KEEP)
);

sweep!(
    /// Forgets the LINE bot's reply marks past their 24 h (`jobs/line.rs`: a mark says an
    /// event's reply token was handed to LINE; a reply token is long dead by then).
    SweepLineReplies,
    "line-replies",
    |svc, now| svc.store.sweep_line_events(now - crate::jobs::line::REPLY_MARK_KEPT)
);

/// The periods of the built-in periodic jobs (`[jobs]` of the configuration).
#[derive(Debug, Clone)]
pub struct Periods {
    pub expire_jobs: Duration,
    pub idempotency_keys: Duration,
    pub line_replies: Duration,
    /// `[retention]`: how often, and how long attempts and personal data are kept.
    pub retention: Duration,
    pub attempts_days: u32,
    pub personal_data_days: u32,
}

impl Default for Periods {
    fn default() -> Self {
        Self {
            expire_jobs: Duration::from_secs(60),
            idempotency_keys: Duration::from_secs(600),
            line_replies: Duration::from_secs(600),
            retention: Duration::from_secs(3600),
            attempts_days: 180,
            personal_data_days: 180,
        }
    }
}

/// Every periodic job of this build: the registration point. A new one goes here.
pub fn builtin(p: &Periods) -> Vec<Arc<dyn PeriodicJob>> {
    vec![
        Arc::new(ExpireJobs {
            every: p.expire_jobs,
        }),
        Arc::new(SweepIdempotencyKeys {
            every: p.idempotency_keys,
        }),
        Arc::new(SweepLineReplies {
            every: p.line_replies,
        }),
        Arc::new(RetentionPurge {
            every: p.retention,
            attempts_days: p.attempts_days,
            personal_data_days: p.personal_data_days,
        }),
    ]
}

/// Retention (`[retention]`, PDPA): deletes old attempts-log records and blanks the personal
/// fields of old stored transfers; safe to repeat.
pub struct RetentionPurge {
    pub every: Duration,
    pub attempts_days: u32,
    pub personal_data_days: u32,
}

#[async_trait::async_trait]
impl PeriodicJob for RetentionPurge {
    fn name(&self) -> &'static str {
        "retention-purge"
    }

    fn every(&self) -> Duration {
        self.every
    }

    async fn run(&self, svc: &Services) -> Result<String, Error> {
        let (purged, blanked) = svc
            .attempts()
            .purge_retention(self.attempts_days, self.personal_data_days)
            .await?;
        Ok(format!(
            "purged {purged} attempts, blanked {blanked} transfers"
        ))
    }
}

/// How this node takes part in periodic work.
#[derive(Clone)]
pub struct PeriodicConfig {
    /// Off: this node never runs periodic jobs (others do).
    pub enabled: bool,
    pub jobs: Vec<Arc<dyn PeriodicJob>>,
    /// How long a run is held without a renewal before another node may take it over. A
    /// running job renews it every third of this.
    pub lease: Duration,
    /// How often the node looks for a period to run (real time).
    pub tick: Duration,
    /// A failed run is tried again this much later.
    pub retry_after: Duration,
    /// How long shutdown waits for runs in hand before giving them back.
    pub drain: Duration,
}

impl Default for PeriodicConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            jobs: builtin(&Periods::default()),
            lease: Duration::from_secs(300),
            tick: Duration::from_secs(1),
            retry_after: Duration::from_secs(60),
            drain: Duration::from_secs(10),
        }
    }
}

impl std::fmt::Debug for PeriodicConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.jobs.iter().map(|j| j.name()).collect();
        f.debug_struct("PeriodicConfig")
            .field("enabled", &self.enabled)
            .field("jobs", &names)
            .field("lease", &self.lease)
            .field("tick", &self.tick)
            .finish()
    }
}

/// The start (ms since the epoch) of the period of length `every` that holds `now`.
pub fn period_start(now: OffsetDateTime, every: Duration) -> i64 {
    let len = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    let ms = to_millis(now);
    ms - ms.rem_euclid(len)
}

fn lease_until(now: OffsetDateTime, lease: Duration) -> OffsetDateTime {
    now + time::Duration::try_from(lease).unwrap_or(time::Duration::MINUTE)
}

/// Runs this node's share of periodic work until `shutdown` turns true: runs in hand get
/// `drain` to finish, then are given back (due at once, for any node).
pub async fn run_periodic(svc: Services, cfg: PeriodicConfig, mut shutdown: watch::Receiver<bool>) {
    if !cfg.enabled || cfg.jobs.is_empty() {
        tracing::info!("periodic jobs off on this node");
        return;
    }
    // Who holds a lease: this process.
    let holder = format!(
        "pid{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    // Per job: when to look again (on the services' clock), and whether it runs here now.
    let mut next: HashMap<&'static str, OffsetDateTime> = HashMap::new();
    let mut running: JoinSet<()> = JoinSet::new();
    // The runs in hand, by task (a run that panicked is known by its task id too).
    let mut busy: HashMap<tokio::task::Id, &'static str> = HashMap::new();
    loop {
        if *shutdown.borrow() {
            break;
        }
        while let Some(done) = running.try_join_next_with_id() {
            let id = match done {
                Ok((id, ())) => id,
                Err(e) => {
                    tracing::error!(error = %e, "periodic job's run ended abnormally");
                    e.id()
                }
            };
            busy.remove(&id);
        }
        let now = svc.now();
        for job in &cfg.jobs {
            let name = job.name();
            let in_hand = busy.values().any(|n| *n == name);
            if in_hand || next.get(name).is_some_and(|t| now < *t) {
                continue;
            }
            let start = period_start(now, job.every());
            let period_end = from_millis(start) + job.every();
            let claimed = svc
                .store
                .claim_periodic(name, start, &holder, now, lease_until(now, cfg.lease))
                .await;
            match claimed {
                Ok(PeriodicClaim::Claimed) => {
                    next.insert(name, period_end);
                    let (svc, job, holder, cfg) =
                        (svc.clone(), job.clone(), holder.clone(), cfg.clone());
                    let task = running.spawn(async move {
                        run_one(&svc, &*job, &holder, &cfg).await;
                    });
                    busy.insert(task.id(), name);
                }
                Ok(PeriodicClaim::Done) => {
                    next.insert(name, period_end);
                }
                // Held by another node (or a failed run's pause): look again when its lease
                // ends, or at the next period if that comes first.
                Ok(PeriodicClaim::Busy { until }) => {
                    next.insert(name, until.min(period_end));
                }
                Err(e) => tracing::warn!(job = name, error = %e, "cannot claim periodic job"),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(cfg.tick) => {}
            _ = shutdown.changed() => {}
        }
    }
    let drained = tokio::time::timeout(cfg.drain, async {
        while let Some(done) = running.join_next_with_id().await {
            let id = done.map_or_else(|e| e.id(), |(id, ())| id);
            busy.remove(&id);
        }
    })
    .await;
    if drained.is_err() {
        running.abort_all();
        let now = svc.now();
        for name in busy.into_values() {
            let given_back = svc
                .store
                .finish_periodic(name, &holder, false, now, now, "stopped (node shut down)")
                .await;
            if let Err(e) = given_back {
                tracing::warn!(job = name, error = %e, "cannot give back periodic job");
            }
        }
    }
}

/// One claimed run: the work, with the lease renewed beside it, then the outcome written
/// (unless another node took the run over meanwhile).
async fn run_one(svc: &Services, job: &dyn PeriodicJob, holder: &str, cfg: &PeriodicConfig) {
    let name = job.name();
    let renew_every = (cfg.lease / 3).max(Duration::from_millis(10));
    let work = job.run(svc);
    tokio::pin!(work);
    let outcome = loop {
        tokio::select! {
            out = &mut work => break out,
            _ = tokio::time::sleep(renew_every) => {
                let until = lease_until(svc.now(), cfg.lease);
                match svc.store.renew_periodic(name, holder, until).await {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(job = name, "periodic job's lease lost; another node runs it"),
                    Err(e) => tracing::warn!(job = name, error = %e, "cannot renew periodic job's lease"),
                }
            }
        }
    };
    let now = svc.now();
    let (done, not_before, text) = match outcome {
        Ok(text) => {
            tracing::debug!(job = name, outcome = %text, "periodic job ran");
            (true, now, text)
        }
        Err(e) => {
            tracing::warn!(job = name, error = %e, "periodic job failed");
            (
                false,
                lease_until(now, cfg.retry_after),
                format!("failed: {}", e.code()),
            )
        }
    };
    match svc
        .store
        .finish_periodic(name, holder, done, now, not_before, &text)
        .await
    {
        Ok(true) => {}
        Ok(false) => tracing::warn!(
            job = name,
            "periodic job finished after its lease was taken over"
        ),
        Err(e) => tracing::warn!(job = name, error = %e, "cannot record periodic job's run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_aligned_on_the_epoch() {
        let t = from_millis(1_790_000_123_456);
        assert_eq!(period_start(t, Duration::from_secs(60)), 1_790_000_100_000);
        assert_eq!(period_start(t, Duration::from_secs(1)), 1_790_000_123_000);
        let next = from_millis(1_790_000_160_000);
        assert_eq!(
            period_start(next, Duration::from_secs(60)),
            1_790_000_160_000
        );
        assert_ne!(
            period_start(t, Duration::from_secs(60)),
            period_start(next, Duration::from_secs(60))
        );
    }
}
