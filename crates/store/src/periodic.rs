//! Periodic jobs' lease rows (migration 0015, `periodic_jobs`): which node runs which period of
//! a periodic job is decided here, by one guarded `UPDATE` per claim. The row of a job is
//! created on its first claim (`INSERT … ON CONFLICT DO NOTHING`).

use crate::sql::{execute, on_pool};
use crate::Result;
use crate::SqlStore;
use domain::clock::{from_millis, to_millis};
use sqlx::Row;
use time::OffsetDateTime;

/// What a claim came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeriodicClaim {
    /// This holder runs the period now, under a lease until the time given to the claim.
    Claimed,
    /// The period (or a later one) has run already; the next period is the next chance.
    Done,
    /// Another node holds a live lease, or a failed run asked not to be retried before this
    /// time: look again then.
    Busy { until: OffsetDateTime },
}

/// A periodic job's row, for operators and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeriodicState {
    pub name: String,
    /// Start of the last period whose run finished (ms since the epoch; -1 never).
    pub done_period: i64,
    pub holder: Option<String>,
    pub lease_until: OffsetDateTime,
    pub started_at: Option<OffsetDateTime>,
    pub finished_at: Option<OffsetDateTime>,
    /// Finished runs, ever.
    pub runs: i64,
    pub last_outcome: Option<String>,
}

impl SqlStore {
    /// Periodic jobs: claims period `period_start` (ms since the epoch) of job `name` for
    /// `holder` until `lease_until`, if that period has not run and nobody holds a live lease
    /// (the database decides between nodes).
    pub async fn claim_periodic(
        &self,
        name: &str,
        period_start: i64,
        holder: &str,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
    ) -> Result<PeriodicClaim> {
        let pool = &self.pool;
        on_pool!(pool: pool, p => {
            sqlx::query("INSERT INTO periodic_jobs (name) VALUES ($1) ON CONFLICT (name) DO NOTHING")
                .bind(name)
                .execute(p)
                .await?;
            // PostgreSQL: of two nodes updating at once, the second re-reads the row the first
            // committed and finds the lease taken. SQLite: one writer at a time.
            let taken = sqlx::query(
                "UPDATE periodic_jobs SET holder = $2, lease_until = $3, period_start = $4, \
                 started_at = $5 WHERE name = $1 AND done_period < $4 AND lease_until <= $5",
            )
            .bind(name)
            .bind(holder)
            .bind(to_millis(lease_until))
            .bind(period_start)
            .bind(to_millis(now))
            .execute(p)
            .await?
            .rows_affected();
            if taken == 1 {
                return Ok(PeriodicClaim::Claimed);
            }
            let row = sqlx::query("SELECT done_period, lease_until FROM periodic_jobs WHERE name = $1")
                .bind(name)
                .fetch_one(p)
                .await?;
            let done: i64 = row.try_get(0)?;
            let until: i64 = row.try_get(1)?;
            Ok(if done >= period_start {
                PeriodicClaim::Done
            } else {
                PeriodicClaim::Busy { until: from_millis(until) }
            })
        })
    }

    /// Moves the holder's lease out (a long run); false if it no longer holds it.
    pub async fn renew_periodic(
        &self,
        name: &str,
        holder: &str,
        lease_until: OffsetDateTime,
    ) -> Result<bool> {
        Ok(execute!(
            &self.pool,
            "UPDATE periodic_jobs SET lease_until = $3 WHERE name = $1 AND holder = $2",
            [name, holder, to_millis(lease_until)]
        )? == 1)
    }

    /// Ends the holder's run: `done` marks its period as run; otherwise (a failed run) the period
    /// stays due, not before `not_before`. False if the holder had lost its lease (another node
    /// took the run over): then nothing is written.
    pub async fn finish_periodic(
        &self,
        name: &str,
        holder: &str,
        done: bool,
        now: OffsetDateTime,
        not_before: OffsetDateTime,
        outcome: &str,
    ) -> Result<bool> {
        Ok(execute!(
            &self.pool,
            "UPDATE periodic_jobs SET \
                 done_period = CASE WHEN $3 THEN period_start ELSE done_period END, \
                 runs = CASE WHEN $3 THEN runs + 1 ELSE runs END, \
                 holder = NULL, lease_until = $5, finished_at = $4, last_outcome = $6 \
                 WHERE name = $1 AND holder = $2",
            [
                name,
                holder,
                done,
                to_millis(now),
                to_millis(not_before),
                outcome
            ]
        )? == 1)
    }

    /// Every periodic job's row.
    pub async fn periodic_jobs(&self) -> Result<Vec<PeriodicState>> {
        let pool = &self.pool;
        on_pool!(pool: pool, p => {
            let rows = sqlx::query(
                "SELECT name, done_period, holder, lease_until, started_at, finished_at, runs, \
                 last_outcome FROM periodic_jobs ORDER BY name",
            )
            .fetch_all(p)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok(PeriodicState {
                        name: r.try_get(0)?,
                        done_period: r.try_get(1)?,
                        holder: r.try_get(2)?,
                        lease_until: from_millis(r.try_get(3)?),
                        started_at: r.try_get::<Option<i64>, _>(4)?.map(from_millis),
                        finished_at: r.try_get::<Option<i64>, _>(5)?.map(from_millis),
                        runs: r.try_get(6)?,
                        last_outcome: r.try_get(7)?,
                    })
                })
                .collect()
        })
    }
}
