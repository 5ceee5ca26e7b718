//! The SQLite store of scratchpad-mcp: its schema and every statement that reads or writes
//! it, in one crate that builds natively (the server's default backend) and for
//! `wasm32-wasip2` (inside the self-contained component, SQLite's C compiled to wasm).
//!
//! Why one crate: a store the component writes must be a store the server serves, and the
//! other way round. Keeping the statements here, once, makes that a fact of the build
//! rather than a promise kept by two copies.
//!
//! What is *not* here: how connections are opened, pooled, locked and made durable (the
//! server's WAL and pool, the component's single connection and lease differ, because
//! WASI has no file locks or shared memory), and the host's checks on what an untrusted
//! guest asks for. Every function takes a connection inside a transaction the caller owns.
//!
//! Map:
//! - [`schema`]: the tables and [`schema::migrate`].
//! - [`rows`]: files, versions, summaries and the agents' usage counters.
//! - [`logs`]: the per-log row (last id, entry count, retention) and trimming.
//! - [`index`]: the FTS5 index behind `search`, in a file of its own beside the store.
//! - [`pages`]: the checksum in every page of a store, and the VFS that writes and checks it.
//! - [`storage`]: all of it as the guest's `Storage` port, for the self-contained component.

pub mod index;
pub mod logs;
pub mod pages;
pub mod rows;
pub mod schema;
pub mod storage;

pub use rusqlite;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode};

/// Why a statement failed, by SQLite's code: never the SQL text.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another connection held the lock past the busy timeout.
    #[error("the store is busy")]
    Busy,
    /// The disk or the store is full.
    #[error("the disk or the store is full")]
    Full,
    /// The database file or its folder cannot be written.
    #[error("the store cannot be written (read-only file or folder)")]
    ReadOnly,
    /// SQLite cannot read the file as a database, or a page of it no longer holds its
    /// checksum ([`pages`]).
    #[error("the store's file is damaged: SQLite cannot read it as a database")]
    Damaged,
    /// A number does not fit the database's signed integers.
    #[error("{0} is out of range")]
    OutOfRange(u64),
    /// The store was written by a newer build.
    #[error(
        "the store has schema version {found}, newer than this build's {}; upgrade scratchpad-mcp",
        schema::SCHEMA_VERSION
    )]
    TooNew {
        /// The version the file has.
        found: i64,
    },
    /// Any other failure: `words` say what went wrong for a caller; `detail` is SQLite's own
    /// message, for an operator's log only.
    #[error("{words}")]
    Database {
        /// The failure in words.
        words: &'static str,
        /// SQLite's message.
        detail: String,
    },
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        if e.sqlite_error()
            .is_some_and(|f| f.extended_code == rusqlite::ffi::SQLITE_IOERR_DATA)
        {
            return Error::Damaged;
        }
        let Some(code) = e.sqlite_error_code() else {
            return Error::Database {
                words: "unexpected result from the database",
                detail: e.to_string(),
            };
        };
        match code {
            ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => Error::Busy,
            ErrorCode::DiskFull => Error::Full,
            ErrorCode::ReadOnly => Error::ReadOnly,
            ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase => Error::Damaged,
            code => Error::Database {
                words: in_words(code),
                detail: e.to_string(),
            },
        }
    }
}

/// An SQLite error code as a caller reads it: what went wrong, never a type name.
fn in_words(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::CannotOpen => "the database file or its journal cannot be opened",
        ErrorCode::PermissionDenied => "permission to the database file was denied",
        ErrorCode::OutOfMemory => "the database ran out of memory",
        ErrorCode::SystemIoFailure => "reading or writing the database file failed",
        ErrorCode::FileLockingProtocolFailed => "the database file could not be locked",
        ErrorCode::SchemaChanged => "the database's schema changed during the call",
        ErrorCode::TooBig => "a value was too large for the database",
        ErrorCode::ConstraintViolation => "a row broke one of the database's constraints",
        ErrorCode::NoLargeFileSupport => "the file system cannot hold a database this large",
        ErrorCode::OperationInterrupted | ErrorCode::OperationAborted => {
            "the database stopped the operation"
        }
        _ => "the database reported an error",
    }
}

