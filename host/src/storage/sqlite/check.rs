//! `verify` and `stats`: read-only looks at a whole store.
//!
//! Verification runs in one read transaction, so it sees one consistent state while servers
//! keep writing. It checks what SQLite checks (`integrity_check`, `foreign_key_check`) and then
//! the invariants the tools rely on, each as one query over the whole store: every file's
//! current version is its newest kept one and no kept version is above its last number;
//! recorded sizes equal the bytes stored; no summary outlives its version; the search index
//! holds exactly the current versions and the log entries; and each agent's counters equal
//! what its rows add up to (the counters are what quotas are enforced on).

use super::{SCHEMA_VERSION, map_err};
use crate::storage::StoreError;
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Problems of one kind reported in full; past this many, only the count.
const SHOWN_PER_CHECK: usize = 20;

/// What a store holds, counted from its rows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Agents with a counters row.
    pub agents: u64,
    /// Files that exist now.
    pub files: u64,
    /// Kept versions of all files.
    pub versions: u64,
    /// Log entries of all logs.
    pub log_entries: u64,
    /// Cached summaries.
    pub summaries: u64,
    /// Bytes of every kept version and log entry.
    pub bytes: u64,
}

/// The result of verifying a store.
#[derive(Clone, Debug, Serialize)]
pub struct Verification {
    /// The schema version the store says it has.
    pub schema_version: i64,
    /// What it holds.
    pub counts: Counts,
    /// Every broken invariant found, one line each; empty for a sound store.
    pub problems: Vec<String>,
}

impl Verification {
    /// Whether the store passed.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// One agent's counters, as `stats` shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AgentStats {
    /// The agent.
    pub agent_id: String,
    /// Files that exist now.
    pub files: u64,
    /// Log entries across its logs.
    pub log_entries: u64,
    /// Bytes of every kept version and log entry.
    pub total_bytes: u64,
    /// Successful tool calls (read calls counted by another running process may still be
    /// held in its memory).
    pub total_operations: u64,
}

/// Opens an existing store for reading only: a missing file is an error, not a new store.
pub(super) fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let open_error = |reason: String| StoreError::Open {
        path: path.display().to_string(),
        reason,
    };
    if !path.is_file() {
        return Err(open_error("no such file".into()));
    }
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| open_error(e.to_string()))?;
    conn.busy_timeout(super::BUSY_TIMEOUT).map_err(map_err)?;
    Ok(conn)
}

/// Each agent's counters as its rows add them up: the one definition that `verify` compares
/// with and that `import` writes.
pub(super) const COUNTED: &str = "
    SELECT agent_id,
           sum(bytes) AS total_bytes,
           sum(files) AS file_count,
           sum(entries) AS log_entry_count
    FROM (
        SELECT f.agent_id, v.bytes, 0 AS files, 0 AS entries
            FROM versions v JOIN files f ON f.id = v.file_id
        UNION ALL
        SELECT agent_id, 0, 1, 0 FROM files WHERE current_version IS NOT NULL
        UNION ALL
        SELECT agent_id, bytes, 0, 1 FROM log_entries
    )
    GROUP BY agent_id";

