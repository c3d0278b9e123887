//! Branches and their API keys: rows, patches, the key look-up of authentication.

use crate::rows::{
    branch_cols, branch_from_row, encode_ips, service_cols, service_from_row, service_joins, split,
};
use crate::sql::{execute, fetch_all, fetch_optional, on_pool, unique_violation};
use crate::SqlStore;
use crate::{BranchPatch, Result};
use domain::clock::to_millis;
use domain::model::{Branch, Service};
use domain::BranchId;
use domain::ServiceId;
use sqlx::Row;
use time::OffsetDateTime;

impl SqlStore {
    /// Fails with `Conflict` for a second main branch of a service or a reused key hash.
    pub async fn create_branch(&self, b: &Branch, api_key_hash: &str) -> Result<()> {
        execute!(
            &self.pool,
            "INSERT INTO branches (id, service_id, name, is_main, active, api_key_hash, \
             allow_ips, webhook_url, webhook_secret, limit_quota, used_quota, \
             total_used_quota, created_at, cycle_start, sandbox) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            [
                b.id.as_str(),
                b.service_id.as_str(),
                &b.name,
                b.is_main,
                b.active,
                api_key_hash,
                encode_ips(&b.allow_ips),
                &b.webhook_url,
                &b.webhook_secret,
                b.quota.limit,
                b.quota.used,
                b.quota.total_used,
                to_millis(b.created_at),
                to_millis(b.cycle_start),
                b.sandbox
            ]
        )
        .map_err(|e| unique_violation(e, "the service already has a main branch"))?;
        Ok(())
    }

    pub async fn get_branch(&self, id: &BranchId) -> Result<Option<Branch>> {
        let sql = concat!(
            "SELECT ",
            branch_cols!(),
            " FROM branches b WHERE b.id = $1"
        );
        fetch_optional!(&self.pool, sql, [id.as_str()], |r| branch_from_row!(r))
    }

    pub async fn list_branches(&self, service_id: &ServiceId) -> Result<Vec<Branch>> {
        let sql = concat!(
            "SELECT ",
            branch_cols!(),
            " FROM branches b WHERE b.service_id = $1 \
             ORDER BY b.is_main DESC, b.created_at, b.id"
        );
        fetch_all!(
            &self.pool,
            sql,
            [service_id.as_str()],
            |r| branch_from_row!(r)
        )
    }

    /// Returns the updated branch, or `None` if it does not exist.
    pub async fn update_branch(
        &self,
        id: &BranchId,
        patch: &BranchPatch,
    ) -> Result<Option<Branch>> {
        let (set_url, url) = split(&patch.webhook_url);
        let (set_secret, secret) = split(&patch.webhook_secret);
        let (set_limit, limit) = split(&patch.limit_quota);
        let (set_biller, biller) = split(&patch.biller_id);
        on_pool!(self, p => {
            sqlx::query(
                "UPDATE branches SET name = COALESCE($2, name), active = COALESCE($3, active), \
                 allow_ips = COALESCE($4, allow_ips), \
                 webhook_url = CASE WHEN $5 THEN $6 ELSE webhook_url END, \
                 webhook_secret = CASE WHEN $7 THEN $8 ELSE webhook_secret END, \
                 limit_quota = CASE WHEN $9 THEN $10 ELSE limit_quota END, \
                 biller_id = CASE WHEN $11 THEN $12 ELSE biller_id END, \
                 sandbox = COALESCE($13, sandbox) \
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(&patch.name)
            .bind(patch.active)
            .bind(patch.allow_ips.as_ref().map(encode_ips))
            .bind(set_url)
            .bind(url)
            .bind(set_secret)
            .bind(secret)
            .bind(set_limit)
            .bind(limit)
            .bind(set_biller)
            .bind(biller)
            .bind(patch.sandbox)
            .execute(p)
            .await?;
        });
        self.get_branch(id).await
    }

    /// Replaces the key hash. The old key stops working at once, or at `keep_old_until`.
    /// False if no such branch.
    pub async fn set_api_key_hash(
        &self,
        branch_id: &BranchId,
        hash: &str,
        keep_old_until: Option<OffsetDateTime>,
    ) -> Result<bool> {
        on_pool!(self, p => {
            // Right-hand sides see the old row: the previous hash is the one being replaced.
            let r = sqlx::query(
                "UPDATE branches SET api_key_hash = $2, \
                 prev_api_key_hash = CASE WHEN $3 THEN api_key_hash ELSE NULL END, \
                 prev_key_expires_at = $4 WHERE id = $1",
            )
                .bind(branch_id.as_str())
                .bind(hash)
                .bind(keep_old_until.is_some())
                .bind(keep_old_until.map(to_millis))
                .execute(p)
                .await
                .map_err(|e| unique_violation(e, "key hash in use"))?;
            Ok(r.rows_affected() == 1)
        })
    }

    /// The branch owning a key hash (its current key, or its previous one still in its grace
    /// period at `now`), with its service: the one look-up of authentication.
    pub async fn find_by_api_key_hash(
        &self,
        hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<(Service, Branch)>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            ", ",
            branch_cols!(),
            " FROM branches b JOIN services s ON s.id = b.service_id",
            service_joins!(),
            " WHERE b.api_key_hash = $1 \
             OR (b.prev_api_key_hash = $1 AND b.prev_key_expires_at > $2)"
        );
        fetch_optional!(&self.pool, sql, [hash, to_millis(now)], |r| (
            service_from_row!(r),
            branch_from_row!(r)
        ))
    }
}
