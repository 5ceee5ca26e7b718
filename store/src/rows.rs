//! Files, their versions and summaries, log entries, and the agents' usage counters.
//!
//! Every function here is one step of a tool call inside the caller's transaction. The
//! counters in `agents` change in the same transaction as the rows they count, so no call
//! ever re-scans an agent's data to enforce a quota; prefix matching compares `substr`, never
//! `LIKE`, so `_` and `%` are literal.

use crate::{Error, NOW, logs, to_i64, to_u64};
use rusqlite::{Connection, OptionalExtension, params};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{FileState, Retention, VersionInfo};
use scratchpad_guest::ports::content_hash;
use scratchpad_guest::{FileMeta, LogEntry, LogValue, Usage};
use std::cell::RefCell;

/// A change to an agent's counters: each field is added (negative to take away).
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    /// Bytes stored: kept versions and log entries.
    pub bytes: i64,
    /// Files that exist.
    pub files: i64,
    /// Log entries.
    pub log_entries: i64,
    /// Tool calls that succeeded.
    pub operations: i64,
    /// Changes to the agent's files, versions and logs: its generation, moved on by every
    /// function here that makes one. A write call that read the agent's data before it took
    /// the write lock compares the generation it read with the one under the lock, so it
    /// never writes from a stale read; the search index compares it with the one it last
    /// caught up to ([`crate::index`]). Counting operations, and caching a summary (which
    /// neither a write call nor the index reads), leave it as it is.
    pub changes: i64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, more: Self) {
        self.bytes += more.bytes;
        self.files += more.files;
        self.log_entries += more.log_entries;
        self.operations += more.operations;
        self.changes += more.changes;
    }
}

/// What one call has changed of its agents' counters and not yet written. The rows a call
/// changes are written as it goes; the counters once, when it commits ([`Pending::write`]):
/// a `write_file` changes its agent's counters three times (the version, the prune, the
/// operation), and would otherwise update the agent's row as often. Within the call, what
/// reads the counters adds these ([`usage`]). Dropped unwritten, they go with the call.
#[derive(Debug, Default)]
pub struct Pending(RefCell<Vec<(String, Tally)>>);

impl Pending {
    /// Adds `change` to `agent`'s pending counters.
    pub fn add(&self, agent: &str, change: Tally) {
        let mut pending = self.0.borrow_mut();
        match pending.iter_mut().find(|(a, _)| a == agent) {
            Some((_, tally)) => *tally += change,
            None => pending.push((agent.to_owned(), change)),
        }
    }

    /// What is pending for `agent`.
    fn of(&self, agent: &str) -> Tally {
        let pending = self.0.borrow();
        pending
            .iter()
            .find_map(|(a, tally)| (a == agent).then_some(*tally))
            .unwrap_or_default()
    }

    /// Counts the calls this commit settles, then writes every agent's pending counters:
    /// `owed` operations kept back by earlier reads, and one for `agent`, the committing
    /// call, when it counts itself. The server and the self-contained component both commit
    /// through here, so a count kept back is settled the same way in each.
    pub fn write_with_operations<'a>(
        &self,
        conn: &Connection,
        owed: impl IntoIterator<Item = (&'a str, u64)>,
        agent: Option<&str>,
    ) -> Result<(), Error> {
        let operations = |operations: u64| Tally {
            // More than i64::MAX calls cannot have been made; the count saturates rather
            // than fail a commit.
            operations: i64::try_from(operations).unwrap_or(i64::MAX),
            ..Tally::default()
        };
        for (owed_agent, n) in owed {
            self.add(owed_agent, operations(n));
        }
        if let Some(agent) = agent {
            self.add(agent, operations(1));
        }
        self.write(conn)
    }

    /// Writes every agent's pending counters (one statement an agent), creating its row on
    /// first use, and forgets them.
    pub fn write(&self, conn: &Connection) -> Result<(), Error> {
        self.0
            .take()
            .iter()
            .try_for_each(|(agent, change)| count(conn, agent, *change))
    }
}

