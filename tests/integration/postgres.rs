//! PostgreSQL, the hosted backend. The tools give the same answers there as on SQLite (the
//! conformance cases run on both, see `conformance`); these tests cover what only a shared
//! database has: several server instances behaving as one, its schema migrations, and
//! what PostgreSQL would otherwise do differently (NUL in text, its own idea of a word).
//!
//! They need `SCRATCHPAD_TEST_POSTGRES` (see [`TestDatabase`]) and are skipped without it.

use crate::common::{Scratch, TestDatabase, entry_ids};
use crate::sandbox::HOSTILE;
use crate::standin::{Reply, StandIn};
use scratchpad_guest::names::{AgentId, FilePath};
use scratchpad_mcp::bindings::{LimitOverrides, NO_OVERRIDES};
use scratchpad_mcp::gate::{Gate, Refusal};
use scratchpad_mcp::keys::{Access, Credential, Identity, Scope};
use scratchpad_mcp::rate::{Rate, RateLimiter};
use scratchpad_mcp::sandbox::GUEST_COMPONENT;
use scratchpad_mcp::storage::{Backend, Mode, Postgres, pg_admin};
use scratchpad_mcp::summariser::AnthropicConfig;
use scratchpad_mcp::{CallError, Service};
use serde_json::{Value, json};

fn scratch() -> Option<Scratch> {
    Scratch::on_postgres(GUEST_COMPONENT, NO_OVERRIDES)
}

fn call(service: &Service, tool: &str, args: Value) -> Result<Value, String> {
    let Value::Object(args) = args else {
        panic!("arguments are an object")
    };
    service
        .call(tool, args)
        .map_err(|e: CallError| e.to_string())
}

/// The summariser pointed at `standin`, with a key.
fn anthropic(standin: &StandIn) -> AnthropicConfig {
    AnthropicConfig {
        api_key: Some("sk-ant-test".into()),
        base_url: standin.base_url(),
        model: "claude-haiku-5-5".into(),
    }
}

/// The shared invariants hold: counters equal rows, the index matches, sizes add up.
fn assert_sound(s: &Scratch) {
    let url = &s.database.as_ref().expect("a PostgreSQL store").url;
    let v = pg_admin::verify(url).expect("verify");
    assert!(v.ok(), "{:#?}", v.problems);
}

#[test]
fn two_instances_write_as_one_server() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (s, other) = (&s, &other);
            scope.spawn(move || {
                for i in 0..25 {
                    let service = if t % 2 == 0 { s.service() } else { other };
                    call(service, "write_file", json!({
                        "agent_id": "team", "path": format!("t{t}/f{i}"), "content": format!("{t} {i}")
                    }))
                    .unwrap();
                    call(service, "append_log", json!({
                        "agent_id": "team", "path": "events", "entry": format!("{t}:{i}")
                    }))
                    .unwrap();
                }
            });
        }
    });
    let usage = s.usage("team");
    assert_eq!(usage["file_count"], 100, "{usage:?}");
    assert_eq!(usage["log_entry_count"], 100, "{usage:?}");
    // Every entry is there once, with the ids 1 to 100 and none twice.
    let mut ids = Vec::new();
    let mut entries = Vec::new();
    let mut args = json!({ "agent_id": "team", "path": "events" });
    loop {
        let page = s.ok("read_log", args.clone());
        for e in page["entries"].as_array().unwrap() {
            ids.push(e["id"].as_u64().unwrap());
            entries.push(e["entry"].as_str().unwrap().to_owned());
        }
        if page["has_more"] == false {
            break;
        }
        args["since_entry"] = page["last_entry_id"].clone();
    }
    assert_eq!(ids, (1..=100).collect::<Vec<_>>());
    entries.sort();
    entries.dedup();
    assert_eq!(entries.len(), 100);
    assert_sound(&s);
}

#[test]
fn conflicting_writers_on_two_instances_never_both_win() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    s.write("a", "counter", "0");
    let wins = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let (s, other) = (&s, &other);
                scope.spawn(move || {
                    let service = if t % 2 == 0 { s.service() } else { other };
                    let mut wins = 0;
                    for _ in 0..20 {
                        let read = call(
                            service,
                            "read_file",
                            json!({ "agent_id": "a", "path": "counter" }),
                        )
                        .unwrap();
                        let (version, n) = (
                            read["current_version"].as_u64().unwrap(),
                            read["content"].as_str().unwrap().parse::<u64>().unwrap(),
                        );
                        match call(
                            service,
                            "write_file",
                            json!({
                                "agent_id": "a", "path": "counter", "content": (n + 1).to_string(),
                                "expected_version": version
                            }),
                        ) {
                            Ok(_) => wins += 1,
                            Err(e) => assert!(e.starts_with("conflict: "), "{e}"),
                        }
                    }
                    wins
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
    });
    // Each win added one to what it read, so no win was lost or doubled.
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "counter" }));
    assert_eq!(read["content"], wins.to_string());
    assert_eq!(read["current_version"], wins + 1);
    assert!(wins >= 20, "{wins} wins of 80 tries");
    assert_sound(&s);
}

#[test]
fn a_quota_holds_exactly_across_instances() {
    let limits = LimitOverrides {
        max_files: Some(10),
        ..NO_OVERRIDES
    };
    let Some(s) = Scratch::on_postgres(GUEST_COMPONENT, limits) else {
        return;
    };
    let other = s.another_instance();
    let created =
        std::thread::scope(|scope| {
            let workers: Vec<_> =
                (0..4)
                    .map(|t| {
                        let (s, other) = (&s, &other);
                        scope.spawn(move || {
                            let service = if t % 2 == 0 { s.service() } else { other };
                            (0..10)
                        .filter(|i| {
                            match call(service, "write_file", json!({
                                "agent_id": "a", "path": format!("{t}-{i}"), "content": "x"
                            })) {
                                Ok(_) => true,
                                Err(e) => {
                                    assert!(e.starts_with("quota exceeded: "), "{e}");
                                    false
                                }
                            }
                        })
                        .count()
                        })
                    })
                    .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .sum::<usize>()
        });
    assert_eq!(created, 10);
    assert_eq!(s.usage("a")["file_count"], 10);
    assert_sound(&s);
}

#[test]
fn a_trap_after_a_write_rolls_the_write_back() {
    let Some(s) = Scratch::on_postgres(HOSTILE, NO_OVERRIDES) else {
        return;
    };
    let e = s
        .call(
            "write_file",
            json!({ "agent_id": "write-then-panic", "path": "f", "content": "x" }),
        )
        .unwrap_err();
    assert!(e.starts_with("the tool logic failed"), "{e}");
    let mut db = s.pg();
    for table in ["files", "versions", "search_docs", "agents"] {
        let rows: i64 = db
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(rows, 0, "{table}");
    }
    assert_eq!(s.write("honest", "after", "fine")["version"], 1);
    assert_sound(&s);
}

