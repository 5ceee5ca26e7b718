//! One pooled connection and what every statement shares: statements prepared once per
//! connection, columns read without panics, PostgreSQL's errors turned into the store's by
//! SQLSTATE (never by message, which may name a user or a database), a call's transaction
//! begun in its mode, and statements whose answers nobody waits for sent with the next one.
//!
//! Each round trip to the database is a large part of a call (about 0.1 ms on loopback,
//! where SQLite's whole write takes 0.5), so a statement that answers nothing the call
//! needs (a transaction's `BEGIN` and its agent's lock, a version stored, old versions
//! pruned) is held back ([`Conn::defer`]) and sent in the same round trip as the next
//! statement that does, or as the commit. The database runs them in order as ever, and the
//! first failure among them is the one reported: a call still sees every write it made, and
//! fails whole if any of them fails.
//!
//! The driver is `tokio-postgres` on a small runtime of the connection's own, entered only
//! from blocking threads: the synchronous `postgres` wrapper it replaced waited for each
//! statement's answer before it sent the next.

use super::pool::Pool;
use super::{BUSY_TIMEOUT, STATEMENT_TIMEOUT};
use crate::storage::{Mode, StoreError};
use futures_util::future::{self, BoxFuture, FutureExt};
use std::collections::HashMap;
use std::future::Future;
use tokio::runtime::Runtime;
use tokio_postgres::error::{Severity, SqlState};
use tokio_postgres::types::{FromSql, ToSql};
use tokio_postgres::{Client, Row, SimpleQueryMessage, Statement};

pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A parameter a held-back statement owns until it is sent.
pub(super) type Owned = Box<dyn ToSql + Sync + Send>;

/// A statement held back until the next one that answers something ([`Conn::defer`]).
enum Deferred {
    /// Statements without parameters, in the simple protocol.
    Batch(String),
    /// A prepared statement, its text, and its parameters.
    Execute {
        sql: &'static str,
        statement: Statement,
        params: Vec<Owned>,
    },
}

impl Deferred {
    fn send<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, Result<(), tokio_postgres::Error>> {
        match self {
            Deferred::Batch(sql) => client.batch_execute(sql).boxed(),
            Deferred::Execute {
                statement, params, ..
            } => {
                let params: Vec<&(dyn ToSql + Sync)> =
                    params.iter().map(|p| &**p as &(dyn ToSql + Sync)).collect();
                async move { client.execute(statement, &params).await.map(drop) }.boxed()
            }
        }
    }
}

/// What the failures of a connection's statements said of it.
#[derive(Default)]
struct Noted {
    /// Whether a statement found the connection lost ([`StoreError::Lost`]).
    lost: bool,
    /// Whether a statement of the transaction found the agent's data changed since this
    /// instance remembered it ([`StoreError::Stale`]); cleared by the next `BEGIN`.
    stale: bool,
}

/// One connection, the statements prepared on it, and those held back.
pub(super) struct Conn {
    /// What its statements' failures said of it.
    noted: Noted,
    /// Drives the connection while a statement waits for its answer.
    runtime: Runtime,
    /// The driver's connection.
    client: Client,
    /// The statements prepared on this connection, by their text.
    prepared: HashMap<&'static str, Statement>,
    /// Statements held back, in the order they were made.
    deferred: Vec<Deferred>,
}

impl Conn {
    /// A fresh connection on `runtime`, which drives it; nothing prepared on it yet.
    pub(super) fn new(runtime: Runtime, client: Client) -> Self {
        Self {
            noted: Noted::default(),
            runtime,
            client,
            prepared: HashMap::new(),
            deferred: Vec::new(),
        }
    }

    /// Whether the server closed the connection.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Whether a statement found the connection lost: what the call had not committed was
    /// rolled back by the server, and the connections made before it are likely gone too.
    pub(super) fn lost(&self) -> bool {
        self.noted.lost
    }

    /// Whether a statement of the transaction found that what this instance remembered of
    /// the agent's data had changed: nothing of the call was stored, and it runs again.
    pub(super) fn stale(&self) -> bool {
        self.noted.stale
    }

    /// The driver's error as the store's, noted if it says the connection is gone or what
    /// was remembered is out of date.
    fn failed(noted: &mut Noted, e: tokio_postgres::Error) -> StoreError {
        let e = map_err(e);
        noted.lost |= matches!(e, StoreError::Lost);
        noted.stale |= matches!(e, StoreError::Stale);
        e
    }

