//! The hosted backend: PostgreSQL, so that several server instances behave as one server.
//!
//! Why it is shaped this way:
//! - A write call takes a transaction-scoped advisory lock on its agent before it reads
//!   anything of that agent's. Two instances therefore never both read a file's last version
//!   and both write the next one, conflict checks see every committed write, and a quota is
//!   checked against every committed byte. Agents never wait for each other. Every wait is
//!   bounded by the connection's `lock_timeout` ([`BUSY_TIMEOUT`]), past which the call
//!   answers "busy".
//! - A read call runs in `REPEATABLE READ READ ONLY`: one snapshot for all its statements,
//!   no locks. Its operation count, and any summary it cached, are stored after it in a
//!   short write, so a read never holds a lock while a model thinks.
//! - Usage counters live in `agents` and change in the same transaction as the rows they
//!   count, as in SQLite; prefixes are compared with `starts_with`, never `LIKE`.
//! - Connections come from a bounded pool ([`pool`]), and statements are prepared once per
//!   connection. They use TLS, the server verified, when the URL asks for it ([`tls`]).
//! - The `postgres` driver runs its own small runtime per connection; it is used only from
//!   blocking threads, and connections are closed on a thread of their own.

mod check;
mod migrations;
mod pool;
mod search;
mod tls;
mod url;

pub use check::{stats, verify};
pub use url::{DatabaseUrl, NotAUrl};

use super::{
    Backend, Mode, PendingSummary, StoreError, Txn, implement_storage, refused, to_i64, to_u64,
};
use crate::rate::{Allowance, Rate};
use pool::Pool;
use postgres::config::SslMode;
use postgres::error::SqlState;
use postgres::types::{FromSql, ToSql};
use postgres::{Client, Row, Statement};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{
    FileState, LogState, MatchRef, Retention, SearchMatch, VersionInfo,
};
use scratchpad_guest::names::{AgentId, FilePath, Prefix};
use scratchpad_guest::ports::{
    check_log_bytes, check_new_version, check_prune, check_summary_kept, content_hash,
};
use scratchpad_guest::{FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, Usage};
use scratchpad_store::logs;
use scratchpad_store::rows::Tally;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tls::Connector;

/// How long a write waits for another call on the same agent before answering "busy".
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one statement may run before PostgreSQL cancels it: far above any statement of
/// a tool call (the heaviest, a search over an agent's whole index, takes milliseconds), so
/// only a runaway plan or a stuck server meets it, and its call fails instead of holding a
/// connection.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long connecting may take unless the URL says (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// One connection and the statements prepared on it.
struct Conn {
    client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Conn {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).map_err(map_err)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }

    fn query(&mut self, sql: &'static str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.client.query(&s, params).map_err(map_err)
    }

    fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.client.query_opt(&s, params).map_err(map_err)
    }

    fn query_one(&mut self, sql: &'static str, params: Params<'_>) -> Result<Row, StoreError> {
        let s = self.statement(sql)?;
        self.client.query_one(&s, params).map_err(map_err)
    }

    fn execute(&mut self, sql: &'static str, params: Params<'_>) -> Result<u64, StoreError> {
        let s = self.statement(sql)?;
        self.client.execute(&s, params).map_err(map_err)
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client.batch_execute(sql).map_err(map_err)
    }
}

/// Column `i` of `row`; a type mismatch is a database error, never a panic.
fn col<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i).map_err(map_err)
}

/// Stored bytes as text; the store only ever holds UTF-8, so anything else is damage.
fn text(bytes: Vec<u8>) -> Result<String, StoreError> {
    String::from_utf8(bytes)
        .map_err(|_| StoreError::Database("stored text is not valid UTF-8".into()))
}

/// A PostgreSQL database.
pub struct Postgres {
    pool: Arc<Pool>,
}

