//! The operator's side: configured limits reach the tools; export/import round trips;
//! verify finds what is broken; snapshot and restore keep to their promises.

use crate::common::Scratch;
use crate::standin::{Reply, StandIn};
use scratchpad_mcp::bindings::{LimitOverrides, NO_OVERRIDES};
use scratchpad_mcp::ops::{self, OpsError};
use scratchpad_mcp::storage::admin;
use scratchpad_mcp::summariser::AnthropicConfig;
use serde_json::json;
use std::path::Path;

/// A store with a bit of everything for agent "a": versions, a pruned history, a deleted
/// file, a summary, text and JSON log entries (key order and numbers as given), and a second
/// agent that must not travel with it.
fn populated() -> (Scratch, StandIn) {
    let standin = StandIn::start(vec![], Some(Reply::summary("A summary.")));
    let s = Scratch::with_anthropic(AnthropicConfig {
        api_key: Some("sk-test".into()),
        base_url: standin.base_url(),
        model: "claude-haiku-5-5".into(),
    });
    for i in 0..12 {
        s.write(
            "a",
            "notes/plan.md",
            &format!("plan, revision {i}\nline two\n"),
        );
    }
    s.write("a", "gone.txt", "soon deleted");
    s.ok(
        "delete_file",
        json!({ "agent_id": "a", "path": "gone.txt" }),
    );
    let long: String = (0..300)
        .map(|i| format!("line {i} of a long ünïcode file\n"))
        .collect();
    s.write("a", "long.md", &long);
    s.ok(
        "summarize_file",
        json!({ "agent_id": "a", "path": "long.md" }),
    );
    for entry in [
        json!("plain text"),
        json!({ "z": 1, "a": [1.5, null] }),
        json!(42),
    ] {
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "run.log", "entry": entry }),
        );
    }
    s.write("b", "other.md", "another agent's file");
    (s, standin)
}

fn export(db: &Path, agent: &str) -> Vec<u8> {
    let mut out = Vec::new();
    ops::export(db, agent, &mut out).unwrap();
    out
}

#[test]
fn configured_limits_reach_the_tools_and_the_usage_stats() {
    let s = Scratch::with_limits(LimitOverrides {
        versions_kept: Some(2),
        max_write_bytes: Some(100),
        ..NO_OVERRIDES
    });
    for i in 1..=3 {
        s.write("a", "f", &format!("v{i}"));
    }
    let read = s.ok(
        "read_file",
        json!({ "agent_id": "a", "path": "f", "since_version": 1 }),
    );
    assert_eq!(read["version_too_old"], true, "{read}");
    let e = s.err(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "x".repeat(101) }),
    );
    assert_eq!(
        e,
        "content is 101 bytes; the limit for one write is 100 bytes"
    );
    let quotas = &s.usage("a")["quotas"];
    assert_eq!(
        (
            quotas["versions_kept"].clone(),
            quotas["max_write_bytes"].clone(),
            quotas["max_files"].clone()
        ),
        (json!(2), json!(100), json!(1000))
    );
}

/// An export into a file writes beside it under the whole name with `.partial` added: a file
/// of the folder that shares its stem (`a.partial` beside `a.jsonl`) is not touched.
#[test]
fn an_export_into_a_file_leaves_its_neighbours_alone() {
    let (s, _standin) = populated();
    let dir = tempfile::tempdir().unwrap();
    let neighbour = dir.path().join("a.partial");
    std::fs::write(&neighbour, "someone else's").unwrap();
    let out = dir.path().join("a.jsonl");
    ops::export_file(&s.db(), "a", &out).unwrap();
    assert_eq!(std::fs::read(&out).unwrap(), export(&s.db(), "a"));
    assert_eq!(
        std::fs::read_to_string(&neighbour).unwrap(),
        "someone else's"
    );
    assert!(!dir.path().join("a.jsonl.partial").exists());
}

