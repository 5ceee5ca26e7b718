//! Each tool's MCP result (`structuredContent`): the WIT result in the SPEC's JSON shape.
//! Optional fields are left out when empty, so the common answer stays small.

use crate::api;
use crate::{FileMeta, LogEntry, LogValue};
use serde::Serialize;
use serde_json::Value;

/// `write_file` result.
#[derive(Debug, Serialize)]
pub struct WriteFileOutput {
    /// The path written.
    pub path: String,
    /// The version now current.
    pub version: u64,
    /// Size of the content in UTF-8 bytes.
    pub bytes: u64,
    /// True when the content equalled the current version, so no version was made.
    pub unchanged: bool,
}

impl From<api::WriteFileResult> for WriteFileOutput {
    fn from(r: api::WriteFileResult) -> Self {
        Self {
            path: r.path,
            version: r.version,
            bytes: r.bytes,
            unchanged: r.unchanged,
        }
    }
}

/// `read_file` result: `content`, or `since_version` with `diff`.
#[derive(Debug, Serialize)]
pub struct ReadFileOutput {
    /// The path read.
    pub path: String,
    /// The newest version.
    pub current_version: u64,
    /// The whole current content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// True when `since_version` was asked for but is no longer kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_too_old: Option<bool>,
    /// True when the diff would have been larger than the content.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_not_smaller: Option<bool>,
    /// True when the diff would not have fit one answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff_too_large: Option<bool>,
    /// With a part of the content: the number of its first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_line: Option<u64>,
    /// With a part of the content: pass as `offset` for the next part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_line: Option<u64>,
    /// With a part that ends inside a long line: pass as `column` for the next part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_column: Option<u64>,
    /// With a part of the content: lines after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_left: Option<u64>,
    /// The version the diff starts from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_version: Option<u64>,
    /// The chunks that turn `since_version` into `current_version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Vec<DiffChunk>>,
    /// True when nothing changed since `since_version` (the diff is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchanged: Option<bool>,
    /// The answer's estimated size in tokens.
    pub tokens: u64,
}

/// One chunk of a line diff.
#[derive(Debug, Serialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum DiffChunk {
    /// Lines in both versions.
    Equal {
        /// The lines.
        lines: Vec<String>,
    },
    /// Lines only in the old version.
    Remove {
        /// The lines.
        lines: Vec<String>,
    },
    /// Lines only in the new version.
    Add {
        /// The lines.
        lines: Vec<String>,
    },
    /// Unchanged lines left out: copy `count` lines of the old version from `old_line`.
    Skip {
        /// How many lines.
        count: u32,
        /// 1-based line number in the old version.
        old_line: u32,
        /// 1-based line number in the new version.
        new_line: u32,
    },
}

impl From<api::DiffChunk> for DiffChunk {
    fn from(c: api::DiffChunk) -> Self {
        match c {
            api::DiffChunk::Equal(lines) => DiffChunk::Equal { lines },
            api::DiffChunk::Remove(lines) => DiffChunk::Remove { lines },
            api::DiffChunk::Add(lines) => DiffChunk::Add { lines },
            api::DiffChunk::Skip(s) => DiffChunk::Skip {
                count: s.count,
                old_line: s.old_line,
                new_line: s.new_line,
            },
        }
    }
}

