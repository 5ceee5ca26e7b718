//! Agents share a store but never each other's data: not by listing, reading, counting,
//! deleting, or a shared prefix of their ids.

use crate::common::Scratch;
use serde_json::json;

#[test]
fn agents_see_only_their_own_files_logs_and_counts() {
    let s = Scratch::new();
    s.write("alice", "secret.md", "alice's plan");
    s.write("alice2", "secret.md", "alice2's plan, longer");
    s.ok(
        "append_log",
        json!({ "agent_id": "alice", "path": "log", "entry": "a1" }),
    );

    let read = |agent: &str| {
        s.ok(
            "read_file",
            json!({ "agent_id": agent, "path": "secret.md" }),
        )["content"]
            .clone()
    };
    assert_eq!(read("alice"), "alice's plan");
    assert_eq!(read("alice2"), "alice2's plan, longer");
    assert!(
        s.err(
            "read_file",
            json!({ "agent_id": "bob", "path": "secret.md" })
        )
        .contains("no file at path \"secret.md\" for agent \"bob\"")
    );

    let listed = s.ok("list_files", json!({ "agent_id": "alice" }));
    assert_eq!(listed["files"].as_array().unwrap().len(), 1);
    assert!(
        s.ok("list_files", json!({ "agent_id": "bob" }))["files"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let log = s.ok("read_log", json!({ "agent_id": "alice2", "path": "log" }));
    assert!(log["entries"].as_array().unwrap().is_empty());
    assert_eq!(
        s.ok(
            "append_log",
            json!({ "agent_id": "alice2", "path": "log", "entry": "b1" })
        )["entry_id"],
        1,
        "ids count per agent's log"
    );

    assert_eq!(
        s.ok(
            "delete_file",
            json!({ "agent_id": "bob", "path": "secret.md" })
        )["deleted"],
        false
    );
    assert_eq!(read("alice"), "alice's plan");

    let alice = s.usage("alice");
    assert_eq!(
        (alice["total_bytes"].as_u64(), alice["file_count"].as_u64()),
        (Some(12 + 2), Some(1))
    );
    assert_eq!(s.usage("alice2")["total_bytes"], 21 + 2);
    assert_eq!(s.usage("bob")["total_bytes"], 0);
}

#[test]
fn a_diff_is_only_ever_against_the_same_agents_versions() {
    let s = Scratch::new();
    s.write("alice", "f", "v1\n");
    s.write("alice", "f", "v2\n");
    s.write("mallory", "f", "m1\n");
    s.write("mallory", "f", "m2\n");
    let answer = s.ok(
        "read_file",
        json!({ "agent_id": "mallory", "path": "f", "since_version": 1, "full_diff": true }),
    );
    let text = answer.to_string();
    assert!(!text.contains("v1") && !text.contains("v2"), "{text}");
}
