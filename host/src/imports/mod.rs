//! The host's side of the WIT imports, one module per interface, and the state of one call.
//!
//! Nothing the guest asks for is trusted: every storage request goes through the call's
//! [`Guard`], which holds every check of it (the agent, the names, read-only calls, the
//! version and log rules) and remembers the first failure.

mod convert;
mod storage;
mod summariser;

use crate::bindings::scratchpad::mcp::types;
use crate::bounds::CallBounds;
use crate::guard::Guard;
use crate::storage::Txn;
use crate::summariser::SummaryModel;
use scratchpad_guest::StorageError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Everything one tool call's store holds.
pub struct CallState {
    /// The call's transaction, behind the checks of every request the guest makes of it.
    guard: Guard,
    /// Who writes summaries; the same for every call of a service.
    model: Arc<dyn SummaryModel>,
    /// When the call began: with `in_imports`, the guest's own CPU time.
    started: Instant,
    /// Time spent inside imports, which does not count against the CPU limit.
    in_imports: Duration,
    /// The memory bounds the sandbox enforces on this call's instance.
    pub(crate) bounds: CallBounds,
    /// The guest's WASI context: clocks and randomness only.
    wasi: WasiCtx,
    /// The component model's resources of the call (WASI's own).
    table: ResourceTable,
}

impl CallState {
    /// The state of a call for `agent`, inside `txn`. The guest gets a WASI context with no
    /// arguments, environment, files, sockets or stdio: only clocks and randomness.
    pub fn new(agent: &str, txn: Box<dyn Txn>, model: Arc<dyn SummaryModel>) -> Self {
        Self {
            guard: Guard::new(agent, txn),
            model,
            started: Instant::now(),
            in_imports: Duration::ZERO,
            bounds: CallBounds::default(),
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
        self.guard.finish()
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
