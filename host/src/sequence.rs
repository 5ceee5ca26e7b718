//! The call sequence: one run of the guest inside its call's transaction. The service, the
//! benchmarks and the conformance runner all call the guest through it, so what they measure
//! and check is what production runs: the transaction begun in the tool's mode, a fresh call
//! state, the first storage failure kept, and a conflict reported before anything is
//! committed.
//!
//! Committing is the caller's decision, made on what [`Ran`] hands back: the service
//! commits only an answer it has checked.

use crate::imports::CallState;
use crate::sandbox::SandboxError;
use crate::storage::{Mode, Txn};
use crate::summariser::SummaryModel;
use scratchpad_guest::StorageError;
use scratchpad_guest::json::ToolName;
use std::sync::Arc;

/// The mode a call of `tool` runs in: a tool that changes nothing the agent can see runs
/// without the write lock.
pub fn mode_of(tool: ToolName) -> Mode {
    if tool.hints().read_only {
        Mode::Read
    } else {
        Mode::Write
    }
}

/// What one run of the guest in its transaction left.
pub struct Ran<R> {
    /// What it answered, or why the sandbox stopped it.
    pub answer: Result<R, SandboxError>,
    /// The first storage failure it saw, swallowed or not.
    pub failure: Option<StorageError>,
    /// The call's transaction: commit it, or drop it to roll back.
    pub txn: Box<dyn Txn>,
}

/// Runs `guest` (a sandbox run of the component) for `agent` inside `txn`, with `model` as
/// the summariser. `None` when the store found that what the call read had changed before
/// it could take the write lock ([`Txn::conflicted`]): nothing was written, and the call
/// should run again.
pub fn run_in<R>(
    txn: Box<dyn Txn>,
    agent: &str,
    model: &Arc<dyn SummaryModel>,
    guest: impl FnOnce(CallState) -> (Result<R, SandboxError>, CallState),
) -> Option<Ran<R>> {
    let state = CallState::new(agent, txn, Arc::clone(model));
    let (answer, state) = guest(state);
    let (txn, failure) = state.finish();
    (!txn.conflicted()).then_some(Ran {
        answer,
        failure,
        txn,
    })
}
