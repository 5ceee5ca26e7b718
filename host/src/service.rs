//! One tool call, start to finish: decode the arguments, open the call's transaction, run the
//! guest in its agent's instance, check its answer, and commit, or roll back on any failure.
//!
//! This is the one path every call takes, whichever transport it came by.

use crate::bindings::exports::scratchpad::mcp::json::CallError as GuestCallError;
use crate::bindings::{LimitOverrides, NO_OVERRIDES, ToolError};
use crate::guard::answers;
use crate::rate::{Allowance, Rate};
use crate::sandbox::{Sandbox, SandboxError};
use crate::sequence::{mode_of, run_in};
use crate::storage::{Backend, Later, Mode, StoreError, Txn};
use crate::summariser::SummaryModel;
use crate::writers::Writers;
/// The tools, as the guest crate defines them (linked natively).
pub use scratchpad_guest::json::ToolName;
use scratchpad_guest::{FileMeta, StorageError};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// Why a call failed. Its `Display` is what the caller reads: the rule and the value, never
/// a path of the server, SQL or a key.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No tool has that name (a protocol error, not a tool result).
    #[error("{}", scratchpad_guest::json::unknown_tool(.0))]
    UnknownTool(String),
    /// The arguments do not fit the tool's schema: the guest's words, naming the field.
    #[error("{0}")]
    Arguments(String),
    /// The tool refused the call (a rule, a quota, a missing file, the summariser).
    #[error("{message}")]
    Tool {
        /// The error.
        error: ToolError,
        /// Its text, as every embedding of the tools says it.
        message: String,
    },
    /// The guest's answer broke an invariant of the host (see [`answer`]).
    #[error("the tool logic gave an answer the server refuses ({0}); nothing was changed")]
    Guest(String),
    /// The store failed (what only the operator may read went to the log).
    #[error("{}", scratchpad_guest::json::storage_message(.0))]
    Storage(StorageError),
    /// The commit was made or sent, but not confirmed (see [`StoreError::Unconfirmed`]).
    #[error("{0}")]
    Unconfirmed(&'static str),
    /// The sandbox stopped the guest.
    #[error("{0}; nothing was changed")]
    Sandbox(SandboxError),
}

impl From<GuestCallError> for CallError {
    fn from(e: GuestCallError) -> Self {
        match e {
            GuestCallError::UnknownTool(name) => {
                CallError::Guest(format!("it does not know a tool the server lists ({name})"))
            }
            GuestCallError::InvalidArguments(message) => CallError::Arguments(message),
            GuestCallError::Tool(failure) => CallError::Tool {
                error: failure.error,
                message: failure.message,
            },
        }
    }
}

