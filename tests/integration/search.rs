//! `search` through the whole host: BM25 ranking over a fixed corpus, lines with numbers,
//! isolation between agents, paging, and an index that follows every write, edit, delete
//! and rollback (checked by `verify`, which compares the index with the rows).

use crate::common::Scratch;
use scratchpad_mcp::storage::admin;
use scratchpad_store::index;
use serde_json::{Value, json};

fn search(s: &Scratch, agent: &str, query: &str) -> Value {
    s.ok("search", json!({ "agent_id": agent, "query": query }))
}

/// The paths of a search's hits, in order.
pub fn paths(found: &Value) -> Vec<String> {
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["path"].as_str().unwrap().to_owned())
        .collect()
}

/// A small corpus where one document is plainly the best answer to each query (by BM25
/// over the agent's own documents: the log entry that holds both words is long and mostly
/// about something else).
fn corpus(s: &Scratch) {
    let filler: String = (0..40)
        .map(|i| format!("Line {i} of general notes.\n"))
        .collect();
    s.write(
        "a",
        "deploy.md",
        "# Deploy\nThe deploy key rotates every Friday.\nDeploy with `make deploy`.\n",
    );
    s.write(
        "a",
        "notes/meeting.md",
        &format!("{filler}Someone said deploy once.\n"),
    );
    s.write("a", "notes/lunch.md", "Tacos on Friday.\n");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "runs.log", "entry": "nightly run: tests passed, lint passed, then deploy failed: key expired" }),
    );
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "runs.log", "entry": { "step": "deploy", "ok": true } }),
    );
    s.write(
        "b",
        "deploy.md",
        "Agent b's deploy notes: the key is in the vault.\n",
    );
}