/// Adds `change` to `agent`'s counters, creating its row on first use.
fn count(conn: &Connection, agent: &str, change: Tally) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO agents
           (agent_id, total_bytes, file_count, log_entry_count, total_operations, generation)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (agent_id) DO UPDATE SET
           total_bytes = total_bytes + ?2, file_count = file_count + ?3,
           log_entry_count = log_entry_count + ?4, total_operations = total_operations + ?5,
           generation = generation + ?6",
    )?
    .execute(params![
        agent,
        change.bytes,
        change.files,
        change.log_entries,
        change.operations,
        change.changes
    ])?;
    Ok(())
}

/// Sets a log's retention (see [`logs::set_retention`]): a change of the agent's logs.
pub fn set_log_retention(
    conn: &Connection,
    pending: &Pending,
    agent: &str,
    path: &str,
    retention: Retention,
) -> Result<(), Error> {
    logs::set_retention(conn, agent, path, retention)?;
    let change = Tally {
        changes: 1,
        ..Tally::default()
    };
    pending.add(agent, change);
    Ok(())
}

/// An import replaces an agent's rows wholesale: a new lineage of its data. Its generation
/// then jumps to the next multiple of this, past any number of ordinary changes (one or a
/// few a write), so that what reads the generation (the search index) can tell a new
/// lineage from changes to the old one.
pub const LINEAGE: i64 = 1 << 40;

/// The lineage `generation` belongs to.
pub fn lineage(generation: i64) -> i64 {
    generation / LINEAGE
}

/// The first generation of the lineage after `generation`'s: always above it.
pub fn next_lineage(generation: i64) -> i64 {
    (lineage(generation) + 1) * LINEAGE
}

/// The agent's generation (0 before its first change): see [`Tally::changes`].
pub fn generation(conn: &Connection, agent: &str) -> Result<i64, Error> {
    let found = conn
        .prepare_cached("SELECT generation FROM agents WHERE agent_id = ?1")?
        .query_row([agent], |r| r.get(0))
        .optional()?;
    Ok(found.unwrap_or(0))
}

/// What the `files` row of a path ever written holds.
#[derive(Clone, Copy, Debug)]
pub struct FileRow {
    /// The row's id, which versions and summaries refer to.
    pub id: i64,
    /// The highest version number the path has had.
    pub last_version: u64,
    /// The current version; none once the file is deleted.
    pub current: Option<u64>,
}

/// The row of a path, or none if the agent never wrote it.
pub fn file_row(conn: &Connection, agent: &str, path: &str) -> Result<Option<FileRow>, Error> {
    conn.prepare_cached(
        "SELECT id, last_version, current_version FROM files WHERE agent_id = ?1 AND path = ?2",
    )?
    .query_row(params![agent, path], |r| {
        Ok(FileRow {
            id: r.get(0)?,
            last_version: to_u64(r.get(1)?),
            current: r.get::<_, Option<i64>>(2)?.map(to_u64),
        })
    })
    .optional()
    .map_err(Error::from)
}

/// The statement behind [`stat_file`]: answered from the files' and the versions' indexes,
/// never from a version's row (see `versions_meta` in [`crate::schema`]).
pub(crate) const STAT_FILE: &str =
    "SELECT f.last_version, v.version, v.bytes, v.created_at, v.sha256
     FROM files f LEFT JOIN versions v ON v.file_id = f.id
     WHERE f.agent_id = ?1 AND f.path = ?2 ORDER BY v.version";