impl Postgres {
    /// Connects to `url` and brings its schema up to date.
    pub fn open(url: &DatabaseUrl) -> Result<Self, StoreError> {
        let (pool, mut conn) = first_connection(url)?;
        let migrated = migrations::run(&mut conn.client);
        pool.give_back(conn, migrated.is_ok());
        let applied = migrated.map_err(|e| cannot_open(url, e.detail()))?;
        if !applied.is_empty() {
            tracing::info!(?applied, version = migrations::latest(), "schema migrated");
        }
        Ok(Self {
            pool: Arc::new(pool),
        })
    }

    /// One statement, committed by itself: refills the agent's bucket for the time since it
    /// was last taken from (the database's clock, the same for every instance), takes a call
    /// if there is one, and says which. Concurrent takers of one agent queue on its row.
    fn take_from_bucket(&self, agent: &str, rate: Rate) -> Result<Allowance, StoreError> {
        let mut conn = self.pool.take()?;
        let row = conn.query_one(
            "INSERT INTO rate_buckets AS b (agent_id, tokens, granted, taken_at)
             VALUES ($1, $3::float8 - 1, true, clock_timestamp())
             ON CONFLICT (agent_id) DO UPDATE SET (tokens, granted, taken_at) = (
                 SELECT CASE WHEN refilled >= 1 THEN refilled - 1 ELSE refilled END,
                        refilled >= 1,
                        clock_timestamp()
                 FROM (SELECT least($3::float8, b.tokens + $2::float8 * greatest(0,
                           extract(epoch FROM clock_timestamp() - b.taken_at)::float8)) AS refilled) r)
             RETURNING granted, tokens",
            &[&agent, &rate.per_second, &rate.burst],
        );
        self.pool.give_back(conn, true);
        let row = row?;
        if col(&row, 0)? {
            return Ok(Ok(()));
        }
        Ok(Err(rate.wait_for_one(col(&row, 1)?)))
    }
}

/// Why the database at `url` cannot be used, naming it without its password.
fn cannot_open(url: &DatabaseUrl, reason: String) -> StoreError {
    StoreError::Open {
        path: url.to_string(),
        reason,
    }
}

/// A pool for `url` and its first connection: what opening the database means, for the
/// server and for `verify`/`stats` alike.
fn first_connection(url: &DatabaseUrl) -> Result<(Pool, Conn), StoreError> {
    let (config, connector) = config(url)?;
    let pool = Pool::new(config, connector);
    let conn = pool.take().map_err(|e| cannot_open(url, e.detail()))?;
    Ok((pool, conn))
}

/// The driver's settings for `url`, with a connect timeout and our application name unless
/// the URL sets them, and how to connect: with verified TLS when the URL asks for it
/// (`sslmode=require` or `sslrootcert`), see [`tls`].
fn config(url: &DatabaseUrl) -> Result<(postgres::Config, Connector), StoreError> {
    let open_error = |reason: String| cannot_open(url, reason);
    let (text, root_cert) = url.for_driver();
    let mut config: postgres::Config = text
        .parse()
        .map_err(|e: postgres::Error| open_error(format!("invalid URL: {e}")))?;
    let connector = if root_cert.is_some() || config.get_ssl_mode() == SslMode::Require {
        config.ssl_mode(SslMode::Require);
        tls::verifying(root_cert.as_deref()).map_err(open_error)?
    } else {
        config.ssl_mode(SslMode::Disable);
        Connector::Plain
    };
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("scratchpad-mcp");
    }
    Ok((config, connector))
}

