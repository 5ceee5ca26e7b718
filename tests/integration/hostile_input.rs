//! A corpus of hostile paths, prefixes and agent ids through every tool: each is refused by
//! the rule it breaks, and nothing outside the caller's namespace is ever reached.

use crate::common::Scratch;
use serde_json::{Value, json};

/// Paths that try to climb out, hide a separator or a dot, or look like something else.
const PATHS: &[&str] = &[
    "..",
    "../x",
    "a/../../b",
    "./..",
    "a/..",
    "....",
    "a/.../..",
    "%2e%2e/x",
    "..%2f..",
    "a\\..\\b",
    "/etc/passwd",
    "//x",
    "a\0b",
    "\0",
    "a\nb",
    "a\rb",
    "a b",
    " ",
    "a\tb",
    "~/x",
    "C:\\x",
    "a?b",
    "a*b",
    "a#b",
    "a:b",
    "$HOME",
    "a\u{2215}b",
    "\u{ff0e}\u{ff0e}/x",
    "a\u{2024}\u{2024}b",
    "\u{ff41}",
    "a/\u{200b}b",
    "e\u{0301}",
    "\u{202e}txt.exe",
    "",
];

/// Agent ids that try to reach another agent's namespace or look like one.
const AGENTS: &[&str] = &[
    "alice/../bob",
    "../bob",
    "alice/",
    "alice bob",
    "\u{ff41}lice",
    "alice\0",
    "alice\u{200b}",
    "alic\u{0435}",
    "alice%2fbob",
    "alice.bob",
    "*",
    "",
    "alice\n",
];

fn tools_with(agent: &str, path: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "write_file",
            json!({ "agent_id": agent, "path": path, "content": "pwned" }),
        ),
        ("read_file", json!({ "agent_id": agent, "path": path })),
        (
            "read_file",
            json!({ "agent_id": agent, "path": path, "since_version": 1 }),
        ),
        (
            "append_log",
            json!({ "agent_id": agent, "path": path, "entry": "pwned" }),
        ),
        ("read_log", json!({ "agent_id": agent, "path": path })),
        (
            "edit_file",
            json!({ "agent_id": agent, "path": path, "base_version": 1,
                    "edits": [{ "old": "secret", "new": "pwned" }] }),
        ),
        ("file_history", json!({ "agent_id": agent, "path": path })),
        (
            "read_files",
            json!({ "agent_id": agent, "paths": [path, "secret"] }),
        ),
        (
            "search",
            json!({ "agent_id": agent, "query": "secret", "prefix": path }),
        ),
        ("delete_file", json!({ "agent_id": agent, "path": path })),
        ("summarize_file", json!({ "agent_id": agent, "path": path })),
        ("list_files", json!({ "agent_id": agent, "prefix": path })),
        ("get_usage_stats", json!({ "agent_id": agent })),
    ]
}

#[test]
fn every_hostile_input_is_refused_by_its_rule_and_nothing_escapes() {
    let s = Scratch::new();
    for agent in ["alice", "bob", "alice2"] {
        s.write(agent, "secret", &format!("{agent}'s secret"));
        s.ok(
            "append_log",
            json!({ "agent_id": agent, "path": "log", "entry": format!("{agent}'s entry") }),
        );
    }
    let before: Vec<Value> = ["alice", "bob", "alice2"]
        .iter()
        .map(|a| s.ok("list_files", json!({ "agent_id": a })))
        .collect();

    let (mut calls, mut refused, mut escapes) = (0, 0, Vec::new());
    let mut check = |tool: &str, args: Value, rule: &str| {
        calls += 1;
        match s.call(tool, args.clone()) {
            Err(e) if e.starts_with(rule) => refused += 1,
            other => escapes.push(format!("{tool} {args} -> {other:?}")),
        }
    };
    for path in PATHS {
        for (tool, args) in tools_with("mallory", path) {
            let takes_prefix = tool == "list_files" || tool == "search";
            let rule = if takes_prefix { "prefix" } else { "path" };
            if tool == "get_usage_stats" || (takes_prefix && path.is_empty()) {
                continue; // no path to break a rule with
            }
            check(tool, args, rule);
        }
    }
    for agent in AGENTS {
        for (tool, args) in tools_with(agent, "secret") {
            check(tool, args, "agent_id");
        }
    }
    println!(
        "figure: {calls} hostile calls, {refused} refused by the rule they break, {} escapes",
        escapes.len()
    );
    assert!(escapes.is_empty(), "{escapes:#?}");

    let after: Vec<Value> = ["alice", "bob", "alice2"]
        .iter()
        .map(|a| s.ok("list_files", json!({ "agent_id": a })))
        .collect();
    assert_eq!(before, after, "no hostile call changed anything");
    assert_eq!(s.usage("mallory")["total_bytes"], 0);
}

