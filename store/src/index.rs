//! The full-text index behind `search`: SQLite FTS5, ranked by BM25.
//!
//! One document per current file version and per log entry. The FTS5 table is contentless
//! (`content=''`, with `contentless_delete=1`), so text is not stored twice: `search_docs`
//! maps each FTS row to what it indexes. Documents change in the same statements' transaction
//! as the rows they index, so a rolled-back call leaves no trace in the index, and another
//! agent's documents are filtered out by the join, never by the query text.
//!
//! Terms come from the guest as plain words; here they are quoted as FTS5 strings, so no
//! query syntax reaches FTS5.

use crate::{Error, to_i64, to_u64};
use rusqlite::{Connection, params};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{MatchRef, SearchMatch};

/// The index's tables. Created with the schema; filled for existing data by [`rebuild`].
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS search_docs (
    id       INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    path     TEXT NOT NULL,
    is_log   INTEGER NOT NULL,
    ref      INTEGER NOT NULL,
    UNIQUE (agent_id, is_log, path, ref)
);
CREATE VIRTUAL TABLE IF NOT EXISTS search_index
    USING fts5(body, content = '', contentless_delete = 1, tokenize = 'unicode61');
";

/// Indexes `body` as the document (agent, path, log entry or file version `reference`).
pub fn add(
    conn: &Connection,
    agent: &str,
    path: &str,
    is_log: bool,
    reference: u64,
    body: &str,
) -> Result<(), Error> {
    let id: i64 = conn
        .prepare_cached(
            "INSERT INTO search_docs (agent_id, path, is_log, ref) VALUES (?1, ?2, ?3, ?4)
             RETURNING id",
        )
        .and_then(|mut s| {
            s.query_row(
                params![agent, path, is_log, to_i64(reference).unwrap_or(-1)],
                |r| r.get(0),
            )
        })?;
    conn.prepare_cached("INSERT INTO search_index (rowid, body) VALUES (?1, ?2)")
        .and_then(|mut s| s.execute(params![id, body]))
        .map(drop)
        .map_err(Error::from)
}

/// Drops the documents of the file at `path` (its current version's).
pub fn remove_file(conn: &Connection, agent: &str, path: &str) -> Result<(), Error> {
    remove_where(
        conn,
        "agent_id = ?1 AND path = ?2 AND is_log = 0",
        params![agent, path],
    )
}

/// Drops the document of one log entry.
pub fn remove_log_entry(conn: &Connection, agent: &str, path: &str, id: u64) -> Result<(), Error> {
    let id = to_i64(id)?;
    remove_where(
        conn,
        "agent_id = ?1 AND path = ?2 AND is_log = 1 AND ref = ?3",
        params![agent, path, id],
    )
}

/// Drops every document of `agent`.
pub fn remove_agent(conn: &Connection, agent: &str) -> Result<(), Error> {
    remove_where(conn, "agent_id = ?1", params![agent])
}

fn remove_where(
    conn: &Connection,
    condition: &str,
    args: &[&dyn rusqlite::ToSql],
) -> Result<(), Error> {
    conn.prepare_cached(&format!(
        "DELETE FROM search_index WHERE rowid IN (SELECT id FROM search_docs WHERE {condition})"
    ))
    .and_then(|mut s| s.execute(args))?;
    conn.prepare_cached(&format!("DELETE FROM search_docs WHERE {condition}"))
        .and_then(|mut s| s.execute(args))
        .map(drop)
        .map_err(Error::from)
}

/// Indexes every current file version and log entry of `agent`, or of every agent when
/// `agent` is none (a store upgraded from before the index).
pub fn rebuild(conn: &Connection, agent: Option<&str>) -> Result<(), Error> {
    let docs: Vec<(String, String, bool, i64, String)> = conn
        .prepare(
            "SELECT f.agent_id, f.path, 0, v.version, v.content
             FROM files f JOIN versions v ON v.file_id = f.id AND v.version = f.current_version
             WHERE ?1 IS NULL OR f.agent_id = ?1
             UNION ALL
             SELECT agent_id, path, 1, id, body FROM log_entries WHERE ?1 IS NULL OR agent_id = ?1",
        )
        .and_then(|mut s| {
            s.query_map([agent], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })?;
    for (agent, path, is_log, reference, body) in docs {
        add(conn, &agent, &path, is_log, to_u64(reference), &body)?;
    }
    Ok(())
}

/// The FTS5 query for plain words: each a quoted string, joined by AND or OR.
fn fts_query(terms: &[String], match_all: bool) -> String {
    let quoted: Vec<String> = terms
        .iter()
        .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
        .collect();
    quoted.join(if match_all { " AND " } else { " OR " })
}

/// The agent's documents matching `terms` under `prefix`, best first.
pub fn search(
    conn: &Connection,
    agent: &str,
    terms: &[String],
    match_all: bool,
    prefix: &str,
    limit: u32,
    offset: u32,
) -> Result<Vec<SearchMatch>, Error> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    conn.prepare_cached(
        "SELECT d.path, d.is_log, d.ref
         FROM search_index JOIN search_docs d ON d.id = search_index.rowid
         WHERE search_index MATCH ?1 AND d.agent_id = ?2
           AND substr(d.path, 1, length(?3)) = ?3
         ORDER BY bm25(search_index), d.path, d.is_log, d.ref
         LIMIT ?4 OFFSET ?5",
    )
    .and_then(|mut s| {
        s.query_map(
            params![fts_query(terms, match_all), agent, prefix, limit, offset],
            |r| {
                let reference = to_u64(r.get(2)?);
                Ok(SearchMatch {
                    path: r.get(0)?,
                    at: if r.get::<_, bool>(1)? {
                        MatchRef::LogEntry(reference)
                    } else {
                        MatchRef::File(reference)
                    },
                })
            },
        )?
        .collect()
    })
    .map_err(Error::from)
}
