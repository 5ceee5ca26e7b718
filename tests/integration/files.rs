//! Versioned files through the whole host: versions, pruning, diffs, limits and quotas.

use crate::common::{Scratch, apply_diff};
use proptest::prelude::*;
use serde_json::{Value, json};

fn read(s: &Scratch, path: &str, since: Option<u64>, full: bool) -> Value {
    let mut args = json!({ "agent_id": "a", "path": path });
    if let Some(since) = since {
        args["since_version"] = json!(since);
    }
    if full {
        args["full_diff"] = json!(true);
    }
    s.ok("read_file", args)
}

fn numbered(n: usize) -> String {
    (1..=n)
        .map(|i| format!("line {i} of a long working document\n"))
        .collect()
}

#[test]
fn writes_make_versions_and_equal_content_makes_none() {
    let s = Scratch::new();
    assert_eq!(
        s.write("a", "notes.md", "one"),
        json!({ "path": "notes.md", "version": 1, "bytes": 3, "unchanged": false })
    );
    assert_eq!(
        s.write("a", "notes.md", "one"),
        json!({ "path": "notes.md", "version": 1, "bytes": 3, "unchanged": true })
    );
    assert_eq!(s.write("a", "notes.md", "two!")["version"], 2);
    assert_eq!(
        read(&s, "notes.md", None, false),
        json!({ "path": "notes.md", "current_version": 2, "content": "two!", "tokens": 130 })
    );
}

#[test]
fn ten_versions_are_kept_and_usage_counts_exactly_those() {
    let s = Scratch::new();
    for i in 1..=13 {
        s.write("a", "f", &"x".repeat(i));
    }
    // Versions 4..=13 are kept: 4 + 5 + ... + 13 bytes.
    assert_eq!(s.usage("a")["total_bytes"], (4..=13).sum::<u64>());
    let old = read(&s, "f", Some(3), false);
    assert_eq!(old["version_too_old"], true);
    assert_eq!(old["content"], "x".repeat(13));
    assert!(old.get("diff").is_none());
    assert!(
        read(&s, "f", Some(4), false)
            .get("version_too_old")
            .is_none(),
        "version 4 is kept"
    );
}

