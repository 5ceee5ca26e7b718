//! The tools as MCP sees them: names, descriptions, argument and result schemas, and the
//! translation between JSON and the WIT types.
//!
//! Descriptions come from the WIT doc comments (see `build.rs`), so they are written once.
//! The JSON field names are the SPEC's. Nothing here decides a rule: values go to the guest
//! as given, and what comes back is checked only against the host's own invariants (the
//! answer is about the path and agent that were asked for) before it is encoded.

use crate::bindings::{FileMeta, LogEntry, LogValue, api};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool's words, from its WIT doc comments.
pub struct ToolDoc {
    /// The MCP tool name.
    pub name: &'static str,
    /// The function's doc comment.
    pub description: &'static str,
    /// (argument, doc comment) for each documented field of its request record.
    pub args: &'static [(&'static str, &'static str)],
}

include!(concat!(env!("OUT_DIR"), "/tool_docs.rs"));

/// The tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolName {
    /// `write_file`
    WriteFile,
    /// `edit_file`
    EditFile,
    /// `read_file`
    ReadFile,
    /// `file_history`
    FileHistory,
    /// `read_files`
    ReadFiles,
    /// `search`
    Search,
    /// `append_log`
    AppendLog,
    /// `read_log`
    ReadLog,
    /// `forget_log`
    ForgetLog,
    /// `list_files`
    ListFiles,
    /// `delete_file`
    DeleteFile,
    /// `summarize_file`
    SummarizeFile,
    /// `get_usage_stats`
    GetUsageStats,
}

/// How MCP clients should treat a tool: the annotations they show and ask permission by.
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    /// Changes nothing the agent can see.
    pub read_only: bool,
    /// May remove data.
    pub destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// Talks to something outside this machine.
    pub open_world: bool,
}

/// The agent a call's arguments name ("" when they name none, which the guest refuses):
/// what hosted mode checks against the key and what the call's log span records.
pub fn agent_of(args: &Map<String, Value>) -> &str {
    args.get("agent_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl ToolName {
    /// Every tool, in the order `tools/list` shows them.
    pub const ALL: [ToolName; 13] = [
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::ReadFile,
        ToolName::ReadFiles,
        ToolName::FileHistory,
        ToolName::Search,
        ToolName::AppendLog,
        ToolName::ReadLog,
        ToolName::ForgetLog,
        ToolName::ListFiles,
        ToolName::DeleteFile,
        ToolName::SummarizeFile,
        ToolName::GetUsageStats,
    ];

    /// The MCP name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::WriteFile => "write_file",
            ToolName::EditFile => "edit_file",
            ToolName::ReadFile => "read_file",
            ToolName::FileHistory => "file_history",
            ToolName::Search => "search",
            ToolName::ReadFiles => "read_files",
            ToolName::AppendLog => "append_log",
            ToolName::ReadLog => "read_log",
            ToolName::ForgetLog => "forget_log",
            ToolName::ListFiles => "list_files",
            ToolName::DeleteFile => "delete_file",
            ToolName::SummarizeFile => "summarize_file",
            ToolName::GetUsageStats => "get_usage_stats",
        }
    }

    /// The tool of that MCP name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The description (the WIT doc comment) and the argument descriptions.
    pub fn docs(self) -> (&'static str, &'static [(&'static str, &'static str)]) {
        TOOL_DOCS
            .iter()
            .find(|doc| doc.name == self.as_str())
            .map(|doc| (doc.description, doc.args))
            .unwrap_or(("", &[]))
    }

    /// How clients should treat it.
    pub fn hints(self) -> Hints {
        let (read_only, destructive, idempotent, open_world) = match self {
            ToolName::WriteFile => (false, false, true, false),
            ToolName::AppendLog | ToolName::EditFile => (false, false, false, false),
            ToolName::DeleteFile | ToolName::ForgetLog => (false, true, true, false),
            ToolName::SummarizeFile => (true, false, true, true),
            ToolName::ReadFile
            | ToolName::FileHistory
            | ToolName::ReadFiles
            | ToolName::Search
            | ToolName::ReadLog
            | ToolName::ListFiles => (true, false, true, false),
            ToolName::GetUsageStats => (true, false, true, false),
        };
        Hints {
            read_only,
            destructive,
            idempotent,
            open_world,
        }
    }

    /// The JSON Schema of its arguments, with the WIT's words for each argument.
    pub fn input_schema(self) -> Map<String, Value> {
        let mut schema = match self {
            ToolName::WriteFile => schema::<WriteFileArgs>(),
            ToolName::EditFile => schema::<EditFileArgs>(),
            ToolName::Search => schema::<SearchArgs>(),
            ToolName::ReadFiles => schema::<ReadFilesArgs>(),
            ToolName::ReadFile => schema::<ReadFileArgs>(),
            ToolName::AppendLog => schema::<AppendLogArgs>(),
            ToolName::ReadLog => schema::<ReadLogArgs>(),
            ToolName::ForgetLog => schema::<ForgetLogArgs>(),
            ToolName::ListFiles => schema::<ListFilesArgs>(),
            ToolName::DeleteFile => schema::<DeleteFileArgs>(),
            ToolName::FileHistory | ToolName::SummarizeFile => schema::<PathArgs>(),
            ToolName::GetUsageStats => schema::<AgentArgs>(),
        };
        // The tool's description says what the arguments are for; the struct's doc comment
        // would only repeat it.
        schema.remove("description");
        let (_, arg_docs) = self.docs();
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for (arg, doc) in arg_docs.iter().chain(COMMON_ARG_DOCS) {
                if let Some(Value::Object(property)) = properties.get_mut(*arg) {
                    property
                        .entry("description")
                        .or_insert_with(|| Value::String((*doc).to_owned()));
                }
            }
        }
        schema
    }
}

