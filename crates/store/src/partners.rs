//! Partners (the B2B API): their rows, the services they may act on, used nonces.

use crate::sql::{on_pool, unique_violation};
use crate::Result;
use crate::SqlStore;
use domain::clock::{from_millis, to_millis};
use domain::model::Partner;
use domain::partner::Permission;
use domain::{PartnerId, ServiceId};
use sqlx::Row;
use time::OffsetDateTime;

impl SqlStore {
    /// Fails with `Conflict` if the key hash exists.
    pub async fn create_partner(&self, partner: &Partner, api_key_hash: &str) -> Result<()> {
        let perms = partner
            .permissions
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(",");
        on_pool!(self, p => {
            let mut tx = p.begin().await?;
            sqlx::query(
                "INSERT INTO partners (id, name, api_key_hash, secret, permissions, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(partner.id.as_str())
            .bind(&partner.name)
            .bind(api_key_hash)
            .bind(&partner.secret)
            .bind(&perms)
            .bind(to_millis(partner.created_at))
            .execute(&mut *tx)
            .await
            .map_err(|e| unique_violation(e, "partner key exists"))?;
            for sid in &partner.service_ids {
                sqlx::query("INSERT INTO partner_services (partner_id, service_id) VALUES ($1, $2)")
                    .bind(partner.id.as_str())
                    .bind(sid.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| unique_violation(e, "service listed twice"))?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    pub async fn find_partner_by_key_hash(&self, hash: &str) -> Result<Option<Partner>> {
        on_pool!(self, p => {
            let Some(r) = sqlx::query(
                "SELECT id, name, secret, permissions, created_at FROM partners WHERE api_key_hash = $1",
            )
            .bind(hash)
            .fetch_optional(p)
            .await?
            else {
                return Ok(None);
            };
            let id: String = r.try_get("id")?;
            let perms: String = r.try_get("permissions")?;
            let services: Vec<(String,)> = sqlx::query_as(
                "SELECT service_id FROM partner_services WHERE partner_id = $1 ORDER BY service_id",
            )
            .bind(&id)
            .fetch_all(p)
            .await?;
            Ok(Some(Partner {
                id: PartnerId::from(id),
                name: r.try_get("name")?,
                secret: r.try_get("secret")?,
                permissions: perms.split(',').filter_map(Permission::parse).collect(),
                service_ids: services.into_iter().map(|(s,)| ServiceId::from(s)).collect(),
                created_at: from_millis(r.try_get("created_at")?),
            }))
        })
    }

    /// True the first time a partner uses a nonce; forgets nonces older than `forget_before`.
    pub async fn use_nonce(
        &self,
        partner_id: &PartnerId,
        nonce: &str,
        now: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<bool> {
        on_pool!(self, p => {
            sqlx::query("DELETE FROM partner_nonces WHERE partner_id = $1 AND seen_at < $2")
                .bind(partner_id.as_str())
                .bind(to_millis(forget_before))
                .execute(p)
                .await?;
            let r = sqlx::query(
                "INSERT INTO partner_nonces (partner_id, nonce, seen_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (partner_id, nonce) DO NOTHING",
            )
            .bind(partner_id.as_str())
            .bind(nonce)
            .bind(to_millis(now))
            .execute(p)
            .await?;
            Ok(r.rows_affected() == 1)
        })
    }
}
