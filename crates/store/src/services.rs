//! Services and their owners (users): rows, patches, look-ups.

use crate::rows::{service_cols, service_from_row, split};
use crate::sql::{on_pool, unique_violation};
use crate::SqlStore;
use crate::{Result, ServicePatch};
use domain::clock::{from_millis, to_millis};
use domain::model::{Service, ServiceState, User};
use domain::{ServiceId, UserId};
use sqlx::Row;

impl SqlStore {
    pub async fn create_service(&self, s: &Service) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query(
                "INSERT INTO services (id, name, limit_quota, used_quota, total_used_quota, created_at, \
                 state, expires_at, owner_id, billing_anchor, cycle_start, plan, rate_limit_rps, \
                 owner_verified) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            )
            .bind(s.id.as_str())
            .bind(&s.name)
            .bind(s.quota.limit)
            .bind(s.quota.used)
            .bind(s.quota.total_used)
            .bind(to_millis(s.created_at))
            .bind(s.state.as_str())
            .bind(s.expires_at.map(to_millis))
            .bind(s.owner_id.as_ref().map(UserId::as_str))
            .bind(to_millis(s.billing_anchor))
            .bind(to_millis(s.cycle_start))
            .bind(&s.plan.name)
            .bind(s.rate_limit_rps.map(i64::from))
            .bind(s.owner_verified)
            .execute(p)
            .await
            .map_err(|e| unique_violation(e, "service id exists"))?;
        });
        Ok(())
    }

    pub async fn get_service(&self, id: &ServiceId) -> Result<Option<Service>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            " FROM services s LEFT JOIN users u ON u.id = s.owner_id LEFT JOIN plans pl ON pl.name = s.plan WHERE s.id = $1"
        );
        on_pool!(self, p => {
            match sqlx::query(sql).bind(id.as_str()).fetch_optional(p).await? {
                Some(r) => Ok(Some(service_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    pub async fn find_service_by_name(&self, name: &str) -> Result<Option<Service>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            " FROM services s LEFT JOIN users u ON u.id = s.owner_id LEFT JOIN plans pl ON pl.name = s.plan \
             WHERE s.name = $1 ORDER BY s.created_at LIMIT 1"
        );
        on_pool!(self, p => {
            match sqlx::query(sql).bind(name).fetch_optional(p).await? {
                Some(r) => Ok(Some(service_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    /// Returns the updated service, or `None` if it does not exist.
    pub async fn update_service(
        &self,
        id: &ServiceId,
        patch: &ServicePatch,
    ) -> Result<Option<Service>> {
        let (set_limit, limit) = split(&patch.limit_quota);
        let (set_exp, exp) = split(&patch.expires_at);
        let (set_owner, owner) = split(&patch.owner_id);
        let (set_rate, rate) = split(&patch.rate_limit_rps);
        on_pool!(self, p => {
            sqlx::query(
                "UPDATE services SET name = COALESCE($2, name), \
                 limit_quota = CASE WHEN $3 THEN $4 ELSE limit_quota END, \
                 state = COALESCE($5, state), \
                 expires_at = CASE WHEN $6 THEN $7 ELSE expires_at END, \
                 owner_id = CASE WHEN $8 THEN $9 ELSE owner_id END, \
                 plan = COALESCE($10, plan), \
                 rate_limit_rps = CASE WHEN $11 THEN $12 ELSE rate_limit_rps END, \
                 owner_verified = COALESCE($13, owner_verified) \
                 WHERE id = $1",
            )
            .bind(id.as_str())
            .bind(&patch.name)
            .bind(set_limit)
            .bind(limit)
            .bind(patch.state.map(ServiceState::as_str))
            .bind(set_exp)
            .bind(exp.map(to_millis))
            .bind(set_owner)
            .bind(owner.as_ref().map(UserId::as_str))
            .bind(&patch.plan)
            .bind(set_rate)
            .bind(rate.map(i64::from))
            .bind(patch.owner_verified)
            .execute(p)
            .await?;
        });
        self.get_service(id).await
    }

    pub async fn create_user(&self, u: &User) -> Result<()> {
        on_pool!(self, p => {
            sqlx::query("INSERT INTO users (id, name, banned, created_at) VALUES ($1, $2, $3, $4)")
                .bind(u.id.as_str())
                .bind(&u.name)
                .bind(u.banned)
                .bind(to_millis(u.created_at))
                .execute(p)
                .await
                .map_err(|e| unique_violation(e, "user id exists"))?;
        });
        Ok(())
    }

    pub async fn get_user(&self, id: &UserId) -> Result<Option<User>> {
        on_pool!(self, p => {
            match sqlx::query("SELECT id, name, banned, created_at FROM users WHERE id = $1")
                .bind(id.as_str())
                .fetch_optional(p)
                .await?
            {
                Some(r) => Ok(Some(User {
                    id: r.try_get::<String, _>("id")?.into(),
                    name: r.try_get("name")?,
                    banned: r.try_get("banned")?,
                    created_at: from_millis(r.try_get("created_at")?),
                })),
                None => Ok(None),
            }
        })
    }

    /// False if no such user.
    pub async fn set_user_banned(&self, id: &UserId, banned: bool) -> Result<bool> {
        on_pool!(self, p => {
            let r = sqlx::query("UPDATE users SET banned = $2 WHERE id = $1")
                .bind(id.as_str())
                .bind(banned)
                .execute(p)
                .await?;
            Ok(r.rows_affected() == 1)
        })
    }
}
