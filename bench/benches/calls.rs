//! In-process figures. Each tool three ways, over the same kind of SQLite store:
//! - `native`: the guest's tool function compiled natively, in one transaction;
//! - `component`: the same through the wasm component, as the service runs it: in the
//!   instance kept for the agent (the ratio to `native` is the sandbox's cost);
//! - `service`: the full `Service::answer`, adding the JSON of MCP: the arguments decoded,
//!   the answer encoded and checked, its text what the stdio server sends.
//!
//! Also the bare SQLite transactions under a write and a diff read (the floor), and a call's
//! sandbox set-up, in a kept instance and in a fresh one.
//! `cargo bench -p scratchpad-bench --bench calls`

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, criterion_group, criterion_main};
use scratchpad_bench::{component_call, document, native_call};
use scratchpad_guest::testing::ScriptedModel;
use scratchpad_guest::{api, tools};
use scratchpad_mcp::bindings::NO_OVERRIDES;
use scratchpad_mcp::bindings::{LogValue, api as host_api};
use scratchpad_mcp::guard::Guard;
use scratchpad_mcp::imports::CallState;
use scratchpad_mcp::sandbox::{GUEST_COMPONENT, Sandbox};
use scratchpad_mcp::storage::{Backend, Mode, Sqlite};
use scratchpad_mcp::summariser::{Anthropic, AnthropicConfig, SummaryModel};
use scratchpad_mcp::{Service, Settings};
use serde_json::{Value, json};
use std::cell::Cell;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use wasmtime::component::{ComponentNamedList, ComponentType, Lift, Lower};

fn no_key() -> AnthropicConfig {
    AnthropicConfig {
        api_key: None,
        base_url: "http://127.0.0.1:9".into(),
        model: "m".into(),
    }
}

/// The three ways in, each over its own store in `dir`.
struct Ways {
    native: Sqlite,
    backend: Sqlite,
    sandbox: Sandbox,
    model: Arc<dyn SummaryModel>,
    service: Service,
}

impl Ways {
    fn new(dir: &Path) -> Self {
        let cache = dir.join("cache");
        Self {
            native: Sqlite::open(&dir.join("native.db")).unwrap(),
            backend: Sqlite::open(&dir.join("component.db")).unwrap(),
            sandbox: Sandbox::with_component(GUEST_COMPONENT, Some(&cache)).unwrap(),
            model: Arc::new(Anthropic::new(no_key())),
            service: Service::open(&Settings {
                db: dir.join("service.db"),
                database: None,
                cache_dir: Some(cache.clone()),
                limits: NO_OVERRIDES,
                anthropic: no_key(),
                http: Default::default(),
            })
            .unwrap(),
        }
    }

    fn native<R, E: std::fmt::Debug>(
        &self,
        mode: Mode,
        tool: impl FnOnce(&Guard) -> Result<R, E>,
    ) -> R {
        native_call(&self.native, mode, "bench", tool)
    }

    fn component<P, R>(&self, mode: Mode, function: &str, params: P) -> R
    where
        P: ComponentNamedList + Lower,
        R: ComponentType + Lift + 'static,
    {
        component_call(
            &self.sandbox,
            &self.backend,
            &self.model,
            mode,
            "bench",
            function,
            params,
        )
    }

    fn service(&self, tool: &str, args: Value) -> String {
        let Value::Object(args) = args else {
            unreachable!()
        };
        self.service.answer(tool, args).expect("call works").text
    }
}

/// The version a write_file answer (its JSON text) names.
fn version_of(answer: &str) -> u64 {
    let answer: Value = serde_json::from_str(answer).unwrap();
    answer["version"].as_u64().unwrap()
}

fn write(revision: usize, path: &str) -> api::WriteFileRequest {
    api::WriteFileRequest {
        agent_id: "bench".into(),
        path: path.into(),
        content: document(revision),
        expected_version: None,
    }
}

