//! The built-in sandbox ledgers: bank transfers (`SandboxBank`) and TrueMoney wallet transfers
//! (`SandboxWallet`).

use crate::rows::{transfer_cols, transfer_from_row};
use crate::sql::{execute, fetch_optional, unique_violation};
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
        execute!(
            &self.pool,
            sql,
            [
                &t.sender.bank_code,
                &t.trans_ref,
                &t.payload,
                to_millis(t.occurred_at),
                &t.country_code,
                t.amount.0,
                t.fee.0,
                &t.ref1,
                &t.ref2,
                &t.ref3,
                &t.sender.name_th,
                &t.sender.name_en,
                &t.sender.account_type,
                &t.sender.account,
                &t.receiver.bank_code,
                &t.receiver.name_th,
                &t.receiver.name_en,
                &t.receiver.account_type,
                &t.receiver.account,
                &t.receiver_merchant_id
            ]
        )
        .map_err(|e| unique_violation(e, "sandbox transfer exists"))?;
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
        fetch_optional!(
            &self.pool,
            sql,
            [sending_bank, trans_ref],
            |r| transfer_from_row!(r)
        )
    }

    /// Sandbox wallet ledger. `Conflict` if the transaction id exists.
    pub async fn insert_wallet_transfer(&self, t: &domain::model::WalletTransfer) -> Result<()> {
        execute!(
            &self.pool,
            "INSERT INTO sandbox_wallet_transfers (transaction_id, event, payload, occurred_at, \
             amount_satang, sender_name, sender_phone, receiver_name, receiver_phone) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            [
                &t.transaction_id,
                &t.event,
                &t.payload,
                to_millis(t.occurred_at),
                t.amount.0,
                &t.sender_name,
                &t.sender_phone,
                &t.receiver_name,
                &t.receiver_phone
            ]
        )
        .map_err(|e| unique_violation(e, "wallet transfer"))?;
        Ok(())
    }

    pub async fn get_wallet_transfer(
        &self,
        transaction_id: &str,
    ) -> Result<Option<domain::model::WalletTransfer>> {
        fetch_optional!(
            &self.pool,
            "SELECT transaction_id, event, payload, occurred_at, amount_satang, sender_name, \
             sender_phone, receiver_name, receiver_phone FROM sandbox_wallet_transfers \
             WHERE transaction_id = $1",
            [transaction_id],
            |r| domain::model::WalletTransfer {
                transaction_id: r.try_get(0)?,
                event: r.try_get(1)?,
                payload: r.try_get(2)?,
                occurred_at: from_millis(r.try_get(3)?),
                amount: domain::Satang(r.try_get(4)?),
                sender_name: r.try_get(5)?,
                sender_phone: r.try_get(6)?,
                receiver_name: r.try_get(7)?,
                receiver_phone: r.try_get(8)?,
            }
        )
    }
}