#[test]
fn text_postgres_cannot_hold_and_words_its_parser_would_join_are_kept() {
    let Some(s) = scratch() else { return };
    let content = "nul \u{0} here\nsee config.toml and ops@example.com, naïve 日本語\n";
    s.write("a", "notes.md", content);
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "notes.md" }));
    assert_eq!(read["content"], content);
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "log", "entry": "a \u{0} b" }),
    );
    // PostgreSQL's own parser keeps `config.toml` and the address whole; the guest's words
    // are what a search matches, on either backend.
    for query in ["toml", "example", "naïve", "日本語"] {
        let found = s.ok("search", json!({ "agent_id": "a", "query": query }));
        assert_eq!(found["hits"][0]["path"], "notes.md", "{query}: {found}");
    }
    let found = s.ok("search", json!({ "agent_id": "a", "query": "b" }));
    assert_eq!(found["hits"][0]["path"], "log", "{found}");
    assert_sound(&s);
}

/// A key for `agents`, allowed to write.
fn key_for(agents: &[&str]) -> Identity {
    Identity {
        credential: Credential::Key,
        name: "team".into(),
        agents: agents.iter().map(|a| (*a).to_owned()).collect(),
        scope: Scope::ReadWrite,
        summaries: true,
        reads: true,
    }
}

#[test]
fn two_instances_share_each_agents_rate() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    let key = key_for(&["a", "b"]);
    // One call in 1,000 s on average, 5 at once: the burst is all this test can spend.
    let gates = [s.service(), &other].map(|service| {
        let gate = Gate {
            limiter: Some(RateLimiter::new(0.001, 5)),
            summaries: None,
            in_flight: None,
        };
        (gate, service)
    });
    let refusals = std::sync::Mutex::new(Vec::new());
    let granted = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..4 {
            let (gates, key, refusals, granted) = (&gates, &key, &refusals, &granted);
            scope.spawn(move || {
                for _ in 0..10 {
                    let (gate, service) = &gates[t % 2];
                    match gate.check(key, "a", Access::Write, service) {
                        Ok(()) => drop(granted.fetch_add(1, std::sync::atomic::Ordering::SeqCst)),
                        Err(refusal) => refusals.lock().unwrap().push(refusal.to_string()),
                    }
                }
            });
        }
    });
    // Each instance alone would have let 5 through; together they let 5 through.
    assert_eq!(granted.into_inner(), 5);
    let refusals = refusals.into_inner().unwrap();
    assert_eq!(refusals.len(), 35);
    for r in &refusals {
        assert!(
            r.starts_with(r#"rate limit: agent "a" may make 0.001 calls a second; retry in "#),
            "{r}"
        );
    }
    // Another agent has a bucket of its own.
    let (gate, service) = &gates[1];
    assert_eq!(gate.check(&key, "b", Access::Read, service), Ok(()));

    // A bucket refills with the database's clock, whichever instance took from it last.
    let fast = |service| {
        let gate = Gate {
            limiter: Some(RateLimiter::new(20.0, 1)),
            summaries: None,
            in_flight: None,
        };
        move |agent| gate.check(&key_for(&["c"]), agent, Access::Read, service)
    };
    let (first, second) = (fast(s.service()), fast(&other));
    assert_eq!(first("c"), Ok(()));
    match second("c") {
        Err(Refusal::Rate { wait_ms, .. }) => assert!((1..=50).contains(&wait_ms), "{wait_ms}"),
        other => panic!("expected a rate refusal, got {other:?}"),
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(second("c"), Ok(()));

    // What the shared bucket costs a call: one statement.
    let gate = Gate {
        limiter: Some(RateLimiter::new(1e6, 1_000_000)),
        summaries: None,
        in_flight: None,
    };
    let started = std::time::Instant::now();
    for _ in 0..200 {
        gate.check(&key, "b", Access::Read, &other).unwrap();
    }
    println!(
        "figure: a rate check on PostgreSQL takes {:?} (mean of 200)",
        started.elapsed() / 200
    );
}

#[test]
fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(s) = scratch() else { return };
    let url = s.database.as_ref().unwrap().url.clone();
    // A second open (and a second instance) finds the schema done.
    Postgres::open(&url).unwrap();
    let mut db = s.pg();
    let applied: i64 = db
        .query_one("SELECT count(*) FROM scratchpad_migrations", &[])
        .unwrap()
        .get(0);
    assert_eq!(applied, 8);
    db.execute(
        "INSERT INTO scratchpad_migrations (version, name) VALUES (99, 'from the future')",
        &[],
    )
    .unwrap();
    let e = Postgres::open(&url).err().expect("refused").to_string();
    assert!(
        e.contains("schema version 99, newer than this build's 8"),
        "{e}"
    );
    assert!(!e.contains("scratchpad@"), "no password or user in {e}");
}

