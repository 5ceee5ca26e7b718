//! The shared conformance cases (`tests/conformance/cases.json`) against the native host:
//! the embedded component, the host's SQLite storage, one transaction per call committed
//! only on success, as the MCP service runs them. The Node and Python embeddings run the
//! same file (`examples/`), so the three runtimes must give the same answers.
//!
//! Calls are made through wasmtime's untyped values, converted from and to the cases' JSON
//! form by the component's own types: no per-tool code here.

use crate::common::TestDatabase;
use scratchpad_guest::json::ToolName;
use scratchpad_mcp::bindings::{LimitOverrides, SummariserError, SummaryRequest};
use scratchpad_mcp::sandbox::{GUEST_COMPONENT, Sandbox, tool_function};
use scratchpad_mcp::sequence::{mode_of, run_in};
use scratchpad_mcp::storage::{Backend, Postgres, Sqlite};
use scratchpad_mcp::summariser::SummaryModel;
use serde_json::{Map, Value, json};
use std::path::Path;
use std::sync::Arc;
use wasmtime::component::{Type, Val};

/// The cases' summariser: one fixed answer, or "not configured" in the groups that say so.
struct Fixed {
    configured: bool,
}

impl SummaryModel for Fixed {
    fn model(&self) -> String {
        "conformance-model".into()
    }
    fn summarise(&self, _: &SummaryRequest) -> Result<String, SummariserError> {
        if self.configured {
            Ok("A fixed summary.".into())
        } else {
            Err(SummariserError::NotConfigured("no API key".into()))
        }
    }
}

/// A case's JSON value as the component's value of type `ty`.
fn to_val(ty: &Type, v: &Value) -> Val {
    match ty {
        Type::Bool => Val::Bool(v.as_bool().expect("bool")),
        Type::U32 => Val::U32(v.as_u64().and_then(|n| u32::try_from(n).ok()).expect("u32")),
        Type::U64 => Val::U64(v.as_u64().expect("u64")),
        Type::String => Val::String(v.as_str().expect("string").into()),
        Type::List(list) => Val::List(
            v.as_array()
                .expect("array")
                .iter()
                .map(|item| to_val(&list.ty(), item))
                .collect(),
        ),
        Type::Option(option) => Val::Option(match v {
            Value::Null => None,
            some => Some(Box::new(to_val(&option.ty(), some))),
        }),
        Type::Record(record) => Val::Record(
            record
                .fields()
                .map(|field| (field.name.to_owned(), to_val(&field.ty, &v[field.name])))
                .collect(),
        ),
        Type::Variant(variant) => {
            let tag = v["tag"].as_str().expect("variant tag");
            let case = variant
                .cases()
                .find(|c| c.name == tag)
                .unwrap_or_else(|| panic!("no case {tag}"));
            Val::Variant(
                tag.into(),
                case.ty.map(|ty| Box::new(to_val(&ty, &v["val"]))),
            )
        }
        Type::Enum(_) => Val::Enum(v.as_str().expect("enum case").into()),
        other => panic!("the cases use no values of type {other:?}"),
    }
}

/// A component value in the cases' JSON form.
fn to_json(v: &Val) -> Value {
    let tagged = |tag: &str, val: Option<&Val>| match val {
        Some(val) => json!({ "tag": tag, "val": to_json(val) }),
        None => json!({ "tag": tag }),
    };
    match v {
        Val::Bool(b) => json!(b),
        Val::U32(n) => json!(n),
        Val::U64(n) => json!(n),
        Val::String(s) => json!(s),
        Val::List(items) | Val::Tuple(items) => Value::Array(items.iter().map(to_json).collect()),
        Val::Option(o) => o.as_deref().map_or(Value::Null, to_json),
        Val::Record(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, val)| (name.clone(), to_json(val)))
                .collect::<Map<_, _>>(),
        ),
        Val::Variant(tag, val) => tagged(tag, val.as_deref()),
        Val::Enum(case) => json!(case),
        Val::Result(Ok(val)) => tagged("ok", val.as_deref()),
        Val::Result(Err(val)) => tagged("err", val.as_deref()),
        other => panic!("the tools return no values like {other:?}"),
    }
}

/// Whether `got` matches `want` by the cases' matching rule (their `about`): `"*"` matches
/// anything, objects match key for key, arrays item by item, a number only an equal integer.
fn matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(w), _) if w == "*" => true,
        (Value::Object(w), Value::Object(g)) => {
            w.len() == g.len()
                && w.iter()
                    .all(|(k, v)| g.get(k).is_some_and(|g| matches(v, g)))
        }
        (Value::Array(w), Value::Array(g)) => {
            w.len() == g.len() && w.iter().zip(g).all(|(w, g)| matches(w, g))
        }
        (Value::Number(w), Value::Number(g)) => !w.is_f64() && !g.is_f64() && w == g,
        _ => want == got,
    }
}

