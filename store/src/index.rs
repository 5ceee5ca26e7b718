//! The full-text index behind `search`: SQLite FTS5, ranked by BM25.
//!
//! One document per current file version and per log entry, in an FTS5 table of the agent's
//! own (`search_index_` and the agent id in hex, made on the agent's first document), so
//! BM25's statistics (how many documents there are, how long they are, how many hold a word)
//! and a search's cost come from that agent's documents alone: no agent can learn from its
//! ranking how many of another's documents hold a word, and a search does not slow down as
//! other agents write. The tables are contentless (`content=''`, with `contentless_delete=1`),
//! so text is not stored twice: `search_docs` maps each FTS row to what it indexes.
//! Documents change in the same statements' transaction as the rows they index, so a
//! rolled-back call leaves no trace in the index.
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
";

/// The name of `agent`'s FTS5 table, quoted: the id in hex, because SQLite's names ignore
/// case and agent ids do not.
fn table(agent: &str) -> String {
    let hex: String = agent.bytes().map(|b| format!("{b:02x}")).collect();
    format!("\"search_index_{hex}\"")
}

/// Whether `agent` has an index table yet: a look-up by name in SQLite's schema (not a scan
/// of `sqlite_schema`, which grows with the number of agents).
fn has_table(conn: &Connection, agent: &str) -> Result<bool, Error> {
    let name = table(agent);
    conn.prepare_cached("SELECT count(*) > 0 FROM pragma_table_info(?1)")
        .and_then(|mut s| s.query_row([name.trim_matches('"')], |r| r.get(0)))
        .map_err(Error::from)
}

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
    let table = table(agent);
    if !has_table(conn, agent)? {
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE {table}
             USING fts5(body, content = '', contentless_delete = 1, tokenize = 'unicode61')"
        ))?;
    }
    conn.prepare_cached(&format!(
        "INSERT INTO {table} (rowid, body) VALUES (?1, ?2)"
    ))
    .and_then(|mut s| s.execute(params![id, body]))
    .map(drop)
    .map_err(Error::from)
}

/// Drops the documents of the file at `path` (its current version's).
pub fn remove_file(conn: &Connection, agent: &str, path: &str) -> Result<(), Error> {
    remove_where(
        conn,
        agent,
        "agent_id = ?1 AND path = ?2 AND is_log = 0",
        params![agent, path],
    )
}

/// Drops the document of one log entry.
pub fn remove_log_entry(conn: &Connection, agent: &str, path: &str, id: u64) -> Result<(), Error> {
    let id = to_i64(id)?;
    remove_where(
        conn,
        agent,
        "agent_id = ?1 AND path = ?2 AND is_log = 1 AND ref = ?3",
        params![agent, path, id],
    )
}

/// Drops every document of `agent`, and its index table.
pub fn remove_agent(conn: &Connection, agent: &str) -> Result<(), Error> {
    conn.execute_batch(&format!("DROP TABLE IF EXISTS {}", table(agent)))?;
    conn.prepare_cached("DELETE FROM search_docs WHERE agent_id = ?1")
        .and_then(|mut s| s.execute([agent]))
        .map(drop)
        .map_err(Error::from)
}

/// Drops `agent`'s documents that meet `condition` (over `search_docs`).
fn remove_where(
    conn: &Connection,
    agent: &str,
    condition: &str,
    args: &[&dyn rusqlite::ToSql],
) -> Result<(), Error> {
    if !has_table(conn, agent)? {
        return Ok(());
    }
    conn.prepare_cached(&format!(
        "DELETE FROM {} WHERE rowid IN (SELECT id FROM search_docs WHERE {condition})",
        table(agent)
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
    if !has_table(conn, agent)? {
        // No table is no documents, unless the documents say otherwise: then it is damage.
        let documents: i64 = conn
            .prepare_cached("SELECT count(*) FROM search_docs WHERE agent_id = ?1")
            .and_then(|mut s| s.query_row([agent], |r| r.get(0)))?;
        if documents > 0 {
            return Err(Error::Database {
                words: "the agent's search index is missing",
                detail: format!("no index table for {documents} documents of {agent:?}"),
            });
        }
        return Ok(Vec::new());
    }
    let table = table(agent);
    conn.prepare_cached(&format!(
        "SELECT d.path, d.is_log, d.ref
         FROM {table} JOIN search_docs d ON d.id = {table}.rowid
         WHERE {table} MATCH ?1 AND substr(d.path, 1, length(?2)) = ?2
         ORDER BY bm25({table}), d.path, d.is_log, d.ref
         LIMIT ?3 OFFSET ?4"
    ))
    .and_then(|mut s| {
        s.query_map(
            params![fts_query(terms, match_all), prefix, limit, offset],
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
