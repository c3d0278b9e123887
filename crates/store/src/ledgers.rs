//! The built-in sandbox ledgers: bank transfers (`SandboxBank`) and TrueMoney wallet transfers
//! (`SandboxWallet`).

use crate::rows::{transfer_cols, transfer_from_row};
use crate::sql::{on_pool, unique_violation};
use crate::Result;
use crate::SqlStore;
use domain::clock::{from_millis, to_millis};
use domain::model::Transfer;
use sqlx::Row;

impl SqlStore {
    /// Sandbox bank ledger. `Conflict` if (sending bank, reference) exists.
    pub async fn insert_sandbox_transfer(&self, t: &Transfer) -> Result<()> {
        let sql = concat!(
            "INSERT INTO sandbox_transfers (", transfer_cols!(), ") VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"
        );
        on_pool!(self, p => {
            sqlx::query(sql)
                .bind(&t.sender.bank_code)
                .bind(&t.trans_ref)
                .bind(&t.payload)
                .bind(to_millis(t.occurred_at))
                .bind(&t.country_code)
                .bind(t.amount.0)
                .bind(t.fee.0)
                .bind(&t.ref1)
                .bind(&t.ref2)
                .bind(&t.ref3)
                .bind(&t.sender.name_th)
                .bind(&t.sender.name_en)
                .bind(&t.sender.account_type)
                .bind(&t.sender.account)
                .bind(&t.receiver.bank_code)
                .bind(&t.receiver.name_th)
                .bind(&t.receiver.name_en)
                .bind(&t.receiver.account_type)
                .bind(&t.receiver.account)
                .bind(&t.receiver_merchant_id)
                .execute(p)
                .await
                .map_err(|e| unique_violation(e, "sandbox transfer exists"))?;
        });
        Ok(())
    }

    pub async fn get_sandbox_transfer(
        &self,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<Transfer>> {
        let sql = concat!(
            "SELECT ",
            transfer_cols!(),
            " FROM sandbox_transfers WHERE sending_bank = $1 AND trans_ref = $2"
        );
        on_pool!(self, p => {
            match sqlx::query(sql)
                .bind(sending_bank)
                .bind(trans_ref)
                .fetch_optional(p)
                .await?
            {
                Some(r) => Ok(Some(transfer_from_row!(r))),
                None => Ok(None),
            }
        })
    }

    /// Sandbox wallet ledger. `Conflict` if the transaction id exists.
    pub async fn insert_wallet_transfer(&self, t: &domain::model::WalletTransfer) -> Result<()> {
        let pool = &self.pool;
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

    pub async fn get_wallet_transfer(
        &self,
        transaction_id: &str,
    ) -> Result<Option<domain::model::WalletTransfer>> {
        let pool = &self.pool;
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
}