/// PostgreSQL's errors as the store's: by SQLSTATE, never by message.
fn map_err(e: postgres::Error) -> StoreError {
    let Some(code) = e.code() else {
        tracing::error!(error = %e, "database connection error");
        return StoreError::Database(if e.is_closed() {
            "the connection to PostgreSQL was lost; retry".into()
        } else {
            "PostgreSQL cannot be reached".into()
        });
    };
    match code {
        c if [
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::T_R_SERIALIZATION_FAILURE,
        ]
        .contains(c) =>
        {
            StoreError::Busy(BUSY_TIMEOUT.as_secs())
        }
        c if *c == SqlState::DISK_FULL => StoreError::Full,
        c if *c == SqlState::QUERY_CANCELED => StoreError::Database(format!(
            "a statement ran longer than {} s and was stopped",
            STATEMENT_TIMEOUT.as_secs()
        )),
        c if *c == SqlState::READ_ONLY_SQL_TRANSACTION => StoreError::ReadOnly,
        c => {
            tracing::error!(error = %e, "database error");
            StoreError::Database(format!("PostgreSQL error {}", c.code()))
        }
    }
}

/// A connection from `pool` with a call's transaction begun on it: a read call's one
/// snapshot, or a write call's read-committed transaction (its agent's lock comes first).
fn begin_on(pool: &Pool, mode: Mode) -> Result<Conn, StoreError> {
    let mut conn = pool.take()?;
    match conn.batch(match mode {
        Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        Mode::Write => "BEGIN ISOLATION LEVEL READ COMMITTED",
    }) {
        Ok(()) => Ok(conn),
        Err(e) => {
            pool.give_back(conn, false);
            Err(e)
        }
    }
}

impl Backend for Postgres {
    fn begin(&self, mode: Mode, limits: LimitOverrides) -> Result<Box<dyn Txn>, StoreError> {
        Ok(Box::new(PgCall(RefCell::new(PgTxn {
            conn: Some(begin_on(&self.pool, mode)?),
            mode,
            limits,
            agent: None,
            pending_summaries: Vec::new(),
            pool: Arc::clone(&self.pool),
        }))))
    }

    fn all_files(
        &self,
        agents: Option<&[String]>,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<(String, FileMeta)>, StoreError> {
        let mut conn = self.pool.take()?;
        let (agent, path) = after.unwrap_or(("", ""));
        let agents = agents.map(<[String]>::to_vec);
        let rows = conn.query(
            "SELECT agent_id, path, current_version, current_bytes, scratchpad_rfc3339(updated_at)
             FROM files
             WHERE current_version IS NOT NULL AND (agent_id, path) > ($1, $2)
               AND ($4::text[] IS NULL OR agent_id = ANY($4))
             ORDER BY agent_id, path LIMIT $3",
            &[&agent, &path, &i64::from(limit), &agents],
        );
        self.pool.give_back(conn, true);
        rows?
            .iter()
            .map(|r| {
                Ok((
                    col(r, 0)?,
                    FileMeta {
                        path: col(r, 1)?,
                        version: to_u64(col(r, 2)?),
                        bytes: to_u64(col(r, 3)?),
                        updated_at: col(r, 4)?,
                    },
                ))
            })
            .collect()
    }

    fn take_call(&self, agent: &str, rate: Rate) -> Option<Result<Allowance, StoreError>> {
        Some(self.take_from_bucket(agent, rate))
    }
}

/// One call's transaction as the storage contract: the contract's methods take `&self`, the
/// driver's need `&mut`, so the transaction sits in a cell.
struct PgCall(RefCell<PgTxn>);

implement_storage!(PgCall, |t| t.0.borrow_mut());

impl Txn for PgCall {
    fn commit(self: Box<Self>, agent: &str) -> Result<(), StoreError> {
        self.0.into_inner().commit(agent)
    }