#[test]
fn a_shared_prefix_of_agent_ids_shares_nothing() {
    let s = Scratch::new();
    s.write("alice", "notes/plan", "alice's");
    s.write("alice2", "notes/plan", "alice2's");
    s.write("alice_", "notes/plan", "alice_'s");
    for agent in ["alice", "alice2", "alice_"] {
        let files = s.ok(
            "list_files",
            json!({ "agent_id": agent, "prefix": "notes/" }),
        );
        assert_eq!(files["files"].as_array().unwrap().len(), 1, "{agent}");
        let content = s.ok(
            "read_file",
            json!({ "agent_id": agent, "path": "notes/plan" }),
        )["content"]
            .clone();
        assert_eq!(content, format!("{agent}'s"));
    }
    s.ok(
        "delete_file",
        json!({ "agent_id": "alice", "path": "notes/plan" }),
    );
    assert_eq!(
        s.ok(
            "read_file",
            json!({ "agent_id": "alice2", "path": "notes/plan" })
        )["content"],
        "alice2's"
    );
}

/// Every argument of every tool given a value of each wrong JSON kind is refused in the
/// tools' words: the error names the argument, never a type of the code or serde's words.
#[test]
fn an_argument_of_the_wrong_kind_is_refused_without_naming_a_type_of_the_code() {
    let s = Scratch::new();
    s.write("a", "f", "one\ntwo\n");
    let catalogue: Value = serde_json::from_str(&scratchpad_guest::json::list_tools()).unwrap();
    let wrong = [
        json!([]),
        json!([1, "x"]),
        json!({}),
        json!({ "old": 1 }),
        json!(1),
        json!(-1),
        json!(1.5),
        json!("x"),
        json!(true),
        json!(null),
    ];
    let (mut leaks, mut calls, mut refused) = (Vec::new(), 0, 0);
    for tool in catalogue.as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let properties = tool["inputSchema"]["properties"].as_object().unwrap();
        for field in properties.keys() {
            for value in &wrong {
                let mut args = json!({ "agent_id": "a", "path": "f" });
                args[field.as_str()] = value.clone();
                calls += 1;
                if let Err(e) = s.call(name, args.clone()) {
                    refused += 1;
                    let code_words = [
                        "struct ",
                        "enum ",
                        "Args",
                        "::",
                        "Value",
                        "u64",
                        "invalid type",
                    ];
                    // Refused for this argument, the refusal names it (a refusal for
                    // another argument this call lacks names that one).
                    let unnamed = e.starts_with("invalid arguments")
                        && !e.contains("missing field")
                        && !e.contains(field.as_str());
                    if unnamed || code_words.iter().any(|w| e.contains(w)) {
                        leaks.push(format!("{name} {args} -> {e}"));
                    }
                }
            }
        }
    }
    println!("figure: {calls} calls with an argument of the wrong kind, {refused} refused");
    assert!(refused * 10 > calls * 9, "{refused} of {calls} refused");
    assert!(leaks.is_empty(), "{leaks:#?}");
}