/// The invariant checks: a description and a query whose every row is one violation.
const CHECKS: &[(&str, &str)] = &[
    (
        "a summary whose version is not kept",
        "SELECT f.agent_id || ' ' || f.path || ' v' || s.version
         FROM summaries s JOIN files f ON f.id = s.file_id
         LEFT JOIN versions v ON v.file_id = s.file_id AND v.version = s.version
         WHERE v.version IS NULL",
    ),
    (
        "a file whose current version is not its newest kept one",
        "SELECT f.agent_id || ' ' || f.path || ': current ' || ifnull(f.current_version, 'none')
                || ', newest kept ' || ifnull(max(v.version), 'none')
         FROM files f LEFT JOIN versions v ON v.file_id = f.id
         GROUP BY f.id
         HAVING f.current_version IS NOT max(v.version)",
    ),
    (
        "a file with a kept version above its last version number",
        "SELECT f.agent_id || ' ' || f.path || ': last ' || f.last_version || ', kept ' || max(v.version)
         FROM files f JOIN versions v ON v.file_id = f.id
         GROUP BY f.id HAVING max(v.version) > f.last_version",
    ),
    (
        "a file whose recorded size is not its current version's",
        "SELECT f.agent_id || ' ' || f.path || ': ' || ifnull(f.current_bytes, 'none')
                || ' recorded, ' || v.bytes || ' stored'
         FROM files f JOIN versions v ON v.file_id = f.id AND v.version = f.current_version
         WHERE f.current_bytes IS NOT v.bytes",
    ),
    (
        "a version whose recorded size is not its content's",
        "SELECT f.agent_id || ' ' || f.path || ' v' || v.version
         FROM versions v JOIN files f ON f.id = v.file_id
         WHERE v.bytes != length(CAST(v.content AS BLOB))",
    ),
    (
        "a log entry whose recorded size is not its body's",
        "SELECT agent_id || ' ' || path || ' #' || id
         FROM log_entries WHERE bytes != length(CAST(body AS BLOB))",
    ),
    (
        "a log whose last id is below one of its entries' ids",
        "SELECT e.agent_id || ' ' || e.path || ': last id ' || ifnull(l.last_id, 'none')
                || ', entry #' || max(e.id)
         FROM log_entries e LEFT JOIN logs l ON l.agent_id = e.agent_id AND l.path = e.path
         GROUP BY e.agent_id, e.path
         HAVING l.last_id IS NULL OR max(e.id) > l.last_id",
    ),
    (
        "a log whose entry count is not the entries it holds",
        "SELECT l.agent_id || ' ' || l.path || ': ' || l.entries || ' counted, '
                || (SELECT count(*) FROM log_entries e
                    WHERE e.agent_id = l.agent_id AND e.path = l.path) || ' held'
         FROM logs l
         WHERE l.entries != (SELECT count(*) FROM log_entries e
                             WHERE e.agent_id = l.agent_id AND e.path = l.path)",
    ),
    (
        "a current file version missing from the search index",
        "SELECT f.agent_id || ' ' || f.path || ' v' || f.current_version
         FROM files f
         WHERE f.current_version IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM search_docs d WHERE d.agent_id = f.agent_id AND d.path = f.path
                AND d.is_log = 0 AND d.ref = f.current_version)",
    ),
    (
        "a log entry missing from the search index",
        "SELECT e.agent_id || ' ' || e.path || ' #' || e.id
         FROM log_entries e
         WHERE NOT EXISTS (
             SELECT 1 FROM search_docs d WHERE d.agent_id = e.agent_id AND d.path = e.path
                AND d.is_log = 1 AND d.ref = e.id)",
    ),
    (
        "a search document for something no longer there",
        "SELECT d.agent_id || ' ' || d.path || CASE d.is_log WHEN 1 THEN ' #' ELSE ' v' END || d.ref
         FROM search_docs d
         WHERE (d.is_log = 0 AND NOT EXISTS (
                    SELECT 1 FROM files f WHERE f.agent_id = d.agent_id AND f.path = d.path
                       AND f.current_version = d.ref))
            OR (d.is_log = 1 AND NOT EXISTS (
                    SELECT 1 FROM log_entries e WHERE e.agent_id = d.agent_id AND e.path = d.path
                       AND e.id = d.ref))",
    ),
    (
        "an agent whose counters are not what its rows add up to",
        "WITH counted AS (COUNTED_SQL),
              ids AS (SELECT agent_id FROM agents UNION SELECT agent_id FROM counted)
         SELECT ids.agent_id || ': counters ' || ifnull(a.total_bytes, 0) || ' B, '
                || ifnull(a.file_count, 0) || ' files, ' || ifnull(a.log_entry_count, 0)
                || ' entries; rows ' || ifnull(c.total_bytes, 0) || ' B, '
                || ifnull(c.file_count, 0) || ' files, ' || ifnull(c.log_entry_count, 0) || ' entries'
         FROM ids LEFT JOIN agents a USING (agent_id) LEFT JOIN counted c USING (agent_id)
         WHERE ifnull(a.total_bytes, 0) != ifnull(c.total_bytes, 0)
            OR ifnull(a.file_count, 0) != ifnull(c.file_count, 0)
            OR ifnull(a.log_entry_count, 0) != ifnull(c.log_entry_count, 0)",
    ),
];

