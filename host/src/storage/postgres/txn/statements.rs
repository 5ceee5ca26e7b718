//! The statements of one call, one method per method of the storage port; [`super::PgCall`]
//! makes them the port. They only persist: the guard has checked every request before it
//! gets here.

use super::super::conn::{Owned, col, text};
use super::super::remembered::Agent;
use super::super::search;
use super::{Logs, Look, PgTxn, Track};
use crate::storage::{Mode, PendingSummary, StoreError, to_i64, to_u64};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{
    FileState, LogState, MatchRef, Retention, SearchMatch, VersionInfo,
};
use scratchpad_guest::ports::{content_hash, log_body};
use scratchpad_guest::{FileMeta, LogEntry, LogValue, Usage};
use scratchpad_store::logs;
use scratchpad_store::rows::Tally;
use tokio_postgres::Row;

/// What a prune drops, in the version's statement and in a prune's own, as two parts of its
/// statement: `gone`, the versions of agent `$1`'s path `$2` numbered below `$keep` with
/// their sizes, and their summaries. Summaries leave here, as in SQLite's store, not by a
/// cascade from the versions (whose trigger ran a delete of its own for every version pruned):
/// a read call stores a summary only under its agent's lock, as every write call runs, so no
/// summary can be stored for a version while a prune takes it away.
macro_rules! prune_below {
    ($keep:literal) => {
        concat!(
            "gone AS (
                 DELETE FROM versions v USING files f
                 WHERE f.id = v.file_id AND f.agent_id = $1 AND f.path = $2 AND v.version < ",
            $keep,
            " RETURNING v.bytes),
             unsummarised AS (
                 DELETE FROM summaries s USING files f
                 WHERE f.id = s.file_id AND f.agent_id = $1 AND f.path = $2 AND s.version < ",
            $keep,
            ")"
        )
    };
}

/// The next entry of agent `$1`'s log at `$2`: its last id and its count of entries one
/// more, the row made for a log's first entry.
macro_rules! next_entry {
    () => {
        "INSERT INTO logs (agent_id, path, last_id, entries) VALUES ($1, $2, 1, 1)
         ON CONFLICT (agent_id, path)
             DO UPDATE SET last_id = logs.last_id + 1, entries = logs.entries + 1"
    };
}

/// [`next_entry!`], for an append whose id comes from memory.
const NEXT_ENTRY: &str = next_entry!();

/// One statement for a whole write: the file's row, the version, the file's search document
/// deleted (the next search makes the new one: see [`super::documents`]), the versions below
/// `$8` pruned with their summaries (0 prunes none), and the agent's counters, the call's
/// operation among them (the first version a call stores counts it, so its commit need not).
/// `was` is the file's row as it stood before the statement (a file that exists now gains no
/// count); every part sees that same snapshot, so the old document's delete cannot see the new
/// one, nor the pruning the new version. It answers nothing, so it goes with the call's next
/// statement or its commit.
const PUT_VERSION: &str = concat!(
    "WITH was AS (SELECT current_version FROM files WHERE agent_id = $1 AND path = $2),
     file AS (
         INSERT INTO files (agent_id, path, last_version, current_version, current_bytes, updated_at,
                            unindexed)
         VALUES ($1, $2, $3, $3, $4, now(), true)
         ON CONFLICT (agent_id, path) DO UPDATE SET last_version = $3, current_version = $3,
           current_bytes = $4, updated_at = now(), unindexed = true
         RETURNING id),
     version AS (
         INSERT INTO versions (file_id, version, bytes, content, sha256)
         SELECT id, $3, $4, $5, $6 FROM file),
     ",
    prune_below!("$8"),
    ",
     old_doc AS (
         DELETE FROM search_docs WHERE agent_id = $1 AND path = $2 AND NOT is_log)
     INSERT INTO agents (agent_id, total_bytes, file_count, log_entry_count, total_operations)
     VALUES ($1, $4 - (SELECT COALESCE(sum(bytes), 0) FROM gone),
             CASE WHEN EXISTS (SELECT 1 FROM was WHERE current_version IS NOT NULL)
                  THEN 0 ELSE 1 END, 0, $7)
     ON CONFLICT (agent_id) DO UPDATE SET
       total_bytes = agents.total_bytes + excluded.total_bytes,
       file_count = agents.file_count + excluded.file_count,
       total_operations = agents.total_operations + excluded.total_operations"
);

/// Where [`PUT_VERSION`]'s `keep_from` is among its parameters.
const PUT_VERSION_KEEP_FROM: usize = 7;

/// The statements of one call; [`PgCall`] makes them the storage contract.
impl PgTxn {
    pub(super) fn stat_file(
        &mut self,
        agent: &str,
        path: &str,
    ) -> Result<Option<FileState>, StoreError> {
        if self.mode == Mode::Write {
            return self.stat_to_write(agent, path);
        }
        let conn = self.conn_for(agent)?;
        // A read call looks at a file to read its current version, whole or as the newer side
        // of a diff: that content comes in the same round trip, up to a size.
        let (rows, current) = conn.query_both(
            (STAT, &[&agent, &path]),
            (
                "SELECT v.version, v.content FROM files f
                 JOIN versions v ON v.file_id = f.id AND v.version = f.current_version
                 WHERE f.agent_id = $1 AND f.path = $2 AND v.bytes <= $3",
                &[&agent, &path, &CURRENT_AHEAD_BYTES],
            ),
        )?;
        self.current_ahead = current
            .first()
            .map(|r| Ok::<_, StoreError>((path.to_owned(), to_u64(col(r, 0)?), text(col(r, 1)?)?)))
            .transpose()?;
        file_state(&rows, 0)
    }

    /// A write call's look at a file, before it stores a version and checks the agent's quota:
    /// the counters come with it. The call's first look is answered from what this instance
    /// remembers of the agent's last write where it can, under the check that the agent's row
    /// is still the one that write left ([`super::super::remembered`]); it is sent with the
    /// call's next statement or its commit, which fails if it does not hold.
    fn stat_to_write(&mut self, agent: &str, path: &str) -> Result<Option<FileState>, StoreError> {
        let first = self.agent.is_none();
        if first && let Some((known, file)) = self.remembered.recall(agent, path) {
            self.expect_agent(agent, &known.row)?;
            self.usage_ahead = Some(known.usage);
            self.track = Track::Looked(Look {
                path: path.to_owned(),
                file: Some(file.clone()),
                row: Some(known.row),
            });
            return Ok(Some(file));
        }
        let rows = self.conn_for(agent)?.query(WRITE_STAT, &[&agent, &path])?;
        self.usage_ahead = Some(usage_of(rows.first())?);
        let file = file_state(&rows, USAGE_COLUMNS + 1)?;
        self.track = if first {
            Track::Looked(Look {
                path: path.to_owned(),
                file: file.clone(),
                row: rows
                    .first()
                    .map(|r| col(r, USAGE_COLUMNS))
                    .transpose()?
                    .flatten(),
            })
        } else {
            Track::Other
        };
        Ok(file)
    }

    /// A write call's first look, when it is at the agent's counters (an append's, before it
    /// checks the quota): answered from what this instance remembers of the agent where it can,
    /// under the check, as [`PgTxn::stat_to_write`] answers a look at a file; otherwise asked
    /// with the row's version, so that the commit can tell whether the files remembered from
    /// before still hold.
    fn usage_to_write(&mut self, agent: &str) -> Result<Usage, StoreError> {
        if let Some(known) = self.remembered.agent(agent) {
            self.expect_agent(agent, &known.row)?;
            self.track = Track::Counters(Some(known.row), Logs::Untouched);
            return Ok(known.usage);
        }
        let row = self.conn_for(agent)?.query_opt(AGENT_ROW, &[&agent])?;
        let found = row.as_ref().map(|r| col(r, USAGE_COLUMNS)).transpose()?;
        self.track = Track::Counters(found, Logs::Untouched);
        usage_of(row.as_ref())
    }

    /// Holds back, for the call's next statement or its commit, the check that the agent's
    /// row is still at `row`, as this instance remembers it.
    fn expect_agent(&mut self, agent: &str, row: &str) -> Result<(), StoreError> {
        self.recalled = true;
        self.conn_for(agent)?.defer(
            EXPECT_AGENT,
            vec![Box::new(agent.to_owned()), Box::new(row.to_owned())],
        )
    }

    pub(super) fn read_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
    ) -> Result<Option<String>, StoreError> {
        if let Some((ahead_path, ahead_version, _)) = &self.current_ahead
            && (ahead_path.as_str(), *ahead_version) == (path, version)
        {
            return Ok(self.current_ahead.take().map(|(_, _, content)| content));
        }
        let row = self.conn_for(agent)?.query_opt(
            "SELECT v.content FROM versions v JOIN files f ON f.id = v.file_id
             WHERE f.agent_id = $1 AND f.path = $2 AND v.version = $3",
            &[&agent, &path, &to_i64(version).unwrap_or(-1)],
        )?;
        row.map(|r| text(col(&r, 0)?)).transpose()
    }

    pub(super) fn put_version(
        &mut self,
        agent: &str,
        path: &str,
        version: u64,
        content: &str,
    ) -> Result<(), StoreError> {
        let (v, bytes) = (to_i64(version)?, to_i64(content.len() as u64)?);
        let sha256 = content_hash(content);
        self.track = match std::mem::take(&mut self.track) {
            Track::Looked(look) if look.path == path => {
                let stored = VersionInfo {
                    version,
                    bytes: content.len() as u64,
                    created_at: String::new(),
                    sha256: sha256.clone(),
                };
                Track::Stored(look, stored)
            }
            _ => Track::Other,
        };
        let params: Vec<Owned> = vec![
            Box::new(agent.to_owned()),
            Box::new(path.to_owned()),
            Box::new(v),
            Box::new(bytes),
            Box::new(content.as_bytes().to_vec()),
            Box::new(sha256),
            Box::new(self.operation_here(agent)),
            Box::new(0_i64),
        ];
        self.conn_for(agent)?.defer(PUT_VERSION, params)?;
        self.version_held = Some((path.to_owned(), 0));
        Ok(())
    }

    pub(super) fn prune_versions(
        &mut self,
        agent: &str,
        path: &str,
        keep_from: u64,
    ) -> Result<(), StoreError> {
        // Right after the version it stores, while that statement is still held back, the
        // pruning goes into it: the agent's row is then updated once, not twice (a write took
        // 0.90x as long, in turns). Two prunes of a path keep from the later version.
        let carried = match &self.version_held {
            Some((held, kept_from)) if held == path => Some(*kept_from),
            _ => None,
        };
        let keep_from = keep_from.max(carried.unwrap_or(0));
        let value = to_i64(keep_from)?;
        if carried.is_some()
            && self
                .conn_for(agent)?
                .amend_last(PUT_VERSION, PUT_VERSION_KEEP_FROM, Box::new(value))
        {
            self.version_held = Some((path.to_owned(), keep_from));
            return Ok(());
        }
        // The dropped versions and their summaries; the bytes freed leave the agent's counter
        // in the same statement, sent with the next one.
        self.track = Track::Other;
        let params: Vec<Owned> = vec![
            Box::new(agent.to_owned()),
            Box::new(path.to_owned()),
            Box::new(value),
        ];
        self.conn_for(agent)?.defer(
            concat!(
                "WITH ",
                prune_below!("$3"),
                "
                 UPDATE agents SET total_bytes = total_bytes - (SELECT COALESCE(sum(bytes), 0) FROM gone)
                 WHERE agent_id = $1"
            ),
            params,
        )
    }

    pub(super) fn delete_file(&mut self, agent: &str, path: &str) -> Result<bool, StoreError> {
        let Some((id, _, Some(_))) = self.file_row(agent, path)? else {
            return Ok(false);
        };
        self.track = Track::Other;
        let conn = self.conn_for(agent)?;
        // The versions and their summaries, the current state and the file's search document
        // in one statement.
        let freed: i64 = col(
            &conn.query_one(
                "WITH gone AS (DELETE FROM versions WHERE file_id = $1 RETURNING bytes),
                      unsummarised AS (DELETE FROM summaries WHERE file_id = $1),
                      cleared AS (UPDATE files SET current_version = NULL, current_bytes = NULL,
                                                   unindexed = false
                                  WHERE id = $1),
                      undocumented AS (DELETE FROM search_docs
                                       WHERE agent_id = $2 AND path = $3 AND NOT is_log)
                 SELECT COALESCE(sum(bytes), 0)::bigint FROM gone",
                &[&id, &agent, &path],
            )?,
            0,
        )?;
        self.bump(
            agent,
            Tally {
                bytes: -freed,
                files: -1,
                ..Tally::default()
            },
        )?;
        Ok(true)
    }

    pub(super) fn list_files(
        &mut self,
        agent: &str,
        prefix: &str,
    ) -> Result<Vec<FileMeta>, StoreError> {
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

    pub(super) fn append_log(
        &mut self,
        agent: &str,
        path: &str,
        entry: &LogValue,
        bytes: u64,
    ) -> Result<u64, StoreError> {
        let (is_text, body) = log_body(entry);
        let bytes = to_i64(bytes)?;
        let log = match self.recalled_log(agent, path) {
            // Under the check the call holds back, the log is as this instance left it: the
            // entry's id is the next one, and the log's row moves with the next statement.
            Some(known) => {
                self.conn_for(agent)?.defer(
                    NEXT_ENTRY,
                    vec![Box::new(agent.to_owned()), Box::new(path.to_owned())],
                )?;
                LogState {
                    last_id: known.last_id.saturating_add(1),
                    entries: known.entries.saturating_add(1),
                    retention: known.retention,
                }
            }
            None => {
                let row = self.conn_for(agent)?.query_one(
                    concat!(
                        next_entry!(),
                        " RETURNING last_id, entries, keep_last, max_age_seconds"
                    ),
                    &[&agent, &path],
                )?;
                logs::state_of(Some((
                    col(&row, 0)?,
                    col(&row, 1)?,
                    col(&row, 2)?,
                    col(&row, 3)?,
                )))
            }
        };
        let id = to_i64(log.last_id)?;
        let conn = self.conn_for(agent)?;
        // The entry, its document and the counters answer nothing: they go with the call's
        // next statement, or its commit.
        conn.defer(
            "INSERT INTO log_entries (agent_id, path, id, is_text, body, bytes, sha256)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            vec![
                Box::new(agent.to_owned()),
                Box::new(path.to_owned()),
                Box::new(id),
                Box::new(is_text),
                Box::new(body.as_bytes().to_vec()),
                Box::new(bytes),
                Box::new(content_hash(body)),
            ],
        )?;
        Self::index_log_entry(conn, agent, path, id, body)?;
        self.bump(
            agent,
            Tally {
                bytes,
                log_entries: 1,
                ..Tally::default()
            },
        )?;
        if let Track::Counters(_, logs) = &mut self.track {
            *logs = match logs {
                Logs::Untouched => Logs::Appended(path.to_owned(), log),
                _ => Logs::Changed,
            };
        }
        self.log_ahead = Some((path.to_owned(), log));
        Ok(to_u64(id))
    }

    /// The state of `agent`'s log at `path` as this instance remembers it, for a call whose
    /// look at the agent's counters was answered from memory (and so holds back the check
    /// that makes the memory true) and that has touched no log since.
    fn recalled_log(&self, agent: &str, path: &str) -> Option<LogState> {
        match &self.track {
            Track::Counters(_, Logs::Untouched) if self.recalled => {
                self.remembered.log(agent, path)
            }
            _ => None,
        }
    }

    /// Marks the call's change to a log as one not remembered.
    fn logs_changed(&mut self) {
        if let Track::Counters(_, logs) = &mut self.track {
            *logs = Logs::Changed;
        }
    }

    pub(super) fn read_log(
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

    pub(super) fn usage(&mut self, agent: &str) -> Result<Usage, StoreError> {
        let mut usage = match self.usage_ahead.take() {
            Some(usage) => usage,
            None if self.mode == Mode::Write && self.agent.is_none() => {
                self.usage_to_write(agent)?
            }
            None => usage_of(self.conn_for(agent)?.query_opt(USAGE, &[&agent])?.as_ref())?,
        };
        // The agent's reads not yet written ([`crate::storage::uncounted`]).
        usage.total_operations += self.uncounted.of(agent);
        Ok(usage)
    }

    pub(super) fn cached_summary(
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

    pub(super) fn put_summary(
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
        Self::store_summary(self.conn_for(agent)?, &summary)
    }

    pub(super) fn log_info(&mut self, agent: &str, path: &str) -> Result<LogState, StoreError> {
        if let Some((appended, state)) = self.log_ahead.take()
            && appended == path
        {
            return Ok(state);
        }
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

    pub(super) fn set_log_retention(
        &mut self,
        agent: &str,
        path: &str,
        retention: Retention,
    ) -> Result<(), StoreError> {
        let keep = retention.keep_last.map(to_i64).transpose()?;
        let age = retention.max_age_seconds.map(to_i64).transpose()?;
        self.logs_changed();
        self.conn_for(agent)?.defer(
            "INSERT INTO logs (agent_id, path, last_id, keep_last, max_age_seconds)
             VALUES ($1, $2, 0, $3, $4)
             ON CONFLICT (agent_id, path) DO UPDATE SET keep_last = $3, max_age_seconds = $4",
            vec![
                Box::new(agent.to_owned()),
                Box::new(path.to_owned()),
                Box::new(keep),
                Box::new(age),
            ],
        )
    }

    pub(super) fn trim_log(
        &mut self,
        agent: &str,
        path: &str,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StoreError> {
        let age = older_than_seconds.map(to_i64).transpose()?;
        let before = to_i64(before)?;
        self.logs_changed();
        let conn = self.conn_for(agent)?;
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
        self.bump(
            agent,
            Tally {
                bytes: -bytes,
                log_entries: -entries,
                ..Tally::default()
            },
        )?;
        Ok(to_u64(entries))
    }

    pub(super) fn search(
        &mut self,
        agent: &str,
        terms: &[String],
        match_all: bool,
        prefix: &str,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StoreError> {
        let Some(query) = search::query(agent, terms, match_all)? else {
            return Ok(Vec::new());
        };
        self.matching(agent, &query, prefix, (i64::from(limit), i64::from(offset)))?
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
}

/// The largest current version a read call's look at a file brings with it: most files an
/// agent reads back are far smaller, and a larger one is not worth sending when the call may
/// not read it.
const CURRENT_AHEAD_BYTES: i64 = 256 << 10;

/// An agent's counters, in [`usage_of`]'s order.
macro_rules! counters {
    () => {
        "total_bytes, file_count, log_entry_count, total_operations"
    };
}

/// An agent's counters: no row, an agent that has never changed anything.
const USAGE: &str = concat!("SELECT ", counters!(), " FROM agents WHERE agent_id = $1");

/// How many columns [`counters!`] takes at the start of a row.
const USAGE_COLUMNS: usize = 4;

/// The check that agent `$1`'s row is still the version `$2` this instance remembers
/// ([`super::super::remembered`]); fails with `SPST1` if not.
const EXPECT_AGENT: &str = "SELECT scratchpad_expect_agent($1, $2)";

/// The agent's counters, its row's version (`xmin`), and the transaction's time: what a write
/// call left, asked in its commit's round trip, for this instance to remember for the agent's
/// next call (the time is the one the call's versions carry); and a write call's first look
/// when it is at the counters.
pub(super) const AGENT_ROW: &str = concat!(
    "SELECT ",
    counters!(),
    ", xmin::text, scratchpad_rfc3339(now()) FROM agents WHERE agent_id = $1"
);

/// A file's row and its kept versions, oldest first: no rows, never written; one row of NULL
/// versions, deleted.
macro_rules! stat {
    () => {
        "SELECT f.last_version, v.version, v.bytes, scratchpad_rfc3339(v.created_at), v.sha256
         FROM files f LEFT JOIN versions v ON v.file_id = f.id
         WHERE f.agent_id = $1 AND f.path = $2"
    };
}

/// [`stat!`] in order, for a read call.
const STAT: &str = concat!(stat!(), " ORDER BY v.version");

/// [`stat!`] for a write call, each row led by the agent's counters ([`counters!`]) and its
/// row's version (`xmin`): the quota check that follows a write's look at its file needs
/// them, and one statement is one execution fewer than two in the same round trip (about
/// 0.02 ms of a write). There is always a row: one of NULL file columns for a file never
/// written, of NULL counters for an agent without a row yet.
const WRITE_STAT: &str = concat!(
    "SELECT a.*, s.*
     FROM (SELECT 1) AS one
     LEFT JOIN (SELECT ",
    counters!(),
    ", xmin::text FROM agents WHERE agent_id = $1) AS a ON true
     LEFT JOIN (",
    stat!(),
    ") AS s ON true
     ORDER BY s.version"
);

/// The file's state in `rows` of [`stat!`]'s columns from column `at` on.
fn file_state(rows: &[Row], at: usize) -> Result<Option<FileState>, StoreError> {
    let Some(last_version) = rows
        .first()
        .map(|r| col::<Option<i64>>(r, at))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    let mut kept = Vec::with_capacity(rows.len());
    for r in rows {
        let Some(version) = col::<Option<i64>>(r, at + 1)? else {
            continue;
        };
        kept.push(VersionInfo {
            version: to_u64(version),
            bytes: to_u64(col(r, at + 2)?),
            created_at: col(r, at + 3)?,
            sha256: col(r, at + 4)?,
        });
    }
    Ok(Some(FileState {
        last_version: to_u64(last_version),
        kept,
    }))
}

/// The counters at the start of `row` ([`counters!`]); all 0 without a row, or where they
/// are NULL (an agent with no row yet).
fn usage_of(row: Option<&Row>) -> Result<Usage, StoreError> {
    let n = |i| -> Result<u64, StoreError> {
        let value = row.map(|r| col::<Option<i64>>(r, i)).transpose()?.flatten();
        Ok(value.map_or(0, to_u64))
    };
    Ok(Usage {
        total_bytes: n(0)?,
        file_count: n(1)?,
        log_entry_count: n(2)?,
        total_operations: n(3)?,
    })
}

/// The agent as [`AGENT_ROW`]'s `row` found it, and the transaction's time.
pub(super) fn agent_row(row: &Row) -> Result<(Agent, String), StoreError> {
    let agent = Agent {
        usage: usage_of(Some(row))?,
        row: col(row, USAGE_COLUMNS)?,
    };
    Ok((agent, col(row, USAGE_COLUMNS + 1)?))
}
