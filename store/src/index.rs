//! The full-text index behind `search`: SQLite FTS5, ranked by BM25, in a file of its own
//! beside the store (`<store>-search`), brought up to date by the search that needs it.
//!
//! Why a file of its own, filled lazily: indexing is most of what a write costs (a 1 MiB
//! write spends some 40 ms in FTS5 and a few in its own rows), and a write holds the
//! store's only write lock while it runs. With the index in the store, one agent writing
//! large files held up every other agent's writes for that long. Here a write only writes
//! its rows; the next search of that agent indexes what changed since the index last looked
//! (compared by the agent's generation, [`crate::rows::Tally::changes`]), under the index
//! file's lock, which no write waits for. Every search still sees every write committed
//! before it began: it catches up to the store as its own transaction sees it.
//!
//! The index is a cache: everything in it is derived from the store, so a missing, damaged
//! or older index file is rebuilt, never trusted over the store. Restoring a snapshot
//! deletes it; an import moves the agent to a new lineage of generations
//! ([`crate::rows::next_lineage`]), and the agent's next search, finding its part of another
//! lineage, indexes it afresh (even when a search that began before the import recorded its
//! part after it).
//!
//! One document per current file version and per log entry, in an FTS5 table of the agent's
//! own (`search_index_` and the agent id in hex, made on the agent's first document), so
//! BM25's statistics (how many documents there are, how long they are, how many hold a word)
//! and a search's cost come from that agent's documents alone: no agent can learn from its
//! ranking how many of another's documents hold a word, and a search does not slow down as
//! other agents write. The tables are contentless (`content=''`, with `contentless_delete=1`),
//! so text is not stored twice: `search_docs` maps each FTS row to what it indexes. A file
//! version or log entry, once written, never changes (numbers never repeat), so a document
//! that names one is still right for as long as it exists.
//!
//! What a word is, is the guest's to say ([`words`], as on PostgreSQL): FTS5 is given each
//! document as the guest's words, each spelled in hex, and the query's terms spelled the same
//! way, so its tokenizer finds exactly those words and nothing of its own (`unicode61` would
//! fold "café" into "cafe" and split words of letters newer than its Unicode 6.1). Hex
//! is letters and digits only, so no query syntax reaches FTS5 either.

use crate::{Error, to_u64};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{MatchRef, SearchMatch};
use scratchpad_guest::hex::{hex, push_hex};
use scratchpad_guest::tools::search::words;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The index file's layout; a file of another version is emptied and filled again. 2: the
/// guest's words in hex.
const INDEX_VERSION: i64 = 2;

