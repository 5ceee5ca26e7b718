//! The host's side of the WIT imports, one module per interface; the state of one call, and
//! of the instance serving it.
//!
//! Nothing the guest asks for is trusted: every storage request goes through the call's
//! [`Guard`], which holds every check of it (the agent, the names, read-only calls, the
//! version and log rules) and remembers the first failure.

mod convert;
mod storage;
mod summariser;

use crate::bindings::scratchpad::mcp::types;
use crate::bounds::InstanceBounds;
use crate::guard::Guard;
use crate::storage::Txn;
use crate::summariser::SummaryModel;
use scratchpad_guest::StorageError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// What one tool call brings to the instance that serves it.
pub struct CallState {
    /// The call's transaction, behind the checks of every request the guest makes of it.
    guard: Guard,
    /// Who writes summaries; the same for every call of a service.
    model: Arc<dyn SummaryModel>,
    /// When the call began: with `in_imports`, the guest's own CPU time.
    started: Instant,
    /// Time spent inside imports, which does not count against the CPU limit.
    in_imports: Duration,
}

impl CallState {
    /// The state of a call for `agent`, inside `txn`.
    pub fn new(agent: &str, txn: Box<dyn Txn>, model: Arc<dyn SummaryModel>) -> Self {
        Self {
            guard: Guard::new(agent, txn),
            model,
            started: Instant::now(),
            in_imports: Duration::ZERO,
        }
    }

    /// The agent the call is for: only its calls may share an instance.
    pub fn agent(&self) -> &str {
        self.guard.own_agent()
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

/// Everything an instance's store holds, for as long as the instance lives (see
/// [`crate::sandbox`] for which calls one instance serves): its bounds, its WASI context,
/// and the call it is serving now.
pub struct InstanceState {
    /// The call being served; `None` between calls, when no import can run.
    call: Option<CallState>,
    /// The memory bounds the sandbox enforces on the instance.
    pub(crate) bounds: InstanceBounds,
    /// The guest's WASI context: clocks and randomness only.
    wasi: WasiCtx,
    /// The component model's resources of the instance (WASI's own).
    table: ResourceTable,
}

impl InstanceState {
    /// The state of a new instance. The guest gets a WASI context with no arguments,
    /// environment, files, sockets or stdio: only clocks and randomness.
    pub fn new() -> Self {
        Self {
            call: None,
            bounds: InstanceBounds::default(),
            wasi: WasiCtx::builder().build(),
            table: ResourceTable::new(),
        }
    }

    /// Starts serving `call`.
    pub(crate) fn serve(&mut self, call: CallState) {
        self.bounds.hit_memory_limit = false;
        self.call = Some(call);
    }

    /// Ends the call being served and hands it back.
    pub(crate) fn served(&mut self) -> Option<CallState> {
        self.call.take()
    }

    /// The call being served, for the imports. The guest runs only inside a call, so an
    /// import without one is a bug of the sandbox's, not something a guest can cause.
    pub(crate) fn call(&mut self) -> &mut CallState {
        self.call
            .as_mut()
            .expect("the guest runs, and so calls imports, only while serving a call")
    }

    /// Time the call being served has spent running guest code.
    pub(crate) fn guest_time(&self) -> Duration {
        self.call
            .as_ref()
            .map_or(Duration::ZERO, CallState::guest_time)
    }

    /// Whether the guest holds no WASI resources between calls (it drops all it makes).
    pub(crate) fn holds_no_resources(&self) -> bool {
        self.table.is_empty()
    }
}

impl Default for InstanceState {
    fn default() -> Self {
        Self::new()
    }
}

impl WasiView for InstanceState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl types::Host for CallState {}