#[test]
fn the_obvious_best_match_comes_first_with_its_line_numbers() {
    let s = Scratch::new();
    corpus(&s);
    let found = search(&s, "a", "deploy key");
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits[0]["path"], "deploy.md", "{found}");
    assert_eq!(hits[0]["version"], 1);
    assert_eq!(
        hits[0]["lines"],
        json!([
            { "line": 1, "text": "# Deploy" },
            { "line": 2, "text": "The deploy key rotates every Friday." },
            { "line": 3, "text": "Deploy with `make deploy`." }
        ])
    );
    assert!(paths(&found).contains(&"runs.log".to_owned()));
    let entry = hits.iter().find(|h| h["path"] == "runs.log").unwrap();
    assert_eq!(
        (entry["entry_id"].clone(), entry["text"].clone()),
        (
            json!(1),
            json!("nightly run: tests passed, lint passed, then deploy failed: key expired")
        )
    );
    assert_eq!(found["partial"], false);
    // Agent b's file holds both words too, and never shows.
    assert!(!found.to_string().contains("vault"));
    assert_eq!(paths(&search(&s, "b", "deploy key")), vec!["deploy.md"]);
    assert!(
        search(&s, "b", "tacos")["hits"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn no_document_with_every_word_falls_back_to_any_word_and_says_so() {
    let s = Scratch::new();
    corpus(&s);
    let found = search(&s, "a", "tacos vault");
    assert_eq!(found["partial"], true);
    assert_eq!(paths(&found), vec!["notes/lunch.md"]);
    // JSON entries are searchable by their values; prefixes narrow; paging continues.
    assert_eq!(
        paths(&s.ok(
            "search",
            json!({ "agent_id": "a", "query": "step", "prefix": "runs" })
        )),
        vec!["runs.log"]
    );
    let first = s.ok(
        "search",
        json!({ "agent_id": "a", "query": "deploy", "limit": 2 }),
    );
    assert_eq!(first["hits"].as_array().unwrap().len(), 2);
    let rest = s.ok(
        "search",
        json!({ "agent_id": "a", "query": "deploy", "offset": first["next_offset"] }),
    );
    let mut all = paths(&first);
    all.extend(paths(&rest));
    assert_eq!(all.len(), 4, "{all:?}");
    assert!(rest.get("next_offset").is_none());
}

#[test]
fn the_index_follows_writes_edits_deletes_and_restarts() {
    let mut s = Scratch::new();
    s.write("a", "f.md", "alpha beta\n");
    s.ok(
        "edit_file",
        json!({ "agent_id": "a", "path": "f.md", "base_version": 1,
                              "edits": [{ "old": "beta", "new": "gamma" }] }),
    );
    assert!(
        search(&s, "a", "beta")["hits"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(search(&s, "a", "gamma")["hits"][0]["version"], 2);
    s.ok("delete_file", json!({ "agent_id": "a", "path": "f.md" }));
    assert!(
        search(&s, "a", "alpha")["hits"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    s.write("a", "f.md", "alpha again\n");
    s.restart();
    assert_eq!(search(&s, "a", "alpha")["hits"][0]["version"], 3);
    let v = admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
    let e = s.err("search", json!({ "agent_id": "a", "query": "  ...  " }));
    assert!(e.starts_with("query must hold at least one word"), "{e}");
}

/// A store of schema 4 kept its index inside: on open it goes (its tables dropped), and the
/// first search builds the agent's part of the index file from the rows.
#[test]
fn a_store_that_kept_its_index_inside_gets_it_in_a_file_of_its_own() {
    let mut s = Scratch::new();
    corpus(&s);
    s.stop();
    std::fs::remove_file(index::file_of(&s.db())).ok();
    let db = crate::common::sql(&s.db());
    // Schema 4's tables: the documents, and agent "a"'s FTS5 table (the id in hex).
    db.execute_batch(
        "CREATE TABLE search_docs (id INTEGER PRIMARY KEY, agent_id TEXT, path TEXT,
                                   is_log INTEGER, ref INTEGER);
         CREATE VIRTUAL TABLE \"search_index_61\" USING fts5(body, content = '');
         ALTER TABLE agents DROP COLUMN generation;
         PRAGMA user_version = 4;",
    )
    .unwrap();
    drop(db);
    s.restart();
    assert_eq!(paths(&search(&s, "a", "deploy key"))[0], "deploy.md");
    let db = crate::common::sql(&s.db());
    let left: i64 = db
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'search%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0, "the store keeps no index of its own");
    let v = admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
}

/// The index file is a cache: deleted, or damaged beyond SQLite's reading, it is made again
/// from the store, and searches answer as before.
#[test]
fn a_lost_or_damaged_index_file_is_made_again() {
    let mut s = Scratch::new();
    corpus(&s);
    let before = search(&s, "a", "deploy friday");
    s.stop();
    index::remove(&s.db()).unwrap();
    s.restart();
    assert_eq!(search(&s, "a", "deploy friday"), before);
    s.stop();
    std::fs::write(
        index::file_of(&s.db()),
        b"not a database, not even close".repeat(200),
    )
    .unwrap();
    s.restart();
    assert_eq!(search(&s, "a", "deploy friday"), before);
}

/// Imports `export` as agent "a" into the stopped server's store, replacing what "a" had.
fn replace_agent_a(s: &Scratch, export: &[u8]) {
    scratchpad_mcp::ops::import(
        &s.db(),
        &mut &export[..],
        Some("a"),
        true,
        &scratchpad_guest::limits::NO_OVERRIDES,
    )
    .unwrap();
}

/// The index catches up with what changed since an agent's last search, whatever it was:
/// writes, deletes, log entries trimmed by id and by retention, an import that replaced the
/// agent, and a restore of an older snapshot.
#[test]
fn the_index_catches_up_with_trims_imports_and_restores() {
    let mut s = Scratch::new();
    for i in 1..=6 {
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "log", "entry": format!("entry{i} shared") }),
        );
    }
    s.write("a", "f.md", "shared words in a file\n");
    let hits = |s: &Scratch, word: &str| -> Vec<Value> {
        search(s, "a", word)["hits"].as_array().unwrap().clone()
    };
    assert_eq!(hits(&s, "shared").len(), 7);
    s.ok(
        "forget_log",
        json!({ "agent_id": "a", "path": "log", "before_entry": 3 }),
    );
    assert!(hits(&s, "entry1").is_empty() && hits(&s, "entry2").is_empty());
    assert_eq!(hits(&s, "entry3").len(), 1);
    s.ok(
        "forget_log",
        json!({ "agent_id": "a", "path": "log", "keep_last": 1 }),
    );
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "entry7 shared" }),
    );
    assert_eq!(
        hits(&s, "shared").len(),
        2,
        "entry 7 (the retention keeps one), and the file"
    );
    let v = admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);

    // A snapshot now; then more writes, searched; then the snapshot restored.
    let snapshot = s.dir.path().join("snap.db");
    admin::vacuum_into(&s.db(), &snapshot).unwrap();
    s.write("a", "f.md", "other words entirely\n");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "entry8 later" }),
    );
    assert_eq!(hits(&s, "later").len(), 1);
    s.stop();
    let lock = scratchpad_mcp::storage::StoreLock::exclusive(&s.db()).unwrap();
    admin::replace_store(&lock, &snapshot, &s.db(), ".before-restore").unwrap();
    drop(lock);
    s.restart();
    assert!(
        hits(&s, "later").is_empty(),
        "entry 8 is gone with the restore"
    );
    assert_eq!(hits(&s, "shared").len(), 2);

    // An import that replaces the agent with other data under the same numbers (f.md v1).
    s.write("b", "f.md", "b's unusual words\n");
    let mut exported = Vec::new();
    let mut out = std::io::Cursor::new(&mut exported);
    admin::export(&s.db(), "b", &mut out, &mut |_| {}).unwrap();
    let text = String::from_utf8(exported).unwrap();
    s.stop();
    replace_agent_a(&s, text.as_bytes());
    s.restart();
    assert_eq!(paths(&search(&s, "a", "unusual")), ["f.md"]);
    assert!(hits(&s, "shared").is_empty());
    let v = admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
}

