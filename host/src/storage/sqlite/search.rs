//! The search index's file beside the store (see [`scratchpad_store::index`]): opened on
//! the first search, its connections pooled like the store's.
//!
//! The index is a cache of the store, so this file's durability is `synchronous = NORMAL`
//! (WAL: safe from damage; a crash may lose the last catch-up, which the next search
//! redoes).

use super::{BUSY_TIMEOUT, POOL_SIZE, StoreError, locked};
use rusqlite::Connection;
use scratchpad_store::index;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The index file of one store, and its idle connections.
pub struct IndexFile {
    /// The store the index belongs to; the index file is named after it.
    store: PathBuf,
    /// Open connections on the index file, shared by every search.
    pool: Mutex<Vec<Connection>>,
}

impl IndexFile {
    /// The index of the store at `store` (nothing is opened yet).
    pub fn of(store: &Path) -> Self {
        Self {
            store: store.to_owned(),
            pool: Mutex::default(),
        }
    }

    /// Runs `work` on a connection to the index, outside any transaction of its own.
    pub fn with<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let pooled = locked(&self.pool).pop();
        let conn = match pooled {
            Some(conn) => conn,
            None => index::open(&self.store, connect)?,
        };
        let result = work(&conn);
        let mut pool = locked(&self.pool);
        if pool.len() < POOL_SIZE && conn.is_autocommit() {
            pool.push(conn);
        }
        result
    }
}

/// A connection to the index file at `path`, created private first (its WAL and
/// shared-memory files take its mode).
fn connect(path: &Path) -> Result<Connection, scratchpad_store::Error> {
    crate::private::options()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| scratchpad_store::Error::Database {
            words: "the search index's file cannot be created",
            detail: e.to_string(),
        })?;
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")?;
    scratchpad_store::keep_statements(&conn)?;
    Ok(conn)
}