/// Keywords dropped from every schema: schemars' `format` ("uint64"), `minimum` for
/// unsigned numbers, `additionalProperties: false` and `default: null`. No client needs
/// them to call a tool right, the server checks every argument itself (unknown ones are
/// refused by name), and each costs tokens in every session's `tools/list`.
const DROPPED_KEYWORDS: [&str; 4] = ["format", "minimum", "additionalProperties", "default"];

/// Makes a generated schema as small as it can be while saying the same to a caller:
/// drops [`DROPPED_KEYWORDS`], and turns an optional argument's `["integer", "null"]` into
/// `"integer"` (it is optional because it is not `required`). A keyword is dropped only
/// where its value is not a schema, so a property with one of those names stays.
fn compact(schema: &mut Map<String, Value>) {
    for keyword in DROPPED_KEYWORDS {
        if schema
            .get(keyword)
            .is_some_and(|v| !v.is_object() && (keyword != "default" || v.is_null()))
        {
            schema.remove(keyword);
        }
    }
    if let Some(Value::Array(types)) = schema.get("type")
        && types.len() == 2
        && types.iter().any(|t| t == "null")
        && let Some(one) = types.iter().find(|t| *t != "null").cloned()
    {
        schema.insert("type".into(), one);
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(inner) => compact(inner),
            Value::Array(items) => items.iter_mut().for_each(|item| {
                if let Value::Object(inner) = item {
                    compact(inner);
                }
            }),
            _ => {}
        }
    }
}

/// Descriptions of the arguments every tool shares. A path needs none; the naming rules
/// are in the server's instructions and in every error that breaks one.
const COMMON_ARG_DOCS: &[(&str, &str)] = &[("agent_id", "Your namespace.")];

fn schema<T: JsonSchema>() -> Map<String, Value> {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    match generator.into_root_schema_for::<T>().to_value() {
        Value::Object(mut map) => {
            map.remove("$schema");
            map.remove("title");
            compact(&mut map);
            map
        }
        _ => Map::new(),
    }
}

/// Why a call's arguments or its guest's answer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ShapeError {
    /// The arguments do not fit the tool's schema.
    #[error("invalid arguments for {tool}: {reason}")]
    Arguments {
        /// The tool called.
        tool: &'static str,
        /// What serde said, which names the field.
        reason: String,
    },
    /// The guest's answer breaks an invariant of the host.
    #[error("the tool logic gave an answer the server refuses ({0}); nothing was changed")]
    Guest(String),
}

/// Decodes a tool's arguments, naming the field that does not fit.
pub fn decode<T: for<'de> Deserialize<'de>>(
    tool: ToolName,
    args: Map<String, Value>,
) -> Result<T, ShapeError> {
    serde_json::from_value(Value::Object(args)).map_err(|e| ShapeError::Arguments {
        tool: tool.as_str(),
        reason: e.to_string(),
    })
}

