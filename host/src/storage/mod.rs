//! Storage behind one interface: SQLite embedded (the default), PostgreSQL hosted.
//!
//! A [`Backend`] opens one [`Txn`] per tool call. The transaction's methods are the WIT
//! `storage` interface, minus the agent check (done by [`crate::imports::storage`]), and
//! each keeps the agent's usage counters exact in the same statement batch, so no call ever
//! re-scans an agent's data to enforce a quota.

mod check;
mod postgres;
mod sqlite;

pub use check::{AgentStats, Counts, Verification};
pub use postgres::{DatabaseUrl, NotAUrl, Postgres};
pub use sqlite::{ImportError, LockError, Sqlite, StoreLock, Tally};

/// Operations on a whole SQLite store, for the command line.
pub mod admin {
    pub use super::sqlite::{Line, export, now, replace_store, stats, vacuum_into, verify};
}

/// Operations on a whole PostgreSQL database, for the command line.
pub mod pg_admin {
    pub use super::postgres::{stats, verify};
}

use crate::bindings::{
    FileMeta, FileState, LogEntry, LogState, LogValue, Retention, SearchMatch, StorageError, Usage,
};
use crate::gate::{Allowance, Rate};

/// What a tool call may do to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only reads: no write lock is taken, and the commit pays no fsync.
    Read,
    /// Writes: the write lock is taken at the start, and the commit is durable.
    Write,
}

impl Mode {
    /// Refuses `what`, a change, in a read call.
    fn allows_writes(self, what: &str) -> Result<(), StoreError> {
        match self {
            Mode::Write => Ok(()),
            Mode::Read => Err(StoreError::Refused(format!("{what} in a read-only call"))),
        }
    }
}

/// A summary written during a read call, stored after it: a read never waits for a writer
/// while the model thinks.
use scratchpad_store::rows::Summary as PendingSummary;

/// The host's check on a `put-summary` stored in a write call (a read call keeps its
/// summaries for after it): the version summarised must be kept, as `stored` says.
fn check_summary_stored(summary: &PendingSummary, stored: bool) -> Result<(), StoreError> {
    if stored {
        return Ok(());
    }
    Err(StoreError::Refused(format!(
        "put-summary for version {} of {:?}, which is not kept",
        summary.version, summary.path
    )))
}

/// The host's checks on a `put-version`: numbers only ever rise.
fn check_new_version(path: &str, version: u64, last: u64) -> Result<(), StoreError> {
    if version <= last {
        return Err(StoreError::Refused(format!(
            "version {version} of {path:?} is not above its last version {last}"
        )));
    }
    Ok(())
}

/// The host's checks on a `prune-versions`: the file has versions, and the current one stays.
fn check_prune(path: &str, keep_from: u64, current: Option<u64>) -> Result<(), StoreError> {
    let Some(current) = current else {
        return Err(StoreError::Refused(format!(
            "prune-versions of {path:?}, which has no versions"
        )));
    };
    if keep_from > current {
        return Err(StoreError::Refused(format!(
            "prune-versions below {keep_from} would drop the current version {current} of {path:?}"
        )));
    }
    Ok(())
}

/// An `append-log` entry as stored: whether it is text, its body, and its size, which must
/// be what the guest counted.
fn log_body(entry: &LogValue, bytes: u64) -> Result<(bool, &str, i64), StoreError> {
    let (is_text, body) = match entry {
        LogValue::Text(t) => (true, t.as_str()),
        LogValue::Json(j) => (false, j.as_str()),
    };
    if bytes != body.len() as u64 {
        return Err(StoreError::Refused(format!(
            "append-log counted {bytes} bytes for an entry of {} bytes",
            body.len()
        )));
    }
    Ok((is_text, body, to_i64(bytes)?))
}

/// A `logs` row (`last_id`, `entries`, `keep_last`, `max_age_seconds`) as `log-info`
/// answers it; a log with no row has given no id and keeps everything.
type LogRow = (i64, i64, Option<i64>, Option<i64>);

fn log_state(row: Option<LogRow>) -> LogState {
    let (last_id, entries, keep_last, max_age) = row.unwrap_or((0, 0, None, None));
    LogState {
        last_id: to_u64(last_id),
        entries: to_u64(entries),
        retention: Retention {
            keep_last: keep_last.map(to_u64),
            max_age_seconds: max_age.map(to_u64),
        },
    }
}

/// A stored count (databases keep signed integers) as the WIT's unsigned one.
fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A WIT number as a database integer, refused when it does not fit.
fn to_i64(v: u64) -> Result<i64, StoreError> {
    i64::try_from(v).map_err(|_| StoreError::Refused(format!("{v} is out of range")))
}