    fn pause(&self) -> Result<(), StoreError> {
        self.0.borrow_mut().pause()
    }
}

struct PgTxn {
    /// `Some` until commit or drop take it; a read call also gives it back while it waits
    /// for a model ([`Txn::pause`]) and takes one again for its next statement.
    conn: Option<Conn>,
    mode: Mode,
    limits: LimitOverrides,
    /// The agent whose lock a write call holds.
    agent: Option<String>,
    pending_summaries: Vec<PendingSummary>,
    /// The pool the call's connections come from and go back to.
    pool: Arc<Pool>,
}

impl PgTxn {
    /// The connection, for work on `agent`'s data: a write call first takes the agent's
    /// lock, and acts for that agent only.
    fn conn_for(&mut self, agent: &str) -> Result<&mut Conn, StoreError> {
        if self.mode == Mode::Write {
            match &self.agent {
                Some(held) if held == agent => {}
                Some(held) => {
                    return Err(StoreError::Refused(format!(
                        "a call for {held:?} cannot change {agent:?}"
                    )));
                }
                None => {
                    self.conn_mut()?.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
                        &[&agent],
                    )?;
                    self.agent = Some(agent.to_owned());
                }
            }
        }
        self.conn_mut()
    }

    /// The call's connection: the one it began with, or, for a read call that gave its
    /// connection back while a model thought, a new snapshot on a connection from the pool.
    fn conn_mut(&mut self) -> Result<&mut Conn, StoreError> {
        if self.conn.is_none() {
            self.conn = Some(begin_on(&self.pool, self.mode)?);
        }
        Ok(self.conn.as_mut().expect("a connection was just put there"))
    }

    /// Ends a read call's snapshot and gives its connection back, so that a call waiting for
    /// a model holds no connection (16 slow summaries would otherwise leave every caller
    /// "busy"). A write call keeps its transaction: its agent's lock must hold to the end.
    fn pause(&mut self) -> Result<(), StoreError> {
        if self.mode == Mode::Read
            && let Some(mut conn) = self.conn.take()
        {
            let ended = conn.batch("COMMIT");
            self.pool.give_back(conn, ended.is_ok());
            ended?;
        }
        Ok(())
    }

    /// The connection for a change to `agent`'s data; refused in a read call.
    fn writing(&mut self, agent: &str, what: &str) -> Result<&mut Conn, StoreError> {
        self.mode.allows_writes(what)?;
        self.conn_for(agent)
    }

    /// (file id, last version, current version) of a path ever written.
    fn file_row(
        &mut self,
        agent: &str,
        path: &str,
    ) -> Result<Option<(i64, u64, Option<u64>)>, StoreError> {
        let row = self.conn_for(agent)?.query_opt(
            "SELECT id, last_version, current_version FROM files WHERE agent_id = $1 AND path = $2",
            &[&agent, &path],
        )?;
        row.map(|r| {
            Ok((
                col(&r, 0)?,
                to_u64(col(&r, 1)?),
                col::<Option<i64>>(&r, 2)?.map(to_u64),
            ))
        })
        .transpose()
    }

    /// Adds `change` to an agent's counters (creating its row on first use). Its `changes`
    /// are SQLite's: a write call here holds its agent's lock from its first read, so
    /// nothing needs the generation.
    fn bump(conn: &mut Conn, agent: &str, change: Tally) -> Result<(), StoreError> {
        let Tally {
            bytes,
            files,
            log_entries: entries,
            operations: ops,
            changes: _,
        } = change;
        conn.execute(
            "INSERT INTO agents (agent_id, total_bytes, file_count, log_entry_count, total_operations)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (agent_id) DO UPDATE SET
               total_bytes = agents.total_bytes + $2, file_count = agents.file_count + $3,
               log_entry_count = agents.log_entry_count + $4,
               total_operations = agents.total_operations + $5",
            &[&agent, &bytes, &files, &entries, &ops],
        )
        .map(drop)
    }

    /// Counts one call of `agent` that succeeded.
    fn count_call(conn: &mut Conn, agent: &str) -> Result<(), StoreError> {
        let call = Tally {
            operations: 1,
            ..Tally::default()
        };
        Self::bump(conn, agent, call)
    }