/// A search reads its own agent's postings only: every lexeme carries its agent, so the
/// index scan for a word another agent holds in 200 documents finds this agent's 3. A store
/// indexed before that (words alone) is rewritten by the migration, and still searched.
#[test]
fn a_search_reads_only_its_agents_postings() {
    let Some(s) = scratch() else { return };
    for i in 0..200 {
        s.write("crowd", &format!("n/{i}"), "the plan again");
    }
    for i in 0..3 {
        s.write("solo", &format!("mine/{i}"), "my plan");
    }
    // Each agent's first search makes and stores its files' documents.
    for agent in ["crowd", "solo"] {
        s.ok("search", json!({ "agent_id": agent, "query": "plan" }));
    }
    let mut db = s.pg();
    let unprefixed: i64 = db
        .query_one(
            "SELECT count(*) FROM search_docs d, unnest(d.doc) l
             WHERE NOT starts_with(l.lexeme, d.agent_id || ':')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(unprefixed, 0);
    let scanned = |db: &mut postgres::Client| -> i64 {
        // The plan is `json`; the simple protocol hands it over as text.
        let messages = db
            .simple_query(
                "EXPLAIN (ANALYZE, FORMAT JSON) SELECT path FROM search_docs
                 WHERE agent_id = 'solo' AND doc @@ '''solo:plan'''::tsquery",
            )
            .unwrap();
        let plan = messages
            .iter()
            .find_map(|m| match m {
                postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .expect("a plan");
        let plan: Value = serde_json::from_str(&plan).unwrap();
        fn index_rows(node: &Value) -> Option<i64> {
            if node["Node Type"] == "Bitmap Index Scan" {
                return node["Actual Rows"].as_i64();
            }
            node["Plans"].as_array()?.iter().find_map(index_rows)
        }
        index_rows(&plan[0]["Plan"]).expect("a bitmap index scan")
    };
    db.batch_execute("SET enable_seqscan = off").unwrap();
    assert_eq!(
        scanned(&mut db),
        3,
        "the crowd's 200 documents are not read"
    );

    // As the schema of a build before version 5 was, with its documents of words alone
    // (and every file's document written with it). The migrations from 5 run again.
    db.batch_execute(
        "UPDATE search_docs SET doc = array_to_tsvector(ARRAY['my', 'plan']) WHERE agent_id = 'solo';
         DROP INDEX files_unindexed;
         ALTER TABLE files DROP COLUMN unindexed;
         DELETE FROM scratchpad_migrations WHERE version >= 5;",
    )
    .unwrap();
    Postgres::open(&s.database.as_ref().unwrap().url).unwrap();
    let found = s.ok("search", json!({ "agent_id": "solo", "query": "plan" }));
    assert_eq!(found["hits"].as_array().map(Vec::len), Some(3), "{found}");
    let crowd = s.ok(
        "search",
        json!({ "agent_id": "crowd", "query": "plan", "limit": 50 }),
    );
    assert_eq!(
        crowd["hits"].as_array().map(Vec::len),
        Some(50),
        "kept as they were"
    );
}

/// A file's write leaves its search document to the next search, which finds the file all
/// the same and then stores the document; the write deletes the document of the version it
/// replaces, so none of an older version is ever found or kept. A search that cannot take
/// its agent's lock at its end (a write of that agent is under way) stores nothing, and the
/// next one makes those documents again.
#[test]
fn a_files_document_is_made_by_the_next_search_and_then_kept() {
    let Some(s) = scratch() else { return };
    let docs = |s: &Scratch| -> Vec<(String, i64)> {
        s.pg()
            .query(
                "SELECT path, ref FROM search_docs WHERE NOT is_log ORDER BY path, ref",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    };
    let doc = |path: &str, version: i64| (path.to_owned(), version);
    let hits = |query: &str, prefix: &str| -> Vec<String> {
        crate::search::paths(&s.ok(
            "search",
            json!({ "agent_id": "a", "query": query, "prefix": prefix }),
        ))
    };
    s.write("a", "notes/one", "alpha beta");
    s.write("a", "notes/two", "alpha gamma");
    s.write("a", "plans/three", "alpha");
    assert_eq!(docs(&s), [], "no write made a document");
    assert_sound(&s);

    // A search under a prefix makes the documents of the files under it only.
    assert_eq!(hits("beta", "notes/"), ["notes/one"]);
    assert_eq!(docs(&s), [doc("notes/one", 1), doc("notes/two", 1)]);
    // Stored and newly made documents are searched and ranked together.
    let mut all = hits("alpha", "");
    all.sort();
    assert_eq!(all, ["notes/one", "notes/two", "plans/three"]);
    assert_eq!(docs(&s).len(), 3);

    s.write("a", "notes/one", "delta");
    assert_eq!(docs(&s), [doc("notes/two", 1), doc("plans/three", 1)]);
    assert_eq!(hits("beta", ""), Vec::<String>::new());
    assert_eq!(hits("delta", ""), ["notes/one"]);
    assert_eq!(docs(&s)[0], doc("notes/one", 2));
    assert_sound(&s);

    // Another instance writing for the agent holds its lock: nothing is stored meanwhile.
    s.write("a", "notes/one", "epsilon");
    let mut writer = s.pg();
    writer
        .execute("SELECT pg_advisory_lock(hashtextextended('a', 0))", &[])
        .unwrap();
    assert_eq!(hits("epsilon", ""), ["notes/one"]);
    assert_eq!(docs(&s).len(), 2, "{:?}", docs(&s));
    // Let go and answered, not only dropped: a dropped client's session may still hold the
    // lock when the next search tries it.
    writer
        .execute("SELECT pg_advisory_unlock(hashtextextended('a', 0))", &[])
        .unwrap();
    assert_eq!(hits("epsilon", ""), ["notes/one"]);
    assert_eq!(docs(&s)[0], doc("notes/one", 3));

    // A deleted file is not found, and leaves no document.
    s.ok(
        "delete_file",
        json!({ "agent_id": "a", "path": "notes/one" }),
    );
    assert_eq!(hits("epsilon", ""), Vec::<String>::new());
    assert_eq!(docs(&s), [doc("notes/two", 1), doc("plans/three", 1)]);
    assert_sound(&s);
}

/// `verify` of a database this server never opened says so, and creates nothing there.
#[test]
fn verify_of_a_database_without_the_schema_says_so() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let e = pg_admin::verify(&db.url).unwrap_err();
    assert!(
        e.to_string()
            .contains("the database holds no scratchpad-mcp schema"),
        "{e}"
    );
    let tables: i64 = db
        .client()
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 0, "verify created nothing");
}

#[test]
fn verify_finds_damage_and_names_it() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "hello");
    s.ok(
        "append_log",
        json!({ "agent_id": "a", "path": "l", "entry": "e" }),
    );
    assert_sound(&s);
    let mut db = s.pg();
    db.batch_execute(
        "UPDATE agents SET total_bytes = total_bytes + 7;
         UPDATE logs SET entries = 5;
         DELETE FROM search_docs WHERE is_log;
         UPDATE files SET unindexed = false;
         UPDATE versions SET content = convert_to('hEllo', 'UTF8');
         UPDATE log_entries SET body = convert_to('E', 'UTF8')",
    )
    .unwrap();
    let v = pg_admin::verify(&s.database.as_ref().unwrap().url).unwrap();
    let problems = v.problems.join("\n");
    for want in [
        "an agent whose counters are not what its rows add up to: a: counters 13 B",
        "a log whose entry count is not the entries it holds: a l: 5 counted, 1 held",
        "a log entry missing from the search index: a l #1",
        "a current file version missing from the search index: a f v1",
        "content changed since it was written: agent \"a\", path \"f\", version 1 does not match the SHA-256 it was written with",
        "agent \"a\", path \"l\", log entry #1 does not match the SHA-256 it was written with",
    ] {
        assert!(problems.contains(want), "{want}\nin:\n{problems}");
    }
    assert_eq!(v.counts.files, 1);
    let stats = pg_admin::stats(&s.database.as_ref().unwrap().url).unwrap();
    assert_eq!(stats[0].total_bytes, 13);
}

