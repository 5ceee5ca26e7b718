//! `verify` and `stats` of a PostgreSQL database: the shared invariants of
//! [`crate::storage::check`], in one read-only snapshot, without migrating anything.
//! PostgreSQL checks its own pages, so there is no counterpart of SQLite's `integrity_check`
//! to run here; the relations between rows are the shared checks', as on SQLite.

use super::conn::Conn;
use super::{DatabaseUrl, col, to_u64};
use crate::storage::StoreError;
use crate::storage::check::{
    AgentStats, CHANGED_CONTENT, CONTENT_HASHES, COUNTS, Counts, IndexAt, STATS, Verification,
    hash_mismatch, report, run_checks,
};
use tokio_postgres::Row;

/// Connects, then runs `look` in a read-only snapshot.
fn in_snapshot<T>(
    url: &DatabaseUrl,
    look: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let (pool, mut conn) = super::first_connection(url)?;
    let found = conn
        .batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .and_then(|()| look(&mut conn))
        .and_then(|found| conn.batch("COMMIT").map(|()| found));
    pool.give_back(conn, found.is_ok());
    found
}

/// The one row a query of aggregates answers.
fn one_row(tx: &mut Conn, sql: &str) -> Result<Row, StoreError> {
    tx.query_once(sql)?
        .into_iter()
        .next()
        .ok_or_else(|| StoreError::Database("an aggregate query answered no row".into()))
}

/// Verifies the database at `url` without changing it.
pub fn verify(url: &DatabaseUrl) -> Result<Verification, StoreError> {
    in_snapshot(url, |tx| {
        let schema = one_row(
            tx,
            "SELECT to_regclass('scratchpad_migrations') IS NOT NULL",
        )?;
        if !col::<bool>(&schema, 0)? {
            return Err(StoreError::Database(
                "the database holds no scratchpad-mcp schema".into(),
            ));
        }
        let row = one_row(tx, "SELECT max(version) FROM scratchpad_migrations")?;
        let schema_version = col::<Option<i32>>(&row, 0)?.map_or(0, i64::from);
        let mut problems = Vec::new();
        if schema_version != i64::from(super::migrations::latest()) {
            problems.push(format!(
                "schema version {schema_version}; this build reads version {}",
                super::migrations::latest()
            ));
            return Ok(Verification {
                schema_version,
                counts: Counts::default(),
                problems,
            });
        }
        // A log entry's document is written with it; a file's write deletes the file's
        // document and marks it `unindexed` until a search stores the new one: every
        // agent's index holds every log entry and every unmarked file's current version,
        // and no document of a version that is not current.
        let index = IndexAt {
            docs: "search_docs",
            agents: "(SELECT agent_id FROM agents UNION SELECT agent_id FROM search_docs)",
            files: "(SELECT * FROM files WHERE NOT unindexed)",
        };
        run_checks(&mut problems, Some(&index), |sql| {
            tx.query_once(sql)?.iter().map(|r| col(r, 0)).collect()
        })?;
        // A page of versions and log entries at a time: the contents of a whole store need not fit in memory.
        let mut changed = Vec::new();
        tx.batch(&format!(
            "DECLARE contents NO SCROLL CURSOR FOR {CONTENT_HASHES}"
        ))?;
        loop {
            let page = tx.query_once("FETCH 256 FROM contents")?;
            for r in &page {
                changed.extend(hash_mismatch(
                    &col::<String>(r, 0)?,
                    &col::<String>(r, 1)?,
                    &col::<String>(r, 2)?,
                    &col::<String>(r, 3)?,
                    &col::<Vec<u8>>(r, 4)?,
                ));
            }
            if page.is_empty() {
                break;
            }
        }
        report(&mut problems, CHANGED_CONTENT, changed);
        let row = one_row(tx, COUNTS)?;
        let counts = Counts::from_row(|i| col::<i64>(&row, i).map(to_u64))?;
        Ok(Verification {
            schema_version,
            counts,
            problems,
        })
    })
}

/// Every agent's counters, sorted by agent id.
pub fn stats(url: &DatabaseUrl) -> Result<Vec<AgentStats>, StoreError> {
    in_snapshot(url, |tx| {
        tx.query_once(STATS)?
            .iter()
            .map(|r| {
                let n = |i| col::<i64>(r, i).map(to_u64);
                Ok(AgentStats {
                    agent_id: col(r, 0)?,
                    files: n(1)?,
                    log_entries: n(2)?,
                    total_bytes: n(3)?,
                    total_operations: n(4)?,
                })
            })
            .collect()
    })
}
