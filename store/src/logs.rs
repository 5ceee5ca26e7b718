//! What a log is beyond its entries: the last id it ever gave (so ids never repeat after
//! entries are removed), how many entries it holds, and its retention, one row per log in
//! `logs`; and removing entries.
//!
//! The entry count is kept in the row, changed by the same statements as the entries (as
//! the agents' counters are), because the guest asks for a log's state after every append:
//! counting the entries there would cost a scan of the log on the hottest path.

use crate::{Error, to_i64, to_u64};
use rusqlite::{Connection, OptionalExtension, params};
use scratchpad_guest::bindings::scratchpad::mcp::storage::{LogState, Retention};

/// The table. Created with the schema; filled for a store from before it by [`backfill`].
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS logs (
    agent_id        TEXT NOT NULL,
    path            TEXT NOT NULL,
    last_id         INTEGER NOT NULL,
    entries         INTEGER NOT NULL DEFAULT 0,
    keep_last       INTEGER,
    max_age_seconds INTEGER,
    PRIMARY KEY (agent_id, path)
);
";

/// Gives every log that has entries but no row (`agent` or every agent) its row, and every
/// row of those agents the count of its entries: for a store from before the table, and
/// after an import, which writes entries directly.
pub fn backfill(conn: &Connection, agent: Option<&str>) -> Result<(), Error> {
    for sql in [
        "INSERT OR IGNORE INTO logs (agent_id, path, last_id)
         SELECT agent_id, path, max(id) FROM log_entries
         WHERE ?1 IS NULL OR agent_id = ?1 GROUP BY agent_id, path",
        "UPDATE logs SET entries = (
             SELECT count(*) FROM log_entries e
             WHERE e.agent_id = logs.agent_id AND e.path = logs.path)
         WHERE ?1 IS NULL OR agent_id = ?1",
    ] {
        conn.execute(sql, [agent])?;
    }
    Ok(())
}

/// The id for the log's next entry, taken.
pub fn next_id(conn: &Connection, agent: &str, path: &str) -> Result<u64, Error> {
    conn.prepare_cached(
        "INSERT INTO logs (agent_id, path, last_id, entries) VALUES (?1, ?2, 1, 1)
         ON CONFLICT (agent_id, path)
             DO UPDATE SET last_id = last_id + 1, entries = entries + 1
         RETURNING last_id",
    )
    .and_then(|mut s| s.query_row(params![agent, path], |r| r.get(0)))
    .map(to_u64)
    .map_err(Error::from)
}

/// See `log-info` in the WIT.
pub fn state(conn: &Connection, agent: &str, path: &str) -> Result<LogState, Error> {
    let row: Option<LogRow> = conn
        .prepare_cached(
            "SELECT last_id, entries, keep_last, max_age_seconds FROM logs
             WHERE agent_id = ?1 AND path = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![agent, path], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })?;
    Ok(state_of(row))
}

/// A `logs` row (`last_id`, `entries`, `keep_last`, `max_age_seconds`), as SQLite and the
/// server's PostgreSQL backend both keep it.
pub type LogRow = (i64, i64, Option<i64>, Option<i64>);

/// A `logs` row as `log-info` answers it: a log with no row has given no id and keeps
/// everything.
pub fn state_of(row: Option<LogRow>) -> LogState {
    let (last_id, entries, keep_last, max_age) = row.unwrap_or((0, 0, None, None));
    LogState {
        last_id: to_u64(last_id),
        entries: to_u64(entries),
        retention: Retention {
            keep_last: keep_last.map(to_u64),
            max_age_seconds: max_age.map(to_u64),
        },
    }
}

/// See `set-log-retention` in the WIT.
pub fn set_retention(
    conn: &Connection,
    agent: &str,
    path: &str,
    retention: Retention,
) -> Result<(), Error> {
    let keep = retention.keep_last.map(to_i64).transpose()?;
    let age = retention.max_age_seconds.map(to_i64).transpose()?;
    conn.prepare_cached(
        "INSERT INTO logs (agent_id, path, last_id, keep_last, max_age_seconds)
         VALUES (?1, ?2, 0, ?3, ?4)
         ON CONFLICT (agent_id, path) DO UPDATE SET keep_last = ?3, max_age_seconds = ?4",
    )
    .and_then(|mut s| s.execute(params![agent, path, keep, age]))
    .map(drop)
    .map_err(Error::from)
}

/// Removes the entries below `before` and those older than `older_than_seconds`. Returns (entries, bytes) removed, for the counters.
pub fn trim(
    conn: &Connection,
    agent: &str,
    path: &str,
    before: u64,
    older_than_seconds: Option<u64>,
) -> Result<(u64, u64), Error> {
    let age = older_than_seconds.map(to_i64).transpose()?;
    let before = to_i64(before)?;
    // Timestamps are RFC 3339 text of one width, so text order is time order.
    let gone: Vec<(i64, i64)> = conn
        .prepare_cached(
            "DELETE FROM log_entries
             WHERE agent_id = ?1 AND path = ?2
               AND (id < ?3 OR (?4 IS NOT NULL
                    AND created_at < strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || ?4 || ' seconds')))
             RETURNING id, bytes",
        )
        .and_then(|mut s| {
            s.query_map(params![agent, path, before, age], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect()
        })?;
    conn.prepare_cached("UPDATE logs SET entries = entries - ?3 WHERE agent_id = ?1 AND path = ?2")
        .and_then(|mut s| s.execute(params![agent, path, gone.len() as i64]))?;
    let bytes = gone.iter().map(|(_, b)| to_u64(*b)).sum();
    Ok((gone.len() as u64, bytes))
}
