//! Storage behind one interface: SQLite embedded (the default), PostgreSQL hosted.
//!
//! A [`Backend`] opens one [`Txn`] per tool call. A transaction only persists: it is the
//! guest's [`Storage`](scratchpad_guest::Storage) port without any of the contract's checks,
//! which [`crate::guard::Guard`] makes in front of it (the integration tests hold each
//! backend, through the guard, to the contract's one suite). Each method keeps the agent's
//! usage counters exact in the same statement batch, so no call ever re-scans an agent's data
//! to enforce a quota.

mod check;
mod postgres;
mod sqlite;
mod uncounted;

pub use check::{AgentStats, Counts, Verification};
pub use postgres::{DatabaseUrl, NotAUrl, Postgres};
pub use sqlite::{ImportError, LockError, Sqlite, StoreLock, Tally, read_header};

/// Operations on a whole SQLite store, for the command line.
pub mod admin {
    pub use super::sqlite::{Line, export, now, replace_store, stats, vacuum_into, verify};
}

/// Operations on a whole PostgreSQL database, for the command line.
pub mod pg_admin {
    pub use super::postgres::{stats, verify};
}

use crate::rate::{Allowance, Rate};
use scratchpad_guest::{FileMeta, LimitOverrides, Storage, StorageError};

/// What a tool call may do to the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only reads: no write lock is taken, and the commit pays no fsync.
    Read,
    /// Writes: no other call changes the agent's data between the call's first read and its
    /// commit, and the commit is durable.
    Write,
}

/// A summary written during a read call, stored after it: a read never waits for a writer
/// while the model thinks.
use scratchpad_store::rows::Summary as PendingSummary;

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
    /// Another process changed the agent's data after the call read it and before it could
    /// take the write lock, or since this process last wrote it and remembered what it left:
    /// nothing was written, and the call runs again.
    #[error("another process changed this agent's data during the call")]
    Stale,
    /// The connection to the database server was lost: the server restarted or ended it, or
    /// the network dropped it. The server rolled back what the call had not committed; a
    /// call that lost it before its commit runs again on a new connection.
    #[error("the connection to PostgreSQL was lost; retry")]
    Lost,
    /// The commit was made or sent, but whether it took effect, or will survive a crash, is
    /// not known: the words say which. Never "nothing was changed".
    #[error("{0}")]
    Unconfirmed(&'static str),
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
}

/// The error as the guest (and then the client) sees it; what only the operator may read
/// goes to the log here.
impl From<StoreError> for StorageError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Busy(_) | StoreError::Stale => StorageError::Busy,
            StoreError::Full => StorageError::Full,
            StoreError::ReadOnly => StorageError::ReadOnly,
            StoreError::Refused(m) => StorageError::Refused(m),
            e @ StoreError::Open { .. } => {
                tracing::error!(error = %e, "store unavailable");
                StorageError::Other("the store cannot be opened".into())
            }
            e @ StoreError::Damaged => {
                tracing::error!(error = %e, "store damaged");
                StorageError::Other("the store's file is damaged".into())
            }
            e @ StoreError::Unreachable(_) => {
                tracing::error!(error = %e, "database unreachable");
                StorageError::Other(
                    "the database cannot be reached (the server's log says why)".into(),
                )
            }
            e @ (StoreError::Lost | StoreError::Unconfirmed(_)) => {
                StorageError::Other(e.to_string())
            }
            StoreError::Database(m) => StorageError::Other(m),
        }
    }
}

/// A store that can run tool calls as transactions.
pub trait Backend: Send + Sync {
    /// Starts the transaction of one tool call, whose `limits` are the operator's.
    fn begin(&self, mode: Mode, limits: LimitOverrides) -> Result<Box<dyn Txn>, StoreError>;
    /// Starts a write call that must not conflict again: the last run of one that did (see
    /// [`Txn::conflicted`]). A backend that takes its write lock late takes it at once here.
    /// By default, as [`Backend::begin`] does.
    fn begin_locked(&self, limits: LimitOverrides) -> Result<Box<dyn Txn>, StoreError> {
        self.begin(Mode::Write, limits)
    }
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
    /// Whether a call's transaction only touches files on this machine and never waits on the
    /// network (a write waits at most for this machine's disk and the write lock), so that a
    /// transport serving one client may run it on the thread that received it. By default,
    /// no.
    fn calls_are_local(&self) -> bool {
        false
    }
}

/// The end of a call that may wait until its answer is out ([`Txn::commit_answering`]).
pub type Later = Box<dyn FnOnce() + Send>;

/// One tool call's transaction: the storage contract, and a commit. Dropping it without
/// [`Txn::commit`] rolls it back.
pub trait Txn: Storage + Send {
    /// The mode the call was begun in.
    fn mode(&self) -> Mode;

    /// Makes the call's changes durable and counts one operation for `agent`. A backend that
    /// checks what it remembered only in the commit's round trip fails it with
    /// [`StoreError::Stale`] when that was out of date: nothing was stored, and the call runs
    /// again, as for [`Txn::conflicted`].
    fn commit(self: Box<Self>, agent: &str) -> Result<(), StoreError>;

    /// [`Txn::commit`] less what may wait until the call has answered: what no answer depends
    /// on and whose failure changes nothing a caller sees (a read call's snapshot ended over
    /// the network), handed back to run then. By default nothing waits.
    fn commit_answering(self: Box<Self>, agent: &str) -> Result<Option<Later>, StoreError> {
        self.commit(agent).map(|()| None)
    }

