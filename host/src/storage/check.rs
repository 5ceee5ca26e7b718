//! What `verify` and `stats` look for, in SQL that SQLite and PostgreSQL both read.
//!
//! Each backend runs these in one read transaction of its own, so it sees one consistent
//! state while servers keep writing. The invariants are the ones the tools rely on, each one
//! query over the whole store: every file's current version is its newest kept one and no
//! kept version is above its last number; recorded sizes equal the bytes stored; no summary
//! outlives its version, and no version or summary its file's row (which SQLite's foreign
//! keys hold, and PostgreSQL's no longer: see its migration 7); each log's last id and
//! entry count hold; the search index holds exactly the current versions and the log
//! entries; and each agent's counters equal what its rows add up to (the counters are what
//! quotas are enforced on). And each kept version's content still has the hash it was
//! written with ([`CONTENT_HASHES`]), which SQL cannot compute in both databases, so each
//! backend reads the rows and [`hash_mismatch`] judges them.
//!
//! Both schemas have the same tables and columns; `is_log` and `is_text` are 0/1 in SQLite
//! and booleans in PostgreSQL, which `NOT x` and `CASE WHEN x` read alike.

use scratchpad_guest::words::{bytes, count};
use serde::{Deserialize, Serialize};
use std::fmt;

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

/// As the command line reports them: "1 agent, 2 files, 3 versions, ...".
impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, {}, {}, {}, {}, {}",
            count(self.agents, "agent", "agents"),
            count(self.files, "file", "files"),
            count(self.versions, "version", "versions"),
            count(self.log_entries, "log entry", "log entries"),
            count(self.summaries, "summary", "summaries"),
            bytes(self.bytes)
        )
    }
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

