//! `export` and `import`: one agent's data as JSON Lines, exactly.
//!
//! The export holds everything that makes the agent's state: each path ever written with its
//! last version number (so numbers never repeat after an import, even for deleted files),
//! every kept version with its time, cached summaries, every log entry with its id and time,
//! and the operation count. Log bodies keep their stored text, so JSON key order and number
//! spelling survive. The last line carries the counts, so a truncated file is refused.
//! Exporting, importing into an empty store and exporting again gives the same bytes.
//!
//! An import is one write transaction: it lands whole or not at all. It is held to the same
//! rules as the tools, taken from the guest crate (the agent id and path syntax, the size of
//! one write and one log entry, the versions kept, the agent's quotas, all under the
//! operator's limits), so an export edited by hand cannot put in what no call could. Usage
//! counters are then set from the imported rows with the same query `verify` checks them
//! with; the agent's search index is made again by its next search (it is derived data, so
//! it is not exported).

use super::logs;
use super::{map_err, to_u64};
use crate::storage::StoreError;
use crate::storage::check::COUNTED;
use crate::storage::to_i64;
use rusqlite::{Connection, OptionalExtension, params};
use scratchpad_guest::Quotas;
use scratchpad_guest::names::{AgentId, FilePath};
use scratchpad_guest::ports::content_hash;
use scratchpad_guest::tools::{check_entry_json, check_entry_size, check_size};
use scratchpad_store::rows;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};

/// What the first line says the file is.
const FORMAT: &str = "scratchpad-export";
/// The version of the line format this build writes; it reads every one up to it. 2 added
/// each version's `sha256`, 3 each log entry's.
const FORMAT_VERSION: u32 = 3;

/// One line of an export.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// The first line.
    Header {
        /// Always `scratchpad-export`.
        format: String,
        /// The line format's version.
        format_version: u32,
        /// The agent exported.
        agent_id: String,
    },
    /// A path the agent has written, before its versions.
    File {
        /// The path.
        path: String,
        /// The highest version number it ever had.
        last_version: u64,
        /// When the current version was written; none for a deleted file.
        updated_at: Option<String>,
    },
    /// A kept version, oldest first; the newest is the current one.
    Version {
        /// Its file.
        path: String,
        /// Its number.
        version: u64,
        /// Its content.
        content: String,
        /// When it was written.
        created_at: String,
        /// The hash the store kept for it (format 2 on): an import refuses content that
        /// does not match it, so damage on the way is found, not carried in.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// A cached summary of a kept version.
    Summary {
        /// Its file.
        path: String,
        /// The version summarised.
        version: u64,
        /// The model that wrote it.
        model: String,
        /// The summary.
        summary: String,
        /// When it was made.
        created_at: String,
    },
    /// A log, before its entries: the last id it gave and its retention.
    Log {
        /// Its path.
        path: String,
        /// The highest id it ever gave.
        last_id: u64,
        /// Its retention: the newest this many entries.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        keep_last: Option<u64>,
        /// Its retention: entries younger than this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_age_seconds: Option<u64>,
    },
    /// A log entry.
    LogEntry {
        /// Its log.
        path: String,
        /// Its id in that log.
        id: u64,
        /// A string entry, unescaped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Any other entry, as its stored compact JSON text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        json: Option<String>,
        /// When it was appended.
        created_at: String,
        /// The hash the store kept for its body (format 3 on): an import refuses a body that
        /// does not match it, as for a version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
    /// The last line: what came before it, and the agent's operation count.
    End {
        /// `file` lines.
        files: u64,
        /// `version` lines.
        versions: u64,
        /// `summary` lines.
        summaries: u64,
        /// `log_entry` lines.
        log_entries: u64,
        /// `log` lines (none in exports from before logs had them).
        #[serde(default)]
        logs: u64,
        /// The agent's successful tool calls.
        total_operations: u64,
    },
}

/// How many of each line an export or import held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Paths, existing or deleted.
    pub files: u64,
    /// Kept versions.
    pub versions: u64,
    /// Cached summaries.
    pub summaries: u64,
    /// Log entries.
    pub log_entries: u64,
    /// Logs.
    pub logs: u64,
}

