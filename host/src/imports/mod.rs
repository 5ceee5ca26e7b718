//! The host's side of the WIT imports, one module per interface, and the state of one call.
//!
//! Nothing the guest asks for is trusted: every storage request must name the agent the call
//! is for and well-formed paths, writes are refused in a read-only call, and any storage
//! failure is remembered so that a guest which swallows it still cannot get its call
//! committed.

mod convert;
mod storage;
mod summariser;

use crate::bindings::scratchpad::mcp::types;
use crate::bounds::CallLimits;
use crate::storage::Txn;
use crate::summariser::SummaryModel;
use scratchpad_guest::StorageError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Everything one tool call's store holds.
pub struct CallState {
    /// The agent this call is for: the only namespace its storage requests may touch.
    agent: String,
    /// The call's transaction, which holds the operator's limits too.
    txn: Box<dyn Txn>,
    model: Arc<dyn SummaryModel>,
    /// The first storage failure of the call, if any.
    failure: Option<StorageError>,
    started: Instant,
    /// Time spent inside imports, which does not count against the CPU limit.
    in_imports: Duration,
    pub(crate) limits: CallLimits,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl CallState {
    /// The state of a call for `agent`, inside `txn`. The guest gets a WASI context with no
    /// arguments, environment, files, sockets or stdio: only clocks and randomness.
    pub fn new(agent: &str, txn: Box<dyn Txn>, model: Arc<dyn SummaryModel>) -> Self {
        Self {
            agent: agent.to_owned(),
            txn,
            model,
            failure: None,
            started: Instant::now(),
            in_imports: Duration::ZERO,
            limits: CallLimits::default(),
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        }
    }

    /// Time spent running guest code so far.
    pub fn guest_time(&self) -> Duration {
        self.started.elapsed().saturating_sub(self.in_imports)
    }

    /// The transaction, and the first storage failure the guest saw (if any).
    pub fn finish(self) -> (Box<dyn Txn>, Option<StorageError>) {
        (self.txn, self.failure)
    }

    /// Runs `f` as time spent outside the guest.
    fn outside_guest<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let start = Instant::now();
        let result = f(self);
        self.in_imports += start.elapsed();
        result
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for CallState {}
