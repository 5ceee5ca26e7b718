//! A hostile guest cannot take the server down, reach another agent's data, or leave half a
//! call committed. Each misbehaviour fails its own call cleanly; the next call works.

use crate::common::Scratch;
use scratchpad_mcp::bindings::NO_OVERRIDES;
use scratchpad_mcp::sandbox::{GUEST_COMPONENT, SLOTS};
use serde_json::json;
use std::time::{Duration, Instant};

/// The hostile guest of `tests/hostile-guest/`, built by `tests/build.rs`.
pub const HOSTILE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hostile.wasm"));

fn hostile() -> Scratch {
    Scratch::with_component(HOSTILE)
}

fn write_as(s: &Scratch, agent: &str) -> Result<serde_json::Value, String> {
    s.call(
        "write_file",
        json!({ "agent_id": agent, "path": "f", "content": "x" }),
    )
}

/// After a failure, the same service still answers a normal call, quickly.
fn still_serving(s: &Scratch) {
    let started = Instant::now();
    assert_eq!(s.write("honest", "after", "fine")["version"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_runaway_loop_is_stopped_at_the_time_limit() {
    let s = hostile();
    let started = Instant::now();
    assert_eq!(
        write_as(&s, "spin").unwrap_err(),
        "the tool logic ran past its 5-second time limit; nothing was changed"
    );
    let stopped = started.elapsed();
    println!("figure: runaway call stopped after {stopped:?} (limit 5 s, tick 10 ms)");
    assert!(
        stopped >= Duration::from_secs(5) && stopped < Duration::from_secs(7),
        "{stopped:?}"
    );
    still_serving(&s);
}

#[test]
fn a_memory_bomb_hits_the_memory_limit() {
    let s = hostile();
    assert_eq!(
        write_as(&s, "bomb").unwrap_err(),
        "the tool logic ran out of its 256 MiB memory limit; nothing was changed"
    );
    still_serving(&s);
}

#[test]
fn a_panic_and_a_stack_overflow_fail_only_their_call() {
    let s = hostile();
    let panic = write_as(&s, "panic").unwrap_err();
    assert!(
        panic.starts_with("the tool logic failed (") && panic.ends_with("; nothing was changed"),
        "{panic}"
    );
    let overflow = write_as(&s, "recurse").unwrap_err();
    assert!(overflow.contains("stack"), "{overflow}");
    still_serving(&s);
}

#[test]
fn a_trap_after_a_write_rolls_the_write_back() {
    let s = hostile();
    assert!(
        write_as(&s, "write-then-panic")
            .unwrap_err()
            .starts_with("the tool logic failed")
    );
    assert!(
        s.err(
            "read_file",
            json!({ "agent_id": "write-then-panic", "path": "f" })
        )
        .starts_with("no file")
    );
    let usage = s.usage("write-then-panic");
    assert_eq!(
        (usage["total_bytes"].as_u64(), usage["file_count"].as_u64()),
        (Some(0), Some(0))
    );
    // The version number was not used up either.
    let db = crate::common::sql(&s.db());
    let rows: i64 = db
        .query_row("SELECT count(*) FROM files", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
    // Nor does a search find the write.
    let found = s.ok(
        "search",
        json!({ "agent_id": "write-then-panic", "query": "written" }),
    );
    assert_eq!(found["hits"], json!([]));
    still_serving(&s);
}

#[test]
fn another_agents_namespace_is_refused_even_if_the_guest_ignores_the_refusal() {
    another_agents_namespace_is_refused_on(&hostile());
}

fn another_agents_namespace_is_refused_on(s: &Scratch) {
    s.write("victim", "f", "the victim's text");
    let e = write_as(s, "swallow").unwrap_err();
    assert!(
        e.starts_with("the server refused a request of the tool logic"),
        "{e}"
    );
    assert!(
        e.contains("named agent \"victim\" in a call for agent \"swallow\""),
        "{e}"
    );
    assert_eq!(
        s.ok("read_file", json!({ "agent_id": "victim", "path": "f" }))["content"],
        "the victim's text"
    );
    assert!(
        s.err("read_file", json!({ "agent_id": "swallow", "path": "f" }))
            .starts_with("no file"),
        "its own write was rolled back"
    );

    let stolen = s.err("read_file", json!({ "agent_id": "thief", "path": "f" }));
    assert!(!stolen.contains("the victim's text"), "{stolen}");
    assert!(stolen.contains("refused"), "{stolen}");
    still_serving(s);
}

/// Each refusal the storage contract owes holds whatever the guest does with it: the call
/// fails naming the rule it broke, and nothing of it is kept. One suite, run on each backend,
/// which the guard stands in front of.
fn the_storage_rules_hold(s: &Scratch) {
    let broken = [
        ("rewind", "is not above its last version"),
        ("prune-current", "would drop the current version"),
        ("phantom-summary", "which is not kept"),
    ];
    for (agent, rule) in broken {
        let e = write_as(s, agent).unwrap_err();
        assert!(
            e.starts_with("the server refused a request of the tool logic") && e.contains(rule),
            "{agent}: {e}"
        );
        let read = s.err("read_file", json!({ "agent_id": agent, "path": "f" }));
        assert!(
            read.starts_with("no file"),
            "{agent}'s write was kept: {read}"
        );
    }

    s.write("sneak", "f", "before");
    let e = s.err("read_file", json!({ "agent_id": "sneak", "path": "f" }));
    assert!(e.contains("put-version in a read-only call"), "{e}");
    let history = s.ok("file_history", json!({ "agent_id": "sneak", "path": "f" }));
    assert_eq!(
        history["versions"].as_array().map(Vec::len),
        Some(1),
        "{history}"
    );

    let e = s.err(
        "append_log",
        json!({ "agent_id": "miscount", "path": "l", "entry": "real" }),
    );
    assert!(
        e.contains("append-log counted 1 bytes for an entry of 4 bytes"),
        "{e}"
    );
    assert_eq!(s.usage("miscount")["total_bytes"], 0, "no entry was kept");
    still_serving(s);
}

#[test]
fn the_storage_rules_hold_on_sqlite() {
    the_storage_rules_hold(&hostile());
}

#[test]
fn the_storage_rules_hold_on_postgres() {
    let Some(s) = Scratch::on_postgres(HOSTILE, NO_OVERRIDES) else {
        return; // said why, and how to run it
    };
    the_storage_rules_hold(&s);
    another_agents_namespace_is_refused_on(&s);
}

#[test]
fn answers_about_something_else_are_refused() {
    let s = hostile();
    let e = write_as(&s, "wrong-path").unwrap_err();
    assert_eq!(
        e,
        "the tool logic gave an answer the server refuses (asked about path \"f\", answered about \"somewhere/else\"); nothing was changed"
    );
    assert!(
        s.err(
            "read_file",
            json!({ "agent_id": "wrong-path", "path": "f" })
        )
        .starts_with("no file")
    );
    s.write("stray", "a/1", "x");
    let e = s.err("list_files", json!({ "agent_id": "stray", "prefix": "a/" }));
    assert!(
        e.contains("answered about \"not/under/the/prefix\" for prefix \"a/\""),
        "{e}"
    );
    still_serving(&s);
}

/// A call runs in a slot of the pool that earlier calls used, but nothing they left in its
/// memory reaches it: a guest that leaves another agent's content in its heap, then one that
/// searches its whole memory for it, find nothing, call after call (the same search in the
/// planting call itself finds it).
#[test]
fn what_a_call_leaves_in_memory_never_reaches_the_next_call() {
    let s = hostile();
    let secret = "what one agent wrote, left in the guest's memory";
    let call = |agent: &str| {
        s.call(
            "write_file",
            json!({ "agent_id": agent, "path": "f", "content": secret }),
        )
    };
    let found = call("plant-and-snoop").unwrap_err();
    assert!(
        found.starts_with("conflict: found planted bytes at address "),
        "{found}"
    );
    for round in 1..=20 {
        assert_eq!(call("plant").unwrap()["version"], 1, "round {round}");
        assert_eq!(call("snoop").unwrap()["version"], 1, "round {round}");
    }
}

/// An agent's instance serves its next call, once the call before ended well, and is
/// dropped after a trap or when its memory grew large. The "recall" guest answers a conflict
/// when it finds its content left by an earlier call of its instance, and otherwise leaves
/// it there.
#[test]
fn an_instance_serves_its_agents_next_call_until_it_traps_or_grows() {
    let s = hostile();
    let write = |agent: &str, path: &str, content: &str| {
        s.call(
            "write_file",
            json!({ "agent_id": agent, "path": path, "content": content }),
        )
    };
    let found = |e: String| e.starts_with("conflict: found planted bytes at address ");

    assert_eq!(write("recall", "kept", "a secret").unwrap()["version"], 1);
    let again = write("recall", "kept", "a secret").unwrap_err();
    assert!(
        found(again.clone()),
        "the kept instance did not serve: {again}"
    );
    // That answer was a tool error, not a trap: the instance is still kept.
    let third = write("recall", "kept", "a secret").unwrap_err();
    assert!(found(third.clone()), "{third}");
    assert_eq!(write("snoop", "kept", "a secret").unwrap()["version"], 1);

    for round in 1..=2 {
        let died = write("recall", "trap", "panic, after leaving this").unwrap_err();
        assert!(
            died.starts_with("the tool logic failed ("),
            "round {round}: a trapped instance served again: {died}"
        );
    }
    for round in 1..=2 {
        assert_eq!(
            write("recall", "grown", "grow, then leave this").unwrap()["version"],
            1,
            "round {round}: an instance that grew past the kept size served again"
        );
    }
    // After all that, the agent's calls are served as ever.
    assert_eq!(write("recall", "after", "one more").unwrap()["version"], 1);
    assert!(found(write("recall", "after", "one more").unwrap_err()));
}

/// More calls at once than the pool has instances: writes of many agents, each holding its
/// instance while it waits for its turn at the write lock. A call beyond the pool's slots
/// waits for one; none fails for want of an instance.
#[test]
fn more_calls_at_once_than_the_pool_has_slots_all_succeed() {
    let s = Scratch::new();
    let callers = SLOTS as usize + 36;
    let failures: Vec<String> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..callers)
            .map(|caller| {
                let s = &s;
                scope.spawn(move || {
                    (1..=3).try_for_each(|round| {
                        let written = s.call(
                            "write_file",
                            json!({ "agent_id": format!("a{caller}"), "path": "f",
                                    "content": format!("round {round}") }),
                        )?;
                        match written["version"].as_u64() {
                            Some(v) if v == round => Ok(()),
                            _ => Err(format!("round {round} answered {written}")),
                        }
                    })
                })
            })
            .collect();
        calls
            .into_iter()
            .filter_map(|call| call.join().expect("no caller panicked").err())
            .collect()
    });
    assert_eq!(failures, Vec::<String>::new());
    still_serving(&s);
}

fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Set in the child process that [`a_thousand_traps_in_a_row_leave_the_server_whole`] runs
/// itself in.
const ALONE: &str = "SCRATCHPAD_TEST_ALONE";

/// Runs the test `name` of this binary again in a process of its own, with [`ALONE`] set,
/// so that what it measures of the process (its resident memory) is its own and not that of
/// the tests running beside it. Returns true in that child, which then runs the test body.
fn in_a_process_of_its_own(name: &str) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads", "1"])
        .env(ALONE, "1")
        .output()
        .expect("run the test binary again");
    let out = String::from_utf8_lossy(&child.stdout);
    print!("{out}");
    assert!(
        child.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&child.stderr)
    );
    assert!(out.contains("1 passed"), "the child ran the test: {out}");
    false
}

