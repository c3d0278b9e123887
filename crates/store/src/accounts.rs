//! Bank accounts of branches (the accounts a slip's receiver is matched against).

use crate::sql::{execute, fetch_all, fetch_optional, unique_violation};
use crate::SqlStore;
use crate::{Result, StoreError};
use domain::clock::{from_millis, to_millis};
use domain::model::{AccountType, BankAccount};
use domain::{BankAccountId, BranchId};
use sqlx::Row;
use time::OffsetDateTime;

const COLS: &str = "id, service_id, branch_id, bank_code, bank_number, name_th, name_en, kind, \
                    extra_verify, created_at";

macro_rules! account_from_row {
    ($r:expr) => {{
        let r = &$r;
        let kind: String = r.try_get("kind")?;
        BankAccount {
            id: r.try_get::<String, _>("id")?.into(),
            service_id: r.try_get::<String, _>("service_id")?.into(),
            branch_id: r.try_get::<String, _>("branch_id")?.into(),
            bank_code: r.try_get("bank_code")?,
            bank_number: r.try_get("bank_number")?,
            name_th: r.try_get("name_th")?,
            name_en: r.try_get("name_en")?,
            kind: AccountType::parse(&kind)
                .ok_or_else(|| StoreError::Corrupt(format!("account kind {kind}")))?,
            extra_verify: r.try_get("extra_verify")?,
            created_at: from_millis(r.try_get("created_at")?),
        }
    }};
}

impl SqlStore {
    /// `Conflict` when the service already has an active account with this bank and number.
    pub async fn create_bank_account(&self, a: &domain::model::BankAccount) -> Result<()> {
        execute!(
            &self.pool,
            "INSERT INTO bank_accounts (id, service_id, branch_id, bank_code, bank_number, \
             name_th, name_en, kind, extra_verify, active, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true, $10)",
            [
                a.id.as_str(),
                a.service_id.as_str(),
                a.branch_id.as_str(),
                &a.bank_code,
                &a.bank_number,
                &a.name_th,
                &a.name_en,
                a.kind.as_str(),
                &a.extra_verify,
                to_millis(a.created_at)
            ]
        )
        .map_err(|e| unique_violation(e, "bank account"))?;
        Ok(())
    }

    /// Active accounts of a branch, oldest first (the order matching breaks ties by).
    pub async fn list_bank_accounts(
        &self,
        branch_id: &BranchId,
    ) -> Result<Vec<domain::model::BankAccount>> {
        let sql = format!(
            "SELECT {COLS} FROM bank_accounts WHERE branch_id = $1 AND active \
             ORDER BY created_at, id"
        );
        fetch_all!(
            &self.pool,
            &sql,
            [branch_id.as_str()],
            |r| account_from_row!(r)
        )
    }

    /// An active account, only if it belongs to the branch.
    pub async fn get_bank_account(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
    ) -> Result<Option<domain::model::BankAccount>> {
        let pool = &self.pool;
        let branch_id = branch_id.as_str();
        let id = id.as_str();
        let sql =
            format!("SELECT {COLS} FROM bank_accounts WHERE id = $1 AND branch_id = $2 AND active");
        fetch_optional!(pool, &sql, [id, branch_id], |r| account_from_row!(r))
    }

    /// False if the branch has no such active account.
    pub async fn set_bank_account_extra_verify(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
        extra: Option<&str>,
    ) -> Result<bool> {
        Ok(execute!(
            &self.pool,
            "UPDATE bank_accounts SET extra_verify = $3 \
             WHERE id = $1 AND branch_id = $2 AND active",
            [id.as_str(), branch_id.as_str(), extra]
        )? == 1)
    }

    /// Deactivates the account (kept for the record); false if the branch has no such account.
    pub async fn delete_bank_account(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
        now: OffsetDateTime,
    ) -> Result<bool> {
        Ok(execute!(
            &self.pool,
            "UPDATE bank_accounts SET active = false, deleted_at = $3 \
             WHERE id = $1 AND branch_id = $2 AND active",
            [id.as_str(), branch_id.as_str(), to_millis(now)]
        )? == 1)
    }
}
