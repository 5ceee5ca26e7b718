//! Versioned schema migrations, run on start.
//!
//! Each migration is a numbered SQL file applied once, in its own transaction, and recorded
//! in `scratchpad_migrations`. Instances starting together take a session advisory lock
//! first, so one applies what is missing and the others find it done. A database migrated
//! by a newer build is refused rather than misread.

use super::conn::{Conn, col};
use crate::storage::StoreError;

/// One step of the schema.
struct Migration {
    version: i32,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, in order. Add new ones at the end; never edit one that has shipped.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial schema",
        sql: include_str!("migrations/0001_initial.sql"),
    },
    Migration {
        version: 2,
        name: "rate buckets",
        sql: include_str!("migrations/0002_rate_buckets.sql"),
    },
    Migration {
        version: 3,
        name: "version hashes",
        sql: include_str!("migrations/0003_version_hashes.sql"),
    },
    Migration {
        version: 4,
        name: "log entry hashes",
        sql: include_str!("migrations/0004_log_entry_hashes.sql"),
    },
    Migration {
        version: 5,
        name: "agent lexemes",
        sql: include_str!("migrations/0005_agent_lexemes.sql"),
    },
    Migration {
        version: 6,
        name: "files unindexed",
        sql: include_str!("migrations/0006_files_unindexed.sql"),
    },
    Migration {
        version: 7,
        name: "summaries pruned by statement",
        sql: include_str!("migrations/0007_summaries_pruned_by_statement.sql"),
    },
    Migration {
        version: 8,
        name: "expect agent",
        sql: include_str!("migrations/0008_expect_agent.sql"),
    },
];

/// The advisory lock key that serialises migrations ("scratchp" in ASCII).
const MIGRATION_LOCK: i64 = 0x7363_7261_7463_6870;

/// The schema version this build writes.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Brings the database to [`latest`]. Returns the migrations applied, by name.
pub fn run(conn: &mut Conn) -> Result<Vec<&'static str>, StoreError> {
    conn.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = apply_missing(conn);
    // On error the caller drops the connection, which releases the lock too.
    conn.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])?;
    result
}

fn apply_missing(conn: &mut Conn) -> Result<Vec<&'static str>, StoreError> {
    conn.batch(
        "CREATE TABLE IF NOT EXISTS scratchpad_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )?;
    let found: i32 = col(
        &conn.query_one(
            "SELECT COALESCE(max(version), 0) FROM scratchpad_migrations",
            &[],
        )?,
        0,
    )?;
    if found > latest() {
        return Err(StoreError::Database(format!(
            "the database has schema version {found}, newer than this build's {}; upgrade scratchpad-mcp",
            latest()
        )));
    }
    let mut applied = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| m.version > found) {
        // Each migration whole or not at all: on a failure the caller closes the
        // connection, which rolls the open transaction back.
        conn.batch("BEGIN")?;
        conn.batch(m.sql)?;
        conn.execute(
            "INSERT INTO scratchpad_migrations (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )?;
        conn.batch("COMMIT")?;
        applied.push(m.name);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version as usize, i + 1, "migration {:?}", m.name);
        }
    }
}
