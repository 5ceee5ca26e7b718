//! What the benchmarks share: the guest's tool logic run natively over the host's own SQLite
//! transactions (the "native" side of the component-overhead ratio), and the documents the
//! benchmarks write.
//!
//! The native path does what `Service::call` does minus the sandbox and the JSON: begin the
//! call's transaction, run the same tool function, commit. The conversions below only move
//! values between the two sides' generated types; they decide nothing.

use scratchpad_guest::bindings::scratchpad::mcp::storage as guest_storage;
use scratchpad_guest::limits::NO_OVERRIDES;
use scratchpad_guest::names::{AgentId, FilePath, Prefix};
use scratchpad_guest::{
    FileMeta, LimitOverrides, LogEntry, LogValue, Storage, StorageError, Usage,
};
use scratchpad_mcp::bindings as host;
use scratchpad_mcp::bindings::{ToolError as HostToolError, Tools};
use scratchpad_mcp::imports::CallState;
use scratchpad_mcp::sandbox::Sandbox;
use scratchpad_mcp::storage::{Backend, Mode, StoreError, Txn};
use scratchpad_mcp::summariser::SummaryModel;
use std::cell::RefCell;
use std::sync::Arc;

/// A 50-line working document of about 2.7 KB; `revision` changes one line.
pub fn document(revision: usize) -> String {
    (0..50)
        .map(|line| {
            if line == revision % 50 {
                format!(
                    "{line:02}: revised {revision:>8} - this line changes as the work goes on\n"
                )
            } else {
                format!("{line:02}: a line of the plan that stays as it was, for the most part.\n")
            }
        })
        .collect()
}

/// Runs one call through the component as the service does, minus the JSON: begin the
/// transaction, a fresh instance, the call, commit.
pub fn component_call<R>(
    sandbox: &Sandbox,
    backend: &dyn Backend,
    model: &Arc<dyn SummaryModel>,
    mode: Mode,
    agent: &str,
    call: impl FnOnce(
        &Tools,
        &mut wasmtime::Store<CallState>,
    ) -> wasmtime::Result<Result<R, HostToolError>>,
) -> R {
    let state = CallState::new(
        agent,
        backend.begin(mode).expect("begin"),
        Arc::clone(model),
    );
    let (answer, state) = sandbox.run(state, |instance, store| {
        call(instance.scratchpad_mcp_tools(), store)
    });
    let result = answer.expect("no trap").expect("the component call works");
    let (txn, failure) = state.finish();
    assert!(failure.is_none(), "{failure:?}");
    txn.commit(agent).expect("commit");
    result
}

/// The host's transaction seen as the guest's storage port.
pub struct NativePort {
    txn: RefCell<Box<dyn Txn>>,
}

impl NativePort {
    /// Runs `tool` natively in one transaction of `backend`, as the service would.
    pub fn call<R, E: std::fmt::Debug>(
        backend: &dyn Backend,
        mode: Mode,
        agent: &str,
        tool: impl FnOnce(&NativePort) -> Result<R, E>,
    ) -> R {
        let port = NativePort {
            txn: RefCell::new(backend.begin(mode).expect("begin")),
        };
        let result = tool(&port).expect("the native call works");
        port.txn.into_inner().commit(agent).expect("commit");
        result
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut dyn Txn) -> Result<R, StoreError>,
    ) -> Result<R, StorageError> {
        f(self.txn.borrow_mut().as_mut()).map_err(|e| match e.to_wit() {
            host::StorageError::Busy => StorageError::Busy,
            host::StorageError::Full => StorageError::Full,
            host::StorageError::ReadOnly => StorageError::ReadOnly,
            host::StorageError::Refused(m) => StorageError::Refused(m),
            host::StorageError::Other(m) => StorageError::Other(m),
        })
    }
}

fn meta(f: host::FileMeta) -> FileMeta {
    FileMeta {
        path: f.path,
        version: f.version,
        bytes: f.bytes,
        updated_at: f.updated_at,
    }
}

fn to_host(v: &LogValue) -> host::LogValue {
    match v {
        LogValue::Text(t) => host::LogValue::Text(t.clone()),
        LogValue::Json(j) => host::LogValue::Json(j.clone()),
    }
}

fn from_host(v: host::LogValue) -> LogValue {
    match v {
        host::LogValue::Text(t) => LogValue::Text(t),
        host::LogValue::Json(j) => LogValue::Json(j),
    }
}

