//! What tests and fuzz targets need beside the logic: in-memory ports, and property checks
//! that panic when a property breaks. The property tests run the checks on generated inputs
//! with fixed seeds; the fuzz targets (`fuzz/`) run the same checks on whatever the fuzzer
//! finds.

pub mod contract;
mod memory;
pub mod properties;

pub use memory::{Memory, ScriptedModel};
