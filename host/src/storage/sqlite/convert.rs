//! The store crate speaks the guest's Rust types (it is compiled into the self-contained
//! component too); the host speaks wasmtime's, generated from the same WIT. These move one
//! into the other field by field, and turn the store's errors into the host's.

use super::BUSY_TIMEOUT;
use crate::bindings::{
    FileMeta, FileState, LogEntry, LogState, LogValue, MatchRef, Retention, SearchMatch, Usage,
    VersionInfo,
};
use crate::storage::StoreError;
use scratchpad_guest::bindings::scratchpad::mcp::storage as guest;
use scratchpad_store::Error;

impl From<Error> for StoreError {
    fn from(e: Error) -> Self {
        match e {
            Error::Busy => StoreError::Busy(BUSY_TIMEOUT.as_secs()),
            Error::Full => StoreError::Full,
            Error::ReadOnly => StoreError::ReadOnly,
            Error::Damaged => {
                tracing::error!("database damaged");
                StoreError::Damaged
            }
            Error::OutOfRange(_) => StoreError::Refused(e.to_string()),
            Error::TooNew { .. } => StoreError::Database(e.to_string()),
            Error::Database { words, detail } => {
                tracing::error!(error = %detail, "database error");
                StoreError::Database(words.into())
            }
        }
    }
}

/// SQLite's errors as the store's: by code, never by SQL text.
pub fn map_err(e: rusqlite::Error) -> StoreError {
    Error::from(e).into()
}

pub fn file_state(s: guest::FileState) -> FileState {
    FileState {
        last_version: s.last_version,
        kept: s
            .kept
            .into_iter()
            .map(|v| VersionInfo {
                version: v.version,
                bytes: v.bytes,
                created_at: v.created_at,
            })
            .collect(),
    }
}

pub fn file_meta(f: scratchpad_guest::FileMeta) -> FileMeta {
    FileMeta {
        path: f.path,
        version: f.version,
        bytes: f.bytes,
        updated_at: f.updated_at,
    }
}

pub fn log_entry(e: scratchpad_guest::LogEntry) -> LogEntry {
    LogEntry {
        id: e.id,
        entry: match e.entry {
            scratchpad_guest::LogValue::Text(t) => LogValue::Text(t),
            scratchpad_guest::LogValue::Json(j) => LogValue::Json(j),
        },
        created_at: e.created_at,
    }
}

pub fn log_state(s: guest::LogState) -> LogState {
    LogState {
        last_id: s.last_id,
        entries: s.entries,
        retention: Retention {
            keep_last: s.retention.keep_last,
            max_age_seconds: s.retention.max_age_seconds,
        },
    }
}

pub fn to_guest_retention(r: Retention) -> guest::Retention {
    guest::Retention {
        keep_last: r.keep_last,
        max_age_seconds: r.max_age_seconds,
    }
}

pub fn search_match(m: guest::SearchMatch) -> SearchMatch {
    SearchMatch {
        path: m.path,
        at: match m.at {
            guest::MatchRef::File(v) => MatchRef::File(v),
            guest::MatchRef::LogEntry(id) => MatchRef::LogEntry(id),
        },
    }
}

pub fn usage(u: scratchpad_guest::Usage) -> Usage {
    Usage {
        total_bytes: u.total_bytes,
        file_count: u.file_count,
        log_entry_count: u.log_entry_count,
        total_operations: u.total_operations,
    }
}