impl Tally {
    fn lines(&self) -> u64 {
        self.files + self.versions + self.summaries + self.log_entries + self.logs
    }
}

/// In words: "3 files, 11 versions, 1 summary, 4 log entries in 1 log".
impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let of = scratchpad_guest::words::count;
        write!(
            f,
            "{}, {}, {}, {} in {}",
            of(self.files, "file", "files"),
            of(self.versions, "version", "versions"),
            of(self.summaries, "summary", "summaries"),
            of(self.log_entries, "log entry", "log entries"),
            of(self.logs, "log", "logs"),
        )
    }
}

/// Why an import or an export was refused. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A line is not what the format allows there.
    #[error("line {line}: {reason}")]
    Malformed {
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// The agent already has data and `replace` was not asked for.
    #[error(
        "agent {0:?} already has data in this store; pass --replace to replace it (its files and logs are deleted first)"
    )]
    Exists(String),
    /// An export of an agent the store has never seen: a typo would otherwise make an
    /// empty export that looks like a backup.
    #[error(
        "agent {0:?} has nothing in this store (`stats` lists the agents that do); nothing was written"
    )]
    NoAgent(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The file could not be read: said in this one's text, so not its source (a chain of
    /// causes would say it twice).
    #[error("cannot read the export: {0}")]
    Io(std::io::Error),
}

impl From<std::io::Error> for ImportError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

fn write_line(out: &mut dyn Write, line: &Line) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

