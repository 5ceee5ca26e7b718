//! Every limit the tools enforce and every number their answers are shaped by, one constant
//! each, with why it has that value.
//!
//! These are the numbers of SPEC.md. They live here only: the host reads them back through
//! `get_usage_stats` rather than keeping copies. An embedder may set its own quotas and
//! size limits per agent (the `limits` storage import); [`quotas`] applies them over these
//! defaults.

use crate::{LimitOverrides, Quotas};
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

/// Deepest a JSON log entry may nest, arrays and objects one inside another: within what
/// every JSON reader on its way takes. serde_json, which reads each MCP message and each
/// answer, stops at 128 levels, and an entry sits three levels down in both (a request's
/// `params.arguments`, an answer's `entries[i]`); a round number well under that.
pub const MAX_LOG_ENTRY_DEPTH: usize = 100;

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

/// Largest answer, in estimated tokens: under the 25,000-token cap some clients put on a
/// tool result, with room for their own framing.
pub const MAX_RESPONSE_TOKENS: u64 = 20_000;

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

// What one call may ask for, and how much of an answer each part takes.

/// Hits in one `search` answer unless the caller asks for fewer or more.
pub const DEFAULT_HITS: u64 = 10;

/// Most hits one `search` answer may ask for.
pub const MAX_HITS: u64 = 50;

/// Most hits a search may skip: past this, narrow the query instead.
pub const MAX_OFFSET: u64 = 10_000;

/// Most words a `search` query may hold.
pub const MAX_TERMS: usize = 16;

/// Lines a `search` hit shows of one file.
pub const LINES_PER_HIT: usize = 3;

/// Characters a `search` hit shows of one line or log entry.
pub const SNIPPET_CHARS: usize = 200;

/// Most paths one `read_files` call may name.
pub const MAX_PATHS: usize = 100;

/// A file's bytes in a `read_files` answer besides its content: path, version, punctuation.
pub const FILE_FRAME_BYTES: u64 = 48;

/// Most days `forget_log`'s `max_age_days` may say: a hundred years.
pub const MAX_AGE_DAYS: u64 = 36_500;

/// A log entry's id, time and punctuation in a `read_log` answer.
pub const ENTRY_FRAME_BYTES: u64 = 64;

/// The longest part of a rejected value an error message quotes.
pub const QUOTED_CHARS: usize = 80;

/// Bytes an answer's fields and punctuation take besides its content: path, numbers, names
/// (see [`tokens`]).
pub const ENVELOPE_BYTES: u64 = 512;

/// Bytes of an answer's JSON counted as one token: the usual figure for English and code.
pub const BYTES_PER_TOKEN: u64 = 4;

/// Bytes one byte of a call's content may take in its MCP message: six, as `\u0001`, the
/// longest JSON escape (a client that escapes all but ASCII writes a 2-byte character as 6).
pub const ESCAPED_BYTES_PER_BYTE: u64 = 6;

/// Room in an MCP message for what is not its content: the method, the agent, the path.
pub const MESSAGE_FRAME_BYTES: u64 = 64 * 1024;

/// The fixed numbers the tools' documentation quotes (the WIT's `{NAME}` in a doc comment),
/// so `tools/list` says what this build enforces. Limits an embedder or operator may change
/// are not here: the docs say where to read them (`get_usage_stats`) instead.
pub const QUOTED_IN_DOCS: [(&str, u64); 7] = [
    ("DEFAULT_HITS", DEFAULT_HITS),
    ("MAX_LOG_ENTRY_DEPTH", MAX_LOG_ENTRY_DEPTH as u64),
    ("MAX_HITS", MAX_HITS),
    ("MAX_PATHS", MAX_PATHS as u64),
    ("SNIPPET_CHARS", SNIPPET_CHARS as u64),
    ("LINES_PER_HIT", LINES_PER_HIT as u64),
    ("SUMMARY_THRESHOLD_CHARS", SUMMARY_THRESHOLD_CHARS as u64),
];

/// An embedder that sets no limits of its own.
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

/// A limit an embedder may set: its name (the WIT field's, in snake_case), its default, and
/// the range it may take. Outside the range a value is brought to the nearest bound, so a
/// careless embedder cannot switch a rule off; configuration front ends call [`Limit::check`]
/// to refuse such values up front.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    /// The name of the setting.
    pub name: &'static str,
    /// Its value when the embedder sets none.
    pub default: u64,
    /// The smallest value that keeps the tools usable.
    pub min: u64,
    /// The largest value the sandbox can serve: a call holds a write's content, its previous
    /// version and their diff in 256 MiB of guest memory and 5 s of guest CPU.
    pub max: u64,
}

impl Limit {
    /// The value in force: the embedder's, within range, or the default.
    pub fn apply(&self, value: Option<u64>) -> u64 {
        value.map_or(self.default, |v| v.clamp(self.min, self.max))
    }

    /// Whether `value` is in range; the error names the setting, the value and the range.
    pub fn check(&self, value: u64) -> Result<(), String> {
        if (self.min..=self.max).contains(&value) {
            Ok(())
        } else {
            Err(format!(
                "{} = {value} is out of range: it must be {} to {}",
                self.name, self.min, self.max
            ))
        }
    }
}

const MIB: u64 = 1024 * 1024;

