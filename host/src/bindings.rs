//! The host side of `wit/scratchpad.wit`. This is the only place `bindgen!` runs: every other
//! module takes the generated types from here. Their documentation is the WIT's.

#![allow(missing_docs)]

wasmtime::component::bindgen!({
    path: "../wit",
    world: "scratchpad",
    additional_derives: [PartialEq],
});

pub use exports::scratchpad::mcp::tools::{self as api, Guest as Tools};
pub use scratchpad::mcp::storage::{
    FileState, LogState, MatchRef, Retention, SearchMatch, VersionInfo,
};
pub use scratchpad::mcp::summariser::SummaryRequest;
pub use scratchpad::mcp::types::{
    FileMeta, LogEntry, LogValue, StorageError, SummariserError, ToolError, Usage,
};
/// The operator's limits are kept in the guest crate's type, which the storage contract
/// speaks; only the `limits` import moves them into the generated one.
pub use scratchpad_guest::{LimitOverrides, limits::NO_OVERRIDES};
