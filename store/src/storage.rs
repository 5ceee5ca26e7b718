//! The store as the guest's [`Storage`] port: what the self-contained component runs its
//! tools against, and what native tests use to run the tools over real SQLite.
//!
//! The caller owns the transaction: [`Tx`] only runs statements on a connection inside it.
//! It keeps the contract's refusals (the guest's `check_*` functions) like every other
//! storage, and is held to the same contract suite.

use crate::{Error, index, logs, rows};
use rusqlite::Connection;
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
use std::collections::BTreeMap;

/// One tool call's view of the store: a connection inside the call's transaction, one to
/// the search index (see [`index`]), the limits every agent has, the operations of earlier
/// read calls not yet written to the counters (per agent), which `get-usage` adds, and what
/// the call has changed of the counters, which its owner writes before it commits
/// ([`Tx::pending`]).
pub struct Tx<'c> {
    conn: &'c Connection,
    index: &'c Connection,
    limits: LimitOverrides,
    uncounted: &'c BTreeMap<String, u64>,
    pending: rows::Pending,
}

impl<'c> Tx<'c> {
    /// The statements of one call on `conn`, which is inside the call's transaction, and
    /// on `index`, the store's index file.
    pub fn new(
        conn: &'c Connection,
        index: &'c Connection,
        limits: LimitOverrides,
        uncounted: &'c BTreeMap<String, u64>,
    ) -> Self {
        Self {
            conn,
            index,
            limits,
            uncounted,
            pending: rows::Pending::default(),
        }
    }

    /// What the call has changed of the counters and not yet written: written with
    /// [`rows::Pending::write`] before the call commits.
    pub fn pending(&self) -> &rows::Pending {
        &self.pending
    }
}

impl From<Error> for StorageError {
    fn from(e: Error) -> Self {
        match e {
            Error::Busy => StorageError::Busy,
            Error::Full => StorageError::Full,
            Error::ReadOnly => StorageError::ReadOnly,
            other => StorageError::Other(other.to_string()),
        }
    }
}

impl Storage for Tx<'_> {
    fn stat_file(&self, a: &AgentId, p: &FilePath) -> Result<Option<FileState>, StorageError> {
        Ok(rows::stat_file(self.conn, a.as_str(), p.as_str())?)
    }
    fn read_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
    ) -> Result<Option<String>, StorageError> {
        Ok(rows::read_version(
            self.conn,
            a.as_str(),
            p.as_str(),
            version,
        )?)
    }
    fn put_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
        content: &str,
    ) -> Result<(), StorageError> {
        let row = rows::file_row(self.conn, a.as_str(), p.as_str())?;
        let (last, existed) = row.map_or((0, false), |r| (r.last_version, r.current.is_some()));
        check_new_version(p.as_str(), version, last)?;
        Ok(rows::put_version(
            self.conn,
            &self.pending,
            a.as_str(),
            p.as_str(),
            version,
            content,
            existed,
        )?)
    }
    fn prune_versions(
        &self,
        a: &AgentId,
        p: &FilePath,
        keep_from: u64,
    ) -> Result<(), StorageError> {
        let row = rows::file_row(self.conn, a.as_str(), p.as_str())?;
        check_prune(p.as_str(), keep_from, row.and_then(|r| r.current))?;
        Ok(rows::prune_versions(
            self.conn,
            &self.pending,
            a.as_str(),
            p.as_str(),
            keep_from,
        )?)
    }
    fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
        Ok(rows::delete_file(
            self.conn,
            &self.pending,
            a.as_str(),
            p.as_str(),
        )?)
    }
    fn list_files(&self, a: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError> {
        Ok(rows::list_files(self.conn, a.as_str(), prefix.as_str())?)
    }
    fn append_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError> {
        let (is_text, body) = check_log_bytes(entry, bytes)?;
        Ok(rows::append_log(
            self.conn,
            &self.pending,
            a.as_str(),
            p.as_str(),
            is_text,
            body,
        )?)
    }
    fn read_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError> {
        Ok(rows::read_log(
            self.conn,
            a.as_str(),
            p.as_str(),
            after,
            limit,
        )?)
    }
    fn log_info(&self, a: &AgentId, p: &FilePath) -> Result<LogState, StorageError> {
        Ok(logs::state(self.conn, a.as_str(), p.as_str())?)
    }
    fn set_log_retention(
        &self,
        a: &AgentId,
        p: &FilePath,
        retention: Retention,
    ) -> Result<(), StorageError> {
        Ok(rows::set_log_retention(
            self.conn,
            &self.pending,
            a.as_str(),
            p.as_str(),
            retention,
        )?)
    }
    fn trim_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError> {
        Ok(rows::trim_log(
            self.conn,
            &self.pending,
            a.as_str(),
            p.as_str(),
            before,
            older_than_seconds,
        )?)
    }
    fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
        let mut usage = rows::usage(self.conn, &self.pending, a.as_str())?;
        usage.total_operations += self.uncounted.get(a.as_str()).copied().unwrap_or(0);
        Ok(usage)
    }
    fn cached_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StorageError> {
        Ok(rows::cached_summary(
            self.conn,
            a.as_str(),
            p.as_str(),
            version,
            model,
        )?)
    }
    fn put_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        version: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StorageError> {
        let summary = rows::Summary::new(a.as_str(), p.as_str(), version, model, summary);
        let kept = rows::store_summary(self.conn, &summary)?;
        check_summary_kept(p.as_str(), version, kept)
    }
    fn limits(&self, _agent: &AgentId) -> LimitOverrides {
        self.limits
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
        let files = index::Files {
            store: self.conn,
            index: self.index,
        };
        Ok(index::search(
            files,
            a.as_str(),
            terms,
            match_all,
            prefix.as_str(),
            limit,
            offset,
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scratchpad_guest::limits::NO_OVERRIDES;
    use scratchpad_guest::testing::contract::{self, Harness};

    /// A fresh store in a temporary folder, each step one committed transaction.
    struct Fresh {
        conn: Connection,
        index: Connection,
        _dir: tempfile::TempDir,
    }

    impl Harness for Fresh {
        fn call(&self, _agent: &str, step: &mut dyn FnMut(&dyn Storage)) {
            let uncounted = BTreeMap::new();
            self.conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            let tx = Tx::new(&self.conn, &self.index, NO_OVERRIDES, &uncounted);
            step(&tx);
            tx.pending().write(&self.conn).unwrap();
            self.conn.execute_batch("COMMIT").unwrap();
        }

        fn wait(&self, ms: u64) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }

    #[test]
    fn the_store_keeps_the_storage_contract() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("scratchpad.db");
        let conn = Connection::open(&store).unwrap();
        crate::schema::migrate(&conn).unwrap();
        let index = Connection::open(index::file_of(&store)).unwrap();
        index::prepare(&index).unwrap();
        contract::check(&Fresh {
            conn,
            index,
            _dir: dir,
        });
    }
}
