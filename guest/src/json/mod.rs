//! The tools as MCP sees them, in JSON: the catalogue `tools/list` shows, each tool's
//! arguments and result, and the text of every error. One definition of the tool surface:
//! the server lists its tools from here (natively) and calls the component's `json` export,
//! which runs [`call`]; every embedding of either component calls the same export.
//!
//! - [`catalogue`]: names, descriptions, input schemas, annotations.
//! - [`args`]: what each tool's arguments decode to.
//! - [`output`]: what each tool's result encodes to.
//! - [`refusal`]: arguments that do not decode, said by the argument's name.

pub mod args;
pub mod catalogue;
pub mod output;
pub mod refusal;

pub use catalogue::{Hints, ToolName};

use crate::api::{self, Guest};
use crate::bindings::exports::scratchpad::mcp::json::{CallError, ToolFailure};
use crate::{StorageError, SummariserError, ToolError};
use args::{
    AgentArgs, AppendLogArgs, DeleteFileArgs, EditFileArgs, ForgetLogArgs, ListFilesArgs, PathArgs,
    ReadFileArgs, ReadFilesArgs, ReadLogArgs, SearchArgs, WriteFileArgs, log_value,
};
use output::{
    AppendLogOutput, DeleteFileOutput, ForgetLogOutput, HistoryOutput, ListFilesOutput,
    ReadFileOutput, ReadFilesOutput, ReadLogOutput, SearchOutput, SummarizeFileOutput,
    UsageStatsOutput, WriteFileOutput,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Implements the `json` export for a type that implements the `tools` export: every
/// component exports the same JSON way in over its own tools.
#[macro_export]
macro_rules! export_json {
    ($tools:ty) => {
        impl $crate::bindings::exports::scratchpad::mcp::json::Guest for $tools {
            fn list_tools() -> String {
                $crate::json::list_tools()
            }
            fn call(
                tool: String,
                arguments: String,
            ) -> Result<String, $crate::bindings::exports::scratchpad::mcp::json::CallError> {
                $crate::json::call::<$tools>(&tool, &arguments)
            }
        }
    };
}

/// Every tool as `tools/list` gives it, as a JSON array.
pub fn list_tools() -> String {
    Value::Array(ToolName::ALL.map(catalogue::describe).to_vec()).to_string()
}

/// Calls `tool` with MCP `arguments` (a JSON object) on the tools of `G`; the answer is the
/// tool's `structuredContent` as JSON text.
pub fn call<G: Guest>(tool: &str, arguments: &str) -> Result<String, CallError> {
    let tool = ToolName::parse(tool).ok_or_else(|| CallError::UnknownTool(unknown_tool(tool)))?;
    match tool {
        ToolName::WriteFile => run(
            G::write_file(decode::<WriteFileArgs>(tool, arguments)?.into())
                .map(WriteFileOutput::from),
        ),
        ToolName::EditFile => run(
            G::edit_file(decode::<EditFileArgs>(tool, arguments)?.into())
                .map(WriteFileOutput::from),
        ),
        ToolName::ReadFile => run(
            G::read_file(decode::<ReadFileArgs>(tool, arguments)?.into()).map(ReadFileOutput::from),
        ),
        ToolName::FileHistory => {
            let a: PathArgs = decode(tool, arguments)?;
            run(G::file_history(a.agent_id, a.path).map(HistoryOutput::from))
        }
        ToolName::ReadFiles => run(
            G::read_files(decode::<ReadFilesArgs>(tool, arguments)?.into())
                .map(ReadFilesOutput::from),
        ),
        ToolName::Search => {
            run(G::search(decode::<SearchArgs>(tool, arguments)?.into()).map(SearchOutput::from))
        }
        ToolName::AppendLog => {
            let a: AppendLogArgs = decode(tool, arguments)?;
            run(G::append_log(api::AppendLogRequest {
                agent_id: a.agent_id,
                path: a.path,
                entry: log_value(a.entry),
            })
            .map(AppendLogOutput::from))
        }
        ToolName::ReadLog => {
            run(G::read_log(decode::<ReadLogArgs>(tool, arguments)?.into())
                .map(ReadLogOutput::from))
        }
        ToolName::ForgetLog => run(
            G::forget_log(decode::<ForgetLogArgs>(tool, arguments)?.into())
                .map(ForgetLogOutput::from),
        ),
        ToolName::ListFiles => run(
            G::list_files(decode::<ListFilesArgs>(tool, arguments)?.into())
                .map(ListFilesOutput::from),
        ),
        ToolName::DeleteFile => run(G::delete_file(
            decode::<DeleteFileArgs>(tool, arguments)?.into(),
        )
        .map(DeleteFileOutput::from)),
        ToolName::SummarizeFile => {
            let a: PathArgs = decode(tool, arguments)?;
            run(G::summarize_file(api::SummarizeFileRequest {
                agent_id: a.agent_id,
                path: a.path,
            })
            .map(SummarizeFileOutput::from))
        }
        ToolName::GetUsageStats => {
            let a: AgentArgs = decode(tool, arguments)?;
            run(G::get_usage_stats(a.agent_id).map(UsageStatsOutput::from))
        }
    }
}

/// The text of an unknown tool's error: the name, and the tools there are.
pub fn unknown_tool(name: &str) -> String {
    let names = ToolName::ALL.map(ToolName::as_str).join(", ");
    format!("unknown tool {name:?}; the tools are {names}")
}

/// Decodes a tool's arguments, one JSON object of named arguments, naming the field that
/// does not fit.
///
/// Arguments that fit are decoded in one pass. Those that do not are decoded again by way of
/// a JSON value: its refusal names the argument and what it takes, or says the arguments
/// are no object (see [`refusal`]), without a position in the text, and it takes a repeated
/// key as the last one given (the one pass refuses it), as decoding always did.
fn decode<T: DeserializeOwned>(tool: ToolName, arguments: &str) -> Result<T, CallError> {
    let invalid = |why: &dyn std::fmt::Display| {
        CallError::InvalidArguments(format!("invalid arguments for {}: {why}", tool.as_str()))
    };
    if arguments.trim_start().starts_with('{')
        && let Ok(decoded) = serde_json::from_str(arguments)
    {
        return Ok(decoded);
    }
    let value: Value = serde_json::from_str(arguments).map_err(|e| invalid(&e))?;
    refusal::decode(value).map_err(|why| invalid(&why))
}

/// A tool's answer as its JSON result, or its error with the text the server answers with.
fn run(answer: Result<impl Serialize, ToolError>) -> Result<String, CallError> {
    match answer {
        Ok(output) => Ok(serde_json::to_string(&output).unwrap_or_default()),
        Err(error) => Err(CallError::Tool(ToolFailure {
            message: message(&error),
            error,
        })),
    }
}

/// What a caller reads when a tool refuses: the rule and the value, never a path of the
/// host, SQL or a key.
pub fn message(e: &ToolError) -> String {
    match e {
        ToolError::InvalidArgument(m) | ToolError::NotFound(m) => m.clone(),
        ToolError::QuotaExceeded(m) => format!("quota exceeded: {m}"),
        ToolError::Conflict(m) => format!("conflict: {m}"),
        ToolError::Summariser(
            SummariserError::NotConfigured(m)
            | SummariserError::Unauthorized(m)
            | SummariserError::Unavailable(m)
            | SummariserError::Failed(m),
        ) => m.clone(),
        ToolError::Storage(e) => storage_message(e),
    }
}

/// What a caller reads when the store failed.
pub fn storage_message(e: &StorageError) -> String {
    match e {
        StorageError::Busy => {
            "the store is busy: another process held it past the wait deadline; nothing was changed, retry the call".into()
        }
        StorageError::Full => "the disk or the store is full; nothing was changed".into(),
        StorageError::ReadOnly => {
            "the store cannot be written (its file or folder is read-only); nothing was changed".into()
        }
        StorageError::Refused(m) => {
            format!("the server refused a request of the tool logic ({m}); nothing was changed")
        }
        StorageError::Other(m) => format!("storage failed ({m}); nothing was changed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_history(arguments: &str) -> Result<PathArgs, CallError> {
        decode(ToolName::FileHistory, arguments)
    }

    /// The one pass and the way by a JSON value decode alike: what only the second takes
    /// (a repeated key, the last one given) is still taken, and a refusal names the field
    /// with no position in the text.
    #[test]
    fn arguments_decode_as_they_always_have() {
        let a = file_history(r#"{"agent_id": "a", "path": "x"}"#).unwrap();
        assert_eq!((a.agent_id.as_str(), a.path.as_str()), ("a", "x"));
        let repeated = file_history(r#"{"agent_id": "a", "path": "x", "path": "y"}"#).unwrap();
        assert_eq!(repeated.path, "y");
        let missing = file_history(r#"{"agent_id": "a"}"#).unwrap_err();
        assert_eq!(
            missing,
            CallError::InvalidArguments(
                "invalid arguments for file_history: missing field `path`".into()
            )
        );
        let unknown = file_history(r#"{"agent_id": "a", "path": "x", "if": 1}"#).unwrap_err();
        let CallError::InvalidArguments(m) = unknown else {
            panic!("{unknown:?}")
        };
        assert!(
            m.starts_with("invalid arguments for file_history: unknown field `if`"),
            "{m}"
        );
        assert!(!m.contains("column"), "{m}");
    }

    /// Serde would take an array for the arguments in their order, and name its own type
    /// for a string or a number: each is refused by the rule instead.
    #[test]
    fn arguments_are_one_object() {
        for (arguments, got) in [
            (r#"["a", "x"]"#, "an array"),
            (r#""x""#, "a string"),
            ("5", "a number"),
            ("true", "true or false"),
            ("null", "null"),
        ] {
            assert_eq!(
                file_history(arguments).unwrap_err(),
                CallError::InvalidArguments(format!(
                    "invalid arguments for file_history: the arguments must be one JSON object, of named arguments (got {got})"
                )),
                "{arguments}"
            );
        }
        let not_json = file_history("{").unwrap_err();
        assert_eq!(
            not_json,
            CallError::InvalidArguments(
                "invalid arguments for file_history: EOF while parsing an object at line 1 column 1"
                    .into()
            )
        );
    }
}