    /// Stores a summary if its version is kept; whether it was.
    fn store_summary(conn: &mut Conn, p: &PendingSummary) -> Result<bool, StoreError> {
        let stored = conn.execute(
            "INSERT INTO summaries (file_id, version, model, summary)
             SELECT f.id, v.version, $4, $5
             FROM files f JOIN versions v ON v.file_id = f.id
             WHERE f.agent_id = $1 AND f.path = $2 AND v.version = $3
             ON CONFLICT (file_id, version, model)
                 DO UPDATE SET summary = excluded.summary, created_at = now()",
            &[
                &p.agent,
                &p.path,
                &to_i64(p.version).unwrap_or(-1),
                &p.model,
                &p.summary.as_bytes(),
            ],
        )?;
        Ok(stored == 1)
    }

    /// Replaces the search documents of the file at `path` with one for `content`.
    fn index_file(
        conn: &mut Conn,
        agent: &str,
        path: &str,
        version: Option<u64>,
        content: &str,
    ) -> Result<(), StoreError> {
        conn.execute(
            "DELETE FROM search_docs WHERE agent_id = $1 AND path = $2 AND NOT is_log",
            &[&agent, &path],
        )?;
        match version {
            Some(v) => Self::index(conn, agent, path, false, v, content),
            None => Ok(()),
        }
    }

    fn index(
        conn: &mut Conn,
        agent: &str,
        path: &str,
        is_log: bool,
        reference: u64,
        body: &str,
    ) -> Result<(), StoreError> {
        conn.execute(
            "INSERT INTO search_docs (agent_id, path, is_log, ref, doc)
             VALUES ($1, $2, $3, $4, array_to_tsvector($5::text[]))",
            &[
                &agent,
                &path,
                &is_log,
                &to_i64(reference)?,
                &search::lexemes(body),
            ],
        )
        .map(drop)
    }

    /// After a read: stores its summaries and counts it, in one short write (the count
    /// alone is one statement, which commits by itself).
    fn count_after_read(&mut self, agent: &str) -> Result<(), StoreError> {
        let summaries = std::mem::take(&mut self.pending_summaries);
        let conn = self.conn_mut()?;
        if summaries.is_empty() {
            return Self::count_call(conn, agent);
        }
        conn.batch("BEGIN")?;
        for s in &summaries {
            // A version deleted or pruned meanwhile simply goes uncached.
            Self::store_summary(conn, s)?;
        }
        Self::count_call(conn, agent)?;
        conn.batch("COMMIT")
    }
}

