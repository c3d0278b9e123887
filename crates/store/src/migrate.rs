//! A small migration runner. sqlx's `migrate!` macro would compile both database drivers a
//! second time for the proc-macro host; applying a list of embedded SQL files needs 40 lines.

pub(crate) struct Migration {
    pub version: i64,
    pub sql: &'static str,
}

/// One list of migration files for both backends, so they cannot drift apart: each backend
/// has its own SQL for every version, in `migrations/<backend>/`.
macro_rules! migrations {
    ($dir:literal: $($version:literal => $file:literal),+ $(,)?) => {
        &[$(Migration {
            version: $version,
            sql: include_str!(concat!("../migrations/", $dir, "/", $file)),
        }),+]
    };
}

macro_rules! for_backend {
    ($dir:literal) => {
        migrations!($dir:
            1 => "0001_init.sql",
            2 => "0002_accounts_and_cycles.sql",
            3 => "0003_partners_and_audit.sql",
            4 => "0004_rate_limits.sql",
            5 => "0005_key_grace.sql",
            6 => "0006_jobs.sql",
            7 => "0007_bank_accounts.sql",
            8 => "0008_wallet.sql",
            9 => "0009_owner_verified_biller.sql",
            10 => "0010_billing.sql",
            11 => "0011_stored_transfer_and_default_burst.sql",
            12 => "0012_test_branches.sql",
            13 => "0013_idempotency_keys.sql",
            14 => "0014_attempts.sql",
            15 => "0015_job_kinds.sql",
            16 => "0016_line.sql",
            17 => "0017_attempt_refs_deferred.sql",
            18 => "0018_attempts_inbox.sql",
        )
    };
}

pub(crate) const SQLITE: &[Migration] = for_backend!("sqlite");
pub(crate) const POSTGRES: &[Migration] = for_backend!("postgres");

pub(crate) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations \
     (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)";

/// Serialises nodes that start at once on one PostgreSQL (arbitrary constant key).
pub(crate) const PG_LOCK_KEY: i64 = 0x5117_5e41;
