//! The server's storage backends held to the storage contract's one suite (the guest crate's
//! `testing::contract`), which the in-memory test store and the self-contained component's
//! store pass too: each step one committed write call, as a tool call would be. A backend
//! only persists; the contract's refusals are the guard's, so the suite reaches each backend
//! through a [`Guard`], as the guest does.

use crate::common::TestDatabase;
use scratchpad_guest::Storage;
use scratchpad_guest::testing::contract::{self, Harness};
use scratchpad_mcp::bindings::NO_OVERRIDES;
use scratchpad_mcp::guard::Guard;
use scratchpad_mcp::storage::{Backend, Mode, Postgres, Sqlite};
use std::time::Duration;

struct Server<B>(B);

impl<B: Backend> Harness for Server<B> {
    fn call(&self, agent: &str, step: &mut dyn FnMut(&dyn Storage)) {
        let guard = Guard::new(
            agent,
            self.0.begin(Mode::Write, NO_OVERRIDES).expect("begin"),
        );
        step(&guard);
        let (txn, _refusals_the_suite_expects) = guard.finish();
        txn.commit(agent).expect("commit");
    }

    fn wait(&self, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

#[test]
fn sqlite_keeps_the_storage_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = Sqlite::open(&dir.path().join("scratchpad.db")).expect("open");
    contract::check(&Server(store));
}

#[test]
fn postgres_keeps_the_storage_contract() {
    let Some(db) = TestDatabase::create() else {
        return; // said why, and how to run it
    };
    contract::check(&Server(Postgres::open(&db.url).expect("open")));
}

/// A read call may not change anything, whatever the guest asks; the first refusal is kept
/// for the call even when the guest goes on, so it cannot commit.
#[test]
fn a_read_call_refuses_every_change() {
    use scratchpad_guest::bindings::scratchpad::mcp::storage::Retention;
    use scratchpad_guest::names::{AgentId, FilePath};
    use scratchpad_guest::{LogValue, StorageError};
    let dir = tempfile::tempdir().unwrap();
    let store = Sqlite::open(&dir.path().join("scratchpad.db")).expect("open");
    let (a, f) = (AgentId::parse("a").unwrap(), FilePath::parse("f").unwrap());
    let guard = Guard::new("a", store.begin(Mode::Write, NO_OVERRIDES).unwrap());
    guard.put_version(&a, &f, 1, "v1").unwrap();
    guard.finish().0.commit("a").unwrap();

    let guard = Guard::new("a", store.begin(Mode::Read, NO_OVERRIDES).unwrap());
    let refused = |what: &str| StorageError::Refused(format!("{what} in a read-only call"));
    let keep = Retention {
        keep_last: Some(1),
        max_age_seconds: None,
    };
    let entry = LogValue::Text("x".into());
    assert_eq!(
        guard.put_version(&a, &f, 2, "no"),
        Err(refused("put-version"))
    );
    assert_eq!(
        guard.prune_versions(&a, &f, 1),
        Err(refused("prune-versions"))
    );
    assert_eq!(guard.delete_file(&a, &f), Err(refused("delete-file")));
    assert_eq!(
        guard.append_log(&a, &f, &entry, 1),
        Err(refused("append-log"))
    );
    assert_eq!(
        guard.set_log_retention(&a, &f, keep),
        Err(refused("set-log-retention"))
    );
    assert_eq!(guard.trim_log(&a, &f, 9, None), Err(refused("trim-log")));
    // A summary of a kept version is the one thing a read call may store.
    assert_eq!(guard.put_summary(&a, &f, 1, "m", "short"), Ok(()));
    let (txn, failure) = guard.finish();
    assert_eq!(failure, Some(refused("put-version")));
    txn.commit("a").unwrap();

    let guard = Guard::new("a", store.begin(Mode::Read, NO_OVERRIDES).unwrap());
    let state = guard.stat_file(&a, &f).unwrap().expect("the file is there");
    assert_eq!(
        state.last_version, 1,
        "nothing the read call asked was written"
    );
    assert_eq!(guard.read_log(&a, &f, 0, 10), Ok(vec![]));
    assert_eq!(
        guard.cached_summary(&a, &f, 1, "m"),
        Ok(Some("short".into()))
    );
}

/// A guard answers only for its own agent: another's name is refused before the store is
/// asked, and the refusal is the call's failure.
#[test]
fn a_guard_refuses_another_agents_name() {
    use scratchpad_guest::names::{AgentId, FilePath};
    let dir = tempfile::tempdir().unwrap();
    let store = Sqlite::open(&dir.path().join("scratchpad.db")).expect("open");
    let guard = Guard::new("a", store.begin(Mode::Write, NO_OVERRIDES).unwrap());
    let (b, f) = (AgentId::parse("b").unwrap(), FilePath::parse("f").unwrap());
    let e = guard.put_version(&b, &f, 1, "theirs").unwrap_err();
    assert_eq!(
        e,
        scratchpad_guest::StorageError::Refused(
            "a storage request named agent \"b\" in a call for agent \"a\"".into()
        )
    );
    assert_eq!(
        guard.agent("a").map(|a| a.as_str().to_owned()),
        Ok("a".into())
    );
    assert_eq!(guard.finish().1, Some(e));
}
