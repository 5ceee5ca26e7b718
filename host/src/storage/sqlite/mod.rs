//! The embedded default backend: one SQLite file in WAL mode.
//!
//! Why it is shaped this way:
//! - Write calls run in `BEGIN IMMEDIATE`, so two processes never both read a file's last
//!   version and both write the next one; the writer that waits does so for at most
//!   [`BUSY_TIMEOUT`] and then gets a "busy, retry" error, never a raw SQLite message.
//! - `synchronous = FULL`: a write is on disk when its call answers. A read call counts its
//!   operation afterwards in a tiny write with `synchronous = NORMAL` that does not wait for
//!   the lock: when the store cannot take it (another writer, a full disk, a read-only file)
//!   the count is kept in memory and folded into this process's next write, and the read
//!   still answers. Bookkeeping never fails a read, and reads never wait for an fsync.
//! - Summaries cost money and take seconds, so a read call never holds the write lock while
//!   the model thinks: `put-summary` in a read call is kept aside and stored in a short write
//!   transaction after the read, only if that version still exists.
//! - Usage counters live in `agents` and change in the same transaction as the rows they
//!   count; prefix matching compares `substr`, never `LIKE`, so `_` and `%` are literal.
//! - Connections are pooled: opening one costs a few file operations and pragmas per call.

mod backup;
mod check;
mod index;
mod logs;
mod transfer;

pub use backup::{LockError, StoreLock, now, replace_store, vacuum_into};
pub use check::{stats, verify};
pub use transfer::{ImportError, Line, Tally};

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

use super::{Backend, Mode, PendingSummary, StoreError, Txn, to_i64, to_u64};
use crate::bindings::{
    FileMeta, FileState, LogEntry, LogState, LogValue, Retention, SearchMatch, Usage, VersionInfo,
};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long a writer waits for another process's write lock before answering "busy":
/// long enough to ride out a burst of writes from several clients, short enough that an
/// agent is told to retry before its client gives up on the call.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections kept open for reuse. Calls beyond this still run; their connections close.
const POOL_SIZE: usize = 8;

/// The schema version this code writes; a newer file is refused rather than misread.
/// 2 added the search index and the `logs` table.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agents (
    agent_id         TEXT PRIMARY KEY,
    total_bytes      INTEGER NOT NULL DEFAULT 0,
    file_count       INTEGER NOT NULL DEFAULT 0,
    log_entry_count  INTEGER NOT NULL DEFAULT 0,
    total_operations INTEGER NOT NULL DEFAULT 0
);
-- One row per path ever written; a deleted file keeps its row (current_version NULL) so
-- that its version numbers never repeat.
CREATE TABLE IF NOT EXISTS files (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    path            TEXT NOT NULL,
    last_version    INTEGER NOT NULL,
    current_version INTEGER,
    current_bytes   INTEGER,
    updated_at      TEXT,
    UNIQUE (agent_id, path)
);
CREATE TABLE IF NOT EXISTS versions (
    file_id    INTEGER NOT NULL REFERENCES files (id),
    version    INTEGER NOT NULL,
    bytes      INTEGER NOT NULL,
    content    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (file_id, version)
);
CREATE TABLE IF NOT EXISTS log_entries (
    agent_id   TEXT NOT NULL,
    path       TEXT NOT NULL,
    id         INTEGER NOT NULL,
    is_text    INTEGER NOT NULL,
    body       TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, path, id)
);
CREATE TABLE IF NOT EXISTS summaries (
    file_id    INTEGER NOT NULL REFERENCES files (id),
    version    INTEGER NOT NULL,
    model      TEXT NOT NULL,
    summary    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (file_id, version, model)
);
";

/// RFC 3339 in UTC with milliseconds, from SQLite's clock.
const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// Operations of read calls not yet written to `agents`, per agent.
type Uncounted = Arc<Mutex<HashMap<String, u64>>>;