#[test]
fn export_import_export_gives_the_same_bytes() {
    let (s, _standin) = populated();
    let first = export(&s.db(), "a");
    let text = String::from_utf8(first.clone()).unwrap();
    assert!(
        !text.contains("another agent"),
        "agent b leaked into a's export"
    );
    assert!(
        text.contains(r#""json":"{\"z\":1,\"a\":[1.5,null]}""#),
        "{text}"
    );

    let other = tempfile::tempdir().unwrap();
    let db = other.path().join("copy.db");
    let (agent, tally) =
        ops::import(&db, &mut first.as_slice(), None, false, &NO_OVERRIDES).unwrap();
    assert_eq!(agent, "a");
    assert_eq!(
        (
            tally.files,
            tally.versions,
            tally.summaries,
            tally.log_entries
        ),
        (3, 11, 1, 3)
    );
    assert_eq!(export(&db, "a"), first);
    assert!(admin::verify(&db).unwrap().ok());

    // The imported store serves the agent as the original did: the same counters, numbers
    // that continue (the deleted path keeps its last number), the summary a cache hit.
    let before = s.usage("a");
    let mut copy = Scratch::new();
    copy.stop();
    std::fs::copy(&db, copy.db()).unwrap();
    copy.restart();
    let after = copy.usage("a");
    for counter in [
        "total_bytes",
        "file_count",
        "log_entry_count",
        "total_operations",
    ] {
        assert_eq!(after[counter], before[counter], "{counter}");
    }
    assert_eq!(copy.write("a", "gone.txt", "back")["version"], 2);
    assert_eq!(copy.write("a", "notes/plan.md", "new")["version"], 13);
    let summary = copy.ok(
        "summarize_file",
        json!({ "agent_id": "a", "path": "long.md" }),
    );
    assert_eq!(summary["cached"], true, "{summary}");
}

#[test]
fn import_refuses_to_overwrite_unless_asked_and_refuses_broken_files_whole() {
    let (s, _standin) = populated();
    let exported = export(&s.db(), "a");
    let usage_before = s.usage("b");

    let e = ops::import(
        &s.db(),
        &mut exported.as_slice(),
        None,
        false,
        &NO_OVERRIDES,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("agent \"a\" already has data in this store; pass --replace"),
        "{e}"
    );

    // Under another name it lands beside the original; with --replace it replaces.
    let (agent, _) = ops::import(
        &s.db(),
        &mut exported.as_slice(),
        Some("a2"),
        false,
        &NO_OVERRIDES,
    )
    .unwrap();
    assert_eq!(agent, "a2");
    s.write("a", "extra.md", "written after the export");
    ops::import(&s.db(), &mut exported.as_slice(), None, true, &NO_OVERRIDES).unwrap();
    assert_eq!(export(&s.db(), "a"), exported);
    assert!(admin::verify(&s.db()).unwrap().ok());

    // Truncated, reordered or tampered files change nothing.
    let text = String::from_utf8(exported).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let truncated = lines[..lines.len() - 1].join("\n");
    let swapped = {
        let mut l = lines.clone();
        l.swap(2, 3);
        l.join("\n")
    };
    let miscounted = text.replace("\"log_entries\":3", "\"log_entries\":4");
    // A version's content changed on the way (its length the same): its hash says so.
    let changed = text.replacen("line two", "line 2!!", 1);
    assert_ne!(changed, text);
    for (name, bad) in [
        ("truncated", truncated),
        ("swapped", swapped),
        ("miscounted", miscounted.clone()),
        ("changed", changed.clone()),
    ] {
        let fresh = tempfile::tempdir().unwrap();
        let db = fresh.path().join("s.db");
        let e = ops::import(&db, &mut bad.as_bytes(), None, false, &NO_OVERRIDES).unwrap_err();
        assert!(matches!(e, OpsError::Import(_)), "{name}: {e}");
        assert!(e.to_string().starts_with("line "), "{name}: {e}");
        assert_eq!(
            admin::stats(&db).unwrap(),
            vec![],
            "{name} left data behind"
        );
    }
    // The counts are said in words (they were the Rust form of a struct, its name and all).
    let fresh = tempfile::tempdir().unwrap();
    let db = fresh.path().join("s.db");
    let e = ops::import(&db, &mut miscounted.as_bytes(), None, false, &NO_OVERRIDES).unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 21: the end line counts 3 files, 11 versions, 1 summary, 4 log entries in 1 log \
         but the file holds 3 files, 11 versions, 1 summary, 3 log entries in 1 log"
    );
    // A file that is no export makes no store where there was none.
    let fresh = tempfile::tempdir().unwrap();
    let e = ops::import(
        &fresh.path().join("s.db"),
        &mut "not an export\n".as_bytes(),
        None,
        false,
        &NO_OVERRIDES,
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 1: not a scratchpad-export header (export files start with one)"
    );
    assert_eq!(std::fs::read_dir(fresh.path()).unwrap().count(), 0);
    // A version's content or a log entry's body changed on the way: each hash says so.
    let entry_changed = text.replacen("\"text\":\"plain text\"", "\"text\":\"plain tExt\"", 1);
    assert_ne!(entry_changed, text);
    for (bad, named) in [
        (&changed, "version 3 of \"notes/plan.md\": its content"),
        (&entry_changed, "log entry \"run.log\" #1: its body"),
    ] {
        let fresh = tempfile::tempdir().unwrap();
        let db = fresh.path().join("s.db");
        let e = ops::import(&db, &mut bad.as_bytes(), None, false, &NO_OVERRIDES).unwrap_err();
        assert!(
            e.to_string().ends_with(&format!(
                "{named} does not match its sha256 (the export was changed or damaged)"
            )),
            "{e}"
        );
    }
    assert_eq!(s.usage("b")["total_bytes"], usage_before["total_bytes"]);
}