fn host_write(revision: usize, path: &str) -> host_api::WriteFileRequest {
    host_api::WriteFileRequest {
        agent_id: "bench".into(),
        path: path.into(),
        content: document(revision),
        expected_version: None,
    }
}

/// A write of a one-line change, then a read of the diff since the version before.
fn write_then_diff(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let w = Ways::new(dir.path());
    let mut group = c.benchmark_group("write_diff");
    let revision = Cell::new(0);
    let next = || {
        revision.set(revision.get() + 1);
        revision.get()
    };
    group.bench_function("native", |b| {
        b.iter(|| {
            let v = w
                .native(Mode::Write, |p| {
                    tools::write_file(p, write(next(), "plan.md"))
                })
                .version;
            let read = api::ReadFileRequest {
                agent_id: "bench".into(),
                path: "plan.md".into(),
                since_version: Some(v.saturating_sub(1).max(1)),
                full_diff: false,
                offset: None,
                limit: None,
                column: None,
            };
            black_box(w.native(Mode::Read, |p| tools::read_file(p, read)));
        })
    });
    group.bench_function("component", |b| {
        b.iter(|| {
            let req = host_write(next(), "plan.md");
            let v = w
                .component::<_, host_api::WriteFileResult>(Mode::Write, "write-file", (&req,))
                .version;
            let read = host_api::ReadFileRequest {
                agent_id: "bench".into(),
                path: "plan.md".into(),
                since_version: Some(v.saturating_sub(1).max(1)),
                full_diff: false,
                offset: None,
                limit: None,
                column: None,
            };
            black_box(w.component::<_, host_api::ReadFileResult>(
                Mode::Read,
                "read-file",
                (&read,),
            ));
        })
    });
    group.bench_function("service", |b| {
        b.iter(|| {
            let written = w.service(
                "write_file",
                json!({ "agent_id": "bench", "path": "plan.md", "content": document(next()) }),
            );
            let since = version_of(&written).saturating_sub(1).max(1);
            black_box(w.service(
                "read_file",
                json!({ "agent_id": "bench", "path": "plan.md", "since_version": since }),
            ));
        })
    });
    group.finish();
}

fn three_ways(
    group: &mut BenchmarkGroup<'_, WallTime>,
    native: impl Fn(),
    component: impl Fn(),
    service: impl Fn(),
) {
    group.bench_function("native", |b| b.iter(&native));
    group.bench_function("component", |b| b.iter(&component));
    group.bench_function("service", |b| b.iter(&service));
}