/// A SQLite store.
pub struct Sqlite {
    path: PathBuf,
    pool: Arc<Mutex<Vec<Connection>>>,
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
            crate::private::create_dir_all(dir).map_err(|e| open_error(e.to_string()))?;
        }
        check_writable(path).map_err(|e| open_error(e.to_string()))?;
        let store = Self {
            path: path.to_owned(),
            pool: Arc::default(),
            uncounted: Arc::default(),
            _lock: StoreLock::shared(path),
        };
        let conn = store.connect().map_err(|e| open_error(e.to_string()))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| open_error(e.to_string()))?;
        migrate(&conn).map_err(|e| open_error(e.to_string()))?;
        give_back(&store.pool, conn);
        Ok(store)
    }

    fn connect(&self) -> Result<Connection, StoreError> {
        let conn = Connection::open(&self.path).map_err(map_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(map_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(map_err)?;
        conn.set_prepared_statement_cache_capacity(32);
        Ok(conn)
    }

    fn take(&self) -> Result<Connection, StoreError> {
        let pooled = locked(&self.pool).pop();
        pooled.map_or_else(|| self.connect(), Ok)
    }

    /// Reads an export in one write transaction; see [`transfer`](self) for the rules.
    /// Returns the agent imported and what it held.
    pub fn import(
        &self,
        input: &mut dyn std::io::BufRead,
        as_agent: Option<&str>,
        replace: bool,
        quotas: scratchpad_guest::Quotas,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(String, Tally), ImportError> {
        let mut conn = self.take()?;
        let result = transfer::import(&mut conn, input, as_agent, replace, quotas, progress);
        give_back(&self.pool, conn);
        result
    }
}

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

/// Returns a connection to the pool, if it is idle and the pool has room.
fn give_back(pool: &Mutex<Vec<Connection>>, conn: Connection) {
    let mut pool = locked(pool);
    if pool.len() < POOL_SIZE && conn.is_autocommit() {
        pool.push(conn);
    }
}

/// Brings the store to [`SCHEMA_VERSION`] under the write lock, so two processes starting
/// together upgrade it once; a store from before the search index gets one built.
fn migrate(conn: &Connection) -> Result<(), StoreError> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)
        .map_err(map_err)?;
    let found: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(map_err)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::Database(format!(
            "the store has schema version {found}, newer than this build's {SCHEMA_VERSION}; upgrade scratchpad-mcp"
        )));
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    tx.execute_batch(&format!("{SCHEMA} {} {}", index::SCHEMA, logs::SCHEMA))
        .map_err(map_err)?;
    if found == 1 {
        index::rebuild(&tx, None)?;
        logs::backfill(&tx, None)?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(map_err)?;
    tx.commit().map_err(map_err)
}

/// SQLite's errors as the store's: by code, never by SQL text.
fn map_err(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Busy(BUSY_TIMEOUT.as_secs())
        }
        Some(ErrorCode::DiskFull) => StoreError::Full,
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly,
        Some(ErrorCode::CannotOpen) => {
            StoreError::Database("the database file or its journal cannot be opened".into())
        }
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            tracing::error!(error = %e, "database damaged");
            StoreError::Damaged
        }
        Some(code) => {
            tracing::error!(error = %e, "database error");
            StoreError::Database(in_words(code).into())
        }
        None => {
            tracing::error!(error = %e, "database error");
            StoreError::Database("unexpected result from the database".into())
        }
    }
}

/// An SQLite error code as a caller reads it: what went wrong, never a type name.
fn in_words(code: ErrorCode) -> &'static str {
    match code {
        ErrorCode::PermissionDenied => "permission to the database file was denied",
        ErrorCode::OutOfMemory => "the database ran out of memory",
        ErrorCode::SystemIoFailure => "reading or writing the database file failed",
        ErrorCode::FileLockingProtocolFailed => "the database file could not be locked",
        ErrorCode::SchemaChanged => "the database's schema changed during the call",
        ErrorCode::TooBig => "a value was too large for the database",
        ErrorCode::ConstraintViolation => "a row broke one of the database's constraints",
        ErrorCode::NoLargeFileSupport => "the file system cannot hold a database this large",
        ErrorCode::OperationInterrupted | ErrorCode::OperationAborted => {
            "the database stopped the operation"
        }
        _ => "the database reported an error",
    }
}

