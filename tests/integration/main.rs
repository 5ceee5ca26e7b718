//! Integration tests: the real host runs the real guest component over real SQLite files
//! and, given a server, real PostgreSQL databases.
//! One binary, one module per concern.

// Some tests report figures (times, memory) as well as asserting.
#![allow(clippy::print_stdout)]

mod common;
mod conformance;
mod contract;
mod files;
// The fuzz target's oracle, tested here against the hostile guest.
#[path = "../../fuzz/src/oracle.rs"]
mod fuzz_oracle;
mod fuzzing;
mod hostile_input;
mod isolation;
mod layers;
mod logs;
mod ops;
mod postgres;
mod sandbox;
mod search;
mod standalone;
mod standin;
mod storage;
mod summaries;
