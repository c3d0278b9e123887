//! Services and their owners (users): rows, patches, look-ups.

use crate::rows::{service_cols, service_from_row, service_joins, split};
use crate::sql::{execute, fetch_optional, on_pool, unique_violation};
use crate::SqlStore;
use crate::{Result, ServicePatch};
use domain::clock::{from_millis, to_millis};
use domain::model::{Service, ServiceState, User};
use domain::{ServiceId, UserId};
use sqlx::Row;

impl SqlStore {
    pub async fn create_service(&self, s: &Service) -> Result<()> {
        execute!(
            &self.pool,
            "INSERT INTO services (id, name, limit_quota, used_quota, total_used_quota, created_at, \
             state, expires_at, owner_id, billing_anchor, cycle_start, plan, rate_limit_rps, \
             owner_verified) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            [
                s.id.as_str(),
                &s.name,
                s.quota.limit,
                s.quota.used,
                s.quota.total_used,
                to_millis(s.created_at),
                s.state.as_str(),
                s.expires_at.map(to_millis),
                s.owner_id.as_ref().map(UserId::as_str),
                to_millis(s.billing_anchor),
                to_millis(s.cycle_start),
                &s.plan.name,
                s.rate_limit_rps.map(i64::from),
                s.owner_verified,
            ]
        )
        .map_err(|e| unique_violation(e, "service id exists"))?;
        Ok(())
    }

    pub async fn get_service(&self, id: &ServiceId) -> Result<Option<Service>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            " FROM services s",
            service_joins!(),
            " WHERE s.id = $1"
        );
        fetch_optional!(&self.pool, sql, [id.as_str()], |r| service_from_row!(r))
    }

    pub async fn find_service_by_name(&self, name: &str) -> Result<Option<Service>> {
        let sql = concat!(
            "SELECT ",
            service_cols!(),
            " FROM services s",
            service_joins!(),
            " WHERE s.name = $1 ORDER BY s.created_at LIMIT 1"
        );
        fetch_optional!(&self.pool, sql, [name], |r| service_from_row!(r))
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
        execute!(
            &self.pool,
            "INSERT INTO users (id, name, banned, created_at) VALUES ($1, $2, $3, $4)",
            [u.id.as_str(), &u.name, u.banned, to_millis(u.created_at)]
        )
        .map_err(|e| unique_violation(e, "user id exists"))?;
        Ok(())
    }

    pub async fn get_user(&self, id: &UserId) -> Result<Option<User>> {
        fetch_optional!(
            &self.pool,
            "SELECT id, name, banned, created_at FROM users WHERE id = $1",
            [id.as_str()],
            |r| User {
                id: r.try_get::<String, _>("id")?.into(),
                name: r.try_get("name")?,
                banned: r.try_get("banned")?,
                created_at: from_millis(r.try_get("created_at")?),
            }
        )
    }

    /// False if no such user.
    pub async fn set_user_banned(&self, id: &UserId, banned: bool) -> Result<bool> {
        Ok(execute!(
            &self.pool,
            "UPDATE users SET banned = $2 WHERE id = $1",
            [id.as_str(), banned]
        )? == 1)
    }
}
