//! Every limit the tools enforce, one constant each, with why it has that value.
//!
//! These are the numbers of SPEC.md. They live here only: the host reads them back through
//! `get_usage_stats` rather than keeping copies.

use std::time::Duration;

/// Longest agent id, in characters. Long enough for a UUID with a prefix, short enough to
/// print in every error.
pub const MAX_AGENT_ID_CHARS: usize = 128;

/// Longest path, in characters: the common file-system limit for one name.
pub const MAX_PATH_CHARS: usize = 255;

/// Largest content of one write, in UTF-8 bytes (1 MiB). A scratchpad holds working
/// documents, not data sets; larger content would blow any model's context anyway.
pub const MAX_WRITE_BYTES: u64 = 1024 * 1024;

/// Largest log entry, in bytes (64 KiB): a log records actions, not documents.
pub const MAX_LOG_ENTRY_BYTES: u64 = 64 * 1024;

/// Versions kept per file. Enough to answer "what changed since I last looked" across a
/// long session, while bounding storage at ten times the file.
pub const VERSIONS_KEPT: u32 = 10;

/// Entries in one page of `read_log`: about what an agent can take in at once.
pub const LOG_PAGE_SIZE: u32 = 100;

/// Files one agent may hold.
pub const MAX_FILES: u64 = 1_000;

/// Log entries one agent may hold across all its logs.
pub const MAX_LOG_ENTRIES: u64 = 100_000;

/// Bytes one agent may store in all: every kept version plus every log entry (100 MiB).
pub const MAX_TOTAL_BYTES: u64 = 100 * 1024 * 1024;

/// Files up to this many characters (about 2,000 tokens) come back whole from
/// `summarize_file`: reading them costs less than summarising them.
pub const SUMMARY_THRESHOLD_CHARS: usize = 8_000;

/// Files over this many characters (about 150,000 tokens) are refused by `summarize_file`
/// before any request: with the prompt and the answer they would not fit Claude Haiku's
/// 200,000-token context window.
pub const MAX_SUMMARY_INPUT_CHARS: usize = 600_000;

/// Longest summary asked of the model, in tokens.
pub const SUMMARY_MAX_TOKENS: u32 = 1_024;

/// Unchanged lines a compact diff keeps on each side of a change, as `diff -u` does.
pub const DIFF_CONTEXT_LINES: usize = 3;

/// A compact diff leaves out an unchanged run only when that saves at least this many
/// lines: describing a shorter run costs about as much as sending it.
pub const DIFF_MIN_SKIPPED_LINES: usize = 3;

/// Time the diff algorithm may spend looking for a minimal diff. Past it, `similar` falls
/// back to a coarser (still exact) diff, so two pathological 1 MiB files answer in bounded
/// time, well inside the host's per-call CPU bound.
pub const DIFF_DEADLINE: Duration = Duration::from_millis(500);