impl Counts {
    /// The counts from the six numbers of a `COUNTS` row, read by `n`.
    pub fn from_row<E>(n: impl Fn(usize) -> Result<u64, E>) -> Result<Self, E> {
        Ok(Self {
            agents: n(0)?,
            files: n(1)?,
            versions: n(2)?,
            log_entries: n(3)?,
            summaries: n(4)?,
            bytes: n(5)?,
        })
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

/// Each agent's counters as its rows add them up: the one definition that `verify` compares
/// with and that `import` writes.
pub const COUNTED: &str = "
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
    ) AS counted_rows
    GROUP BY agent_id";

/// What [`Counts`] holds, in its order.
pub const COUNTS: &str = "
    SELECT (SELECT count(*) FROM agents),
           (SELECT count(*) FROM files WHERE current_version IS NOT NULL),
           (SELECT count(*) FROM versions),
           (SELECT count(*) FROM log_entries),
           (SELECT count(*) FROM summaries),
           CAST((SELECT COALESCE(sum(bytes), 0) FROM versions)
                + (SELECT COALESCE(sum(bytes), 0) FROM log_entries) AS bigint)";

/// What [`AgentStats`] holds, in its order, one row per agent.
pub const STATS: &str = "
    SELECT agent_id, file_count, log_entry_count, total_bytes, total_operations
    FROM agents ORDER BY agent_id";

/// The invariant checks: a description and a query whose every row is one violation.
const CHECKS: &[(&str, &str)] = &[
    (
        "a summary whose version is not kept",
        "SELECT f.agent_id || ' ' || f.path || ' v' || CAST(s.version AS text)
         FROM summaries s JOIN files f ON f.id = s.file_id
         LEFT JOIN versions v ON v.file_id = s.file_id AND v.version = s.version
         WHERE v.version IS NULL",
    ),
    (
        "a version or summary of a file with no row",
        "SELECT 'file ' || CAST(x.file_id AS text) || ' v' || CAST(x.version AS text)
         FROM (SELECT file_id, version FROM versions
               UNION ALL SELECT file_id, version FROM summaries) x
         WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.id = x.file_id)",
    ),
    (
        "a file whose current version is not its newest kept one",
        "SELECT f.agent_id || ' ' || f.path || ': current '
                || COALESCE(CAST(f.current_version AS text), 'none')
                || ', newest kept ' || COALESCE(CAST(max(v.version) AS text), 'none')
         FROM files f LEFT JOIN versions v ON v.file_id = f.id
         GROUP BY f.id, f.agent_id, f.path, f.current_version
         HAVING f.current_version IS DISTINCT FROM max(v.version)",
    ),
    (
        "a file with a kept version above its last version number",
        "SELECT f.agent_id || ' ' || f.path || ': last ' || CAST(f.last_version AS text)
                || ', kept ' || CAST(max(v.version) AS text)
         FROM files f JOIN versions v ON v.file_id = f.id
         GROUP BY f.id, f.agent_id, f.path, f.last_version
         HAVING max(v.version) > f.last_version",
    ),
    (
        "a file whose recorded size is not its current version's",
        "SELECT f.agent_id || ' ' || f.path || ': '
                || COALESCE(CAST(f.current_bytes AS text), 'none')
                || ' recorded, ' || CAST(v.bytes AS text) || ' stored'
         FROM files f JOIN versions v ON v.file_id = f.id AND v.version = f.current_version
         WHERE f.current_bytes IS DISTINCT FROM v.bytes",
    ),
    (
        "a version whose recorded size is not its content's",
        "SELECT f.agent_id || ' ' || f.path || ' v' || CAST(v.version AS text)
         FROM versions v JOIN files f ON f.id = v.file_id
         WHERE v.bytes != octet_length(v.content)",
    ),
    (
        "a log entry whose recorded size is not its body's",
        "SELECT agent_id || ' ' || path || ' #' || CAST(id AS text)
         FROM log_entries WHERE bytes != octet_length(body)",
    ),
    (
        "a log whose last id is below one of its entries' ids",
        "SELECT e.agent_id || ' ' || e.path || ': last id '
                || COALESCE(CAST(max(l.last_id) AS text), 'none')
                || ', entry #' || CAST(max(e.id) AS text)
         FROM log_entries e LEFT JOIN logs l ON l.agent_id = e.agent_id AND l.path = e.path
         GROUP BY e.agent_id, e.path
         HAVING max(l.last_id) IS NULL OR max(e.id) > max(l.last_id)",
    ),
    (
        "a log whose entry count is not the entries it holds",
        "SELECT l.agent_id || ' ' || l.path || ': ' || CAST(l.entries AS text) || ' counted, '
                || CAST((SELECT count(*) FROM log_entries e
                         WHERE e.agent_id = l.agent_id AND e.path = l.path) AS text) || ' held'
         FROM logs l
         WHERE l.entries != (SELECT count(*) FROM log_entries e
                             WHERE e.agent_id = l.agent_id AND e.path = l.path)",
    ),
    (
        "an agent whose counters are not what its rows add up to",
        "WITH counted AS (COUNTED_SQL),
              ids AS (SELECT agent_id FROM agents UNION SELECT agent_id FROM counted)
         SELECT ids.agent_id || ': counters '
                || CAST(COALESCE(a.total_bytes, 0) AS text) || ' B, '
                || CAST(COALESCE(a.file_count, 0) AS text) || ' files, '
                || CAST(COALESCE(a.log_entry_count, 0) AS text) || ' entries; rows '
                || CAST(COALESCE(c.total_bytes, 0) AS text) || ' B, '
                || CAST(COALESCE(c.file_count, 0) AS text) || ' files, '
                || CAST(COALESCE(c.log_entry_count, 0) AS text) || ' entries'
         FROM ids LEFT JOIN agents a ON a.agent_id = ids.agent_id
                  LEFT JOIN counted c ON c.agent_id = ids.agent_id
         WHERE COALESCE(a.total_bytes, 0) != COALESCE(c.total_bytes, 0)
            OR COALESCE(a.file_count, 0) != COALESCE(c.file_count, 0)
            OR COALESCE(a.log_entry_count, 0) != COALESCE(c.log_entry_count, 0)",
    ),
];

