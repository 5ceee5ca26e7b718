//! Snapshots of a live store, and restoring one in place of a store.
//!
//! A snapshot is `VACUUM INTO` a new file: one read transaction, so it is consistent while
//! servers keep writing and never makes them wait (the backup API would restart each time a
//! writer changed the store, and could run for ever under a steady stream of writes).
//!
//! Restoring must not pull the file from under a running server. Every process that opens a
//! store holds a shared lock on `<store>.lock` for as long as it has it open; `restore` takes
//! that lock exclusively, without waiting, and refuses if it cannot. It then copies the
//! snapshot beside the store, moves the old store (and its WAL) aside and renames the copy
//! into place: re-running after an interruption at any step finishes the job.

use super::map_err;
use crate::storage::StoreError;
use scratchpad_store::pages;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// The file beside a store that every process using it holds a shared lock on.
fn lock_path(db: &Path) -> PathBuf {
    sibling(db, ".lock")
}

fn sibling(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_owned();
    name.push(suffix);
    db.with_file_name(name)
}

/// A lock on a store: shared while serving, exclusive while restoring.
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

/// How a lock on a store could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process has the store open.
    #[error(
        "the store {0} is in use by another process (a running scratchpad-mcp: quit the MCP client that started it, or stop the server); nothing was changed"
    )]
    InUse(String),
    /// The lock file could not be opened.
    #[error("cannot open the lock file {path}: {reason}")]
    Io {
        /// The lock file.
        path: String,
        /// Why.
        reason: String,
    },
}

impl StoreLock {
    /// A shared lock, waiting for a restore in progress to finish. `None` where the lock file
    /// cannot be created (a read-only folder, where nothing can be restored anyway).
    pub fn shared(db: &Path) -> Option<Self> {
        let file = open_lock(db).ok()?;
        file.lock_shared().ok()?;
        Some(Self { _file: file })
    }

    /// An exclusive lock, refused at once if any other process holds the store.
    pub fn exclusive(db: &Path) -> Result<Self, LockError> {
        let file = open_lock(db).map_err(|e| LockError::Io {
            path: lock_path(db).display().to_string(),
            reason: e.to_string(),
        })?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => Err(LockError::InUse(db.display().to_string())),
            Err(TryLockError::Error(e)) => Err(LockError::Io {
                path: lock_path(db).display().to_string(),
                reason: e.to_string(),
            }),
        }
    }
}

fn open_lock(db: &Path) -> std::io::Result<File> {
    crate::private::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_path(db))
}

/// Copies the store at `db` into the new file `out`, consistently, while others write.
pub fn vacuum_into(db: &Path, out: &Path) -> Result<(), StoreError> {
    let conn = super::check::open_read_only(db)?;
    let target = out
        .to_str()
        .ok_or_else(|| StoreError::Refused(format!("{} is not a UTF-8 path", out.display())))?;
    conn.execute("VACUUM INTO ?1", [target]).map_err(map_err)?;
    // SQLite may write pages of the copy before the page 1 that says they have checksums.
    pages::stamp_file(out).map_err(|e| StoreError::Database(e.to_string()))?;
    crate::private::restrict(out).map_err(|e| StoreError::Database(e.to_string()))?;
    File::open(out)
        .and_then(|f| f.sync_all())
        .map_err(|e| StoreError::Database(e.to_string()))
}

/// The current time from SQLite's clock, as the store writes timestamps.
pub fn now() -> String {
    rusqlite::Connection::open_in_memory()
        .and_then(|c| c.query_row(&format!("SELECT {}", super::NOW), [], |r| r.get(0)))
        .unwrap_or_default()
}

/// Puts the verified snapshot file `snapshot` in place of the store at `db`, keeping the old
/// store (with its WAL and shared-memory files) aside under names ending in `aside_suffix`.
/// The caller holds `_lock`, the exclusive lock. Returns the path the old store was moved to.
pub fn replace_store(
    _lock: &StoreLock,
    snapshot: &Path,
    db: &Path,
    aside_suffix: &str,
) -> std::io::Result<Option<PathBuf>> {
    let incoming = sibling(db, ".restoring");
    std::fs::copy(snapshot, &incoming)?;
    crate::private::restrict(&incoming)?;
    File::open(&incoming)?.sync_all()?;
    let mut aside = None;
    if db.exists() {
        // No other process has the store open (the caller holds the exclusive lock): fold
        // its WAL into the file, so the store kept aside is whole in one file.
        pages::open(db, rusqlite::OpenFlags::default(), None)
            .and_then(|c| Ok(c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?))
            .map_err(std::io::Error::other)?;
        let moved = sibling(db, aside_suffix);
        for suffix in ["-wal", "-shm"] {
            let file = sibling(db, suffix);
            if file.exists() {
                std::fs::rename(&file, sibling(&moved, suffix))?;
            }
        }
        std::fs::rename(db, &moved)?;
        aside = Some(moved);
    }
    std::fs::rename(&incoming, db)?;
    // The search index was made from the store that went: the next search makes it again.
    scratchpad_store::index::remove(db)?;
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(aside)
}
