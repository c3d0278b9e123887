//! Storage: `SqlStore`, which speaks SQLite (the embedded default) or PostgreSQL (the scaled
//! store) with one SQL text per statement. SQL lives only here; each query is a method of
//! `SqlStore` in the file of its concern. Races are decided by the database:
//! duplicates by a primary key with `ON CONFLICT DO NOTHING`, quota by conditional `UPDATE`s in
//! one transaction.

mod accounts;
mod attempts;
mod audit;
mod billing;
mod branches;
mod charge;
mod idempotency;
mod jobs;
mod ledgers;
mod line;
mod migrate;
mod partners;
mod periodic;
mod plans;
mod quota_ops;
mod rows;
mod sandbox;
mod services;
mod sql;
mod sql_store;

use domain::{BranchId, JobId, Satang, ServiceId, UserId};
use time::OffsetDateTime;

pub use billing::{CreditMove, PeriodOutcome, PeriodStart};
pub use idempotency::{IdemBegin, IdemKey};
pub use periodic::{PeriodicClaim, PeriodicState};
pub use quota_ops::QuotaChange;
pub use sandbox::Space;
pub use sql_store::SqlStore;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A uniqueness rule refused the write (second main branch, same sandbox transfer...).
    #[error("conflict: {0}")]
    Conflict(&'static str),
    /// The service or the branch has no quota left; nothing was written.
    #[error("quota exceeded")]
    QuotaExceeded,
    #[error("unsupported database URL (use sqlite://FILE or postgres://...)")]
    BadUrl,
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    /// The write could not be completed (its batch failed, or the writer stopped).
    #[error("write failed: {0}")]
    WriteFailed(String),
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    /// The database file could not be created.
    #[error("database file: {0}")]
    Io(String),
}

impl From<StoreError> for domain::Error {
    // The location recorded is the `?` that converted the error: where the store was called.
    #[track_caller]
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::QuotaExceeded => domain::Error::QuotaExceeded,
            other => domain::Error::internal(other),
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// An audit entry, written in the transaction of the change it records.
#[derive(Debug, Clone)]
pub struct NewAudit<'a> {
    pub at: OffsetDateTime,
    /// `cli`, `admin-api`, `partner:<id>`, ...
    pub actor: &'a str,
    pub action: &'a str,
    pub service_id: Option<&'a ServiceId>,
    pub branch_id: Option<&'a BranchId>,
    /// JSON.
    pub detail: String,
}

/// A verified slip, recorded once per service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationRecord {
    pub service_id: ServiceId,
    pub branch_id: BranchId,
    pub sending_bank: String,
    pub trans_ref: String,
    pub amount: Satang,
    pub transferred_at: OffsetDateTime,
    pub verified_at: OffsetDateTime,
    /// The async job this verification belongs to: a job is charged at most once, however
    /// often it runs (a crashed worker's job runs again).
    pub job_id: Option<JobId>,
    /// The request's `Idempotency-Key` (of `branch_id`): charged at most once, like a job, so
    /// a retry after its node died between the charge and the answer is not charged again.
    pub idempotency_key: Option<String>,
    /// The transfer the bank or wallet confirmed (`verifications.transfer_json`); `None` for
    /// rows recorded before migration 0011.
    pub transfer: Option<domain::model::VerifiedTransfer>,
    /// Which connector confirmed it (`sandbox`, `sandbox-wallet`, ...); `None` before 0011.
    pub source: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChargeOutcome {
    /// True for exactly one verification of a slip within a service, whatever the concurrency.
    pub first_verification: bool,
    /// The charge's attempts-log record (`charge_and_log`) was committed with it.
    pub attempt_logged: bool,
}

/// Mutable service settings; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServicePatch {
    pub name: Option<String>,
    /// `Some(None)`: no limit.
    pub limit_quota: Option<Option<i64>>,
    pub state: Option<domain::model::ServiceState>,
    /// `Some(None)`: never expires.
    pub expires_at: Option<Option<OffsetDateTime>>,
    pub owner_id: Option<Option<UserId>>,
    pub plan: Option<String>,
    /// `Some(None)`: back to the plan's rate.
    pub rate_limit_rps: Option<Option<u32>>,
    pub owner_verified: Option<bool>,
}

/// Mutable branch settings; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BranchPatch {
    pub name: Option<String>,
    /// `Some(None)`: no branch limit (only the service's applies).
    pub limit_quota: Option<Option<i64>>,
    pub active: Option<bool>,
    pub allow_ips: Option<domain::ip::AllowList>,
    pub webhook_url: Option<Option<String>>,
    pub webhook_secret: Option<Option<String>>,
    /// `Some(None)`: no biller id.
    pub biller_id: Option<Option<String>>,
    /// A test branch: sandbox ledger, never charged, duplicates kept apart.
    pub sandbox: Option<bool>,
}

/// Opens the store named by a URL and applies its migrations.
pub async fn connect(url: &str) -> Result<SqlStore> {
    connect_with_pool(url, None).await
}

/// [`connect`] with `pool` connections (`None`: the backend's default).
pub async fn connect_with_pool(url: &str, pool: Option<u32>) -> Result<SqlStore> {
    let store = SqlStore::open(url, pool).await?;
    store.migrate().await?;
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::StoreError;

    /// A store error turned into an internal error by `?` is located at that `?`.
    #[test]
    fn internal_errors_point_at_the_question_mark() {
        fn call() -> std::result::Result<(), domain::Error> {
            Err(StoreError::Corrupt("row".into()))?;
            Ok(())
        }
        let line = line!() - 3;
        match call() {
            Err(domain::Error::Internal(i)) => {
                assert_eq!((i.at.file(), i.at.line()), (file!(), line));
                assert_eq!(i.detail, "stored data is invalid: row");
            }
            other => panic!("{other:?}"),
        }
    }
}
