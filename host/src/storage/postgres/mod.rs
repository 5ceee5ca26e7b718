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
//!   no locks. Its operation count is kept in memory, as SQLite's store keeps it
//!   ([`super::uncounted`]); any summary it cached is stored after it in a short write, so a
//!   read never holds a lock while a model thinks.
//! - Usage counters live in `agents` and change in the same transaction as the rows they
//!   count, as in SQLite; prefixes are compared with `starts_with`, never `LIKE`.
//! - Connections come from a bounded pool ([`pool`]), and statements are prepared once per
//!   connection. They use TLS, the server verified, when the URL asks for it ([`tls`]).
//! - Each connection runs its own small runtime for the driver (`tokio-postgres`); it is used
//!   only from blocking threads, and connections are closed on a thread of their own. A
//!   statement whose answer the call does not need is sent with the next one ([`conn`]).
//! - A write call that follows this instance's own last write of its agent answers its look
//!   at the file from what that write left ([`remembered`]), checked under the agent's lock,
//!   and so makes one round trip where it made two.
//!
//! Where each part is: this module is the database as a [`Backend`] (opening it, a call's
//! transaction begun, every agent's files for resources, the shared rate buckets);
//! [`connect`] turns a URL into a first connection; [`conn`] is one connection (prepared
//! statements, columns, errors by SQLSTATE); [`txn`] one call's transaction (its agent's lock,
//! the counters, commit) with its statements in `txn/statements.rs`; [`remembered`] what the
//! last writes left; [`migrations`], [`search`] and [`check`] the schema, the documents
//! searched and `verify`/`stats`.

mod check;
mod conn;
mod connect;
mod migrations;
mod pool;
mod remembered;
mod search;
mod tls;
mod txn;
mod url;

pub use check::{stats, verify};
pub use url::{DatabaseUrl, NotAUrl};

use super::uncounted::Uncounted;
use super::{Backend, Mode, StoreError, Txn, to_u64};
use crate::rate::{Allowance, Rate};
use conn::{Conn, col};
use connect::{cannot_open, first_connection};
use pool::Pool;
use remembered::Remembered;
use scratchpad_guest::{FileMeta, LimitOverrides};
use std::sync::Arc;
use std::time::Duration;
use txn::{PgCall, write_counts_and_commit};

/// How long a write waits for another call on the same agent before answering "busy".
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one statement may run before PostgreSQL cancels it: far above any statement of
/// a tool call (the heaviest, a search over an agent's whole index, takes milliseconds), so
/// only a runaway plan or a stuck server meets it, and its call fails instead of holding a
/// connection.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Refills agent `$1`'s bucket at `$2` calls a second up to `$3` for the time since it was
/// last taken from, takes a call if there is one, and answers whether it did and the tokens
/// left: [`Postgres::take_from_bucket`].
const TAKE_FROM_BUCKET: &str = "INSERT INTO rate_buckets AS b (agent_id, tokens, granted, taken_at)
     VALUES ($1, $3::float8 - 1, true, clock_timestamp())
     ON CONFLICT (agent_id) DO UPDATE SET (tokens, granted, taken_at) = (
         SELECT CASE WHEN refilled >= 1 THEN refilled - 1 ELSE refilled END,
                refilled >= 1,
                clock_timestamp()
         FROM (SELECT least($3::float8, b.tokens + $2::float8 * greatest(0,
                   extract(epoch FROM clock_timestamp() - b.taken_at)::float8)) AS refilled) r)
     RETURNING granted, tokens";

/// Existing files after (agent `$1`, path `$2`), of the agents `$4` (every one when NULL), at
/// most `$3`, in (agent, path) order: [`Backend::all_files`].
const ALL_FILES: &str =
    "SELECT agent_id, path, current_version, current_bytes, scratchpad_rfc3339(updated_at)
     FROM files
     WHERE current_version IS NOT NULL AND (agent_id, path) > ($1, $2)
       AND ($4::text[] IS NULL OR agent_id = ANY($4))
     ORDER BY agent_id, path LIMIT $3";

