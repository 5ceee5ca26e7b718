//! The store itself: persistence across restarts, one transaction per call, contention
//! that ends in a clear "busy" rather than a hang or a raw SQLite message.

use crate::common::Scratch;
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn everything_survives_a_restart_and_numbering_continues() {
    let mut s = Scratch::new();
    s.write("a", "f", "one");
    s.write("a", "f", "two");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "e1" }),
    );
    let before = s.usage("a");
    s.restart();
    assert_eq!(
        s.ok("read_file", json!({ "agent_id": "a", "path": "f" }))["content"],
        "two"
    );
    assert_eq!(s.write("a", "f", "three")["version"], 3);
    assert_eq!(
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "log", "entry": "e2" })
        )["entry_id"],
        2
    );
    let after = s.usage("a");
    assert_eq!(after["file_count"], before["file_count"]);
    assert_eq!(
        after["total_operations"].as_u64().unwrap(),
        before["total_operations"].as_u64().unwrap() + 4,
        "read_file, write_file, append_log and the first get_usage_stats counted"
    );
}

#[test]
fn the_store_is_wal_with_the_expected_tables() {
    let s = Scratch::new();
    s.write("a", "f", "x");
    let db = crate::common::sql(&s.db());
    let mode: String = db
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let ok: String = db
        .pragma_query_value(None, "integrity_check", |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let versions: i64 = db
        .query_row("SELECT count(*) FROM versions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(versions, 1);
}

#[test]
fn a_writer_held_off_past_the_deadline_gets_busy_and_nothing_changes() {
    let s = Scratch::new();
    s.write("a", "f", "before");
    let blocker = crate::common::sql(&s.db());
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();

    let started = Instant::now();
    let e = s.err(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "after" }),
    );
    let waited = started.elapsed();
    assert_eq!(
        e,
        "the store is busy: another process held it past the wait deadline; nothing was changed, retry the call"
    );
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
    // Reads do not wait behind a writer; their operations are counted all the same.
    let started = Instant::now();
    assert_eq!(
        s.ok("read_file", json!({ "agent_id": "a", "path": "f" }))["content"],
        "before"
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        s.usage("a")["total_operations"],
        2,
        "the write and the read"
    );
    blocker.execute_batch("ROLLBACK").unwrap();
    assert_eq!(s.write("a", "f", "after")["version"], 2);
    // The counts kept back are now in the file, where another process would see them.
    let db = crate::common::sql(&s.db());
    let ops: i64 = db
        .query_row(
            "SELECT total_operations FROM agents WHERE agent_id = 'a'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(ops, 4, "write, read, usage, write");
}

#[test]
fn a_failed_call_counts_no_operation() {
    let s = Scratch::new();
    s.write("a", "f", "x");
    s.err("read_file", json!({ "agent_id": "a", "path": "missing" }));
    s.err(
        "write_file",
        json!({ "agent_id": "a", "path": "../x", "content": "x" }),
    );
    assert_eq!(s.usage("a")["total_operations"], 1);
}

/// Puts an agent's counter just under a quota, as a long history would have.
fn set_counter(s: &Scratch, column: &str, value: u64) {
    let db = crate::common::sql(&s.db());
    db.execute(
        &format!("UPDATE agents SET {column} = ?1 WHERE agent_id = 'a'"),
        [value as i64],
    )
    .unwrap();
}

#[test]
fn the_log_entry_quota_holds_at_100000() {
    let s = Scratch::new();
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "first" }),
    );
    set_counter(&s, "log_entry_count", 99_999);
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "the 100000th" }),
    );
    assert_eq!(
        s.err(
            "append_log",
            json!({ "agent_id": "a", "path": "log", "entry": "one more" })
        ),
        "quota exceeded: agent \"a\" has 100000 log entries; the quota is 100000 entries"
    );
    assert_eq!(s.usage("a")["log_entry_count"], 100_000);
}

