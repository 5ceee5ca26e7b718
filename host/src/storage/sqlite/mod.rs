//! The embedded default backend: one SQLite file in WAL mode.
//!
//! Why it is shaped this way:
//! - A write call reads without the write lock and takes it (`BEGIN IMMEDIATE`) only before
//!   its first change, so its work (an edit's thousands of steps, the checks of a large
//!   write) never holds up another agent's writes. Under the lock it compares its agent's
//!   generation with the one it read: when another process changed the agent's rows
//!   meanwhile, nothing is written and the call runs again ([`Txn::conflicted`]). So two
//!   processes never both read a file's last version and both write the next one; a writer
//!   that waits for the lock does so for at most [`BUSY_TIMEOUT`] and then gets a "busy,
//!   retry" error, never a raw SQLite message.
//! - A write is on disk when its call answers, and concurrent writes share the sync that puts
//!   them there ([`flush`]: `synchronous = NORMAL`, then one sync of the WAL for every call
//!   that committed before it began; as durable as `FULL`, without the sync under the write
//!   lock). A read call writes nothing for its operation count: the count is kept in memory
//!   ([`super::uncounted`], as on PostgreSQL) and folded into this process's next write,
//!   written by a read when a hundred have gathered and the lock is free, or when the store
//!   is let go. Bookkeeping never fails a read, and reads never wait for a lock or an fsync.
//! - Summaries cost money and take seconds, so a read call never holds the write lock while
//!   the model thinks: `put-summary` in a read call is kept aside and stored in a short write
//!   transaction after the read, only if that version still exists.
//! - Usage counters live in `agents` and change in the same transaction as the rows they
//!   count; prefix matching compares `substr`, never `LIKE`, so `_` and `%` are literal.
//! - Connections are pooled: opening one costs a few file operations and pragmas per call.

mod backup;
mod check;
mod convert;
mod flush;
mod queue;
mod search;
mod transfer;

pub use backup::{LockError, StoreLock, now, replace_store, vacuum_into};
pub use check::{stats, verify};
pub use transfer::{ImportError, Line, Tally, read_header};

