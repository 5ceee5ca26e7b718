//! One pooled connection and what every statement shares: statements prepared once per
//! connection, columns read without panics, PostgreSQL's errors turned into the store's by
//! SQLSTATE (never by message, which may name a user or a database), and a call's
//! transaction begun in its mode.

use super::pool::Pool;
use super::{BUSY_TIMEOUT, STATEMENT_TIMEOUT};
use crate::storage::{Mode, StoreError};
use postgres::error::SqlState;
use postgres::types::{FromSql, ToSql};
use postgres::{Client, Row, Statement};
use std::collections::HashMap;

pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// One connection and the statements prepared on it.
pub(super) struct Conn {
    /// The driver's connection; migrations and `verify` use it directly.
    pub(super) client: Client,
    /// The statements prepared on this connection, by their text.
    prepared: HashMap<&'static str, Statement>,
}

impl Conn {
    /// A fresh connection, nothing prepared on it yet.
    pub(super) fn new(client: Client) -> Self {
        Self {
            client,
            prepared: HashMap::new(),
        }
    }

    pub(super) fn statement(&mut self, sql: &'static str) -> Result<Statement, StoreError> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).map_err(map_err)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }

    pub(super) fn query(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.client.query(&s, params).map_err(map_err)
    }

    pub(super) fn query_opt(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let s = self.statement(sql)?;
        self.client.query_opt(&s, params).map_err(map_err)
    }

    pub(super) fn query_one(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<Row, StoreError> {
        let s = self.statement(sql)?;
        self.client.query_one(&s, params).map_err(map_err)
    }

    pub(super) fn execute(
        &mut self,
        sql: &'static str,
        params: Params<'_>,
    ) -> Result<u64, StoreError> {
        let s = self.statement(sql)?;
        self.client.execute(&s, params).map_err(map_err)
    }

    pub(super) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client.batch_execute(sql).map_err(map_err)
    }
}

/// Column `i` of `row`; a type mismatch is a database error, never a panic.
pub(super) fn col<'a, T: FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i).map_err(map_err)
}

/// Stored bytes as text; the store only ever holds UTF-8, so anything else is damage.
pub(super) fn text(bytes: Vec<u8>) -> Result<String, StoreError> {
    String::from_utf8(bytes)
        .map_err(|_| StoreError::Database("stored text is not valid UTF-8".into()))
}

/// PostgreSQL's errors as the store's: by SQLSTATE, never by message.
pub(super) fn map_err(e: postgres::Error) -> StoreError {
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
pub(super) fn begin_on(pool: &Pool, mode: Mode) -> Result<Conn, StoreError> {
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
