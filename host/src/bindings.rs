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
    FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, SummariserError, ToolError, Usage,
};

/// An embedder that sets no limits of its own: every limit is the guest's default.
pub const NO_OVERRIDES: LimitOverrides = LimitOverrides {
    max_files: None,
    max_log_entries: None,
    max_total_bytes: None,
    max_write_bytes: None,
    max_log_entry_bytes: None,
    versions_kept: None,
    log_page_size: None,
    max_response_tokens: None,
};
