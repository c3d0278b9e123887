//! The bank boundary: one trait for "ask the sending bank about (sendingBank, transRef)".
//! The built-in sandbox bank is its first implementation; real bank connectors come later
//! behind the same trait.

mod sandbox;
mod wallet;

use async_trait::async_trait;
use domain::model::Transfer;

pub use sandbox::{NewSandboxTransfer, SandboxBank, BBL_PENDING_WINDOW, SANDBOX_RETENTION};
pub use wallet::{mask_phone, NewWalletTransfer, SandboxWallet, WalletGateway};

/// What a bank says about a transfer reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BankAnswer {
    Found(Box<Transfer>),
    NotFound,
    /// The bank knows the transfer but will not confirm it yet (Bangkok Bank, first 5 minutes).
    Pending,
    /// The bank could not be asked (outage, timeout). The detail is for logs only.
    Unavailable(String),
    /// The transfer is older than the bank keeps (v1 `slip_expired`).
    Expired,
}

#[async_trait]
pub trait BankGateway: Send + Sync + 'static {
    /// A short connector name stored with each verification it confirms (`sandbox`).
    fn source(&self) -> &str;
    async fn lookup(&self, sending_bank: &str, trans_ref: &str) -> BankAnswer;
}

/// What the wallet says about a TrueMoney transaction id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WalletAnswer {
    Found(Box<domain::model::WalletTransfer>),
    NotFound,
    /// The detail is for logs only.
    Unavailable(String),
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
