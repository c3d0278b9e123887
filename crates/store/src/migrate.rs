//! A small migration runner. sqlx's `migrate!` macro would compile both database drivers a
//! second time for the proc-macro host; applying a list of embedded SQL files needs 40 lines.
//!
//! Each version is written once, for both backends: `migrations/NNNN_*.sql` in PostgreSQL's
//! spelling, which SQLite runs through [`sqlite_spelling`]. Where the dialects really differ
//! (functions, trigram indexes, JSON), each backend's own part is
//! `migrations/<backend>/NNNN_*.sql`, put in at the shared file's `-- @own-part` line so the
//! statements run in the order they are written. The runner records only the version, so the
//! text of an applied version may change as long as the schema it builds does not.

/// The line of a shared file where each backend's own part goes.
const OWN_PART: &str = "-- @own-part\n";

/// PostgreSQL's words that SQLite lacks, and SQLite's for them. SQLite takes the rest of the
/// shared files as written: `TRUE`/`FALSE`, a bare boolean column in `WHERE`, `BIGINT`.
const SQLITE_WORDS: [(&str, &str); 2] = [
    // A key from a sequence, never reused: AUTOINCREMENT on the rowid does the same.
    ("BIGSERIAL PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"),
    // SQLite has no table outside its WAL.
    ("CREATE UNLOGGED TABLE", "CREATE TABLE"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    Postgres,
    Sqlite,
}

pub(crate) struct Migration {
    pub version: i64,
    /// Both backends' part ("" where a version is one backend's alone).
    shared: &'static str,
    /// Each backend's own part, "" where it has none.
    postgres: &'static str,
    sqlite: &'static str,
}

impl Migration {
    const NONE: Migration = Migration {
        version: 0,
        shared: "",
        postgres: "",
        sqlite: "",
    };

    /// The SQL `backend` runs for this version ("" when it has nothing to do).
    pub fn sql(&self, backend: Backend) -> String {
        let own = match backend {
            Backend::Postgres => self.postgres,
            Backend::Sqlite => self.sqlite,
        };
        let sql = match self.shared {
            "" => own.to_owned(),
            shared => shared.replacen(OWN_PART, own, 1),
        };
        match backend {
            Backend::Postgres => sql,
            Backend::Sqlite => sqlite_spelling(&sql),
        }
    }
}

/// The shared SQL in SQLite's words.
pub(crate) fn sqlite_spelling(sql: &str) -> String {
    SQLITE_WORDS
        .iter()
        .fold(sql.to_owned(), |sql, (pg, lite)| sql.replace(pg, lite))
}

macro_rules! part {
    (shared, $file:literal) => {
        include_str!(concat!("../migrations/", $file))
    };
    (postgres, $file:literal) => {
        include_str!(concat!("../migrations/postgres/", $file))
    };
    (sqlite, $file:literal) => {
        include_str!(concat!("../migrations/sqlite/", $file))
    };
}

/// Each version's file name and the parts it has.
macro_rules! migrations {
    ($($version:literal => $file:literal: $($part:ident)+),+ $(,)?) => {
        &[$(Migration {
            version: $version,
            $($part: part!($part, $file),)+
            ..Migration::NONE
        }),+]
    };
}

// `..Migration::NONE` fills the parts a version lacks; it is idle for those that have all three.
#[allow(clippy::needless_update)]
pub(crate) const ALL: &[Migration] = migrations![
    1 => "0001_init.sql": shared,
    2 => "0002_accounts_and_cycles.sql": shared,
    3 => "0003_partners_and_audit.sql": shared,
    4 => "0004_rate_limits.sql": shared,
    5 => "0005_key_grace.sql": shared,
    6 => "0006_jobs.sql": shared,
    7 => "0007_bank_accounts.sql": shared,
    8 => "0008_wallet.sql": shared,
    9 => "0009_owner_verified_biller.sql": shared,
    10 => "0010_billing.sql": shared postgres sqlite,
    11 => "0011_stored_transfer_and_default_burst.sql": shared,
    12 => "0012_test_branches.sql": shared,
    13 => "0013_idempotency_keys.sql": shared,
    14 => "0014_attempts.sql": shared postgres sqlite,
    15 => "0015_job_kinds.sql": shared postgres sqlite,
    16 => "0016_line.sql": shared,
    // SQLite's trigram index filled in batches; PostgreSQL's GIN index stays as it is.
    17 => "0017_attempt_refs_deferred.sql": sqlite,
    18 => "0018_attempts_inbox.sql": shared postgres sqlite,
];

pub(crate) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations \
     (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)";

/// Serialises nodes that start at once on one PostgreSQL (arbitrary constant key).
pub(crate) const PG_LOCK_KEY: i64 = 0x5117_5e41;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_spelling_replaces_postgres_words_only() {
        assert_eq!(
            sqlite_spelling(
                "CREATE UNLOGGED TABLE t (seq BIGSERIAL PRIMARY KEY, on BOOLEAN DEFAULT FALSE);"
            ),
            "CREATE TABLE t (seq INTEGER PRIMARY KEY AUTOINCREMENT, on BOOLEAN DEFAULT FALSE);"
        );
    }

    /// A file the list does not name would never run.
    #[test]
    fn every_file_is_in_the_list() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        for (dir, part) in [
            ("", (|m| m.shared) as fn(&Migration) -> &str),
            ("postgres", |m| m.postgres),
            ("sqlite", |m| m.sqlite),
        ] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let listed = ALL.iter().any(|m| !part(m).is_empty() && part(m) == text);
                assert!(listed, "{} is not in migrate::ALL", path.display());
            }
        }
    }

    #[test]
    fn every_sqlite_word_is_used() {
        for (pg, _) in SQLITE_WORDS {
            assert!(ALL.iter().any(|m| m.shared.contains(pg)), "{pg} is unused");
        }
    }

    #[test]
    fn versions_run_from_one_without_a_gap() {
        for (i, m) in ALL.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1);
        }
    }

    /// An own part has one place in its shared file, so no statement is lost or out of order.
    #[test]
    fn own_parts_have_their_place() {
        for m in ALL {
            let places = m.shared.matches(OWN_PART).count();
            let own = !m.postgres.is_empty() || !m.sqlite.is_empty();
            let expected = usize::from(own && !m.shared.is_empty());
            assert_eq!(places, expected, "version {}", m.version);
            for backend in [Backend::Postgres, Backend::Sqlite] {
                assert!(
                    !m.sql(backend).contains("@own-part"),
                    "version {}",
                    m.version
                );
            }
        }
    }

    #[test]
    fn a_backend_runs_the_shared_part_around_its_own() {
        let m = &ALL[14];
        assert_eq!(m.version, 15);
        let sqlite = m.sql(Backend::Sqlite);
        let (own, drop) = (
            sqlite.find("json_object(").unwrap(),
            sqlite.find("DROP COLUMN payload").unwrap(),
        );
        assert!(sqlite.find("ADD COLUMN data").unwrap() < own && own < drop);
        assert!(m.sql(Backend::Postgres).contains("json_build_object("));
        assert!(!sqlite.contains("json_build_object("));
    }
}
