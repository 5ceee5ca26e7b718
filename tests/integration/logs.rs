//! Append-only logs through the whole host: ids, pages, cursors, JSON values, limits.

use crate::common::{Scratch, entry_ids};
use scratchpad_mcp::bindings::NO_OVERRIDES;
use serde_json::{Value, json};

fn append(s: &Scratch, entry: Value) -> Result<Value, String> {
    s.call(
        "append_log",
        json!({ "agent_id": "a", "path": "actions", "entry": entry }),
    )
}

fn page(s: &Scratch, since: Option<u64>) -> Value {
    let mut args = json!({ "agent_id": "a", "path": "actions" });
    if let Some(since) = since {
        args["since_entry"] = json!(since);
    }
    s.ok("read_log", args)
}

#[test]
fn a_cursor_pages_through_250_entries_without_gaps() {
    let s = Scratch::new();
    for i in 1..=250u64 {
        assert_eq!(
            append(&s, json!(format!("step {i}"))).unwrap(),
            json!({ "path": "actions", "entry_id": i })
        );
    }
    let (mut cursor, mut seen, mut sizes) = (None, Vec::new(), Vec::new());
    loop {
        let p = page(&s, cursor);
        let entries = p["entries"].as_array().unwrap();
        sizes.push(entries.len());
        seen.extend(entries.iter().map(|e| e["id"].as_u64().unwrap()));
        cursor = p["last_entry_id"].as_u64();
        if p["has_more"] == false {
            break;
        }
    }
    assert_eq!(sizes, [100, 100, 50]);
    assert_eq!(seen, (1..=250).collect::<Vec<_>>());
    let after_end = page(&s, Some(250));
    assert_eq!(
        after_end,
        json!({ "path": "actions", "entries": [], "has_more": false, "last_entry_id": 250, "tokens": 128 })
    );
    assert_eq!(s.usage("a")["log_entry_count"], 250);
}

#[test]
fn entries_read_back_as_the_json_values_written() {
    let s = Scratch::new();
    let values = [
        json!("plain text"),
        json!({ "tool": "grep", "args": ["-r", "TODO"], "ok": true, "took_ms": 12.5 }),
        json!([1, 2, { "nested": null }]),
        json!(42),
        json!(null),
        json!("ünïcödé \"quoted\"\n"),
    ];
    for v in &values {
        append(&s, v.clone()).unwrap();
    }
    let entries = page(&s, None)["entries"].as_array().unwrap().clone();
    let back: Vec<String> = entries.iter().map(|e| e["entry"].to_string()).collect();
    let written: Vec<String> = values.iter().map(Value::to_string).collect();
    assert_eq!(back, written, "same values, same key order");
    assert!(entries[0]["created_at"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn entry_size_limit_at_n_and_n_plus_one() {
    let s = Scratch::new();
    // Strings count their UTF-8 bytes (not JSON-escaped): 'ß' is two.
    append(&s, json!("ß".repeat(32 * 1024))).unwrap();
    assert_eq!(
        append(&s, json!(format!("{}x", "ß".repeat(32 * 1024)))).unwrap_err(),
        "log entry is 65537 bytes; the limit for one entry is 65536 bytes"
    );
    // Other values count their compact JSON: ["xxx…"] is the string plus 4 bytes.
    append(&s, json!(["x".repeat(65536 - 4)])).unwrap();
    assert!(
        append(&s, json!(["x".repeat(65536 - 3)]))
            .unwrap_err()
            .starts_with("log entry is 65537 bytes")
    );
    assert_eq!(s.usage("a")["total_bytes"], 2 * 65536);
    assert_eq!(s.usage("a")["log_entry_count"], 2);
}

#[test]
fn logs_are_separate_by_path_and_an_unknown_log_is_empty() {
    let s = Scratch::new();
    append(&s, json!("one")).unwrap();
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "other", "entry": "x" }),
    );
    assert_eq!(
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "other", "entry": "y" })
        )["entry_id"],
        2
    );
    let empty = s.ok("read_log", json!({ "agent_id": "a", "path": "never" }));
    assert_eq!(
        empty,
        json!({ "path": "never", "entries": [], "has_more": false, "last_entry_id": 0, "tokens": 128 })
    );
}

