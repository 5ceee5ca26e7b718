//! The store crate's errors as the host's: what only the operator may read goes to the log.

use super::BUSY_TIMEOUT;
use crate::storage::StoreError;
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