/// The agent a call's arguments name ("" when they name none, which the guest refuses):
/// what hosted mode checks against the key and what the call's log span records.
pub fn agent_of(args: &Map<String, Value>) -> &str {
    args.get("agent_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// A tool's answer, checked: the guest's JSON text, one JSON object.
///
/// The text goes to the client as it came, as the text content and, over stdio, as the
/// structured content too (see [`crate::stdio`]): never parsed into a value and written
/// again, which for a read of 100 log entries took a third of the call. The guest writes
/// compact JSON in its fields' order, which is exactly what a value would be written as; and
/// whatever text parses at all reads, in any JSON parser that takes a repeated key's last
/// value as this one does, as what the host checked.
#[derive(Debug)]
pub struct Answer {
    /// The answer as JSON text.
    pub text: String,
}

impl Answer {
    /// The answer as a value, for a transport or caller that needs one.
    pub fn json(&self) -> Result<Value, CallError> {
        serde_json::from_str(&self.text)
            .map_err(|_| CallError::Guest("an answer that is not JSON".into()))
    }
}

/// The scratchpad: the guest's rules over a store and a summariser.
pub struct Service {
    /// Runs the guest, in an instance of the call's agent's own.
    sandbox: Sandbox,
    /// Where calls' transactions come from; shared by every call.
    backend: Box<dyn Backend>,
    /// Who writes summaries, shared so concurrent requests for one summary share one request.
    model: Arc<dyn SummaryModel>,
    /// The operator's limits, handed to every call.
    limits: LimitOverrides,
    /// Queues one agent's write calls, so that they do not make each other run again.
    writers: Writers,
}

impl Service {
    /// Puts the parts together, with the default limits.
    pub fn new(sandbox: Sandbox, backend: Box<dyn Backend>, model: Arc<dyn SummaryModel>) -> Self {
        Self {
            sandbox,
            backend,
            model,
            limits: NO_OVERRIDES,
            writers: Writers::default(),
        }
    }

    /// The same with the operator's limits.
    pub fn with_limits(self, limits: LimitOverrides) -> Self {
        Self { limits, ..self }
    }

    /// The operator's limits (each `None` keeps the guest's default).
    pub fn limits(&self) -> &LimitOverrides {
        &self.limits
    }

    /// Whether a call only reaches files on this machine, never waiting on the network (see
    /// [`Backend::calls_are_local`]).
    pub fn calls_are_local(&self) -> bool {
        self.backend.calls_are_local()
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
            .map_err(|e| CallError::Storage(e.into()))
    }

    /// Takes one call from `agent`'s rate bucket in the store, where the store keeps them
    /// (see [`Backend::take_call`]).
    pub fn take_call(&self, agent: &str, rate: Rate) -> Option<Result<Allowance, CallError>> {
        self.backend
            .take_call(agent, rate)
            .map(|taken| taken.map_err(|e| CallError::Storage(e.into())))
    }

    /// Calls the tool `name` with MCP arguments; the result is the tool's structured content.
    pub fn call(&self, name: &str, args: Map<String, Value>) -> Result<Value, CallError> {
        self.answer(name, args)?.json()
    }

    /// [`Service::call`], with the answer's JSON text too: what an MCP server sends as the
    /// text content beside the structured content.
    pub fn answer(&self, name: &str, args: Map<String, Value>) -> Result<Answer, CallError> {
        self.answer_then(name, args, |outcome| outcome)
    }

    /// [`Service::answer`], handed to `deliver` as soon as it is known: what the call's
    /// store leaves for after its answer ([`Txn::commit_answering`], a read's end over the
    /// network) runs after `deliver` returns, and before this does.
    pub fn answer_then<R>(
        &self,
        name: &str,
        args: Map<String, Value>,
        deliver: impl FnOnce(Result<Answer, CallError>) -> R,
    ) -> R {
        let Some(tool) = ToolName::parse(name) else {
            return deliver(Err(CallError::UnknownTool(name.to_owned())));
        };
        let started = Instant::now();
        // One span a call: tool, agent, outcome, duration; never content or keys.
        let span = tracing::info_span!("tool_call", tool = tool.as_str(), agent = agent_of(&args));
        let _entered = span.enter();
        let (result, later) = match self.run(tool, &args) {
            Ok((answer, later)) => (Ok(answer), later),
            Err(e) => (Err(e), None),
        };
        tracing::info!(
            outcome = if result.is_ok() { "ok" } else { "error" },
            micros = started.elapsed().as_micros() as u64,
            "tool call"
        );
        let delivered = deliver(result);
        if let Some(end) = later {
            end();
        }
        delivered
    }

    /// Runs one call: a write call waits for its agent's turn in this process (see
    /// [`Writers`]), and runs again, [`ATTEMPTS`] times at most, while its store finds that
    /// another process changed the agent's data under it ([`Txn::conflicted`]); the last
    /// run holds the write lock from its start.
    fn run(&self, tool: ToolName, args: &Map<String, Value>) -> Result<Answered, CallError> {
        let mode = mode_of(tool);
        let agent = agent_of(args);
        let _turn = (mode == Mode::Write).then(|| self.writers.turn(agent));
        let arguments = serde_json::to_string(args).unwrap_or_default();
        for _ in 1..ATTEMPTS {
            let begin = || self.backend.begin(mode, self.limits);
            if let Some(result) = self.attempt(tool, args, &arguments, begin) {
                return result;
            }
        }
        // The last run holds the write lock from the start: it cannot conflict.
        let begin = || self.backend.begin_locked(self.limits);
        self.attempt(tool, args, &arguments, begin)
            .unwrap_or(Err(CallError::Storage(StorageError::Busy)))
    }

    /// One run of the guest's `json` export in its own transaction: committed only when the
    /// guest answered, saw no storage failure, and its answer passed [`answers::check`].
    /// `None` when the store found a conflict: nothing was written, and the call runs again.
    fn attempt(
        &self,
        tool: ToolName,
        args: &Map<String, Value>,
        arguments: &str,
        begin: impl FnOnce() -> Result<Box<dyn Txn>, StoreError>,
    ) -> Option<Result<Answered, CallError>> {
        let agent = agent_of(args);
        let txn = match begin() {
            Ok(txn) => txn,
            Err(e) => return Some(Err(CallError::Storage(e.into()))),
        };
        let ran = run_in(txn, agent, &self.model, |state| {
            self.sandbox.call_json(state, tool.as_str(), arguments)
        })?;
        let checked = || {
            let answer = ran.answer.map_err(CallError::Sandbox)?;
            if let Some(failure) = ran.failure {
                return Err(CallError::Storage(failure));
            }
            let text = answer.map_err(CallError::from)?;
            answers::check(tool, args, &text).map_err(CallError::Guest)?;
            Ok(text)
        };
        let text = match checked() {
            Ok(text) => text,
            // A failure found on what the store remembered is answered once that is confirmed.
            Err(_) if ran.txn.outdated() => return None,
            Err(e) => return Some(Err(e)),
        };
        match ran.txn.commit_answering(agent) {
            Ok(later) => Some(Ok((Answer { text }, later))),
            // Found at the commit that what the store remembered of the agent was out of date
            // (see `Txn::conflicted`): nothing was stored.
            Err(StoreError::Stale) => None,
            Err(StoreError::Unconfirmed(words)) => Some(Err(CallError::Unconfirmed(words))),
            Err(e) => Some(Err(CallError::Storage(e.into()))),
        }
    }
}

/// A call's answer, and what its store leaves for after it.
type Answered = (Answer, Option<Later>);

/// How often a write call runs at most when other processes keep changing its agent's data
/// under it: the last run waits for the write lock before it reads.
const ATTEMPTS: usize = 3;
