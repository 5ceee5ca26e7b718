//! The tables, and bringing a file to this build's schema.

use crate::{Error, index, logs};
use rusqlite::{Connection, Transaction, TransactionBehavior};

/// The schema version this code writes; a newer file is refused rather than misread.
/// 2 added the search index and the `logs` table; 3 the hash of each version's content; 4
/// gave each agent an index table of its own; 5 each agent's generation (see
/// [`rows::Tally::changes`](crate::rows::Tally::changes)), the hash of each log entry's
/// body, and moved the index to a file of its own ([`index`]); 6 a checksum in every page
/// ([`pages`](crate::pages), which rewrites the file before [`migrate`] runs), so that a
/// build that would write pages without them refuses the store; 7 an index of the versions'
/// numbers, sizes, times and hashes (`versions_meta`), so that a stat reads no content.
pub const SCHEMA_VERSION: i64 = 7;

/// Files, versions, log entries, summaries and the agents' counters. The per-log rows are in
/// [`logs::SCHEMA`]; the search index is in a file of its own ([`index`]).
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS agents (
    agent_id         TEXT PRIMARY KEY,
    total_bytes      INTEGER NOT NULL DEFAULT 0,
    file_count       INTEGER NOT NULL DEFAULT 0,
    log_entry_count  INTEGER NOT NULL DEFAULT 0,
    total_operations INTEGER NOT NULL DEFAULT 0,
    -- Moves on with every write call that changes the agent's rows (see rows::Tally).
    generation       INTEGER NOT NULL DEFAULT 0
);
-- One row per path ever written; a deleted file keeps its row (current_version NULL) so
-- that its version numbers never repeat.
CREATE TABLE IF NOT EXISTS files (
    id              INTEGER PRIMARY KEY,
    agent_id        TEXT NOT NULL,
    path            TEXT NOT NULL,
    last_version    INTEGER NOT NULL,
    current_version INTEGER,
    current_bytes   INTEGER,
    updated_at      TEXT,
    UNIQUE (agent_id, path)
);
CREATE TABLE IF NOT EXISTS versions (
    file_id    INTEGER NOT NULL REFERENCES files (id),
    version    INTEGER NOT NULL,
    bytes      INTEGER NOT NULL,
    content    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    -- The content's hash when it was written (ports::content_hash), so damage shows.
    sha256     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (file_id, version)
);
CREATE TABLE IF NOT EXISTS log_entries (
    agent_id   TEXT NOT NULL,
    path       TEXT NOT NULL,
    id         INTEGER NOT NULL,
    is_text    INTEGER NOT NULL,
    body       TEXT NOT NULL,
    bytes      INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    -- The body's hash when it was written (ports::content_hash), so damage shows.
    sha256     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (agent_id, path, id)
);
CREATE TABLE IF NOT EXISTS summaries (
    file_id    INTEGER NOT NULL REFERENCES files (id),
    version    INTEGER NOT NULL,
    model      TEXT NOT NULL,
    summary    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (file_id, version, model)
);
";

/// Everything a stat of a file reads of its versions (schema 7). In a row, `created_at` and
/// `sha256` come after the content, and SQLite reaches them only by walking the content's
/// overflow pages: a stat of a file with ten 1 MiB versions read 10 MiB, 3.4 ms, at every
/// read and write of it. Made after [`migrate`] has given an older store its `sha256`.
const VERSIONS_META: &str = "CREATE INDEX IF NOT EXISTS versions_meta ON versions (file_id, version, bytes, created_at, sha256)";

/// Brings the store to [`SCHEMA_VERSION`] under the write lock, so two processes starting
/// together upgrade it once.
pub fn migrate(conn: &Connection) -> Result<(), Error> {
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    let found: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if found > SCHEMA_VERSION {
        return Err(Error::TooNew { found });
    }
    if found == SCHEMA_VERSION {
        return Ok(());
    }
    tx.execute_batch(&format!("{SCHEMA} {}", logs::SCHEMA))?;
    if (1..5).contains(&found) && !has_column(&tx, "agents", "generation")? {
        // Before the steps below, whose statements count into it.
        tx.execute_batch("ALTER TABLE agents ADD COLUMN generation INTEGER NOT NULL DEFAULT 0")?;
    }
    if found == 1 {
        logs::backfill(&tx, None)?;
    }
    if (1..3).contains(&found) {
        // Versions written before hashes were kept get theirs from the content as it is now:
        // damage from before this upgrade cannot be told apart, damage after it can.
        if !has_column(&tx, "versions", "sha256")? {
            tx.execute_batch("ALTER TABLE versions ADD COLUMN sha256 TEXT NOT NULL DEFAULT ''")?;
        }
        backfill_hashes(&tx, "versions", "content")?;
    }
    if (1..5).contains(&found) {
        // Log entries, the same way.
        if !has_column(&tx, "log_entries", "sha256")? {
            tx.execute_batch("ALTER TABLE log_entries ADD COLUMN sha256 TEXT NOT NULL DEFAULT ''")?;
        }
        backfill_hashes(&tx, "log_entries", "body")?;
    }
    if (1..5).contains(&found) {
        // The index moves to its own file, filled by the searches that need it.
        index::drop_from_store(&tx)?;
    }
    tx.execute_batch(VERSIONS_META)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    Ok(tx.commit()?)
}

/// Whether `table` has `column` (a store a newer build wrote and an older one marked down).
fn has_column(conn: &Connection, table: &str, column: &str) -> Result<bool, Error> {
    Ok(conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |r| r.get(0),
    )?)
}

/// Gives every row of `table` stored without a hash the hash of its `text` column, a few
/// hundred rows at a time: a store's contents need not fit in memory to be upgraded.
fn backfill_hashes(conn: &Connection, table: &str, text: &str) -> Result<(), Error> {
    let mut unhashed = conn.prepare(&format!(
        "SELECT rowid, {text} FROM {table} WHERE sha256 = '' LIMIT 256"
    ))?;
    let mut set = conn.prepare(&format!("UPDATE {table} SET sha256 = ?2 WHERE rowid = ?1"))?;
    loop {
        let batch: Vec<(i64, String)> = unhashed
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        if batch.is_empty() {
            return Ok(());
        }
        for (rowid, content) in batch {
            set.execute(rusqlite::params![
                rowid,
                scratchpad_guest::ports::content_hash(&content)
            ])?;
        }
    }
}