/// Writes agent `agent`'s data to `out`; `progress` is told every line written.
pub fn export(
    conn: &mut Connection,
    agent: &str,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Tally, ImportError> {
    let tx = conn.transaction().map_err(map_err)?;
    let total_operations: u64 = tx
        .query_row(
            "SELECT total_operations FROM agents WHERE agent_id = ?1",
            [agent],
            |r| r.get::<_, i64>(0).map(to_u64),
        )
        .optional()
        .map_err(map_err)?
        .ok_or_else(|| ImportError::NoAgent(agent.to_owned()))?;
    write_line(
        out,
        &Line::Header {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            agent_id: agent.into(),
        },
    )?;
    let mut tally = Tally::default();
    let mut files = tx
        .prepare(
            "SELECT id, path, last_version, updated_at, current_version IS NOT NULL
             FROM files WHERE agent_id = ?1 ORDER BY path",
        )
        .map_err(map_err)?;
    let mut versions = tx
        .prepare(
            "SELECT version, content, created_at, sha256 FROM versions WHERE file_id = ?1
             ORDER BY version",
        )
        .map_err(map_err)?;
    let mut summaries = tx
        .prepare(
            "SELECT version, model, summary, created_at FROM summaries
             WHERE file_id = ?1 ORDER BY version, model",
        )
        .map_err(map_err)?;
    let rows = files
        .query_map([agent], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                to_u64(r.get(2)?),
                r.get::<_, Option<String>>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(map_err)?;
    for (id, path, last_version, updated_at, exists) in rows {
        let updated_at = updated_at.filter(|_| exists);
        write_line(
            out,
            &Line::File {
                path: path.clone(),
                last_version,
                updated_at,
            },
        )?;
        tally.files += 1;
        let mut kept = versions.query([id]).map_err(map_err)?;
        while let Some(r) = kept.next().map_err(map_err)? {
            let line = Line::Version {
                path: path.clone(),
                version: to_u64(r.get(0).map_err(map_err)?),
                content: r.get(1).map_err(map_err)?,
                created_at: r.get(2).map_err(map_err)?,
                sha256: Some(r.get(3).map_err(map_err)?),
            };
            write_line(out, &line)?;
            tally.versions += 1;
            progress(tally.lines());
        }
        let mut cached = summaries.query([id]).map_err(map_err)?;
        while let Some(r) = cached.next().map_err(map_err)? {
            let line = Line::Summary {
                path: path.clone(),
                version: to_u64(r.get(0).map_err(map_err)?),
                model: r.get(1).map_err(map_err)?,
                summary: r.get(2).map_err(map_err)?,
                created_at: r.get(3).map_err(map_err)?,
            };
            write_line(out, &line)?;
            tally.summaries += 1;
        }
    }
    let mut logs = tx
        .prepare(
            "SELECT path, last_id, keep_last, max_age_seconds FROM logs
             WHERE agent_id = ?1 ORDER BY path",
        )
        .map_err(map_err)?;
    let mut entries = tx
        .prepare(
            "SELECT id, is_text, body, created_at, sha256 FROM log_entries
             WHERE agent_id = ?1 AND path = ?2 ORDER BY id",
        )
        .map_err(map_err)?;
    let log_rows = logs
        .query_map([agent], |r| {
            Ok((
                r.get::<_, String>(0)?,
                to_u64(r.get(1)?),
                r.get::<_, Option<i64>>(2)?.map(to_u64),
                r.get::<_, Option<i64>>(3)?.map(to_u64),
            ))
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(map_err)?;
    for (path, last_id, keep_last, max_age_seconds) in log_rows {
        let line = Line::Log {
            path: path.clone(),
            last_id,
            keep_last,
            max_age_seconds,
        };
        write_line(out, &line)?;
        tally.logs += 1;
        let mut rows = entries.query(params![agent, path]).map_err(map_err)?;
        while let Some(r) = rows.next().map_err(map_err)? {
            let body: String = r.get(2).map_err(map_err)?;
            let is_text: bool = r.get(1).map_err(map_err)?;
            let (text, json) = if is_text {
                (Some(body), None)
            } else {
                (None, Some(body))
            };
            let line = Line::LogEntry {
                path: path.clone(),
                id: to_u64(r.get(0).map_err(map_err)?),
                text,
                json,
                created_at: r.get(3).map_err(map_err)?,
                sha256: Some(r.get(4).map_err(map_err)?),
            };
            write_line(out, &line)?;
            tally.log_entries += 1;
            if tally.log_entries % 1024 == 0 {
                progress(tally.lines());
            }
        }
    }
    write_line(
        out,
        &Line::End {
            files: tally.files,
            versions: tally.versions,
            summaries: tally.summaries,
            log_entries: tally.log_entries,
            logs: tally.logs,
            total_operations,
        },
    )?;
    out.flush()?;
    Ok(tally)
}

/// A rule's refusal in the guest's own words. (The parsers and size checks import uses
/// only refuse arguments; the other kinds carry no words of a rule.)
fn rule(refusal: scratchpad_guest::ToolError) -> String {
    use scratchpad_guest::ToolError::{Conflict, InvalidArgument, NotFound, QuotaExceeded};
    match refusal {
        InvalidArgument(m) | NotFound(m) | QuotaExceeded(m) | Conflict(m) => m,
        _ => "a rule of the tools refuses it".into(),
    }
}

/// Where an import has got to: the file being filled, and the numbers seen so far.
struct Importer<'a> {
    tx: &'a rusqlite::Transaction<'a>,
    agent: String,
    /// The agent's quotas and size limits, under the operator's limits.
    quotas: Quotas,
    /// Versions of the current file so far, and bytes stored in all so far.
    kept: u32,
    bytes: u64,
    /// (id, path, last version, newest version seen, its bytes) of the current `file`.
    file: Option<(i64, String, u64, u64, u64)>,
    tally: Tally,
    last_entry: Option<(String, u64)>,
    /// The `log` line last read: (path, last id).
    log: Option<(String, u64)>,
}

impl Importer<'_> {
    /// Counts `bytes` more stored, within the agent's byte quota.
    fn spend(&mut self, bytes: u64) -> Result<(), String> {
        self.bytes += bytes;
        if self.bytes > self.quotas.max_total_bytes {
            return Err(format!(
                "the agent would store more than {} bytes, its quota",
                self.quotas.max_total_bytes
            ));
        }
        Ok(())
    }

    /// Ends the current file: its current version is its newest kept one.
    fn close_file(&mut self) -> Result<(), StoreError> {
        if let Some((id, _, _, newest, bytes)) = self.file.take()
            && newest > 0
        {
            self.tx
                .execute(
                    "UPDATE files SET current_version = ?2, current_bytes = ?3 WHERE id = ?1",
                    params![id, to_i64(newest)?, to_i64(bytes)?],
                )
                .map_err(map_err)?;
        }
        Ok(())
    }

    fn take(&mut self, line: Line) -> Result<(), String> {
        match line {
            Line::Header { .. } => return Err("a second header".into()),
            Line::End { .. } => return Err("unreachable: the end line is handled first".into()),
            Line::File {
                path,
                last_version,
                updated_at,
            } => {
                self.close_file().map_err(|e| e.to_string())?;
                FilePath::parse(&path).map_err(rule)?;
                if self.tally.files >= self.quotas.max_files {
                    return Err(format!(
                        "more than {} files; the agent's quota is {} files",
                        self.quotas.max_files, self.quotas.max_files
                    ));
                }
                self.kept = 0;
                if last_version == 0 {
                    return Err(format!("file {path:?} has last_version 0"));
                }
                let id: i64 = self
                    .tx
                    .query_row(
                        "INSERT INTO files (agent_id, path, last_version, updated_at)
                         VALUES (?1, ?2, ?3, ?4) RETURNING id",
                        params![
                            self.agent,
                            path,
                            to_i64(last_version).map_err(|e| e.to_string())?,
                            updated_at
                        ],
                        |r| r.get(0),
                    )
                    .map_err(|e| match e.sqlite_error_code() {
                        Some(rusqlite::ErrorCode::ConstraintViolation) => {
                            format!("file {path:?} appears twice")
                        }
                        _ => map_err(e).to_string(),
                    })?;
                self.file = Some((id, path, last_version, 0, 0));
                self.tally.files += 1;
            }
            Line::Version {
                path,
                version,
                content,
                created_at,
                sha256,
            } => {
                check_size(&self.quotas, &content)
                    .map_err(|e| format!("version {version} of {path:?}: {}", rule(e)))?;
                let hash = hash_as_exported(&content, sha256.as_deref())
                    .map_err(|e| format!("version {version} of {path:?}: its content {e}"))?;
                self.kept += 1;
                if self.kept > self.quotas.versions_kept {
                    return Err(format!(
                        "{path:?} has more than {} versions; {} are kept",
                        self.quotas.versions_kept, self.quotas.versions_kept
                    ));
                }
                self.spend(content.len() as u64)?;
                let Some((id, file, last, newest, bytes)) = self.file.as_mut() else {
                    return Err(format!("version of {path:?} before any file line"));
                };
                if *file != path {
                    return Err(format!("version of {path:?} under file {file:?}"));
                }
                if version <= *newest || version > *last {
                    return Err(format!(
                        "version {version} of {path:?} is out of order (after {newest}, last {last})"
                    ));
                }
                *newest = version;
                *bytes = content.len() as u64;
                self.tx
                    .execute(
                        "INSERT INTO versions (file_id, version, bytes, content, created_at, sha256)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![
                            *id,
                            version as i64,
                            content.len() as i64,
                            content,
                            created_at,
                            hash
                        ],
                    )
                    .map_err(|e| map_err(e).to_string())?;
                self.tally.versions += 1;
            }
            Line::Summary {
                path,
                version,
                model,
                summary,
                created_at,
            } => {
                let Some((id, file, ..)) = self.file.as_ref() else {
                    return Err(format!("summary of {path:?} before any file line"));
                };
                if *file != path {
                    return Err(format!("summary of {path:?} under file {file:?}"));
                }
                let stored = self
                    .tx
                    .execute(
                        "INSERT INTO summaries (file_id, version, model, summary, created_at)
                         SELECT ?1, version, ?3, ?4, ?5 FROM versions
                         WHERE file_id = ?1 AND version = ?2",
                        params![
                            *id,
                            to_i64(version).map_err(|e| e.to_string())?,
                            model,
                            summary,
                            created_at
                        ],
                    )
                    .map_err(|e| map_err(e).to_string())?;
                if stored != 1 {
                    return Err(format!("summary of {path:?} v{version}, which is not kept"));
                }
                self.tally.summaries += 1;
            }
            Line::Log {
                path,
                last_id,
                keep_last,
                max_age_seconds,
            } => {
                self.close_file().map_err(|e| e.to_string())?;
                FilePath::parse(&path).map_err(rule)?;
                let number = |v: Option<u64>| v.map(to_i64).transpose().map_err(|e| e.to_string());
                self.tx
                    .execute(
                        "INSERT INTO logs (agent_id, path, last_id, keep_last, max_age_seconds)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![
                            self.agent,
                            path,
                            number(Some(last_id))?,
                            number(keep_last)?,
                            number(max_age_seconds)?
                        ],
                    )
                    .map_err(|e| match e.sqlite_error_code() {
                        Some(rusqlite::ErrorCode::ConstraintViolation) => {
                            format!("log {path:?} appears twice")
                        }
                        _ => map_err(e).to_string(),
                    })?;
                self.log = Some((path, last_id));
                self.tally.logs += 1;
            }
            Line::LogEntry {
                path,
                id,
                text,
                json,
                created_at,
                sha256,
            } => {
                self.close_file().map_err(|e| e.to_string())?;
                if let Some((log, last_id)) = &self.log
                    && *log == path
                    && id > *last_id
                {
                    return Err(format!(
                        "log entry {path:?} #{id} is above the log's last id {last_id}"
                    ));
                }
                let (is_text, body) = match (text, json) {
                    (Some(text), None) => (true, text),
                    (None, Some(json)) => {
                        check_entry_json(&json)
                            .map_err(|e| format!("{path:?} #{id}: {}", rule(e)))?;
                        (false, json)
                    }
                    _ => {
                        return Err(format!(
                            "log entry {path:?} #{id} needs exactly one of text and json"
                        ));
                    }
                };
                if let Some((last_path, last_id)) = &self.last_entry
                    && (last_path, *last_id) >= (&path, id)
                {
                    return Err(format!("log entry {path:?} #{id} is out of order"));
                }
                if id == 0 {
                    return Err(format!("log entry {path:?} has id 0"));
                }
                FilePath::parse(&path).map_err(rule)?;
                check_entry_size(&self.quotas, body.len() as u64)
                    .map_err(|e| format!("{path:?} #{id}: {}", rule(e)))?;
                let hash = hash_as_exported(&body, sha256.as_deref())
                    .map_err(|e| format!("log entry {path:?} #{id}: its body {e}"))?;
                if self.tally.log_entries >= self.quotas.max_log_entries {
                    return Err(format!(
                        "more than {} log entries; the agent's quota is {} log entries",
                        self.quotas.max_log_entries, self.quotas.max_log_entries
                    ));
                }
                self.spend(body.len() as u64)?;
                self.tx
                    .execute(
                        "INSERT INTO log_entries (agent_id, path, id, is_text, body, bytes, created_at, sha256)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                        params![self.agent, path, id as i64, is_text, body, body.len() as i64, created_at, hash],
                    )
                    .map_err(|e| map_err(e).to_string())?;
                self.last_entry = Some((path, id));
                self.tally.log_entries += 1;
            }
        }
        Ok(())
    }
}

