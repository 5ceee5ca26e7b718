//! The two ports the logic runs against: a transactional store and a summariser.
//!
//! They mirror the `storage` and `summariser` imports of the WIT one to one, and [`Storage`]
//! is the one statement of the storage contract in Rust: the component's imports, the
//! self-contained component's SQLite store, the server's SQLite and PostgreSQL backends and
//! the in-memory test store all implement it, and `testing::contract` holds every one of
//! them to the same suite. Every storage method names the agent: the embedder checks it is
//! the agent of the call. The refusals every implementation owes (a version that does not
//! rise, a prune of the current version, a summary of a version not kept, a log entry
//! counted wrong) are the `check_*` functions below, so each is decided once, and so is the
//! hash each version is stored with ([`content_hash`]).

use crate::bindings::scratchpad::mcp::storage::{FileState, LogState, Retention, SearchMatch};
use crate::bindings::scratchpad::mcp::summariser::SummaryRequest;
use crate::names::{AgentId, FilePath, Prefix};
use crate::{FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, SummariserError, Usage};

/// The hash a store keeps beside each version's content (`version-info.sha256`): SHA-256 of
/// its UTF-8 bytes, as lowercase hex. Every store computes it here, when it stores the
/// version; `verify` recomputes it from what is on disk.
pub fn content_hash(content: impl AsRef<[u8]>) -> String {
    use sha2::{Digest, Sha256};
    crate::hex::hex(&Sha256::digest(content.as_ref()))
}

/// What the tools need from storage. Every call is part of the tool call's transaction.
///
/// Methods take `&self`: in the component they are imports, which need no exclusive access;
/// an implementation that does keeps its transaction in a cell.
pub trait Storage {
    /// The state of a path, or none if the agent never wrote it.
    fn stat_file(
        &self,
        agent: &AgentId,
        path: &FilePath,
    ) -> Result<Option<FileState>, StorageError>;
    /// The content of a kept version.
    fn read_version(
        &self,
        agent: &AgentId,
        path: &FilePath,
        version: u64,
    ) -> Result<Option<String>, StorageError>;
    /// Stores a new current version.
    fn put_version(
        &self,
        agent: &AgentId,
        path: &FilePath,
        version: u64,
        content: &str,
    ) -> Result<(), StorageError>;
    /// Drops the versions numbered below `keep_from`.
    fn prune_versions(
        &self,
        agent: &AgentId,
        path: &FilePath,
        keep_from: u64,
    ) -> Result<(), StorageError>;
    /// Deletes a file, keeping its last version number.
    fn delete_file(&self, agent: &AgentId, path: &FilePath) -> Result<bool, StorageError>;
    /// The agent's files under a prefix, sorted by path.
    fn list_files(&self, agent: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError>;
    /// Appends a log entry; returns its id.
    fn append_log(
        &self,
        agent: &AgentId,
        path: &FilePath,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError>;
    /// Log entries after an id, oldest first.
    fn read_log(
        &self,
        agent: &AgentId,
        path: &FilePath,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError>;
    /// The state of a log.
    fn log_info(&self, agent: &AgentId, path: &FilePath) -> Result<LogState, StorageError>;
    /// Sets a log's retention.
    fn set_log_retention(
        &self,
        agent: &AgentId,
        path: &FilePath,
        retention: Retention,
    ) -> Result<(), StorageError>;
    /// Removes entries below `before`, and those older than `older_than_seconds`.
    fn trim_log(
        &self,
        agent: &AgentId,
        path: &FilePath,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError>;
    /// The agent's usage counters.
    fn get_usage(&self, agent: &AgentId) -> Result<Usage, StorageError>;
    /// A cached summary of one version by one model.
    fn cached_summary(
        &self,
        agent: &AgentId,
        path: &FilePath,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StorageError>;
    /// Caches a summary of one version by one model.
    fn put_summary(
        &self,
        agent: &AgentId,
        path: &FilePath,
        version: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StorageError>;
    /// The limits the embedder sets for the agent, over the defaults.
    fn limits(&self, agent: &AgentId) -> LimitOverrides;
    /// Current files and log entries holding all (or any) of `terms`, best first.
    fn search(
        &self,
        agent: &AgentId,
        terms: &[String],
        match_all: bool,
        prefix: &Prefix,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StorageError>;
}

/// The model that writes summaries.
pub trait Summariser {
    /// The configured model's name; summaries are cached per model.
    fn model(&self) -> String;
    /// Asks the model for a summary.
    fn summarise(&self, request: &SummaryRequest) -> Result<String, SummariserError>;
}

/// Refuses a `put-version` whose number is not above the last one the path ever had.
pub fn check_new_version(path: &str, version: u64, last: u64) -> Result<(), StorageError> {
    if version <= last {
        return Err(StorageError::Refused(format!(
            "version {version} of {path:?} is not above its last version {last}"
        )));
    }
    Ok(())
}

/// Refuses a `prune-versions` of a path with no versions, or one that would drop the current
/// version.
pub fn check_prune(path: &str, keep_from: u64, current: Option<u64>) -> Result<(), StorageError> {
    let Some(current) = current else {
        return Err(StorageError::Refused(format!(
            "prune-versions of {path:?}, which has no versions"
        )));
    };
    if keep_from > current {
        return Err(StorageError::Refused(format!(
            "prune-versions below {keep_from} would drop the current version {current} of {path:?}"
        )));
    }
    Ok(())
}

/// Refuses a `put-summary` of a version that is not kept (`kept` says whether it is).
pub fn check_summary_kept(path: &str, version: u64, kept: bool) -> Result<(), StorageError> {
    if kept {
        return Ok(());
    }
    Err(StorageError::Refused(format!(
        "put-summary for version {version} of {path:?}, which is not kept"
    )))
}

/// An `append-log` entry as stored: whether it is text, and its body.
pub fn log_body(entry: &LogValue) -> (bool, &str) {
    match entry {
        LogValue::Text(t) => (true, t.as_str()),
        LogValue::Json(j) => (false, j.as_str()),
    }
}

/// An `append-log` entry as stored ([`log_body`]), refused unless its size is the `bytes`
/// the tools counted against the quotas.
pub fn check_log_bytes(entry: &LogValue, bytes: u64) -> Result<(bool, &str), StorageError> {
    let (is_text, body) = log_body(entry);
    if bytes != body.len() as u64 {
        return Err(StorageError::Refused(format!(
            "append-log counted {bytes} bytes for an entry of {} bytes",
            body.len()
        )));
    }
    Ok((is_text, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_hash_is_the_standard_sha256() {
        assert_eq!(
            content_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