impl From<api::ReadFileResult> for ReadFileOutput {
    fn from(r: api::ReadFileResult) -> Self {
        let mut out = Self {
            path: r.path,
            current_version: r.current_version,
            content: None,
            version_too_old: None,
            diff_not_smaller: None,
            diff_too_large: None,
            first_line: None,
            next_line: None,
            next_column: None,
            lines_left: None,
            since_version: None,
            diff: None,
            unchanged: None,
            tokens: r.tokens,
        };
        match r.body {
            api::ReadBody::Content(whole) => {
                // A whole file in one answer says nothing of lines: the common case stays small.
                if whole.first_line != 1 || whole.next_line.is_some() {
                    out.first_line = Some(whole.first_line);
                    out.next_line = whole.next_line;
                    out.next_column = whole.next_column;
                    out.lines_left = Some(whole.lines_left);
                }
                out.content = Some(whole.content);
                match whole.reason {
                    Some(api::WholeContentReason::VersionTooOld) => {
                        out.version_too_old = Some(true)
                    }
                    Some(api::WholeContentReason::DiffNotSmaller) => {
                        out.diff_not_smaller = Some(true)
                    }
                    Some(api::WholeContentReason::DiffTooLarge) => out.diff_too_large = Some(true),
                    None => {}
                }
            }
            api::ReadBody::Diff(diff) => {
                out.unchanged = diff.chunks.is_empty().then_some(true);
                out.since_version = Some(diff.since_version);
                out.diff = Some(diff.chunks.into_iter().map(DiffChunk::from).collect());
            }
        }
        out
    }
}

/// `append_log` result.
#[derive(Debug, Serialize)]
pub struct AppendLogOutput {
    /// The log appended to.
    pub path: String,
    /// The new entry's id.
    pub entry_id: u64,
}

/// `read_log` result.
#[derive(Debug, Serialize)]
pub struct ReadLogOutput {
    /// The log read.
    pub path: String,
    /// Oldest first.
    pub entries: Vec<LogEntryOutput>,
    /// More entries follow: call again with `since_entry` = `last_entry_id`.
    pub has_more: bool,
    /// The cursor for the next page.
    pub last_entry_id: u64,
    /// The answer's estimated size in tokens.
    pub tokens: u64,
}

/// One log entry.
#[derive(Debug, Serialize)]
pub struct LogEntryOutput {
    /// Its id.
    pub id: u64,
    /// The value, as written.
    pub entry: Value,
    /// When it was appended (RFC 3339, UTC).
    pub created_at: String,
}

impl From<api::LogPage> for ReadLogOutput {
    fn from(page: api::LogPage) -> Self {
        Self {
            path: page.path,
            entries: page.entries.into_iter().map(LogEntryOutput::from).collect(),
            has_more: page.has_more,
            last_entry_id: page.last_entry_id,
            tokens: page.tokens,
        }
    }
}

impl From<LogEntry> for LogEntryOutput {
    fn from(e: LogEntry) -> Self {
        let entry = match e.entry {
            LogValue::Text(text) => Value::String(text),
            // Stored as the compact JSON text of a value the caller gave.
            LogValue::Json(json) => serde_json::from_str(&json).unwrap_or(Value::String(json)),
        };
        Self {
            id: e.id,
            entry,
            created_at: e.created_at,
        }
    }
}

/// `list_files` result.
#[derive(Debug, Serialize)]
pub struct ListFilesOutput {
    /// Sorted by path.
    pub files: Vec<FileOutput>,
}

/// What a listing says of one file.
#[derive(Debug, Serialize)]
pub struct FileOutput {
    /// Its path.
    pub path: String,
    /// Its current version.
    pub version: u64,
    /// Size of the current version in UTF-8 bytes.
    pub bytes: u64,
    /// When the current version was written (RFC 3339, UTC).
    pub updated_at: String,
}

impl From<Vec<FileMeta>> for ListFilesOutput {
    fn from(files: Vec<FileMeta>) -> Self {
        Self {
            files: files
                .into_iter()
                .map(|f| FileOutput {
                    path: f.path,
                    version: f.version,
                    bytes: f.bytes,
                    updated_at: f.updated_at,
                })
                .collect(),
        }
    }
}

/// `file_history` result.
#[derive(Debug, Serialize)]
pub struct HistoryOutput {
    /// The file.
    pub path: String,
    /// Oldest first; the last is current.
    pub versions: Vec<VersionOutput>,
}

/// One kept version.
#[derive(Debug, Serialize)]
pub struct VersionOutput {
    /// Its number.
    pub version: u64,
    /// Its size in UTF-8 bytes.
    pub bytes: u64,
    /// SHA-256 of its content, hex.
    pub sha256: String,
    /// When it was written (RFC 3339, UTC).
    pub created_at: String,
}