#[test]
fn a_page_holds_no_more_entries_than_fit_one_answer() {
    let s = Scratch::new();
    for i in 0..5 {
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "big", "entry": format!("{i}{}", "x".repeat(30_000)) }),
        );
    }
    let mut since = 0;
    let mut sizes = Vec::new();
    loop {
        let page = s.ok(
            "read_log",
            json!({ "agent_id": "a", "path": "big", "since_entry": since }),
        );
        assert!(
            page["tokens"].as_u64().unwrap() <= 20_000,
            "{}",
            page["tokens"]
        );
        sizes.push(page["entries"].as_array().unwrap().len());
        since = page["last_entry_id"].as_u64().unwrap();
        if page["has_more"] == false {
            break;
        }
    }
    // 30 KB entries, about 80 KB an answer: two a page, every entry once.
    assert_eq!(sizes, vec![2, 2, 1]);
}

#[test]
fn forgetting_keeps_counters_exact_ids_fresh_and_the_store_sound() {
    let s = Scratch::new();
    for i in 0..10 {
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "run", "entry": format!("entry {i}") }),
        );
    }
    let r = s.ok(
        "forget_log",
        json!({ "agent_id": "a", "path": "run", "before_entry": 4 }),
    );
    assert_eq!(
        (r["removed"].clone(), r["remaining"].clone()),
        (json!(3), json!(7))
    );
    let usage = s.usage("a");
    assert_eq!(
        (
            usage["log_entry_count"].clone(),
            usage["total_bytes"].clone()
        ),
        (json!(7), json!(49))
    );
    // Searching finds no trace of what was forgotten.
    let found = s.ok("search", json!({ "agent_id": "a", "query": "entry 2" }));
    assert!(!found.to_string().contains("\"entry_id\":3"), "{found}");

    // A retention by age: backdate two entries, and the next append drops them.
    s.ok(
        "forget_log",
        json!({ "agent_id": "a", "path": "run", "max_age_days": 1 }),
    );
    let db = crate::common::sql(&s.db());
    db.execute(
        "UPDATE log_entries SET created_at = '2020-01-01T00:00:00.000Z' WHERE id IN (4, 5)",
        [],
    )
    .unwrap();
    drop(db);
    assert_eq!(
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "run", "entry": "new" })
        )["entry_id"],
        11
    );
    let page = s.ok("read_log", json!({ "agent_id": "a", "path": "run" }));
    assert_eq!(entry_ids(&page), vec![6, 7, 8, 9, 10, 11]);

    // Everything, then on again: ids continue; the store verifies; export carries it all.
    let all = s.ok("forget_log", json!({ "agent_id": "a", "path": "run" }));
    assert_eq!(all["remaining"], 0);
    assert_eq!(
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "run", "entry": "again" })
        )["entry_id"],
        12
    );
    let v = scratchpad_mcp::storage::admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
    let mut exported = Vec::new();
    scratchpad_mcp::ops::export(&s.db(), "a", &mut exported).unwrap();
    let text = String::from_utf8(exported.clone()).unwrap();
    assert!(
        text.contains(r#"{"type":"log","path":"run","last_id":12,"max_age_seconds":86400}"#),
        "{text}"
    );
    let copy = tempfile::tempdir().unwrap();
    let db = copy.path().join("copy.db");
    scratchpad_mcp::ops::import(&db, &mut exported.as_slice(), None, false, &NO_OVERRIDES).unwrap();
    let mut again = Vec::new();
    scratchpad_mcp::ops::export(&db, "a", &mut again).unwrap();
    assert_eq!(again, exported);
}
