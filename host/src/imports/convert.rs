//! The storage contract speaks the guest crate's Rust types; the imports speak wasmtime's,
//! generated from the same WIT. These move one into the other field by field and decide
//! nothing.

use crate::bindings::scratchpad::mcp::storage as wit;
use crate::bindings::scratchpad::mcp::types as wit_types;
use scratchpad_guest::bindings::scratchpad::mcp::storage as guest;

pub fn file_state(s: guest::FileState) -> wit::FileState {
    wit::FileState {
        last_version: s.last_version,
        kept: s
            .kept
            .into_iter()
            .map(|v| wit::VersionInfo {
                version: v.version,
                bytes: v.bytes,
                sha256: v.sha256,
                created_at: v.created_at,
            })
            .collect(),
    }
}

pub fn file_meta(f: scratchpad_guest::FileMeta) -> wit_types::FileMeta {
    wit_types::FileMeta {
        path: f.path,
        version: f.version,
        bytes: f.bytes,
        updated_at: f.updated_at,
    }
}

pub fn log_entry(e: scratchpad_guest::LogEntry) -> wit_types::LogEntry {
    wit_types::LogEntry {
        id: e.id,
        entry: match e.entry {
            scratchpad_guest::LogValue::Text(t) => wit_types::LogValue::Text(t),
            scratchpad_guest::LogValue::Json(j) => wit_types::LogValue::Json(j),
        },
        created_at: e.created_at,
    }
}

pub fn log_value(v: wit_types::LogValue) -> scratchpad_guest::LogValue {
    match v {
        wit_types::LogValue::Text(t) => scratchpad_guest::LogValue::Text(t),
        wit_types::LogValue::Json(j) => scratchpad_guest::LogValue::Json(j),
    }
}

pub fn log_state(s: guest::LogState) -> wit::LogState {
    wit::LogState {
        last_id: s.last_id,
        entries: s.entries,
        retention: wit::Retention {
            keep_last: s.retention.keep_last,
            max_age_seconds: s.retention.max_age_seconds,
        },
    }
}

pub fn retention(r: wit::Retention) -> guest::Retention {
    guest::Retention {
        keep_last: r.keep_last,
        max_age_seconds: r.max_age_seconds,
    }
}

pub fn search_match(m: guest::SearchMatch) -> wit::SearchMatch {
    wit::SearchMatch {
        path: m.path,
        at: match m.at {
            guest::MatchRef::File(v) => wit::MatchRef::File(v),
            guest::MatchRef::LogEntry(id) => wit::MatchRef::LogEntry(id),
        },
    }
}

pub fn usage(u: scratchpad_guest::Usage) -> wit_types::Usage {
    wit_types::Usage {
        total_bytes: u.total_bytes,
        file_count: u.file_count,
        log_entry_count: u.log_entry_count,
        total_operations: u.total_operations,
    }
}

pub fn limits(l: scratchpad_guest::LimitOverrides) -> wit_types::LimitOverrides {
    wit_types::LimitOverrides {
        max_files: l.max_files,
        max_log_entries: l.max_log_entries,
        max_total_bytes: l.max_total_bytes,
        max_write_bytes: l.max_write_bytes,
        max_log_entry_bytes: l.max_log_entry_bytes,
        versions_kept: l.versions_kept,
        log_page_size: l.log_page_size,
        max_response_tokens: l.max_response_tokens,
    }
}

pub fn storage_error(e: scratchpad_guest::StorageError) -> wit_types::StorageError {
    use scratchpad_guest::StorageError as E;
    match e {
        E::Busy => wit_types::StorageError::Busy,
        E::Full => wit_types::StorageError::Full,
        E::ReadOnly => wit_types::StorageError::ReadOnly,
        E::Refused(m) => wit_types::StorageError::Refused(m),
        E::Other(m) => wit_types::StorageError::Other(m),
    }
}
