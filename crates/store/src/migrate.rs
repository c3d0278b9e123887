//! A small migration runner. sqlx's `migrate!` macro would compile both database drivers a
//! second time for the proc-macro host; applying a list of embedded SQL files needs 40 lines.

pub(crate) struct Migration {
    pub version: i64,
    pub sql: &'static str,
}

pub(crate) const SQLITE: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("../migrations/sqlite/0001_init.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("../migrations/sqlite/0002_accounts_and_cycles.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("../migrations/sqlite/0003_partners_and_audit.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("../migrations/sqlite/0004_rate_limits.sql"),
    },
    Migration {
        version: 5,
        sql: include_str!("../migrations/sqlite/0005_key_grace.sql"),
    },
];

pub(crate) const POSTGRES: &[Migration] = &[
    Migration {
        version: 1,
        sql: include_str!("../migrations/postgres/0001_init.sql"),
    },
    Migration {
        version: 2,
        sql: include_str!("../migrations/postgres/0002_accounts_and_cycles.sql"),
    },
    Migration {
        version: 3,
        sql: include_str!("../migrations/postgres/0003_partners_and_audit.sql"),
    },
    Migration {
        version: 4,
        sql: include_str!("../migrations/postgres/0004_rate_limits.sql"),
    },
    Migration {
        version: 5,
        sql: include_str!("../migrations/postgres/0005_key_grace.sql"),
    },
];

pub(crate) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations \
     (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)";

/// Serialises nodes that start at once on one PostgreSQL (arbitrary constant key).
pub(crate) const PG_LOCK_KEY: i64 = 0x5117_5e41;
