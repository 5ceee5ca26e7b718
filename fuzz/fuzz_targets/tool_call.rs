//! Whole tool calls through the host: any JSON as any tool's arguments is decoded, run by the
//! real component over a real SQLite file, and judged by the oracle (`src/oracle.rs`): the
//! caller's errors only, never a trap or a refused answer, no server path or SQL in a message,
//! what a write says it stored is what a read returns, and `verify` passes after every call
//! that may write. A violation panics, which libFuzzer reports as a crash with its input.
#![no_main]

#[path = "../src/oracle.rs"]
mod oracle;

use scratchpad_mcp::service::ToolName;
use scratchpad_mcp::summariser::{AnthropicConfig, DEFAULT_MODEL};
use scratchpad_mcp::{Service, Settings};
use std::sync::OnceLock;

/// A name no tool has: the unknown-tool path is fuzzed too.
const UNKNOWN: &str = "no_such_tool";

struct Fixture {
    dir: tempfile::TempDir,
    service: Service,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        // In this crate's own target folder, not the system's temp folder: libFuzzer ends the
        // process without running destructors, so the folder outlives the run, and there it
        // goes with the build (`cargo clean`) instead of piling up in /tmp at every run.
        let builds = concat!(env!("CARGO_MANIFEST_DIR"), "/target");
        std::fs::create_dir_all(builds).expect("the fuzz crate's target folder");
        let dir = tempfile::Builder::new()
            .prefix("tool_call-")
            .tempdir_in(builds)
            .expect("temp dir");
        let settings = Settings {
            db: dir.path().join("fuzz.db"),
            database: None,
            cache_dir: Some(dir.path().join("cache")),
            limits: scratchpad_mcp::bindings::NO_OVERRIDES,
            http: Default::default(),
            anthropic: AnthropicConfig {
                api_key: None,
                base_url: "http://127.0.0.1:9".into(),
                model: DEFAULT_MODEL.into(),
            },
        };
        let service = match std::env::var_os("SCRATCHPAD_FUZZ_COMPONENT") {
            // Another build of the component (the tests' hostile one, say), to see the
            // oracle catch it.
            Some(path) => {
                let wasm = std::fs::read(path).expect("read SCRATCHPAD_FUZZ_COMPONENT");
                Service::open_with_component(&settings, &wasm)
            }
            None => Service::open(&settings),
        }
        .expect("open the service");
        Fixture { dir, service }
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&selector, json)) = data.split_first() else {
        return;
    };
    let Ok(serde_json::Value::Object(args)) = serde_json::from_slice(json) else {
        return;
    };
    let fixture = fixture();
    let names = ToolName::ALL.map(ToolName::as_str);
    let tool = names
        .get(usize::from(selector) % (names.len() + 1))
        .copied()
        .unwrap_or(UNKNOWN);
    let outcome = fixture.service.call(tool, args.clone());
    let verdict = oracle::judge(&fixture.service, fixture.dir.path(), tool, &args, &outcome)
        .and_then(|()| {
            if oracle::may_write(tool) {
                oracle::check_store(&fixture.dir.path().join("fuzz.db"))
            } else {
                Ok(())
            }
        });
    if let Err(defect) = verdict {
        panic!("{defect}");
    }
});
