//! Rate plans and the per-branch GCRA state they feed.

use crate::sql::{on_pool, Pool};
use crate::Result;
use crate::SqlStore;
use domain::model::Plan;
use domain::rate::{Decision, Gcra};
use domain::BranchId;

impl SqlStore {
    /// Creates or changes a plan.
    pub async fn upsert_plan(&self, plan: &Plan) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query(
                "INSERT INTO plans (name, rps, burst) VALUES ($1, $2, $3) \
                 ON CONFLICT (name) DO UPDATE SET rps = excluded.rps, burst = excluded.burst",
            )
            .bind(&plan.name)
            .bind(i64::from(plan.rps))
            .bind(i64::from(plan.burst))
            .execute(p)
            .await?;
        });
        Ok(())
    }

    pub async fn list_plans(&self) -> Result<Vec<Plan>> {
        on_pool!(self, p => {
            let rows: Vec<(String, i64, i64)> =
                sqlx::query_as("SELECT name, rps, burst FROM plans ORDER BY name")
                    .fetch_all(p)
                    .await?;
            Ok(rows
                .into_iter()
                .map(|(name, rps, burst)| Plan {
                    name,
                    rps: u32::try_from(rps).unwrap_or(1),
                    burst: u32::try_from(burst).unwrap_or(1),
                })
                .collect())
        })
    }

    /// Takes one request from a branch's allowance (GCRA state shared through the database).
    pub async fn rate_take(
        &self,
        branch_id: &BranchId,
        limit: &Gcra,
        now_us: i64,
    ) -> Result<Decision> {
        // One statement decides: the row is created or moved forward only when allowed.
        let greatest = match self.pool {
            Pool::Sqlite(_) => "MAX",
            Pool::Pg(_) => "GREATEST",
        };
        let take = format!(
            "INSERT INTO rate_limit_state (branch_id, tat) VALUES ($1, $2 + $3) \
             ON CONFLICT (branch_id) DO UPDATE \
             SET tat = {greatest}(rate_limit_state.tat, $2) + $3 \
             WHERE {greatest}(rate_limit_state.tat, $2) - $2 <= $4 \
             RETURNING tat"
        );
        on_pool!(self, p => {
            let row: Option<(i64,)> = sqlx::query_as(&take)
                .bind(branch_id.as_str())
                .bind(now_us)
                .bind(limit.interval_us)
                .bind(limit.tolerance_us)
                .fetch_optional(p)
                .await?;
            match row {
                Some((tat,)) => Ok(Decision::Allowed {
                    new_tat_us: tat,
                    remaining: limit.remaining(tat, now_us),
                }),
                None => {
                    let (tat,): (i64,) =
                        sqlx::query_as("SELECT tat FROM rate_limit_state WHERE branch_id = $1")
                            .bind(branch_id.as_str())
                            .fetch_one(p)
                            .await?;
                    Ok(limit.check(Some(tat), now_us))
                }
            }
        })
    }
}
