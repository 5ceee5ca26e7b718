//! What the benchmarks share: the guest's tool logic run natively over the host's own SQLite
//! transactions (the "native" side of the component-overhead ratio), and the documents the
//! benchmarks write.
//!
//! The native path does what `Service::call` does minus the sandbox and the JSON: begin the
//! call's transaction, run the same tool function over the same guard, commit.

pub mod database;
pub mod report;

use scratchpad_guest::limits::NO_OVERRIDES;
use scratchpad_mcp::bindings::ToolError as HostToolError;
use scratchpad_mcp::guard::Guard;
use scratchpad_mcp::sandbox::{Sandbox, tool_function};
use scratchpad_mcp::sequence::run_in;
use scratchpad_mcp::storage::{Backend, Mode};
use scratchpad_mcp::summariser::SummaryModel;
use std::sync::Arc;
use wasmtime::component::{ComponentNamedList, ComponentType, Lift, Lower};

/// A 50-line working document of about 2.7 KB; `revision` changes one line.
pub fn document(revision: usize) -> String {
    (0..50)
        .map(|line| {
            if line == revision % 50 {
                format!(
                    "{line:02}: revised {revision:>8} - this line changes as the work goes on\n"
                )
            } else {
                format!("{line:02}: a line of the plan that stays as it was, for the most part.\n")
            }
        })
        .collect()
}

/// Runs one call through the component as the service does, minus the JSON: the service's
/// call sequence ([`run_in`]) in the tool's mode, the agent's instance in which only the
/// called function is looked up (as the service looks up only `json.call`), then commit.
/// `function` is the WIT name (`write-file`), `params` its arguments as a tuple.
pub fn component_call<P, R>(
    sandbox: &Sandbox,
    backend: &dyn Backend,
    model: &Arc<dyn SummaryModel>,
    mode: Mode,
    agent: &str,
    function: &str,
    params: P,
) -> R
where
    P: ComponentNamedList + Lower,
    R: ComponentType + Lift + 'static,
{
    let txn = backend.begin(mode, NO_OVERRIDES).expect("begin");
    let ran = run_in(txn, agent, model, |state| {
        sandbox.run(state, |instance, store| {
            let index = tool_function(instance, store, function)
                .unwrap_or_else(|| panic!("no tool function {function}"));
            let func =
                instance.get_typed_func::<P, (Result<R, HostToolError>,)>(&mut *store, &index)?;
            Ok(func.call(&mut *store, params)?.0)
        })
    });
    let ran = ran.expect("a benchmark's calls never conflict: one caller, one process");
    let result = ran
        .answer
        .expect("no trap")
        .expect("the component call works");
    assert!(ran.failure.is_none(), "{:?}", ran.failure);
    ran.txn.commit(agent).expect("commit");
    result
}

/// Runs `tool` natively in one transaction of `backend`, as the service would: through the
/// guard the component's requests pass, so the ratio is the sandbox's cost alone.
pub fn native_call<R, E: std::fmt::Debug>(
    backend: &dyn Backend,
    mode: Mode,
    agent: &str,
    tool: impl FnOnce(&Guard) -> Result<R, E>,
) -> R {
    let guard = Guard::new(agent, backend.begin(mode, NO_OVERRIDES).expect("begin"));
    let result = tool(&guard).expect("the native call works");
    let (txn, failure) = guard.finish();
    assert!(failure.is_none(), "{failure:?}");
    txn.commit(agent).expect("commit");
    result
}
