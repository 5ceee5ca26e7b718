//! `scratchpad:mcp/storage`: the guest's storage requests, checked, then run in the call's
//! transaction.

use super::CallState;
use crate::bindings::scratchpad::mcp::storage::Host;
use crate::bindings::{
    FileMeta, FileState, LimitOverrides, LogEntry, LogState, LogValue, Retention, SearchMatch,
    StorageError, Usage,
};
use crate::storage::{StoreError, Txn};

impl CallState {
    /// Runs one storage request for `agent`, refusing any agent but the call's own, and
    /// remembering the first failure.
    fn storage<R>(
        &mut self,
        agent: &str,
        request: impl FnOnce(&mut dyn Txn) -> Result<R, StoreError>,
    ) -> Result<R, StorageError> {
        self.outside_guest(|call| {
            let result = if agent == call.agent {
                request(call.txn.as_mut())
            } else {
                Err(StoreError::Refused(format!(
                    "a storage request named agent {agent:?} in a call for agent {:?}",
                    call.agent
                )))
            };
            result.map_err(|e| {
                let wit = e.to_wit();
                call.failure.get_or_insert(e);
                wit
            })
        })
    }
}

impl Host for CallState {
    fn stat_file(
        &mut self,
        agent: String,
        path: String,
    ) -> Result<Option<FileState>, StorageError> {
        self.storage(&agent, |t| t.stat_file(&agent, &path))
    }

    fn read_version(
        &mut self,
        agent: String,
        path: String,
        version: u64,
    ) -> Result<Option<String>, StorageError> {
        self.storage(&agent, |t| t.read_version(&agent, &path, version))
    }

    fn put_version(
        &mut self,
        agent: String,
        path: String,
        version: u64,
        content: String,
    ) -> Result<(), StorageError> {
        self.storage(&agent, |t| t.put_version(&agent, &path, version, &content))
    }

    fn prune_versions(
        &mut self,
        agent: String,
        path: String,
        keep_from: u64,
    ) -> Result<(), StorageError> {
        self.storage(&agent, |t| t.prune_versions(&agent, &path, keep_from))
    }

    fn delete_file(&mut self, agent: String, path: String) -> Result<bool, StorageError> {
        self.storage(&agent, |t| t.delete_file(&agent, &path))
    }

    fn list_files(&mut self, agent: String, prefix: String) -> Result<Vec<FileMeta>, StorageError> {
        self.storage(&agent, |t| t.list_files(&agent, &prefix))
    }

    fn append_log(
        &mut self,
        agent: String,
        path: String,
        entry: LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError> {
        self.storage(&agent, |t| t.append_log(&agent, &path, &entry, bytes))
    }

    fn read_log(
        &mut self,
        agent: String,
        path: String,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError> {
        self.storage(&agent, |t| t.read_log(&agent, &path, after, limit))
    }

    fn get_usage(&mut self, agent: String) -> Result<Usage, StorageError> {
        self.storage(&agent, |t| t.usage(&agent))
    }

    fn cached_summary(
        &mut self,
        agent: String,
        path: String,
        version: u64,
        model: String,
    ) -> Result<Option<String>, StorageError> {
        self.storage(&agent, |t| t.cached_summary(&agent, &path, version, &model))
    }

    fn put_summary(
        &mut self,
        agent: String,
        path: String,
        version: u64,
        model: String,
        summary: String,
    ) -> Result<(), StorageError> {
        self.storage(&agent, |t| {
            t.put_summary(&agent, &path, version, &model, &summary)
        })
    }

    fn log_info(&mut self, agent: String, path: String) -> Result<LogState, StorageError> {
        self.storage(&agent, |t| t.log_info(&agent, &path))
    }

    fn set_log_retention(
        &mut self,
        agent: String,
        path: String,
        retention: Retention,
    ) -> Result<(), StorageError> {
        self.storage(&agent, |t| t.set_log_retention(&agent, &path, retention))
    }

    fn trim_log(
        &mut self,
        agent: String,
        path: String,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError> {
        self.storage(&agent, |t| {
            t.trim_log(&agent, &path, before, older_than_seconds)
        })
    }

    fn search(
        &mut self,
        agent: String,
        terms: Vec<String>,
        match_all: bool,
        prefix: String,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StorageError> {
        self.storage(&agent, |t| {
            t.search(&agent, &terms, match_all, &prefix, limit, offset)
        })
    }

    /// Limits are configuration, not data: the same for every agent, so nothing to check.
    fn limits(&mut self, _agent: String) -> LimitOverrides {
        self.quotas
    }
}
