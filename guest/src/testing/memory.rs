//! In-memory ports for tests and fuzz targets: a store that keeps its counters the way the host's
//! SQLite store does, and a scripted model that counts its requests.

use crate::bindings::scratchpad::mcp::storage::{
    FileState, LogState, MatchRef, Retention, SearchMatch, VersionInfo,
};
use crate::bindings::scratchpad::mcp::summariser::SummaryRequest;
use crate::limits::NO_OVERRIDES;
use crate::names::{AgentId, FilePath, Prefix};
use crate::ports::{
    Storage, Summariser, check_log_bytes, check_new_version, check_prune, check_summary_kept,
};
use crate::tools::search::{entry_text, words};
use crate::{FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, SummariserError, Usage};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// The store's clock starts at 2026-11-30T00:00:00Z and moves only by [`Memory::advance`].
fn stamp(ms: u64) -> String {
    let (secs, ms) = (ms / 1000, ms % 1000);
    let (days, secs) = (secs / 86_400, secs % 86_400);
    let (month, day) = if days == 0 {
        (11, 30)
    } else {
        (12, days.min(31))
    };
    format!(
        "2026-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A log that keeps every entry.
const KEEP_ALL: Retention = Retention {
    keep_last: None,
    max_age_seconds: None,
};

#[derive(Default)]
struct File {
    last_version: u64,
    versions: BTreeMap<u64, String>,
    /// Each kept version's hash, made when it was put, as a real store keeps it.
    hashes: BTreeMap<u64, String>,
}

/// (agent, path, version, model).
type SummaryKey = (String, String, u64, String);

#[derive(Default)]
struct Data {
    files: BTreeMap<(String, String), File>,
    logs: BTreeMap<(String, String), Vec<LogEntry>>,
    /// (last id ever, retention) of each log.
    log_meta: BTreeMap<(String, String), (u64, Retention)>,
    usage: BTreeMap<String, Usage>,
    summaries: BTreeMap<SummaryKey, String>,
}

/// A store in memory.
#[derive(Default)]
pub struct Memory {
    data: RefCell<Data>,
    calls: Cell<usize>,
    /// Milliseconds since the clock's start.
    clock: Cell<u64>,
    limits: Option<LimitOverrides>,
}

fn zero() -> Usage {
    Usage {
        total_bytes: 0,
        file_count: 0,
        log_entry_count: 0,
        total_operations: 0,
    }
}

impl Memory {
    /// An empty store whose embedder sets these limits for every agent.
    pub fn with_limits(limits: LimitOverrides) -> Self {
        Self {
            limits: Some(limits),
            ..Self::default()
        }
    }

    fn key(a: &AgentId, p: &FilePath) -> (String, String) {
        (a.as_str().to_owned(), p.as_str().to_owned())
    }

    fn summary_key(a: &AgentId, p: &FilePath, v: u64, model: &str) -> SummaryKey {
        let (agent, path) = Self::key(a, p);
        (agent, path, v, model.to_owned())
    }

    fn touch(&self) -> std::cell::RefMut<'_, Data> {
        self.calls.set(self.calls.get() + 1);
        self.data.borrow_mut()
    }

    /// Moves the store's clock on (it covers the first month; tests move it by seconds).
    pub fn advance(&self, ms: u64) {
        self.clock.set(self.clock.get() + ms);
    }

    fn now(&self) -> String {
        stamp(self.clock.get())
    }

    /// How many storage calls were made.
    pub fn calls(&self) -> usize {
        self.calls.get()
    }

    /// The version numbers kept for a path.
    pub fn kept_versions(&self, agent: &str, path: &str) -> Vec<u64> {
        let data = self.data.borrow();
        data.files[&(agent.to_owned(), path.to_owned())]
            .versions
            .keys()
            .copied()
            .collect()
    }

    /// An agent's counters, without counting a call.
    pub fn usage_of(&self, agent: &str) -> Usage {
        self.data
            .borrow()
            .usage
            .get(agent)
            .copied()
            .unwrap_or_else(zero)
    }

    /// Sets an agent's byte counter, to start a test near a quota.
    pub fn set_total_bytes(&self, agent: &str, bytes: u64) {
        self.data
            .borrow_mut()
            .usage
            .entry(agent.into())
            .or_insert_with(zero)
            .total_bytes = bytes;
    }

    /// Sets an agent's log entry counter, to start a test near a quota.
    pub fn set_log_entry_count(&self, agent: &str, count: u64) {
        let mut data = self.data.borrow_mut();
        data.usage
            .entry(agent.into())
            .or_insert_with(zero)
            .log_entry_count = count;
    }
}

impl Storage for Memory {
    fn stat_file(&self, a: &AgentId, p: &FilePath) -> Result<Option<FileState>, StorageError> {
        let data = self.touch();
        let created_at = self.now();
        Ok(data.files.get(&Self::key(a, p)).map(|f| FileState {
            last_version: f.last_version,
            kept: f
                .versions
                .iter()
                .map(|(v, c)| VersionInfo {
                    version: *v,
                    bytes: c.len() as u64,
                    sha256: f.hashes[v].clone(),
                    created_at: created_at.clone(),
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
        let data = self.touch();
        Ok(data
            .files
            .get(&Self::key(a, p))
            .and_then(|f| f.versions.get(&v).cloned()))
    }

    fn put_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        content: &str,
    ) -> Result<(), StorageError> {
        let mut data = self.touch();
        let file = data.files.entry(Self::key(a, p)).or_default();
        check_new_version(p.as_str(), v, file.last_version)?;
        let new_file = file.versions.is_empty();
        file.last_version = v;
        file.versions.insert(v, content.to_owned());
        file.hashes.insert(v, crate::ports::content_hash(content));
        let usage = data.usage.entry(a.as_str().into()).or_insert_with(zero);
        usage.total_bytes += content.len() as u64;
        usage.file_count += u64::from(new_file);
        Ok(())
    }

    fn prune_versions(
        &self,
        a: &AgentId,
        p: &FilePath,
        keep_from: u64,
    ) -> Result<(), StorageError> {
        let mut data = self.touch();
        let file = data.files.entry(Self::key(a, p)).or_default();
        check_prune(
            p.as_str(),
            keep_from,
            file.versions.last_key_value().map(|(v, _)| *v),
        )?;
        let kept = file.versions.split_off(&keep_from);
        let freed: usize = file.versions.values().map(String::len).sum();
        file.versions = kept;
        file.hashes = file.hashes.split_off(&keep_from);
        // A pruned version's summaries go with it.
        data.summaries.retain(|(agent, path, version, _), _| {
            !(agent == a.as_str() && path == p.as_str() && *version < keep_from)
        });
        data.usage
            .get_mut(a.as_str())
            .expect("usage exists")
            .total_bytes -= freed as u64;
        Ok(())
    }

    fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
        let mut data = self.touch();
        let Some(file) = data.files.get_mut(&Self::key(a, p)) else {
            return Ok(false);
        };
        let freed: usize = file.versions.values().map(String::len).sum();
        let existed = !file.versions.is_empty();
        file.versions.clear();
        file.hashes.clear();
        data.summaries
            .retain(|(agent, path, _, _), _| !(agent == a.as_str() && path == p.as_str()));
        if existed {
            let usage = data.usage.get_mut(a.as_str()).expect("usage exists");
            usage.total_bytes -= freed as u64;
            usage.file_count -= 1;
        }
        Ok(existed)
    }

    fn list_files(&self, a: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError> {
        let data = self.touch();
        Ok(data
            .files
            .iter()
            .filter(|((agent, path), f)| {
                agent == a.as_str() && path.starts_with(prefix.as_str()) && !f.versions.is_empty()
            })
            .map(|((_, path), f)| {
                let (version, content) = f.versions.last_key_value().expect("not empty");
                FileMeta {
                    path: path.clone(),
                    version: *version,
                    bytes: content.len() as u64,
                    updated_at: self.now(),
                }
            })
            .collect())
    }

    fn append_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        e: &LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError> {
        check_log_bytes(e, bytes)?;
        let created_at = self.now();
        let mut data = self.touch();
        let meta = data
            .log_meta
            .entry(Self::key(a, p))
            .or_insert((0, KEEP_ALL));
        meta.0 += 1;
        let id = meta.0;
        let log = data.logs.entry(Self::key(a, p)).or_default();
        log.push(LogEntry {
            id,
            entry: e.clone(),
            created_at,
        });
        let usage = data.usage.entry(a.as_str().into()).or_insert_with(zero);
        usage.total_bytes += bytes;
        usage.log_entry_count += 1;
        Ok(id)
    }

    fn read_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError> {
        let data = self.touch();
        Ok(data
            .logs
            .get(&Self::key(a, p))
            .map(|log| {
                log.iter()
                    .filter(|e| e.id > after)
                    .take(limit as usize)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    fn log_info(&self, a: &AgentId, p: &FilePath) -> Result<LogState, StorageError> {
        let data = self.touch();
        let (last_id, retention) = data
            .log_meta
            .get(&Self::key(a, p))
            .copied()
            .unwrap_or((0, KEEP_ALL));
        let entries = data.logs.get(&Self::key(a, p)).map_or(0, Vec::len) as u64;
        Ok(LogState {
            last_id,
            entries,
            retention,
        })
    }

    fn set_log_retention(
        &self,
        a: &AgentId,
        p: &FilePath,
        retention: Retention,
    ) -> Result<(), StorageError> {
        let mut data = self.touch();
        data.log_meta
            .entry(Self::key(a, p))
            .or_insert((0, KEEP_ALL))
            .1 = retention;
        Ok(())
    }

    fn trim_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError> {
        // Stamps of one width: text order is time order.
        let cutoff = older_than_seconds
            .map(|s| stamp(self.clock.get().saturating_sub(s.saturating_mul(1000))));
        let old = |e: &LogEntry| cutoff.as_ref().is_some_and(|c| e.created_at < *c);
        let mut data = self.touch();
        let log = data.logs.entry(Self::key(a, p)).or_default();
        let (gone, kept): (Vec<LogEntry>, Vec<LogEntry>) = std::mem::take(log)
            .into_iter()
            .partition(|e| e.id < before || old(e));
        *log = kept;
        let bytes: u64 = gone.iter().map(|e| entry_text(&e.entry).len() as u64).sum();
        let usage = data.usage.entry(a.as_str().into()).or_insert_with(zero);
        usage.total_bytes -= bytes;
        usage.log_entry_count -= gone.len() as u64;
        Ok(gone.len() as u64)
    }

    fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
        self.calls.set(self.calls.get() + 1);
        Ok(self.usage_of(a.as_str()))
    }

    fn cached_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        model: &str,
    ) -> Result<Option<String>, StorageError> {
        let data = self.touch();
        let key = Self::summary_key(a, p, v, model);
        Ok(data.summaries.get(&key).cloned())
    }

    fn put_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StorageError> {
        let mut data = self.touch();
        let kept = data
            .files
            .get(&Self::key(a, p))
            .is_some_and(|f| f.versions.contains_key(&v));
        check_summary_kept(p.as_str(), v, kept)?;
        let key = Self::summary_key(a, p, v, model);
        data.summaries.insert(key, summary.to_owned());
        Ok(())
    }

    fn limits(&self, _: &AgentId) -> LimitOverrides {
        self.limits.unwrap_or(NO_OVERRIDES)
    }

    /// Ranks by how often the terms occur, then by path and id: not BM25, but a ranking.
    fn search(
        &self,
        a: &AgentId,
        terms: &[String],
        match_all: bool,
        prefix: &Prefix,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StorageError> {
        let data = self.touch();
        let score = |text: &str| -> Option<usize> {
            let found: Vec<String> = words(text).map(|(_, w)| w).collect();
            let held = |t: &String| found.contains(t);
            let matched = if match_all {
                terms.iter().all(held)
            } else {
                terms.iter().any(held)
            };
            matched.then(|| found.iter().filter(|w| terms.contains(w)).count())
        };
        let mine =
            |agent: &str, path: &str| agent == a.as_str() && path.starts_with(prefix.as_str());
        let mut hits: Vec<(usize, SearchMatch)> = Vec::new();
        for ((agent, path), file) in &data.files {
            if let Some((&version, content)) = file.versions.last_key_value()
                && mine(agent, path)
                && let Some(n) = score(content)
            {
                hits.push((
                    n,
                    SearchMatch {
                        path: path.clone(),
                        at: MatchRef::File(version),
                    },
                ));
            }
        }
        for ((agent, path), log) in &data.logs {
            for e in log.iter().filter(|_| mine(agent, path)) {
                if let Some(n) = score(entry_text(&e.entry)) {
                    hits.push((
                        n,
                        SearchMatch {
                            path: path.clone(),
                            at: MatchRef::LogEntry(e.id),
                        },
                    ));
                }
            }
        }
        hits.sort_by(|(x, _), (y, _)| y.cmp(x));
        Ok(hits
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .map(|(_, m)| m)
            .collect())
    }
}

/// Each step is a call on the store itself: it has no transactions to commit.
impl super::contract::Harness for Memory {
    fn call(&self, _agent: &str, step: &mut dyn FnMut(&dyn Storage)) {
        step(self);
    }

    fn wait(&self, ms: u64) {
        self.advance(ms);
    }
}

/// A model that gives one scripted answer and counts how often it was asked.
pub struct ScriptedModel {
    name: String,
    answer: Result<String, SummariserError>,
    requests: Cell<usize>,
}

impl ScriptedModel {
    /// A model that always answers `summary`.
    pub fn answering(summary: &str) -> Self {
        Self {
            name: "test-model".into(),
            answer: Ok(summary.into()),
            requests: Cell::new(0),
        }
    }

    /// A model that always fails with `error`.
    pub fn failing(error: SummariserError) -> Self {
        Self {
            answer: Err(error),
            ..Self::answering("")
        }
    }

    /// The same model under another name.
    pub fn named(self, name: &str) -> Self {
        Self {
            name: name.into(),
            ..self
        }
    }

    /// How many summaries were asked for.
    pub fn requests(&self) -> usize {
        self.requests.get()
    }
}

impl Summariser for ScriptedModel {
    fn model(&self) -> String {
        self.name.clone()
    }

    fn summarise(&self, _: &SummaryRequest) -> Result<String, SummariserError> {
        self.requests.set(self.requests.get() + 1);
        self.answer.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test double keeps the storage contract the real stores keep.
    #[test]
    fn the_in_memory_store_keeps_the_storage_contract() {
        crate::testing::contract::check(&Memory::default());
    }

    #[test]
    fn the_clock_writes_rfc3339_stamps_of_one_width() {
        assert_eq!(stamp(0), "2026-11-30T00:00:00.000Z");
        assert_eq!(stamp(3_723_004), "2026-11-30T01:02:03.004Z");
        assert_eq!(stamp(86_400_000 + 1), "2026-12-01T00:00:00.001Z");
    }
}