#[test]
fn version_numbers_never_repeat_after_a_delete() {
    let s = Scratch::new();
    s.write("a", "f", "first\n");
    s.write("a", "f", "second\n");
    let deleted = s.ok("delete_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(deleted, json!({ "path": "f", "deleted": true }));
    assert_eq!(
        s.ok("delete_file", json!({ "agent_id": "a", "path": "f" }))["deleted"],
        false
    );
    assert!(
        s.err("read_file", json!({ "agent_id": "a", "path": "f" }))
            .contains("no file at path \"f\"")
    );
    assert_eq!(s.write("a", "f", "first\n")["version"], 3);
    let stale = read(&s, "f", Some(1), false);
    assert_eq!(
        stale["version_too_old"], true,
        "never a diff against the deleted file"
    );
    assert_eq!(s.usage("a")["total_bytes"], 6);
    assert_eq!(s.usage("a")["file_count"], 1);
}

#[test]
fn since_version_edges() {
    let s = Scratch::new();
    s.write("a", "f", &numbered(20));
    s.write("a", "f", &numbered(21));
    assert_eq!(
        s.err(
            "read_file",
            json!({ "agent_id": "a", "path": "f", "since_version": 3 })
        ),
        "since_version 3 is newer than the current version 2 of \"f\""
    );
    assert!(
        s.err(
            "read_file",
            json!({ "agent_id": "a", "path": "f", "since_version": 0 })
        )
        .starts_with("since_version must be a version number")
    );
    assert_eq!(
        read(&s, "f", Some(2), false),
        json!({ "path": "f", "current_version": 2, "since_version": 2, "diff": [], "unchanged": true,
                "tokens": 128 })
    );
}

#[test]
fn compact_diff_is_small_and_rebuilds_the_new_version_exactly() {
    let s = Scratch::new();
    let old = numbered(1000);
    let new = old.replace("line 500 of", "line five hundred of");
    s.write("a", "doc.md", &old);
    s.write("a", "doc.md", &new);

    let compact = read(&s, "doc.md", Some(1), false);
    assert_eq!(compact["since_version"], 1);
    assert_eq!(apply_diff(&old, &compact["diff"]), new);
    let sent = compact.to_string().len();
    assert!(
        sent * 50 < new.len(),
        "{sent} bytes for a one-line change to {} bytes",
        new.len()
    );
    let ops: Vec<&str> = compact["diff"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["skip", "equal", "remove", "add", "equal", "skip"]);

    let full = read(&s, "doc.md", Some(1), true);
    assert_eq!(apply_diff(&old, &full["diff"]), new);
    assert!(
        full["diff"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["op"] != "skip")
    );
}

#[test]
fn a_diff_no_smaller_than_the_content_sends_the_content() {
    let s = Scratch::new();
    s.write("a", "f", "a\nb\nc");
    s.write("a", "f", "x\ny\nz");
    assert_eq!(
        read(&s, "f", Some(1), false),
        json!({ "path": "f", "current_version": 2, "content": "x\ny\nz", "diff_not_smaller": true,
                "tokens": 131 })
    );
}

#[test]
fn a_pathological_1_mib_pair_answers_in_bounded_time() {
    let s = Scratch::new();
    let old: String = (0..100_000).map(|i| format!("{i:09}\n")).collect();
    let new: String = (0..100_000)
        .map(|i| format!("{:09}\n", i * 7 + 1))
        .collect();
    s.write("a", "big", &old);
    s.write("a", "big", &new);
    let answer = read(&s, "big", Some(1), false);
    // Nothing in common: the whole content is the cheaper answer.
    assert_eq!(answer["diff_not_smaller"], true);
}

#[test]
fn write_size_limit_at_n_and_n_plus_one_counts_utf8_bytes() {
    let s = Scratch::new();
    let limit = 1024 * 1024;
    assert_eq!(
        s.write("a", "at", &"é".repeat(limit / 2))["bytes"],
        limit as u64
    );
    assert_eq!(
        s.err("write_file", json!({ "agent_id": "a", "path": "over", "content": format!("{}x", "é".repeat(limit / 2)) })),
        "content is 1048577 bytes; the limit for one write is 1048576 bytes"
    );
    assert_eq!(
        s.usage("a")["file_count"],
        1,
        "the rejected write changed nothing"
    );
}

#[test]
fn the_file_quota_holds_at_1000() {
    let s = Scratch::new();
    for i in 0..1000 {
        s.write("a", &format!("f/{i:04}"), "x");
    }
    assert_eq!(
        s.err(
            "write_file",
            json!({ "agent_id": "a", "path": "f/extra", "content": "x" })
        ),
        "quota exceeded: agent \"a\" has 1000 files; the quota is 1000 files (delete one to make room)"
    );
    assert_eq!(s.usage("a")["file_count"], 1000);
    s.write("a", "f/0000", "rewrite is fine");
    s.ok("delete_file", json!({ "agent_id": "a", "path": "f/0001" }));
    s.write("a", "f/extra", "x");
    assert_eq!(s.usage("a")["file_count"], 1000);
}

#[test]
fn every_path_rule_is_named_with_the_value_and_changes_nothing() {
    let s = Scratch::new();
    let cases = [
        (
            "notes/../x",
            "path must not contain '..' (got \"notes/../x\")",
        ),
        (
            "/etc/passwd",
            "path must not start with '/' (got \"/etc/passwd\")",
        ),
        ("", "path must not be empty"),
        (
            "a b",
            "path may contain only [a-zA-Z0-9/_.-] (got \"a b\": ' ' at character 2)",
        ),
        ("..", "path must not contain '..' (got \"..\")"),
        (
            "a%2e%2e/b",
            "path may contain only [a-zA-Z0-9/_.-] (got \"a%2e%2e/b\": '%' at character 2)",
        ),
        (
            "nul\0byte",
            "path may contain only [a-zA-Z0-9/_.-] (got \"nul\\0byte\": '\\0' at character 4)",
        ),
    ];
    for (path, message) in cases {
        for tool in [
            "write_file",
            "read_file",
            "delete_file",
            "append_log",
            "read_log",
            "summarize_file",
        ] {
            let args = json!({ "agent_id": "a", "path": path, "content": "c", "entry": "e" });
            let mut args = args.as_object().unwrap().clone();
            if tool != "write_file" {
                args.remove("content");
            }
            if tool != "append_log" {
                args.remove("entry");
            }
            assert_eq!(s.err(tool, Value::Object(args)), message, "{tool} {path:?}");
        }
    }
    assert_eq!(s.write("a", &"p".repeat(255), "ok")["version"], 1);
    assert!(
        s.err(
            "write_file",
            json!({ "agent_id": "a", "path": "p".repeat(256), "content": "x" })
        )
        .starts_with("path is 256 characters; the limit is 255")
    );
    let usage = s.usage("a");
    assert_eq!(
        (
            usage["file_count"].as_u64(),
            usage["total_operations"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[test]
fn agent_id_rules_at_n_and_n_plus_one() {
    let s = Scratch::new();
    s.write(&"a".repeat(128), "f", "x");
    assert!(
        s.err(
            "write_file",
            json!({ "agent_id": "a".repeat(129), "path": "f", "content": "x" })
        )
        .starts_with("agent_id must be 1 to 128 characters (got 129:")
    );
    assert_eq!(
        s.err("list_files", json!({ "agent_id": "" })),
        "agent_id must be 1 to 128 characters (got 0: \"\")"
    );
    assert_eq!(
        s.err("get_usage_stats", json!({ "agent_id": "al ice" })),
        "agent_id may contain only [a-zA-Z0-9_-] (got \"al ice\": ' ' at character 3)"
    );
}

#[test]
fn arguments_that_do_not_fit_are_named() {
    let s = Scratch::new();
    let e = s.err("write_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(
        e,
        "invalid arguments for write_file: missing field `content`"
    );
    let e = s.err(
        "read_file",
        json!({ "agent_id": "a", "path": "f", "since_version": -1 }),
    );
    assert_eq!(
        e,
        "invalid arguments for read_file: since_version must be a whole number from 0 to 18446744073709551615 (got -1)"
    );
    let e = s.err(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "x", "if_version": 1 }),
    );
    assert!(
        e.starts_with("invalid arguments for write_file: unknown field `if_version`"),
        "{e}"
    );
    assert!(
        s.err("no_such_tool", json!({}))
            .starts_with("unknown tool \"no_such_tool\"")
    );
}

#[test]
fn listing_is_sorted_and_prefixes_are_literal() {
    let s = Scratch::new();
    for path in ["b/2", "a_b/1", "axb/1", "a/1", "b/10"] {
        s.write("a", path, path);
    }
    let paths = |prefix: Option<&str>| -> Vec<String> {
        let mut args = json!({ "agent_id": "a" });
        if let Some(p) = prefix {
            args["prefix"] = json!(p);
        }
        s.ok("list_files", args)["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(paths(None), ["a/1", "a_b/1", "axb/1", "b/10", "b/2"]);
    assert_eq!(paths(Some("a_")), ["a_b/1"], "'_' matches only itself");
    assert_eq!(paths(Some("b/1")), ["b/10"]);
    assert_eq!(paths(Some("")).len(), 5);
    assert!(paths(Some("B")).is_empty(), "case-sensitive");
    let file = &s.ok("list_files", json!({ "agent_id": "a", "prefix": "b/2" }))["files"][0];
    assert_eq!(
        (file["version"].as_u64(), file["bytes"].as_u64()),
        (Some(1), Some(3))
    );
    let updated = file["updated_at"].as_str().unwrap();
    assert!(
        updated.len() == 24 && updated.ends_with('Z') && updated.as_bytes()[10] == b'T',
        "{updated}"
    );
    assert!(
        s.err("list_files", json!({ "agent_id": "a", "prefix": "a%" }))
            .starts_with("prefix may contain only")
    );
}

fn text() -> impl Strategy<Value = String> {
    let line = prop_oneof!["alpha", "beta", "", "gamma\r", "δ", " indented"];
    (prop::collection::vec(line, 0..40), any::<bool>()).prop_map(|(lines, newline)| {
        let mut t = lines.join("\n");
        if newline {
            t.push('\n');
        }
        t
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        rng_seed: proptest::test_runner::RngSeed::Fixed(20261130),
        ..ProptestConfig::default()
    })]

    /// What a client rebuilds from either form of diff is the new version, byte for byte.
    #[test]
    fn diffs_round_trip_through_the_host(old in text(), new in text()) {
        let s = Scratch::new();
        s.write("a", "f", &old);
        let version = s.write("a", "f", &new)["version"].as_u64().unwrap();
        for full in [false, true] {
            let answer = read(&s, "f", Some(1), full);
            let rebuilt = match answer.get("diff") {
                Some(diff) => apply_diff(&old, diff),
                None => answer["content"].as_str().unwrap().to_owned(),
            };
            prop_assert_eq!(&rebuilt, &new);
            prop_assert_eq!(answer["current_version"].as_u64(), Some(version));
        }
    }
}

#[test]
fn conflict_checks_guard_writes_and_deletes_and_name_the_current_version() {
    let s = Scratch::new();
    let write = |content: &str, expected: u64| {
        s.call(
            "write_file",
            json!({ "agent_id": "a", "path": "f", "content": content, "expected_version": expected }),
        )
    };
    assert_eq!(write("one", 0).unwrap()["version"], 1);
    assert_eq!(
        write("two", 0).unwrap_err(),
        "conflict: \"f\" is at version 1, but the call expected no file; read it again and retry"
    );
    assert_eq!(write("two", 1).unwrap()["version"], 2);
    assert!(write("stale", 1).unwrap_err().contains("is at version 2"));
    let e = s.err(
        "delete_file",
        json!({ "agent_id": "a", "path": "f", "expected_version": 1 }),
    );
    assert!(e.starts_with("conflict: \"f\" is at version 2"), "{e}");
    assert_eq!(read(&s, "f", None, false)["content"], "two");
    let deleted = s.ok(
        "delete_file",
        json!({ "agent_id": "a", "path": "f", "expected_version": 2 }),
    );
    assert_eq!(deleted["deleted"], true);
}

#[test]
fn editing_one_line_of_1000_costs_a_fraction_of_rewriting_it() {
    let s = Scratch::new();
    let doc = numbered(1000);
    s.write("a", "doc.md", &doc);
    let edits =
        json!([{ "old": "line 500 of a long working document", "new": "line 500, revised" }]);
    let args = json!({ "agent_id": "a", "path": "doc.md", "base_version": 1, "edits": edits });
    let sent = args.to_string().len();
    let rewrite = json!({ "agent_id": "a", "path": "doc.md", "content": doc })
        .to_string()
        .len();
    assert!(
        sent * 20 < rewrite,
        "edit sends {sent} bytes, a rewrite {rewrite}"
    );
    let r = s.ok("edit_file", args.clone());
    assert_eq!(
        (r["version"].clone(), r["unchanged"].clone()),
        (json!(2), json!(false))
    );
    let expected = doc.replace("line 500 of a long working document", "line 500, revised");
    assert_eq!(
        read(&s, "doc.md", None, false)["content"],
        expected.as_str()
    );
    println!(
        "figure: one-line change to a 1,000-line file: edit_file sends {sent} bytes, write_file {rewrite}"
    );

    // The same edit again is against a stale base: a conflict, and nothing changes.
    let e = s.err("edit_file", args);
    assert!(e.starts_with("conflict: \"doc.md\" is at version 2"), "{e}");
    let lines = s.ok(
        "edit_file",
        json!({ "agent_id": "a", "path": "doc.md", "base_version": 2,
                "edits": [{ "start": 1, "end": 2, "lines": ["first two lines, merged"] }] }),
    );
    assert_eq!(lines["version"], 3);
    assert!(
        read(&s, "doc.md", None, false)["content"]
            .as_str()
            .unwrap()
            .starts_with("first two lines, merged\nline 3 ")
    );
    let e = s.err(
        "edit_file",
        json!({ "agent_id": "a", "path": "doc.md", "base_version": 3, "edits": [{ "old": "line 7", "new": "x" }] }),
    );
    assert!(e.contains("occurs 111 times; it must occur once"), "{e}");
    let e = s.err(
        "edit_file",
        json!({ "agent_id": "a", "path": "doc.md", "base_version": 3, "edits": [{ "old": "x", "start": 1 }] }),
    );
    assert!(e.starts_with("invalid arguments for edit_file"), "{e}");
}

#[test]
fn history_lists_the_kept_versions() {
    let s = Scratch::new();
    for i in 0..12 {
        s.write("a", "f", &format!("revision {i}"));
    }
    let h = s.ok("file_history", json!({ "agent_id": "a", "path": "f" }));
    let versions = h["versions"].as_array().unwrap();
    let numbers: Vec<u64> = versions
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, (3..=12).collect::<Vec<_>>());
    assert_eq!(versions[9]["bytes"], 11);
    assert_eq!(versions[9]["sha256"].as_str().unwrap().len(), 64);
    assert_ne!(versions[8]["sha256"], versions[9]["sha256"]);
    let e = s.err("file_history", json!({ "agent_id": "b", "path": "f" }));
    assert_eq!(e, "no file at path \"f\" for agent \"b\"");
}

#[test]
fn a_file_too_long_for_one_answer_comes_in_parts_that_rebuild_it() {
    let s = Scratch::new();
    // 990 KB of text: about 250,000 tokens, far over the 20,000 of one answer.
    let doc: String = (0..15_000)
        .map(|i| format!("{i:05}: a line of a long log that an agent wrote to its scratchpad\n"))
        .collect();
    assert!(doc.len() > 950_000);
    s.write("a", "big.md", &doc);
    let (mut joined, mut offset, mut parts) = (String::new(), None::<u64>, 0);
    loop {
        let mut args = json!({ "agent_id": "a", "path": "big.md" });
        if let Some(offset) = offset {
            args["offset"] = json!(offset);
        }
        let part = s.ok("read_file", args);
        let tokens = part["tokens"].as_u64().unwrap();
        assert!(tokens <= 20_000, "{tokens} tokens");
        let text = part["content"].as_str().unwrap();
        assert!(text.len() / 4 <= 20_000);
        joined.push_str(text);
        parts += 1;
        match part["next_line"].as_u64() {
            Some(next) => {
                assert_eq!(part["lines_left"].as_u64().unwrap(), 15_000 - next + 1);
                offset = Some(next);
            }
            None => break,
        }
    }
    assert_eq!(joined, doc);
    println!("figure: a 990 KB file read in {parts} parts of at most 20,000 estimated tokens");

    // A diff too large for one answer comes as the content's first part instead.
    let changed: String = doc
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 20 == 0 {
                format!("{l}!\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    s.write("a", "big.md", &changed);
    let r = read(&s, "big.md", Some(1), false);
    assert_eq!(r["diff_too_large"], true, "{}", r["tokens"]);
    assert_eq!(r["first_line"], 1);
    assert!(r["next_line"].as_u64().unwrap() > 1);
    // A small window, asked for.
    let window = s.ok(
        "read_file",
        json!({ "agent_id": "a", "path": "big.md", "offset": 3, "limit": 2 }),
    );
    assert_eq!(
        window["content"],
        "00002: a line of a long log that an agent wrote to its scratchpad\n00003: a line of a long log that an agent wrote to its scratchpad\n"
    );
    assert_eq!(
        (window["next_line"].clone(), window["lines_left"].clone()),
        (json!(5), json!(14_996))
    );
}

#[test]
fn read_files_warms_up_a_session_within_its_budget() {
    let s = Scratch::new();
    s.write("a", "ctx/plan.md", "the plan");
    s.write("a", "ctx/big.md", &numbered(2_000));
    s.write("a", "ctx/todo.md", "- ship");
    s.write("b", "ctx/secret.md", "b's");
    let r = s.ok(
        "read_files",
        json!({ "agent_id": "a", "prefix": "ctx/", "max_tokens": 5_000 }),
    );
    assert_eq!(
        r["files"],
        json!([
            { "path": "ctx/plan.md", "version": 1, "content": "the plan" },
            { "path": "ctx/todo.md", "version": 1, "content": "- ship" }
        ])
    );
    assert_eq!(r["left_out"][0]["path"], "ctx/big.md");
    assert!(r["left_out"][0]["tokens"].as_u64().unwrap() > 5_000);
    assert!(r["tokens"].as_u64().unwrap() <= 5_000);
    let named = s.ok(
        "read_files",
        json!({ "agent_id": "a", "paths": ["ctx/todo.md", "ctx/secret.md"] }),
    );
    assert_eq!(named["files"][0]["path"], "ctx/todo.md");
    assert_eq!(
        named["missing"],
        json!(["ctx/secret.md"]),
        "agent b's file is not a's"
    );
    let e = s.err(
        "read_files",
        json!({ "agent_id": "a", "max_tokens": 20_001 }),
    );
    assert_eq!(
        e,
        "max_tokens must be 1 to 20000, one answer's worth (got 20001)"
    );
}
