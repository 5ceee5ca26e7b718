//! The self-contained component: every tool, and the SQLite store they run on, in one
//! `wasm32-wasip2` component that needs nothing from its embedder but a preopened folder
//! (and, unless built `without-summariser`, a summariser).
//!
//! The tools are the guest crate's, unchanged; the store is the `scratchpad-store` crate the
//! server uses too, with SQLite's C compiled to wasm, so a folder written here is a store
//! the server serves and the other way round (not at the same time).
//!
//! Map:
//! - [`lease`]: one process at a time per folder, without file locks.
//! - [`pad`]: the open store and the one-transaction-per-call rule.
//! - `component` (wasm only): the exports, the folder, the summariser.
//!
//! Natively this crate builds too, so the lease and the transaction rule are unit-tested
//! with real files; the component itself is built by `scripts/standalone`.

pub mod lease;
pub mod pad;

#[cfg(target_arch = "wasm32")]
mod component;
