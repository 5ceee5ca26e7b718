//! The store crate's errors as the host's: what only the operator may read (SQLite's own
//! words) goes to the log. A damaged store is logged where a caller is told less
//! ([`crate::storage`]'s `From<StoreError>`); a command run by the operator prints it.

use super::BUSY_TIMEOUT;
use crate::storage::StoreError;
use scratchpad_store::Error;

impl From<Error> for StoreError {
    fn from(e: Error) -> Self {
        match e {
            Error::Busy => StoreError::Busy(BUSY_TIMEOUT.as_secs()),
            Error::Full => StoreError::Full,
            Error::ReadOnly => StoreError::ReadOnly,
            Error::Damaged => StoreError::Damaged,
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