/// Writes one agent's data as JSON Lines (see [`Line`]) from one read transaction of the
/// store at `path`, which is opened read-only.
pub fn export(
    path: &Path,
    agent: &str,
    out: &mut dyn std::io::Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Tally, ImportError> {
    let mut conn = check::open_read_only(path)?;
    transfer::export(&mut conn, agent, out, progress)
}

use super::uncounted::Uncounted;
use super::{Backend, Mode, PendingSummary, StoreError, Txn, implement_storage, to_u64};
use convert::map_err;
use flush::Flush;
use queue::{Turn, WriteQueue};
use rusqlite::{Connection, OpenFlags, params};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{
    FileState, LogState, Retention, SearchMatch,
};
use scratchpad_guest::names::{AgentId, FilePath, Prefix};
use scratchpad_guest::ports::log_body;
use scratchpad_guest::{FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, Usage};
use scratchpad_store::rows::{self, Pending};
use scratchpad_store::schema::{SCHEMA_VERSION, migrate};
use scratchpad_store::{NOW, control, index, logs, pages};
use search::IndexFile;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long a writer waits for another process's write lock before answering "busy":
/// long enough to ride out a burst of writes from several clients, short enough that an
/// agent is told to retry before its client gives up on the call.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections kept open for reuse. Calls beyond this still run; their connections close.
const POOL_SIZE: usize = 8;

/// A SQLite store.
pub struct Sqlite {
    /// Where the store is, to open more connections.
    path: PathBuf,
    /// Open connections; shared with each call's transaction, which gives its own back.
    pool: Arc<Mutex<Vec<Connection>>>,
    /// The search index, in a file of its own so that no write waits for indexing.
    index: Arc<IndexFile>,
    /// The WAL's durable point, which every write call of the process moves on together.
    flush: Arc<Flush>,
    /// The order in which this process's write calls take the write lock.
    queue: Arc<WriteQueue>,
    /// Read calls' operations not yet written, shared with every transaction of the store.
    uncounted: Uncounted,
    /// Held while the store is open, so that `restore` knows it is in use.
    _lock: Option<StoreLock>,
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Sqlite {
    /// Opens (creating if needed) the store at `path`, and its folder.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |reason: String| StoreError::Open {
            path: path.display().to_string(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::private::create_dir_all(dir).map_err(|e| {
                open_error(format!("cannot create its folder {}: {e}", dir.display()))
            })?;
        }
        if path.is_dir() {
            return Err(open_error(A_FOLDER.into()));
        }
        check_writable(path).map_err(|e| open_error(e.to_string()))?;
        let store = Self {
            path: path.to_owned(),
            pool: Arc::default(),
            index: Arc::new(IndexFile::of(path)),
            flush: Arc::new(Flush::of(path)),
            queue: Arc::default(),
            uncounted: Uncounted::default(),
            _lock: StoreLock::shared(path),
        };
        let conn = store.connect().map_err(|e| open_error(e.to_string()))?;
        // Before anything is written: a new store checksums its pages from the first.
        if pages::enable(&conn).map_err(|e| open_error(StoreError::from(e).to_string()))? {
            tracing::info!("the store was rewritten with a checksum in every page");
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| open_error(e.to_string()))?;
        migrate(&conn).map_err(|e| open_error(StoreError::from(e).to_string()))?;
        give_back(&store.pool, conn);
        Ok(store)
    }

    fn connect(&self) -> Result<Connection, StoreError> {
        let conn = pages::open(&self.path, OpenFlags::default(), None)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(map_err)?;
        // Durability is the flush's: see [`flush`].
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(map_err)?;
        scratchpad_store::keep_statements(&conn)?;
        Ok(conn)
    }

    fn take(&self) -> Result<Connection, StoreError> {
        let pooled = locked(&self.pool).pop();
        pooled.map_or_else(|| self.connect(), Ok)
    }

    /// A call's transaction, holding the write lock from the start when `locked`.
    fn start(
        &self,
        mode: Mode,
        locked: bool,
        limits: LimitOverrides,
    ) -> Result<Box<dyn Txn>, StoreError> {
        Ok(Box::new(self.transaction(mode, locked, limits)?))
    }

    /// [`Sqlite::start`], as this backend's own transaction.
    fn transaction(
        &self,
        mode: Mode,
        locked: bool,
        limits: LimitOverrides,
    ) -> Result<SqliteTxn, StoreError> {
        let turn = if locked {
            Some(self.queue.wait()?)
        } else {
            None
        };
        let conn = self.take()?;
        let begin = if locked {
            "BEGIN IMMEDIATE"
        } else {
            "BEGIN DEFERRED"
        };
        control(&conn, begin).map_err(map_err)?;
        Ok(SqliteTxn {
            conn: Some(conn),
            mode,
            phase: RefCell::new(match turn {
                Some(turn) => Phase::Writing { _turn: turn },
                None => Phase::Reading,
            }),
            limits,
            pending_summaries: RefCell::default(),
            counters: Pending::default(),
            pool: Arc::clone(&self.pool),
            index: Arc::clone(&self.index),
            flush: Arc::clone(&self.flush),
            queue: Arc::clone(&self.queue),
            uncounted: self.uncounted.clone(),
        })
    }

    /// Reads the rest of an export of `agent`, after its header ([`read_header`]), in one
    /// write transaction; see [`transfer`](self) for the rules. Returns what it held.
    pub fn import(
        &self,
        agent: &str,
        input: &mut dyn std::io::BufRead,
        replace: bool,
        quotas: scratchpad_guest::Quotas,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Tally, ImportError> {
        let mut conn = self.take()?;
        let result = transfer::import(&mut conn, agent, input, replace, quotas, progress);
        give_back(&self.pool, conn);
        let tally = result?;
        // The agent's rows are of a new lineage: its next search indexes them afresh.
        durable(&self.flush)?;
        Ok(tally)
    }
}

/// Why a folder given for the store is refused: the store is a file in it.
const A_FOLDER: &str = "it is a folder, and the store is a file (such as scratchpad.db in it)";

/// A store whose file (or folder, for the journal) cannot be written is named as such,
/// rather than as whatever SQLite fails with first. A new store is created here, private.
fn check_writable(path: &Path) -> Result<(), StoreError> {
    use std::io::ErrorKind::{PermissionDenied, ReadOnlyFilesystem};
    let probe = crate::private::options()
        .append(true)
        .create(true)
        .open(path);
    match probe {
        Ok(_) => Ok(()),
        Err(e) if matches!(e.kind(), ReadOnlyFilesystem | PermissionDenied) => {
            Err(StoreError::ReadOnly)
        }
        Err(e) => Err(StoreError::Database(e.to_string())),
    }
}

/// Read calls' counts kept in memory reach the file when the store is let go (the server
/// stops): best effort, as for the reads themselves.
impl Drop for Sqlite {
    fn drop(&mut self) {
        if self.uncounted.is_empty() {
            return;
        }
        let written = self
            .transaction(Mode::Write, true, scratchpad_guest::limits::NO_OVERRIDES)
            .and_then(|txn| txn.count_and_commit(None));
        if let Err(e) = written {
            tracing::warn!(error = %e, "read counts kept in memory were not written");
        }
    }
}

/// Waits for `flush` to put everything committed so far on disk.
fn durable(flush: &Flush) -> Result<(), StoreError> {
    flush.durable().map_err(|e| {
        tracing::error!(error = %e, "the store's log could not be synced");
        StoreError::Unconfirmed(
            "the call was stored, but the disk did not confirm the write: it may not survive a crash",
        )
    })
}

/// Returns a connection to the pool, if it is idle and the pool has room.
fn give_back(pool: &Mutex<Vec<Connection>>, conn: Connection) {
    let mut pool = locked(pool);
    if pool.len() < POOL_SIZE && conn.is_autocommit() {
        pool.push(conn);
    }
}

impl Backend for Sqlite {
    fn begin(&self, mode: Mode, limits: LimitOverrides) -> Result<Box<dyn Txn>, StoreError> {
        // Every call starts as a read; a write call takes the lock before its first change.
        self.start(mode, false, limits)
    }

    fn begin_locked(&self, limits: LimitOverrides) -> Result<Box<dyn Txn>, StoreError> {
        self.start(Mode::Write, true, limits)
    }

    /// Every statement reaches files on this machine. A read syncs nothing: the counts it may
    /// write go only when the write lock is free at once (see `SqliteTxn::end_read`), and a
    /// search's catch-up of its index file is not synced either; a write waits for the write
    /// lock and its sync ([`Flush`]). The one tool that caches summaries waits on the model,
    /// so no transport runs it in place.
    fn calls_are_local(&self) -> bool {
        true
    }

    fn all_files(
        &self,
        agents: Option<&[String]>,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<(String, FileMeta)>, StoreError> {
        let conn = self.take()?;
        let (agent, path) = after.unwrap_or(("", ""));
        // The agents as one JSON array parameter: `json_each` keeps the statement fixed.
        let agents = agents.map(|a| serde_json::to_string(a).unwrap_or_default());
        let found = conn
            .prepare_cached(
                "SELECT agent_id, path, current_version, current_bytes, updated_at FROM files
                 WHERE current_version IS NOT NULL AND (agent_id, path) > (?1, ?2)
                   AND (?4 IS NULL OR agent_id IN (SELECT value FROM json_each(?4)))
                 ORDER BY agent_id, path LIMIT ?3",
            )
            .and_then(|mut s| {
                s.query_map(params![agent, path, limit, agents], |r| {
                    Ok((
                        r.get(0)?,
                        FileMeta {
                            path: r.get(1)?,
                            version: to_u64(r.get(2)?),
                            bytes: to_u64(r.get(3)?),
                            updated_at: r.get(4)?,
                        },
                    ))
                })?
                .collect()
            })
            .map_err(map_err);
        give_back(&self.pool, conn);
        found
    }
}

/// How far a call's transaction has come.
#[derive(Debug)]
enum Phase {
    /// In a read snapshot, holding no write lock: every call starts here.
    Reading,
    /// Holding the write lock, and this process's turn at it (given back when the phase
    /// ends): the call has made (or is making) its first change.
    Writing { _turn: Turn },
    /// Another process changed the agent's rows between the call's reads and its lock:
    /// nothing was written, nothing more will be, and the call runs again.
    Stale,
}

struct SqliteTxn {
    /// Always `Some` until commit or drop take it.
    conn: Option<Connection>,
    /// How the call was begun, and so how it commits.
    mode: Mode,
    /// Where the call is: reading, or holding the write lock, or found stale.
    phase: RefCell<Phase>,
    /// The operator's limits, handed to the guest through the `limits` import.
    limits: LimitOverrides,
    /// Summaries a read call cached, stored after its snapshot ends.
    pending_summaries: RefCell<Vec<PendingSummary>>,
    /// What the call has changed of the agents' counters, written when it commits.
    counters: Pending,
    /// The store's pool, which the connection goes back to.
    pool: Arc<Mutex<Vec<Connection>>>,
    /// The store's search index, which a search brings up to date first.
    index: Arc<IndexFile>,
    /// The store's durable point, which the call waits for after a commit that changed
    /// something.
    flush: Arc<Flush>,
    /// The store's queue for the write lock.
    queue: Arc<WriteQueue>,
    /// Read calls' operations not yet written, shared with every transaction of the store.
    uncounted: Uncounted,
}

impl SqliteTxn {
    fn conn(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("connection held until commit or drop")
    }

    /// Takes the write lock before a write call's first change (the guard lets no change
    /// into a read call).
    fn lock_for_writing(&self, agent: &str) -> Result<(), StoreError> {
        debug_assert_eq!(self.mode, Mode::Write, "a change reached a read call");
        match *self.phase.borrow() {
            Phase::Reading => {}
            Phase::Writing { .. } => return Ok(()),
            Phase::Stale => return Err(StoreError::Stale),
        }
        self.take_write_lock(agent)
    }

    /// Ends the call's read snapshot and begins a write transaction (waiting at most
    /// [`BUSY_TIMEOUT`] for the lock). What the call read of `agent` is still true when its
    /// generation did not move in between; when it did, nothing is written, the lock is let
    /// go at once, and the call is marked to run again.
    fn take_write_lock(&self, agent: &str) -> Result<(), StoreError> {
        let conn = self.conn();
        let read = rows::generation(conn, agent)?;
        let turn = self.queue.wait()?;
        control(conn, "COMMIT")
            .and_then(|()| control(conn, "BEGIN IMMEDIATE"))
            .map_err(map_err)?;
        if rows::generation(conn, agent)? != read {
            *self.phase.borrow_mut() = Phase::Stale;
            control(conn, "ROLLBACK").map_err(map_err)?;
            return Err(StoreError::Stale);
        }
        *self.phase.borrow_mut() = Phase::Writing { _turn: turn };
        Ok(())
    }

    /// Stores a summary if its version is still kept (one cached by a read call may have
    /// been pruned since).
    fn store_summary(&self, p: &PendingSummary) -> Result<(), StoreError> {
        rows::store_summary(self.conn(), p)?;
        Ok(())
    }
}

implement_storage!(SqliteTxn, |t| t);

/// The statements of one call; [`implement_storage`] makes them the storage contract.
impl SqliteTxn {
    fn stat_file(&self, agent: &str, path: &str) -> Result<Option<FileState>, StoreError> {
        Ok(rows::stat_file(self.conn(), agent, path)?)
    }

    fn read_version(
        &self,
        agent: &str,
        path: &str,
        version: u64,
    ) -> Result<Option<String>, StoreError> {
        Ok(rows::read_version(self.conn(), agent, path, version)?)
    }

    fn put_version(
        &self,
        agent: &str,
        path: &str,
        version: u64,
        content: &str,
    ) -> Result<(), StoreError> {
        self.lock_for_writing(agent)?;
        let existed =
            rows::file_row(self.conn(), agent, path)?.is_some_and(|r| r.current.is_some());
        Ok(rows::put_version(
            self.conn(),
            &self.counters,
            agent,
            path,
            version,
            content,
            existed,
        )?)
    }

    fn prune_versions(&self, agent: &str, path: &str, keep_from: u64) -> Result<(), StoreError> {
        self.lock_for_writing(agent)?;
        Ok(rows::prune_versions(
            self.conn(),
            &self.counters,
            agent,
            path,
            keep_from,
        )?)
    }

    fn delete_file(&self, agent: &str, path: &str) -> Result<bool, StoreError> {
        self.lock_for_writing(agent)?;
        Ok(rows::delete_file(self.conn(), &self.counters, agent, path)?)
    }

    fn list_files(&self, agent: &str, prefix: &str) -> Result<Vec<FileMeta>, StoreError> {
        Ok(rows::list_files(self.conn(), agent, prefix)?)
    }

    fn append_log(
        &self,
        agent: &str,
        path: &str,
        entry: &LogValue,
        _counted: u64,
    ) -> Result<u64, StoreError> {
        self.lock_for_writing(agent)?;
        let (is_text, body) = log_body(entry);
        Ok(rows::append_log(
            self.conn(),
            &self.counters,
            agent,
            path,
            is_text,
            body,
        )?)
    }

    fn read_log(
        &self,
        agent: &str,
        path: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StoreError> {
        Ok(rows::read_log(self.conn(), agent, path, after, limit)?)
    }

    fn usage(&self, agent: &str) -> Result<Usage, StoreError> {
        let mut usage = rows::usage(self.conn(), &self.counters, agent)?;
        usage.total_operations += self.uncounted.of(agent);
        Ok(usage)
    }

    fn cached_summary(
        &self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(rows::cached_summary(
            self.conn(),
            agent,
            path,
            version,
            model,
        )?)
    }

    fn log_info(&self, agent: &str, path: &str) -> Result<LogState, StoreError> {
        Ok(logs::state(self.conn(), agent, path)?)
    }

    fn set_log_retention(
        &self,
        agent: &str,
        path: &str,
        retention: Retention,
    ) -> Result<(), StoreError> {
        self.lock_for_writing(agent)?;
        Ok(rows::set_log_retention(
            self.conn(),
            &self.counters,
            agent,
            path,
            retention,
        )?)
    }

    fn trim_log(
        &self,
        agent: &str,
        path: &str,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StoreError> {
        self.lock_for_writing(agent)?;
        Ok(rows::trim_log(
            self.conn(),
            &self.counters,
            agent,
            path,
            before,
            older_than_seconds,
        )?)
    }

    fn search(
        &self,
        agent: &str,
        terms: &[String],
        match_all: bool,
        prefix: &str,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StoreError> {
        self.index.with(|idx| {
            let files = index::Files {
                store: self.conn(),
                index: idx,
            };
            Ok(index::search(
                files, agent, terms, match_all, prefix, limit, offset,
            )?)
        })
    }

    fn put_summary(
        &self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        let summary = PendingSummary::new(agent, path, version, model, summary);
        if self.mode == Mode::Read {
            self.pending_summaries.borrow_mut().push(summary);
            return Ok(());
        }
        self.lock_for_writing(agent)?;
        self.store_summary(&summary)
    }
}

impl Txn for SqliteTxn {
    fn mode(&self) -> Mode {
        self.mode
    }

    fn commit(self: Box<Self>, agent: &str) -> Result<(), StoreError> {
        match *self.phase.borrow() {
            Phase::Stale => return Err(StoreError::Stale),
            Phase::Writing { .. } => {}
            Phase::Reading => return self.end_read(agent),
        }
        // A failed commit keeps the turn until the rollback, when the transaction goes.
        self.count_and_commit(Some(agent))?;
        // Committed: the lock and the turn are free, and the next writer's turn overlaps
        // this one's sync.
        self.phase.replace(Phase::Reading);
        durable(&self.flush)
    }

    fn conflicted(&self) -> bool {
        matches!(*self.phase.borrow(), Phase::Stale)
    }
}

impl SqliteTxn {
    /// Ends a read, or a write call that changed nothing: its snapshot, then its bookkeeping,
    /// which must not fail the answer. Its count joins those kept in memory; they, and any
    /// summaries it cached, are written now when worth it: summaries always (worth a wait),
    /// counts alone once [`COUNTS_KEPT`](super::uncounted::COUNTS_KEPT) have gathered and the
    /// lock is free. Whatever is not written stays kept for the next write.
    fn end_read(&self, agent: &str) -> Result<(), StoreError> {
        control(self.conn(), "COMMIT").map_err(map_err)?;
        let summaries = self.pending_summaries.take();
        let worth_writing = self.uncounted.add(agent);
        let written = if !summaries.is_empty() {
            self.queue
                .wait()
                .and_then(|_turn| self.write_after_read(&summaries))
        } else if worth_writing && let Some(_turn) = self.queue.now() {
            self.write_after_read(&[])
        } else {
            return Ok(());
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, summaries = summaries.len(), "read counts kept for the next write");
            if !self.conn().is_autocommit() {
                let _ = control(self.conn(), "ROLLBACK");
            }
        }
        Ok(())
    }

    /// After a read, holding the turn: stores its summaries (worth a wait and an fsync) and
    /// the counts kept (worth neither), in one short write transaction.
    fn write_after_read(&self, summaries: &[PendingSummary]) -> Result<(), StoreError> {
        let conn = self.conn();
        let worth_waiting = !summaries.is_empty();
        let wait = if worth_waiting {
            BUSY_TIMEOUT
        } else {
            Duration::ZERO
        };
        conn.busy_timeout(wait).map_err(map_err)?;
        let result = control(conn, "BEGIN IMMEDIATE")
            .map_err(map_err)
            .and_then(|()| {
                // A version deleted or pruned meanwhile simply goes uncached.
                summaries.iter().try_for_each(|s| self.store_summary(s))
            })
            .and_then(|()| self.count_and_commit(None))
            .and_then(|()| match worth_waiting {
                true => durable(&self.flush),
                false => Ok(()),
            });
        conn.busy_timeout(BUSY_TIMEOUT).map_err(map_err)?;
        result
    }

    /// Counts one operation for `agent` (if any), and every count kept back, then writes
    /// the counters (one statement an agent) and commits; the counts kept go back if the
    /// commit does not happen.
    fn count_and_commit(&self, agent: Option<&str>) -> Result<(), StoreError> {
        let owed = self.uncounted.take_all();
        let kept_back = owed.iter().map(|(owed_agent, n)| (owed_agent.as_str(), *n));
        let written = self
            .counters
            .write_with_operations(self.conn(), kept_back, agent)
            .map_err(StoreError::from)
            .and_then(|()| control(self.conn(), "COMMIT").map_err(map_err));
        if written.is_err() {
            self.uncounted.restore(owed);
        }
        written
    }
}

impl Drop for SqliteTxn {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        // Roll back whatever was not committed; a connection left in an unknown state is
        // closed rather than pooled.
        let rolled_back = conn.is_autocommit() || control(&conn, "ROLLBACK").is_ok();
        if rolled_back {
            give_back(&self.pool, conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scratchpad_guest::limits::NO_OVERRIDES;

    /// A write call answers only after a sync of the WAL that began after its commit; a
    /// read's count syncs nothing, a read that cached a summary (worth keeping) does; and a
    /// write that failed syncs nothing either.
    #[test]
    fn every_change_waits_for_a_sync_and_a_reads_count_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("s.db")).unwrap();
        let (a, f) = (AgentId::parse("a").unwrap(), FilePath::parse("f").unwrap());
        let write = store.begin(Mode::Write, NO_OVERRIDES).unwrap();
        write.put_version(&a, &f, 1, "x").unwrap();
        write.commit("a").unwrap();
        assert_eq!(store.flush.made(), 1, "the write's");

        let read = store.begin(Mode::Read, NO_OVERRIDES).unwrap();
        read.get_usage(&a).unwrap();
        read.commit("a").unwrap();
        assert_eq!(store.flush.made(), 1, "a read's count is not worth a sync");

        let read = store.begin(Mode::Read, NO_OVERRIDES).unwrap();
        read.put_summary(&a, &f, 1, "m", "short").unwrap();
        read.commit("a").unwrap();
        assert_eq!(store.flush.made(), 2, "a summary is");

        let failed = store.begin(Mode::Write, NO_OVERRIDES).unwrap();
        failed.put_version(&a, &f, 2, "y").unwrap();
        drop(failed);
        assert_eq!(
            store.flush.made(),
            2,
            "a rolled-back write has nothing to sync"
        );
        let pooled: Vec<i64> = locked(&store.pool)
            .iter()
            .map(|c| {
                c.pragma_query_value(None, "synchronous", |r| r.get(0))
                    .unwrap()
            })
            .collect();
        assert!(
            pooled.iter().all(|&s| s == 1),
            "NORMAL, the flush syncs: {pooled:?}"
        );
    }

    /// A read's count costs it no write: counts gather in memory and reach the file with the
    /// hundredth, or when the store is let go; in this process they are counted at once.
    #[test]
    fn read_counts_reach_the_file_with_the_hundredth_read_or_at_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = Sqlite::open(&path).unwrap();
        let a = AgentId::parse("a").unwrap();
        let read = |store: &Sqlite| {
            let txn = store.begin(Mode::Read, NO_OVERRIDES).unwrap();
            let seen = txn.get_usage(&a).unwrap().total_operations;
            txn.commit("a").unwrap();
            seen
        };
        let in_file = || -> i64 {
            Connection::open(&path)
                .unwrap()
                .query_row(
                    "SELECT coalesce((SELECT total_operations FROM agents WHERE agent_id = 'a'), 0)",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        };
        for n in 0..99 {
            assert_eq!(read(&store), n, "this process sees its own counts");
        }
        assert_eq!(in_file(), 0, "99 reads wrote nothing");
        read(&store);
        assert_eq!(in_file(), 100, "the hundredth wrote them all");
        for _ in 0..3 {
            read(&store);
        }
        drop(store);
        assert_eq!(in_file(), 103, "the rest at close");
    }

    /// A write call reads without the lock. Another agent's commit in between leaves what it
    /// read true, so it writes; a commit of its own agent's rows does not, so it writes
    /// nothing, lets the lock go and asks to run again.
    #[test]
    fn a_write_call_writes_only_what_it_read_is_still_true() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("s.db")).unwrap();
        let (a, b) = (AgentId::parse("a").unwrap(), AgentId::parse("b").unwrap());
        let f = FilePath::parse("f").unwrap();
        let write = |agent: &AgentId, version: u64, content: &str| {
            let txn = store.begin(Mode::Write, NO_OVERRIDES).unwrap();
            txn.put_version(agent, &f, version, content).unwrap();
            txn.commit(agent.as_str()).unwrap();
        };
        write(&a, 1, "one");

        let call = store.begin(Mode::Write, NO_OVERRIDES).unwrap();
        assert_eq!(call.stat_file(&a, &f).unwrap().unwrap().last_version, 1);
        write(&b, 1, "b's, while a's call works");
        call.put_version(&a, &f, 2, "two").unwrap();
        assert!(!call.conflicted());
        call.commit("a").unwrap();

        let call = store.begin(Mode::Write, NO_OVERRIDES).unwrap();
        assert_eq!(call.stat_file(&a, &f).unwrap().unwrap().last_version, 2);
        write(&a, 3, "another process's three");
        let e = call.put_version(&a, &f, 3, "mine").unwrap_err();
        assert!(matches!(e, StorageError::Busy), "{e:?}");
        assert!(call.conflicted());
        write(&b, 2, "the lock was let go at once");
        assert!(call.commit("a").is_err(), "a stale call never commits");

        let check = store.begin(Mode::Read, NO_OVERRIDES).unwrap();
        assert_eq!(
            check.read_version(&a, &f, 3).unwrap().as_deref(),
            Some("another process's three")
        );

        // The last run of a call that conflicted holds the lock before it reads.
        let last = store.begin_locked(NO_OVERRIDES).unwrap();
        let other = Connection::open(dir.path().join("s.db")).unwrap();
        other.busy_timeout(Duration::ZERO).unwrap();
        assert!(other.execute_batch("BEGIN IMMEDIATE").is_err(), "locked");
        drop(last);
        other.execute_batch("BEGIN IMMEDIATE; ROLLBACK").unwrap();
    }

    /// A write the disk did not confirm was still made: its call says so, and never that
    /// nothing was changed.
    #[test]
    fn a_write_the_disk_did_not_confirm_says_it_was_stored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut store = Sqlite::open(&path).unwrap();
        store.flush = Arc::new(Flush::failing(&path));
        let (a, f) = (AgentId::parse("a").unwrap(), FilePath::parse("f").unwrap());
        let txn = store.begin(Mode::Write, NO_OVERRIDES).unwrap();
        txn.put_version(&a, &f, 1, "one").unwrap();
        let e = txn.commit("a").unwrap_err();
        assert!(
            matches!(e, StoreError::Unconfirmed(words) if words.starts_with("the call was stored")),
            "{e:?}"
        );
        let check = store.begin(Mode::Read, NO_OVERRIDES).unwrap();
        assert_eq!(
            check.read_version(&a, &f, 1).unwrap().as_deref(),
            Some("one")
        );
    }
}
