//! A scratchpad in a temporary folder, and helpers to call its tools as MCP would.

use scratchpad_mcp::bindings::{LimitOverrides, NO_OVERRIDES};
use scratchpad_mcp::sandbox::GUEST_COMPONENT;
use scratchpad_mcp::summariser::{AnthropicConfig, DEFAULT_MODEL};
use scratchpad_mcp::{Service, Settings};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use tempfile::TempDir;

/// A store in its own folder, served by a fresh [`Service`].
pub struct Scratch {
    pub dir: TempDir,
    service: Option<Service>,
    anthropic: AnthropicConfig,
    component: &'static [u8],
    limits: LimitOverrides,
}

/// All tests share one compiled-component cache, so Cranelift runs once per test run.
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("component-cache")
}

/// A summariser with no key: it never makes a request.
fn no_key() -> AnthropicConfig {
    AnthropicConfig {
        api_key: None,
        base_url: "http://127.0.0.1:9".into(),
        model: DEFAULT_MODEL.into(),
    }
}

fn settings(db: &Path, anthropic: &AnthropicConfig, limits: LimitOverrides) -> Settings {
    Settings {
        db: db.to_owned(),
        cache_dir: Some(cache_dir()),
        limits,
        anthropic: anthropic.clone(),
        http: Default::default(),
    }
}

impl Scratch {
    /// A new, empty store with no summariser key.
    pub fn new() -> Self {
        Self::with_anthropic(no_key())
    }

    /// A new, empty store whose summariser is configured as given.
    pub fn with_anthropic(anthropic: AnthropicConfig) -> Self {
        Self::with(anthropic, GUEST_COMPONENT, NO_OVERRIDES)
    }

    /// A new, empty store served by another build of the component.
    pub fn with_component(component: &'static [u8]) -> Self {
        Self::with(no_key(), component, NO_OVERRIDES)
    }

    /// A new, empty store whose operator set these limits.
    pub fn with_limits(limits: LimitOverrides) -> Self {
        Self::with(no_key(), GUEST_COMPONENT, limits)
    }

    fn with(anthropic: AnthropicConfig, component: &'static [u8], limits: LimitOverrides) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("store.db");
        let service = Service::open_with_component(&settings(&db, &anthropic, limits), component)
            .expect("open service");
        Self {
            dir,
            service: Some(service),
            anthropic,
            component,
            limits,
        }
    }

    /// Stops the service, closing the store.
    pub fn stop(&mut self) {
        self.service = None;
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("store.db")
    }

    /// Stops the service and starts a new one on the same file, as a client restart would.
    pub fn restart(&mut self) {
        self.service = None;
        let settings = settings(&self.db(), &self.anthropic, self.limits);
        self.service =
            Some(Service::open_with_component(&settings, self.component).expect("reopen"));
    }

    /// Calls a tool; the structured result, or the error text a client would read.
    pub fn call(&self, tool: &str, args: Value) -> Result<Value, String> {
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        self.service
            .as_ref()
            .expect("service running")
            .call(tool, args)
            .map_err(|e| e.to_string())
    }

    pub fn ok(&self, tool: &str, args: Value) -> Value {
        self.call(tool, args.clone())
            .unwrap_or_else(|e| panic!("{tool} {args} failed: {e}"))
    }

    pub fn err(&self, tool: &str, args: Value) -> String {
        match self.call(tool, args.clone()) {
            Ok(v) => panic!("{tool} {args} should fail, gave {v}"),
            Err(e) => e,
        }
    }

    pub fn write(&self, agent: &str, path: &str, content: &str) -> Value {
        self.ok(
            "write_file",
            serde_json::json!({ "agent_id": agent, "path": path, "content": content }),
        )
    }

    pub fn usage(&self, agent: &str) -> Map<String, Value> {
        match self.ok("get_usage_stats", serde_json::json!({ "agent_id": agent })) {
            Value::Object(map) => map,
            other => panic!("usage is an object: {other}"),
        }
    }
}

/// Rebuilds the new text from the old one and a `read_file` diff, as a client would: an
/// oracle written apart from the guest's own `apply`.
pub fn apply_diff(old: &str, diff: &Value) -> String {
    let old: Vec<&str> = old.split('\n').collect();
    let (mut at, mut out) = (0usize, Vec::<String>::new());
    let lines = |chunk: &Value| -> Vec<String> {
        chunk["lines"]
            .as_array()
            .expect("lines")
            .iter()
            .map(|l| l.as_str().expect("line is text").to_owned())
            .collect()
    };
    for chunk in diff.as_array().expect("diff is a list") {
        match chunk["op"].as_str().expect("op") {
            "equal" => {
                for line in lines(chunk) {
                    assert_eq!(old[at], line, "equal line {at} matches the old text");
                    out.push(line);
                    at += 1;
                }
            }
            "remove" => {
                for line in lines(chunk) {
                    assert_eq!(old[at], line, "removed line {at} matches the old text");
                    at += 1;
                }
            }
            "add" => out.extend(lines(chunk)),
            "skip" => {
                let count = chunk["count"].as_u64().expect("count") as usize;
                assert_eq!(chunk["old_line"].as_u64(), Some(at as u64 + 1));
                assert_eq!(chunk["new_line"].as_u64(), Some(out.len() as u64 + 1));
                out.extend(old[at..at + count].iter().map(|l| (*l).to_owned()));
                at += count;
            }
            op => panic!("unknown op {op}"),
        }
    }
    if diff.as_array().is_some_and(|d| d.is_empty()) {
        return old.join("\n");
    }
    assert_eq!(at, old.len(), "the diff covers the whole old text");
    out.join("\n")
}