/// A PostgreSQL database.
pub struct Postgres {
    /// Shared with each call's transaction, which takes its connections from it.
    pool: Arc<Pool>,
    /// Read calls' counts kept in memory, shared with each call's transaction.
    uncounted: Uncounted,
    /// What this instance's write calls left of each agent's files, shared likewise.
    remembered: Remembered,
}

impl Postgres {
    /// Connects to `url` and brings its schema up to date.
    pub fn open(url: &DatabaseUrl) -> Result<Self, StoreError> {
        let (pool, mut conn) = first_connection(url)?;
        let migrated = migrations::run(&mut conn);
        pool.give_back(conn, migrated.is_ok());
        let applied = migrated.map_err(|e| cannot_open(url, e.detail()))?;
        if !applied.is_empty() {
            tracing::info!(?applied, version = migrations::latest(), "schema migrated");
        }
        Ok(Self {
            pool: Arc::new(pool),
            uncounted: Uncounted::default(),
            remembered: Remembered::default(),
        })
    }

    /// `work` on a pooled connection, outside any call; once more on a new connection if
    /// the first was lost (the pool then holds none made before: see [`Pool::give_back`]).
    fn on_a_connection<T>(
        &self,
        work: impl Fn(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let once = || {
            let mut conn = self.pool.take()?;
            let done = work(&mut conn);
            self.pool.give_back(conn, true);
            done
        };
        match once() {
            Err(StoreError::Lost) => once(),
            done => done,
        }
    }

    /// One statement, committed by itself: refills the agent's bucket for the time since it
    /// was last taken from (the database's clock, the same for every instance), takes a call
    /// if there is one, and says which. Concurrent takers of one agent queue on its row.
    fn take_from_bucket(&self, agent: &str, rate: Rate) -> Result<Allowance, StoreError> {
        let row = self.on_a_connection(|conn| {
            conn.query_one(TAKE_FROM_BUCKET, &[&agent, &rate.per_second, &rate.burst])
        })?;
        if col(&row, 0)? {
            return Ok(Ok(()));
        }
        Ok(Err(rate.wait_for_one(col(&row, 1)?)))
    }
}

impl Backend for Postgres {
    fn begin(&self, mode: Mode, limits: LimitOverrides) -> Result<Box<dyn Txn>, StoreError> {
        Ok(Box::new(PgCall::begin(
            &self.pool,
            &self.uncounted,
            &self.remembered,
            mode,
            limits,
        )?))
    }

    fn all_files(
        &self,
        agents: Option<&[String]>,
        after: Option<(&str, &str)>,
        limit: u32,
    ) -> Result<Vec<(String, FileMeta)>, StoreError> {
        let (agent, path) = after.unwrap_or(("", ""));
        let agents = agents.map(<[String]>::to_vec);
        let rows = self.on_a_connection(|conn| {
            conn.query(ALL_FILES, &[&agent, &path, &i64::from(limit), &agents])
        })?;
        rows.iter()
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

/// Read calls' counts kept in memory reach the database when the store is let go (the
/// server stops): best effort, as for the reads themselves. On a thread of its own, as the
/// driver's runtime cannot block inside the runtime that may be dropping the store.
impl Drop for Postgres {
    fn drop(&mut self) {
        if self.uncounted.is_empty() {
            return;
        }
        let (pool, uncounted) = (&self.pool, &self.uncounted);
        let written = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut conn = pool.take()?;
                    conn.defer_begin(Mode::Write);
                    let written = write_counts_and_commit(&mut conn, uncounted).map(drop);
                    pool.give_back(conn, written.is_ok());
                    written
                })
                .join()
                .unwrap_or_else(|_| {
                    Err(StoreError::Database(
                        "the thread writing counts stopped".into(),
                    ))
                })
        });
        if let Err(e) = written {
            tracing::warn!(error = %e, "read counts kept in memory were not written");
        }
    }
}
