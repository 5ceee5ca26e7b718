//! [`Guard`]: the guest's storage requests, checked, then run in the call's transaction.
//!
//! The guard is itself the storage contract ([`Storage`]) over a backend that only persists:
//! the integration tests hold each backend, through it, to the contract's one suite. The
//! refusals the contract owes are the guest crate's `check_*` functions, so each rule is
//! decided once; the guard feeds them what the call has seen of each path it touched (what
//! `stat-file` answered, and what the call changed since), reading the state itself only when
//! the guest writes a path it never looked at. That is sound because nothing else changes an
//! agent's data during its write call: PostgreSQL holds the agent's lock from the first read,
//! and SQLite finds any change made before its write lock and runs the call again.

use crate::storage::{Mode, StoreError, Txn};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{
    FileState, LogState, Retention, SearchMatch,
};
use scratchpad_guest::names::{AgentId, FilePath, Prefix};
use scratchpad_guest::ports::{
    check_log_bytes, check_new_version, check_prune, check_summary_kept,
};
use scratchpad_guest::{
    FileMeta, LimitOverrides, LogEntry, LogValue, Storage, StorageError, Usage,
};
use std::cell::RefCell;
use std::collections::HashMap;

/// What the call knows of one path's versions: all the version rules need.
#[derive(Clone, Debug, Default)]
struct Known {
    /// The highest number the path ever had.
    last: u64,
    /// The kept versions, oldest first; the last one is current.
    kept: Vec<u64>,
}

impl Known {
    fn of(state: Option<&FileState>) -> Self {
        state.map_or_else(Self::default, |s| Self {
            last: s.last_version,
            kept: s.kept.iter().map(|v| v.version).collect(),
        })
    }

    fn current(&self) -> Option<u64> {
        self.kept.last().copied()
    }
}

/// One call's storage, as the guest may use it.
pub struct Guard {
    /// The agent the call is for: the only namespace its requests may touch.
    agent: String,
    /// Whether the call may change anything (a summary excepted, which a read call stores
    /// after it).
    mode: Mode,
    /// The call's transaction, which only persists what the guard lets by.
    txn: Box<dyn Txn>,
    /// What the call has seen of each path it touched, by path.
    known: RefCell<HashMap<String, Known>>,
    /// The first failure of any request, kept whatever the guest does with it.
    failure: RefCell<Option<StorageError>>,
}

impl Guard {
    /// The guard of a call for `agent` (as the caller named it) inside `txn`.
    pub fn new(agent: &str, txn: Box<dyn Txn>) -> Self {
        Self {
            agent: agent.to_owned(),
            mode: txn.mode(),
            txn,
            known: RefCell::default(),
            failure: RefCell::default(),
        }
    }

    /// The agent the call is for, as its caller named it.
    pub fn own_agent(&self) -> &str {
        &self.agent
    }

    /// The transaction, and the first failure the guest saw (if any).
    pub fn finish(self) -> (Box<dyn Txn>, Option<StorageError>) {
        (self.txn, self.failure.into_inner())
    }

    /// The call is about to wait for a model ([`Txn::pause`]).
    pub fn pause(&self) -> Result<(), StoreError> {
        self.txn.pause()
    }

    /// `result`, its failure remembered if it is the call's first.
    fn noted<R>(&self, result: Result<R, StorageError>) -> Result<R, StorageError> {
        if let Err(e) = &result {
            self.failure.borrow_mut().get_or_insert_with(|| e.clone());
        }
        result
    }

    /// The agent a request named, refused unless it is the call's own and keeps the rules.
    pub fn agent(&self, raw: &str) -> Result<AgentId, StorageError> {
        self.noted(
            self.owned(raw)
                .and_then(|()| AgentId::parse(raw).map_err(|e| breaks_the_rules("an agent", &e))),
        )
    }

    /// Refuses a request for any agent but the call's own.
    fn owned(&self, raw: &str) -> Result<(), StorageError> {
        if raw == self.agent {
            return Ok(());
        }
        Err(StorageError::Refused(format!(
            "a storage request named agent {raw:?} in a call for agent {:?}",
            self.agent
        )))
    }

    /// A path a request named, refused unless it keeps the path rules.
    pub fn path(&self, raw: &str) -> Result<FilePath, StorageError> {
        self.noted(FilePath::parse(raw).map_err(|e| breaks_the_rules("a path", &e)))
    }

    /// A prefix a request named, refused unless it keeps the path rules.
    pub fn prefix(&self, raw: &str) -> Result<Prefix, StorageError> {
        self.noted(Prefix::parse(Some(raw)).map_err(|e| breaks_the_rules("a prefix", &e)))
    }

    /// The operator's limits, which are configuration, not data: the same for every agent,
    /// so nothing to check (a call whose agent breaks the rules gets the defaults, and no
    /// storage at all).
    pub fn operator_limits(&self) -> LimitOverrides {
        AgentId::parse(&self.agent).map_or(scratchpad_guest::limits::NO_OVERRIDES, |a| {
            self.txn.limits(&a)
        })
    }