/// The guest answered about the path it was asked about.
pub fn same_path(asked: &str, answered: &str) -> Result<(), ShapeError> {
    if asked == answered {
        Ok(())
    } else {
        Err(ShapeError::Guest(format!(
            "asked about path {asked:?}, answered about {answered:?}"
        )))
    }
}

// ---- arguments ----

/// `write_file` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Your namespace.
    pub agent_id: String,
    /// Where to store the content.
    pub path: String,
    /// The whole new content, at most 1 MiB of UTF-8.
    pub content: String,
    #[serde(default)]
    pub expected_version: Option<u64>,
}

/// `edit_file` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditFileArgs {
    pub agent_id: String,
    pub path: String,
    pub base_version: u64,
    pub edits: Vec<EditArg>,
}

/// One edit.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum EditArg {
    /// Exact text.
    Text {
        /// Occurs exactly once.
        old: String,
        new: String,
    },
    /// A line range.
    Lines {
        start: u64,
        end: u64,
        lines: Vec<String>,
    },
}

impl From<EditArg> for api::Edit {
    fn from(e: EditArg) -> Self {
        match e {
            EditArg::Text { old, new } => api::Edit::Text(api::TextEdit { old, new }),
            EditArg::Lines { start, end, lines } => {
                api::Edit::Lines(api::LineEdit { start, end, lines })
            }
        }
    }
}

/// `read_files` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFilesArgs {
    pub agent_id: String,
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// `search` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub agent_id: String,
    pub query: String,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub offset: Option<u64>,
}

/// `delete_file` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileArgs {
    pub agent_id: String,
    pub path: String,
    #[serde(default)]
    pub expected_version: Option<u64>,
}

/// `read_file` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    pub agent_id: String,
    pub path: String,
    #[serde(default)]
    pub since_version: Option<u64>,
    #[serde(default)]
    pub full_diff: Option<bool>,
    #[serde(default)]
    pub offset: Option<u64>,
    #[serde(default)]
    pub limit: Option<u64>,
    #[serde(default)]
    pub column: Option<u64>,
}

/// `append_log` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendLogArgs {
    pub agent_id: String,
    pub path: String,
    /// Any JSON value (a string is the common case), at most 64 KiB.
    pub entry: Value,
}

/// `read_log` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadLogArgs {
    pub agent_id: String,
    pub path: String,
    #[serde(default)]
    pub since_entry: Option<u64>,
}

/// `forget_log` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetLogArgs {
    pub agent_id: String,
    pub path: String,
    #[serde(default)]
    pub before_entry: Option<u64>,
    #[serde(default)]
    pub keep_last: Option<u64>,
    #[serde(default)]
    pub max_age_days: Option<u64>,
}

/// `list_files` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesArgs {
    pub agent_id: String,
    #[serde(default)]
    pub prefix: Option<String>,
}

/// Arguments of the tools that take an agent and a path.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathArgs {
    pub agent_id: String,
    pub path: String,
}

/// Arguments of the tools that take only an agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentArgs {
    pub agent_id: String,
}

/// The entry as the guest holds it: strings unescaped, other values as compact JSON.
pub fn log_value(entry: Value) -> LogValue {
    match entry {
        Value::String(text) => LogValue::Text(text),
        other => LogValue::Json(other.to_string()),
    }
}

// ---- results ----

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

impl ReadFileOutput {
    /// The result of a read, checked against what was asked.
    pub fn new(args: &ReadFileArgs, r: api::ReadFileResult) -> Result<Self, ShapeError> {
        same_path(&args.path, &r.path)?;
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
                if whole.first_line != args.offset.unwrap_or(1) {
                    return Err(ShapeError::Guest(format!(
                        "asked for lines from {:?}, answered from {}",
                        args.offset, whole.first_line
                    )));
                }
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
                if Some(diff.since_version) != args.since_version {
                    return Err(ShapeError::Guest(format!(
                        "asked for a diff since {:?}, answered since {}",
                        args.since_version, diff.since_version
                    )));
                }
                out.unchanged = diff.chunks.is_empty().then_some(true);
                out.since_version = Some(diff.since_version);
                out.diff = Some(diff.chunks.into_iter().map(DiffChunk::from).collect());
            }
        }
        Ok(out)
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