/// The hash `text` is stored with, refused when the export gave another: the line was
/// changed or damaged on the way.
fn hash_as_exported(text: &str, exported: Option<&str>) -> Result<String, &'static str> {
    let hash = content_hash(text);
    match exported {
        Some(h) if h != hash => {
            Err("does not match its sha256 (the export was changed or damaged)")
        }
        _ => Ok(hash),
    }
}

/// The agent an export in `input` is of, read from its first line, its header (`as_agent`
/// instead, if given). Read before the store is opened, so that a file that is no export
/// changes nothing, not even by making a store where there was none.
pub fn read_header(input: &mut dyn BufRead, as_agent: Option<&str>) -> Result<String, ImportError> {
    let malformed = |reason: String| ImportError::Malformed { line: 1, reason };
    let mut first = String::new();
    if input.read_line(&mut first)? == 0 {
        return Err(malformed("the file is empty".into()));
    }
    match serde_json::from_str(first.trim_end_matches(['\n', '\r'])) {
        Ok(Line::Header {
            format,
            format_version,
            agent_id,
        }) if format == FORMAT => {
            if !(1..=FORMAT_VERSION).contains(&format_version) {
                return Err(malformed(format!(
                    "format version {format_version}; this build reads 1 to {FORMAT_VERSION}"
                )));
            }
            let agent = as_agent.map_or(agent_id, str::to_owned);
            AgentId::parse(&agent).map_err(|e| malformed(rule(e)))?;
            Ok(agent)
        }
        _ => Err(malformed(format!(
            "not a {FORMAT} header (export files start with one)"
        ))),
    }
}

