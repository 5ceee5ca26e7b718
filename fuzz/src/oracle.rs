//! The oracle of the `tool_call` fuzz target: what a tool call may answer, whatever its
//! arguments, and what the store must look like after it.
//!
//! A call may fail for the caller (an unknown tool, arguments that do not decode, a rule of
//! the tool) and never for the server: a trap or a time or memory limit in the guest, an
//! answer the host refuses, or a request of the guest's the store refuses is a defect, and so
//! is an error that shows a server path, SQL or a panic. A call that succeeds is read back:
//! what a write or an append says it stored is what a read returns. After a call that may
//! write, `verify` finds no broken invariant.
//!
//! The integration tests include this file too (`tests/integration/fuzzing.rs`) and show
//! that it rejects a guest that crashes or lies, so a green fuzz run means something.

use scratchpad_mcp::bindings::{StorageError, ToolError};
use scratchpad_mcp::service::ToolName;
use scratchpad_mcp::storage::admin::verify;
use scratchpad_mcp::{CallError, Service};
use serde_json::{Map, Value, json};
use std::path::Path;

/// Words no error a caller reads may hold (unless the caller's own arguments did): SQL, a
/// panic, a Rust type or a backtrace.
const LEAKS: [&str; 6] = [
    "SELECT ",
    "INSERT ",
    "UPDATE ",
    "panicked",
    "RUST_BACKTRACE",
    "DatabaseCorrupt",
];

/// Judges one call of `tool` with `args` that answered `outcome`, against the service that
/// ran it, whose files live under `server_dir`. `Err` says what is wrong.
pub fn judge(
    service: &Service,
    server_dir: &Path,
    tool: &str,
    args: &Map<String, Value>,
    outcome: &Result<Value, CallError>,
) -> Result<(), String> {
    let known = ToolName::parse(tool);
    match outcome {
        Err(e) => {
            let message = e.to_string();
            if message.is_empty() {
                return Err(format!("{tool}: an error with no message"));
            }
            // What the caller sent may come back quoted in the message; nothing else may.
            let sent = Value::Object(args.clone()).to_string();
            let shows = |word: &str| message.contains(word) && !sent.contains(word);
            if shows(&server_dir.to_string_lossy()) {
                return Err(format!("{tool}: the error shows a server path: {message}"));
            }
            if let Some(leak) = LEAKS.iter().find(|leak| shows(leak)) {
                return Err(format!("{tool}: the error shows {leak:?}: {message}"));
            }
            match e {
                CallError::UnknownTool(_) if known.is_none() => Ok(()),
                CallError::Arguments(_) => Ok(()),
                CallError::Tool {
                    error: ToolError::Storage(StorageError::Refused(_) | StorageError::Other(_)),
                    ..
                } => Err(format!(
                    "{tool}: the store failed under the guest: {message}"
                )),
                CallError::Tool { .. } => Ok(()),
                defect => Err(format!(
                    "{tool}: a defect, not the caller's error: {defect}"
                )),
            }
        }
        Ok(answer) => {
            let Some(tool) = known else {
                return Err(format!("the unknown tool {tool:?} answered {answer}"));
            };
            if !answer.is_object() {
                return Err(format!("{tool:?}: the answer is not an object: {answer}"));
            }
            read_back(service, tool, args, answer)
        }
    }
}

/// What a successful write, append or delete said it did is what a read now shows.
fn read_back(
    service: &Service,
    tool: ToolName,
    args: &Map<String, Value>,
    answer: &Value,
) -> Result<(), String> {
    let read = |tool: &str, args: Value| -> Result<Value, String> {
        let args = args.as_object().cloned().unwrap_or_default();
        service
            .call(tool, args)
            .map_err(|e| format!("{tool} after a successful call failed: {e}"))
    };
    let arg = |name: &str| args.get(name).cloned().unwrap_or(Value::Null);
    let (agent, path) = (arg("agent_id"), arg("path"));
    match tool {
        ToolName::WriteFile | ToolName::EditFile => {
            let now = read("read_file", json!({ "agent_id": agent, "path": path }))?;
            if now["current_version"] != answer["version"] {
                return Err(format!("{tool:?} answered {answer}, a read shows {now}"));
            }
            if tool == ToolName::WriteFile
                && now["next_line"].is_null()
                && now["content"] != arg("content")
            {
                return Err(format!(
                    "write_file stored other content than it was given: {now}"
                ));
            }
        }
        ToolName::AppendLog => {
            let id = answer["entry_id"].as_u64().unwrap_or(0);
            let page = read(
                "read_log",
                json!({ "agent_id": agent, "path": path, "since_entry": id.saturating_sub(1) }),
            )?;
            let first = &page["entries"][0];
            if first["id"] != answer["entry_id"] || first["entry"] != arg("entry") {
                return Err(format!(
                    "append_log answered {answer}, the log holds {first}"
                ));
            }
        }
        ToolName::DeleteFile if answer["deleted"] == true => {
            if let Ok(still) = read("read_file", json!({ "agent_id": agent, "path": path })) {
                return Err(format!(
                    "delete_file answered {answer}, but a read gives {still}"
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// After a call that may have written: `verify` finds every invariant of the store intact.
pub fn check_store(db: &Path) -> Result<(), String> {
    let verification = verify(db).map_err(|e| format!("verify could not run: {e}"))?;
    if verification.problems.is_empty() {
        Ok(())
    } else {
        Err(format!("verify: {}", verification.problems.join("; ")))
    }
}

/// Whether a call of `tool` may change the store.
pub fn may_write(tool: &str) -> bool {
    ToolName::parse(tool).is_some_and(|t| !t.hints().read_only)
}