    /// The process id of the server process this connection talks to, asked outside any
    /// transaction and without a prepared statement.
    pub(super) fn backend_pid(&mut self) -> Result<String, StoreError> {
        let asked = self
            .runtime
            .block_on(self.client.simple_query("SELECT pg_backend_pid()"));
        let messages = asked.map_err(|e| Self::failed(&mut self.noted, e))?;
        messages
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .ok_or_else(|| StoreError::Database("PostgreSQL did not say its process id".into()))
    }

    pub(super) fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let prepared = self.runtime.block_on(self.client.prepare(sql));
        let s = prepared.map_err(|e| Self::failed(&mut self.noted, e))?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }

    /// Sends what was held back, then the statement `last` makes, in one round trip, and
    /// waits for all their answers: the first failure in the order they were made is the
    /// result.
    fn send<'c, T, F>(&'c mut self, last: impl FnOnce(&'c Client) -> F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let deferred = std::mem::take(&mut self.deferred);
        let client = &self.client;
        let sent = self.runtime.block_on(async {
            let held = future::join_all(deferred.iter().map(|d| d.send(client)));
            let (held, last) = future::join(held, last(client)).await;
            held.into_iter().collect::<Result<(), _>>()?;
            last
        });
        sent.map_err(|e| Self::failed(&mut self.noted, e))
    }

    /// Holds `params` for the prepared statement `sql` back until the next statement that
    /// answers something, or the commit: for statements whose own answer the call does not
    /// need. A failure of theirs is reported there, and fails the call.
    pub(super) fn defer(
        &mut self,
        sql: &'static str,
        params: Vec<Owned>,
    ) -> Result<(), StoreError> {
        let statement = self.statement(sql)?;
        self.deferred.push(Deferred::Execute {
            sql,
            statement,
            params,
        });
        Ok(())
    }

    /// Sets parameter `index` (from 0) of the statement held back last, when that statement
    /// is `sql`: for a statement that can do the work of the one that would follow it, in
    /// the same execution. Whether it was there to set.
    pub(super) fn amend_last(&mut self, sql: &'static str, index: usize, value: Owned) -> bool {
        match self.deferred.last_mut() {
            Some(Deferred::Execute {
                sql: held, params, ..
            }) if *held == sql && index < params.len() => {
                params[index] = value;
                true
            }
            _ => false,
        }
    }

    /// The same for statements without parameters, such as a transaction's `BEGIN`.
    pub(super) fn defer_batch(&mut self, sql: String) {
        self.deferred.push(Deferred::Batch(sql));
    }

    /// Holds back the `BEGIN` of a call's transaction in `mode`: a read call's one snapshot,
    /// or a write call's read-committed transaction.
    pub(super) fn defer_begin(&mut self, mode: Mode) {
        self.noted.stale = false;
        self.defer_batch(
            match mode {
                Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                Mode::Write => "BEGIN ISOLATION LEVEL READ COMMITTED",
            }
            .to_owned(),
        );
    }

    /// Whether statements are held back, not yet sent.
    pub(super) fn holds_back(&self) -> bool {
        !self.deferred.is_empty()
    }

    /// Forgets what was held back and not yet sent: the call is being rolled back.
    pub(super) fn discard_deferred(&mut self) {
        self.deferred.clear();
    }

    pub(super) fn query(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.send(|c| async move { c.query(&s, params).await })
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.send(|c| async move { c.query_opt(&s, params).await })
    }

    pub(super) fn query_one(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Row, StoreError> {
        let s = self.statement(sql)?;
        self.send(|c| async move { c.query_one(&s, params).await })
    }

    /// Two queries in one round trip (with what was held back), for a call that will need
    /// both answers.
    pub(super) fn query_both(
        &mut self,
        (first, first_params): (&'static str, Params<'_>),
        (second, second_params): (&'static str, Params<'_>),
    ) -> Result<(Vec<Row>, Vec<Row>), StoreError> {
        let (a, b) = (self.statement(first)?, self.statement(second)?);
        self.send(|c| async move {
            future::try_join(c.query(&a, first_params), c.query(&b, second_params)).await
        })
    }

    /// A statement run once (`verify`'s checks): prepared unnamed, not kept.
    pub(super) fn query_once(&mut self, sql: &str) -> Result<Vec<Row>, StoreError> {
        self.send(|c| c.query(sql, &[]))
    }

    pub(super) fn execute(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<u64, StoreError> {
        let s = self.statement(sql)?;
        self.send(|c| async move { c.execute(&s, params).await })
    }

    pub(super) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.send(|c| c.batch_execute(sql))
    }

    /// The commit, in one round trip with what was held back and the query `sql` before it:
    /// for what the transaction left that its caller wants to know once it is committed.
    pub(super) fn query_and_commit(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.send(|c| async move {
            let (rows, ()) =
                future::try_join(c.query(&s, params), c.batch_execute("COMMIT")).await?;
            Ok(rows)
        })
    }
}