/// Search statistics are the agent's own: how another agent's documents use the same words
/// changes neither the order of an agent's hits nor anything else in its answer. (With one
/// index for the whole store, BM25's counts were store-wide, and 50 documents of agent b
/// holding "alpha" turned a's tie between x.md and y.md into y.md first.)
#[test]
fn ranking_depends_on_the_agents_own_documents_only() {
    let s = Scratch::new();
    s.write("a", "x.md", "alpha one two three");
    s.write("a", "y.md", "beta one two three");
    let alone = search(&s, "a", "alpha beta");
    assert_eq!(paths(&alone), ["x.md", "y.md"]);
    for i in 0..50 {
        s.write("b", &format!("n{i}.md"), "alpha filler words");
    }
    assert_eq!(search(&s, "a", "alpha beta"), alone);
    assert_eq!(
        paths(&search(&s, "b", "alpha")).len(),
        10,
        "b finds its own"
    );
    assert!(admin::verify(&s.db()).unwrap().ok());
}

/// A store from before hashes were kept (schema 2, no `sha256` column) gets each version's
/// hash from its content on open, and verifies.
#[test]
fn a_store_from_before_version_hashes_gets_them_on_open() {
    let mut s = Scratch::new();
    corpus(&s);
    s.write("a", "deploy.md", "a second version of the deploy notes");
    s.stop();
    let db = crate::common::sql(&s.db());
    // Schema 2 had neither the column nor the index of the versions' metadata (schema 7).
    db.execute_batch(
        "DROP INDEX versions_meta; ALTER TABLE versions DROP COLUMN sha256;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(db);
    s.restart();
    assert!(admin::verify(&s.db()).unwrap().ok());
    let history = s.ok(
        "file_history",
        json!({ "agent_id": "a", "path": "deploy.md" }),
    );
    let last = &history["versions"][1];
    assert_eq!(
        last["sha256"],
        scratchpad_guest::ports::content_hash("a second version of the deploy notes")
    );
}

/// A file and a log of one path, equally good answers: the file comes first, and each page
/// of one hit holds the next one, so paging by offset neither repeats nor skips.
pub fn equal_hits_come_in_a_fixed_order(s: &Scratch) {
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "notes", "entry": "zebra" }),
    );
    s.write("a", "notes", "zebra");
    let page = |offset: u64| {
        s.ok(
            "search",
            json!({ "agent_id": "a", "query": "zebra", "limit": 1, "offset": offset }),
        )
    };
    let (first, second) = (page(0), page(1));
    assert!(first["hits"][0].get("lines").is_some(), "{first}");
    assert!(second["hits"][0].get("lines").is_none(), "{second}");
}

#[test]
fn equal_hits_come_in_a_fixed_order_on_sqlite() {
    equal_hits_come_in_a_fixed_order(&Scratch::new());
}

/// An import that races a search: the search read the store before the import and recorded
/// the agent's part of the index after it (here: the index file as it was before the import,
/// put back after it). The import moved the agent to a new lineage, so its next search
/// indexes it afresh rather than trusting documents of the replaced rows, even under the
/// same version numbers.
#[test]
fn an_index_recorded_before_an_import_is_not_trusted_after_it() {
    let mut s = Scratch::new();
    s.write("a", "f.md", "the old lineage's words\n");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "old entry" }),
    );
    assert_eq!(paths(&search(&s, "a", "lineage")), ["f.md"]);
    s.write("b", "f.md", "the imported text\n");
    s.ok(
        "append_log",
        json!({ "agent_id": "b", "path": "log", "entry": "new entry" }),
    );
    let mut exported = Vec::new();
    admin::export(
        &s.db(),
        "b",
        &mut std::io::Cursor::new(&mut exported),
        &mut |_| {},
    )
    .unwrap();
    s.stop();
    let index_file = index::file_of(&s.db());
    let before = std::fs::read(&index_file).unwrap();

    replace_agent_a(&s, &exported);
    std::fs::write(&index_file, before).unwrap();

    s.restart();
    assert!(
        paths(&search(&s, "a", "lineage")).is_empty(),
        "the replaced file's words"
    );
    assert_eq!(paths(&search(&s, "a", "imported")), ["f.md"]);
    assert_eq!(paths(&search(&s, "a", "new")), ["log"]);
    assert!(
        paths(&search(&s, "a", "old")).is_empty(),
        "the replaced entry's words"
    );
    let v = admin::verify(&s.db()).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
}