/// What a word is, is the guest's on both backends. Where SQLite's tokenizer had its own
/// idea ("café" folded into "cafe", letters newer than its Unicode 6.1 taken for spaces), the
/// two backends now find the same documents for every query.
#[test]
fn both_backends_find_the_same_documents_for_every_word() {
    let Some(pg) = scratch() else { return };
    let lite = Scratch::new();
    let docs = [
        ("cafe-accent.md", "un café noir"),
        ("cafe-plain.md", "a cafe latte"),
        ("naive.md", "a naïve approach"),
        (
            "adlam.md",
            "\u{1E900}\u{1E901} in Adlam, added in Unicode 9",
        ),
        ("wide.md", "ＡＢＣ in fullwidth letters"),
        ("strasse.md", "die Straße"),
        ("names.md", "snake_case and config.toml"),
    ];
    for s in [&lite, &pg] {
        for (path, content) in docs {
            s.write("a", path, content);
        }
    }
    let found = |s: &Scratch, query: &str| -> Vec<String> {
        let answer = s.ok("search", json!({ "agent_id": "a", "query": query }));
        let mut paths: Vec<String> = answer["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap().to_owned())
            .collect();
        paths.sort();
        paths
    };
    for query in [
        "café",
        "cafe",
        "naïve",
        "naive",
        "\u{1E922}\u{1E923}",
        "adlam",
        "ａｂｃ",
        "abc",
        "straße",
        "strasse",
        "snake",
        "case",
        "config",
        "toml",
    ] {
        assert_eq!(found(&lite, query), found(&pg, query), "{query}");
    }
    assert_eq!(found(&lite, "cafe"), ["cafe-plain.md"]);
    assert_eq!(found(&lite, "café"), ["cafe-accent.md"]);
    assert_eq!(
        found(&lite, "\u{1E922}\u{1E923}"),
        ["adlam.md"],
        "Adlam, by its lower case"
    );
}

#[test]
fn an_unreachable_database_is_named_without_its_password() {
    if TestDatabase::create().is_none() {
        return;
    }
    let url = scratchpad_mcp::storage::DatabaseUrl::parse(
        "postgres://sp:s3cret@127.0.0.1:9/none?connect_timeout=2",
    )
    .unwrap();
    let e = Postgres::open(&url).err().expect("refused").to_string();
    assert!(
        e.starts_with("cannot open the store at postgres://sp:***@127.0.0.1:9/none"),
        "{e}"
    );
    assert!(!e.contains("s3cret"), "{e}");
}

/// A role that may not create the tables (since PostgreSQL 15, a role that does not own the
/// database may not create them in `public`) is told what it lacks and how to grant it, not
/// "PostgreSQL error 42501".
#[test]
fn a_role_that_may_not_create_the_tables_is_told_what_it_lacks() {
    let Some(database) = TestDatabase::create() else {
        return;
    };
    database
        .client()
        .batch_execute("REVOKE CREATE ON SCHEMA public FROM pg_database_owner")
        .unwrap();
    let e = Postgres::open(&database.url)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        e.contains("the database role lacks a privilege it needs"),
        "{e}"
    );
    assert!(e.contains("GRANT CREATE ON SCHEMA public"), "{e}");
    database
        .client()
        .batch_execute("GRANT CREATE ON SCHEMA public TO pg_database_owner")
        .unwrap();
    assert!(Postgres::open(&database.url).is_ok());
}

/// A pooler in transaction mode lends each transaction whichever server process is free,
/// where this server keeps prepared statements and settings per connection: it is refused
/// at start with the reason and what to do, not left to fail calls with "PostgreSQL error
/// 42P05". The same database reached directly opens.
#[test]
fn a_pooler_in_transaction_mode_is_refused_with_the_reason() {
    let Some(database) = TestDatabase::create() else {
        return;
    };
    let Some(pooled) = database.through_pooler() else {
        return;
    };
    let e = Postgres::open(&pooled).err().expect("refused").to_string();
    assert!(e.contains("a pooler in transaction mode"), "{e}");
    assert!(e.contains("connect to PostgreSQL directly"), "{e}");
    assert!(!e.contains("scratchpad_test:scratchpad_test"), "{e}");
    assert!(Postgres::open(&database.url).is_ok());
}

/// A connection refused mid-service (here: the database takes no more connections) tells
/// the operator's log why, in the driver's words, and the caller only that the database
/// cannot be reached: no user, database name or server message.
#[test]
fn a_caller_never_reads_the_drivers_words() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "before");
    let database = s.database.as_ref().unwrap();
    database.admin("ALTER DATABASE {db} CONNECTION LIMIT 0");
    database.admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{db}' AND pid <> pg_backend_pid()",
    );
    // The pooled connection is gone; the next calls need new ones, which are refused.
    let errors: Vec<String> = (0..3)
        .map(|_| s.err("read_file", json!({ "agent_id": "a", "path": "f" })))
        .collect();
    database.admin("ALTER DATABASE {db} CONNECTION LIMIT -1");
    assert!(
        errors.iter().any(|e| e
            == "storage failed (the database cannot be reached (the server's log says why)); nothing was changed"),
        "{errors:?}"
    );
    for e in &errors {
        for driver in [
            "FATAL",
            "too many connections",
            "db error",
            "sp_test_",
            "scratchpad_test",
        ] {
            assert!(!e.contains(driver), "{e}");
        }
    }
}

/// Ends every connection the server under test holds to its database, as a restart would,
/// and waits until they are gone, not only told to go; how many there were.
fn end_connections(s: &Scratch) -> i64 {
    let mut db = s.pg();
    let mine = "datname = current_database() AND application_name = 'scratchpad-mcp'";
    let mut count = |sql: String| -> i64 { db.query_one(&sql, &[]).unwrap().get(0) };
    let ended = count(format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE {mine}"
    ));
    while count(format!(
        "SELECT count(*) FROM pg_stat_activity WHERE {mine}"
    )) > 0
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    ended
}

/// A database that ended every connection (a restart, a failover, an operator's
/// `pg_terminate_backend`) costs no call: the first statement on a pooled connection finds it
/// gone, the pool closes every connection made before, and the call runs again on a new one.
#[test]
fn a_database_that_ended_its_connections_costs_no_call() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "before");
    // Several connections in the pool, each of which the database is about to end: a call
    // that found one gone and took the next would fail again.
    std::thread::scope(|scope| {
        for t in 0..6 {
            let s = &s;
            scope.spawn(move || s.write(&format!("agent{t}"), "g", "x"));
        }
    });
    let ended = end_connections(&s);
    assert!(ended >= 2, "{ended} pooled connections ended");
    // Each kind of work on a connection, each the first after an end.
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(read["content"], "before");
    end_connections(&s);
    assert_eq!(s.write("a", "f", "after")["version"], 2);
    end_connections(&s);
    let rate = Rate {
        per_second: 100.0,
        burst: 100.0,
    };
    let taken = s
        .service()
        .take_call("a", rate)
        .expect("kept in the database");
    assert!(matches!(taken, Ok(Ok(()))), "{taken:?}");
    end_connections(&s);
    let listed = s.service().all_files(None, None, 100).expect("listed");
    assert_eq!(listed.len(), 7);
    end_connections(&s);
    let read = s.ok(
        "read_file",
        json!({ "agent_id": "a", "path": "f", "since_version": 1 }),
    );
    assert_eq!(read["current_version"], 2, "{read}");
    assert_sound(&s);
}

/// A database that ends idle sessions (`idle_session_timeout`, common on hosted PostgreSQL)
/// ends the pool's idle connections with them: that too costs no call.
#[test]
fn idle_connections_the_database_timed_out_cost_no_call() {
    let Some(s) = scratch() else { return };
    let database = s.database.as_ref().unwrap();
    database.admin("ALTER DATABASE {db} SET idle_session_timeout = '200ms'");
    // The pool's connections were made before; these calls make new ones, which time out.
    end_connections(&s);
    for round in 0..3 {
        s.write("a", "f", &format!("round {round}"));
        std::thread::sleep(std::time::Duration::from_millis(600));
        let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
        assert_eq!(read["content"], format!("round {round}"));
        std::thread::sleep(std::time::Duration::from_millis(600));
    }
    database.admin("ALTER DATABASE {db} RESET idle_session_timeout");
}