/// Files one agent may hold.
pub const FILES: Limit = Limit {
    name: "max_files",
    default: MAX_FILES,
    min: 1,
    max: 1_000_000,
};
/// Log entries one agent may hold.
pub const LOG_ENTRIES: Limit = Limit {
    name: "max_log_entries",
    default: MAX_LOG_ENTRIES,
    min: 1,
    max: 100_000_000,
};
/// Bytes one agent may store.
pub const TOTAL_BYTES: Limit = Limit {
    name: "max_total_bytes",
    default: MAX_TOTAL_BYTES,
    min: 1,
    max: 1024 * 1024 * MIB,
};
/// Largest write.
pub const WRITE_BYTES: Limit = Limit {
    name: "max_write_bytes",
    default: MAX_WRITE_BYTES,
    min: 1,
    max: 16 * MIB,
};
/// Largest log entry.
pub const LOG_ENTRY_BYTES: Limit = Limit {
    name: "max_log_entry_bytes",
    default: MAX_LOG_ENTRY_BYTES,
    min: 1,
    max: MIB,
};
/// Versions kept per file.
pub const KEPT: Limit = Limit {
    name: "versions_kept",
    default: VERSIONS_KEPT as u64,
    min: 1,
    max: 1_000,
};
/// Entries in a page of `read_log`.
pub const PAGE: Limit = Limit {
    name: "log_page_size",
    default: LOG_PAGE_SIZE as u64,
    min: 1,
    max: 1_000,
};

/// The largest answer.
pub const RESPONSE_TOKENS: Limit = Limit {
    name: "max_response_tokens",
    default: MAX_RESPONSE_TOKENS,
    min: 1_000,
    max: 200_000,
};

/// Every limit an embedder may set, in the WIT's order.
pub const CONFIGURABLE: [Limit; 8] = [
    FILES,
    LOG_ENTRIES,
    TOTAL_BYTES,
    WRITE_BYTES,
    LOG_ENTRY_BYTES,
    KEPT,
    PAGE,
    RESPONSE_TOKENS,
];

/// The estimated tokens of an answer whose payload encodes to `payload_bytes` of JSON.
pub fn tokens(payload_bytes: u64) -> u64 {
    (payload_bytes + ENVELOPE_BYTES).div_ceil(BYTES_PER_TOKEN)
}

/// The most payload bytes an answer of `max_tokens` can carry.
pub fn payload_bytes(max_tokens: u64) -> u64 {
    (max_tokens * BYTES_PER_TOKEN).saturating_sub(ENVELOPE_BYTES)
}

/// The quotas and size limits of an agent: the embedder's where it sets them (within
/// range), else the defaults above. A log entry may not be larger than one answer carries,
/// so that every entry can be read back (a page holds at least one entry).
pub fn quotas(o: &LimitOverrides) -> Quotas {
    let max_response_tokens = RESPONSE_TOKENS.apply(o.max_response_tokens);
    let entry_fits = payload_bytes(max_response_tokens);
    // Both u32 limits have a `max` of 1,000, so the casts back cannot truncate.
    Quotas {
        max_files: FILES.apply(o.max_files),
        max_log_entries: LOG_ENTRIES.apply(o.max_log_entries),
        max_total_bytes: TOTAL_BYTES.apply(o.max_total_bytes),
        max_write_bytes: WRITE_BYTES.apply(o.max_write_bytes),
        max_log_entry_bytes: LOG_ENTRY_BYTES.apply(o.max_log_entry_bytes).min(entry_fits),
        versions_kept: KEPT.apply(o.versions_kept.map(u64::from)) as u32,
        log_page_size: PAGE.apply(o.log_page_size.map(u64::from)) as u32,
        max_response_tokens,
    }
}

/// The longest MCP message a tool call within `q` needs: its largest content (a write, or a
/// log entry) with every byte escaped, and the frame around it. The server's transports read
/// any message up to this size and answer a longer one with this rule, so every call the
/// limits allow arrives, and the tool checks its content against the limits themselves.
pub fn max_message_bytes(q: &Quotas) -> u64 {
    q.max_write_bytes.max(q.max_log_entry_bytes) * ESCAPED_BYTES_PER_BYTE + MESSAGE_FRAME_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_in_range_and_out_of_range_values_are_brought_in() {
        for limit in CONFIGURABLE {
            assert_eq!(limit.check(limit.default), Ok(()), "{}", limit.name);
            assert_eq!(limit.apply(Some(0)), limit.min);
            assert_eq!(limit.apply(Some(u64::MAX)), limit.max);
        }
        assert_eq!(
            KEPT.check(0),
            Err("versions_kept = 0 is out of range: it must be 1 to 1000".into())
        );
    }

    #[test]
    fn a_message_has_room_for_the_largest_content_escaped() {
        let mib = 1024 * 1024;
        assert_eq!(
            max_message_bytes(&quotas(&NO_OVERRIDES)),
            6 * mib + 64 * 1024
        );
        let most = LimitOverrides {
            max_write_bytes: Some(u64::MAX),
            ..NO_OVERRIDES
        };
        assert_eq!(max_message_bytes(&quotas(&most)), 96 * mib + 64 * 1024);
        // A log entry larger than every write still fits.
        let entries = LimitOverrides {
            max_write_bytes: Some(1),
            ..NO_OVERRIDES
        };
        let q = quotas(&entries);
        assert_eq!(max_message_bytes(&q), 6 * q.max_log_entry_bytes + 64 * 1024);
    }
}
