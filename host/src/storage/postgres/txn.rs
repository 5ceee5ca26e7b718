//! One tool call's transaction: its connection (given back while a read call waits for a
//! model), its agent's lock (taken before a write call reads anything), the counters it moves,
//! and its commit. The statements of the storage port are in [`statements`]; files' search
//! documents, made by the search that needs them, in [`documents`].

mod documents;
mod statements;

use super::conn::{Conn, begin_on, col};
use super::pool::Pool;
use super::remembered::{Agent, Remembered};
use super::search;
use crate::storage::uncounted::Uncounted;
use crate::storage::{
    Later, Mode, PendingSummary, StoreError, Txn, implement_storage, to_i64, to_u64,
};
use documents::Unindexed;
use scratchpad_guest::bindings::scratchpad::mcp::storage::{
    FileState, LogState, Retention, SearchMatch, VersionInfo,
};
use scratchpad_guest::names::{AgentId, FilePath, Prefix};
use scratchpad_guest::{FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, Usage};
use scratchpad_store::rows::Tally;
use std::cell::RefCell;
use std::sync::Arc;

/// One call's transaction as the storage contract: the contract's methods take `&self`, the
/// driver's need `&mut`, so the transaction sits in a cell.
pub(super) struct PgCall(RefCell<PgTxn>);

impl PgCall {
    /// Begins a call's transaction in `mode` on a connection of `pool`: a read call's
    /// snapshot, or a write call's transaction with its agent's lock ([`PgTxn::conn_for`]),
    /// each sent with the call's first statement.
    pub(super) fn begin(
        pool: &Arc<Pool>,
        uncounted: &Uncounted,
        remembered: &Remembered,
        mode: Mode,
        limits: LimitOverrides,
    ) -> Result<Self, StoreError> {
        let conn = match mode {
            Mode::Read => begin_on(pool, mode)?,
            Mode::Write => pool.take()?,
        };
        Ok(Self(RefCell::new(PgTxn {
            conn: Some(conn),
            mode,
            limits,
            agent: None,
            pending_summaries: Vec::new(),
            usage_ahead: None,
            log_ahead: None,
            current_ahead: None,
            counted: false,
            carried: 0,
            uncounted: uncounted.clone(),
            remembered: remembered.clone(),
            track: Track::Nothing,
            recalled: false,
            version_held: None,
            unindexed: None,
            to_store: Unindexed::default(),
            pool: Arc::clone(pool),
        })))
    }
}

implement_storage!(PgCall, |t| t.0.borrow_mut());

impl Txn for PgCall {
    fn mode(&self) -> Mode {
        self.0.borrow().mode
    }

    fn commit(self: Box<Self>, agent: &str) -> Result<(), StoreError> {
        let later = self.0.into_inner().commit(agent)?;
        later.into_iter().for_each(|end| end());
        Ok(())
    }

    fn commit_answering(self: Box<Self>, agent: &str) -> Result<Option<Later>, StoreError> {
        self.0.into_inner().commit(agent)
    }

    fn pause(&self) -> Result<(), StoreError> {
        self.0.borrow_mut().pause()
    }

    /// A call whose connection was lost before its commit runs again: the server rolled back
    /// what it had done, and the pool, having closed the connections made before, lends a
    /// new one. One lost at the commit does not (its commit may have happened). So does one
    /// that found what this instance remembered of its agent out of date: its transaction
    /// stored nothing, and the next run looks for itself.
    fn conflicted(&self) -> bool {
        self.0
            .borrow()
            .conn
            .as_ref()
            .is_some_and(|c| c.lost() || c.stale())
    }

    /// A write call that answered its look from memory and sent nothing since sends the
    /// check it held back for its commit now, with its `BEGIN` and its agent's lock: a round
    /// trip, on a failing call only. One that sent a statement since sent the check with it.
    fn outdated(&self) -> bool {
        let mut txn = self.0.borrow_mut();
        if !txn.recalled {
            return false;
        }
        let Some(conn) = txn.conn.as_mut() else {
            return false;
        };
        if conn.holds_back() {
            // Any failure but the check's is the failing call's own business.
            let _ = conn.batch("SELECT 1");
        }
        conn.stale()
    }
}

