//! The built-in ledgers: the sandbox bank and the sandbox wallet, transfers kept in the
//! service's own database so the whole flow can be tried without a real bank. Together they
//! are the connector `sandbox` ([`Ledger`]): a connector like any other, implemented here, where
//! the store is, so `connectors` needs no database.

mod sandbox;
mod wallet;

use async_trait::async_trait;
use connectors::{Connector, Outcome, SlipQuery, WalletQuery};
use domain::model::{Transfer, WalletTransfer};
use std::sync::Arc;

pub use sandbox::{NewSandboxTransfer, SandboxBank, BBL_PENDING_WINDOW, SANDBOX_RETENTION};
pub use wallet::{mask_phone, NewWalletTransfer, SandboxWallet};

/// The sandbox bank and wallet as one connector (kind `sandbox`): production routes to it by
/// name (`[routing]`), and test branches always verify on it.
#[derive(Clone)]
pub struct Ledger {
    bank: Arc<SandboxBank>,
    wallet: Arc<SandboxWallet>,
}

impl Ledger {
    pub fn new(bank: Arc<SandboxBank>, wallet: Arc<SandboxWallet>) -> Self {
        Self { bank, wallet }
    }
}

#[async_trait]
impl Connector for Ledger {
    fn kind(&self) -> &'static str {
        connectors::Kind::Sandbox.as_str()
    }

    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer> {
        self.bank.lookup(&q.sending_bank, &q.trans_ref).await
    }

    async fn lookup_wallet(&self, q: &WalletQuery) -> Outcome<WalletTransfer> {
        self.wallet.lookup(&q.transaction_id).await
    }

    /// The ledger is this node's own database: nothing to reach.
    async fn check(&self) -> Result<(), connectors::CheckFailed> {
        Ok(())
    }
}

/// Makes a record with a fresh random id (`make`) and inserts it, making another while the
/// id is taken: a random id can collide in theory. At most `attempts` tries.
async fn insert_with_fresh_id<T>(
    attempts: usize,
    mut make: impl FnMut() -> T,
    insert: impl AsyncFn(&T) -> Result<(), store::StoreError>,
    what: &'static str,
) -> Result<T, CreateError> {
    for _ in 0..attempts {
        let t = make();
        match insert(&t).await {
            Ok(()) => return Ok(t),
            Err(store::StoreError::Conflict(_)) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(CreateError::NoFreshId(what))
}

/// Why a sandbox transfer (bank or wallet) was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("unknown sending bank code {0}")]
    UnknownSendingBank(String),
    #[error("unknown receiving bank code {0}")]
    UnknownReceivingBank(String),
    /// A bank transfer's amount.
    #[error("amount must be positive")]
    AmountNotPositive,
    /// A wallet transfer's amount.
    #[error("the amount must be positive")]
    WalletAmountNotPositive,
    #[error("could not allocate a {0}")]
    NoFreshId(&'static str),
    #[error(transparent)]
    Store(#[from] store::StoreError),
}