    /// The call is about to wait on something outside the store (a model's summary): a
    /// backend that lends a read call a pooled connection may take it back meanwhile, and
    /// lend one again for the call's next statement. By default, nothing.
    fn pause(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Whether the call must run again from the start, having written nothing: it read data
    /// that another process changed before the call could take the write lock (its guest saw
    /// "busy"), or the store lost its connection to a database server, which rolled the call
    /// back. By default, never.
    fn conflicted(&self) -> bool {
        false
    }

    /// Whether what the call relied on without reading it (what a backend remembered of the
    /// agent, to be checked with the commit) turns out to be out of date: asked before a
    /// failed call is answered, since its failure may rest on it. If so, nothing was written
    /// and the call runs again. By default, never.
    fn outdated(&self) -> bool {
        false
    }
}

/// Implements the storage contract for a backend's transaction type `$ty`, whose inherent
/// methods of the same names (`usage` for `get-usage`) take the names as text and fail with
/// [`StoreError`], and whose `limits` field holds the operator's limits; `$reach` turns
/// `&self` into what those methods are called on. The names were parsed by the caller, and
/// errors leave through `From<StoreError>`, which logs what only the operator may read.
macro_rules! implement_storage {
    ($ty:ty, |$this:ident| $reach:expr) => {
        impl scratchpad_guest::Storage for $ty {
            fn stat_file(
                &self,
                a: &AgentId,
                p: &FilePath,
            ) -> Result<Option<FileState>, StorageError> {
                let $this = self;
                Ok($reach.stat_file(a.as_str(), p.as_str())?)
            }
            fn read_version(
                &self,
                a: &AgentId,
                p: &FilePath,
                version: u64,
            ) -> Result<Option<String>, StorageError> {
                let $this = self;
                Ok($reach.read_version(a.as_str(), p.as_str(), version)?)
            }
            fn put_version(
                &self,
                a: &AgentId,
                p: &FilePath,
                version: u64,
                content: &str,
            ) -> Result<(), StorageError> {
                let $this = self;
                Ok($reach.put_version(a.as_str(), p.as_str(), version, content)?)
            }
            fn prune_versions(
                &self,
                a: &AgentId,
                p: &FilePath,
                keep_from: u64,
            ) -> Result<(), StorageError> {
                let $this = self;
                Ok($reach.prune_versions(a.as_str(), p.as_str(), keep_from)?)
            }
            fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
                let $this = self;
                Ok($reach.delete_file(a.as_str(), p.as_str())?)
            }
            fn list_files(
                &self,
                a: &AgentId,
                prefix: &Prefix,
            ) -> Result<Vec<FileMeta>, StorageError> {
                let $this = self;
                Ok($reach.list_files(a.as_str(), prefix.as_str())?)
            }
            fn append_log(
                &self,
                a: &AgentId,
                p: &FilePath,
                entry: &LogValue,
                bytes: u64,
            ) -> Result<u64, StorageError> {
                let $this = self;
                Ok($reach.append_log(a.as_str(), p.as_str(), entry, bytes)?)
            }
            fn read_log(
                &self,
                a: &AgentId,
                p: &FilePath,
                after: u64,
                limit: u32,
            ) -> Result<Vec<LogEntry>, StorageError> {
                let $this = self;
                Ok($reach.read_log(a.as_str(), p.as_str(), after, limit)?)
            }
            fn log_info(&self, a: &AgentId, p: &FilePath) -> Result<LogState, StorageError> {
                let $this = self;
                Ok($reach.log_info(a.as_str(), p.as_str())?)
            }
            fn set_log_retention(
                &self,
                a: &AgentId,
                p: &FilePath,
                retention: Retention,
            ) -> Result<(), StorageError> {
                let $this = self;
                Ok($reach.set_log_retention(a.as_str(), p.as_str(), retention)?)
            }
            fn trim_log(
                &self,
                a: &AgentId,
                p: &FilePath,
                before: u64,
                older_than_seconds: Option<u64>,
            ) -> Result<u64, StorageError> {
                let $this = self;
                Ok($reach.trim_log(a.as_str(), p.as_str(), before, older_than_seconds)?)
            }
            fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
                let $this = self;
                Ok($reach.usage(a.as_str())?)
            }
            fn cached_summary(
                &self,
                a: &AgentId,
                p: &FilePath,
                version: u64,
                model: &str,
            ) -> Result<Option<String>, StorageError> {
                let $this = self;
                Ok($reach.cached_summary(a.as_str(), p.as_str(), version, model)?)
            }
            fn put_summary(
                &self,
                a: &AgentId,
                p: &FilePath,
                version: u64,
                model: &str,
                summary: &str,
            ) -> Result<(), StorageError> {
                let $this = self;
                Ok($reach.put_summary(a.as_str(), p.as_str(), version, model, summary)?)
            }
            fn limits(&self, _agent: &AgentId) -> LimitOverrides {
                let $this = self;
                $reach.limits
            }
            fn search(
                &self,
                a: &AgentId,
                terms: &[String],
                match_all: bool,
                prefix: &Prefix,
                limit: u32,
                offset: u32,
            ) -> Result<Vec<SearchMatch>, StorageError> {
                let $this = self;
                Ok($reach.search(a.as_str(), terms, match_all, prefix.as_str(), limit, offset)?)
            }
        }
    };
}
use implement_storage;
