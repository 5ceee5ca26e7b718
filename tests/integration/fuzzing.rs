//! The `tool_call` fuzz target's oracle (`fuzz/src/oracle.rs`) rejects what it claims to:
//! a guest that crashes, a guest that stores other content than it says, a store whose
//! invariants are broken; and lets the caller's own errors through. Without these, a fuzz run
//! that found nothing could mean the oracle accepts everything.

use crate::common::Scratch;
use crate::fuzz_oracle::{check_store, judge, may_write};
use crate::sandbox::HOSTILE;
use serde_json::{Map, Value, json};

fn object(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("arguments are an object")
}

/// The oracle's verdict on one call of `tool` with `args` on `s`.
fn verdict(s: &Scratch, tool: &str, args: Value) -> Result<(), String> {
    let args = object(args);
    let outcome = s.service().call(tool, args.clone());
    judge(s.service(), s.dir.path(), tool, &args, &outcome)
}

/// The oracle's objection to one write by the hostile guest's agent `agent`.
fn hostile_write(agent: &str) -> String {
    let s = Scratch::with_component(HOSTILE);
    let write = json!({ "agent_id": agent, "path": "f", "content": "x" });
    verdict(&s, "write_file", write).expect_err("the oracle objects")
}

#[test]
fn a_guest_crash_is_a_defect() {
    assert_eq!(
        hostile_write("panic"),
        "write_file: a defect, not the caller's error: the tool logic failed (wasm trap: wasm `unreachable` instruction executed); nothing was changed"
    );
}

#[test]
fn an_answer_about_another_path_is_a_defect() {
    let e = hostile_write("wrong-path");
    assert!(
        e.starts_with("write_file: a defect, not the caller's error: the tool logic gave an answer the server refuses"),
        "{e}"
    );
}

#[test]
fn a_write_that_stores_other_content_is_caught_on_reading_back() {
    let e = hostile_write("liar");
    assert!(
        e.starts_with("write_file stored other content than it was given"),
        "{e}"
    );
}

#[test]
fn the_callers_own_errors_and_honest_answers_pass() {
    let s = Scratch::new();
    let write = json!({ "agent_id": "a", "path": "f", "content": "one\ntwo" });
    assert_eq!(verdict(&s, "write_file", write), Ok(()));
    let edit = json!({ "agent_id": "a", "path": "f", "base_version": 1,
                       "edits": [{ "old": "two", "new": "three" }] });
    assert_eq!(verdict(&s, "edit_file", edit), Ok(()));
    let append = json!({ "agent_id": "a", "path": "log", "entry": { "k": [1, 2] } });
    assert_eq!(verdict(&s, "append_log", append), Ok(()));
    assert_eq!(
        verdict(&s, "delete_file", json!({ "agent_id": "a", "path": "f" })),
        Ok(())
    );
    for (tool, args) in [
        (
            "write_file",
            json!({ "agent_id": "a", "path": "../x", "content": "c" }),
        ),
        ("write_file", json!({ "agent_id": 7 })),
        ("read_file", json!({ "agent_id": "a", "path": "missing" })),
        ("no_such_tool", json!({})),
        (
            "search",
            json!({ "agent_id": "a", "query": "SELECT * FROM files" }),
        ),
    ] {
        assert_eq!(verdict(&s, tool, args.clone()), Ok(()), "{tool} {args}");
    }
    assert_eq!(check_store(&s.db()), Ok(()));
    assert!(may_write("append_log") && !may_write("read_log") && !may_write("no_such_tool"));
}

#[test]
fn a_store_with_a_broken_invariant_fails_the_check() {
    let s = Scratch::new();
    s.write("a", "f", "content");
    let conn = crate::common::sql(&s.db());
    conn.execute("UPDATE agents SET file_count = 7", [])
        .unwrap();
    let e = check_store(&s.db()).unwrap_err();
    assert!(e.starts_with("verify: ") && e.contains("counters"), "{e}");
}
