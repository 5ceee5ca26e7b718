//! The store as the guest's [`Storage`] port: what the self-contained component runs its
//! tools against, and what native tests use to run the tools over real SQLite.
//!
//! The caller owns the transaction: [`Tx`] only runs statements on a connection inside it.
//! Unlike the server's backend, nothing here distrusts the tools: in the self-contained
//! component they are compiled into the same module, so a check of their requests would
//! guard them against themselves.

use crate::{Error, index, logs, rows};
use rusqlite::Connection;
use scratchpad_guest::bindings::scratchpad::mcp::storage::{
    FileState, LogState, Retention, SearchMatch,
};
use scratchpad_guest::names::{AgentId, FilePath, Prefix};
use scratchpad_guest::{
    FileMeta, LimitOverrides, LogEntry, LogValue, Storage, StorageError, Usage,
};
use std::collections::BTreeMap;

/// One tool call's view of the store: a connection inside the call's transaction, the
/// limits every agent has, and the operations of earlier read calls not yet written to the
/// counters (per agent), which `get-usage` adds.
pub struct Tx<'c> {
    conn: &'c Connection,
    limits: LimitOverrides,
    uncounted: &'c BTreeMap<String, u64>,
}

impl<'c> Tx<'c> {
    /// The statements of one call on `conn`, which is inside the call's transaction.
    pub fn new(
        conn: &'c Connection,
        limits: LimitOverrides,
        uncounted: &'c BTreeMap<String, u64>,
    ) -> Self {
        Self {
            conn,
            limits,
            uncounted,
        }
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
        let existed =
            rows::file_row(self.conn, a.as_str(), p.as_str())?.is_some_and(|r| r.current.is_some());
        Ok(rows::put_version(
            self.conn,
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
        match rows::file_row(self.conn, a.as_str(), p.as_str())? {
            Some(row) => Ok(rows::prune_versions(self.conn, a.as_str(), row, keep_from)?),
            None => Ok(()),
        }
    }
    fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
        Ok(rows::delete_file(self.conn, a.as_str(), p.as_str())?)
    }
    fn list_files(&self, a: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError> {
        Ok(rows::list_files(self.conn, a.as_str(), prefix.as_str())?)
    }
    fn append_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        entry: &LogValue,
        _bytes: u64,
    ) -> Result<u64, StorageError> {
        let (is_text, body) = match entry {
            LogValue::Text(t) => (true, t.as_str()),
            LogValue::Json(j) => (false, j.as_str()),
        };
        Ok(rows::append_log(
            self.conn,
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
        Ok(logs::set_retention(
            self.conn,
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
            a.as_str(),
            p.as_str(),
            before,
            older_than_seconds,
        )?)
    }
    fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
        let mut usage = rows::usage(self.conn, a.as_str())?;
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
        rows::store_summary(self.conn, &summary)?;
        Ok(())
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
        Ok(index::search(
            self.conn,
            a.as_str(),
            terms,
            match_all,
            prefix.as_str(),
            limit,
            offset,
        )?)
    }
}