#[test]
fn a_thousand_traps_in_a_row_leave_the_server_whole() {
    const CALLS: usize = 1_000;
    if !in_a_process_of_its_own("sandbox::a_thousand_traps_in_a_row_leave_the_server_whole") {
        return;
    }
    let s = hostile();
    // Warm up (first instance, allocator pools); every later call fails the same way.
    let trap = write_as(&s, "panic").unwrap_err();
    assert!(trap.starts_with("the tool logic failed ("), "{trap}");
    let (before, started) = (resident_kib(), Instant::now());
    let failed = (0..CALLS)
        .filter(|_| write_as(&s, "panic") == Err(trap.clone()))
        .count();
    let (elapsed, after) = (started.elapsed(), resident_kib());
    println!(
        "figure: {CALLS} trapping calls in {elapsed:?} ({:?} each), {failed} failed cleanly, 0 crashes, RSS {before} -> {after} KiB (a process of its own)",
        elapsed / CALLS as u32
    );
    assert_eq!(failed, CALLS);
    assert!(before > 0, "the resident size was read");
    assert!(
        after < before + 64 * 1024,
        "memory grew from {before} to {after} KiB"
    );
    still_serving(&s);
}

/// A service on a fresh store whose compiled-component cache is `cache`.
fn service_with_cache(
    dir: &std::path::Path,
    cache: &std::path::Path,
    wasm: &[u8],
) -> scratchpad_mcp::Service {
    let settings = scratchpad_mcp::Settings {
        db: dir.join("store.db"),
        database: None,
        cache_dir: Some(cache.to_owned()),
        limits: NO_OVERRIDES,
        http: Default::default(),
        anthropic: scratchpad_mcp::summariser::AnthropicConfig {
            api_key: None,
            base_url: "http://127.0.0.1:9".into(),
            model: scratchpad_mcp::summariser::DEFAULT_MODEL.into(),
        },
    };
    scratchpad_mcp::Service::open_with_component(&settings, wasm).unwrap()
}