#[test]
fn verify_passes_a_sound_store_and_names_each_broken_invariant() {
    let (s, _standin) = populated();
    let v = admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
    assert_eq!(
        (
            v.counts.agents,
            v.counts.files,
            v.counts.log_entries,
            v.counts.summaries
        ),
        (2, 3, 3, 1)
    );

    let conn = crate::common::sql(&s.db());
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         UPDATE agents SET total_bytes = total_bytes + 1 WHERE agent_id = 'a';
         UPDATE versions SET bytes = 1 WHERE version = 12;
         DELETE FROM versions WHERE version = 1 AND file_id = (SELECT id FROM files WHERE path = 'long.md');
         INSERT INTO summaries (file_id, version, model, summary, created_at)
             VALUES (999, 4, 'm', 's', '2026-01-01T00:00:00Z');",
    )
    .unwrap();
    let problems = admin::verify(&s.db()).unwrap().problems;
    let text = problems.join("\n");
    for expected in [
        "an agent whose counters are not what its rows add up to: a:",
        "a version whose recorded size is not its content's: a notes/plan.md v12",
        "a file whose recorded size is not its current version's: a notes/plan.md",
        "a summary whose version is not kept: a long.md v1",
        "a file whose current version is not its newest kept one: a long.md: current 1, newest kept none",
        "a version or summary of a file with no row: file 999 v4",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

/// Four bytes of a stored version and of a log entry changed on disk, their sizes the same
/// ("text" to "tExt"): `verify` names the agent, path and version or entry, and `file_history` still shows the hash the
/// version was written with, not one made from what is there now.
#[test]
fn changed_content_is_found_by_its_hash() {
    let s = Scratch::new();
    let written = "the text as written\n";
    s.write("a", "notes.md", written);
    s.write("a", "notes.md", "a second version\n");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "the entry text" }),
    );
    let before = s.ok(
        "file_history",
        json!({ "agent_id": "a", "path": "notes.md" }),
    );
    assert!(admin::verify(&s.db()).unwrap().ok());
    let conn = crate::common::sql(&s.db());
    conn.execute(
        "UPDATE versions SET content = replace(content, 'text', 'tExt') WHERE version = 1",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE log_entries SET body = replace(body, 'text', 'tExt')",
        [],
    )
    .unwrap();
    let problems = admin::verify(&s.db()).unwrap().problems;
    assert_eq!(
        problems,
        [
            "content changed since it was written: agent \"a\", path \"log\", log entry #1 does not match the SHA-256 it was written with",
            "content changed since it was written: agent \"a\", path \"notes.md\", version 1 does not match the SHA-256 it was written with"
        ]
    );
    let after = s.ok(
        "file_history",
        json!({ "agent_id": "a", "path": "notes.md" }),
    );
    assert_eq!(after, before, "the stored hashes, untouched");
    assert_eq!(
        after["versions"][0]["sha256"],
        scratchpad_guest::ports::content_hash(written)
    );
    // A snapshot of the damaged store is refused, naming the version.
    let snaps = tempfile::tempdir().unwrap();
    let e = ops::snapshot(&s.db(), &snaps.path().join("snap")).unwrap_err();
    assert!(
        e.to_string()
            .contains("path \"notes.md\", version 1 does not match the SHA-256"),
        "{e}"
    );
}