/// The statements of one call; [`PgCall`] makes them the storage contract.
impl PgTxn {
    fn stat_file(&mut self, agent: &str, path: &str) -> Result<Option<FileState>, StoreError> {
        let Some((id, last_version, _)) = self.file_row(agent, path)? else {
            return Ok(None);
        };
        let kept = self
            .conn_for(agent)?
            .query(
                "SELECT version, bytes, scratchpad_rfc3339(created_at), sha256 FROM versions
                 WHERE file_id = $1 ORDER BY version",
                &[&id],
            )?
            .iter()
            .map(|r| {
                Ok(VersionInfo {
                    version: to_u64(col(r, 0)?),
                    bytes: to_u64(col(r, 1)?),
                    created_at: col(r, 2)?,
                    sha256: col(r, 3)?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Some(FileState { last_version, kept }))
    }

    fn read_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
    ) -> Result<Option<String>, StoreError> {
        let row = self.conn_for(agent)?.query_opt(
            "SELECT v.content FROM versions v JOIN files f ON f.id = v.file_id
             WHERE f.agent_id = $1 AND f.path = $2 AND v.version = $3",
            &[&agent, &path, &to_i64(version).unwrap_or(-1)],
        )?;
        row.map(|r| text(col(&r, 0)?)).transpose()
    }

    fn put_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        content: &str,
    ) -> Result<(), StoreError> {
        self.writing(agent, "put-version")?;
        let row = self.file_row(agent, path)?;
        let (last, existed) =
            row.map_or((0, false), |(_, last, current)| (last, current.is_some()));
        check_new_version(path, version, last).map_err(refused)?;
        let (v, bytes) = (to_i64(version)?, to_i64(content.len() as u64)?);
        let conn = self.conn_for(agent)?;
        let id: i64 = col(
            &conn.query_one(
                "INSERT INTO files (agent_id, path, last_version, current_version, current_bytes, updated_at)
                 VALUES ($1, $2, $3, $3, $4, now())
                 ON CONFLICT (agent_id, path) DO UPDATE SET last_version = $3, current_version = $3,
                   current_bytes = $4, updated_at = now()
                 RETURNING id",
                &[&agent, &path, &v, &bytes],
            )?,
            0,
        )?;
        conn.execute(
            "INSERT INTO versions (file_id, version, bytes, content, sha256)
             VALUES ($1, $2, $3, $4, $5)",
            &[&id, &v, &bytes, &content.as_bytes(), &content_hash(content)],
        )?;
        Self::index_file(conn, agent, path, Some(version), content)?;
        Self::bump(
            conn,
            agent,
            Tally {
                bytes,
                files: i64::from(!existed),
                ..Tally::default()
            },
        )
    }

    fn prune_versions(
        &mut self,
        agent: &str,
        path: &str,
        keep_from: u64,
    ) -> Result<(), StoreError> {
        self.writing(agent, "prune-versions")?;
        let row = self.file_row(agent, path)?;
        check_prune(path, keep_from, row.and_then(|(_, _, current)| current)).map_err(refused)?;
        let id = row.map_or(0, |(id, _, _)| id);
        let conn = self.conn_for(agent)?;
        // Summaries of the dropped versions go with them (ON DELETE CASCADE).
        let freed: i64 = col(
            &conn.query_one(
                "WITH gone AS (DELETE FROM versions WHERE file_id = $1 AND version < $2 RETURNING bytes)
                 SELECT COALESCE(sum(bytes), 0)::bigint FROM gone",
                &[&id, &to_i64(keep_from)?],
            )?,
            0,
        )?;
        Self::bump(
            conn,
            agent,
            Tally {
                bytes: -freed,
                ..Tally::default()
            },
        )
    }

    fn delete_file(&mut self, agent: &str, path: &str) -> Result<bool, StoreError> {
        self.writing(agent, "delete-file")?;
        let Some((id, _, Some(_))) = self.file_row(agent, path)? else {
            return Ok(false);
        };
        let conn = self.conn_for(agent)?;
        let freed: i64 = col(
            &conn.query_one(
                "WITH gone AS (DELETE FROM versions WHERE file_id = $1 RETURNING bytes),
                      cleared AS (UPDATE files SET current_version = NULL, current_bytes = NULL
                                  WHERE id = $1)
                 SELECT COALESCE(sum(bytes), 0)::bigint FROM gone",
                &[&id],
            )?,
            0,
        )?;
        Self::index_file(conn, agent, path, None, "")?;
        Self::bump(
            conn,
            agent,
            Tally {
                bytes: -freed,
                files: -1,
                ..Tally::default()
            },
        )?;
        Ok(true)
    }

    fn list_files(&mut self, agent: &str, prefix: &str) -> Result<Vec<FileMeta>, StoreError> {
        // `path >= $2` lets the (agent_id, path) index start at the prefix.
        self.conn_for(agent)?
            .query(
                "SELECT path, current_version, current_bytes, scratchpad_rfc3339(updated_at)
                 FROM files
                 WHERE agent_id = $1 AND current_version IS NOT NULL
                   AND path >= $2 AND starts_with(path, $2)
                 ORDER BY path",
                &[&agent, &prefix],
            )?
            .iter()
            .map(|r| {
                Ok(FileMeta {
                    path: col(r, 0)?,
                    version: to_u64(col(r, 1)?),
                    bytes: to_u64(col(r, 2)?),
                    updated_at: col(r, 3)?,
                })
            })
            .collect()
    }

    fn append_log(
        &mut self,
        agent: &str,
        path: &str,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StoreError> {
        let (is_text, body) = check_log_bytes(entry, bytes).map_err(refused)?;
        let bytes = to_i64(bytes)?;
        let conn = self.writing(agent, "append-log")?;
        let id: i64 = col(
            &conn.query_one(
                "INSERT INTO logs (agent_id, path, last_id, entries) VALUES ($1, $2, 1, 1)
                 ON CONFLICT (agent_id, path)
                     DO UPDATE SET last_id = logs.last_id + 1, entries = logs.entries + 1
                 RETURNING last_id",
                &[&agent, &path],
            )?,
            0,
        )?;
        conn.execute(
            "INSERT INTO log_entries (agent_id, path, id, is_text, body, bytes, sha256)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &agent,
                &path,
                &id,
                &is_text,
                &body.as_bytes(),
                &bytes,
                &content_hash(body),
            ],
        )?;
        Self::index(conn, agent, path, true, to_u64(id), body)?;
        Self::bump(
            conn,
            agent,
            Tally {
                bytes,
                log_entries: 1,
                ..Tally::default()
            },
        )?;
        Ok(to_u64(id))
    }

    fn read_log(
        &mut self,
        agent: &str,
        path: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StoreError> {
        self.conn_for(agent)?
            .query(
                "SELECT id, is_text, body, scratchpad_rfc3339(created_at) FROM log_entries
                 WHERE agent_id = $1 AND path = $2 AND id > $3 ORDER BY id LIMIT $4",
                &[
                    &agent,
                    &path,
                    &to_i64(after).unwrap_or(i64::MAX),
                    &i64::from(limit),
                ],
            )?
            .iter()
            .map(|r| {
                let body = text(col(r, 2)?)?;
                Ok(LogEntry {
                    id: to_u64(col(r, 0)?),
                    entry: if col(r, 1)? {
                        LogValue::Text(body)
                    } else {
                        LogValue::Json(body)
                    },
                    created_at: col(r, 3)?,
                })
            })
            .collect()
    }

    fn usage(&mut self, agent: &str) -> Result<Usage, StoreError> {
        let row = self.conn_for(agent)?.query_opt(
            "SELECT total_bytes, file_count, log_entry_count, total_operations
             FROM agents WHERE agent_id = $1",
            &[&agent],
        )?;
        let n = |i| -> Result<u64, StoreError> {
            row.as_ref().map_or(Ok(0), |r| col(r, i).map(to_u64))
        };
        Ok(Usage {
            total_bytes: n(0)?,
            file_count: n(1)?,
            log_entry_count: n(2)?,
            total_operations: n(3)?,
        })
    }

    fn cached_summary(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        model: &str,
    ) -> Result<Option<String>, StoreError> {
        let row = self.conn_for(agent)?.query_opt(
            "SELECT s.summary FROM summaries s JOIN files f ON f.id = s.file_id
             WHERE f.agent_id = $1 AND f.path = $2 AND s.version = $3 AND s.model = $4",
            &[&agent, &path, &to_i64(version).unwrap_or(-1), &model],
        )?;
        row.map(|r| text(col(&r, 0)?)).transpose()
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
        let stored = Self::store_summary(self.conn_for(agent)?, &summary)?;
        check_summary_kept(path, version, stored).map_err(refused)
    }

    fn log_info(&mut self, agent: &str, path: &str) -> Result<LogState, StoreError> {
        let row = self.conn_for(agent)?.query_opt(
            "SELECT last_id, entries, keep_last, max_age_seconds FROM logs
             WHERE agent_id = $1 AND path = $2",
            &[&agent, &path],
        )?;
        let row: Option<logs::LogRow> = match row {
            Some(r) => Some((col(&r, 0)?, col(&r, 1)?, col(&r, 2)?, col(&r, 3)?)),
            None => None,
        };
        Ok(logs::state_of(row))
    }

    fn set_log_retention(
        &mut self,
        agent: &str,
        path: &str,
        retention: Retention,
    ) -> Result<(), StoreError> {
        let keep = retention.keep_last.map(to_i64).transpose()?;
        let age = retention.max_age_seconds.map(to_i64).transpose()?;
        self.writing(agent, "set-log-retention")?
            .execute(
                "INSERT INTO logs (agent_id, path, last_id, keep_last, max_age_seconds)
                 VALUES ($1, $2, 0, $3, $4)
                 ON CONFLICT (agent_id, path) DO UPDATE SET keep_last = $3, max_age_seconds = $4",
                &[&agent, &path, &keep, &age],
            )
            .map(drop)
    }

    fn trim_log(
        &mut self,
        agent: &str,
        path: &str,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StoreError> {
        let age = older_than_seconds.map(to_i64).transpose()?;
        let before = to_i64(before)?;
        let conn = self.writing(agent, "trim-log")?;
        // The entries, their documents and the log's count go in one statement.
        let row = conn.query_one(
            "WITH gone AS (
                 DELETE FROM log_entries
                 WHERE agent_id = $1 AND path = $2
                   AND (id < $3 OR ($4::bigint IS NOT NULL
                        AND created_at < now() - $4::bigint * interval '1 second'))
                 RETURNING id, bytes),
             docs AS (
                 DELETE FROM search_docs d USING gone
                 WHERE d.agent_id = $1 AND d.path = $2 AND d.is_log AND d.ref = gone.id),
             counted AS (
                 UPDATE logs SET entries = entries - (SELECT count(*) FROM gone)
                 WHERE agent_id = $1 AND path = $2)
             SELECT count(*)::bigint, COALESCE(sum(bytes), 0)::bigint FROM gone",
            &[&agent, &path, &before, &age],
        )?;
        let (entries, bytes): (i64, i64) = (col(&row, 0)?, col(&row, 1)?);
        Self::bump(
            conn,
            agent,
            Tally {
                bytes: -bytes,
                log_entries: -entries,
                ..Tally::default()
            },
        )?;
        Ok(to_u64(entries))
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
        let Some(query) = search::query(terms, match_all)? else {
            return Ok(Vec::new());
        };
        self.conn_for(agent)?
            .query(
                "SELECT path, is_log, ref FROM search_docs
                 WHERE agent_id = $1 AND doc @@ $2::text::tsquery AND starts_with(path, $3)
                 ORDER BY ts_rank(doc, $2::text::tsquery) DESC, path, is_log, ref
                 LIMIT $4 OFFSET $5",
                &[
                    &agent,
                    &query,
                    &prefix,
                    &i64::from(limit),
                    &i64::from(offset),
                ],
            )?
            .iter()
            .map(|r| {
                let reference = to_u64(col(r, 2)?);
                Ok(SearchMatch {
                    path: col(r, 0)?,
                    at: if col(r, 1)? {
                        MatchRef::LogEntry(reference)
                    } else {
                        MatchRef::File(reference)
                    },
                })
            })
            .collect()
    }

    fn commit(mut self, agent: &str) -> Result<(), StoreError> {
        if self.mode == Mode::Write {
            let conn = self.conn_for(agent)?;
            Self::count_call(conn, agent)?;
            conn.batch("COMMIT")?;
            self.release();
            return Ok(());
        }
        // The read is done: end its snapshot. Counting it (and caching a summary) is
        // bookkeeping that must not fail the answer.
        self.conn_mut()?.batch("COMMIT")?;
        match self.count_after_read(agent) {
            Ok(()) => self.release(),
            Err(e) => tracing::warn!(error = %e, "a read call was not counted"),
        }
        Ok(())
    }
}

impl PgTxn {
    /// Returns the connection, its transaction ended, to the pool.
    fn release(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.give_back(conn, true);
        }
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        // Roll back what was not committed; a connection that cannot is closed, not pooled.
        let rolled_back = conn.batch("ROLLBACK").is_ok();
        self.pool.give_back(conn, rolled_back);
    }
}
