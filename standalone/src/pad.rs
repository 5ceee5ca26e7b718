//! One open store in one folder, and the transaction every tool call runs in.
//!
//! Why it is shaped this way:
//! - `journal_mode = DELETE` with `locking_mode = EXCLUSIVE`: WAL needs shared memory that
//!   WASI does not have, except in exclusive locking mode; a rollback journal needs neither
//!   and survives a kill at any point (the next open rolls back a half-written call). The
//!   exclusive mode also lets this component open a store the server left in WAL mode, which
//!   it converts; the server converts it back when it opens it.
//! - SQLite's `unix-none` VFS: WASI has no `fcntl` locks, and SQLite's WASI build falls back
//!   to a lock folder that a killed process leaves behind, which would refuse the store for
//!   good; the lease is the lock instead.
//! - `synchronous = FULL`: a call is on disk when it answers, as on the server.
//! - Each call is one `BEGIN IMMEDIATE` … `COMMIT`, committed only when the tool answered
//!   without an error and the lease (see [`crate::lease`]) is still this process's. An error
//!   rolls it back. A trap leaves it uncommitted: the embedder drops the instance and makes a
//!   new one, whose first call rolls the journal back.

use crate::lease::{Folder, LEASE, Lease, LeaseError};
use scratchpad_guest::limits::NO_OVERRIDES;
use scratchpad_guest::{LimitOverrides, StorageError, ToolError};
use scratchpad_store::rows::Pending;
use scratchpad_store::rusqlite::{Connection, OpenFlags};
use scratchpad_store::schema::migrate;
use scratchpad_store::storage::Tx;
use scratchpad_store::{control, index, pages};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

/// The store's file in the folder.
pub const DB_FILE: &str = "scratchpad.db";

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// Another process holds the folder.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// SQLite could not open or upgrade the file.
    #[error("the store cannot be opened: {0}")]
    Store(#[from] scratchpad_store::Error),
}

/// An open store.
pub struct Pad<F: Folder> {
    conn: Connection,
    /// The search index, a file of its own beside the store (`scratchpad.db-search`).
    index: Connection,
    lease: Lease<F>,
    limits: LimitOverrides,
    /// Read calls not yet written to the counters, per agent: written with the next call
    /// that writes, or on close, so a read costs no journal and no fsync.
    uncounted: RefCell<BTreeMap<String, u64>>,
}

impl<F: Folder> Pad<F> {
    /// Opens (creating if needed) the store in `folder` for the process `token`, waiting out
    /// another process's lease for at most [`LEASE`]. `files` reaches the same folder for
    /// the lease.
    pub fn open(folder: &Path, files: F, token: u64) -> Result<Self, OpenError> {
        let lease = Lease::take(files, token, LEASE)?;
        // SQLite's WASI build locks with a lock folder that a killed process leaves behind
        // for good; the lease does the locking instead.
        let connect = |path: &Path, synchronous: &str, checksummed: bool| {
            let conn = if checksummed {
                pages::open(path, OpenFlags::default(), Some("unix-none"))?
            } else {
                Connection::open_with_flags_and_vfs(path, OpenFlags::default(), "unix-none")?
            };
            // Exclusive first: a store the server left in WAL mode is read without shared
            // memory, which WASI lacks, and then taken out of WAL mode.
            conn.execute_batch(&format!(
                "PRAGMA locking_mode = EXCLUSIVE;
                 PRAGMA journal_mode = DELETE;
                 PRAGMA synchronous = {synchronous};"
            ))?;
            if checksummed {
                pages::enable(&conn)?;
            }
            scratchpad_store::keep_statements(&conn)?;
            Ok::<_, scratchpad_store::Error>(conn)
        };
        let store = folder.join(DB_FILE);
        let open = || -> Result<(Connection, Connection), scratchpad_store::Error> {
            // The store's pages carry checksums ([`pages`]); the index is only a cache.
            let conn = connect(&store, "FULL", true)?;
            migrate(&conn)?;
            // The index is a cache of the store: a crash may lose its last catch-up only.
            let index = index::open(&store, |path| connect(path, "NORMAL", false))?;
            Ok((conn, index))
        };
        match open() {
            Ok((conn, index)) => Ok(Self {
                conn,
                index,
                lease,
                limits: NO_OVERRIDES,
                uncounted: RefCell::default(),
            }),
            Err(e) => {
                lease.release();
                Err(e.into())
            }
        }
    }

