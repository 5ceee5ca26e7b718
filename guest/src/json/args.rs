//! Each tool's MCP arguments: what its input schema says and what a call decodes, with
//! unknown fields refused by name. The JSON field names are the SPEC's.

// The fields are the arguments; their words come from the WIT (see `catalogue`).
#![allow(missing_docs)]

use crate::LogValue;
use crate::api;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// `write_file` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteFileArgs {
    /// Your namespace.
    pub agent_id: String,
    /// Where to store the content.
    pub path: String,
    /// The whole new content, UTF-8, within the agent's write limit (`get_usage_stats`).
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
#[serde(
    untagged,
    deny_unknown_fields,
    // Said instead of serde's "data did not match any variant of untagged enum EditArg",
    // which names a type of ours and not the rule.
    expecting = "an edit is {\"old\", \"new\"} (text found once) or {\"start\", \"end\", \"lines\"} (a line range)"
)]
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

impl From<WriteFileArgs> for api::WriteFileRequest {
    fn from(a: WriteFileArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            path: a.path,
            content: a.content,
            expected_version: a.expected_version,
        }
    }
}

impl From<EditFileArgs> for api::EditFileRequest {
    fn from(a: EditFileArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            path: a.path,
            base_version: a.base_version,
            edits: a.edits.into_iter().map(api::Edit::from).collect(),
        }
    }
}

impl From<ReadFilesArgs> for api::ReadFilesRequest {
    fn from(a: ReadFilesArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            paths: a.paths,
            prefix: a.prefix,
            max_tokens: a.max_tokens,
        }
    }
}

impl From<SearchArgs> for api::SearchRequest {
    fn from(a: SearchArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            query: a.query,
            prefix: a.prefix,
            limit: a.limit,
            offset: a.offset,
        }
    }
}

impl From<ReadFileArgs> for api::ReadFileRequest {
    fn from(a: ReadFileArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            path: a.path,
            since_version: a.since_version,
            full_diff: a.full_diff.unwrap_or(false),
            offset: a.offset,
            limit: a.limit,
            column: a.column,
        }
    }
}

impl From<ReadLogArgs> for api::ReadLogRequest {
    fn from(a: ReadLogArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            path: a.path,
            since_entry: a.since_entry,
        }
    }
}

impl From<ForgetLogArgs> for api::ForgetLogRequest {
    fn from(a: ForgetLogArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            path: a.path,
            before_entry: a.before_entry,
            keep_last: a.keep_last,
            max_age_days: a.max_age_days,
        }
    }
}

impl From<ListFilesArgs> for api::ListFilesRequest {
    fn from(a: ListFilesArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            prefix: a.prefix,
        }
    }
}

impl From<DeleteFileArgs> for api::DeleteFileRequest {
    fn from(a: DeleteFileArgs) -> Self {
        Self {
            agent_id: a.agent_id,
            path: a.path,
            expected_version: a.expected_version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EditFileArgs, log_value};
    use crate::LogEntry;
    use crate::json::output::LogEntryOutput;
    use serde_json::Value;

    #[test]
    fn an_edit_of_neither_shape_is_refused_by_the_rule_not_a_type_name() {
        let arguments = r#"{"agent_id": "a", "path": "f", "base_version": 1,
                            "edits": [{"old_text": "x", "new_text": "y"}]}"#;
        let message = serde_json::from_str::<EditFileArgs>(arguments)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(r#"an edit is {"old", "new"} (text found once) or"#),
            "{message}"
        );
        assert!(!message.contains("EditArg"), "{message}");
    }

    #[test]
    fn a_number_in_an_entry_reads_back_as_the_same_number() {
        // The host hands the guest a value it printed; the guest stores it as text and parses
        // it again to answer. serde_json's default float parsing is off by one unit in the
        // last place for some of these (1.4444444444444445e22 came back ...43e22, found by the
        // fuzzer), so the workspace turns on `float_roundtrip`.
        for number in [
            1.4444444444444445e22,
            0.1,
            2.2250738585072014e-308,
            5e-324,
            1.7976931348623157e308,
            123_456_789.123_456_78,
        ] {
            let given: Value = serde_json::json!({ "n": [number] });
            let text = serde_json::to_string(&given).unwrap();
            let parsed: Value = serde_json::from_str(&text).unwrap();
            let entry = LogEntry {
                id: 1,
                entry: log_value(parsed),
                created_at: String::new(),
            };
            let answer = serde_json::to_string(&LogEntryOutput::from(entry)).unwrap();
            let read: Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(read["entry"], given, "{number:e} came back as {answer}");
        }
    }
}