#[test]
fn the_byte_quota_holds_at_100_mib_counting_kept_versions() {
    const QUOTA: u64 = 100 * 1024 * 1024;
    let s = Scratch::new();
    s.write("a", "f", "0123456789");
    set_counter(&s, "total_bytes", QUOTA - 5);
    // Replacing the 10-byte version keeps it (versions are kept), so it needs 15 more bytes.
    assert_eq!(
        s.err(
            "write_file",
            json!({ "agent_id": "a", "path": "f", "content": "fifteen bytes!!" })
        ),
        "quota exceeded: writing 15 bytes would bring agent \"a\" to 104857610 bytes stored; the quota is 104857600 bytes"
    );
    assert_eq!(
        s.write("a", "g", "12345")["version"],
        1,
        "exactly at the quota is fine"
    );
    assert!(
        s.err(
            "append_log",
            json!({ "agent_id": "a", "path": "l", "entry": "x" })
        )
        .starts_with("quota exceeded: appending 1 byte ")
    );
    assert_eq!(s.usage("a")["total_bytes"], QUOTA);
}

/// One good call of every tool: what a damaged store is asked below.
fn every_tool() -> Vec<(&'static str, serde_json::Value)> {
    vec![
        (
            "write_file",
            json!({ "agent_id": "a", "path": "f", "content": "new" }),
        ),
        (
            "edit_file",
            json!({ "agent_id": "a", "path": "f", "base_version": 1,
                               "edits": [{ "old": "one", "new": "two" }] }),
        ),
        (
            "read_file",
            json!({ "agent_id": "a", "path": "f", "since_version": 1 }),
        ),
        ("read_files", json!({ "agent_id": "a", "prefix": "" })),
        ("file_history", json!({ "agent_id": "a", "path": "f" })),
        ("search", json!({ "agent_id": "a", "query": "one" })),
        (
            "append_log",
            json!({ "agent_id": "a", "path": "log", "entry": "e" }),
        ),
        ("read_log", json!({ "agent_id": "a", "path": "log" })),
        (
            "forget_log",
            json!({ "agent_id": "a", "path": "log", "keep_last": 1 }),
        ),
        ("list_files", json!({ "agent_id": "a" })),
        ("delete_file", json!({ "agent_id": "a", "path": "f" })),
        ("summarize_file", json!({ "agent_id": "a", "path": "f" })),
        ("get_usage_stats", json!({ "agent_id": "a" })),
    ]
}

/// With the store's tables gone from under it, every tool fails with a sentence a caller
/// can read: no SQL, no table name, no server path, no panic or type name.
#[test]
fn a_damaged_store_gives_every_tool_an_error_without_sql_or_server_detail() {
    let s = Scratch::new();
    s.write("a", "f", "one");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "e" }),
    );
    let conn = crate::common::sql(&s.db());
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         DROP TABLE versions; DROP TABLE log_entries; DROP TABLE logs; DROP TABLE summaries;
         DROP TABLE files;",
    )
    .unwrap();
    drop(conn);
    let dir = s.dir.path().to_string_lossy().into_owned();
    let mut answered = Vec::new();
    for (tool, args) in every_tool() {
        let e = match s.call(tool, args) {
            Ok(answer) => {
                answered.push((tool, answer));
                continue;
            }
            Err(e) => e,
        };
        assert!(
            e.starts_with("storage failed (") || e.starts_with("the store "),
            "{tool}: {e}"
        );
        for leak in [
            "SELECT",
            "INSERT",
            "no such table",
            "versions",
            "log_entries",
            "files",
            &dir,
            "panicked",
            "Error {",
            "rusqlite",
        ] {
            assert!(!e.contains(leak), "{tool} shows {leak:?}: {e}");
        }
    }
    // The counters live in `agents`, which is still there.
    assert_eq!(
        answered.iter().map(|(tool, _)| *tool).collect::<Vec<_>>(),
        ["get_usage_stats"],
        "every other tool needs a table that is gone: {answered:?}"
    );
}