/// A database that takes no writes (a standby, `default_transaction_read_only`) is named as
/// such, not as a read-only file; reads go on.
#[test]
fn a_database_that_takes_no_writes_says_so() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "one");
    let database = s.database.as_ref().unwrap();
    database.admin("ALTER DATABASE {db} SET default_transaction_read_only = on");
    end_connections(&s);
    let e = s.err(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "two" }),
    );
    database.admin("ALTER DATABASE {db} RESET default_transaction_read_only");
    assert_eq!(
        e,
        "storage failed (PostgreSQL refuses writes here: the server is a read-only standby, or \
         the database has default_transaction_read_only on); nothing was changed"
    );
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(read["content"], "one");
}

/// A connection lost during the commit leaves the call's outcome unknown to the server: the
/// call is not run again, and its error says it may or may not have been stored, never that
/// nothing was changed. (Here the database ends the connection while it commits, from a
/// deferred trigger, so the write was in fact rolled back.)
#[test]
fn a_connection_lost_at_the_commit_is_said_so_and_not_run_again() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "one");
    s.pg()
        .batch_execute(
            "CREATE SEQUENCE commits_tried;
             CREATE FUNCTION vanish() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN
                    PERFORM nextval('commits_tried');
                    PERFORM pg_terminate_backend(pg_backend_pid());
                    RETURN NULL;
                  END $$;
             CREATE CONSTRAINT TRIGGER vanish AFTER INSERT ON versions
               DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION vanish();",
        )
        .unwrap();
    let e = s.err(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "two" }),
    );
    assert_eq!(
        e,
        "the connection to PostgreSQL was lost during the commit: the call may or may not have \
         been stored; read before retrying"
    );
    s.pg()
        .batch_execute("DROP TRIGGER vanish ON versions")
        .unwrap();
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(
        read["content"], "one",
        "rolled back, as the database ended it"
    );
    // Run once: a second run would have tried a second commit (and, lost again, a third). A
    // sequence counts each try, rolled back or not.
    let tried: i64 = s
        .pg()
        .query_one("SELECT last_value FROM commits_tried", &[])
        .unwrap()
        .get(0);
    assert_eq!(tried, 1, "commits tried");
    assert_sound(&s);
}

#[test]
fn a_writer_held_off_past_the_deadline_gets_busy_and_other_agents_do_not_wait() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "before");
    // Another instance's long call on agent "a", as PostgreSQL sees it: the agent's lock.
    let mut holder = s.pg();
    holder
        .execute("SELECT pg_advisory_lock(hashtextextended('a', 0))", &[])
        .unwrap();
    let started = std::time::Instant::now();
    let e = s
        .call(
            "write_file",
            json!({ "agent_id": "a", "path": "f", "content": "after" }),
        )
        .unwrap_err();
    let waited = started.elapsed();
    assert_eq!(
        e,
        "the store is busy: another process held it past the wait deadline; nothing was changed, retry the call"
    );
    // PostgreSQL times its `lock_timeout` (5 s) on its own clock, which can run a few
    // milliseconds ahead of ours (CI once saw 4.997 s): a margin, so the test asks only that
    // the call waited out the deadline rather than refusing at once or hanging.
    assert!(
        waited >= std::time::Duration::from_secs(4) && waited < std::time::Duration::from_secs(30),
        "{waited:?}"
    );
    // Reads of "a" and writes of another agent go on meanwhile.
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(read["content"], "before");
    let started = std::time::Instant::now();
    s.write("b", "f", "not held");
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    drop(holder);
    assert_eq!(s.write("a", "f", "after")["version"], 2);
    assert_sound(&s);
}

/// Every statement is bounded by its connection's `statement_timeout` (30 s): a write whose
/// insert the database makes hang (a trigger that sleeps a minute, for content of one size)
/// is stopped, answered with a sentence, and changes nothing; the next call is served.
#[test]
fn a_statement_past_the_timeout_is_stopped_and_changes_nothing() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "before");
    s.pg()
        .batch_execute(
            "CREATE FUNCTION sleep_a_minute() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN PERFORM pg_sleep(60); RETURN NEW; END $$;
             CREATE TRIGGER slow BEFORE INSERT ON versions
               FOR EACH ROW WHEN (NEW.bytes = 4242) EXECUTE FUNCTION sleep_a_minute();",
        )
        .unwrap();
    let started = std::time::Instant::now();
    let e = s
        .call(
            "write_file",
            json!({ "agent_id": "a", "path": "f", "content": "x".repeat(4242) }),
        )
        .unwrap_err();
    let waited = started.elapsed();
    assert!(
        e.contains("a statement ran longer than 30 s and was stopped"),
        "{e}"
    );
    assert!(
        waited >= std::time::Duration::from_secs(29) && waited < std::time::Duration::from_secs(59),
        "{waited:?}"
    );
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(read["content"], "before");
    assert_eq!(s.write("a", "f", "after")["version"], 2);
    assert_sound(&s);
}

/// A write's version and its pruning are not waited for one by one: they go to the
/// database with the call's commit. When one of them fails there (here the pruning, which a
/// trigger refuses), the call fails whole: no new version, counters as before, and the
/// agent's next write is served.
#[test]
fn a_statement_sent_with_the_commit_that_fails_fails_the_whole_call() {
    let Some(s) = scratch() else { return };
    for i in 1..=10 {
        s.write("a", "f", &format!("version {i}"));
    }
    let before = s.usage("a");
    s.pg()
        .batch_execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
             CREATE TRIGGER keep BEFORE DELETE ON versions
               FOR EACH ROW EXECUTE FUNCTION refuse();",
        )
        .unwrap();
    let e = s
        .call(
            "write_file",
            json!({ "agent_id": "a", "path": "f", "content": "version 11" }),
        )
        .unwrap_err();
    assert!(e.contains("PostgreSQL error P0001"), "{e}");
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(
        (&read["content"], &read["current_version"]),
        (&json!("version 10"), &json!(10))
    );
    let after = s.usage("a");
    for counter in ["total_bytes", "file_count"] {
        assert_eq!(after[counter], before[counter], "{counter}");
    }
    s.pg()
        .batch_execute("DROP TRIGGER keep ON versions")
        .unwrap();
    assert_eq!(s.write("a", "f", "version 11")["version"], 11);
    assert_sound(&s);
}