/// append_log, read_log and list_files on stores holding 200 entries and 200 files.
fn per_tool(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let w = Ways::new(dir.path());
    for i in 0..200 {
        let entry = format!("entry {i}");
        w.native(Mode::Write, |p| {
            tools::append_log(
                p,
                api::AppendLogRequest {
                    agent_id: "bench".into(),
                    path: "log".into(),
                    entry: scratchpad_guest::LogValue::Text(entry.clone()),
                },
            )
        });
        let req = host_api::AppendLogRequest {
            agent_id: "bench".into(),
            path: "log".into(),
            entry: LogValue::Text(entry.clone()),
        };
        w.component::<_, host_api::AppendLogResult>(Mode::Write, "append-log", (&req,));
        w.service(
            "append_log",
            json!({ "agent_id": "bench", "path": "log", "entry": entry }),
        );
        let path = format!("notes/{i:03}");
        w.native(Mode::Write, |p| tools::write_file(p, write(i, &path)));
        let req = host_write(i, &path);
        w.component::<_, host_api::WriteFileResult>(Mode::Write, "write-file", (&req,));
        w.service(
            "write_file",
            json!({ "agent_id": "bench", "path": path, "content": document(i) }),
        );
    }

    let mut group = c.benchmark_group("append_log");
    let append = host_api::AppendLogRequest {
        agent_id: "bench".into(),
        path: "log2".into(),
        entry: LogValue::Text("did a thing".into()),
    };
    three_ways(
        &mut group,
        || {
            w.native(Mode::Write, |p| {
                tools::append_log(
                    p,
                    api::AppendLogRequest {
                        agent_id: "bench".into(),
                        path: "log2".into(),
                        entry: scratchpad_guest::LogValue::Text("did a thing".into()),
                    },
                )
            });
        },
        || {
            w.component::<_, host_api::AppendLogResult>(Mode::Write, "append-log", (&append,));
        },
        || {
            w.service(
                "append_log",
                json!({ "agent_id": "bench", "path": "log2", "entry": "did a thing" }),
            );
        },
    );
    group.finish();

    let mut group = c.benchmark_group("read_log");
    let page = host_api::ReadLogRequest {
        agent_id: "bench".into(),
        path: "log".into(),
        since_entry: Some(50),
    };
    three_ways(
        &mut group,
        || {
            black_box(w.native(Mode::Read, |p| {
                tools::read_log(
                    p,
                    api::ReadLogRequest {
                        agent_id: "bench".into(),
                        path: "log".into(),
                        since_entry: Some(50),
                    },
                )
            }));
        },
        || {
            black_box(w.component::<_, host_api::LogPage>(Mode::Read, "read-log", (&page,)));
        },
        || {
            black_box(w.service(
                "read_log",
                json!({ "agent_id": "bench", "path": "log", "since_entry": 50 }),
            ));
        },
    );
    group.finish();

    let mut group = c.benchmark_group("list_files");
    let list = host_api::ListFilesRequest {
        agent_id: "bench".into(),
        prefix: Some("notes/".into()),
    };
    three_ways(
        &mut group,
        || {
            black_box(w.native(Mode::Read, |p| {
                tools::list_files(
                    p,
                    api::ListFilesRequest {
                        agent_id: "bench".into(),
                        prefix: Some("notes/".into()),
                    },
                )
            }));
        },
        || {
            black_box(w.component::<_, Vec<scratchpad_mcp::bindings::FileMeta>>(
                Mode::Read,
                "list-files",
                (&list,),
            ));
        },
        || {
            black_box(w.service(
                "list_files",
                json!({ "agent_id": "bench", "prefix": "notes/" }),
            ));
        },
    );
    group.finish();
}