/// Reads the rest of an export, after [`read_header`] gave its `agent`, from `input` into the
/// store, replacing the agent's data only if `replace`, held to `quotas` and the tools'
/// rules. One transaction: all or nothing.
pub fn import(
    conn: &mut Connection,
    agent: &str,
    input: &mut dyn BufRead,
    replace: bool,
    quotas: Quotas,
    progress: &mut dyn FnMut(u64),
) -> Result<Tally, ImportError> {
    let malformed = |line: u64, reason: String| ImportError::Malformed { line, reason };
    let lines = input.lines();
    // The header was line 1.
    let mut number = 1;
    let tx = conn
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .map_err(map_err)?;
    let has_data: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM agents WHERE agent_id = ?1)
                 OR EXISTS (SELECT 1 FROM files WHERE agent_id = ?1)
                 OR EXISTS (SELECT 1 FROM log_entries WHERE agent_id = ?1)
                 OR EXISTS (SELECT 1 FROM logs WHERE agent_id = ?1)",
            [agent],
            |r| r.get(0),
        )
        .map_err(map_err)?;
    // The agent's rows change wholesale: its generation moves on to a new lineage (never
    // back), so a write call that read them before this import does not write from that
    // read, and the search index, whatever it caught up to meanwhile, indexes them afresh.
    let generation = rows::next_lineage(rows::generation(&tx, agent).map_err(StoreError::from)?);
    if has_data {
        if !replace {
            return Err(ImportError::Exists(agent.to_owned()));
        }
        for sql in [
            "DELETE FROM summaries WHERE file_id IN (SELECT id FROM files WHERE agent_id = ?1)",
            "DELETE FROM versions WHERE file_id IN (SELECT id FROM files WHERE agent_id = ?1)",
            "DELETE FROM files WHERE agent_id = ?1",
            "DELETE FROM log_entries WHERE agent_id = ?1",
            "DELETE FROM logs WHERE agent_id = ?1",
            "DELETE FROM agents WHERE agent_id = ?1",
        ] {
            tx.execute(sql, [agent]).map_err(map_err)?;
        }
    }
    let mut importer = Importer {
        tx: &tx,
        agent: agent.to_owned(),
        quotas,
        kept: 0,
        bytes: 0,
        file: None,
        tally: Tally::default(),
        last_entry: None,
        log: None,
    };
    let mut end = None;
    for text in lines {
        number += 1;
        let text = text?;
        if end.is_some() {
            return Err(malformed(number, "a line after the end line".into()));
        }
        let line: Line =
            serde_json::from_str(&text).map_err(|e| malformed(number, e.to_string()))?;
        if let Line::End { .. } = line {
            end = Some(line);
            continue;
        }
        importer.take(line).map_err(|r| malformed(number, r))?;
        if number % 1024 == 0 {
            progress(importer.tally.lines());
        }
    }
    importer.close_file()?;
    logs::backfill(&tx, Some(agent)).map_err(StoreError::from)?;
    let tally = importer.tally;
    let Some(Line::End {
        files,
        versions,
        summaries,
        log_entries,
        logs: log_lines,
        total_operations,
    }) = end
    else {
        return Err(malformed(
            number,
            "the file ends without its end line (truncated?)".into(),
        ));
    };
    let said = Tally {
        files,
        versions,
        summaries,
        log_entries,
        logs: log_lines,
    };
    if said != tally {
        return Err(malformed(
            number,
            format!("the end line counts {said} but the file holds {tally}"),
        ));
    }
    tx.execute(
        &format!(
            "INSERT INTO agents
               (agent_id, total_bytes, file_count, log_entry_count, total_operations, generation)
             SELECT ?1, ifnull(max(total_bytes), 0), ifnull(max(file_count), 0),
                    ifnull(max(log_entry_count), 0), ?2, ?3
             FROM ({COUNTED}) WHERE agent_id = ?1"
        ),
        params![agent, to_i64(total_operations)?, generation],
    )
    .map_err(map_err)?;
    tx.commit().map_err(map_err)?;
    Ok(tally)
}