    /// Runs one request for `agent`, refusing any agent but the call's own.
    fn serve<R>(
        &self,
        agent: &AgentId,
        request: impl FnOnce(&dyn Txn) -> Result<R, StorageError>,
    ) -> Result<R, StorageError> {
        // Already parsed: only whose it is remains to check.
        self.noted(
            self.owned(agent.as_str())
                .and_then(|()| request(self.txn.as_ref())),
        )
    }

    /// Refuses `what`, a change, in a read-only call.
    fn writable(&self, what: &str) -> Result<(), StorageError> {
        match self.mode {
            Mode::Write => Ok(()),
            Mode::Read => Err(StorageError::Refused(format!("{what} in a read-only call"))),
        }
    }

    /// What the call knows of `path`, read from the store the first time.
    fn known(
        &self,
        txn: &dyn Txn,
        agent: &AgentId,
        path: &FilePath,
    ) -> Result<Known, StorageError> {
        if let Some(k) = self.known.borrow().get(path.as_str()) {
            return Ok(k.clone());
        }
        let k = Known::of(txn.stat_file(agent, path)?.as_ref());
        self.known
            .borrow_mut()
            .insert(path.as_str().to_owned(), k.clone());
        Ok(k)
    }

    /// Records a change the call made to `path`.
    fn changed(&self, path: &FilePath, known: Known) {
        self.known
            .borrow_mut()
            .insert(path.as_str().to_owned(), known);
    }
}

fn breaks_the_rules(what: &str, e: &scratchpad_guest::ToolError) -> StorageError {
    StorageError::Refused(format!(
        "a storage request named {what} that breaks the rules: {}",
        scratchpad_guest::json::message(e)
    ))
}

impl Storage for Guard {
    fn stat_file(&self, a: &AgentId, p: &FilePath) -> Result<Option<FileState>, StorageError> {
        self.serve(a, |t| {
            let state = t.stat_file(a, p)?;
            self.changed(p, Known::of(state.as_ref()));
            Ok(state)
        })
    }

    fn read_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
    ) -> Result<Option<String>, StorageError> {
        self.serve(a, |t| t.read_version(a, p, version))
    }

    fn put_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
        content: &str,
    ) -> Result<(), StorageError> {
        self.serve(a, |t| {
            self.writable("put-version")?;
            let mut known = self.known(t, a, p)?;
            check_new_version(p.as_str(), version, known.last)?;
            t.put_version(a, p, version, content)?;
            known.last = version;
            known.kept.push(version);
            self.changed(p, known);
            Ok(())
        })
    }

    fn prune_versions(
        &self,
        a: &AgentId,
        p: &FilePath,
        keep_from: u64,
    ) -> Result<(), StorageError> {
        self.serve(a, |t| {
            self.writable("prune-versions")?;
            let mut known = self.known(t, a, p)?;
            check_prune(p.as_str(), keep_from, known.current())?;
            t.prune_versions(a, p, keep_from)?;
            known.kept.retain(|&v| v >= keep_from);
            self.changed(p, known);
            Ok(())
        })
    }

    fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
        self.serve(a, |t| {
            self.writable("delete-file")?;
            let existed = t.delete_file(a, p)?;
            if let Some(known) = self.known.borrow_mut().get_mut(p.as_str()) {
                known.kept.clear();
            }
            Ok(existed)
        })
    }

    fn list_files(&self, a: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError> {
        self.serve(a, |t| t.list_files(a, prefix))
    }

    fn append_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError> {
        self.serve(a, |t| {
            self.writable("append-log")?;
            check_log_bytes(entry, bytes)?;
            t.append_log(a, p, entry, bytes)
        })
    }

    fn read_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError> {
        self.serve(a, |t| t.read_log(a, p, after, limit))
    }

    fn log_info(&self, a: &AgentId, p: &FilePath) -> Result<LogState, StorageError> {
        self.serve(a, |t| t.log_info(a, p))
    }

    fn set_log_retention(
        &self,
        a: &AgentId,
        p: &FilePath,
        retention: Retention,
    ) -> Result<(), StorageError> {
        self.serve(a, |t| {
            self.writable("set-log-retention")?;
            t.set_log_retention(a, p, retention)
        })
    }

    fn trim_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError> {
        self.serve(a, |t| {
            self.writable("trim-log")?;
            t.trim_log(a, p, before, older_than_seconds)
        })
    }

    fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
        self.serve(a, |t| t.get_usage(a))
    }

    fn cached_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StorageError> {
        self.serve(a, |t| t.cached_summary(a, p, version, model))
    }

    /// Allowed in a read call too: the backend stores it after the call.
    fn put_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StorageError> {
        self.serve(a, |t| {
            let kept = self.known(t, a, p)?.kept.contains(&version);
            check_summary_kept(p.as_str(), version, kept)?;
            t.put_summary(a, p, version, model, summary)
        })
    }

    /// Limits are configuration, not data: the same for every agent, so nothing to check.
    fn limits(&self, a: &AgentId) -> LimitOverrides {
        self.txn.limits(a)
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
        self.serve(a, |t| t.search(a, terms, match_all, prefix, limit, offset))
    }
}