/// RFC 3339 in UTC with milliseconds, from SQLite's clock: every timestamp the store keeps.
pub const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// A stored count (SQLite keeps signed integers) as the WIT's unsigned one.
pub fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A WIT number as a database integer, refused when it does not fit.
pub fn to_i64(v: u64) -> Result<i64, Error> {
    i64::try_from(v).map_err(|_| Error::OutOfRange(v))
}

/// How many prepared statements a connection keeps: room for all a store connection runs
/// (about 25, and the transactions' own, [`control`]); the index's per-agent statements
/// beyond that, with many agents, take turns.
const STATEMENTS_KEPT: usize = 32;

/// Readies a connection for the statements here, which every call runs again: room to keep
/// each one prepared, and SQLite's query planner stability guarantee, so that a bound value
/// never makes it plan a statement again. Without the guarantee SQLite prepares a join afresh
/// at each step when its parameters might change the plan: every `read_version` was parsed
/// and planned again, in every call that read a file.
pub fn keep_statements(conn: &Connection) -> Result<(), Error> {
    conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// Runs `sql`, a statement that takes no values and answers no rows (`BEGIN`, `COMMIT`,
/// `ROLLBACK`), from the connection's kept statements ([`keep_statements`]): every call runs
/// two or three of them, and `execute_batch` would parse each one again every time.
pub fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// What the store runs again and again, a join with parameters among it, is prepared
    /// once: no step prepares it again.
    #[test]
    fn a_statement_run_again_is_not_prepared_again() {
        let conn = Connection::open_in_memory().unwrap();
        keep_statements(&conn).unwrap();
        schema::migrate(&conn).unwrap();
        let pending = rows::Pending::default();
        rows::put_version(&conn, &pending, "a", "f", 1, "one", false).unwrap();
        rows::put_version(&conn, &pending, "a", "f", 2, "two", true).unwrap();
        for version in [1, 2, 1, 2] {
            assert!(
                rows::read_version(&conn, "a", "f", version)
                    .unwrap()
                    .is_some()
            );
        }
        let statement = conn.prepare_cached(rows::READ_VERSION).unwrap();
        assert_eq!(statement.get_status(StatementStatus::Run), 4);
        assert_eq!(statement.get_status(StatementStatus::RePrepare), 0);
    }

    /// A stat of a file, which every read and write makes, reads its versions from an index
    /// and no version's row: reaching the time and hash in a row means walking the content's
    /// overflow pages first, all of a large file's kept versions at every call. So in a new
    /// store, and in one of schema 6, which had no such index, once it is opened.
    #[test]
    fn a_stat_reads_no_content() {
        for upgraded in [false, true] {
            let conn = Connection::open_in_memory().unwrap();
            schema::migrate(&conn).unwrap();
            let big = "x".repeat(1 << 16);
            let pending = rows::Pending::default();
            for version in 1..=3 {
                rows::put_version(&conn, &pending, "a", "f", version, &big, version > 1).unwrap();
            }
            if upgraded {
                conn.execute_batch("DROP INDEX versions_meta; PRAGMA user_version = 6;")
                    .unwrap();
                schema::migrate(&conn).unwrap();
            }
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", rows::STAT_FILE))
                .unwrap()
                .query_map(rusqlite::params!["a", "f"], |r| r.get(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter()
                    .any(|step| step.contains("SEARCH v USING COVERING INDEX versions_meta")),
                "upgraded: {upgraded}, {plan:?}"
            );
            let state = rows::stat_file(&conn, "a", "f").unwrap().unwrap();
            let kept: Vec<u64> = state.kept.iter().map(|v| v.version).collect();
            assert_eq!((state.last_version, kept), (3, vec![1, 2, 3]));
        }
    }
}