impl From<api::History> for HistoryOutput {
    fn from(h: api::History) -> Self {
        Self {
            path: h.path,
            versions: h
                .versions
                .into_iter()
                .map(|v| VersionOutput {
                    version: v.version,
                    bytes: v.bytes,
                    sha256: v.sha256,
                    created_at: v.created_at,
                })
                .collect(),
        }
    }
}

/// `forget_log` result.
#[derive(Debug, Serialize)]
pub struct ForgetLogOutput {
    /// The log.
    pub path: String,
    /// Entries deleted by this call.
    pub removed: u64,
    /// Entries left.
    pub remaining: u64,
}

/// `read_files` result.
#[derive(Debug, Serialize)]
pub struct ReadFilesOutput {
    /// Whole files, in the order asked.
    pub files: Vec<FileContentOutput>,
    /// Files that did not fit, with their sizes in tokens.
    pub left_out: Vec<LeftOutOutput>,
    /// Paths asked for that do not exist.
    pub missing: Vec<String>,
    /// The answer's estimated size in tokens.
    pub tokens: u64,
}

/// A file read whole.
#[derive(Debug, Serialize)]
pub struct FileContentOutput {
    /// Its path.
    pub path: String,
    /// Its current version.
    pub version: u64,
    /// Its content.
    pub content: String,
}

/// A file that did not fit.
#[derive(Debug, Serialize)]
pub struct LeftOutOutput {
    /// Its path.
    pub path: String,
    /// Its size in estimated tokens.
    pub tokens: u64,
}

impl From<api::ReadFilesResult> for ReadFilesOutput {
    fn from(r: api::ReadFilesResult) -> Self {
        Self {
            files: r
                .files
                .into_iter()
                .map(|f| FileContentOutput {
                    path: f.path,
                    version: f.version,
                    content: f.content,
                })
                .collect(),
            left_out: r
                .left_out
                .into_iter()
                .map(|l| LeftOutOutput {
                    path: l.path,
                    tokens: l.tokens,
                })
                .collect(),
            missing: r.missing,
            tokens: r.tokens,
        }
    }
}

/// `search` result.
#[derive(Debug, Serialize)]
pub struct SearchOutput {
    /// Best first.
    pub hits: Vec<HitOutput>,
    /// True when no hit held every word: these hold some.
    pub partial: bool,
    /// Pass as `offset` for more hits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// The answer's estimated size in tokens.
    pub tokens: u64,
}