#[test]
fn snapshot_and_restore_keep_their_promises() {
    let (mut s, _standin) = populated();
    let snaps = tempfile::tempdir().unwrap();
    let dir = snaps.path().join("snap");
    let manifest = ops::snapshot(&s.db(), &dir).unwrap();
    assert_eq!((manifest.counts.agents, manifest.counts.files), (2, 4 - 1));
    assert_eq!(manifest.sha256.len(), 64);
    let e = ops::snapshot(&s.db(), &dir).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("is not empty; a snapshot goes to a new or empty folder"),
        "{e}"
    );

    // Changes after the snapshot; then a restore, refused while the store is open.
    s.write("a", "after.md", "written after the snapshot");
    let e = ops::restore(&s.db(), &dir).unwrap_err();
    assert!(
        e.to_string().contains("is in use by another process"),
        "{e}"
    );
    assert!(
        s.ok("list_files", json!({ "agent_id": "a" }))["files"]
            .to_string()
            .contains("after.md")
    );
    s.stop();
    let restored = ops::restore(&s.db(), &dir).unwrap();
    let aside = restored.replaced.expect("the old store is kept aside");
    assert!(
        admin::stats(&aside)
            .unwrap()
            .iter()
            .any(|a| a.agent_id == "a")
    );
    assert!(admin::verify(&aside).unwrap().ok());
    s.restart();
    let files = s.ok("list_files", json!({ "agent_id": "a" }))["files"].to_string();
    assert!(
        !files.contains("after.md") && files.contains("long.md"),
        "{files}"
    );
    assert!(admin::verify(&s.db()).unwrap().ok());

    // Interrupted after the copy, before the rename: a re-run finishes the job.
    s.stop();
    std::fs::rename(s.db(), s.dir.path().join("moved-away.db")).unwrap();
    std::fs::write(s.dir.path().join("store.db.restoring"), b"half a copy").unwrap();
    ops::restore(&s.db(), &dir).unwrap();
    assert!(admin::verify(&s.db()).unwrap().ok());

    // A snapshot whose file no longer matches its manifest is refused.
    let conn = crate::common::sql(&dir.join("scratchpad.db"));
    conn.execute("UPDATE agents SET total_operations = 0", [])
        .unwrap();
    drop(conn);
    let e = ops::restore(&s.db(), &dir).unwrap_err();
    assert!(e.to_string().contains("the manifest says"), "{e}");
}