/// The search index against the rows it indexes, for the agents whose index is up to date
/// (`INDEXED_AGENTS`), in the index's table of documents (`SEARCH_DOCS`), the files that should
/// have theirs being `INDEXED_FILES`: see [`IndexAt`].
const INDEX_CHECKS: &[(&str, &str)] = &[
    (
        "a current file version missing from the search index",
        "SELECT f.agent_id || ' ' || f.path || ' v' || CAST(f.current_version AS text)
         FROM INDEXED_FILES f
         WHERE f.current_version IS NOT NULL AND f.agent_id IN INDEXED_AGENTS AND NOT EXISTS (
             SELECT 1 FROM SEARCH_DOCS d WHERE d.agent_id = f.agent_id AND d.path = f.path
                AND NOT d.is_log AND d.ref = f.current_version)",
    ),
    (
        "a log entry missing from the search index",
        "SELECT e.agent_id || ' ' || e.path || ' #' || CAST(e.id AS text)
         FROM log_entries e
         WHERE e.agent_id IN INDEXED_AGENTS AND NOT EXISTS (
             SELECT 1 FROM SEARCH_DOCS d WHERE d.agent_id = e.agent_id AND d.path = e.path
                AND d.is_log AND d.ref = e.id)",
    ),
    (
        "a search document for something no longer there",
        "SELECT d.agent_id || ' ' || d.path || CASE WHEN d.is_log THEN ' #' ELSE ' v' END
                || CAST(d.ref AS text)
         FROM SEARCH_DOCS d
         WHERE d.agent_id IN INDEXED_AGENTS AND ((NOT d.is_log AND NOT EXISTS (
                    SELECT 1 FROM files f WHERE f.agent_id = d.agent_id AND f.path = d.path
                       AND f.current_version = d.ref))
            OR (d.is_log AND NOT EXISTS (
                    SELECT 1 FROM log_entries e WHERE e.agent_id = d.agent_id AND e.path = d.path
                       AND e.id = d.ref)))",
    ),
];

/// Where a backend keeps its search index, as the index checks name it.
pub struct IndexAt {
    /// The table of documents.
    pub docs: &'static str,
    /// The agents whose index should match their rows now, as an SQL set.
    pub agents: &'static str,
    /// Those agents' files whose current version should have its document, as an SQL table:
    /// where a file's document waits for the next search, the files not waiting.
    pub files: &'static str,
}

/// Runs every invariant check with `rows` (which runs a query whose rows are one text
/// column) and adds what each finds to `problems`; the index checks when there is an
/// `index`.
pub fn run_checks<E>(
    problems: &mut Vec<String>,
    index: Option<&IndexAt>,
    mut rows: impl FnMut(&str) -> Result<Vec<String>, E>,
) -> Result<(), E> {
    for (what, sql) in CHECKS {
        let found = rows(&sql.replace("COUNTED_SQL", COUNTED))?;
        report(problems, what, found);
    }
    let Some(at) = index else { return Ok(()) };
    for (what, sql) in INDEX_CHECKS {
        let sql = sql
            .replace("INDEXED_FILES", at.files)
            .replace("SEARCH_DOCS", at.docs)
            .replace("INDEXED_AGENTS", at.agents);
        report(problems, what, rows(&sql)?);
    }
    Ok(())
}

/// Every kept version with the hash it was stored with and its content, in a fixed order.
pub const CONTENT_HASHES: &str =
    "SELECT f.agent_id, f.path, 'version ' || v.version, v.sha256, v.content
     FROM versions v JOIN files f ON f.id = v.file_id
     UNION ALL
     SELECT agent_id, path, 'log entry #' || id, sha256, body FROM log_entries
     ORDER BY 1, 2, 3";

/// What a version whose content lost its hash is reported as.
pub const CHANGED_CONTENT: &str = "content changed since it was written";

/// The problem with `what` (a version or a log entry, as [`CONTENT_HASHES`] names it) of
/// `agent`'s `path`, if its `content` (as stored, any bytes) is not what its hash `stored`
/// was computed from.
pub fn hash_mismatch(
    agent: &str,
    path: &str,
    what: &str,
    stored: &str,
    content: &[u8],
) -> Option<String> {
    (scratchpad_guest::ports::content_hash(content) != stored).then(|| {
        format!(
            "agent {agent:?}, path {path:?}, {what} does not match the SHA-256 it was written with"
        )
    })
}

/// Adds the problems of one kind, the first [`SHOWN_PER_CHECK`] in full.
pub fn report(problems: &mut Vec<String>, what: &str, found: Vec<String>) {
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