/// A call is one operation however it ends up counted: a call that changes its agent's
/// counters (a version stored, a log entry appended, a file deleted) counts itself in that
/// same statement, and its commit adds nothing; a write call that changes none (the same
/// content again, a delete of nothing) counts at its commit; a read call in memory, written
/// with its agent's next write; a failed one not at all.
#[test]
fn every_call_counts_one_operation_whichever_statement_counts_it() {
    let Some(s) = scratch() else { return };
    let operations = || -> i64 {
        s.pg()
            .query_one(
                "SELECT total_operations FROM agents WHERE agent_id = 'a'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    s.write("a", "f", "version 1");
    let first = operations();
    assert_eq!(first, 1, "a first write, which made the agent's row");
    for i in 2..=15 {
        s.write("a", "f", &format!("version {i}"));
    }
    assert_eq!(
        operations(),
        15,
        "writes that stored versions, the later ones pruning"
    );
    assert_eq!(s.write("a", "f", "version 15")["unchanged"], true);
    assert_eq!(operations(), 16, "a write that stored nothing");
    s.call(
        "write_file",
        json!({ "agent_id": "a", "path": "../f", "content": "x" }),
    )
    .unwrap_err();
    assert_eq!(operations(), 16, "a failed write");
    s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(operations(), 16, "a read, kept in memory");
    for i in 1..=3 {
        s.ok(
            "append_log",
            json!({ "agent_id": "a", "path": "log", "entry": format!("entry {i}") }),
        );
    }
    assert_eq!(
        operations(),
        20,
        "the read, carried by the first append, and appends"
    );
    s.ok("delete_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(operations(), 21, "a delete");
    let again = s.ok("delete_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(again["deleted"], false);
    assert_eq!(
        operations(),
        22,
        "a delete of nothing, counted at its commit"
    );
    assert_sound(&s);
}

/// A read call writes nothing for its count: `get_usage_stats` adds the reads kept in
/// memory to the stored count; the agent's next write carries them (a write that fails puts
/// them back); the hundredth read kept writes them all; and so does letting the store go.
#[test]
fn reads_are_counted_in_memory_until_a_write_carries_them() {
    let Some(mut s) = scratch() else { return };
    let stored = |s: &Scratch, agent: &str| -> i64 {
        s.pg()
            .query_opt(
                "SELECT total_operations FROM agents WHERE agent_id = $1",
                &[&agent],
            )
            .unwrap()
            .map_or(0, |r| r.get(0))
    };
    s.write("a", "f", "one");
    for _ in 0..3 {
        s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    }
    assert_eq!(stored(&s, "a"), 1, "the write alone");
    assert_eq!(
        s.usage("a")["total_operations"],
        4,
        "the write and three reads"
    );
    s.call(
        "write_file",
        json!({ "agent_id": "a", "path": "../f", "content": "x" }),
    )
    .unwrap_err();
    s.pg()
        .batch_execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
             CREATE TRIGGER refuse BEFORE INSERT ON versions FOR EACH ROW EXECUTE FUNCTION refuse()",
        )
        .unwrap();
    s.call(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "two" }),
    )
    .unwrap_err();
    assert_eq!(stored(&s, "a"), 1, "a failed write carried nothing");
    s.pg()
        .batch_execute("DROP TRIGGER refuse ON versions")
        .unwrap();
    s.write("a", "f", "two");
    assert_eq!(
        stored(&s, "a"),
        6,
        "two writes and four reads (the usage one)"
    );
    assert_eq!(s.usage("a")["total_operations"], 6);

    // Another agent's reads reach the database with the hundredth read kept.
    s.write("b", "g", "x");
    for _ in 0..98 {
        s.ok("read_file", json!({ "agent_id": "b", "path": "g" }));
    }
    assert_eq!(stored(&s, "b"), 1, "98 reads of b and a's usage kept");
    s.ok("read_file", json!({ "agent_id": "b", "path": "g" }));
    assert_eq!((stored(&s, "a"), stored(&s, "b")), (7, 100), "all written");

    s.ok("read_file", json!({ "agent_id": "b", "path": "g" }));
    assert_eq!(stored(&s, "b"), 100);
    s.restart();
    assert_eq!(stored(&s, "b"), 101, "written when the store was let go");
    assert_sound(&s);
}

/// A read call's answer is handed over while its snapshot is still open: ending it changes
/// no answer, and costs a round trip. A write call's answer only once it committed.
#[test]
fn a_read_answers_before_its_snapshot_ends_and_a_write_after_its_commit() {
    let Some(s) = scratch() else { return };
    s.write("a", "f", "x");
    let mut db = s.pg();
    let mut open_transactions = move || -> i64 {
        db.query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'scratchpad-mcp'
               AND state = 'idle in transaction'",
            &[],
        )
        .unwrap()
        .get(0)
    };
    let args = |v: Value| match v {
        Value::Object(map) => map,
        _ => unreachable!("arguments are an object"),
    };
    let read = json!({ "agent_id": "a", "path": "f" });
    let at_answer = s.service().answer_then("read_file", args(read), |answer| {
        assert!(answer.is_ok(), "{answer:?}");
        open_transactions()
    });
    assert_eq!(at_answer, 1, "the read's snapshot, open when it answered");
    assert_eq!(open_transactions(), 0, "and ended before the call returned");
    let write = json!({ "agent_id": "a", "path": "f", "content": "y" });
    let at_answer = s
        .service()
        .answer_then("write_file", args(write), |answer| {
            assert!(answer.is_ok(), "{answer:?}");
            open_transactions()
        });
    assert_eq!(at_answer, 0, "a write answers once committed");
}

#[test]
fn a_burst_of_callers_shares_a_bounded_set_of_connections() {
    let Some(s) = scratch() else { return };
    let mut db = s.pg();
    let open = move || -> i64 {
        db.query_one(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND application_name = 'scratchpad-mcp'",
            &[],
        )
        .unwrap()
        .get(0)
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    let most = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut open = open;
            let mut most = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(open());
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            most
        });
        let callers: Vec<_> = (0..40)
            .map(|t| {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..5 {
                        s.write(&format!("agent{t}"), &format!("f{i}"), "x");
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        watcher.join().unwrap()
    });
    // 40 callers at once, every call answered, never more than the bound's connections.
    assert!((1..=16).contains(&most), "{most} connections");
    assert_eq!(s.usage("agent39")["file_count"], 5);
    assert_sound(&s);
}

/// The CA of the test server's certificate (`scripts/test-postgres` makes both).
fn test_ca() -> Option<String> {
    let ca = std::env::var("SCRATCHPAD_TEST_POSTGRES_CA").ok();
    assert!(
        ca.is_some() || std::env::var_os("SCRATCHPAD_REQUIRE_POSTGRES").is_none(),
        "SCRATCHPAD_REQUIRE_POSTGRES is set, but SCRATCHPAD_TEST_POSTGRES_CA is not"
    );
    ca
}