/// An export edited by hand cannot put in what no tool call could: each rule of the tools
/// (agent id and path syntax, one write's size, one entry's size, versions kept, quotas,
/// under the operator's limits) is checked on import, named in the refusal, and nothing lands.
#[test]
fn an_import_is_held_to_the_tools_rules() {
    let header = |agent: &str| {
        format!(
            r#"{{"type":"header","format":"scratchpad-export","format_version":1,"agent_id":"{agent}"}}"#
        )
    };
    let file = |path: &str, last: u64| {
        format!(
            r#"{{"type":"file","path":"{path}","last_version":{last},"updated_at":"2026-12-01T00:00:00.000Z"}}"#
        )
    };
    let version = |path: &str, v: u64, content: &str| {
        format!(
            r#"{{"type":"version","path":"{path}","version":{v},"content":"{content}","created_at":"2026-12-01T00:00:00.000Z"}}"#
        )
    };
    let end = |files: u64, versions: u64| {
        format!(
            r#"{{"type":"end","files":{files},"versions":{versions},"summaries":0,"log_entries":0,"logs":0,"total_operations":1}}"#
        )
    };
    let tight = LimitOverrides {
        max_write_bytes: Some(10),
        versions_kept: Some(2),
        max_files: Some(1),
        ..NO_OVERRIDES
    };
    let eleven = "x".repeat(11);
    let cases = [
        (
            "bad agent",
            [
                header("no spaces"),
                file("f", 1),
                version("f", 1, "x"),
                end(1, 1),
            ]
            .join("\n"),
            "line 1: agent_id may contain only",
        ),
        (
            "bad path",
            [
                header("a"),
                file("../x", 1),
                version("../x", 1, "x"),
                end(1, 1),
            ]
            .join("\n"),
            "line 2: path must not contain '..' (got \"../x\")",
        ),
        (
            "too big",
            [
                header("a"),
                file("f", 1),
                version("f", 1, &eleven),
                end(1, 1),
            ]
            .join("\n"),
            "line 3: version 1 of \"f\": content is 11 bytes; the limit for one write is 10 bytes",
        ),
        (
            "too many versions",
            [
                header("a"),
                file("f", 3),
                version("f", 1, "a"),
                version("f", 2, "b"),
                version("f", 3, "c"),
                end(1, 3),
            ]
            .join("\n"),
            "line 5: \"f\" has more than 2 versions; 2 are kept",
        ),
        (
            "too many files",
            [
                header("a"),
                file("f", 1),
                version("f", 1, "a"),
                file("g", 1),
                version("g", 1, "b"),
                end(2, 2),
            ]
            .join("\n"),
            "line 4: more than 1 files; the agent's quota is 1 files",
        ),
        (
            "an entry nested too deep",
            [
                header("a"),
                r#"{"type":"log","path":"l","last_id":1}"#.to_owned(),
                format!(
                    r#"{{"type":"log_entry","path":"l","id":1,"json":"{}{}","created_at":"2026-12-01T00:00:00.000Z"}}"#,
                    "[".repeat(101),
                    "]".repeat(101)
                ),
                r#"{"type":"end","files":0,"versions":0,"summaries":0,"log_entries":1,"logs":1,"total_operations":1}"#.to_owned(),
            ]
            .join("\n"),
            "line 3: \"l\" #1: log entry nests 101 levels deep (arrays and objects one inside another); the limit is 100 levels",
        ),
    ];
    for (name, export, says) in cases {
        let fresh = tempfile::tempdir().unwrap();
        let db = fresh.path().join("s.db");
        let e = ops::import(&db, &mut export.as_bytes(), None, false, &tight).unwrap_err();
        assert!(e.to_string().starts_with(says), "{name}: {e}");
        // A header refused makes no store; a later line, an empty one.
        assert!(
            !db.exists() || admin::stats(&db).unwrap().is_empty(),
            "{name} left data behind"
        );
    }
    // Within the limits, the same shape lands.
    let fresh = tempfile::tempdir().unwrap();
    let ok = [
        header("a"),
        file("f", 2),
        version("f", 1, "a"),
        version("f", 2, "b"),
        end(1, 2),
    ]
    .join("\n");
    let (agent, tally) = ops::import(
        &fresh.path().join("s.db"),
        &mut ok.as_bytes(),
        None,
        false,
        &tight,
    )
    .unwrap();
    assert_eq!((agent.as_str(), tally.versions), ("a", 2));
}

/// Each cause once, as `main` prints an error: its text, then each source's.
fn chain(e: &OpsError) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text += &format!(": {cause}");
        source = cause.source();
    }
    text
}

/// What the operator's commands were given that cannot be used is named, with why, once:
/// an agent id no call could name or the store has never seen, a file where a snapshot's folder goes, a folder where the
/// store's file goes, an export that cannot be read. Nothing is written.
#[test]
fn the_operators_commands_name_what_they_cannot_use() {
    let s = Scratch::new();
    s.write("a", "f", "text");
    let mut out = Vec::new();
    let e = ops::export(&s.db(), "a b", &mut out).unwrap_err();
    assert_eq!(
        chain(&e),
        "--agent: agent_id may contain only [a-zA-Z0-9_-] (got \"a b\": ' ' at character 2)"
    );
    assert!(out.is_empty());
    let e = ops::export(&s.db(), "nobody", &mut out).unwrap_err();
    assert_eq!(
        chain(&e),
        "agent \"nobody\" has nothing in this store (`stats` lists the agents that do); nothing was written"
    );
    assert!(out.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "kept").unwrap();
    let e = ops::snapshot(&s.db(), &file).unwrap_err();
    assert!(
        chain(&e).ends_with("a-file is a file; a snapshot goes to a new or empty folder"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");

    let folder = "it is a folder, and the store is a file (such as scratchpad.db in it)";
    let e = admin::stats(dir.path()).unwrap_err().to_string();
    assert!(e.ends_with(folder), "{e}");
    let e = ops::import(
        dir.path(),
        &mut export(&s.db(), "a").as_slice(),
        None,
        false,
        &NO_OVERRIDES,
    )
    .unwrap_err();
    assert!(chain(&e).ends_with(folder), "{e}");

    let mut unreadable = std::io::BufReader::new(std::fs::File::open(dir.path()).unwrap());
    let e = ops::import(&s.db(), &mut unreadable, None, false, &NO_OVERRIDES).unwrap_err();
    let said = chain(&e);
    assert_eq!(said.matches("os error").count(), 1, "{said}");
    assert!(said.starts_with("cannot read the export: "), "{said}");
}
