//! The job worker (one per `serve`): claim due jobs of any kind with a lease, run each in its
//! own task with its kind (`JobKind::run`), post the callback a finished step produced, and
//! write the job back guarded by the lease's token. Expired jobs are deleted by the periodic
//! job `expire-jobs` (`periodic.rs`), not here.

use super::{JobContext, Kinds, Owners};
use crate::Services;
use domain::job::{Job, Stage};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

/// Runs one claimed job's due step with its kind and writes it back (if the lease still
/// holds). A step that ends the job with a callback is delivered at once, under the same
/// lease. A kind this node does not know (a newer node queued it) is left alone: its lease
/// runs out and a node that knows it takes it.
async fn run_job(svc: &Services, kinds: &Kinds, mut job: Job, token: &str, owners: &Owners) {
    let ran = job.stage == Stage::Run;
    if ran {
        let Some(kind) = kinds.get(&job.kind) else {
            tracing::warn!(job = %job.id, kind = %job.kind, "job of a kind this node does not run; left to its lease");
            return;
        };
        let cx = JobContext { svc, owners };
        job = kind.run(&cx, job).await;
    }
    // A claimed job's step is due (the claim moved `due_at` out by the lease); a job that
    // just finished its step is delivered at once, its result saved first (lease kept) so
    // that a receiver polling the job on the callback reads the result it was sent.
    if job.stage == Stage::Deliver {
        if ran {
            let until = svc.clock.now() + svc.schedules.lease;
            match svc.store.hold_job(&job, token, until).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(job = %job.id, "job lease lost; another worker has it");
                    return;
                }
                // Not on record: the lease runs out and the step runs again, charged once.
                Err(e) => {
                    tracing::error!(job = %job.id, error = %e, "cannot save job");
                    return;
                }
            }
        }
        let d = svc.jobs().deliver(&job).await;
        job.after_delivery(d, svc.clock.now(), &svc.schedules);
    }
    match svc.store.save_job(&job, token).await {
        Ok(true) => {}
        Ok(false) => tracing::warn!(job = %job.id, "job lease lost; another worker has it"),
        // The lease runs out and the job runs again: at least once, charged once.
        Err(e) => tracing::error!(job = %job.id, error = %e, "cannot save job"),
    }
}

/// How this node's worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs handled at once; 0 turns the worker off (a node that only serves HTTP).
    pub concurrency: usize,
    /// How often an idle worker looks for due jobs (also woken at once by a submission).
    pub poll: Duration,
    /// How long shutdown waits for jobs in hand before handing them back.
    pub drain: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            concurrency: 64,
            poll: Duration::from_millis(500),
            drain: Duration::from_secs(10),
        }
    }
}

/// Runs the job worker until `shutdown` turns true; then stops claiming, lets jobs in hand
/// finish for up to `drain`, and hands back the rest (due at once, for any node).
pub async fn run_worker(svc: Services, cfg: WorkerConfig, mut shutdown: watch::Receiver<bool>) {
    if cfg.concurrency == 0 {
        tracing::info!("job worker off on this node (jobs.concurrency = 0)");
        return;
    }
    let slots = Arc::new(Semaphore::new(cfg.concurrency));
    let mut tasks = JoinSet::new();
    let mut tokens: Vec<String> = Vec::new();
    loop {
        if *shutdown.borrow() {
            break;
        }
        // Reap finished tasks so the set does not grow.
        while tasks.try_join_next().is_some() {}
        let first = tokio::select! {
            p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            _ = shutdown.changed() => continue,
        };
        let want = slots.available_permits() + 1;
        let now = svc.clock.now();
        let token = uuid::Uuid::new_v4().to_string();
        let claimed = match svc
            .store
            .claim_jobs(
                now,
                now + svc.schedules.lease,
                &token,
                u32::try_from(want).unwrap_or(u32::MAX),
            )
            .await
        {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::error!(error = %e, "cannot claim jobs");
                Vec::new()
            }
        };
        if claimed.is_empty() {
            drop(first);
            tokio::select! {
                _ = svc.jobs_wake.notified() => {}
                _ = tokio::time::sleep(cfg.poll) => {}
                _ = shutdown.changed() => {}
            }
            continue;
        }
        tokens.push(token.clone());
        if tokens.len() > 4096 {
            tokens.drain(..2048);
        }
        let owners = Arc::new(svc.jobs().load_owners(&claimed).await);
        let kinds = svc.kinds.clone();
        let mut permit = Some(first);
        for job in claimed {
            let p = match permit.take() {
                Some(p) => p,
                // Counted as available above; only this loop takes them.
                None => match slots.clone().acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            let svc = svc.clone();
            let token = token.clone();
            let owners = owners.clone();
            let kinds = kinds.clone();
            tasks.spawn(async move {
                run_job(&svc, &kinds, job, &token, &owners).await;
                drop(p);
            });
        }
    }
    // Graceful shutdown: finish what is in hand, within the drain time.
    let drained = tokio::time::timeout(cfg.drain, async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tasks.abort_all();
        let now = svc.clock.now();
        for t in &tokens {
            if let Err(e) = svc.store.release_jobs(t, now).await {
                tracing::warn!(error = %e, "cannot hand back jobs");
            }
        }
    }
}