#[test]
fn tls_is_used_when_asked_for_and_the_server_is_verified() {
    let Some(db) = TestDatabase::create() else {
        return;
    };
    let Some(ca) = test_ca() else { return };
    let store = Postgres::open(&db.url_with(&format!("sslmode=require&sslrootcert={ca}")))
        .expect("open over TLS");
    let txn = store.begin(Mode::Write, NO_OVERRIDES).expect("begin");
    let (a, f) = (AgentId::parse("a").unwrap(), FilePath::parse("f").unwrap());
    txn.put_version(&a, &f, 1, "over TLS").unwrap();
    txn.commit("a").unwrap();
    // The server says the store's connections are encrypted.
    let encrypted: i64 = db
        .client()
        .query_one(
            "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.datname = current_database() AND a.application_name = 'scratchpad-mcp'
               AND s.ssl",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(encrypted >= 1, "{encrypted}");
    drop(store);

    // A server the CA did not sign, or a CA file that is not one, is refused.
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.pem");
    std::fs::write(&other, "not a certificate\n").unwrap();
    let e = Postgres::open(&db.url_with(&format!("sslrootcert={}", other.display())))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("no CA certificate in it"), "{e}");
    let e = Postgres::open(&db.url_with("sslmode=require"))
        .err()
        .expect("refused: the test CA is not among the system's roots")
        .to_string();
    assert!(e.contains("invalid peer certificate"), "{e}");
    assert!(!e.contains(":scratchpad_test@"), "no password in {e}");
}

#[test]
fn equal_hits_come_in_a_fixed_order() {
    if let Some(s) = scratch() {
        crate::search::equal_hits_come_in_a_fixed_order(&s);
    }
}

#[test]
fn two_instances_share_each_agents_summary_budget() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    let budgeted = |service| {
        let gate = Gate {
            limiter: None,
            summaries: Some((2, RateLimiter::new(2.0 / 86_400.0, 2))),
            in_flight: None,
        };
        move |agent, access| gate.check(&key_for(&["a", "b"]), agent, access, service)
    };
    let (first, second) = (budgeted(s.service()), budgeted(&other));
    assert_eq!(first("a", Access::Model), Ok(()));
    assert_eq!(second("a", Access::Model), Ok(()));
    match first("a", Access::Model) {
        Err(Refusal::Budget {
            per_day: 2, wait_s, ..
        }) => {
            assert!((40_000..=43_200).contains(&wait_s), "{wait_s}")
        }
        other => panic!("expected the budget's refusal, got {other:?}"),
    }
    // Reads and writes do not spend it; another agent's budget is its own.
    assert_eq!(second("a", Access::Read), Ok(()));
    assert_eq!(second("b", Access::Model), Ok(()));
}

