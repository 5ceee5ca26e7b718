//! The self-contained component, run as a host that knows nothing but WASI runs it (wasmtime
//! with `wasmtime-wasi`, the folder preopened, no other import), and the one file format: a
//! store the component writes is one the server verifies and serves, and the other way round.
//!
//! A build without a C compiler for WASI carries no self-contained component: these tests
//! then say they were skipped, unless SCRATCHPAD_REQUIRE_STANDALONE is set (as in CI).

use crate::common::{Scratch, apply_diff};
use scratchpad_mcp::bindings::api;
use scratchpad_mcp::bindings::exports::scratchpad::mcp::tools::{Guest, GuestIndices};
use scratchpad_mcp::storage::admin;
use serde_json::json;
use std::path::Path;
use std::sync::OnceLock;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The WASI-only component, or `None` (after saying so) in a build without it.
fn wasi_only() -> Option<&'static [u8]> {
    match scratchpad_mcp::standalone::component(true) {
        Ok(bytes) => Some(bytes),
        Err(e) if std::env::var_os("SCRATCHPAD_REQUIRE_STANDALONE").is_some() => {
            panic!("SCRATCHPAD_REQUIRE_STANDALONE is set: {e}")
        }
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

struct Wasi {
    ctx: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Wasi {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// One instance of the component on `folder`, with only WASI linked.
struct Pad {
    store: Store<Wasi>,
    tools: Guest,
}

impl Pad {
    fn open(bytes: &'static [u8], folder: &Path) -> Self {
        // Compiled once for every test of the run.
        static COMPILED: OnceLock<(Engine, Component)> = OnceLock::new();
        let (engine, component) = COMPILED.get_or_init(|| {
            let engine = Engine::new(&Config::new()).unwrap();
            let component = Component::new(&engine, bytes).unwrap();
            (engine, component)
        });
        let mut linker = Linker::new(engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
        let mut ctx = WasiCtx::builder();
        ctx.preopened_dir(folder, "/store", wasmtime_wasi::FsPerms::ReadWrite)
            .unwrap();
        let ctx = ctx.build();
        let mut store = Store::new(
            engine,
            Wasi {
                ctx,
                table: ResourceTable::new(),
            },
        );
        let instance = linker
            .instantiate(&mut store, component)
            .expect("a host with nothing but WASI instantiates it");
        let tools = GuestIndices::new(&instance.instance_pre(&store))
            .unwrap()
            .load(&mut store, &instance)
            .unwrap();
        Self { store, tools }
    }

    fn write(&mut self, path: &str, content: &str) -> api::WriteFileResult {
        let request = api::WriteFileRequest {
            agent_id: "a".into(),
            path: path.into(),
            content: content.into(),
            expected_version: None,
        };
        self.tools
            .call_write_file(&mut self.store, &request)
            .unwrap()
            .unwrap()
    }

    fn read(&mut self, path: &str, since: Option<u64>) -> api::ReadFileResult {
        let request = api::ReadFileRequest {
            agent_id: "a".into(),
            path: path.into(),
            since_version: since,
            full_diff: false,
            offset: None,
            limit: None,
            column: None,
        };
        self.tools
            .call_read_file(&mut self.store, &request)
            .unwrap()
            .unwrap()
    }
}

fn lines(n: usize, changed: usize) -> String {
    (1..=n)
        .map(|i| {
            let word = if i == changed {
                "changed"
            } else {
                "as first written"
            };
            format!("line {i} of the notes, {word}\n")
        })
        .collect()
}

#[test]
fn the_server_verifies_and_serves_a_store_the_component_wrote() {
    let Some(bytes) = wasi_only() else { return };
    let mut scratch = Scratch::new();
    scratch.stop();
    let folder = scratch.dir.path().join("pad");
    std::fs::create_dir(&folder).unwrap();
    let mut pad = Pad::open(bytes, &folder);
    pad.write("notes.md", &lines(40, 0));
    assert_eq!(pad.write("notes.md", &lines(40, 7)).version, 2);
    let entry = api::AppendLogRequest {
        agent_id: "a".into(),
        path: "journal".into(),
        entry: scratchpad_mcp::bindings::LogValue::Text("a quokka was seen".into()),
    };
    pad.tools
        .call_append_log(&mut pad.store, &entry)
        .unwrap()
        .unwrap();
    drop(pad);

    let db = folder.join("scratchpad.db");
    let verified = admin::verify(&db).expect("the server verifies the component's store");
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
    std::fs::rename(&db, scratch.db()).unwrap();
    scratch.restart();
    let diff = scratch.ok(
        "read_file",
        json!({"agent_id": "a", "path": "notes.md", "since_version": 1}),
    );
    assert_eq!(diff["current_version"], 2);
    assert_eq!(apply_diff(&lines(40, 0), &diff["diff"]), lines(40, 7));
    let log = scratch.ok("read_log", json!({"agent_id": "a", "path": "journal"}));
    assert_eq!(log["entries"][0]["entry"], "a quokka was seen");
    let hits = scratch.ok("search", json!({"agent_id": "a", "query": "quokka"}));
    assert_eq!(hits["hits"][0]["path"], "journal", "{hits}");
    assert_eq!(
        scratch.usage("a")["total_operations"],
        3 + 3,
        "counted by both"
    );
}

#[test]
fn the_component_reads_a_store_the_server_wrote() {
    let Some(bytes) = wasi_only() else { return };
    let mut scratch = Scratch::new();
    scratch.write("a", "notes.md", &lines(30, 0));
    scratch.write("a", "notes.md", &lines(30, 12));
    scratch.ok(
        "append_log",
        json!({"agent_id": "a", "path": "journal", "entry": "the wombat digs"}),
    );
    scratch.stop();
    let folder = scratch.dir.path().join("pad");
    std::fs::create_dir(&folder).unwrap();
    std::fs::rename(scratch.db(), folder.join("scratchpad.db")).unwrap();

    let mut pad = Pad::open(bytes, &folder);
    let read = pad.read("notes.md", Some(1));
    assert_eq!(read.current_version, 2);
    let api::ReadBody::Diff(diff) = read.body else {
        panic!("a diff since version 1, got {:?}", read.body)
    };
    assert!(
        diff.chunks.iter().any(
            |c| matches!(c, api::DiffChunk::Add(l) if l == &["line 12 of the notes, changed"])
        ),
        "{:?}",
        diff.chunks
    );
    let search = api::SearchRequest {
        agent_id: "a".into(),
        query: "wombat".into(),
        prefix: None,
        limit: None,
        offset: None,
    };
    let found = pad
        .tools
        .call_search(&mut pad.store, &search)
        .unwrap()
        .unwrap();
    assert_eq!(found.hits.len(), 1);
    assert_eq!(found.hits[0].path, "journal");
    // The component converted the server's WAL store to a rollback journal; the server
    // opens it again and finds it whole.
    assert_eq!(pad.write("notes.md", &lines(30, 3)).version, 3);
    drop(pad);
    let verified = admin::verify(&folder.join("scratchpad.db")).unwrap();
    assert!(verified.problems.is_empty(), "{:?}", verified.problems);
}