impl Backend for Sqlite {
    fn begin(&self, mode: Mode) -> Result<Box<dyn Txn>, StoreError> {
        let conn = self.take()?;
        let begin = match mode {
            Mode::Read => "BEGIN DEFERRED",
            Mode::Write => "BEGIN IMMEDIATE",
        };
        conn.execute_batch(begin).map_err(map_err)?;
        Ok(Box::new(SqliteTxn {
            conn: Some(conn),
            mode,
            pending_summaries: Vec::new(),
            home: Arc::clone(&self.pool),
            uncounted: Arc::clone(&self.uncounted),
        }))
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

struct SqliteTxn {
    /// Always `Some` until commit or drop take it.
    conn: Option<Connection>,
    mode: Mode,
    pending_summaries: Vec<PendingSummary>,
    home: Arc<Mutex<Vec<Connection>>>,
    uncounted: Uncounted,
}

impl SqliteTxn {
    fn conn(&self) -> &Connection {
        self.conn
            .as_ref()
            .expect("connection held until commit or drop")
    }

    fn writable(&self, what: &str) -> Result<(), StoreError> {
        self.mode.allows_writes(what)
    }

    /// (file id, last version, current version) of a path ever written.
    fn file_row(
        &self,
        agent: &str,
        path: &str,
    ) -> Result<Option<(i64, u64, Option<u64>)>, StoreError> {
        self.conn()
            .prepare_cached("SELECT id, last_version, current_version FROM files WHERE agent_id = ?1 AND path = ?2")
            .and_then(|mut s| {
                s.query_row(params![agent, path], |r| {
                    Ok((r.get(0)?, to_u64(r.get(1)?), r.get::<_, Option<i64>>(2)?.map(to_u64)))
                })
                .optional()
            })
            .map_err(map_err)
    }

    /// Adds to an agent's counters (creating its row on first use).
    fn bump(
        &self,
        agent: &str,
        bytes: i64,
        files: i64,
        entries: i64,
        ops: i64,
    ) -> Result<(), StoreError> {
        self.conn()
            .prepare_cached(
                "INSERT INTO agents (agent_id, total_bytes, file_count, log_entry_count, total_operations)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (agent_id) DO UPDATE SET
                   total_bytes = total_bytes + ?2, file_count = file_count + ?3,
                   log_entry_count = log_entry_count + ?4, total_operations = total_operations + ?5",
            )
            .and_then(|mut s| s.execute(params![agent, bytes, files, entries, ops]))
            .map(drop)
            .map_err(map_err)
    }

    fn store_summary(&self, p: &PendingSummary) -> Result<bool, StoreError> {
        let stored = self
            .conn()
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO summaries (file_id, version, model, summary, created_at)
                 SELECT f.id, v.version, ?4, ?5, {NOW}
                 FROM files f JOIN versions v ON v.file_id = f.id
                 WHERE f.agent_id = ?1 AND f.path = ?2 AND v.version = ?3"
            ))
            .and_then(|mut s| {
                s.execute(params![
                    p.agent,
                    p.path,
                    to_i64(p.version).unwrap_or(-1),
                    p.model,
                    p.summary
                ])
            })
            .map_err(map_err)?;
        Ok(stored == 1)
    }
}

impl Txn for SqliteTxn {
    fn stat_file(&mut self, agent: &str, path: &str) -> Result<Option<FileState>, StoreError> {
        let Some((id, last_version, _)) = self.file_row(agent, path)? else {
            return Ok(None);
        };
        let kept = self
            .conn()
            .prepare_cached("SELECT version, bytes, created_at FROM versions WHERE file_id = ?1 ORDER BY version")
            .and_then(|mut s| {
                s.query_map([id], |r| {
                    Ok(VersionInfo {
                        version: to_u64(r.get(0)?),
                        bytes: to_u64(r.get(1)?),
                        created_at: r.get(2)?,
                    })
                })?
                .collect::<Result<Vec<_>, _>>()
            })
            .map_err(map_err)?;
        Ok(Some(FileState { last_version, kept }))
    }