/// Plants the hostile guest's compiled code under the name the real guest's cache entry has
/// in `cache`, as someone able to write that folder could.
fn plant_hostile_code(scratch: &std::path::Path, cache: &std::path::Path) {
    let hostile_cache = scratch.join("hostile-cache");
    drop(service_with_cache(scratch, &hostile_cache, HOSTILE));
    let compiled = |dir: &std::path::Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "cwasm"))
            .expect("a compiled component in the cache")
    };
    std::fs::copy(compiled(&hostile_cache), compiled(cache)).unwrap();
}

/// The cache holds native code the server runs: from a folder others may write, it is not
/// loaded (the component is compiled instead); from the user's own private folder it is,
/// which is why the planted code runs there (the test's control).
#[test]
fn a_cache_others_can_write_is_not_trusted_with_native_code() {
    use std::os::unix::fs::PermissionsExt;
    let write_as = |service: &scratchpad_mcp::Service| {
        let args = json!({ "agent_id": "panic", "path": "f", "content": "x" });
        service.call("write_file", args.as_object().unwrap().clone())
    };
    let scratch = tempfile::tempdir().unwrap();
    let cache = scratch.path().join("cache");
    drop(service_with_cache(scratch.path(), &cache, GUEST_COMPONENT));
    plant_hostile_code(scratch.path(), &cache);
    let mode = |dir: &std::path::Path| std::fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cache), 0o700, "the server makes its cache private");

    let own = service_with_cache(scratch.path(), &cache, GUEST_COMPONENT);
    let planted = write_as(&own).unwrap_err().to_string();
    assert!(planted.starts_with("the tool logic failed ("), "{planted}");
    drop(own);

    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let shared = service_with_cache(scratch.path(), &cache, GUEST_COMPONENT);
    assert_eq!(
        write_as(&shared).unwrap()["version"],
        1,
        "the real guest ran"
    );
}

/// The embedded tool logic says which guest crate version it was built from (a custom
/// section), which is what the server's build checks a prebuilt one against.
#[test]
fn the_embedded_component_carries_the_guest_crates_version() {
    let mark = format!("scratchpad-guest-version={};", env!("CARGO_PKG_VERSION"));
    assert!(
        GUEST_COMPONENT
            .windows(mark.len())
            .any(|w| w == mark.as_bytes()),
        "no {mark:?} in the component"
    );
}