/// The index file's tables (the per-agent FTS5 tables are made on first use): what each
/// agent's documents are, the generation of the agent they were last brought up to, and
/// how far each log was indexed.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS search_docs (
    id       INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    path     TEXT NOT NULL,
    is_log   INTEGER NOT NULL,
    ref      INTEGER NOT NULL,
    UNIQUE (agent_id, is_log, path, ref)
);
CREATE TABLE IF NOT EXISTS search_agents (
    agent_id   TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS search_logs (
    agent_id TEXT NOT NULL,
    path     TEXT NOT NULL,
    entries  INTEGER NOT NULL,
    last_id  INTEGER NOT NULL,
    PRIMARY KEY (agent_id, path)
);
";

/// Where the index of the store at `store` lives.
pub fn file_of(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-search");
    PathBuf::from(name)
}

/// Opens the index of the store at `store` with `connect` (which sets the connection's VFS,
/// locking and durability) and readies it with [`prepare`]. A file SQLite cannot read as a
/// database is deleted and made again: it is only a cache.
pub fn open(
    store: &Path,
    connect: impl Fn(&Path) -> Result<Connection, Error>,
) -> Result<Connection, Error> {
    let path = file_of(store);
    let opened = connect(&path).and_then(|idx| prepare(&idx).map(|()| idx));
    match opened {
        Err(Error::Damaged) => {
            remove(store).map_err(|e| Error::Database {
                words: "the damaged search index cannot be deleted",
                detail: e.to_string(),
            })?;
            let idx = connect(&path)?;
            prepare(&idx)?;
            Ok(idx)
        }
        opened => opened,
    }
}

/// Deletes the index of the store at `store`, with its journal, WAL and shared-memory
/// files, those that exist.
pub fn remove(store: &Path) -> std::io::Result<()> {
    let path = file_of(store);
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        match std::fs::remove_file(PathBuf::from(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// Readies an index connection: the tables, emptied first when the file was laid out by
/// another version (it is only a cache).
pub fn prepare(idx: &Connection) -> Result<(), Error> {
    let tx = Transaction::new_unchecked(idx, TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found == INDEX_VERSION {
        return Ok(());
    }
    if found != 0 {
        for table in fts_tables(&tx)? {
            tx.execute_batch(&format!("DROP TABLE IF EXISTS \"{table}\""))?;
        }
        tx.execute_batch(
            "DROP TABLE IF EXISTS search_docs; DROP TABLE IF EXISTS search_agents;
             DROP TABLE IF EXISTS search_logs;",
        )?;
    }
    tx.execute_batch(SCHEMA)?;
    tx.pragma_update(None, "user_version", INDEX_VERSION)?;
    Ok(tx.commit()?)
}

/// The FTS5 tables in a database (the shadow tables go with them).
fn fts_tables(conn: &Connection) -> Result<Vec<String>, Error> {
    conn.prepare(
        "SELECT name FROM sqlite_schema
         WHERE type = 'table' AND substr(name, 1, 12) = 'search_index'
           AND sql LIKE 'CREATE VIRTUAL TABLE%'",
    )?
    .query_map([], |r| r.get(0))?
    .collect::<Result<_, _>>()
    .map_err(Error::from)
}

/// Drops the index a store of schema 2 to 4 kept in its own file.
pub fn drop_from_store(main: &Connection) -> Result<(), Error> {
    for table in fts_tables(main)? {
        main.execute_batch(&format!("DROP TABLE IF EXISTS \"{table}\""))?;
    }
    Ok(main.execute_batch("DROP TABLE IF EXISTS search_docs")?)
}

/// Forgets what the index holds of `agent` (a damaged part): its next search indexes the
/// agent's rows again from the start.
pub fn forget(idx: &Connection, agent: &str) -> Result<(), Error> {
    let tx = Transaction::new_unchecked(idx, TransactionBehavior::Immediate)?;
    forget_in(&tx, agent)?;
    Ok(tx.commit()?)
}

/// [`forget`], inside the caller's transaction of the index.
fn forget_in(idx: &Connection, agent: &str) -> Result<(), Error> {
    idx.execute_batch(&format!("DROP TABLE IF EXISTS {}", table(agent)))?;
    for sql in [
        "DELETE FROM search_docs WHERE agent_id = ?1",
        "DELETE FROM search_agents WHERE agent_id = ?1",
        "DELETE FROM search_logs WHERE agent_id = ?1",
    ] {
        idx.execute(sql, [agent])?;
    }
    Ok(())
}

/// The name of `agent`'s FTS5 table, quoted: the id in hex, because SQLite's names ignore
/// case and agent ids do not.
fn table(agent: &str) -> String {
    format!("\"search_index_{}\"", hex(agent.as_bytes()))
}

/// Whether `agent` has an index table yet: a look-up by name in SQLite's schema (not a scan
/// of `sqlite_schema`, which grows with the number of agents).
fn has_table(idx: &Connection, agent: &str) -> Result<bool, Error> {
    let name = table(agent);
    idx.prepare_cached("SELECT count(*) > 0 FROM pragma_table_info(?1)")
        .and_then(|mut s| s.query_row([name.trim_matches('"')], |r| r.get(0)))
        .map_err(Error::from)
}

/// The agent's generation the index was last brought up to, if it ever was.
fn indexed_generation(idx: &Connection, agent: &str) -> Result<Option<i64>, Error> {
    idx.prepare_cached("SELECT generation FROM search_agents WHERE agent_id = ?1")?
        .query_row([agent], |r| r.get(0))
        .optional()
        .map_err(Error::from)
}

/// Brings `agent`'s part of the index to the store as `main` (inside the caller's
/// transaction) sees it. Costs one look-up when nothing changed; otherwise a comparison of
/// the agent's files and logs, and the indexing of what is new, in one transaction of the
/// index file.
fn catch_up(main: &Connection, idx: &Connection, agent: &str) -> Result<(), Error> {
    let now = crate::rows::generation(main, agent)?;
    if indexed_generation(idx, agent)? == Some(now) {
        return Ok(());
    }
    let tx = Transaction::new_unchecked(idx, TransactionBehavior::Immediate)?;
    let indexed = indexed_generation(&tx, agent)?;
    if indexed != Some(now) {
        if indexed.is_some_and(|g| crate::rows::lineage(g) != crate::rows::lineage(now)) {
            // The agent's rows were replaced since (an import): nothing indexed is theirs.
            forget_in(&tx, agent)?;
        }
        catch_up_files(main, &tx, agent)?;
        catch_up_logs(main, &tx, agent)?;
        tx.prepare_cached(
            "INSERT INTO search_agents (agent_id, generation) VALUES (?1, ?2)
             ON CONFLICT (agent_id) DO UPDATE SET generation = ?2",
        )?
        .execute(params![agent, now])?;
    }
    Ok(tx.commit()?)
}

/// One document per current file version: those of versions no longer current go, those
/// of current versions not yet indexed come.
fn catch_up_files(main: &Connection, idx: &Connection, agent: &str) -> Result<(), Error> {
    let current: BTreeMap<String, i64> = main
        .prepare_cached(
            "SELECT path, current_version FROM files
             WHERE agent_id = ?1 AND current_version IS NOT NULL",
        )?
        .query_map([agent], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let indexed: BTreeMap<String, (i64, i64)> = idx
        .prepare_cached("SELECT path, id, ref FROM search_docs WHERE agent_id = ?1 AND NOT is_log")?
        .query_map([agent], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?
        .collect::<Result<_, _>>()?;
    for (path, (id, version)) in &indexed {
        if current.get(path) != Some(version) {
            remove_document(idx, agent, *id)?;
        }
    }
    let mut content = main.prepare_cached(
        "SELECT v.content FROM files f
         JOIN versions v ON v.file_id = f.id AND v.version = f.current_version
         WHERE f.agent_id = ?1 AND f.path = ?2",
    )?;
    for (path, version) in &current {
        if indexed.get(path).map(|(_, v)| v) != Some(version) {
            let body: String = content.query_row(params![agent, path], |r| r.get(0))?;
            add(idx, agent, path, false, *version, &body)?;
        }
    }
    Ok(())
}

/// One document per log entry. Entries only ever come with higher ids, so what is new is
/// what lies above the last id indexed; when fewer entries at or below it remain than the
/// index holds, some were trimmed, and those documents go.
fn catch_up_logs(main: &Connection, idx: &Connection, agent: &str) -> Result<(), Error> {
    let read = |conn: &Connection, sql: &str| -> Result<BTreeMap<String, (i64, i64)>, Error> {
        conn.prepare_cached(sql)?
            .query_map([agent], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?
            .collect::<Result<_, _>>()
            .map_err(Error::from)
    };
    let stored = read(
        main,
        "SELECT path, entries, last_id FROM logs WHERE agent_id = ?1",
    )?;
    let indexed = read(
        idx,
        "SELECT path, entries, last_id FROM search_logs WHERE agent_id = ?1",
    )?;
    let paths: BTreeSet<&String> = stored.keys().chain(indexed.keys()).collect();
    for path in paths {
        let (entries, last_id) = stored.get(path).copied().unwrap_or((0, 0));
        let (had, indexed_to) = indexed.get(path).copied().unwrap_or((0, 0));
        let mut newer = main.prepare_cached(
            "SELECT id, body FROM log_entries WHERE agent_id = ?1 AND path = ?2 AND id > ?3
             ORDER BY id",
        )?;
        let mut added = 0;
        let mut rows = newer.query(params![agent, path, indexed_to])?;
        while let Some(row) = rows.next()? {
            let (id, body): (i64, String) = (row.get(0)?, row.get(1)?);
            add(idx, agent, path, true, id, &body)?;
            added += 1;
        }
        if entries - added != had {
            drop_trimmed(main, idx, agent, path, indexed_to)?;
        }
        if stored.contains_key(path) {
            idx.prepare_cached(
                "INSERT INTO search_logs (agent_id, path, entries, last_id) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (agent_id, path) DO UPDATE SET entries = ?3, last_id = ?4",
            )?
            .execute(params![agent, path, entries, last_id.max(indexed_to)])?;
        } else {
            idx.prepare_cached("DELETE FROM search_logs WHERE agent_id = ?1 AND path = ?2")?
                .execute(params![agent, path])?;
        }
    }
    Ok(())
}

/// Drops the documents of a log's entries at or below `up_to` that the store no longer has.
fn drop_trimmed(
    main: &Connection,
    idx: &Connection,
    agent: &str,
    path: &str,
    up_to: i64,
) -> Result<(), Error> {
    let kept: BTreeSet<i64> = main
        .prepare_cached(
            "SELECT id FROM log_entries WHERE agent_id = ?1 AND path = ?2 AND id <= ?3",
        )?
        .query_map(params![agent, path, up_to], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let documents: Vec<(i64, i64)> = idx
        .prepare_cached(
            "SELECT id, ref FROM search_docs
             WHERE agent_id = ?1 AND path = ?2 AND is_log AND ref <= ?3",
        )?
        .query_map(params![agent, path, up_to], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    for (id, entry) in documents {
        if !kept.contains(&entry) {
            remove_document(idx, agent, id)?;
        }
    }
    Ok(())
}

/// Indexes `body` as the document (agent, path, log entry or file version `reference`).
fn add(
    idx: &Connection,
    agent: &str,
    path: &str,
    is_log: bool,
    reference: i64,
    body: &str,
) -> Result<(), Error> {
    let id: i64 = idx
        .prepare_cached(
            "INSERT INTO search_docs (agent_id, path, is_log, ref) VALUES (?1, ?2, ?3, ?4)
             RETURNING id",
        )?
        .query_row(params![agent, path, is_log, reference], |r| r.get(0))?;
    let table = table(agent);
    if !has_table(idx, agent)? {
        idx.execute_batch(&format!(
            "CREATE VIRTUAL TABLE {table}
             USING fts5(body, content = '', contentless_delete = 1, tokenize = 'unicode61')"
        ))?;
    }
    idx.prepare_cached(&format!(
        "INSERT INTO {table} (rowid, body) VALUES (?1, ?2)"
    ))?
    .execute(params![id, tokens(body)])?;
    Ok(())
}

/// A text as FTS5 is given it: the guest's words, each in hex, one space apart.
fn tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for (_, word) in words(text) {
        if !out.is_empty() {
            out.push(' ');
        }
        push_hex(&mut out, word.as_bytes());
    }
    out
}

/// Drops the document `id` of `agent`.
fn remove_document(idx: &Connection, agent: &str, id: i64) -> Result<(), Error> {
    idx.prepare_cached(&format!("DELETE FROM {} WHERE rowid = ?1", table(agent)))?
        .execute([id])?;
    idx.prepare_cached("DELETE FROM search_docs WHERE id = ?1")?
        .execute([id])?;
    Ok(())
}

/// The FTS5 query for the guest's terms: each in hex, joined by AND or OR.
fn fts_query(terms: &[String], match_all: bool) -> String {
    let spelled: Vec<String> = terms
        .iter()
        .map(|t| {
            let mut quoted = String::with_capacity(t.len() * 2 + 2);
            quoted.push('"');
            push_hex(&mut quoted, t.as_bytes());
            quoted.push('"');
            quoted
        })
        .collect();
    spelled.join(if match_all { " AND " } else { " OR " })
}

/// What a search reads: the store, inside the caller's transaction, and its index.
#[derive(Clone, Copy)]
pub struct Files<'c> {
    /// A connection to the store, inside the calling tool call's transaction.
    pub store: &'c Connection,
    /// A connection to the store's index file.
    pub index: &'c Connection,
}

/// The agent's documents matching `terms` under `prefix`, best first, once the index has
/// caught up with the store as the call sees it.
pub fn search(
    Files {
        store: main,
        index: idx,
    }: Files<'_>,
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
    catch_up(main, idx, agent)?;
    if !has_table(idx, agent)? {
        let documents: i64 = idx
            .prepare_cached("SELECT count(*) FROM search_docs WHERE agent_id = ?1")?
            .query_row([agent], |r| r.get(0))?;
        if documents == 0 {
            return Ok(Vec::new());
        }
        // Documents without their table: a damaged cache, made again from the store.
        forget(idx, agent)?;
        catch_up(main, idx, agent)?;
    }
    let table = table(agent);
    idx.prepare_cached(&format!(
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