    /// Sets every agent's limits for the calls after this one.
    pub fn set_limits(&mut self, limits: LimitOverrides) {
        self.limits = limits;
    }

    /// Runs one tool call for `agent` in its own transaction: committed, and counted as one
    /// operation, only when `run` succeeds and the lease is still held. A call that wrote
    /// nothing is counted in memory, and written with the next call that writes.
    pub fn call<R>(
        &self,
        agent: &str,
        run: impl FnOnce(&Tx<'_>) -> Result<R, ToolError>,
    ) -> Result<R, ToolError> {
        self.lease.renew().map_err(lease_failure)?;
        control(&self.conn, "BEGIN").map_err(|e| storage_failure(e.into()))?;
        let before = self.conn.total_changes();
        let answer = {
            let uncounted = self.uncounted.borrow();
            let tx = Tx::new(&self.conn, &self.index, self.limits, &uncounted);
            run(&tx).and_then(|answer| {
                let wrote = self.conn.total_changes() != before;
                if wrote {
                    self.count_owed(tx.pending(), Some(agent))
                        .map_err(storage_failure)?;
                    self.lease.renew().map_err(lease_failure)?;
                }
                control(&self.conn, "COMMIT").map_err(|e| storage_failure(e.into()))?;
                Ok((answer, wrote))
            })
        };
        let answer = answer.map(|(answer, wrote)| {
            let mut uncounted = self.uncounted.borrow_mut();
            if wrote {
                uncounted.clear();
            } else {
                *uncounted.entry(agent.to_owned()).or_default() += 1;
            }
            answer
        });
        if answer.is_err() && !self.conn.is_autocommit() {
            // Nothing of a failed call stays; if even the rollback fails, the journal
            // undoes the call when the store is next opened.
            let _ = control(&self.conn, "ROLLBACK");
        }
        answer
    }

    /// Writes what a call changed of the counters (`pending`) with every operation owed by
    /// earlier reads, and this call's (of `agent`) if any: one statement an agent.
    fn count_owed(
        &self,
        pending: &Pending,
        agent: Option<&str>,
    ) -> Result<(), scratchpad_store::Error> {
        let uncounted = self.uncounted.borrow();
        let owed = uncounted.iter().map(|(owed, n)| (owed.as_str(), *n));
        pending.write_with_operations(&self.conn, owed, agent)
    }

    /// Whether this process still holds the store (another may have taken it over).
    pub fn held(&self) -> bool {
        self.lease.renew().is_ok()
    }

    /// Writes the operations owed by read calls, closes the store and frees the folder for
    /// another process at once.
    pub fn close(self) {
        if !self.uncounted.borrow().is_empty() && self.lease.renew().is_ok() {
            let written = control(&self.conn, "BEGIN")
                .map_err(scratchpad_store::Error::from)
                .and_then(|()| self.count_owed(&Pending::default(), None))
                .and_then(|()| Ok(control(&self.conn, "COMMIT")?));
            if written.is_err() && !self.conn.is_autocommit() {
                let _ = control(&self.conn, "ROLLBACK");
            }
        }
        drop(self.conn);
        drop(self.index);
        self.lease.release();
    }
}

fn storage_failure(e: scratchpad_store::Error) -> ToolError {
    ToolError::Storage(e.into())
}

fn lease_failure(e: LeaseError) -> ToolError {
    ToolError::Storage(StorageError::Other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::LEASE_FILE;
    use scratchpad_guest::api::{ReadBody, ReadFileRequest, WriteFileRequest};
    use scratchpad_guest::names::AgentId;
    use scratchpad_guest::{Storage, tools};
    use std::path::PathBuf;

    fn write(content: &str) -> WriteFileRequest {
        WriteFileRequest {
            agent_id: "a".into(),
            path: "notes.md".into(),
            content: content.into(),
            expected_version: None,
        }
    }

    fn read() -> ReadFileRequest {
        ReadFileRequest {
            agent_id: "a".into(),
            path: "notes.md".into(),
            since_version: None,
            full_diff: false,
            offset: None,
            limit: None,
            column: None,
        }
    }

    type Pad = super::Pad<PathBuf>;

    fn open(dir: &Path, token: u64) -> Pad {
        Pad::open(dir, dir.to_path_buf(), token).unwrap()
    }

    fn content(pad: &Pad) -> String {
        match pad.call("a", |s| tools::read_file(s, read())).unwrap().body {
            ReadBody::Content(whole) => whole.content,
            ReadBody::Diff(d) => panic!("asked for content, got {d:?}"),
        }
    }

    #[test]
    fn a_call_is_committed_counted_and_still_there_after_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let pad = open(dir.path(), 1);
        let written = pad
            .call("a", |s| tools::write_file(s, write("one\n")))
            .unwrap();
        assert_eq!(written.version, 1);
        pad.close();
        let pad = open(dir.path(), 2);
        assert_eq!(content(&pad), "one\n");
        let usage = pad
            .call("a", |s| tools::get_usage_stats(s, "a"))
            .unwrap()
            .usage;
        assert_eq!(
            usage.total_operations, 2,
            "the write and the read: a call counts once it commits"
        );
        assert_eq!((usage.file_count, usage.total_bytes), (1, 4));
    }

    #[test]
    fn reads_write_nothing_and_are_counted_with_the_next_write_or_on_close() {
        let dir = tempfile::tempdir().unwrap();
        let pad = open(dir.path(), 1);
        pad.call("a", |s| tools::write_file(s, write("one\n")))
            .unwrap();
        let modified = || {
            ["scratchpad.db", "scratchpad.db-journal"].map(|f| {
                std::fs::metadata(dir.path().join(f))
                    .and_then(|m| m.modified())
                    .ok()
            })
        };
        let before = modified();
        content(&pad);
        content(&pad);
        assert_eq!(
            modified(),
            before,
            "a read writes neither the store nor its journal"
        );
        let usage = |pad: &Pad| {
            pad.call("a", |s| tools::get_usage_stats(s, "a"))
                .unwrap()
                .usage
                .total_operations
        };
        assert_eq!(
            usage(&pad),
            3,
            "the write and two reads, one of them in memory"
        );
        pad.close();
        let pad = open(dir.path(), 2);
        assert_eq!(usage(&pad), 4, "close wrote the reads' operations");
    }

    #[test]
    fn a_failed_call_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let pad = open(dir.path(), 1);
        pad.call("a", |s| tools::write_file(s, write("kept\n")))
            .unwrap();
        let failed = pad.call("a", |s| {
            tools::write_file(s, write("lost\n"))?;
            Err::<(), _>(ToolError::InvalidArgument("fails after writing".into()))
        });
        assert_eq!(
            failed,
            Err(ToolError::InvalidArgument("fails after writing".into()))
        );
        assert_eq!(content(&pad), "kept\n");
        let usage = pad
            .call("a", |s| {
                let agent = AgentId::parse("a")?;
                s.get_usage(&agent).map_err(ToolError::Storage)
            })
            .unwrap();
        assert_eq!(usage.total_bytes, 5, "only the kept version counts");
    }

    #[test]
    fn a_call_after_another_process_took_the_store_over_fails_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let pad = open(dir.path(), 1);
        pad.call("a", |s| tools::write_file(s, write("mine\n")))
            .unwrap();
        // Another process found the lease lapsed and took it.
        std::fs::write(dir.path().join(LEASE_FILE), format!("2 {}\n", u64::MAX)).unwrap();
        let refused = pad.call("a", |s| tools::write_file(s, write("late\n")));
        let Err(ToolError::Storage(StorageError::Other(message))) = refused else {
            panic!("expected a storage error, got {refused:?}");
        };
        assert!(
            message.contains("another process took this store over"),
            "{message}"
        );
        assert!(!pad.held());
        drop(pad);
        std::fs::remove_file(dir.path().join(LEASE_FILE)).unwrap();
        assert_eq!(content(&open(dir.path(), 3)), "mine\n");
    }
}