struct PgTxn {
    /// `Some` until commit or drop take it; a read call also gives it back while it waits
    /// for a model ([`Txn::pause`]) and takes one again for its next statement.
    conn: Option<Conn>,
    /// How the transaction was begun, and so how it commits.
    mode: Mode,
    /// The operator's limits, handed to the guest through the `limits` import.
    limits: LimitOverrides,
    /// The agent whose lock a write call holds: taken on its first statement.
    agent: Option<String>,
    /// Summaries a read call cached, stored after its snapshot ends.
    pending_summaries: Vec<PendingSummary>,
    /// The agent's counters, read with a write call's look at a file (in the same round
    /// trip, under its lock): the quota check that comes next takes them from here. Good for
    /// that next statement only: every statement clears it ([`PgTxn::conn_for`]).
    usage_ahead: Option<Usage>,
    /// A log's state as the append just made left it (path, state): the guest asks for it
    /// next, to apply the log's retention. Good for that next statement only, as
    /// [`PgTxn::usage_ahead`] is.
    log_ahead: Option<(String, LogState)>,
    /// A read call's current version of the file it looked at (path, version, content),
    /// read with that look: a read since a version reads it next but one. Good for the
    /// call's snapshot, so kept until used or until the call gives its connection back.
    current_ahead: Option<(String, u64, String)>,
    /// Whether a statement of the call already counts its operation (any that changes the
    /// agent's counters, a version stored or a log entry appended, does it in that same
    /// update of the agent's row), so that the commit does not count it again: a second
    /// update of that row in the same transaction cost a write about 0.09 ms on loopback.
    counted: bool,
    /// Read calls of the agent that this write call counts with its own operation, taken out
    /// of [`PgTxn::uncounted`] until the call commits, and put back if it does not.
    carried: u64,
    /// Read calls' counts kept in memory, shared with every call of the store.
    uncounted: Uncounted,
    /// What this instance's write calls left of each agent's files, shared with every call
    /// of the store: a write call's first look may be answered from it.
    remembered: Remembered,
    /// What a write call did, as far as remembering it goes.
    track: Track,
    /// Whether the call's look was answered from [`PgTxn::remembered`], to be checked.
    recalled: bool,
    /// The path of the last version this call stored, and the `keep_from` its statement
    /// carries: while that statement is still held back, pruning that path's versions
    /// goes into it (see [`PgTxn::prune_versions`]).
    version_held: Option<(String, u64)>,
    /// The documents of files written since the index last held them, made by the call's
    /// searches from its snapshot, with the prefix they searched under.
    unindexed: Option<(String, Unindexed)>,
    /// Documents a read call's searches made from a snapshot it has left, to store at its end
    /// with those of [`PgTxn::unindexed`].
    to_store: Unindexed,
    /// The pool the call's connections come from and go back to.
    pool: Arc<Pool>,
}

/// What a write call did, as far as what it leaves can be remembered: a look at one file
/// first, then at most a version of that file (pruned in the same statement); or a look at
/// the agent's counters first, then changes to its logs only. Anything else that changes the
/// agent's data, and the agent is forgotten at the commit.
#[derive(Default)]
enum Track {
    /// No statement yet.
    #[default]
    Nothing,
    /// The call's first statement was this look.
    Looked(Look),
    /// Then it stored this version of the file it looked at (its `created_at` comes with
    /// the commit).
    Stored(Look, VersionInfo),
    /// The call's first statement was a look at the agent's counters, which found its row
    /// at this version (`None`: no row yet), and nothing since changed a file; what it did
    /// to the agent's logs.
    Counters(Option<String>, Logs),
    /// Something else.
    Other,
}

/// What a write call that changed no file did to the agent's logs, as far as remembering
/// them goes.
#[derive(Default)]
enum Logs {
    /// Nothing.
    #[default]
    Untouched,
    /// One append to the log at this path, which it left in this state.
    Appended(String, LogState),
    /// Anything else: the agent's logs are forgotten at the commit.
    Changed,
}

/// A write call's look at `path`, remembered or not: it found `file`, and the agent's row
/// at `row` (`None`: the agent has none yet).
struct Look {
    path: String,
    file: Option<FileState>,
    row: Option<String>,
}