impl ReadLogOutput {
    /// The page, checked: the right log, ids rising past the cursor.
    pub fn new(args: &ReadLogArgs, page: api::LogPage) -> Result<Self, ShapeError> {
        same_path(&args.path, &page.path)?;
        let mut previous = args.since_entry.unwrap_or(0);
        let mut entries = Vec::with_capacity(page.entries.len());
        for e in page.entries {
            if e.id <= previous {
                return Err(ShapeError::Guest(format!(
                    "log entry id {} after {previous}",
                    e.id
                )));
            }
            previous = e.id;
            entries.push(LogEntryOutput::try_from(e)?);
        }
        Ok(Self {
            path: page.path,
            entries,
            has_more: page.has_more,
            last_entry_id: page.last_entry_id,
            tokens: page.tokens,
        })
    }
}

impl TryFrom<LogEntry> for LogEntryOutput {
    type Error = ShapeError;

    fn try_from(e: LogEntry) -> Result<Self, ShapeError> {
        let entry = match e.entry {
            LogValue::Text(text) => Value::String(text),
            LogValue::Json(json) => serde_json::from_str(&json)
                .map_err(|_| ShapeError::Guest(format!("log entry {} is not valid JSON", e.id)))?,
        };
        Ok(Self {
            id: e.id,
            entry,
            created_at: e.created_at,
        })
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

impl ListFilesOutput {
    /// The listing, checked: only paths under the prefix asked for.
    pub fn new(args: &ListFilesArgs, files: Vec<FileMeta>) -> Result<Self, ShapeError> {
        let prefix = args.prefix.as_deref().unwrap_or("");
        if let Some(stray) = files.iter().find(|f| !f.path.starts_with(prefix)) {
            return Err(ShapeError::Guest(format!(
                "listed {:?} for prefix {prefix:?}",
                stray.path
            )));
        }
        Ok(Self {
            files: files
                .into_iter()
                .map(|f| FileOutput {
                    path: f.path,
                    version: f.version,
                    bytes: f.bytes,
                    updated_at: f.updated_at,
                })
                .collect(),
        })
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

impl HistoryOutput {
    /// The history, checked: about the path asked for, versions rising.
    pub fn new(path: &str, h: api::History) -> Result<Self, ShapeError> {
        same_path(path, &h.path)?;
        if h.versions.windows(2).any(|w| w[0].version >= w[1].version) {
            return Err(ShapeError::Guest("versions out of order".into()));
        }
        Ok(Self {
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
        })
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

impl ReadFilesOutput {
    /// The files, checked: only paths asked for (or under the prefix asked for).
    pub fn new(args: &ReadFilesArgs, r: api::ReadFilesResult) -> Result<Self, ShapeError> {
        let asked = |path: &str| match (&args.paths, &args.prefix) {
            (Some(paths), _) => paths.iter().any(|p| p == path),
            (None, prefix) => path.starts_with(prefix.as_deref().unwrap_or("")),
        };
        let named = r
            .files
            .iter()
            .map(|f| &f.path)
            .chain(r.left_out.iter().map(|l| &l.path));
        if let Some(stray) = named.chain(&r.missing).find(|p| !asked(p)) {
            return Err(ShapeError::Guest(format!(
                "answered about {stray:?}, not asked for"
            )));
        }
        Ok(Self {
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
        })
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

impl SearchOutput {
    /// The hits, checked: under the prefix asked for, and no more than asked for.
    pub fn new(args: &SearchArgs, r: api::SearchResult) -> Result<Self, ShapeError> {
        let prefix = args.prefix.as_deref().unwrap_or("");
        if let Some(stray) = r.hits.iter().find(|h| !h.path.starts_with(prefix)) {
            return Err(ShapeError::Guest(format!(
                "a hit at {:?} for prefix {prefix:?}",
                stray.path
            )));
        }
        if r.hits.len() > args.limit.unwrap_or(50) as usize {
            return Err(ShapeError::Guest(format!("{} hits", r.hits.len())));
        }
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
        Ok(Self {
            hits,
            partial: r.partial,
            next_offset: r.next_offset,
            tokens: r.tokens,
        })
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