/// The tools not covered above, one group each: a write alone, a diff read alone, a delete
/// (of a file written in the same iteration), the usage counters, and a cached summary.
fn other_tools(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let w = Ways::new(dir.path());
    let long = "a long document line\n".repeat(500);
    w.native(Mode::Write, |p| {
        tools::write_file(
            p,
            api::WriteFileRequest {
                agent_id: "bench".into(),
                path: "long.md".into(),
                content: long.clone(),
                expected_version: None,
            },
        )
    });
    let req = host_api::WriteFileRequest {
        agent_id: "bench".into(),
        path: "long.md".into(),
        content: long.clone(),
        expected_version: None,
    };
    w.component::<_, host_api::WriteFileResult>(Mode::Write, "write-file", (&req,));
    w.service(
        "write_file",
        json!({ "agent_id": "bench", "path": "long.md", "content": long }),
    );
    // Seed each store's cache as a first summary would have, through the store's page
    // checksums (a plain connection's pages would read as damage).
    for db in ["native.db", "component.db", "service.db"] {
        let conn = scratchpad_store::pages::open(
            &dir.path().join(db),
            rusqlite::OpenFlags::default(),
            None,
        )
        .unwrap();
        conn.execute("INSERT INTO summaries SELECT id, current_version, 'm', 'a summary', 'now' FROM files WHERE path = 'long.md'", []).unwrap();
    }
    let revision = Cell::new(0);
    let next = || {
        revision.set(revision.get() + 1);
        revision.get()
    };
    w.native(Mode::Write, |p| tools::write_file(p, write(0, "plan.md")));
    w.component::<_, host_api::WriteFileResult>(
        Mode::Write,
        "write-file",
        (&host_write(0, "plan.md"),),
    );
    w.service(
        "write_file",
        json!({ "agent_id": "bench", "path": "plan.md", "content": document(0) }),
    );

    let mut group = c.benchmark_group("write_file");
    three_ways(
        &mut group,
        || {
            w.native(Mode::Write, |p| {
                tools::write_file(p, write(next(), "plan.md"))
            });
        },
        || {
            let req = host_write(next(), "plan.md");
            w.component::<_, host_api::WriteFileResult>(Mode::Write, "write-file", (&req,));
        },
        || {
            w.service(
                "write_file",
                json!({ "agent_id": "bench", "path": "plan.md", "content": document(next()) }),
            );
        },
    );
    group.finish();

    let mut group = c.benchmark_group("read_file");
    let read = |since| api::ReadFileRequest {
        agent_id: "bench".into(),
        path: "plan.md".into(),
        since_version: Some(since),
        full_diff: false,
        offset: None,
        limit: None,
        column: None,
    };
    let host_read = |since| host_api::ReadFileRequest {
        agent_id: "bench".into(),
        path: "plan.md".into(),
        since_version: Some(since),
        full_diff: false,
        offset: None,
        limit: None,
        column: None,
    };
    // Each store's plan.md has had the same writes; diff against the version before the last.
    let since = |current: u64| current.saturating_sub(1).max(1);
    let native_v = w
        .native(Mode::Write, |p| {
            tools::write_file(p, write(next(), "plan.md"))
        })
        .version;
    let component_v = w
        .component::<_, host_api::WriteFileResult>(
            Mode::Write,
            "write-file",
            (&host_write(next(), "plan.md"),),
        )
        .version;
    let service_v = version_of(&w.service(
        "write_file",
        json!({ "agent_id": "bench", "path": "plan.md", "content": document(next()) }),
    ));
    three_ways(
        &mut group,
        || {
            black_box(w.native(Mode::Read, |p| tools::read_file(p, read(since(native_v)))));
        },
        || {
            let req = host_read(since(component_v));
            black_box(w.component::<_, host_api::ReadFileResult>(Mode::Read, "read-file", (&req,)));
        },
        || {
            black_box(w.service("read_file", json!({ "agent_id": "bench", "path": "plan.md", "since_version": since(service_v) })));
        },
    );
    group.finish();

    let mut group = c.benchmark_group("delete_file");
    let delete = || api::DeleteFileRequest {
        agent_id: "bench".into(),
        path: "scratch".into(),
        expected_version: None,
    };
    let host_delete = host_api::DeleteFileRequest {
        agent_id: "bench".into(),
        path: "scratch".into(),
        expected_version: None,
    };
    three_ways(
        &mut group,
        || {
            w.native(Mode::Write, |p| {
                tools::write_file(p, write(next(), "scratch"))
            });
            w.native(Mode::Write, |p| tools::delete_file(p, delete()));
        },
        || {
            w.component::<_, host_api::WriteFileResult>(
                Mode::Write,
                "write-file",
                (&host_write(next(), "scratch"),),
            );
            w.component::<_, host_api::DeleteFileResult>(
                Mode::Write,
                "delete-file",
                (&host_delete,),
            );
        },
        || {
            w.service(
                "write_file",
                json!({ "agent_id": "bench", "path": "scratch", "content": document(next()) }),
            );
            w.service(
                "delete_file",
                json!({ "agent_id": "bench", "path": "scratch" }),
            );
        },
    );
    group.finish();

    let mut group = c.benchmark_group("get_usage_stats");
    three_ways(
        &mut group,
        || {
            black_box(w.native(Mode::Read, |p| tools::get_usage_stats(p, "bench")));
        },
        || {
            black_box(w.component::<_, host_api::UsageStats>(
                Mode::Read,
                "get-usage-stats",
                ("bench",),
            ));
        },
        || {
            black_box(w.service("get_usage_stats", json!({ "agent_id": "bench" })));
        },
    );
    group.finish();

    let mut group = c.benchmark_group("summarize_file_cached");
    let model = ScriptedModel::answering("unused: the summary is cached").named("m");
    let summarize = || api::SummarizeFileRequest {
        agent_id: "bench".into(),
        path: "long.md".into(),
    };
    let host_summarize = host_api::SummarizeFileRequest {
        agent_id: "bench".into(),
        path: "long.md".into(),
    };
    three_ways(
        &mut group,
        || {
            black_box(w.native(Mode::Read, |p| {
                tools::summarize_file(p, &model, summarize())
            }));
        },
        || {
            black_box(w.component::<_, host_api::SummarizeFileResult>(
                Mode::Read,
                "summarize-file",
                (&host_summarize,),
            ));
        },
        || {
            black_box(w.service(
                "summarize_file",
                json!({ "agent_id": "bench", "path": "long.md" }),
            ));
        },
    );
    group.finish();
    assert_eq!(model.requests(), 0, "every summary came from the cache");
}

