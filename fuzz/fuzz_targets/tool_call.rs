//! Whole tool calls through the host: any JSON as any tool's arguments is decoded, run by the
//! real component over a real SQLite file, and answered without a panic; a refusal is a
//! message that names no path of the server.
#![no_main]

use scratchpad_mcp::summariser::{AnthropicConfig, DEFAULT_MODEL};
use scratchpad_mcp::{Service, Settings};
use std::sync::OnceLock;

const TOOLS: [&str; 14] = [
    "forget_log",
    "read_files",
    "write_file",
    "edit_file",
    "read_file",
    "file_history",
    "search",
    "append_log",
    "read_log",
    "list_files",
    "delete_file",
    "summarize_file",
    "get_usage_stats",
    "no_such_tool",
];

struct Fixture {
    dir: tempfile::TempDir,
    service: Service,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("temp dir");
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
        let service = Service::open(&settings).expect("open the service");
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
    let tool = TOOLS[usize::from(selector) % TOOLS.len()];
    if let Err(e) = fixture.service.call(tool, args) {
        let message = e.to_string();
        assert!(!message.is_empty());
        assert!(
            !message.contains(&*fixture.dir.path().to_string_lossy()),
            "{message}"
        );
    }
});
