//! Bank accounts of branches, and the sandbox wallet ledger: SQL for those `Store` methods.

use crate::sql::{on_pool, unique_violation, Pool};
use crate::{Result, StoreError};
use domain::clock::{from_millis, to_millis};
use domain::model::{AccountType, BankAccount};
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

/// `Conflict` when the service has an active account with the same bank and number.
pub(crate) async fn create(pool: &Pool, a: &BankAccount) -> Result<()> {
    on_pool!(pool: pool, p => {
        sqlx::query(
            "INSERT INTO bank_accounts (id, service_id, branch_id, bank_code, bank_number, \
             name_th, name_en, kind, extra_verify, active, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, true, $10)",
        )
        .bind(a.id.as_str())
        .bind(a.service_id.as_str())
        .bind(a.branch_id.as_str())
        .bind(&a.bank_code)
        .bind(&a.bank_number)
        .bind(&a.name_th)
        .bind(&a.name_en)
        .bind(a.kind.as_str())
        .bind(&a.extra_verify)
        .bind(to_millis(a.created_at))
        .execute(p)
        .await
        .map_err(|e| unique_violation(e, "bank account"))?;
        Ok(())
    })
}

/// Active accounts of a branch, oldest first (the order matching breaks ties by).
pub(crate) async fn list(pool: &Pool, branch_id: &str) -> Result<Vec<BankAccount>> {
    let sql = format!(
        "SELECT {COLS} FROM bank_accounts WHERE branch_id = $1 AND active \
         ORDER BY created_at, id"
    );
    on_pool!(pool: pool, p => {
        let rows = sqlx::query(&sql).bind(branch_id).fetch_all(p).await?;
        rows.iter().map(|r| Ok(account_from_row!(r))).collect()
    })
}

/// An active account of the branch.
pub(crate) async fn get(pool: &Pool, branch_id: &str, id: &str) -> Result<Option<BankAccount>> {
    let sql =
        format!("SELECT {COLS} FROM bank_accounts WHERE id = $1 AND branch_id = $2 AND active");
    on_pool!(pool: pool, p => {
        match sqlx::query(&sql).bind(id).bind(branch_id).fetch_optional(p).await? {
            Some(r) => Ok(Some(account_from_row!(r))),
            None => Ok(None),
        }
    })
}

/// False if the branch has no such active account.
pub(crate) async fn set_extra_verify(
    pool: &Pool,
    branch_id: &str,
    id: &str,
    extra: Option<&str>,
) -> Result<bool> {
    on_pool!(pool: pool, p => {
        let done = sqlx::query(
            "UPDATE bank_accounts SET extra_verify = $3 WHERE id = $1 AND branch_id = $2 AND active",
        )
        .bind(id)
        .bind(branch_id)
        .bind(extra)
        .execute(p)
        .await?;
        Ok(done.rows_affected() == 1)
    })
}

/// Deactivates the account (kept for the record); false if the branch has no such account.
pub(crate) async fn delete(
    pool: &Pool,
    branch_id: &str,
    id: &str,
    now: OffsetDateTime,
) -> Result<bool> {
    on_pool!(pool: pool, p => {
        let done = sqlx::query(
            "UPDATE bank_accounts SET active = false, deleted_at = $3 \
             WHERE id = $1 AND branch_id = $2 AND active",
        )
        .bind(id)
        .bind(branch_id)
        .bind(to_millis(now))
        .execute(p)
        .await?;
        Ok(done.rows_affected() == 1)
    })
}

/// Sandbox wallet ledger: `Conflict` if the transaction id exists.
pub(crate) async fn insert_wallet(pool: &Pool, t: &domain::model::WalletTransfer) -> Result<()> {
    on_pool!(pool: pool, p => {
        sqlx::query(
            "INSERT INTO sandbox_wallet_transfers (transaction_id, event, payload, occurred_at, \
             amount_satang, sender_name, sender_phone, receiver_name, receiver_phone) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&t.transaction_id)
        .bind(&t.event)
        .bind(&t.payload)
        .bind(to_millis(t.occurred_at))
        .bind(t.amount.0)
        .bind(&t.sender_name)
        .bind(&t.sender_phone)
        .bind(&t.receiver_name)
        .bind(&t.receiver_phone)
        .execute(p)
        .await
        .map_err(|e| unique_violation(e, "wallet transfer"))?;
        Ok(())
    })
}

pub(crate) async fn get_wallet(
    pool: &Pool,
    transaction_id: &str,
) -> Result<Option<domain::model::WalletTransfer>> {
    on_pool!(pool: pool, p => {
        let row = sqlx::query(
            "SELECT transaction_id, event, payload, occurred_at, amount_satang, sender_name, \
             sender_phone, receiver_name, receiver_phone FROM sandbox_wallet_transfers \
             WHERE transaction_id = $1",
        )
        .bind(transaction_id)
        .fetch_optional(p)
        .await?;
        match row {
            Some(r) => Ok(Some(domain::model::WalletTransfer {
                transaction_id: r.try_get(0)?,
                event: r.try_get(1)?,
                payload: r.try_get(2)?,
                occurred_at: from_millis(r.try_get(3)?),
                amount: domain::Satang(r.try_get(4)?),
                sender_name: r.try_get(5)?,
                sender_phone: r.try_get(6)?,
                receiver_name: r.try_get(7)?,
                receiver_phone: r.try_get(8)?,
            })),
            None => Ok(None),
        }
    })
}