/// The same durable write and reads issued straight to SQLite with the store's pragmas, its
/// statements kept prepared as the store keeps its own: the floor under a write_file +
/// read_file pair.
fn sqlite_floor(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = rusqlite::Connection::open(dir.path().join("floor.db")).unwrap();
    scratchpad_store::keep_statements(&db).unwrap();
    db.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE, version INTEGER);
         CREATE TABLE versions (file_id INTEGER, version INTEGER, content TEXT, PRIMARY KEY (file_id, version));
         INSERT INTO files VALUES (1, 'plan.md', 0);",
    )
    .unwrap();
    let version = Cell::new(0i64);
    let mut group = c.benchmark_group("floor");
    group.bench_function("write_diff", |b| {
        b.iter(|| {
            let v = version.get() + 1;
            version.set(v);
            scratchpad_store::control(&db, "BEGIN IMMEDIATE").unwrap();
            db.prepare_cached("INSERT INTO versions VALUES (1, ?1, ?2)")
                .unwrap()
                .execute(rusqlite::params![v, document(v as usize)])
                .unwrap();
            db.prepare_cached("UPDATE files SET version = ?1 WHERE id = 1")
                .unwrap()
                .execute([v])
                .unwrap();
            db.prepare_cached("DELETE FROM versions WHERE file_id = 1 AND version < ?1")
                .unwrap()
                .execute([v - 9])
                .unwrap();
            scratchpad_store::control(&db, "COMMIT").unwrap();
            scratchpad_store::control(&db, "BEGIN").unwrap();
            let mut read = db
                .prepare_cached("SELECT content FROM versions WHERE file_id = 1 AND version = ?1")
                .unwrap();
            black_box(read.query_row([v], |r| r.get::<_, String>(0)).unwrap());
            black_box(
                read.query_row([(v - 1).max(1)], |r| r.get::<_, String>(0))
                    .unwrap(),
            );
            drop(read);
            scratchpad_store::control(&db, "COMMIT").unwrap();
        })
    });
    group.finish();
}

/// What the sandbox adds to a call that runs no guest code: in the instance kept for its
/// agent (every call after an agent's first), and in a fresh one (a new agent's call, for
/// which the instance kept longest is dropped once all slots hold one).
fn instance_setup(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let w = Ways::new(dir.path());
    let mut group = c.benchmark_group("sandbox");
    let agents = Cell::new(0u64);
    let agent = |kept: bool| {
        if kept {
            return "bench".to_owned();
        }
        agents.set(agents.get() + 1);
        format!("agent-{}", agents.get())
    };
    for (name, kept) in [("kept", true), ("fresh", false)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    (
                        w.backend.begin(Mode::Read, NO_OVERRIDES).unwrap(),
                        agent(kept),
                    )
                },
                |(txn, agent)| {
                    let state = CallState::new(&agent, txn, Arc::clone(&w.model));
                    let (instantiated, state) = w.sandbox.run(state, |_, _| Ok(()));
                    instantiated.expect("the component instantiates");
                    black_box(state)
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    write_then_diff,
    per_tool,
    other_tools,
    sqlite_floor,
    instance_setup
);
criterion_main!(benches);