/// See `stat-file` in the WIT. One statement, the file's row joined to its kept versions:
/// every read stats its file first, and a second statement for the versions was a
/// microsecond of it.
pub fn stat_file(conn: &Connection, agent: &str, path: &str) -> Result<Option<FileState>, Error> {
    let mut statement = conn.prepare_cached(STAT_FILE)?;
    let mut rows = statement.query(params![agent, path])?;
    let mut state = None;
    while let Some(r) = rows.next()? {
        let state = state.get_or_insert(FileState {
            last_version: to_u64(r.get(0)?),
            kept: Vec::new(),
        });
        if let Some(version) = r.get::<_, Option<i64>>(1)? {
            state.kept.push(VersionInfo {
                version: to_u64(version),
                bytes: to_u64(r.get(2)?),
                created_at: r.get(3)?,
                sha256: r.get(4)?,
            });
        }
    }
    Ok(state)
}

/// The statement behind [`read_version`]: a join on bound values (see [`crate::keep_statements`]).
pub(crate) const READ_VERSION: &str =
    "SELECT v.content FROM versions v JOIN files f ON f.id = v.file_id
     WHERE f.agent_id = ?1 AND f.path = ?2 AND v.version = ?3";

/// See `read-version` in the WIT.
pub fn read_version(
    conn: &Connection,
    agent: &str,
    path: &str,
    version: u64,
) -> Result<Option<String>, Error> {
    conn.prepare_cached(READ_VERSION)?
        .query_row(params![agent, path, to_i64(version).unwrap_or(-1)], |r| {
            r.get(0)
        })
        .optional()
        .map_err(Error::from)
}

/// See `put-version` in the WIT: stores `content` as the current version and indexes it.
/// `existed` says whether the file exists now (a new file counts towards the files).
pub fn put_version(
    conn: &Connection,
    pending: &Pending,
    agent: &str,
    path: &str,
    version: u64,
    content: &str,
    existed: bool,
) -> Result<(), Error> {
    let (v, bytes) = (to_i64(version)?, to_i64(content.len() as u64)?);
    let id: i64 = conn
        .prepare_cached(&format!(
            "INSERT INTO files (agent_id, path, last_version, current_version, current_bytes, updated_at)
             VALUES (?1, ?2, ?3, ?3, ?4, {NOW})
             ON CONFLICT (agent_id, path) DO UPDATE SET last_version = ?3, current_version = ?3,
               current_bytes = ?4, updated_at = excluded.updated_at
             RETURNING id"
        ))?
        .query_row(params![agent, path, v, bytes], |r| r.get(0))?;
    conn.prepare_cached(&format!(
        "INSERT INTO versions (file_id, version, bytes, content, created_at, sha256)
         VALUES (?1, ?2, ?3, ?4, {NOW}, ?5)"
    ))?
    .execute(params![id, v, bytes, content, content_hash(content)])?;
    let files = i64::from(!existed);
    pending.add(
        agent,
        Tally {
            bytes,
            files,
            changes: 1,
            ..Tally::default()
        },
    );
    Ok(())
}

/// See `prune-versions` in the WIT: drops the versions of `path` below `keep_from`, and their
/// summaries. Each statement finds the file's row itself, and the versions say what they
/// freed as they go: a prune that drops nothing (a path never written, or one with no
/// version that old) changes nothing, its counters and generation included.
pub fn prune_versions(
    conn: &Connection,
    pending: &Pending,
    agent: &str,
    path: &str,
    keep_from: u64,
) -> Result<(), Error> {
    const OF_THE_FILE: &str =
        "file_id = (SELECT id FROM files WHERE agent_id = ?1 AND path = ?2) AND version < ?3";
    let keep_from = to_i64(keep_from)?;
    let (dropped, freed) = drop_versions(conn, OF_THE_FILE, params![agent, path, keep_from])?;
    if dropped == 0 {
        return Ok(());
    }
    conn.prepare_cached(&format!("DELETE FROM summaries WHERE {OF_THE_FILE}"))?
        .execute(params![agent, path, keep_from])?;
    pending.add(
        agent,
        Tally {
            bytes: -freed,
            changes: 1,
            ..Tally::default()
        },
    );
    Ok(())
}