    fn read_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
    ) -> Result<Option<String>, StoreError> {
        self.conn()
            .prepare_cached(
                "SELECT v.content FROM versions v JOIN files f ON f.id = v.file_id
                 WHERE f.agent_id = ?1 AND f.path = ?2 AND v.version = ?3",
            )
            .and_then(|mut s| {
                s.query_row(params![agent, path, to_i64(version).unwrap_or(-1)], |r| {
                    r.get(0)
                })
                .optional()
            })
            .map_err(map_err)
    }

    fn put_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        content: &str,
    ) -> Result<(), StoreError> {
        self.writable("put-version")?;
        let row = self.file_row(agent, path)?;
        let (last, existed) =
            row.map_or((0, false), |(_, last, current)| (last, current.is_some()));
        super::check_new_version(path, version, last)?;
        let (v, bytes) = (to_i64(version)?, to_i64(content.len() as u64)?);
        let conn = self.conn();
        let id: i64 = conn
            .prepare_cached(&format!(
                "INSERT INTO files (agent_id, path, last_version, current_version, current_bytes, updated_at)
                 VALUES (?1, ?2, ?3, ?3, ?4, {NOW})
                 ON CONFLICT (agent_id, path) DO UPDATE SET last_version = ?3, current_version = ?3,
                   current_bytes = ?4, updated_at = excluded.updated_at
                 RETURNING id"
            ))
            .and_then(|mut s| s.query_row(params![agent, path, v, bytes], |r| r.get(0)))
            .map_err(map_err)?;
        conn.prepare_cached(&format!(
            "INSERT INTO versions (file_id, version, bytes, content, created_at) VALUES (?1, ?2, ?3, ?4, {NOW})"
        ))
        .and_then(|mut s| s.execute(params![id, v, bytes, content]))
        .map_err(map_err)?;
        index::remove_file(conn, agent, path)?;
        index::add(conn, agent, path, false, version, content)?;
        self.bump(agent, bytes, i64::from(!existed), 0, 0)
    }

    fn prune_versions(
        &mut self,
        agent: &str,
        path: &str,
        keep_from: u64,
    ) -> Result<(), StoreError> {
        self.writable("prune-versions")?;
        let row = self.file_row(agent, path)?;
        super::check_prune(path, keep_from, row.and_then(|(_, _, current)| current))?;
        let id = row.map_or(0, |(id, _, _)| id);
        let keep_from = to_i64(keep_from)?;
        let conn = self.conn();
        let freed: i64 = conn
            .prepare_cached(
                "SELECT COALESCE(SUM(bytes), 0) FROM versions WHERE file_id = ?1 AND version < ?2",
            )
            .and_then(|mut s| s.query_row(params![id, keep_from], |r| r.get(0)))
            .map_err(map_err)?;
        for sql in [
            "DELETE FROM versions WHERE file_id = ?1 AND version < ?2",
            "DELETE FROM summaries WHERE file_id = ?1 AND version < ?2",
        ] {
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute(params![id, keep_from]))
                .map_err(map_err)?;
        }
        self.bump(agent, -freed, 0, 0, 0)
    }

    fn delete_file(&mut self, agent: &str, path: &str) -> Result<bool, StoreError> {
        self.writable("delete-file")?;
        let Some((id, _, Some(_))) = self.file_row(agent, path)? else {
            return Ok(false);
        };
        let conn = self.conn();
        let freed: i64 = conn
            .prepare_cached("SELECT COALESCE(SUM(bytes), 0) FROM versions WHERE file_id = ?1")
            .and_then(|mut s| s.query_row([id], |r| r.get(0)))
            .map_err(map_err)?;
        for sql in [
            "DELETE FROM versions WHERE file_id = ?1",
            "DELETE FROM summaries WHERE file_id = ?1",
            "UPDATE files SET current_version = NULL, current_bytes = NULL WHERE id = ?1",
        ] {
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute([id]))
                .map_err(map_err)?;
        }
        index::remove_file(conn, agent, path)?;
        self.bump(agent, -freed, -1, 0, 0)?;
        Ok(true)
    }

    fn list_files(&mut self, agent: &str, prefix: &str) -> Result<Vec<FileMeta>, StoreError> {
        // `path >= ?2` lets the (agent_id, path) index start at the prefix; `substr` decides.
        self.conn()
            .prepare_cached(
                "SELECT path, current_version, current_bytes, updated_at FROM files
                 WHERE agent_id = ?1 AND current_version IS NOT NULL
                   AND path >= ?2 AND substr(path, 1, length(?2)) = ?2
                 ORDER BY path",
            )
            .and_then(|mut s| {
                s.query_map(params![agent, prefix], |r| {
                    Ok(FileMeta {
                        path: r.get(0)?,
                        version: to_u64(r.get(1)?),
                        bytes: to_u64(r.get(2)?),
                        updated_at: r.get(3)?,
                    })
                })?
                .collect()
            })
            .map_err(map_err)
    }

    fn append_log(
        &mut self,
        agent: &str,
        path: &str,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StoreError> {
        self.writable("append-log")?;
        let (is_text, body, bytes) = super::log_body(entry, bytes)?;
        let id = logs::next_id(self.conn(), agent, path)?;
        let row_id = to_i64(id)?;
        self.conn()
            .prepare_cached(&format!(
                "INSERT INTO log_entries (agent_id, path, id, is_text, body, bytes, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW})"
            ))
            .and_then(|mut s| s.execute(params![agent, path, row_id, is_text, body, bytes]))
            .map_err(map_err)?;
        index::add(self.conn(), agent, path, true, id, body)?;
        self.bump(agent, bytes, 0, 1, 0)?;
        Ok(id)
    }

    fn read_log(
        &mut self,
        agent: &str,
        path: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StoreError> {
        self.conn()
            .prepare_cached(
                "SELECT id, is_text, body, created_at FROM log_entries
                 WHERE agent_id = ?1 AND path = ?2 AND id > ?3 ORDER BY id LIMIT ?4",
            )
            .and_then(|mut s| {
                s.query_map(
                    params![agent, path, to_i64(after).unwrap_or(i64::MAX), limit],
                    |r| {
                        let body: String = r.get(2)?;
                        Ok(LogEntry {
                            id: to_u64(r.get(0)?),
                            entry: if r.get(1)? {
                                LogValue::Text(body)
                            } else {
                                LogValue::Json(body)
                            },
                            created_at: r.get(3)?,
                        })
                    },
                )?
                .collect()
            })
            .map_err(map_err)
    }

    fn usage(&mut self, agent: &str) -> Result<Usage, StoreError> {
        let found = self
            .conn()
            .prepare_cached(
                "SELECT total_bytes, file_count, log_entry_count, total_operations FROM agents WHERE agent_id = ?1",
            )
            .and_then(|mut s| {
                s.query_row([agent], |r| {
                    Ok(Usage {
                        total_bytes: to_u64(r.get(0)?),
                        file_count: to_u64(r.get(1)?),
                        log_entry_count: to_u64(r.get(2)?),
                        total_operations: to_u64(r.get(3)?),
                    })
                })
                .optional()
            })
            .map_err(map_err)?;
        let mut usage = found.unwrap_or(Usage {
            total_bytes: 0,
            file_count: 0,
            log_entry_count: 0,
            total_operations: 0,
        });
        usage.total_operations += locked(&self.uncounted).get(agent).copied().unwrap_or(0);
        Ok(usage)
    }

    fn cached_summary(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StoreError> {
        self.conn()
            .prepare_cached(
                "SELECT s.summary FROM summaries s JOIN files f ON f.id = s.file_id
                 WHERE f.agent_id = ?1 AND f.path = ?2 AND s.version = ?3 AND s.model = ?4",
            )
            .and_then(|mut s| {
                s.query_row(
                    params![agent, path, to_i64(version).unwrap_or(-1), model],
                    |r| r.get(0),
                )
                .optional()
            })
            .map_err(map_err)
    }

    fn log_info(&mut self, agent: &str, path: &str) -> Result<LogState, StoreError> {
        logs::state(self.conn(), agent, path)
    }

    fn set_log_retention(
        &mut self,
        agent: &str,
        path: &str,
        retention: Retention,
    ) -> Result<(), StoreError> {
        self.writable("set-log-retention")?;
        logs::set_retention(self.conn(), agent, path, retention)
    }

    fn trim_log(
        &mut self,
        agent: &str,
        path: &str,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StoreError> {
        self.writable("trim-log")?;
        let (entries, bytes) = logs::trim(self.conn(), agent, path, before, older_than_seconds)?;
        self.bump(agent, -to_i64(bytes)?, 0, -to_i64(entries)?, 0)?;
        Ok(entries)
    }

    fn search(
        &mut self,
        agent: &str,
        terms: &[String],
        match_all: bool,
        prefix: &str,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StoreError> {
        index::search(self.conn(), agent, terms, match_all, prefix, limit, offset)
    }

    fn put_summary(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StoreError> {
        let summary = PendingSummary::new(agent, path, version, model, summary);
        if self.mode == Mode::Read {
            self.pending_summaries.push(summary);
            return Ok(());
        }
        super::check_summary_stored(&summary, self.store_summary(&summary)?)
    }

    fn commit(mut self: Box<Self>, agent: &str) -> Result<(), StoreError> {
        if self.mode == Mode::Write {
            return self.count_and_commit(agent);
        }
        // The read is done: end its snapshot. Counting it (and caching a summary) is
        // bookkeeping that must not fail the answer.
        self.conn().execute_batch("COMMIT").map_err(map_err)?;
        let summaries = std::mem::take(&mut self.pending_summaries);
        if let Err(e) = self.count_after_read(agent, &summaries) {
            tracing::warn!(error = %e, summaries = summaries.len(), "operation count kept for the next write");
            if !self.conn().is_autocommit() {
                let _ = self.conn().execute_batch("ROLLBACK");
            }
            *locked(&self.uncounted).entry(agent.to_owned()).or_default() += 1;
        }
        Ok(())
    }
}

impl SqliteTxn {
    /// After a read: stores its summaries (worth a wait and an fsync) and counts it (worth
    /// neither), in one short write transaction.
    fn count_after_read(
        &self,
        agent: &str,
        summaries: &[PendingSummary],
    ) -> Result<(), StoreError> {
        let conn = self.conn();
        let durable = !summaries.is_empty();
        let (wait, sync) = if durable {
            (BUSY_TIMEOUT, "FULL")
        } else {
            (Duration::ZERO, "NORMAL")
        };
        conn.busy_timeout(wait).map_err(map_err)?;
        let result = conn
            .execute_batch(&format!("PRAGMA synchronous = {sync}; BEGIN IMMEDIATE"))
            .map_err(map_err)
            .and_then(|()| {
                // A version deleted or pruned meanwhile simply goes uncached.
                summaries
                    .iter()
                    .try_for_each(|s| self.store_summary(s).map(drop))
            })
            .and_then(|()| self.count_and_commit(agent));
        conn.busy_timeout(BUSY_TIMEOUT).map_err(map_err)?;
        result
    }

    /// Counts one operation for `agent`, and every count kept back, then commits.
    fn count_and_commit(&self, agent: &str) -> Result<(), StoreError> {
        let owed: Vec<(String, u64)> = locked(&self.uncounted)
            .iter()
            .map(|(a, n)| (a.clone(), *n))
            .collect();
        for (owed_agent, n) in &owed {
            self.bump(owed_agent, 0, 0, 0, to_i64(*n)?)?;
        }
        self.bump(agent, 0, 0, 0, 1)?;
        self.conn().execute_batch("COMMIT").map_err(map_err)?;
        let mut uncounted = locked(&self.uncounted);
        for (owed_agent, n) in owed {
            if let Some(left) = uncounted.get_mut(&owed_agent) {
                *left -= n.min(*left);
                if *left == 0 {
                    uncounted.remove(&owed_agent);
                }
            }
        }
        Ok(())
    }
}

impl Drop for SqliteTxn {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else { return };
        // Roll back whatever was not committed, and put back the durable default; a
        // connection left in an unknown state is closed rather than pooled.
        let rolled_back = conn.is_autocommit() || conn.execute_batch("ROLLBACK").is_ok();
        if rolled_back && conn.execute_batch("PRAGMA synchronous = FULL").is_ok() {
            give_back(&self.home, conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `PRAGMA synchronous` of every connection waiting in the pool (2 is FULL).
    fn pooled_sync(store: &Sqlite) -> Vec<i64> {
        locked(&store.pool)
            .iter()
            .map(|c| {
                c.pragma_query_value(None, "synchronous", |r| r.get(0))
                    .unwrap()
            })
            .collect()
    }

    /// A read counts itself with `synchronous = NORMAL`; the connection it used goes back to
    /// the pool durable again, so the write that takes it next is on disk when it answers.
    #[test]
    fn a_connection_a_read_used_is_durable_again_for_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Sqlite::open(&dir.path().join("s.db")).unwrap();
        let mut read = store.begin(Mode::Read).unwrap();
        read.usage("a").unwrap();
        read.commit("a").unwrap();
        assert_eq!(
            pooled_sync(&store),
            [2],
            "the read's connection, back in the pool"
        );
        let write = store.begin(Mode::Write).unwrap();
        assert!(
            locked(&store.pool).is_empty(),
            "the write took that connection"
        );
        write.commit("a").unwrap();
        assert_eq!(pooled_sync(&store), [2]);
        // A read whose count failed (the lock was taken) also gives its connection back durable.
        let held = store.begin(Mode::Write).unwrap();
        let mut read = store.begin(Mode::Read).unwrap();
        read.usage("a").unwrap();
        read.commit("a").unwrap();
        drop(held);
        assert_eq!(pooled_sync(&store), [2, 2]);
    }
}
