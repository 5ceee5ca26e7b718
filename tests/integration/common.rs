//! A scratchpad in a temporary folder (or a fresh PostgreSQL database), and helpers to call
//! its tools as MCP would.

use scratchpad_mcp::bindings::{LimitOverrides, NO_OVERRIDES};
use scratchpad_mcp::sandbox::GUEST_COMPONENT;
use scratchpad_mcp::storage::DatabaseUrl;
use scratchpad_mcp::summariser::{AnthropicConfig, DEFAULT_MODEL};
use scratchpad_mcp::{Service, Settings};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use tempfile::TempDir;

/// A PostgreSQL database made for one test and dropped after it.
///
/// The server comes from `SCRATCHPAD_TEST_POSTGRES`, a `postgres://` URL of a role that may
/// create databases. Without it the PostgreSQL tests are skipped, unless
/// `SCRATCHPAD_REQUIRE_POSTGRES` is set (CI sets it), in which case they fail.
pub struct TestDatabase {
    admin: String,
    name: String,
    pub url: DatabaseUrl,
}

impl TestDatabase {
    pub fn create() -> Option<Self> {
        let Ok(admin) = std::env::var("SCRATCHPAD_TEST_POSTGRES") else {
            assert!(
                std::env::var_os("SCRATCHPAD_REQUIRE_POSTGRES").is_none(),
                "SCRATCHPAD_REQUIRE_POSTGRES is set, but SCRATCHPAD_TEST_POSTGRES is not"
            );
            let test = std::thread::current().name().unwrap_or("a test").to_owned();
            println!(
                "skipped: {test} needs PostgreSQL; run `eval \"$(./scripts/test-postgres)\"` first"
            );
            return None;
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "sp_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        Self::admin_sql(&admin, &format!("CREATE DATABASE {name}"));
        let url = DatabaseUrl::parse(&Self::url_of(&admin, &name)).unwrap();
        Some(Self { admin, name, url })
    }

    /// The test's database through the pooler in transaction mode that
    /// `scripts/test-postgres` runs (`SCRATCHPAD_TEST_POSTGRES_POOLER`); `None` without one,
    /// unless PostgreSQL tests are required.
    pub fn through_pooler(&self) -> Option<DatabaseUrl> {
        let Ok(pooler) = std::env::var("SCRATCHPAD_TEST_POSTGRES_POOLER") else {
            assert!(
                std::env::var_os("SCRATCHPAD_REQUIRE_POSTGRES").is_none(),
                "SCRATCHPAD_REQUIRE_POSTGRES is set, but SCRATCHPAD_TEST_POSTGRES_POOLER is not"
            );
            println!("skipped: needs the pooler `./scripts/test-postgres` starts");
            return None;
        };
        Some(DatabaseUrl::parse(&Self::url_of(&pooler, &self.name)).unwrap())
    }

    /// The admin URL with its database replaced by `name`: same server, same role.
    fn url_of(admin: &str, name: &str) -> String {
        let (base, query) = admin.split_once('?').unwrap_or((admin, ""));
        let authority = base.find("://").map_or(0, |i| i + 3);
        let server = base[authority..]
            .find('/')
            .map_or(base, |i| &base[..authority + i]);
        match query {
            "" => format!("{server}/{name}"),
            q => format!("{server}/{name}?{q}"),
        }
    }

    fn admin_sql(admin: &str, sql: &str) {
        let mut client = postgres::Client::connect(admin, postgres::NoTls)
            .expect("connect to SCRATCHPAD_TEST_POSTGRES");
        client
            .batch_execute(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// The test's database with `params` added to the URL's query.
    pub fn url_with(&self, params: &str) -> DatabaseUrl {
        let url = Self::url_of(&self.admin, &self.name);
        let joiner = if url.contains('?') { '&' } else { '?' };
        DatabaseUrl::parse(&format!("{url}{joiner}{params}")).unwrap()
    }

    /// Runs `sql` on the server as the admin role, with `{db}` standing for this database.
    pub fn admin(&self, sql: &str) {
        Self::admin_sql(&self.admin, &sql.replace("{db}", &self.name));
    }

    /// A connection to the test's database, to look at what the server stored.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&Self::url_of(&self.admin, &self.name), postgres::NoTls)
            .expect("connect")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let admin = self.admin.clone();
        // The driver must not run inside another runtime; a plain thread has none.
        let _ = std::thread::spawn(move || Self::admin_sql(&admin, &sql)).join();
    }
}

/// A store in its own folder, served by a fresh [`Service`].
pub struct Scratch {
    pub dir: TempDir,
    /// The PostgreSQL database, when the store is one; else the SQLite file in `dir`.
    pub database: Option<TestDatabase>,
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

fn settings(
    db: &Path,
    database: Option<&TestDatabase>,
    anthropic: &AnthropicConfig,
    limits: LimitOverrides,
) -> Settings {
    Settings {
        db: db.to_owned(),
        database: database.map(|d| d.url.clone()),
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

    /// A new, empty PostgreSQL database with these limits; `None` when the tests have no
    /// server (see [`TestDatabase`]).
    pub fn on_postgres(component: &'static [u8], limits: LimitOverrides) -> Option<Self> {
        let database = TestDatabase::create()?;
        Some(Self::open(Some(database), no_key(), component, limits))
    }

    /// The same, with the summariser configured as given.
    pub fn on_postgres_with_anthropic(
        anthropic: AnthropicConfig,
        limits: LimitOverrides,
    ) -> Option<Self> {
        let database = TestDatabase::create()?;
        Some(Self::open(
            Some(database),
            anthropic,
            GUEST_COMPONENT,
            limits,
        ))
    }

    fn with(anthropic: AnthropicConfig, component: &'static [u8], limits: LimitOverrides) -> Self {
        Self::open(None, anthropic, component, limits)
    }

    fn open(
        database: Option<TestDatabase>,
        anthropic: AnthropicConfig,
        component: &'static [u8],
        limits: LimitOverrides,
    ) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("store.db");
        let settings = settings(&db, database.as_ref(), &anthropic, limits);
        let service = Service::open_with_component(&settings, component).expect("open service");
        Self {
            dir,
            database,
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
        self.service = Some(self.another_instance());
    }

    /// Another service on the same store, as a second server process would be.
    pub fn another_instance(&self) -> Service {
        let settings = settings(
            &self.db(),
            self.database.as_ref(),
            &self.anthropic,
            self.limits,
        );
        Service::open_with_component(&settings, self.component).expect("open another instance")
    }

    /// The running service.
    pub fn service(&self) -> &Service {
        self.service.as_ref().expect("service running")
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

    /// A client of this scratch's PostgreSQL database, for a test that changes the
    /// database under the server.
    pub fn pg(&self) -> postgres::Client {
        self.database.as_ref().expect("a PostgreSQL store").client()
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

/// The store at `db` opened as the server opens it, through its page checksums: for a test
/// that changes rows beneath the server (a change SQLite writes whole, unlike damage).
pub fn sql(db: &Path) -> rusqlite::Connection {
    scratchpad_store::pages::open(db, rusqlite::OpenFlags::default(), None).unwrap()
}

/// The ids of a `read_log` page's entries, in order.
pub fn entry_ids(page: &Value) -> Vec<u64> {
    let entries = page["entries"].as_array().expect("a page of entries");
    entries
        .iter()
        .map(|e| e["id"].as_u64().expect("an id"))
        .collect()
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
