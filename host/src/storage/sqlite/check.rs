//! `verify` and `stats` of a SQLite file: read-only looks at a whole store.
//!
//! Verification runs in one read transaction, so it sees one consistent state while servers
//! keep writing. It checks what SQLite checks (`integrity_check`, `foreign_key_check`) and then
//! the invariants of [`crate::storage::check`], which both backends share.

use super::{SCHEMA_VERSION, map_err};
use crate::storage::StoreError;
use crate::storage::check::{
    AgentStats, CHANGED_CONTENT, CONTENT_HASHES, COUNTS, Counts, IndexAt, STATS, Verification,
    hash_mismatch, report, run_checks,
};
use rusqlite::{Connection, OpenFlags};
use scratchpad_store::index;
use scratchpad_store::pages;
use std::path::Path;

/// Opens an existing store for reading only: a missing file is an error, not a new store.
pub(super) fn open_read_only(path: &Path) -> Result<Connection, StoreError> {
    let open_error = |reason: String| StoreError::Open {
        path: path.display().to_string(),
        reason,
    };
    if path.is_dir() {
        return Err(open_error(super::A_FOLDER.into()));
    }
    if !path.is_file() {
        return Err(open_error("no such file".into()));
    }
    let conn = pages::open(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        None,
    )
    .map_err(|e| open_error(StoreError::from(e).to_string()))?;
    conn.busy_timeout(super::BUSY_TIMEOUT).map_err(map_err)?;
    Ok(conn)
}

/// Verifies the store at `path` without changing it. A file SQLite cannot read as a
/// database, or a page that no longer holds its checksum ([`pages`]), is a problem found
/// (damage), not a failure to check; verification stops at the first damaged page.
pub fn verify(path: &Path) -> Result<Verification, StoreError> {
    pages::take_fault();
    match verify_readable(path) {
        Err(damaged @ StoreError::Damaged) => Ok(Verification {
            schema_version: 0,
            counts: Counts::default(),
            problems: vec![match pages::take_fault() {
                Some(fault) => format!(
                    "{fault} no longer holds the checksum it was written with: the file was changed on disk (damage, or a tool writing it without scratchpad-mcp)"
                ),
                None => damaged.to_string(),
            }],
        }),
        other => other,
    }
}

fn verify_readable(path: &Path) -> Result<Verification, StoreError> {
    let mut conn = open_read_only(path)?;
    // Attached read-only, as the store is opened.
    let index_file = index::file_of(path);
    let indexed = index_file.is_file()
        && conn
            .execute(
                "ATTACH DATABASE ?1 AS search",
                [index_file.to_string_lossy()],
            )
            .is_ok();
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
    // The index file is a cache that searches bring up to date: an agent's part is checked
    // when it is up to date with the agent's rows.
    let index = IndexAt {
        docs: "search.search_docs",
        agents: "(SELECT a.agent_id FROM agents a JOIN search.search_agents g
                  ON g.agent_id = a.agent_id AND g.generation = a.generation)",
        files: "files",
    };
    run_checks(&mut problems, indexed.then_some(&index), rows)?;
    let mut changed = Vec::new();
    let mut versions = tx.prepare(CONTENT_HASHES).map_err(map_err)?;
    let mut all = versions.query([]).map_err(map_err)?;
    while let Some(r) = all.next().map_err(map_err)? {
        let text = |i| bytes(r, i).map(|b| String::from_utf8_lossy(&b).into_owned());
        changed.extend(hash_mismatch(
            &text(0).map_err(map_err)?,
            &text(1).map_err(map_err)?,
            &text(2).map_err(map_err)?,
            &text(3).map_err(map_err)?,
            &bytes(r, 4).map_err(map_err)?,
        ));
    }
    drop(all);
    drop(versions);
    report(&mut problems, CHANGED_CONTENT, changed);
    let counts = tx
        .query_row(COUNTS, [], |r| {
            Counts::from_row(|i| r.get::<_, i64>(i).map(super::to_u64))
        })
        .map_err(map_err)?;
    Ok(Verification {
        schema_version,
        counts,
        problems,
    })
}

/// Column `i` as it is stored, any bytes: damage may leave text that is not UTF-8.
fn bytes(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Vec<u8>> {
    Ok(row
        .get_ref(i)?
        .as_bytes()
        .map(<[u8]>::to_vec)
        .unwrap_or_default())
}

/// Every agent's counters, sorted by agent id.
pub fn stats(path: &Path) -> Result<Vec<AgentStats>, StoreError> {
    let conn = open_read_only(path)?;
    let mut statement = conn.prepare(STATS).map_err(map_err)?;
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
