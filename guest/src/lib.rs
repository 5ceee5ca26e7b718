//! The tool logic of scratchpad-mcp: every rule, and no side effects.
//!
//! This crate compiles to a `wasm32-wasip2` component that exports the `tools` interface of
//! `wit/scratchpad.wit`, and natively, so the same logic is unit-tested and benchmarked
//! without wasm. It owns no clock, file, socket or database: everything stateful comes through
//! the [`Storage`] and [`Summariser`] ports, which the component implements with the WIT
//! imports and the tests implement in memory.
//!
//! Map:
//! - [`limits`]: every limit and quota, one named constant each.
//! - [`budget`]: answers that fit: token estimates, and long content in parts.
//! - [`names`]: agent ids, paths and prefixes, parsed once at the boundary.
//! - [`diff`]: lossless line diffs with `similar`, compacted for tokens, and their inverse.
//! - [`ports`]: the storage and summariser the logic runs against.
//! - [`tools`]: the tools, one function each.
//! - [`json`]: the tools as MCP sees them: the catalogue, JSON arguments and results, the
//!   text of every error; the `json` export.
//! - `testing` (tests and the `testing` feature): in-memory ports, and the property checks
//!   that the property tests and the fuzz targets share.
//! - `component` (wasm only): binds the tools to the WIT exports and the ports to the imports.
//!   The export is the `export` feature (on by default); a crate that wraps these tools in a
//!   component of its own turns it off and uses `Imports` (wasm only) and `bindings::export!`.

pub mod budget;
pub mod diff;
pub mod hex;
pub mod json;
pub mod limits;
pub mod names;
pub mod ports;
pub mod tools;
pub mod words;

#[cfg(target_arch = "wasm32")]
mod component;
#[cfg(target_arch = "wasm32")]
pub use component::Imports;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// The types generated from `wit/scratchpad.wit`, shared by the logic and the component glue.
#[allow(missing_docs, unsafe_code, clippy::all)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "scratchpad",
        additional_derives: [PartialEq, Eq],
        // Lets another component (the tests' hostile guests) wrap these tools.
        pub_export_macro: true,
    });
}

pub use bindings::exports::scratchpad::mcp::tools as api;
pub use bindings::scratchpad::mcp::types::{
    FileMeta, LimitOverrides, LogEntry, LogValue, Quotas, StorageError, SummariserError, ToolError,
    Usage,
};
pub use ports::{Storage, Summariser};
