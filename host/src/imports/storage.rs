//! `scratchpad:mcp/storage`: the guest's storage requests, checked, then run in the call's
//! transaction, which is the storage contract ([`scratchpad_guest::Storage`]).
//!
//! The guest's words are checked before any reaches the store: the agent must be the
//! call's own, and every path and prefix must keep the path rules (parsed with the guest
//! crate's own parsers, so the rules are the same ones).

use super::{CallState, convert};
use crate::bindings::scratchpad::mcp::storage::Host;
use crate::bindings::scratchpad::mcp::types as wit_types;
use crate::bindings::{FileState, LogState, Retention, SearchMatch};
use crate::storage::Txn;
use scratchpad_guest::StorageError;
use scratchpad_guest::names::{AgentId, FilePath, Prefix};

type Answer<T> = Result<T, wit_types::StorageError>;

/// A path the guest named, refused unless it keeps the path rules.
fn path(raw: &str) -> Result<FilePath, StorageError> {
    FilePath::parse(raw).map_err(|e| {
        StorageError::Refused(format!(
            "a storage request named a path that breaks the rules: {}",
            scratchpad_guest::json::message(&e)
        ))
    })
}

/// A prefix the guest named, refused unless it keeps the path rules.
fn prefix(raw: &str) -> Result<Prefix, StorageError> {
    Prefix::parse(Some(raw)).map_err(|e| {
        StorageError::Refused(format!(
            "a storage request named a prefix that breaks the rules: {}",
            scratchpad_guest::json::message(&e)
        ))
    })
}

impl CallState {
    /// Runs one storage request for `agent`, refusing any agent but the call's own, and
    /// remembering the first failure.
    fn storage<R>(
        &mut self,
        agent: &str,
        request: impl FnOnce(&dyn Txn, &AgentId) -> Result<R, StorageError>,
    ) -> Answer<R> {
        self.outside_guest(|call| {
            let result = if agent == call.agent {
                AgentId::parse(agent)
                    .map_err(|e| {
                        StorageError::Refused(format!(
                            "a storage request named an agent that breaks the rules: {}",
                            scratchpad_guest::json::message(&e)
                        ))
                    })
                    .and_then(|a| request(call.txn.as_ref(), &a))
            } else {
                Err(StorageError::Refused(format!(
                    "a storage request named agent {agent:?} in a call for agent {:?}",
                    call.agent
                )))
            };
            result.map_err(|e| {
                let wit = convert::storage_error(e.clone());
                call.failure.get_or_insert(e);
                wit
            })
        })
    }
}

impl Host for CallState {
    fn stat_file(&mut self, agent: String, p: String) -> Answer<Option<FileState>> {
        self.storage(&agent, |t, a| t.stat_file(a, &path(&p)?))
            .map(|s| s.map(convert::file_state))
    }

    fn read_version(&mut self, agent: String, p: String, version: u64) -> Answer<Option<String>> {
        self.storage(&agent, |t, a| t.read_version(a, &path(&p)?, version))
    }

    fn put_version(
        &mut self,
        agent: String,
        p: String,
        version: u64,
        content: String,
    ) -> Answer<()> {
        self.storage(&agent, |t, a| {
            t.put_version(a, &path(&p)?, version, &content)
        })
    }

    fn prune_versions(&mut self, agent: String, p: String, keep_from: u64) -> Answer<()> {
        self.storage(&agent, |t, a| t.prune_versions(a, &path(&p)?, keep_from))
    }

    fn delete_file(&mut self, agent: String, p: String) -> Answer<bool> {
        self.storage(&agent, |t, a| t.delete_file(a, &path(&p)?))
    }

    fn list_files(&mut self, agent: String, under: String) -> Answer<Vec<wit_types::FileMeta>> {
        self.storage(&agent, |t, a| t.list_files(a, &prefix(&under)?))
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
        self.storage(&agent, |t, a| t.append_log(a, &path(&p)?, &entry, bytes))
    }

    fn read_log(
        &mut self,
        agent: String,
        p: String,
        after: u64,
        limit: u32,
    ) -> Answer<Vec<wit_types::LogEntry>> {
        self.storage(&agent, |t, a| t.read_log(a, &path(&p)?, after, limit))
            .map(|entries| entries.into_iter().map(convert::log_entry).collect())
    }

    fn get_usage(&mut self, agent: String) -> Answer<wit_types::Usage> {
        self.storage(&agent, |t, a| t.get_usage(a))
            .map(convert::usage)
    }

    fn cached_summary(
        &mut self,
        agent: String,
        p: String,
        version: u64,
        model: String,
    ) -> Answer<Option<String>> {
        self.storage(&agent, |t, a| {
            t.cached_summary(a, &path(&p)?, version, &model)
        })
    }

    fn put_summary(
        &mut self,
        agent: String,
        p: String,
        version: u64,
        model: String,
        summary: String,
    ) -> Answer<()> {
        self.storage(&agent, |t, a| {
            t.put_summary(a, &path(&p)?, version, &model, &summary)
        })
    }

    fn log_info(&mut self, agent: String, p: String) -> Answer<LogState> {
        self.storage(&agent, |t, a| t.log_info(a, &path(&p)?))
            .map(convert::log_state)
    }

    fn set_log_retention(&mut self, agent: String, p: String, retention: Retention) -> Answer<()> {
        let retention = convert::retention(retention);
        self.storage(&agent, |t, a| t.set_log_retention(a, &path(&p)?, retention))
    }

    fn trim_log(
        &mut self,
        agent: String,
        p: String,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Answer<u64> {
        self.storage(&agent, |t, a| {
            t.trim_log(a, &path(&p)?, before, older_than_seconds)
        })
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
        self.storage(&agent, |t, a| {
            t.search(a, &terms, match_all, &prefix(&under)?, limit, offset)
        })
        .map(|hits| hits.into_iter().map(convert::search_match).collect())
    }

    /// Limits are configuration, not data: the same for every agent, so nothing to check (a
    /// call whose agent breaks the rules gets the defaults, and no storage at all).
    fn limits(&mut self, _agent: String) -> wit_types::LimitOverrides {
        let limits = AgentId::parse(&self.agent).map(|a| self.txn.limits(&a));
        convert::limits(limits.unwrap_or(scratchpad_guest::limits::NO_OVERRIDES))
    }
}