/// One hit: a file's current version with its matching lines, or a log entry.
#[derive(Debug, Serialize)]
pub struct HitOutput {
    /// The file or log.
    pub path: String,
    /// For a file: its current version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// For a file: up to 3 matching lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<LineOutput>>,
    /// For a log entry: its id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<u64>,
    /// For a log entry: its text, cut around the first word found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A matching line.
#[derive(Debug, Serialize)]
pub struct LineOutput {
    /// 1-based.
    pub line: u64,
    /// The line, cut around the first word found.
    pub text: String,
}

impl From<api::SearchResult> for SearchOutput {
    fn from(r: api::SearchResult) -> Self {
        let hits = r
            .hits
            .into_iter()
            .map(|h| match h.at {
                api::HitAt::File((version, lines)) => HitOutput {
                    path: h.path,
                    version: Some(version),
                    lines: Some(
                        lines
                            .into_iter()
                            .map(|l| LineOutput {
                                line: l.line,
                                text: l.text,
                            })
                            .collect(),
                    ),
                    entry_id: None,
                    text: None,
                },
                api::HitAt::LogEntry((id, text)) => HitOutput {
                    path: h.path,
                    version: None,
                    lines: None,
                    entry_id: Some(id),
                    text: Some(text),
                },
            })
            .collect();
        Self {
            hits,
            partial: r.partial,
            next_offset: r.next_offset,
            tokens: r.tokens,
        }
    }
}

/// `delete_file` result.
#[derive(Debug, Serialize)]
pub struct DeleteFileOutput {
    /// The path deleted.
    pub path: String,
    /// False when there was no such file.
    pub deleted: bool,
}

/// `summarize_file` result: `summary`, or for a short file its `content`.
#[derive(Debug, Serialize)]
pub struct SummarizeFileOutput {
    /// The file summarised.
    pub path: String,
    /// The version summarised.
    pub version: u64,
    /// False when the file is short enough to read whole: then `content` holds it.
    pub summarized: bool,
    /// The summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// True when the summary came from the cache, at no cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached: Option<bool>,
    /// The model that wrote the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The whole content of a short file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl From<api::SummarizeFileResult> for SummarizeFileOutput {
    fn from(r: api::SummarizeFileResult) -> Self {
        let mut out = Self {
            path: r.path,
            version: r.version,
            summarized: false,
            summary: None,
            cached: None,
            model: None,
            content: None,
        };
        match r.outcome {
            api::SummarizeOutcome::Summary(s) => {
                out.summarized = true;
                out.summary = Some(s.summary);
                out.cached = Some(s.cached);
                out.model = Some(s.model);
            }
            api::SummarizeOutcome::TooShort(content) => out.content = Some(content),
        }
        out
    }
}

/// `get_usage_stats` result.
#[derive(Debug, Serialize)]
pub struct UsageStatsOutput {
    /// Every kept version plus every log entry, in UTF-8 bytes.
    pub total_bytes: u64,
    /// Files that exist now.
    pub file_count: u64,
    /// Log entries across all logs.
    pub log_entry_count: u64,
    /// Tool calls that succeeded.
    pub total_operations: u64,
    /// The agent's limits.
    pub quotas: QuotasOutput,
}

/// An agent's limits.
#[derive(Debug, Serialize)]
pub struct QuotasOutput {
    /// Files.
    pub max_files: u64,
    /// Log entries across all logs.
    pub max_log_entries: u64,
    /// Bytes stored in all.
    pub max_total_bytes: u64,
    /// Bytes in one write.
    pub max_write_bytes: u64,
    /// Bytes in one log entry.
    pub max_log_entry_bytes: u64,
    /// Versions kept per file.
    pub versions_kept: u32,
    /// Entries in one `read_log` page.
    pub log_page_size: u32,
    /// Largest answer, in estimated tokens.
    pub max_response_tokens: u64,
}

impl From<api::UsageStats> for UsageStatsOutput {
    fn from(s: api::UsageStats) -> Self {
        let q = s.quotas;
        Self {
            total_bytes: s.usage.total_bytes,
            file_count: s.usage.file_count,
            log_entry_count: s.usage.log_entry_count,
            total_operations: s.usage.total_operations,
            quotas: QuotasOutput {
                max_files: q.max_files,
                max_log_entries: q.max_log_entries,
                max_total_bytes: q.max_total_bytes,
                max_write_bytes: q.max_write_bytes,
                max_log_entry_bytes: q.max_log_entry_bytes,
                versions_kept: q.versions_kept,
                log_page_size: q.log_page_size,
                max_response_tokens: q.max_response_tokens,
            },
        }
    }
}

impl From<api::AppendLogResult> for AppendLogOutput {
    fn from(r: api::AppendLogResult) -> Self {
        Self {
            path: r.path,
            entry_id: r.entry_id,
        }
    }
}

impl From<api::ForgetLogResult> for ForgetLogOutput {
    fn from(r: api::ForgetLogResult) -> Self {
        Self {
            path: r.path,
            removed: r.removed,
            remaining: r.remaining,
        }
    }
}

impl From<api::DeleteFileResult> for DeleteFileOutput {
    fn from(r: api::DeleteFileResult) -> Self {
        Self {
            path: r.path,
            deleted: r.deleted,
        }
    }
}