impl Storage for NativePort {
    fn stat_file(
        &self,
        a: &AgentId,
        p: &FilePath,
    ) -> Result<Option<guest_storage::FileState>, StorageError> {
        let state = self.with(|t| t.stat_file(a.as_str(), p.as_str()))?;
        Ok(state.map(|s| guest_storage::FileState {
            last_version: s.last_version,
            kept: s
                .kept
                .into_iter()
                .map(|v| guest_storage::VersionInfo {
                    version: v.version,
                    bytes: v.bytes,
                    created_at: v.created_at,
                })
                .collect(),
        }))
    }
    fn read_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
    ) -> Result<Option<String>, StorageError> {
        self.with(|t| t.read_version(a.as_str(), p.as_str(), v))
    }
    fn put_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        content: &str,
    ) -> Result<(), StorageError> {
        self.with(|t| t.put_version(a.as_str(), p.as_str(), v, content))
    }
    fn prune_versions(
        &self,
        a: &AgentId,
        p: &FilePath,
        keep_from: u64,
    ) -> Result<(), StorageError> {
        self.with(|t| t.prune_versions(a.as_str(), p.as_str(), keep_from))
    }
    fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
        self.with(|t| t.delete_file(a.as_str(), p.as_str()))
    }
    fn list_files(&self, a: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError> {
        Ok(self
            .with(|t| t.list_files(a.as_str(), prefix.as_str()))?
            .into_iter()
            .map(meta)
            .collect())
    }
    fn append_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        e: &LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError> {
        self.with(|t| t.append_log(a.as_str(), p.as_str(), &to_host(e), bytes))
    }
    fn read_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError> {
        let entries = self.with(|t| t.read_log(a.as_str(), p.as_str(), after, limit))?;
        Ok(entries
            .into_iter()
            .map(|e| LogEntry {
                id: e.id,
                entry: from_host(e.entry),
                created_at: e.created_at,
            })
            .collect())
    }
    fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
        let u = self.with(|t| t.usage(a.as_str()))?;
        Ok(Usage {
            total_bytes: u.total_bytes,
            file_count: u.file_count,
            log_entry_count: u.log_entry_count,
            total_operations: u.total_operations,
        })
    }
    fn cached_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        model: &str,
    ) -> Result<Option<String>, StorageError> {
        self.with(|t| t.cached_summary(a.as_str(), p.as_str(), v, model))
    }
    fn put_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StorageError> {
        self.with(|t| t.put_summary(a.as_str(), p.as_str(), v, model, summary))
    }
    fn limits(&self, _: &AgentId) -> LimitOverrides {
        NO_OVERRIDES
    }
    fn log_info(&self, a: &AgentId, p: &FilePath) -> Result<guest_storage::LogState, StorageError> {
        let s = self.with(|t| t.log_info(a.as_str(), p.as_str()))?;
        Ok(guest_storage::LogState {
            last_id: s.last_id,
            entries: s.entries,
            retention: guest_storage::Retention {
                keep_last: s.retention.keep_last,
                max_age_seconds: s.retention.max_age_seconds,
            },
        })
    }
    fn set_log_retention(
        &self,
        a: &AgentId,
        p: &FilePath,
        r: guest_storage::Retention,
    ) -> Result<(), StorageError> {
        let retention = host::Retention {
            keep_last: r.keep_last,
            max_age_seconds: r.max_age_seconds,
        };
        self.with(|t| t.set_log_retention(a.as_str(), p.as_str(), retention))
    }
    fn trim_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError> {
        self.with(|t| t.trim_log(a.as_str(), p.as_str(), before, older_than_seconds))
    }
    fn search(
        &self,
        a: &AgentId,
        terms: &[String],
        match_all: bool,
        prefix: &Prefix,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<guest_storage::SearchMatch>, StorageError> {
        let found =
            self.with(|t| t.search(a.as_str(), terms, match_all, prefix.as_str(), limit, offset))?;
        Ok(found
            .into_iter()
            .map(|m| guest_storage::SearchMatch {
                path: m.path,
                at: match m.at {
                    host::MatchRef::File(v) => guest_storage::MatchRef::File(v),
                    host::MatchRef::LogEntry(id) => guest_storage::MatchRef::LogEntry(id),
                },
            })
            .collect())
    }
}
