//! One tool call, start to finish: decode the arguments, open the call's transaction, run the
//! guest in a fresh sandbox, check its answer, and commit, or roll back on any failure.
//!
//! This is the one path every call takes, whichever transport it came by.

use crate::bindings::{
    FileMeta, LimitOverrides, NO_OVERRIDES, StorageError, SummariserError, ToolError, Tools, api,
};
use crate::gate::{Allowance, Rate};
use crate::imports::CallState;
use crate::sandbox::{Sandbox, SandboxError};
use crate::storage::{Backend, Mode, StoreError};
use crate::summariser::SummaryModel;
use crate::tools::{
    AgentArgs, AppendLogArgs, AppendLogOutput, DeleteFileArgs, DeleteFileOutput, EditFileArgs,
    ForgetLogArgs, ForgetLogOutput, HistoryOutput, ListFilesArgs, ListFilesOutput, PathArgs,
    ReadFileArgs, ReadFileOutput, ReadFilesArgs, ReadFilesOutput, ReadLogArgs, ReadLogOutput,
    SearchArgs, SearchOutput, SummarizeFileOutput, UsageStatsOutput, WriteFileArgs,
    WriteFileOutput, agent_of, decode, log_value, same_path,
};
/// The tool names and the shape errors are part of what a call answers.
pub use crate::tools::{ShapeError, ToolName};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::Store;

/// Why a call failed. Its `Display` is what the caller reads: the rule and the value, never
/// a path of the server, SQL or a key.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No tool has that name (a protocol error, not a tool result).
    #[error("unknown tool {0:?}; the tools are {names}", names = tool_names())]
    UnknownTool(String),
    /// The arguments did not decode, or the guest's answer broke a host invariant.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// The tool refused the call (a rule, a quota, a missing file, the summariser).
    #[error("{}", tool_message(.0))]
    Tool(ToolError),
    /// The store failed.
    #[error("{}", storage_message(&.0.to_wit()))]
    Storage(StoreError),
    /// The sandbox stopped the guest.
    #[error("{0}; nothing was changed")]
    Sandbox(SandboxError),
}

fn tool_names() -> String {
    ToolName::ALL.map(ToolName::as_str).join(", ")
}