/// A read call gives its connection back while the model thinks: 24 summaries waiting at
/// once on a model slower than the busy deadline (more callers than the pool's 16
/// connections) leave every other caller served, and each summary arrives.
#[test]
fn callers_waiting_for_a_model_hold_no_connection() {
    let slow = Reply::summary("A summary.").after(std::time::Duration::from_secs(6));
    let standin = StandIn::start(vec![], Some(slow));
    let Some(s) = Scratch::on_postgres_with_anthropic(anthropic(&standin), NO_OVERRIDES) else {
        return;
    };
    for i in 0..24 {
        // Each its own document: the same one would share a single request to the model.
        let long: String = (0..400)
            .map(|p| format!("Paragraph {p} of document {i}: the plan holds.\n"))
            .collect();
        s.write("a", &format!("doc{i}.md"), &long);
    }
    std::thread::scope(|scope| {
        let summaries: Vec<_> = (0..24)
            .map(|i| {
                let s = &s;
                scope.spawn(move || {
                    call(
                        s.service(),
                        "summarize_file",
                        json!({ "agent_id": "a", "path": format!("doc{i}.md") }),
                    )
                })
            })
            .collect();
        let asked = std::time::Instant::now();
        while standin.count() < 24 {
            assert!(
                asked.elapsed() < std::time::Duration::from_secs(5),
                "only {} of 24 summaries reached the model while the first waited",
                standin.count()
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let started = std::time::Instant::now();
        let listed = call(s.service(), "list_files", json!({ "agent_id": "b" }));
        assert_eq!(listed, Ok(json!({ "files": [] })));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        for summary in summaries {
            let answer = summary.join().unwrap().expect("each summary arrives");
            assert_eq!(answer["summary"], "A summary.");
        }
    });
    assert_sound(&s);
}

/// A cached summary leaves with its version, whether a later write prunes the version or a
/// delete takes the file: the statements that drop versions drop their summaries (no cascade
/// does it since migration 7), and what they leave passes `verify`.
#[test]
fn summaries_leave_with_the_versions_pruned_or_deleted() {
    let standin = StandIn::start(vec![], Some(Reply::summary("A summary.")));
    let limits = LimitOverrides {
        versions_kept: Some(2),
        ..NO_OVERRIDES
    };
    let Some(s) = Scratch::on_postgres_with_anthropic(anthropic(&standin), limits) else {
        return;
    };
    let summarised = || -> Vec<i64> {
        let rows = s
            .pg()
            .query("SELECT version FROM summaries ORDER BY version", &[]);
        rows.unwrap().iter().map(|r| r.get(0)).collect()
    };
    let doc = json!({ "agent_id": "a", "path": "doc.md" });
    for v in 1..=3 {
        let long: String = (0..400)
            .map(|p| format!("Paragraph {p} of version {v}: the plan holds.\n"))
            .collect();
        s.write("a", "doc.md", &long);
        let answer = call(s.service(), "summarize_file", doc.clone()).unwrap();
        assert_eq!(answer["version"], v, "{answer}");
    }
    assert_eq!(summarised(), [2, 3], "the third write pruned version 1");
    assert_sound(&s);

    s.ok("delete_file", doc);
    assert_eq!(summarised(), [0_i64; 0], "a deleted file keeps no summary");
    assert_sound(&s);
}

/// Appends `entry` to agent "a"'s log at `path` through `service`: the entry's id.
fn append_as_a(service: &Service, path: &str, entry: &str) -> u64 {
    let appended = call(
        service,
        "append_log",
        json!({ "agent_id": "a", "path": path, "entry": entry }),
    )
    .unwrap();
    appended["entry_id"].as_u64().expect("an entry id")
}

/// The check of what an instance remembers, counted: `scratchpad_expect_agent` as migration 8
/// made it, and a sequence (not rolled back) counting its calls.
fn count_checks(s: &Scratch) {
    s.pg()
        .batch_execute(
            "CREATE SEQUENCE checks;
             CREATE OR REPLACE FUNCTION scratchpad_expect_agent(agent text, row_version text)
               RETURNS void LANGUAGE plpgsql AS $$
               BEGIN
                 PERFORM nextval('checks');
                 IF NOT EXISTS (SELECT 1 FROM agents
                                WHERE agent_id = agent AND xmin::text = row_version) THEN
                   RAISE EXCEPTION 'changed' USING ERRCODE = 'SPST1';
                 END IF;
               END $$;",
        )
        .unwrap();
}

/// How many checks ran (`count_checks`).
fn checks(s: &Scratch) -> i64 {
    s.pg()
        .query_one(
            "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM checks",
            &[],
        )
        .unwrap()
        .get(0)
}

fn version_of(written: &Value) -> u64 {
    written["version"].as_u64().expect("a version")
}

/// An instance's write that follows its own last write of the agent answers its look from
/// what that write left, checked with the commit; a change of one of the agent's files in
/// between (a delete) makes the next write look for itself.
#[test]
fn a_write_after_this_instances_own_is_checked_not_looked_at() {
    let Some(s) = scratch() else { return };
    count_checks(&s);
    assert_eq!(version_of(&s.write("a", "f", "1")), 1);
    assert_eq!(checks(&s), 0, "nothing remembered yet: looked");
    assert_eq!(version_of(&s.write("a", "f", "2")), 2);
    assert_eq!(version_of(&s.write("a", "g", "1")), 1);
    assert_eq!(version_of(&s.write("a", "f", "3")), 3);
    assert_eq!(
        checks(&s),
        2,
        "f remembered from its first write, and still after g's; g never written before"
    );
    s.ok("delete_file", json!({ "agent_id": "a", "path": "g" }));
    assert_eq!(version_of(&s.write("a", "f", "4")), 4);
    assert_eq!(checks(&s), 2, "the delete changed the agent: looked again");
    assert_eq!(version_of(&s.write("a", "f", "5")), 5);
    assert_eq!(checks(&s), 3);
    // The remembered state is what a look finds: the same answers from a fresh instance.
    let history = |service: &Service| {
        call(
            service,
            "file_history",
            json!({ "agent_id": "a", "path": "f" }),
        )
        .unwrap()
    };
    assert_eq!(history(s.service()), history(&s.another_instance()));
    let usage = s.usage("a");
    assert_eq!(usage["file_count"], 1, "{usage:?}");
    assert_eq!(usage["total_bytes"], 5, "{usage:?}");
    assert_sound(&s);
}

/// An append changes the agent's counters and no file: one that follows this instance's own
/// call of the agent takes its counters from memory under the check, and leaves the agent's
/// files remembered for its next write. The log's state the retention needs comes with the
/// append itself; another instance's append in between is found by the check.
#[test]
fn an_append_keeps_what_this_instance_remembers_of_the_agent() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    count_checks(&s);
    let append = |service: &Service, entry: &str| append_as_a(service, "events", entry);
    s.ok(
        "forget_log",
        json!({ "agent_id": "a", "path": "events", "keep_last": 2 }),
    );
    assert_eq!(append(s.service(), "e1"), 1);
    assert_eq!(
        checks(&s),
        0,
        "a retention set changes no file, but is no append: looked"
    );
    assert_eq!(append(s.service(), "e2"), 2);
    assert_eq!(checks(&s), 1, "the agent remembered from its last append");
    s.write("a", "f", "1");
    assert_eq!(checks(&s), 1, "f never written: looked");
    assert_eq!(append(s.service(), "e3"), 3);
    let kept = s.ok("read_log", json!({ "agent_id": "a", "path": "events" }));
    assert_eq!(
        entry_ids(&kept),
        [2, 3],
        "the retention applied on the count remembered"
    );
    assert_eq!(version_of(&s.write("a", "f", "2")), 2);
    assert_eq!(checks(&s), 3, "f still remembered after the append");
    // Another instance's append: this instance's memory fails the check, its call runs again.
    assert_eq!(append(&other, "e4"), 4);
    assert_eq!(append(s.service(), "e5"), 5);
    assert_eq!(checks(&s), 4, "checked once, then looked");
    assert_eq!(append(s.service(), "e6"), 6);
    assert_eq!(checks(&s), 5);

    // The retention applied at every append, on the log's state as the append left it.
    let page = s.ok("read_log", json!({ "agent_id": "a", "path": "events" }));
    assert_eq!(entry_ids(&page), [5, 6], "{page}");
    assert_eq!(page["entries"][1]["entry"], "e6", "{page}");
    // The counters remembered are those a fresh instance reads.
    let counters = |service: &Service| {
        let usage = call(service, "get_usage_stats", json!({ "agent_id": "a" })).unwrap();
        ["total_bytes", "file_count", "log_entry_count"].map(|k| usage[k].clone())
    };
    assert_eq!(counters(s.service()), counters(&s.another_instance()));
    assert_eq!(s.usage("a")["log_entry_count"], 2);
    assert_sound(&s);
}

/// An append after this instance's own takes its entry's id from what the instance remembers
/// of the log, and sends everything with its commit: a change beneath it that leaves the
/// agent's row as it was (here by hand; every change the server makes moves the row) is not
/// seen, one that moves the row is, and the call runs again on the log as it is.
#[test]
fn an_appends_id_comes_from_memory_under_the_check() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    let append = append_as_a;
    for i in 1..=3 {
        assert_eq!(append(s.service(), "plan", &format!("e{i}")), i);
    }
    assert_eq!(append(&other, "plan", "theirs"), 4);
    assert_eq!(
        append(s.service(), "plan", "e5"),
        5,
        "the check failed: ran again"
    );
    assert_eq!(
        append(s.service(), "notes", "n1"),
        1,
        "a log not remembered: asked"
    );

    let mut pg = s.pg();
    pg.batch_execute("UPDATE logs SET last_id = 100 WHERE agent_id = 'a' AND path = 'plan'")
        .unwrap();
    assert_eq!(
        append(s.service(), "plan", "e6"),
        6,
        "the id came from memory"
    );
    pg.batch_execute(
        "UPDATE logs SET last_id = 200 WHERE agent_id = 'a' AND path = 'plan';
         UPDATE agents SET total_operations = total_operations WHERE agent_id = 'a'",
    )
    .unwrap();
    assert_eq!(
        append(s.service(), "plan", "e7"),
        201,
        "the agent's row moved: looked"
    );

    let page = s.ok("read_log", json!({ "agent_id": "a", "path": "plan" }));
    assert_eq!(entry_ids(&page), [1, 2, 3, 4, 5, 6, 201], "{page}");
    assert_eq!(s.usage("a")["log_entry_count"], 8);
}

/// What one instance remembers of an agent is never trusted once another instance wrote the
/// agent: the check finds the row changed, the call runs again and looks. Without the check
/// the third write would store version 3 again.
#[test]
fn a_write_after_another_instances_runs_again_on_what_that_left() {
    let Some(s) = scratch() else { return };
    let other = s.another_instance();
    count_checks(&s);
    s.write("a", "f", "1");
    s.write("a", "f", "2");
    let theirs = call(
        &other,
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "3" }),
    )
    .unwrap();
    assert_eq!(version_of(&theirs), 3);
    let before = checks(&s);
    assert_eq!(version_of(&s.write("a", "f", "4")), 4);
    assert_eq!(checks(&s), before + 1, "checked once, then looked");
    // A call that fails on what was remembered runs again too: this instance remembers
    // version 4, the file is at 5, and the caller expects 5.
    call(
        &other,
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "5" }),
    )
    .unwrap();
    let expected = s.ok(
        "write_file",
        json!({ "agent_id": "a", "path": "f", "content": "6", "expected_version": 5 }),
    );
    assert_eq!(version_of(&expected), 6);
    // And a quota: another instance's files count before this one's remembered counters.
    let read = s.ok("read_file", json!({ "agent_id": "a", "path": "f" }));
    assert_eq!(read["content"], "6");
    let usage = s.usage("a");
    assert_eq!(usage["total_bytes"], 6, "{usage:?}");
    assert_sound(&s);
}
