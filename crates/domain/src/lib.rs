//! The pure core of slipverify: the error model, the records the service works with,
//! money, clocks, IP allow-lists, API-key hashing and quota arithmetic. No I/O here.

pub mod apikey;
pub mod attempt;
pub mod billing;
pub mod clock;
pub mod cycle;
pub mod error;
pub mod ids;
pub mod ip;
pub mod job;
pub mod line;
pub mod matching;
pub mod model;
pub mod money;
pub mod partner;
pub mod quota;
pub mod rate;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Error, FieldError, Internal, Validation};
pub use ids::{BankAccountId, BatchId, BranchId, JobId, PackageId, PartnerId, ServiceId, UserId};
pub use money::Satang;