/// Drops the versions that `filter` (a `WHERE` clause over `versions`, with `params`) picks:
/// how many went, and the bytes they freed, told by the delete itself as it goes.
fn drop_versions(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> Result<(usize, i64), Error> {
    let mut delete = conn.prepare_cached(&format!(
        "DELETE FROM versions WHERE {filter} RETURNING bytes"
    ))?;
    let mut gone = delete.query(params)?;
    let (mut dropped, mut freed) = (0, 0_i64);
    while let Some(row) = gone.next()? {
        dropped += 1;
        freed += row.get::<_, i64>(0)?;
    }
    Ok((dropped, freed))
}

/// See `delete-file` in the WIT. Returns whether the file existed.
pub fn delete_file(
    conn: &Connection,
    pending: &Pending,
    agent: &str,
    path: &str,
) -> Result<bool, Error> {
    let Some(FileRow {
        id,
        current: Some(_),
        ..
    }) = file_row(conn, agent, path)?
    else {
        return Ok(false);
    };
    let (_, freed) = drop_versions(conn, "file_id = ?1", [id])?;
    for sql in [
        "DELETE FROM summaries WHERE file_id = ?1",
        "UPDATE files SET current_version = NULL, current_bytes = NULL WHERE id = ?1",
    ] {
        conn.prepare_cached(sql)?.execute([id])?;
    }
    let change = Tally {
        bytes: -freed,
        files: -1,
        changes: 1,
        ..Tally::default()
    };
    pending.add(agent, change);
    Ok(true)
}

/// See `list-files` in the WIT.
pub fn list_files(conn: &Connection, agent: &str, prefix: &str) -> Result<Vec<FileMeta>, Error> {
    // `path >= ?2` lets the (agent_id, path) index start at the prefix; `substr` decides.
    conn.prepare_cached(
        "SELECT path, current_version, current_bytes, updated_at FROM files
         WHERE agent_id = ?1 AND current_version IS NOT NULL
           AND path >= ?2 AND substr(path, 1, length(?2)) = ?2
         ORDER BY path",
    )?
    .query_map(params![agent, prefix], |r| {
        Ok(FileMeta {
            path: r.get(0)?,
            version: to_u64(r.get(1)?),
            bytes: to_u64(r.get(2)?),
            updated_at: r.get(3)?,
        })
    })?
    .collect::<Result<_, _>>()
    .map_err(Error::from)
}

/// See `append-log` in the WIT: stores the entry's `body` (a string unescaped when
/// `is_text`, other JSON as compact text), and returns its id. Its size is the
/// body's length.
pub fn append_log(
    conn: &Connection,
    pending: &Pending,
    agent: &str,
    path: &str,
    is_text: bool,
    body: &str,
) -> Result<u64, Error> {
    let bytes = to_i64(body.len() as u64)?;
    let id = logs::next_id(conn, agent, path)?;
    conn.prepare_cached(&format!(
        "INSERT INTO log_entries (agent_id, path, id, is_text, body, bytes, created_at, sha256)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, {NOW}, ?7)"
    ))?
    .execute(params![
        agent,
        path,
        to_i64(id)?,
        is_text,
        body,
        bytes,
        content_hash(body)
    ])?;
    let change = Tally {
        bytes,
        log_entries: 1,
        changes: 1,
        ..Tally::default()
    };
    pending.add(agent, change);
    Ok(id)
}

/// See `read-log` in the WIT.
pub fn read_log(
    conn: &Connection,
    agent: &str,
    path: &str,
    after: u64,
    limit: u32,
) -> Result<Vec<LogEntry>, Error> {
    conn.prepare_cached(
        "SELECT id, is_text, body, created_at FROM log_entries
         WHERE agent_id = ?1 AND path = ?2 AND id > ?3 ORDER BY id LIMIT ?4",
    )?
    .query_map(
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
    .collect::<Result<_, _>>()
    .map_err(Error::from)
}

/// See `trim-log` in the WIT: removes the entries and follows with the counters. Returns
/// how many were removed.
pub fn trim_log(
    conn: &Connection,
    pending: &Pending,
    agent: &str,
    path: &str,
    before: u64,
    older_than_seconds: Option<u64>,
) -> Result<u64, Error> {
    let (entries, bytes) = logs::trim(conn, agent, path, before, older_than_seconds)?;
    let change = Tally {
        bytes: -to_i64(bytes)?,
        log_entries: -to_i64(entries)?,
        changes: 1,
        ..Tally::default()
    };
    pending.add(agent, change);
    Ok(entries)
}

/// The agent's counters: as stored (all zero for an agent never seen), and what the call
/// has changed of them and not yet written.
pub fn usage(conn: &Connection, pending: &Pending, agent: &str) -> Result<Usage, Error> {
    let mut counters = conn
        .prepare_cached(
            "SELECT total_bytes, file_count, log_entry_count, total_operations FROM agents WHERE agent_id = ?1",
        )?
        .query_row([agent], |r| {
            Ok(Tally {
                bytes: r.get(0)?,
                files: r.get(1)?,
                log_entries: r.get(2)?,
                operations: r.get(3)?,
                changes: 0,
            })
        })
        .optional()?
        .unwrap_or_default();
    counters += pending.of(agent);
    Ok(Usage {
        total_bytes: to_u64(counters.bytes),
        file_count: to_u64(counters.files),
        log_entry_count: to_u64(counters.log_entries),
        total_operations: to_u64(counters.operations),
    })
}

/// See `cached-summary` in the WIT.
pub fn cached_summary(
    conn: &Connection,
    agent: &str,
    path: &str,
    version: u64,
    model: &str,
) -> Result<Option<String>, Error> {
    conn.prepare_cached(
        "SELECT s.summary FROM summaries s JOIN files f ON f.id = s.file_id
         WHERE f.agent_id = ?1 AND f.path = ?2 AND s.version = ?3 AND s.model = ?4",
    )?
    .query_row(
        params![agent, path, to_i64(version).unwrap_or(-1), model],
        |r| r.get(0),
    )
    .optional()
    .map_err(Error::from)
}

/// A summary to cache: of which version of which file, by which model.
#[derive(Clone, Debug)]
pub struct Summary {
    /// The agent.
    pub agent: String,
    /// The file.
    pub path: String,
    /// The version summarised.
    pub version: u64,
    /// The model that wrote it.
    pub model: String,
    /// The summary.
    pub summary: String,
}

impl Summary {
    /// A summary of `version` of `agent`'s `path` by `model`.
    pub fn new(agent: &str, path: &str, version: u64, model: &str, summary: &str) -> Self {
        Self {
            agent: agent.into(),
            path: path.into(),
            version,
            model: model.into(),
            summary: summary.into(),
        }
    }
}

/// Caches a summary if its version is still kept; returns whether it was.
pub fn store_summary(conn: &Connection, s: &Summary) -> Result<bool, Error> {
    let stored = conn
        .prepare_cached(&format!(
            "INSERT OR REPLACE INTO summaries (file_id, version, model, summary, created_at)
             SELECT f.id, v.version, ?4, ?5, {NOW}
             FROM files f JOIN versions v ON v.file_id = f.id
             WHERE f.agent_id = ?1 AND f.path = ?2 AND v.version = ?3"
        ))?
        .execute(params![
            s.agent,
            s.path,
            to_i64(s.version).unwrap_or(-1),
            s.model,
            s.summary
        ])?;
    Ok(stored == 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema;

    fn store() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        schema::migrate(&conn).unwrap();
        conn
    }

    fn agents(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM agents", [], |r| r.get(0))
            .unwrap()
    }

    /// Runs `step` as one call: its counters written when it ends.
    fn call(conn: &Connection, step: impl FnOnce(&Pending)) {
        let pending = Pending::default();
        step(&pending);
        pending.write(conn).unwrap();
    }

    fn stored(conn: &Connection, agent: &str) -> Usage {
        usage(conn, &Pending::default(), agent).unwrap()
    }

    /// A call's changes to the counters are seen by the call at once, and reach the agent's
    /// row in one statement when it is written; a call dropped unwritten leaves the row.
    #[test]
    fn a_calls_counters_are_seen_at_once_and_written_once() {
        let conn = store();
        call(&conn, |p| {
            put_version(&conn, p, "a", "f", 1, "one", false).unwrap()
        });
        let before = conn.total_changes();
        let pending = Pending::default();
        put_version(&conn, &pending, "a", "f", 2, "three", true).unwrap();
        prune_versions(&conn, &pending, "a", "f", 2).unwrap();
        pending.add(
            "a",
            Tally {
                operations: 1,
                ..Tally::default()
            },
        );
        assert_eq!(stored(&conn, "a").total_bytes, 3, "nothing written yet");
        let seen = usage(&conn, &pending, "a").unwrap();
        assert_eq!(
            (seen.total_bytes, seen.file_count, seen.total_operations),
            (5, 1, 1),
            "the call sees its own changes"
        );
        let rows = conn.total_changes() - before;
        pending.write(&conn).unwrap();
        assert_eq!(conn.total_changes() - before - rows, 1, "one upsert");
        assert_eq!(stored(&conn, "a"), seen);
        assert_eq!(usage(&conn, &pending, "a").unwrap(), seen, "written once");

        let dropped = Pending::default();
        put_version(&conn, &dropped, "a", "g", 1, "gone", false).unwrap();
        drop(dropped);
        assert_eq!(stored(&conn, "a"), seen);
    }

    /// A prune frees the bytes of the versions it drops, and their summaries, and moves the
    /// agent's generation; one that drops nothing changes nothing, not even for an agent or a
    /// path never written.
    #[test]
    fn a_prune_counts_what_it_drops_and_a_prune_of_nothing_changes_nothing() {
        let conn = store();
        call(&conn, |p| {
            prune_versions(&conn, p, "nobody", "f", 5).unwrap()
        });
        assert_eq!(agents(&conn), 0, "no row for an agent never written");

        call(&conn, |p| {
            put_version(&conn, p, "a", "f", 1, "one", false).unwrap()
        });
        call(&conn, |p| {
            put_version(&conn, p, "a", "f", 2, "three", true).unwrap()
        });
        call(&conn, |p| {
            put_version(&conn, p, "b", "f", 1, "another agent's", false).unwrap();
        });
        store_summary(&conn, &Summary::new("a", "f", 1, "m", "short")).unwrap();
        let before = (
            stored(&conn, "a").total_bytes,
            generation(&conn, "a").unwrap(),
        );
        assert_eq!(before.0, 8);

        call(&conn, |p| prune_versions(&conn, p, "a", "f", 1).unwrap());
        call(&conn, |p| {
            prune_versions(&conn, p, "a", "never written", 3).unwrap()
        });
        assert_eq!(
            (
                stored(&conn, "a").total_bytes,
                generation(&conn, "a").unwrap()
            ),
            before,
            "nothing below version 1, and no such path"
        );

        call(&conn, |p| prune_versions(&conn, p, "a", "f", 2).unwrap());
        assert_eq!(
            stored(&conn, "a").total_bytes,
            5,
            "version 1's 3 bytes freed"
        );
        assert_ne!(generation(&conn, "a").unwrap(), before.1);
        assert_eq!(read_version(&conn, "a", "f", 1).unwrap(), None);
        assert_eq!(cached_summary(&conn, "a", "f", 1, "m").unwrap(), None);
        assert_eq!(
            read_version(&conn, "a", "f", 2).unwrap().as_deref(),
            Some("three")
        );
        assert_eq!(
            read_version(&conn, "b", "f", 1).unwrap().as_deref(),
            Some("another agent's")
        );
        assert_eq!(stored(&conn, "b").total_bytes, 15);
    }
}
