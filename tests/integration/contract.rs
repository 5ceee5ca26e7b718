//! The server's storage backends held to the storage contract's one suite (the guest crate's
//! `testing::contract`), which the in-memory test store and the self-contained component's
//! store pass too: each step one committed write call, as a tool call would be.

use crate::common::TestDatabase;
use scratchpad_guest::Storage;
use scratchpad_guest::testing::contract::{self, Harness};
use scratchpad_mcp::bindings::NO_OVERRIDES;
use scratchpad_mcp::storage::{Backend, Mode, Postgres, Sqlite};
use std::time::Duration;

struct Server<B>(B);

impl<B: Backend> Harness for Server<B> {
    fn call(&self, agent: &str, step: &mut dyn FnMut(&dyn Storage)) {
        let txn = self.0.begin(Mode::Write, NO_OVERRIDES).expect("begin");
        step(&*txn);
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

/// A read call may not change anything, whatever the guest asks.
#[test]
fn a_read_call_refuses_every_change() {
    use scratchpad_guest::names::{AgentId, FilePath};
    let dir = tempfile::tempdir().unwrap();
    let store = Sqlite::open(&dir.path().join("scratchpad.db")).expect("open");
    let (a, f) = (AgentId::parse("a").unwrap(), FilePath::parse("f").unwrap());
    let txn = store.begin(Mode::Read, NO_OVERRIDES).expect("begin");
    let e = txn.put_version(&a, &f, 1, "no").unwrap_err();
    assert_eq!(
        e,
        scratchpad_guest::StorageError::Refused("put-version in a read-only call".into())
    );
}
