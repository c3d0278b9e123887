//! The built-in ledgers as a connector (operators route to it by the name `sandbox`).

use crate::outcome::{Cause, Outcome};
use crate::{Connector, SlipQuery, WalletQuery};
use async_trait::async_trait;
use domain::model::{Transfer, WalletTransfer};
use gateway::{BankAnswer, BankGateway, WalletAnswer, WalletGateway};
use std::sync::Arc;

/// Wraps any [`BankGateway`] (and optionally a [`WalletGateway`]) as a [`Connector`].
pub struct SandboxConnector {
    bank: Arc<dyn BankGateway>,
    wallet: Option<Arc<dyn WalletGateway>>,
}

impl SandboxConnector {
    pub fn new(bank: Arc<dyn BankGateway>, wallet: Option<Arc<dyn WalletGateway>>) -> Self {
        Self { bank, wallet }
    }
}

#[async_trait]
impl Connector for SandboxConnector {
    fn kind(&self) -> &'static str {
        "sandbox"
    }

    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer> {
        match self.bank.lookup(&q.sending_bank, &q.trans_ref).await {
            BankAnswer::Found(t) => Outcome::Found(*t),
            BankAnswer::NotFound => Outcome::NotFound,
            BankAnswer::Pending => Outcome::Pending,
            BankAnswer::Expired => Outcome::Expired,
            // The ledger is our own database: its failure is an outage like any other.
            BankAnswer::Unavailable(d) => Outcome::unavailable(Cause::Connect, d),
        }
    }

    async fn lookup_wallet(&self, q: &WalletQuery) -> Outcome<WalletTransfer> {
        let Some(w) = &self.wallet else {
            return Outcome::unavailable(Cause::Unsupported, "no wallet ledger");
        };
        match w.lookup(&q.transaction_id).await {
            WalletAnswer::Found(t) => Outcome::Found(*t),
            WalletAnswer::NotFound => Outcome::NotFound,
            WalletAnswer::Unavailable(d) => Outcome::unavailable(Cause::Connect, d),
        }
    }

    async fn check(&self) -> Result<(), String> {
        Ok(())
    }
}