impl PgTxn {
    /// The connection, for work on `agent`'s data: a write call first takes the agent's
    /// lock. A call acts for one agent only (the guard refuses any other).
    fn conn_for(&mut self, agent: &str) -> Result<&mut Conn, StoreError> {
        self.usage_ahead = None;
        self.log_ahead = None;
        if self.mode == Mode::Write {
            match &self.agent {
                Some(held) => debug_assert_eq!(held, agent, "a call acts for one agent"),
                None => {
                    // Sent with the call's first statement, in the same round trip.
                    begin_locked(self.conn_mut()?, agent)?;
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
        self.current_ahead = None;
        self.keep_for_storing();
        if self.mode == Mode::Read
            && let Some(mut conn) = self.conn.take()
        {
            let ended = conn.batch("COMMIT");
            self.pool.give_back(conn, ended.is_ok());
            ended?;
        }
        Ok(())
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

    /// Adds `change` to an agent's counters (creating its row on first use), and the call's
    /// operation if no statement of the call has counted it yet; sent with the call's next
    /// statement. Its `changes` are SQLite's: a write call here holds its agent's lock from
    /// its first read, so nothing needs the generation.
    fn bump(&mut self, agent: &str, change: Tally) -> Result<(), StoreError> {
        let Tally {
            bytes,
            files,
            log_entries: entries,
            operations,
            changes: _,
        } = change;
        // Counters moved by a log's change leave the files as they were; the commit reads the
        // counters again.
        if !matches!(self.track, Track::Counters(..)) {
            self.track = Track::Other;
        }
        let ops = operations + self.operation_here(agent);
        self.conn_for(agent)?.defer(
            COUNT,
            vec![
                Box::new(agent.to_owned()),
                Box::new(bytes),
                Box::new(files),
                Box::new(entries),
                Box::new(ops),
            ],
        )
    }

    /// The call's operation, for a statement about to change `agent`'s counters: the first
    /// time 1 and the agent's reads kept in memory, after which the commit does not count it
    /// again ([`PgTxn::counted`]); 0 after that.
    fn operation_here(&mut self, agent: &str) -> i64 {
        if std::mem::replace(&mut self.counted, true) {
            return 0;
        }
        self.carried = self.uncounted.take(agent);
        i64::try_from(self.carried).map_or(i64::MAX, |reads| reads.saturating_add(1))
    }

    /// Stores a summary if its version is still kept (one cached by a read call may have
    /// been pruned since).
    fn store_summary(conn: &mut Conn, p: &PendingSummary) -> Result<(), StoreError> {
        conn.execute(
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
        Ok(())
    }

    /// Indexes `body` as the search document of log entry `id` (a file version's document
    /// is written with the version, in `put_version`'s one statement); sent with the call's
    /// next statement.
    fn index_log_entry(
        conn: &mut Conn,
        agent: &str,
        path: &str,
        id: i64,
        body: &str,
    ) -> Result<(), StoreError> {
        conn.defer(
            "INSERT INTO search_docs (agent_id, path, is_log, ref, doc)
             VALUES ($1, $2, true, $3, array_to_tsvector($4::text[]))",
            vec![
                Box::new(agent.to_owned()),
                Box::new(path.to_owned()),
                Box::new(id),
                Box::new(search::lexemes(agent, body)),
            ],
        )
    }

    /// After a read that cached summaries: stores them and the search documents it made,
    /// then writes the read counts kept and commits (the summaries are durable as any write
    /// is).
    fn store_after_summaries(&mut self, agent: &str) -> Result<(), StoreError> {
        let summaries = std::mem::take(&mut self.pending_summaries);
        let conn = self.conn_mut()?;
        // Under the agent's lock, as a write call's prune runs: a summary is stored only
        // while its version is kept, and no prune can pass between the look and the insert.
        begin_locked(conn, agent)?;
        for s in &summaries {
            // A version deleted or pruned meanwhile simply goes uncached.
            Self::store_summary(conn, s)?;
        }
        self.store_after_read(agent)?;
        self.write_counts_and_commit()
    }

    /// [`write_counts_and_commit`] on the call's connection. Each agent whose counts it
    /// writes gets a new row, so what this instance remembers of it would no longer pass the
    /// check: it is forgotten, and the agent's next write looks for itself.
    fn write_counts_and_commit(&mut self) -> Result<(), StoreError> {
        let uncounted = self.uncounted.clone();
        let written = write_counts_and_commit(self.conn_mut()?, &uncounted)?;
        for (agent, _) in written {
            self.remembered.forget(&agent);
        }
        Ok(())
    }
}

impl PgTxn {
    /// Commits a write call. A read call is counted (in memory, [`Uncounted`]), and the
    /// summaries it cached are stored at once: a caller asking again must find them. The rest
    /// of a read's end changes no answer, so it is handed back to run once the answer is out
    /// ([`PgTxn::end_read`]): one round trip less before a read answers.
    fn commit(mut self, agent: &str) -> Result<Option<Later>, StoreError> {
        if self.mode == Mode::Write {
            // A call that changed none of its agent's counters is counted here, through the
            // same `bump` as every other change; the commit goes in the same round trip, with
            // the statements held back until now.
            if !self.counted {
                self.bump(agent, Tally::default())?;
            }
            self.commit_write(agent).map_err(|e| match e {
                StoreError::Lost => StoreError::Unconfirmed(
                    "the connection to PostgreSQL was lost during the commit: the call may or may \
                     not have been stored; read before retrying",
                ),
                e => e,
            })?;
            // The reads it carried are written.
            self.carried = 0;
            self.release();
            return Ok(None);
        }
        if !self.pending_summaries.is_empty() {
            self.conn_mut()?.batch("COMMIT")?;
            self.uncounted.add(agent);
            let stored = self.store_after_summaries(agent);
            self.ended(stored);
            return Ok(None);
        }
        let worth_writing = self.uncounted.add(agent);
        let agent = agent.to_owned();
        Ok(Some(Box::new(move || self.end_read(&agent, worth_writing))))
    }

    /// Commits a write call; remembers what it left when it stored one version of the file it
    /// looked at and changed nothing else, or changed none of the agent's files, and forgets
    /// the agent otherwise.
    fn commit_write(&mut self, agent: &str) -> Result<(), StoreError> {
        match std::mem::take(&mut self.track) {
            Track::Stored(look, mut version) => {
                let Some((now, created_at)) = self.commit_reading_agent(agent)? else {
                    return Ok(());
                };
                version.created_at = created_at;
                // What the version's statement did to the file's row and versions: the new
                // one kept, those below `keep_from` pruned.
                let keep_from = self.version_held.as_ref().map_or(0, |(_, from)| *from);
                let mut kept = look.file.map(|f| f.kept).unwrap_or_default();
                kept.retain(|v| v.version >= keep_from);
                let last_version = version.version;
                kept.push(version);
                self.remembered.remember(
                    agent,
                    look.row.as_deref(),
                    now,
                    &look.path,
                    FileState { last_version, kept },
                );
            }
            Track::Counters(before, logs) => {
                if let Some((now, _)) = self.commit_reading_agent(agent)? {
                    self.remembered.moved(agent, before.as_deref(), now);
                    match logs {
                        Logs::Untouched => {}
                        Logs::Appended(path, log) => {
                            self.remembered.remember_log(agent, &path, log)
                        }
                        Logs::Changed => self.remembered.forget_logs(agent),
                    }
                }
            }
            Track::Nothing | Track::Looked(_) | Track::Other => {
                self.remembered.forget(agent);
                self.conn_for(agent)?.batch("COMMIT")?;
            }
        }
        Ok(())
    }

    /// Commits, reading in the same round trip the agent's row as the call left it and the
    /// transaction's time; `None` (the agent forgotten) if the agent has no row.
    fn commit_reading_agent(&mut self, agent: &str) -> Result<Option<(Agent, String)>, StoreError> {
        let rows = self
            .conn_for(agent)?
            .query_and_commit(statements::AGENT_ROW, &[&agent])?;
        let after = rows.first().map(statements::agent_row).transpose()?;
        if after.is_none() {
            self.remembered.forget(agent);
        }
        Ok(after)
    }

    /// Ends a read call that cached no summary: its snapshot, and what it made on the way
    /// (the search documents its searches made, the counts kept once `worth_writing`), which
    /// is bookkeeping that must not fail the answer.
    fn end_read(mut self, agent: &str, worth_writing: bool) {
        self.keep_for_storing();
        let ended = if !self.to_store.is_empty() || worth_writing {
            self.end_and_store(agent)
        } else if let Some(conn) = &mut self.conn {
            conn.batch("COMMIT")
        } else {
            // The snapshot ended while the call waited for a model.
            Ok(())
        };
        self.ended(ended);
    }

    /// Ends a read call's snapshot, then stores the search documents it made and the counts
    /// kept, in one round trip (two when a search made documents). Neither waits for its
    /// flush to disk: a read changes nothing an agent relies on, a crash of the database may
    /// lose the last moment's counts, as a crash of the server loses those it kept, and the
    /// next search makes again the documents lost.
    fn end_and_store(&mut self, agent: &str) -> Result<(), StoreError> {
        self.conn_mut()?
            .defer_batch("COMMIT; BEGIN; SET LOCAL synchronous_commit = off".into());
        self.store_after_read(agent)?;
        self.write_counts_and_commit()
    }

    /// After a read call's end: its connection back to the pool, or, if the end failed,
    /// a warning (dropping the transaction rolls back what is left).
    fn ended(&mut self, ended: Result<(), StoreError>) {
        match ended {
            Ok(()) => self.release(),
            Err(e) => tracing::warn!(error = %e, "what a read call made was not stored"),
        }
    }

    /// Returns the connection, its transaction ended, to the pool.
    fn release(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.give_back(conn, true);
        }
    }
}

impl Drop for PgTxn {
    fn drop(&mut self) {
        // Not committed: the reads a write call took out to count are counted later.
        if self.carried > 0
            && let Some(agent) = &self.agent
        {
            self.uncounted.restore([(agent.clone(), self.carried)]);
        }
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if conn.stale()
            && let Some(agent) = &self.agent
        {
            self.remembered.forget(agent);
        }
        // Roll back what was not committed (what was held back is never sent); a
        // connection that cannot is closed, not pooled.
        conn.discard_deferred();
        let rolled_back = conn.batch("ROLLBACK").is_ok();
        self.pool.give_back(conn, rolled_back);
    }
}

/// Adds to agent `$1`'s counters (bytes `$2`, files `$3`, log entries `$4`, operations `$5`),
/// creating its row on first use: every change to them but a version's, which
/// `PUT_VERSION` makes in its own statement.
const COUNT: &str =
    "INSERT INTO agents (agent_id, total_bytes, file_count, log_entry_count, total_operations)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (agent_id) DO UPDATE SET
       total_bytes = agents.total_bytes + $2, file_count = agents.file_count + $3,
       log_entry_count = agents.log_entry_count + $4,
       total_operations = agents.total_operations + $5";

/// Holds back the `BEGIN` of a transaction that changes `agent`'s rows and the statement that
/// takes the agent's lock until its end: every write call's, and a read call's that stores a
/// summary. The lock is a prepared statement, not planned again at every call.
fn begin_locked(conn: &mut Conn, agent: &str) -> Result<(), StoreError> {
    conn.defer_begin(Mode::Write);
    conn.defer(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
        vec![Box::new(agent.to_owned())],
    )
}

/// Writes every read count kept in memory and commits, in one round trip; the counts go back
/// if the commit does not happen. A write call counts its agent's through [`PgTxn::bump`].
/// The counts written, by agent.
pub(super) fn write_counts_and_commit(
    conn: &mut Conn,
    uncounted: &Uncounted,
) -> Result<Vec<(String, u64)>, StoreError> {
    let owed = uncounted.take_all();
    let written = owed
        .iter()
        .try_for_each(|(agent, reads)| {
            let nothing = || Box::new(0_i64);
            conn.defer(
                COUNT,
                vec![
                    Box::new(agent.clone()),
                    nothing(),
                    nothing(),
                    nothing(),
                    Box::new(to_i64(*reads)?),
                ],
            )
        })
        .and_then(|()| conn.batch("COMMIT"));
    match written {
        Ok(()) => Ok(owed),
        Err(e) => {
            uncounted.restore(owed);
            Err(e)
        }
    }
}