/// The arguments of an edit that keeps the guest busy for a long while: `n` text edits that
/// swap a marker back and forth in a file of some thousands of lines (at version 1).
fn long_edit(agent: &str, path: &str, n: usize) -> serde_json::Value {
    let edits: Vec<_> = (0..n)
        .map(|i| match i % 2 {
            0 => json!({ "old": "MARK-A", "new": "MARK-B" }),
            _ => json!({ "old": "MARK-B", "new": "MARK-A" }),
        })
        .collect();
    json!({ "agent_id": agent, "path": path, "base_version": 1, "edits": edits })
}

/// A file for [`long_edit`]: every edit scans and copies all of it.
fn long_file() -> String {
    let mut content: String = (0..4000)
        .map(|i| format!("line {i} of a long file\n"))
        .collect();
    content.push_str("MARK-A\n");
    content
}

/// The p-th percentile of `waits`.
fn percentile(waits: &mut [Duration], p: usize) -> Duration {
    waits.sort();
    waits[(waits.len() * p / 100).min(waits.len() - 1)]
}

/// One agent's heaviest legal write (an edit of thousands of steps) does its work before it
/// takes the write lock: another agent's writes are answered while it runs, not after it.
#[test]
fn another_agents_writes_go_on_while_one_agent_edits_at_length() {
    let s = Scratch::new();
    s.write("heavy", "big.md", &long_file());
    s.write("light", "note.md", "0");
    let running = std::sync::atomic::AtomicBool::new(true);
    let (took, edited, mut waits) = std::thread::scope(|t| {
        let heavy = t.spawn(|| {
            let started = Instant::now();
            let edited = s.ok("edit_file", long_edit("heavy", "big.md", 20_001));
            running.store(false, std::sync::atomic::Ordering::SeqCst);
            (started.elapsed(), edited)
        });
        let mut waits = Vec::new();
        while running.load(std::sync::atomic::Ordering::SeqCst) {
            let started = Instant::now();
            s.write("light", "note.md", &waits.len().to_string());
            waits.push(started.elapsed());
        }
        let (took, edited) = heavy.join().unwrap();
        (took, edited, waits)
    });
    assert_eq!(edited["version"], 2);
    let (p50, p99) = (percentile(&mut waits, 50), percentile(&mut waits, 99));
    println!(
        "a 20,001-step edit took {took:?}; meanwhile {} writes of another agent, p50 {p50:?}, p99 {p99:?}",
        waits.len()
    );
    // Before, the other agent's first write waited for the whole edit, and was its only one.
    assert!(waits.len() >= 10, "{} writes during {took:?}", waits.len());
    assert!(
        waits.iter().max().unwrap() < &(took / 2),
        "{waits:?} during {took:?}"
    );
}

/// A write call of another process that changes an agent's data while one of this
/// process's write calls works on it makes that call run again on what is now there: it
/// never writes from what it read before (here, the edit's base version is gone).
#[test]
fn a_write_call_whose_data_another_process_changed_runs_again_on_the_new_data() {
    let s = Scratch::new();
    s.write("a", "big.md", &long_file());
    let other = s.another_instance();
    let args = |v: serde_json::Value| v.as_object().unwrap().clone();
    let (edit, rewrote) = std::thread::scope(|t| {
        let edit = t.spawn(|| s.call("edit_file", long_edit("a", "big.md", 20_001)));
        std::thread::sleep(Duration::from_millis(300));
        let rewrote = other
            .call(
                "write_file",
                args(json!({ "agent_id": "a", "path": "big.md", "content": "replaced" })),
            )
            .unwrap();
        (edit.join().unwrap(), rewrote)
    });
    assert_eq!(rewrote["version"], 2);
    assert_eq!(
        edit.unwrap_err(),
        "conflict: \"big.md\" is at version 2, but the call expected version 1; read it again and retry"
    );
    assert_eq!(
        s.ok("read_file", json!({ "agent_id": "a", "path": "big.md" }))["content"],
        "replaced"
    );
}