/// The SQLSTATE `scratchpad_expect_agent` fails with when the agent's row is not the one
/// this instance remembered (migration 8).
const EXPECTED_AGENT_CHANGED: &str = "SPST1";

/// Column `i` of `row`; a type mismatch is a database error, never a panic.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i).map_err(map_err)
}

/// Stored bytes as text; the store only ever holds UTF-8, so anything else is damage.
pub(super) fn text(bytes: Vec<u8>) -> Result<String, StoreError> {
    String::from_utf8(bytes)
        .map_err(|_| StoreError::Database("stored text is not valid UTF-8".into()))
}

/// Why a database behind a pooler in transaction mode cannot be used: said at start when
/// two connections turn out to share a server process, and by any statement that finds the
/// server process behind its connection changed.
pub(super) const TRANSACTION_POOLER: &str = "its connections share server processes: a \
    pooler in transaction mode (PgBouncer's pool_mode = transaction, or a provider's \
    transaction pooler) is in between, and each connection here keeps prepared statements \
    and session settings; connect to PostgreSQL directly, or through a pooler in session mode";

/// An error and each of its causes, for the operator: the driver's own words ("db error")
/// are only the first, and PostgreSQL's message is the cause's.
pub(super) fn in_full(e: &dyn std::error::Error) -> String {
    let mut said = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        said = format!("{said}: {cause}");
        source = cause.source();
    }
    said
}

/// PostgreSQL's errors as the store's: by SQLSTATE, never by message (what it said goes to
/// the operator's log).
pub(super) fn map_err(e: tokio_postgres::Error) -> StoreError {
    if connection_lost(&e) {
        tracing::warn!(error = in_full(&e), "the connection to PostgreSQL was lost");
        return StoreError::Lost;
    }
    let Some(code) = e.code() else {
        tracing::error!(error = in_full(&e), "database connection error");
        return StoreError::Database("PostgreSQL cannot be reached".into());
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
        // `scratchpad_expect_agent` (migration 8): what this instance remembered is out of date.
        c if c.code() == EXPECTED_AGENT_CHANGED => StoreError::Stale,
        c if *c == SqlState::QUERY_CANCELED => StoreError::Database(format!(
            "a statement ran longer than {} s and was stopped",
            STATEMENT_TIMEOUT.as_secs()
        )),
        // Most often at the first start: since PostgreSQL 15 only the database's owner may
        // create tables in its `public` schema.
        c if *c == SqlState::INSUFFICIENT_PRIVILEGE => StoreError::Database(
            "the database role lacks a privilege it needs: it must be able to create tables in \
             the database's schema (as the database's owner, or with GRANT CREATE ON SCHEMA \
             public) and to read and write them; the server's log names the object"
                .into(),
        ),
        // Not `ReadOnly`, whose words are about a file and its folder.
        c if *c == SqlState::READ_ONLY_SQL_TRANSACTION => StoreError::Database(
            "PostgreSQL refuses writes here: the server is a read-only standby, or the \
             database has default_transaction_read_only on"
                .into(),
        ),
        // A statement prepared on this connection is missing, or one of its name is there
        // already: the server process behind the connection changed between transactions.
        c if [
            SqlState::INVALID_SQL_STATEMENT_NAME,
            SqlState::DUPLICATE_PSTATEMENT,
        ]
        .contains(c) =>
        {
            tracing::error!(error = in_full(&e), "{TRANSACTION_POOLER}");
            StoreError::Database(TRANSACTION_POOLER.into())
        }
        c => {
            tracing::error!(error = in_full(&e), "database error");
            StoreError::Database(format!("PostgreSQL error {}", c.code()))
        }
    }
}

/// Whether `e` says the connection is gone: closed, failed on its socket, a connection
/// exception (class 08), or any error PostgreSQL ends a session with (severity `FATAL`): a
/// restart or shutdown, `pg_terminate_backend`, `idle_session_timeout`.
fn connection_lost(e: &tokio_postgres::Error) -> bool {
    if let Some(db) = e.as_db_error() {
        return db.code().code().starts_with("08")
            || matches!(
                db.parsed_severity(),
                Some(Severity::Fatal | Severity::Panic)
            );
    }
    e.is_closed() || std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>())
}

/// A connection from `pool` with a call's transaction begun on it: a read call's one
/// snapshot, or a write call's read-committed transaction (its agent's lock comes first).
/// The `BEGIN` goes with the call's first statement.
pub(super) fn begin_on(pool: &Pool, mode: Mode) -> Result<Conn, StoreError> {
    let mut conn = pool.take()?;
    conn.defer_begin(mode);
    Ok(conn)
}