/// Verifies the store at `path` without changing it.
pub fn verify(path: &Path) -> Result<Verification, StoreError> {
    let mut conn = open_read_only(path)?;
    let tx = conn.transaction().map_err(map_err)?;
    let schema_version: i64 = tx
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(map_err)?;
    let mut problems = Vec::new();
    if schema_version != SCHEMA_VERSION {
        problems.push(format!(
            "schema version {schema_version}; this build reads version {SCHEMA_VERSION}"
        ));
        return Ok(Verification {
            schema_version,
            counts: Counts::default(),
            problems,
        });
    }
    let rows = |sql: &str| -> Result<Vec<String>, StoreError> {
        let mut statement = tx.prepare(sql).map_err(map_err)?;
        let found = statement
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(map_err)?;
        Ok(found)
    };
    let integrity = rows("PRAGMA integrity_check")?;
    if integrity != ["ok"] {
        report(&mut problems, "SQLite integrity check", integrity);
    }
    let orphans = rows(
        "SELECT \"table\" || ' row ' || ifnull(rowid, '?') || ' refers to a missing ' || parent
         FROM pragma_foreign_key_check",
    )?;
    report(
        &mut problems,
        "a row that refers to a missing file",
        orphans,
    );
    for (what, sql) in CHECKS {
        let sql = sql.replace("COUNTED_SQL", COUNTED);
        report(&mut problems, what, rows(&sql)?);
    }
    let counts = tx
        .query_row(
            "SELECT (SELECT count(*) FROM agents),
                    (SELECT count(*) FROM files WHERE current_version IS NOT NULL),
                    (SELECT count(*) FROM versions),
                    (SELECT count(*) FROM log_entries),
                    (SELECT count(*) FROM summaries),
                    (SELECT ifnull(sum(bytes), 0) FROM versions)
                      + (SELECT ifnull(sum(bytes), 0) FROM log_entries)",
            [],
            |r| {
                let n = |i| r.get::<_, i64>(i).map(super::to_u64);
                Ok(Counts {
                    agents: n(0)?,
                    files: n(1)?,
                    versions: n(2)?,
                    log_entries: n(3)?,
                    summaries: n(4)?,
                    bytes: n(5)?,
                })
            },
        )
        .map_err(map_err)?;
    Ok(Verification {
        schema_version,
        counts,
        problems,
    })
}

fn report(problems: &mut Vec<String>, what: &str, found: Vec<String>) {
    let more = found.len().saturating_sub(SHOWN_PER_CHECK);
    problems.extend(
        found
            .into_iter()
            .take(SHOWN_PER_CHECK)
            .map(|f| format!("{what}: {f}")),
    );
    if more > 0 {
        problems.push(format!("{what}: {more} more"));
    }
}

/// Every agent's counters, sorted by agent id.
pub fn stats(path: &Path) -> Result<Vec<AgentStats>, StoreError> {
    let conn = open_read_only(path)?;
    let mut statement = conn
        .prepare(
            "SELECT agent_id, file_count, log_entry_count, total_bytes, total_operations
             FROM agents ORDER BY agent_id",
        )
        .map_err(map_err)?;
    statement
        .query_map([], |r| {
            let n = |i| r.get::<_, i64>(i).map(super::to_u64);
            Ok(AgentStats {
                agent_id: r.get(0)?,
                files: n(1)?,
                log_entries: n(2)?,
                total_bytes: n(3)?,
                total_operations: n(4)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(map_err)
}
