//! The LINE slip bot's rows (migration 0016): a branch's channel settings, the reply marks in
//! `line_events` (a job marks its reply before it spends the reply token, so a run after a crash
//! knows the token may be spent; kept 24 h, swept by the periodic job `line-replies`; events
//! themselves are de-duplicated by their job row, keyed by `webhookEventId`), and the pushes
//! counted per Thai day.

use crate::sql::{execute, on_pool};
use crate::SqlStore;
use crate::{Result, StoreError};
use domain::clock::to_millis;
use domain::line::{GroupMode, Lang, LineSettings};
use domain::BranchId;
use sqlx::Row;
use time::OffsetDateTime;

impl SqlStore {
    /// A branch's LINE settings (`None`: never set).
    pub async fn get_line_settings(
        &self,
        branch: &BranchId,
    ) -> Result<Option<domain::line::LineSettings>> {
        let pool = &self.pool;
        on_pool!(pool: pool, p => {
            let row = sqlx::query(
                "SELECT channel_secret, channel_token, notify_to, language, group_mode, push, \
                 push_daily_limit FROM line_channels WHERE branch_id = $1",
            )
            .bind(branch.as_str())
            .fetch_optional(p)
            .await?;
            row.map(|r| {
                let lang: String = r.try_get(3)?;
                let mode: String = r.try_get(4)?;
                Ok(LineSettings {
                    channel_secret: r.try_get(0)?,
                    channel_token: r.try_get(1)?,
                    notify_to: r.try_get(2)?,
                    language: Lang::parse(&lang)
                        .ok_or_else(|| StoreError::Corrupt(format!("line language {lang}")))?,
                    group_mode: GroupMode::parse(&mode)
                        .ok_or_else(|| StoreError::Corrupt(format!("line group mode {mode}")))?,
                    push: r.try_get(5)?,
                    push_daily_limit: u32::try_from(r.try_get::<i64, _>(6)?).unwrap_or(0),
                })
            })
            .transpose()
        })
    }

    /// Applies `patch` to the branch's settings (created with the defaults first); the result.
    pub async fn set_line_settings(
        &self,
        branch: &BranchId,
        patch: &domain::line::LinePatch,
    ) -> Result<domain::line::LineSettings> {
        let pool = &self.pool;
        let s = patch.apply(self.get_line_settings(branch).await?.unwrap_or_default());
        on_pool!(pool: pool, p => {
            sqlx::query(
                "INSERT INTO line_channels (branch_id, channel_secret, channel_token, notify_to, \
                 language, group_mode, push, push_daily_limit) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (branch_id) DO UPDATE SET channel_secret = excluded.channel_secret, \
                 channel_token = excluded.channel_token, notify_to = excluded.notify_to, \
                 language = excluded.language, group_mode = excluded.group_mode, push = excluded.push, \
                 push_daily_limit = excluded.push_daily_limit",
            )
            .bind(branch.as_str())
            .bind(s.channel_secret.as_deref())
            .bind(s.channel_token.as_deref())
            .bind(s.notify_to.as_deref())
            .bind(s.language.as_str())
            .bind(s.group_mode.as_str())
            .bind(s.push)
            .bind(i64::from(s.push_daily_limit))
            .execute(p)
            .await?;
        });
        Ok(s)
    }

    /// Sets a mark (`line_events`; today the reply mark `reply {job id}`): true the first time
    /// within the window (`forget_before`: an older mark no longer counts); the database
    /// decides between nodes.
    pub async fn claim_line_event(
        &self,
        branch: &BranchId,
        event_id: &str,
        now: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<bool> {
        let pool = &self.pool;
        on_pool!(pool: pool, p => {
            let row = sqlx::query(
                "INSERT INTO line_events (branch_id, event_id, seen_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (branch_id, event_id) DO UPDATE SET seen_at = excluded.seen_at \
                 WHERE line_events.seen_at < $4 RETURNING seen_at",
            )
            .bind(branch.as_str())
            .bind(event_id)
            .bind(to_millis(now))
            .bind(to_millis(forget_before))
            .fetch_optional(p)
            .await?;
            Ok(row.is_some())
        })
    }

    /// Takes one push from the branch's allowance for `day` (a Thai date); false when used up.
    pub async fn take_line_push(&self, branch: &BranchId, day: &str, limit: u32) -> Result<bool> {
        let pool = &self.pool;
        if limit == 0 {
            return Ok(false);
        }
        on_pool!(pool: pool, p => {
            let row = sqlx::query(
                "INSERT INTO line_pushes (branch_id, day, used) VALUES ($1, $2, 1) \
                 ON CONFLICT (branch_id, day) DO UPDATE SET used = line_pushes.used + 1 \
                 WHERE line_pushes.used < $3 RETURNING used",
            )
            .bind(branch.as_str())
            .bind(day)
            .bind(i64::from(limit))
            .fetch_optional(p)
            .await?;
            Ok(row.is_some())
        })
    }

    /// Forgets event records older than `before` (a chunk per call); how many went.
    pub async fn sweep_line_events(&self, before: OffsetDateTime) -> Result<u64> {
        Ok(execute!(
            &self.pool,
            "DELETE FROM line_events WHERE branch_id || ' ' || event_id IN \
             (SELECT branch_id || ' ' || event_id FROM line_events WHERE seen_at < $1 LIMIT 2000)",
            [to_millis(before)]
        )?)
    }
}
