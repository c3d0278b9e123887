//! Storage: one `Store` trait, one implementation that speaks SQLite (the embedded default) or
//! PostgreSQL (the scaled store). SQL lives only here. Races are decided by the database:
//! duplicates by a primary key with `ON CONFLICT DO NOTHING`, quota by conditional `UPDATE`s in
//! one transaction.

mod accounts;
mod attempts;
mod billing;
mod charge;
mod idempotency;
mod jobs;
mod line;
mod migrate;
mod periodic;
mod quota_ops;
mod sandbox;
mod sql;

use async_trait::async_trait;
use domain::model::{AuditEntry, Branch, Partner, Plan, Service, Transfer, User};
use domain::quota::{QuotaOp, QuotaOpError};
use domain::rate::{Decision, Gcra};
use domain::{BankAccountId, BranchId, JobId, PartnerId, Satang, ServiceId, UserId};
use time::OffsetDateTime;

pub use billing::{PeriodOutcome, PeriodStart};
pub use idempotency::{IdemBegin, IdemKey};
pub use periodic::{PeriodicClaim, PeriodicState};
pub use sql::SqlStore;

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

#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Which backend this is, for logs and `/health`.
    fn backend(&self) -> &'static str;

    async fn create_service(&self, s: &Service) -> Result<()>;
    async fn get_service(&self, id: &ServiceId) -> Result<Option<Service>>;
    async fn find_service_by_name(&self, name: &str) -> Result<Option<Service>>;
    /// Returns the updated service, or `None` if it does not exist.
    async fn update_service(&self, id: &ServiceId, patch: &ServicePatch)
        -> Result<Option<Service>>;

    async fn create_user(&self, u: &User) -> Result<()>;
    async fn get_user(&self, id: &UserId) -> Result<Option<User>>;
    /// False if no such user.
    async fn set_user_banned(&self, id: &UserId, banned: bool) -> Result<bool>;

    /// Fails with `Conflict` for a second main branch of a service or a reused key hash.
    async fn create_branch(&self, b: &Branch, api_key_hash: &str) -> Result<()>;
    async fn get_branch(&self, id: &BranchId) -> Result<Option<Branch>>;
    async fn list_branches(&self, service_id: &ServiceId) -> Result<Vec<Branch>>;
    /// Returns the updated branch, or `None` if it does not exist.
    async fn update_branch(&self, id: &BranchId, patch: &BranchPatch) -> Result<Option<Branch>>;
    /// Replaces the key hash. The old key stops working at once, or at `keep_old_until`.
    /// False if no such branch.
    async fn set_api_key_hash(
        &self,
        branch_id: &BranchId,
        hash: &str,
        keep_old_until: Option<OffsetDateTime>,
    ) -> Result<bool>;
    /// The branch owning a key hash (its current key, or its previous one still in its grace
    /// period at `now`), with its service: the one look-up of authentication.
    async fn find_by_api_key_hash(
        &self,
        hash: &str,
        now: OffsetDateTime,
    ) -> Result<Option<(Service, Branch)>>;

    /// Charges one unit to the service and the branch and records the slip, atomically.
    /// `QuotaExceeded` when either has no room; then nothing is charged or recorded.
    async fn charge_and_record(&self, rec: &VerificationRecord) -> Result<ChargeOutcome>;

    /// `charge_and_record`, and when the charge is granted, the request's attempts-log record
    /// (`draft` finished with the charge's first-verification flag) in the same transaction
    /// (`ChargeOutcome::attempt_logged`). A refused charge logs nothing.
    async fn charge_and_log(
        &self,
        rec: &VerificationRecord,
        draft: domain::attempt::AttemptDraft,
    ) -> Result<ChargeOutcome>;

    /// Applies a quota operation to a branch, deciding on its counters as they stand in the
    /// current cycle (at `now`) with the rows locked, and records it in the audit log in the
    /// same transaction. `Ok(Err(..))`: refused, nothing changed. `None`: no such branch.
    async fn modify_branch_quota(
        &self,
        branch_id: &BranchId,
        op: QuotaOp,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<Option<Result<(Service, Branch), QuotaOpError>>>;
    async fn list_audit(&self, branch_id: &BranchId) -> Result<Vec<AuditEntry>>;

    /// Fails with `Conflict` if the key hash exists.
    async fn create_partner(&self, p: &Partner, api_key_hash: &str) -> Result<()>;
    async fn find_partner_by_key_hash(&self, hash: &str) -> Result<Option<Partner>>;
    /// True the first time a partner uses a nonce; forgets nonces older than `forget_before`.
    async fn use_nonce(
        &self,
        partner_id: &PartnerId,
        nonce: &str,
        now: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<bool>;

    /// Creates or changes a plan.
    async fn upsert_plan(&self, plan: &Plan) -> Result<()>;
    async fn list_plans(&self) -> Result<Vec<Plan>>;
    /// Takes one request from a branch's allowance (GCRA state shared through the database).
    async fn rate_take(&self, branch_id: &BranchId, limit: &Gcra, now_us: i64) -> Result<Decision>;

    /// `Conflict` when the service already has an active account with this bank and number.
    async fn create_bank_account(&self, a: &domain::model::BankAccount) -> Result<()>;
    /// Active accounts of a branch, oldest first.
    async fn list_bank_accounts(
        &self,
        branch_id: &BranchId,
    ) -> Result<Vec<domain::model::BankAccount>>;
    /// An active account, only if it belongs to the branch.
    async fn get_bank_account(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
    ) -> Result<Option<domain::model::BankAccount>>;
    /// False if the branch has no such active account.
    async fn set_bank_account_extra_verify(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
        extra: Option<&str>,
    ) -> Result<bool>;
    /// Deactivates; false if the branch has no such active account.
    async fn delete_bank_account(
        &self,
        branch_id: &BranchId,
        id: &BankAccountId,
        now: OffsetDateTime,
    ) -> Result<bool>;

    /// The recorded (first) verification of a slip in a service, if any.
    async fn get_verification(
        &self,
        service_id: &ServiceId,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>>;

    /// Records a test branch's verification in the test space (`sandbox_verifications`),
    /// charging nothing; `first_verification` is true for exactly one test verification of a
    /// slip within a service. A job is counted once however often it runs. Production's
    /// `verifications` is neither read nor written.
    async fn record_sandbox_verification(&self, rec: &VerificationRecord) -> Result<ChargeOutcome>;
    /// The first test verification of a slip in a service, if any.
    async fn get_sandbox_verification(
        &self,
        service_id: &ServiceId,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>>;
    /// Test verifications (duplicates included, ever) of the service and of the branch.
    async fn sandbox_used(
        &self,
        service_id: &ServiceId,
        branch_id: &BranchId,
    ) -> Result<(i64, i64)>;

    /// `Idempotency-Key`: forgets this key if it was first used before `forget_before`, then
    /// claims it for this request (lease until `lease_until`) or says why not (`IdemBegin`).
    async fn idempotency_begin(
        &self,
        key: &IdemKey<'_>,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<IdemBegin>;
    /// Stores a request's answer under its key (`Some`), or gives the key's lease back
    /// (`None`, a 5xx: nothing stored, a retry runs again).
    async fn idempotency_finish(
        &self,
        branch_id: &BranchId,
        key: &str,
        answer: Option<(u16, &str)>,
    ) -> Result<()>;

    /// Forgets every `Idempotency-Key` first used before `forget_before`; how many.
    async fn sweep_idempotency_keys(&self, forget_before: OffsetDateTime) -> Result<u64>;

    /// Inserts submitted jobs (of any kind) in one transaction: all of a batch or none; a job
    /// whose id exists is skipped.
    async fn insert_jobs(&self, jobs: &[domain::job::Job]) -> Result<()>;
    /// `insert_jobs` with the audit entry of the operation that made them, in one transaction.
    async fn insert_jobs_audited(
        &self,
        jobs: &[domain::job::Job],
        audit: &NewAudit<'_>,
    ) -> Result<()>;
    /// Claims up to `limit` jobs due at `now` for a lease until `lease_until`, stamped with
    /// `token`. Several nodes claiming at once never get the same job (PostgreSQL: `FOR
    /// UPDATE SKIP LOCKED`; SQLite: one writer).
    async fn claim_jobs(
        &self,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
        token: &str,
        limit: u32,
    ) -> Result<Vec<domain::job::Job>>;
    /// Writes a claimed job back and ends its lease; false if `token` no longer holds it
    /// (the lease ran out and another worker took the job): then nothing is written.
    async fn save_job(&self, job: &domain::job::Job, token: &str) -> Result<bool>;
    /// Hands back every job claimed with `token`, due at `now` (graceful shutdown).
    async fn release_jobs(&self, token: &str, now: OffsetDateTime) -> Result<u64>;
    async fn get_job(&self, id: &JobId) -> Result<Option<domain::job::Job>>;
    /// Deletes finished jobs whose retention ended before `now`.
    async fn sweep_jobs(&self, now: OffsetDateTime) -> Result<u64>;
    /// Jobs per (kind, status).
    async fn job_counts(&self) -> Result<Vec<(String, String, i64)>>;

    /// Periodic jobs: claims period `period_start` (ms since the epoch) of job `name` for
    /// `holder` until `lease_until`, if that period has not run and nobody holds a live lease
    /// (the database decides between nodes).
    async fn claim_periodic(
        &self,
        name: &str,
        period_start: i64,
        holder: &str,
        now: OffsetDateTime,
        lease_until: OffsetDateTime,
    ) -> Result<PeriodicClaim>;
    /// Moves the holder's lease out; false if it lost it.
    async fn renew_periodic(
        &self,
        name: &str,
        holder: &str,
        lease_until: OffsetDateTime,
    ) -> Result<bool>;
    /// Ends the holder's run (`done`: its period has run; else due again from `not_before`);
    /// false if it had lost its lease.
    #[allow(clippy::too_many_arguments)]
    async fn finish_periodic(
        &self,
        name: &str,
        holder: &str,
        done: bool,
        now: OffsetDateTime,
        not_before: OffsetDateTime,
        outcome: &str,
    ) -> Result<bool>;
    /// Every periodic job's row.
    async fn periodic_jobs(&self) -> Result<Vec<PeriodicState>>;

    /// Creates a package, or changes the terms of the one with this name; returns it as
    /// stored (an existing package keeps its id).
    async fn upsert_package(
        &self,
        p: &domain::billing::Package,
    ) -> Result<domain::billing::Package>;
    async fn list_packages(&self) -> Result<Vec<domain::billing::Package>>;
    /// By id or by name.
    async fn get_package(&self, key: &str) -> Result<Option<domain::billing::Package>>;
    /// Starts a period (subscription or renewal) atomically with the service row locked:
    /// re-checks a renewal is still due, draws `Payment::Ledger` credit (never below zero),
    /// resets the quota and cycle, and audits it. See `billing`.
    async fn start_period(
        &self,
        service_id: &ServiceId,
        start: &PeriodStart,
        payment: Option<&domain::billing::Payment>,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<PeriodOutcome>;
    /// Moves credit (negative draws) with a ledger row. `None`: no such service;
    /// `Some(Err(()))`: it would leave a negative balance, nothing moved.
    async fn move_credit(
        &self,
        service_id: &ServiceId,
        kind: domain::billing::CreditKind,
        amount: i64,
        note: Option<&str>,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<Option<std::result::Result<domain::billing::LedgerEntry, ()>>>;
    /// The service's credit ledger, oldest first.
    async fn credit_history(
        &self,
        service_id: &ServiceId,
    ) -> Result<Vec<domain::billing::LedgerEntry>>;
    /// False if no such service.
    async fn set_auto_renew(
        &self,
        service_id: &ServiceId,
        auto: domain::billing::AutoRenew,
        now: OffsetDateTime,
        actor: &str,
    ) -> Result<bool>;
    /// Audit entries about a service as a whole (subscriptions, renewals, auto-renew).
    async fn list_service_audit(&self, service_id: &ServiceId) -> Result<Vec<AuditEntry>>;

    /// Sandbox wallet ledger. `Conflict` if the transaction id exists.
    async fn insert_wallet_transfer(&self, t: &domain::model::WalletTransfer) -> Result<()>;
    async fn get_wallet_transfer(
        &self,
        transaction_id: &str,
    ) -> Result<Option<domain::model::WalletTransfer>>;

    /// Records one verification attempt; returns once it is committed (group-committed with
    /// other requests' records).
    async fn log_attempt(&self, a: &domain::attempt::Attempt) -> Result<()>;
    /// Inserts records in one transaction, without the writer (bulk loads, benchmarks).
    async fn insert_attempts(&self, rows: &[domain::attempt::Attempt]) -> Result<()>;
    /// The attempts matching the query, newest first.
    async fn search_attempts(
        &self,
        q: &domain::attempt::AttemptQuery,
    ) -> Result<Vec<domain::attempt::AttemptRow>>;
    /// Every record, counted (the search benchmark's reference: one pass over the table).
    async fn count_attempts(&self) -> Result<i64>;
    /// Deletes the attempts older than `before`; how many.
    async fn purge_attempts(&self, before: OffsetDateTime) -> Result<u64>;
    /// Blanks the personal fields of transfers verified before `before`; how many.
    async fn blank_personal_data(&self, before: OffsetDateTime, now: OffsetDateTime)
        -> Result<u64>;

    /// A branch's LINE settings (`None`: never set).
    async fn get_line_settings(
        &self,
        branch: &BranchId,
    ) -> Result<Option<domain::line::LineSettings>>;
    /// Applies a patch to a branch's LINE settings; the result.
    async fn set_line_settings(
        &self,
        branch: &BranchId,
        patch: &domain::line::LinePatch,
    ) -> Result<domain::line::LineSettings>;
    /// True the first time a LINE webhook event is taken within 24 h (`forget_before`).
    async fn claim_line_event(
        &self,
        branch: &BranchId,
        event_id: &str,
        now: OffsetDateTime,
        forget_before: OffsetDateTime,
    ) -> Result<bool>;
    /// One push from the branch's allowance for a Thai day; false when used up.
    async fn take_line_push(&self, branch: &BranchId, day: &str, limit: u32) -> Result<bool>;
    /// Forgets LINE event records older than `before` (at most a chunk); how many.
    async fn sweep_line_events(&self, before: OffsetDateTime) -> Result<u64>;

    /// Sandbox bank ledger. `Conflict` if (sending bank, reference) exists.
    async fn insert_sandbox_transfer(&self, t: &Transfer) -> Result<()>;
    async fn get_sandbox_transfer(
        &self,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<Transfer>>;
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
