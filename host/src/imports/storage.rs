//! `scratchpad:mcp/storage`: the guest's storage requests, in the WIT's types, handed to the
//! call's [`Guard`](crate::guard::Guard), which checks each one (the names first) and runs it
//! in the call's transaction.

use super::{CallState, convert};
use crate::bindings::scratchpad::mcp::storage::Host;
use crate::bindings::scratchpad::mcp::types as wit_types;
use crate::bindings::{FileState, LogState, Retention, SearchMatch};
use crate::guard::Guard;
use scratchpad_guest::{Storage, StorageError};

type Answer<T> = Result<T, wit_types::StorageError>;

impl CallState {
    /// Runs one storage request through the guard, as time spent outside the guest.
    fn storage<R>(&mut self, request: impl FnOnce(&Guard) -> Result<R, StorageError>) -> Answer<R> {
        self.outside_guest(|call| request(&call.guard).map_err(convert::storage_error))
    }
}

impl Host for CallState {
    fn stat_file(&mut self, agent: String, p: String) -> Answer<Option<FileState>> {
        self.storage(|g| g.stat_file(&g.agent(&agent)?, &g.path(&p)?))
            .map(|s| s.map(convert::file_state))
    }

    fn read_version(&mut self, agent: String, p: String, version: u64) -> Answer<Option<String>> {
        self.storage(|g| g.read_version(&g.agent(&agent)?, &g.path(&p)?, version))
    }

    fn put_version(
        &mut self,
        agent: String,
        p: String,
        version: u64,
        content: String,
    ) -> Answer<()> {
        self.storage(|g| g.put_version(&g.agent(&agent)?, &g.path(&p)?, version, &content))
    }

    fn prune_versions(&mut self, agent: String, p: String, keep_from: u64) -> Answer<()> {
        self.storage(|g| g.prune_versions(&g.agent(&agent)?, &g.path(&p)?, keep_from))
    }

    fn delete_file(&mut self, agent: String, p: String) -> Answer<bool> {
        self.storage(|g| g.delete_file(&g.agent(&agent)?, &g.path(&p)?))
    }

    fn list_files(&mut self, agent: String, under: String) -> Answer<Vec<wit_types::FileMeta>> {
        self.storage(|g| g.list_files(&g.agent(&agent)?, &g.prefix(&under)?))
            .map(|files| files.into_iter().map(convert::file_meta).collect())
    }

    fn append_log(
        &mut self,
        agent: String,
        p: String,
        entry: wit_types::LogValue,
        bytes: u64,
    ) -> Answer<u64> {
        let entry = convert::log_value(entry);
        self.storage(|g| g.append_log(&g.agent(&agent)?, &g.path(&p)?, &entry, bytes))
    }

    fn read_log(
        &mut self,
        agent: String,
        p: String,
        after: u64,
        limit: u32,
    ) -> Answer<Vec<wit_types::LogEntry>> {
        self.storage(|g| g.read_log(&g.agent(&agent)?, &g.path(&p)?, after, limit))
            .map(|entries| entries.into_iter().map(convert::log_entry).collect())
    }

    fn get_usage(&mut self, agent: String) -> Answer<wit_types::Usage> {
        self.storage(|g| g.get_usage(&g.agent(&agent)?))
            .map(convert::usage)
    }

    fn cached_summary(
        &mut self,
        agent: String,
        p: String,
        version: u64,
        model: String,
    ) -> Answer<Option<String>> {
        self.storage(|g| g.cached_summary(&g.agent(&agent)?, &g.path(&p)?, version, &model))
    }

    fn put_summary(
        &mut self,
        agent: String,
        p: String,
        version: u64,
        model: String,
        summary: String,
    ) -> Answer<()> {
        self.storage(|g| g.put_summary(&g.agent(&agent)?, &g.path(&p)?, version, &model, &summary))
    }

    fn log_info(&mut self, agent: String, p: String) -> Answer<LogState> {
        self.storage(|g| g.log_info(&g.agent(&agent)?, &g.path(&p)?))
            .map(convert::log_state)
    }

    fn set_log_retention(&mut self, agent: String, p: String, retention: Retention) -> Answer<()> {
        let retention = convert::retention(retention);
        self.storage(|g| g.set_log_retention(&g.agent(&agent)?, &g.path(&p)?, retention))
    }

    fn trim_log(
        &mut self,
        agent: String,
        p: String,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Answer<u64> {
        self.storage(|g| g.trim_log(&g.agent(&agent)?, &g.path(&p)?, before, older_than_seconds))
    }

    fn search(
        &mut self,
        agent: String,
        terms: Vec<String>,
        match_all: bool,
        under: String,
        limit: u32,
        offset: u32,
    ) -> Answer<Vec<SearchMatch>> {
        self.storage(|g| {
            let (a, under) = (g.agent(&agent)?, g.prefix(&under)?);
            g.search(&a, &terms, match_all, &under, limit, offset)
        })
        .map(|hits| hits.into_iter().map(convert::search_match).collect())
    }

    fn limits(&mut self, _agent: String) -> wit_types::LimitOverrides {
        convert::limits(self.guard.operator_limits())
    }
}