/// Why storage failed. What reaches a client is [`StoreError::to_wit`]: no paths, no SQL.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process held the write lock past the busy deadline.
    #[error("the store is busy: another process held it for more than {0} s")]
    Busy(u64),
    /// The disk is full.
    #[error("the disk or the store is full")]
    Full,
    /// The database file or its folder cannot be written.
    #[error("the store cannot be written (read-only file or folder)")]
    ReadOnly,
    /// The guest asked for something that breaks the store's invariants.
    #[error("refused: {0}")]
    Refused(String),
    /// The store could not be opened; the text may name a path and is for the operator only.
    #[error("cannot open the store at {path}: {reason}")]
    Open {
        /// Where the store was looked for.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A database server could not be reached; the driver's words (which may name a user or
    /// a database) are for the operator, never for a caller.
    #[error("cannot connect to PostgreSQL: {0}")]
    Unreachable(String),
    /// The database file is damaged: SQLite cannot read it as a database.
    #[error("the store's file is damaged: SQLite cannot read it as a database")]
    Damaged,
    /// Any other database failure, described in words by its code.
    #[error("database error: {0}")]
    Database(String),
}

impl StoreError {
    /// What went wrong, without the kind's prefix: for an error inside another's message.
    pub fn detail(&self) -> String {
        match self {
            StoreError::Database(m) | StoreError::Refused(m) => m.clone(),
            other => other.to_string(),
        }
    }

    /// The error as the guest (and then the client) sees it.
    pub fn to_wit(&self) -> StorageError {
        match self {
            StoreError::Busy(_) => StorageError::Busy,
            StoreError::Full => StorageError::Full,
            StoreError::ReadOnly => StorageError::ReadOnly,
            StoreError::Refused(m) => StorageError::Refused(m.clone()),
            StoreError::Open { .. } => StorageError::Other("the store cannot be opened".into()),
            StoreError::Damaged => StorageError::Other("the store's file is damaged".into()),
            StoreError::Unreachable(_) => StorageError::Other(
                "the database cannot be reached (the server's log says why)".into(),
            ),
            StoreError::Database(m) => StorageError::Other(m.clone()),
        }
    }
}

/// A store that can run tool calls as transactions.
pub trait Backend: Send + Sync {
    /// Starts the transaction of one tool call.
    fn begin(&self, mode: Mode) -> Result<Box<dyn Txn>, StoreError>;
    /// Existing files of `agents` (every agent when none), after `after` (agent, path) in
    /// (agent, path) order, at most `limit`: what a caller can attach as MCP resources.
    fn all_files(
        &self,
        agents: Option<&[String]>,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<(String, FileMeta)>, StoreError>;
    /// Takes one call from `agent`'s token bucket at `rate`, kept in the database so that
    /// every instance on it shares it; `None` where the backend keeps no buckets (the gate
    /// then keeps them in memory). Commits by itself, apart from any tool call.
    fn take_call(&self, _agent: &str, _rate: Rate) -> Option<Result<Allowance, StoreError>> {
        None
    }
}

/// One tool call's transaction. Dropping it without [`Txn::commit`] rolls it back.
pub trait Txn: Send {
    /// See `stat-file` in the WIT.
    fn stat_file(&mut self, agent: &str, path: &str) -> Result<Option<FileState>, StoreError>;
    /// See `read-version` in the WIT.
    fn read_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
    ) -> Result<Option<String>, StoreError>;
    /// See `put-version` in the WIT. Refuses a version number that is not above the last.
    fn put_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        content: &str,
    ) -> Result<(), StoreError>;
    /// See `prune-versions` in the WIT. Refuses to prune the current version.
    fn prune_versions(&mut self, agent: &str, path: &str, keep_from: u64)
    -> Result<(), StoreError>;
    /// See `delete-file` in the WIT.
    fn delete_file(&mut self, agent: &str, path: &str) -> Result<bool, StoreError>;
    /// See `list-files` in the WIT.
    fn list_files(&mut self, agent: &str, prefix: &str) -> Result<Vec<FileMeta>, StoreError>;
    /// See `append-log` in the WIT.
    fn append_log(
        &mut self,
        agent: &str,
        path: &str,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StoreError>;
    /// See `read-log` in the WIT.
    fn read_log(
        &mut self,
        agent: &str,
        path: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StoreError>;
    /// See `get-usage` in the WIT.
    fn usage(&mut self, agent: &str) -> Result<Usage, StoreError>;
    /// See `cached-summary` in the WIT.
    fn cached_summary(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StoreError>;
    /// See `put-summary` in the WIT. Refuses a version that is not kept.
    fn put_summary(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StoreError>;
    /// See `log-info` in the WIT.
    fn log_info(&mut self, agent: &str, path: &str) -> Result<LogState, StoreError>;
    /// See `set-log-retention` in the WIT.
    fn set_log_retention(
        &mut self,
        agent: &str,
        path: &str,
        retention: Retention,
    ) -> Result<(), StoreError>;
    /// See `trim-log` in the WIT. Usage counters follow.
    fn trim_log(
        &mut self,
        agent: &str,
        path: &str,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StoreError>;
    /// See `search` in the WIT.
    fn search(
        &mut self,
        agent: &str,
        terms: &[String],
        match_all: bool,
        prefix: &str,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StoreError>;
    /// Makes the call's changes durable and counts one operation for `agent`.
    fn commit(self: Box<Self>, agent: &str) -> Result<(), StoreError>;
}