/// The shared cases, as data.
fn cases() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/cases.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn the_matcher_follows_the_shared_rule() {
    let table = cases()["matcher"].as_array().unwrap().clone();
    assert!(table.len() >= 10, "the table is there");
    for row in table {
        assert_eq!(
            matches(&row["want"], &row["got"]),
            row["matches"] == true,
            "{row}"
        );
    }
}

fn limits(group: &Value) -> LimitOverrides {
    let get = |name: &str| group["limits"][name].as_u64();
    LimitOverrides {
        max_files: get("max-files"),
        max_log_entries: get("max-log-entries"),
        max_total_bytes: get("max-total-bytes"),
        max_write_bytes: get("max-write-bytes"),
        max_log_entry_bytes: get("max-log-entry-bytes"),
        versions_kept: get("versions-kept").map(|n| n as u32),
        log_page_size: get("log-page-size").map(|n| n as u32),
        max_response_tokens: get("max-response-tokens"),
    }
}

/// One call, through the service's call sequence in the tool's mode, committed only if the
/// tool succeeded.
fn call(
    sandbox: &Sandbox,
    store: &dyn Backend,
    group: &Value,
    name: &str,
    args: &[Value],
) -> Value {
    let agent = match &args[0] {
        Value::String(agent) => agent.clone(),
        request => request["agent-id"].as_str().expect("agent-id").to_owned(),
    };
    // The mode production runs the tool in: a read call's summary is stored after it.
    let tool = ToolName::parse(&name.replace('-', "_")).expect("a tool the server lists");
    let txn = store.begin(mode_of(tool), limits(group)).expect("begin");
    let model: Arc<dyn SummaryModel> = Arc::new(Fixed {
        configured: group["summariser"] != "not-configured",
    });
    let ran = run_in(txn, &agent, &model, |state| {
        sandbox.run(state, |instance, store| {
            let index =
                tool_function(instance, store, name).unwrap_or_else(|| panic!("no tool {name}"));
            let func = instance.get_func(&mut *store, index).expect("a function");
            let params: Vec<Val> = func
                .ty(&*store)
                .params()
                .zip(args)
                .map(|((_, ty), arg)| to_val(&ty, arg))
                .collect();
            let mut results = [Val::Bool(false)];
            func.call(&mut *store, &params, &mut results)?;
            Ok(to_json(&results[0]))
        })
    });
    let ran = ran.expect("one caller's calls never conflict");
    let answer = ran.answer.expect("the component does not trap");
    assert!(ran.failure.is_none(), "{:?}", ran.failure);
    let txn = ran.txn;
    if answer["tag"] == "ok" {
        txn.commit(&agent).expect("commit");
    }
    answer
}

/// Runs every case, each group on a fresh store from `fresh`; returns the calls made, which
/// is every step of every group.
fn run_cases(fresh: &dyn Fn() -> Box<dyn Backend>) -> usize {
    let cases = cases();
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache");
    let sandbox = Sandbox::with_component(GUEST_COMPONENT, Some(&cache)).unwrap();
    let groups = cases["groups"].as_array().unwrap();
    let steps: usize = groups
        .iter()
        .map(|g| g["steps"].as_array().unwrap().len())
        .sum();
    let mut calls = 0;
    for group in groups {
        let store = fresh();
        for (i, step) in group["steps"].as_array().unwrap().iter().enumerate() {
            let name = step["call"].as_str().unwrap();
            let got = call(
                &sandbox,
                &*store,
                group,
                name,
                step["args"].as_array().unwrap(),
            );
            assert!(
                matches(&step["expect"], &got),
                "{} step {i} ({name}):\n  want {}\n  got  {got}",
                group["name"],
                step["expect"]
            );
            calls += 1;
        }
    }
    assert!(
        groups.len() >= 12 && steps >= 113,
        "the cases are all there: {steps} steps"
    );
    assert_eq!(calls, steps, "every step ran");
    calls
}

#[test]
fn the_native_host_gives_the_shared_answers() {
    let dir = tempfile::tempdir().unwrap();
    let next = std::cell::Cell::new(0);
    let calls = run_cases(&|| {
        next.set(next.get() + 1);
        Box::new(Sqlite::open(&dir.path().join(format!("{}.db", next.get()))).unwrap())
    });
    println!("conformance: {calls} calls, all as expected (native host, SQLite)");
}

#[test]
fn postgres_gives_the_shared_answers() {
    let databases = std::cell::RefCell::new(Vec::new());
    if TestDatabase::create().is_none() {
        return; // said why, and how to run it
    }
    let calls = run_cases(&|| {
        let db = TestDatabase::create().expect("a test database");
        let store = Postgres::open(&db.url).expect("open");
        databases.borrow_mut().push(db);
        Box::new(store)
    });
    println!("conformance: {calls} calls, all as expected (native host, PostgreSQL)");
}
