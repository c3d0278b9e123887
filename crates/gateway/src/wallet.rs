//! The built-in sandbox wallet (TrueMoney), a ledger in the service's own database (like the
//! sandbox bank).

use crate::sandbox::random_digits;
use connectors::{Cause, Outcome};
use domain::model::WalletTransfer;
use domain::{Clock, Satang};
use std::sync::Arc;
use store::SqlStore;

pub struct SandboxWallet {
    store: Arc<SqlStore>,
    clock: Arc<dyn Clock>,
}

/// What the operator says about a new sandbox wallet transfer; the rest is made up.
#[derive(Debug, Clone)]
pub struct NewWalletTransfer {
    pub amount: Satang,
    pub sender_name: Option<String>,
    pub receiver_name: Option<String>,
    /// `0812345678`; shown masked.
    pub receiver_phone: Option<String>,
}

/// `0812345678` → `xxx-xxx-5678`, as the wallet shows phone numbers.
pub fn mask_phone(phone: &str) -> String {
    let d: String = phone.chars().filter(char::is_ascii_digit).collect();
    let tail = &d[d.len().saturating_sub(4)..];
    format!("xxx-xxx-{tail}")
}

impl SandboxWallet {
    pub fn new(store: Arc<SqlStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    pub async fn create_transfer(
        &self,
        req: &NewWalletTransfer,
    ) -> Result<WalletTransfer, crate::CreateError> {
        if req.amount.0 <= 0 {
            return Err(crate::CreateError::WalletAmountNotPositive);
        }
        let now = self.clock.now();
        let date = format!(
            "{:02}{:02}{:04}",
            now.day(),
            u8::from(now.month()),
            now.year()
        );
        crate::insert_with_fresh_id(
            8,
            || {
                let (id, sender_phone, receiver_phone) = {
                    let mut rng = rand::rng();
                    let id = format!("5{}", random_digits(&mut rng, 13));
                    let sender = format!("08{}", random_digits(&mut rng, 8));
                    let receiver = req
                        .receiver_phone
                        .clone()
                        .unwrap_or_else(|| format!("09{}", random_digits(&mut rng, 8)));
                    (id, sender, receiver)
                };
                WalletTransfer {
                    payload: slip_qr::encode_truemoney_slip("P2P", &id, &date),
                    transaction_id: id,
                    event: "P2P".into(),
                    occurred_at: now,
                    amount: req.amount,
                    sender_name: req
                        .sender_name
                        .clone()
                        .unwrap_or_else(|| "สมชาย ใจดี".into()),
                    sender_phone: mask_phone(&sender_phone),
                    receiver_name: req
                        .receiver_name
                        .clone()
                        .unwrap_or_else(|| "ร้านตัวอย่าง".into()),
                    receiver_phone: mask_phone(&receiver_phone),
                }
            },
            async |t| self.store.insert_wallet_transfer(t).await,
            "transaction id",
        )
        .await
    }
}

impl SandboxWallet {
    /// What the ledger says about a TrueMoney transaction id.
    pub async fn lookup(&self, transaction_id: &str) -> Outcome<WalletTransfer> {
        match self.store.get_wallet_transfer(transaction_id).await {
            Ok(Some(t)) => Outcome::Found(t),
            Ok(None) => Outcome::NotFound,
            Err(e) => Outcome::unavailable(Cause::Connect, e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn masks_phones() {
        assert_eq!(super::mask_phone("0812345678"), "xxx-xxx-5678");
        assert_eq!(super::mask_phone("12"), "xxx-xxx-12");
    }
}
