//! scratchpad-mcp's host: the only part of the project with side effects.
//!
//! The tool logic is a WebAssembly component (`guest/`, embedded at build time); this crate
//! runs it in wasmtime and gives it what it may not have itself: storage, a clock, a model.
//!
//! Map:
//! - [`bindings`]: the host side of `wit/scratchpad.wit` (the only `bindgen!`).
//! - [`bounds`]: the memory and tables one instance may use.
//! - [`sandbox`]: engine, limits, the compiled-component cache, instances that serve one
//!   agent each, kept between its calls.
//! - [`storage`]: the [`storage::Backend`] interface, SQLite (embedded) and PostgreSQL (hosted),
//!   which only persist.
//! - [`guard`]: every check of what the guest asks of storage and answers.
//! - [`imports`]: the WIT imports (`storage`, `summariser`) and the state of one call.
//! - [`summariser`]: Claude over the Anthropic Messages API.
//! - [`sequence`]: one run of the guest in its call's transaction, for every caller of it.
//! - [`service`]: one tool call, start to finish, as one transaction, through the guest's
//!   `json` export (the tool surface is the guest crate's `json` module).
//! - [`writers`]: one write call per agent at a time in this process.
//! - [`mcp`]: the MCP server (rmcp), over stdio or HTTP.
//! - [`message`]: the messages both transports read, and the answer to one they cannot.
//! - [`stdio`]: the stdio transport: rmcp's framing, a tool's answer written once as its
//!   structured content.
//! - [`http`]: hosted mode: Streamable HTTP, `/health`, `/metrics`, bearer keys.
//! - [`keys`]: API keys, kept hashed, each bound to agents and a scope.
//! - [`gate`]: per-call checks of hosted mode (key, rate) and the call metrics.
//! - [`rate`]: token buckets, the rule a backend's and the gate's share.
//! - [`resources`]: scratchpad files as MCP resources.
//! - [`settings`]: flags, environment, the config file and per-user defaults.
//! - [`ops`]: the operator's commands (snapshot, restore, verify, export, import, stats).
//! - [`private`]: files and folders created for their owner only (0600, 0700).
//! - [`wakeup`]: a condition variable that wakes nobody when nobody waits.
//! - [`heap`]: what glibc's allocator is told of how the server uses memory.
//! - [`standalone`]: the self-contained components (tools and SQLite in one) it carries.

pub mod bindings;
pub mod bounds;
pub mod epoch;
pub mod gate;
pub mod guard;
pub mod heap;
pub mod http;
pub mod imports;
pub mod in_flight;
pub mod keys;
pub mod mcp;
pub mod message;
pub mod oauth;
pub mod ops;
pub mod private;
pub mod rate;
pub mod resources;
pub mod sandbox;
pub mod sequence;
pub mod service;
pub mod settings;
pub mod standalone;
pub mod stdio;
pub mod storage;
pub mod summariser;
pub mod wakeup;
pub mod writers;

pub use service::{Answer, CallError, Service};
pub use settings::Settings;

use std::sync::Arc;

/// Why the scratchpad could not start.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] storage::StoreError),
    /// The component could not be loaded.
    #[error(transparent)]
    Sandbox(#[from] sandbox::SandboxError),
}

impl Service {
    /// Opens the store (PostgreSQL if a database is given, else the SQLite file) and loads
    /// the embedded component, as `settings` say.
    pub fn open(settings: &Settings) -> Result<Self, OpenError> {
        Self::open_with_component(settings, sandbox::GUEST_COMPONENT)
    }

    /// The same with another build of the component (tests load hostile ones).
    pub fn open_with_component(settings: &Settings, wasm: &[u8]) -> Result<Self, OpenError> {
        let backend: Box<dyn storage::Backend> = match &settings.database {
            Some(url) => Box::new(storage::Postgres::open(url)?),
            None => Box::new(storage::Sqlite::open(&settings.db)?),
        };
        let sandbox = sandbox::Sandbox::with_component(wasm, settings.cache_dir.as_deref())?;
        let model =
            summariser::SingleFlight::new(summariser::Anthropic::new(settings.anthropic.clone()));
        Ok(Service::new(sandbox, backend, Arc::new(model)).with_limits(settings.limits))
    }
}
