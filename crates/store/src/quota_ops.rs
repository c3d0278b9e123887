//! Partner quota operations: decided with the rows locked, audited in the same transaction.

use crate::sql::on_pool;
use crate::{Result, SqlStore};
use domain::clock::{from_millis, to_millis};
use domain::cycle::{cycle_start, effective};
use domain::model::{Branch, Service};
use domain::quota::{apply_op, Quota, QuotaOp, QuotaOpError};
use domain::BranchId;
use sqlx::Row;
use time::OffsetDateTime;

/// The branch's counters and its service's cycle, read with both rows locked.
struct Locked {
    service_id: String,
    branch: Quota,
    cycle: OffsetDateTime,
}

fn op_name(op: QuotaOp) -> &'static str {
    match op {
        QuotaOp::Set(_) => "quota.set",
        QuotaOp::Adjust(_) => "quota.adjust",
        QuotaOp::Reset => "quota.reset",
    }
}

fn json_quota(q: &Quota) -> String {
    let limit = q.limit.map_or("null".to_string(), |l| l.to_string());
    format!(
        r#"{{"limitQuota":{limit},"usedQuota":{},"totalUsedQuota":{}}}"#,
        q.used, q.total_used
    )
}

/// What a quota operation came to.
#[derive(Debug, Clone, PartialEq, Eq)]
// Returned once per operation and matched at once: boxing the large variant buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum QuotaChange {
    /// Applied and audited: the service and the branch as they are now.
    Applied(Service, Branch),
    /// Refused by the quota rules; nothing changed.
    Refused(QuotaOpError),
    /// No such branch.
    NoBranch,
}

impl SqlStore {
    /// Applies a quota operation to a branch, deciding on its counters as they stand in the
    /// current cycle (at `now`) with the rows locked, and records it in the audit log in the
    /// same transaction.
    pub async fn modify_branch_quota(
        &self,
        branch_id: &BranchId,
        op: QuotaOp,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<QuotaChange> {
        let id = branch_id;
        let branch_id = branch_id.as_str();
        let pool = &self.pool;
        // Same lock order as the charge writer: the service row, then the branch row.
        let (begin, lock) = pool.read_for_update();
        let svc_sql = format!(
            "SELECT id, billing_anchor FROM services \
         WHERE id = (SELECT service_id FROM branches WHERE id = $1){lock}"
        );
        let br_sql = format!(
            "SELECT limit_quota, used_quota, total_used_quota, cycle_start FROM branches \
         WHERE id = $1{lock}"
        );
        on_pool!(pool: pool, p => {
            let mut tx = p.begin_with(begin).await?;
            let Some(s) = sqlx::query(&svc_sql).bind(branch_id).fetch_optional(&mut *tx).await? else {
                tx.rollback().await?;
                return Ok(QuotaChange::NoBranch);
            };
            let Some(b) = sqlx::query(&br_sql).bind(branch_id).fetch_optional(&mut *tx).await? else {
                tx.rollback().await?;
                return Ok(QuotaChange::NoBranch);
            };
            let cycle = cycle_start(from_millis(s.try_get(1)?), now);
            let locked = Locked {
                service_id: s.try_get(0)?,
                branch: effective(
                    Quota { limit: b.try_get(0)?, used: b.try_get(1)?, total_used: b.try_get(2)? },
                    from_millis(b.try_get(3)?),
                    cycle,
                ),
                cycle,
            };
            let after = match apply_op(locked.branch, op) {
                Ok(q) => q,
                Err(e) => {
                    tx.rollback().await?;
                    return Ok(QuotaChange::Refused(e));
                }
            };
            // `used` is written with the cycle it counts, so a reset is not undone by an old value.
            sqlx::query(
                "UPDATE branches SET limit_quota = $2, used_quota = $3, cycle_start = $4 WHERE id = $1",
            )
            .bind(branch_id)
            .bind(after.limit)
            .bind(after.used)
            .bind(to_millis(locked.cycle))
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "INSERT INTO audit_log (id, at, actor, action, service_id, branch_id, detail) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(uuid::Uuid::new_v4().to_string())
            .bind(to_millis(now))
            .bind(actor)
            .bind(op_name(op))
            .bind(&locked.service_id)
            .bind(branch_id)
            .bind(format!(
                r#"{{"before":{},"after":{}}}"#,
                json_quota(&locked.branch),
                json_quota(&after)
            ))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        });
        // Read back for the answer (a branch deleted meanwhile is gone).
        let Some(b) = self.get_branch(id).await? else {
            return Ok(QuotaChange::NoBranch);
        };
        Ok(match self.get_service(&b.service_id).await? {
            Some(s) => QuotaChange::Applied(s, b),
            None => QuotaChange::NoBranch,
        })
    }
}
