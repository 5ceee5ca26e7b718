//! A bounded pool of connections: at most [`MAX_CONNECTIONS`] per instance.
//!
//! Calls run on the blocking thread pool, which grows with the load; a connection per call
//! would let a burst of callers, times the instances, exhaust the server's
//! `max_connections` (100 by default), and then every instance's calls fail. Here a call
//! beyond the bound waits for a connection to come back, up to [`BUSY_TIMEOUT`], and then
//! answers "busy", like any other wait in this backend.

use super::conn::in_full;
use super::tls::Connector;
use super::{BUSY_TIMEOUT, Conn, STATEMENT_TIMEOUT};
use crate::storage::StoreError;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, NoTls, Socket};

/// Connections one instance opens at most.
pub const MAX_CONNECTIONS: usize = 16;

#[derive(Default)]
struct State {
    /// Connections ready to lend.
    idle: Vec<Conn>,
    /// Connections open: idle or lent out.
    open: usize,
}

/// The connections of one [`super::Postgres`].
pub struct Pool {
    /// How to open another connection.
    config: Config,
    /// Plain or verified TLS, as the URL asked.
    connector: Connector,
    /// Idle connections and how many are open, shared by every call.
    state: Mutex<State>,
    /// Wakes a call waiting for a connection when one comes back.
    returned: Condvar,
}

impl Pool {
    /// A pool that connects with `config` and `connector` when it needs to.
    pub fn new(config: Config, connector: Connector) -> Self {
        Self {
            config,
            connector,
            state: Mutex::default(),
            returned: Condvar::new(),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An idle connection, else a new one while under the bound, else the first one given
    /// back within [`BUSY_TIMEOUT`].
    pub fn take(&self) -> Result<Conn, StoreError> {
        let deadline = Instant::now() + BUSY_TIMEOUT;
        let mut state = self.state();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(conn);
            }
            if state.open < MAX_CONNECTIONS {
                state.open += 1;
                drop(state);
                return self.connect().inspect_err(|_| self.forget(1));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(StoreError::Busy(BUSY_TIMEOUT.as_secs()));
            }
            state = self
                .returned
                .wait_timeout(state, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn connect(&self) -> Result<Conn, StoreError> {
        let unreachable = |e: &dyn std::error::Error| {
            // The driver's words (refused, timed out, a certificate it cannot trust, a
            // password refused for a user) are the operator's: a caller reads only that
            // the database cannot be reached, and the log gets them where the error is
            // turned into the caller's (`From<StoreError> for StorageError`); a command
            // prints them as its one line.
            StoreError::Unreachable(in_full(e))
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| unreachable(&e))?;
        // The connection's task runs on the connection's runtime, whenever a statement waits
        // there for its answer.
        let client = runtime
            .block_on(async {
                match &self.connector {
                    Connector::Plain => connect_with(&self.config, NoTls).await,
                    Connector::Tls(tls) => connect_with(&self.config, tls.clone()).await,
                }
            })
            .map_err(|e| unreachable(&e))?;
        let mut conn = Conn::new(runtime, client);
        // Every wait for a lock (an agent's, a counters row) ends in "busy", not a hang, and
        // no statement runs longer than a tool call could ever need.
        //
        // No bitmap scans: every statement here but a search looks rows up by a key, and a
        // file written again and again leaves a dead row behind at each write (the version
        // pruned, the search document replaced) until autovacuum comes by, up to a minute
        // later. A bitmap scan visits every one of them at every lookup; a plain index scan
        // marks each dead in the index the first time and skips it after. Measured over 4,000
        // writes of one file: with bitmap scans a write's statements grew from 0.2 to 0.7 ms
        // (the last 200 writes' p50 1.9 ms against the first's 1.0); without, they did not.
        // A search turns them on again for its own transaction: only a bitmap scan can read
        // its GIN index.
        conn.batch(&format!(
            "SET lock_timeout = {}; SET statement_timeout = {}; SET enable_bitmapscan = off",
            BUSY_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        ))?;
        Ok(conn)
    }

    /// Takes back a connection lent by [`Pool::take`]; one that is not `healthy` (its
    /// transaction could not be ended) or that lost its server is closed instead. A lost
    /// connection closes the idle ones too: made before it, to the same server, they are
    /// most likely gone as well (a restart, a failover), and each would fail a call.
    pub fn give_back(&self, mut conn: Conn, healthy: bool) {
        // What the call held back and never sent was its own: the next call starts clean.
        conn.discard_deferred();
        if healthy && !conn.is_closed() && !conn.lost() {
            self.state().idle.push(conn);
            self.returned.notify_one();
            return;
        }
        let mut gone = vec![conn];
        if gone[0].lost() {
            gone.append(&mut self.state().idle);
        }
        self.forget(gone.len());
        close(gone);
    }

    /// Counts `n` connections as gone, making room for as many new ones.
    fn forget(&self, n: usize) {
        self.state().open -= n;
        self.returned.notify_all();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        close(std::mem::take(&mut self.state().idle));
    }
}

/// Connects with `tls`, and spawns the connection's task on the runtime this runs on.
async fn connect_with<T>(config: &Config, tls: T) -> Result<Client, tokio_postgres::Error>
where
    T: MakeTlsConnect<Socket>,
    T::Stream: Send + 'static,
{
    let (client, connection) = config.connect(tls).await?;
    tokio::spawn(connection);
    Ok(client)
}

/// Closes connections. Each owns a small runtime, which must not be dropped inside an async
/// task (a server shutting down drops its store there), so they are dropped on a thread of
/// their own.
fn close(conns: Vec<Conn>) {
    if !conns.is_empty() {
        let _ = std::thread::spawn(move || drop(conns)).join();
    }
}