fn tool_message(e: &ToolError) -> String {
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

fn storage_message(e: &StorageError) -> String {
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

/// The scratchpad: the guest's rules over a store and a summariser.
pub struct Service {
    sandbox: Sandbox,
    backend: Box<dyn Backend>,
    model: Arc<dyn SummaryModel>,
    limits: LimitOverrides,
}

impl Service {
    /// Puts the parts together, with the default limits.
    pub fn new(sandbox: Sandbox, backend: Box<dyn Backend>, model: Arc<dyn SummaryModel>) -> Self {
        Self {
            sandbox,
            backend,
            model,
            limits: NO_OVERRIDES,
        }
    }

    /// The same with the operator's limits.
    pub fn with_limits(self, limits: LimitOverrides) -> Self {
        Self { limits, ..self }
    }

    /// Existing files of every agent after `after`, for MCP resources (see
    /// [`Backend::all_files`]).
    pub fn all_files(
        &self,
        agents: Option<&[String]>,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<(String, FileMeta)>, CallError> {
        self.backend
            .all_files(agents, after, limit)
            .map_err(CallError::Storage)
    }

    /// Takes one call from `agent`'s rate bucket in the store, where the store keeps them
    /// (see [`Backend::take_call`]).
    pub fn take_call(&self, agent: &str, rate: Rate) -> Option<Result<Allowance, CallError>> {
        self.backend
            .take_call(agent, rate)
            .map(|taken| taken.map_err(CallError::Storage))
    }

    /// Calls the tool `name` with MCP arguments; the result is the tool's structured content.
    pub fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, CallError> {
        let tool = ToolName::parse(name).ok_or_else(|| CallError::UnknownTool(name.to_owned()))?;
        let started = Instant::now();
        // One span a call: tool, agent, outcome, duration; never content or keys.
        let span = tracing::info_span!("tool_call", tool = tool.as_str(), agent = agent_of(&args));
        let _entered = span.enter();
        let result = self.dispatch(tool, args);
        tracing::info!(
            outcome = if result.is_ok() { "ok" } else { "error" },
            micros = started.elapsed().as_micros() as u64,
            "tool call"
        );
        result
    }

    fn dispatch(&self, tool: ToolName, args: Map<String, Value>) -> Result<Value, CallError> {
        match tool {
            ToolName::WriteFile => {
                let a: WriteFileArgs = decode(tool, args)?;
                let request = api::WriteFileRequest {
                    agent_id: a.agent_id,
                    path: a.path,
                    content: a.content,
                    expected_version: a.expected_version,
                };
                self.run(
                    tool,
                    &request.agent_id,
                    |g, s| g.call_write_file(s, &request),
                    |r| {
                        same_path(&request.path, &r.path)?;
                        Ok(WriteFileOutput::from(r))
                    },
                )
            }
            ToolName::EditFile => {
                let a: EditFileArgs = decode(tool, args)?;
                let request = api::EditFileRequest {
                    agent_id: a.agent_id,
                    path: a.path,
                    base_version: a.base_version,
                    edits: a.edits.into_iter().map(api::Edit::from).collect(),
                };
                self.run(
                    tool,
                    &request.agent_id,
                    |g, s| g.call_edit_file(s, &request),
                    |r| {
                        same_path(&request.path, &r.path)?;
                        Ok(WriteFileOutput::from(r))
                    },
                )
            }
            ToolName::FileHistory => {
                let a: PathArgs = decode(tool, args)?;
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_file_history(s, &a.agent_id, &a.path),
                    |h| HistoryOutput::new(&a.path, h),
                )
            }
            ToolName::ReadFiles => {
                let a: ReadFilesArgs = decode(tool, args)?;
                let request = api::ReadFilesRequest {
                    agent_id: a.agent_id.clone(),
                    paths: a.paths.clone(),
                    prefix: a.prefix.clone(),
                    max_tokens: a.max_tokens,
                };
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_read_files(s, &request),
                    |r| ReadFilesOutput::new(&a, r),
                )
            }
            ToolName::Search => {
                let a: SearchArgs = decode(tool, args)?;
                let request = api::SearchRequest {
                    agent_id: a.agent_id.clone(),
                    query: a.query.clone(),
                    prefix: a.prefix.clone(),
                    limit: a.limit,
                    offset: a.offset,
                };
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_search(s, &request),
                    |r| SearchOutput::new(&a, r),
                )
            }
            ToolName::ReadFile => {
                let a: ReadFileArgs = decode(tool, args)?;
                let request = api::ReadFileRequest {
                    agent_id: a.agent_id.clone(),
                    path: a.path.clone(),
                    since_version: a.since_version,
                    full_diff: a.full_diff.unwrap_or(false),
                    offset: a.offset,
                    limit: a.limit,
                    column: a.column,
                };
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_read_file(s, &request),
                    |r| ReadFileOutput::new(&a, r),
                )
            }
            ToolName::AppendLog => {
                let a: AppendLogArgs = decode(tool, args)?;
                let request = api::AppendLogRequest {
                    agent_id: a.agent_id,
                    path: a.path,
                    entry: log_value(a.entry),
                };
                self.run(
                    tool,
                    &request.agent_id,
                    |g, s| g.call_append_log(s, &request),
                    |r| {
                        same_path(&request.path, &r.path)?;
                        Ok(AppendLogOutput {
                            path: r.path,
                            entry_id: r.entry_id,
                        })
                    },
                )
            }
            ToolName::ReadLog => {
                let a: ReadLogArgs = decode(tool, args)?;
                let request = api::ReadLogRequest {
                    agent_id: a.agent_id.clone(),
                    path: a.path.clone(),
                    since_entry: a.since_entry,
                };
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_read_log(s, &request),
                    |page| ReadLogOutput::new(&a, page),
                )
            }
            ToolName::ForgetLog => {
                let a: ForgetLogArgs = decode(tool, args)?;
                let request = api::ForgetLogRequest {
                    agent_id: a.agent_id,
                    path: a.path,
                    before_entry: a.before_entry,
                    keep_last: a.keep_last,
                    max_age_days: a.max_age_days,
                };
                self.run(
                    tool,
                    &request.agent_id,
                    |g, s| g.call_forget_log(s, &request),
                    |r| {
                        same_path(&request.path, &r.path)?;
                        Ok(ForgetLogOutput {
                            path: r.path,
                            removed: r.removed,
                            remaining: r.remaining,
                        })
                    },
                )
            }
            ToolName::ListFiles => {
                let a: ListFilesArgs = decode(tool, args)?;
                let request = api::ListFilesRequest {
                    agent_id: a.agent_id.clone(),
                    prefix: a.prefix.clone(),
                };
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_list_files(s, &request),
                    |files| ListFilesOutput::new(&a, files),
                )
            }
            ToolName::DeleteFile => {
                let a: DeleteFileArgs = decode(tool, args)?;
                let request = api::DeleteFileRequest {
                    agent_id: a.agent_id,
                    path: a.path,
                    expected_version: a.expected_version,
                };
                self.run(
                    tool,
                    &request.agent_id,
                    |g, s| g.call_delete_file(s, &request),
                    |r| {
                        same_path(&request.path, &r.path)?;
                        Ok(DeleteFileOutput {
                            path: r.path,
                            deleted: r.deleted,
                        })
                    },
                )
            }
            ToolName::SummarizeFile => {
                let a: PathArgs = decode(tool, args)?;
                let request = api::SummarizeFileRequest {
                    agent_id: a.agent_id,
                    path: a.path,
                };
                self.run(
                    tool,
                    &request.agent_id,
                    |g, s| g.call_summarize_file(s, &request),
                    |r| {
                        same_path(&request.path, &r.path)?;
                        Ok(SummarizeFileOutput::from(r))
                    },
                )
            }
            ToolName::GetUsageStats => {
                let a: AgentArgs = decode(tool, args)?;
                self.run(
                    tool,
                    &a.agent_id,
                    |g, s| g.call_get_usage_stats(s, &a.agent_id),
                    |r| Ok(UsageStatsOutput::from(r)),
                )
            }
        }
    }

    /// Runs one call of the guest for `agent` in its own transaction: committed only when
    /// the guest answered, saw no storage failure, and its answer passed `finish`.
    fn run<R, O: Serialize>(
        &self,
        tool: ToolName,
        agent: &str,
        call: impl FnOnce(&Tools, &mut Store<CallState>) -> wasmtime::Result<Result<R, ToolError>>,
        finish: impl FnOnce(R) -> Result<O, ShapeError>,
    ) -> Result<Value, CallError> {
        // A tool that changes nothing the agent can see runs without the write lock.
        let mode = if tool.hints().read_only {
            Mode::Read
        } else {
            Mode::Write
        };
        let txn = self.backend.begin(mode).map_err(CallError::Storage)?;
        let state = CallState::new(agent, txn, Arc::clone(&self.model)).with_limits(self.limits);
        let (answer, state) = self.sandbox.run(state, |instance, store| {
            call(instance.scratchpad_mcp_tools(), store)
        });
        let (txn, failure) = state.finish();
        let answer = answer.map_err(CallError::Sandbox)?;
        if let Some(failure) = failure {
            return Err(CallError::Storage(failure));
        }
        let output = finish(answer.map_err(CallError::Tool)?)?;
        let json = serde_json::to_value(output)
            .map_err(|e| ShapeError::Guest(format!("unencodable answer: {e}")))?;
        txn.commit(agent).map_err(CallError::Storage)?;
        Ok(json)
    }
}
