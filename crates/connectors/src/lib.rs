//! Upstream slip sources ("connectors") and the router in front of them.
//!
//! A connector answers "what does this source say about (sending bank, transRef)" or about a
//! TrueMoney transaction id. The [`Router`] tries a route's connectors in order, each behind a
//! timeout, a concurrency cap and a circuit breaker. [`Connector`] is the one answer to "who
//! confirms a transfer": the built-in ledger implements it where the store is (the `gateway`
//! crate), so this crate holds no database access.
//!
//! Runtime types only: the configuration crate parses files into [`ConnectorSpec`] and
//! [`RoutingSpec`].

/// `Debug` showing only the named fields (`field`, or `field as label`), the rest marked as
/// left out: a connector holds clients, token caches and credentials that are not to be printed.
macro_rules! partial_debug {
    ($ty:ident { $($field:ident $(as $label:ident)?),* $(,)? }) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(partial_debug!(@label $field $($label)?), &self.$field))*
                    .finish_non_exhaustive()
            }
        }
    };
    (@label $field:ident) => {
        stringify!($field)
    };
    (@label $field:ident $label:ident) => {
        stringify!($label)
    };
}

pub mod bankwire;
pub mod breaker;
mod easyslip;
mod http;
mod kbank;
mod outcome;
mod router;
mod scb;
mod spec;
pub mod token;

use async_trait::async_trait;
use domain::model::{Transfer, WalletTransfer};

pub use easyslip::EasySlip;
pub use kbank::KBank;
pub use outcome::{Cause, Outcome, Unavailable};
pub use router::{
    Attempt, BreakerState, ConnectorCheck, ConnectorStatus, Routed, Router, RouterBuilder,
};
pub use scb::Scb;
pub use spec::{
    ClientAuth, ConnectorSpec, Kind, RouteSpec, RoutingSpec, Secret, TokenSpec, BODY_CAP,
};

/// What a bank lookup is asked. Sources speaking our own v2 interface need the QR payload;
/// bank APIs need only the bank and reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlipQuery {
    pub payload: String,
    pub sending_bank: String,
    pub trans_ref: String,
}

impl SlipQuery {
    pub fn new(
        payload: impl Into<String>,
        sending_bank: impl Into<String>,
        trans_ref: impl Into<String>,
    ) -> Self {
        Self {
            payload: payload.into(),
            sending_bank: sending_bank.into(),
            trans_ref: trans_ref.into(),
        }
    }

    /// For callers that only hold (bank, reference), a payload in the banks' own layout is
    /// rebuilt so payload-speaking sources can still be asked. Empty when
    /// the values cannot fit a slip QR (the encoder would panic on them).
    pub fn from_reference(sending_bank: &str, trans_ref: &str) -> Self {
        // Tag 00 holds 3 sub-fields with 4-character headers and a 6-digit API id; max 99.
        let fits = 4 + 6 + 4 + sending_bank.len() + 4 + trans_ref.len() <= 99
            && sending_bank.len() <= 99
            && trans_ref.len() <= 99;
        let payload = if fits {
            slip_qr::encode_bank_slip(sending_bank, trans_ref)
        } else {
            String::new()
        };
        Self::new(payload, sending_bank, trans_ref)
    }
}

/// What a TrueMoney lookup is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletQuery {
    /// The slip QR payload when the caller has it; sources speaking our v2 interface need it.
    pub payload: Option<String>,
    pub transaction_id: String,
}

impl WalletQuery {
    pub fn new(payload: Option<String>, transaction_id: impl Into<String>) -> Self {
        Self {
            payload,
            transaction_id: transaction_id.into(),
        }
    }
}

/// Why a connector could not be reached, told to the operator as it is (never a secret).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[serde(transparent)]
#[error("{0}")]
pub struct CheckFailed(pub String);

impl From<String> for CheckFailed {
    fn from(s: String) -> Self {
        CheckFailed(s)
    }
}

impl From<&str> for CheckFailed {
    fn from(s: &str) -> Self {
        CheckFailed(s.to_string())
    }
}

/// One upstream source of slip facts.
#[async_trait]
pub trait Connector: Send + Sync + 'static {
    /// The kind's name as operators write it in config (`easyslip`, `sandbox`).
    fn kind(&self) -> &'static str;
    async fn lookup_bank(&self, q: &SlipQuery) -> Outcome<Transfer>;
    async fn lookup_wallet(&self, q: &WalletQuery) -> Outcome<WalletTransfer>;
    /// Reach the source (a token request where there is one); verifies no slip.
    async fn check(&self) -> Result<(), crate::CheckFailed>;
    /// Whether calls present a client certificate (mTLS), for `connectors check`.
    fn client_certificate(&self) -> bool {
        false
    }
}
