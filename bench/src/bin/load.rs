//! Hosted mode under load: the release server on `serve --http`, with 1, 8, 32 and 64
//! callers at once, each its own agent, each writing a 50-line document (one line changed)
//! and reading it back since the version before, over Streamable HTTP on loopback with
//! keep-alive connections. Per level: calls and writes a second, p50/p95/p99 latency, and the
//! server's largest resident memory (each level's server finds the component compiled, as a
//! server that ran before does).
//!
//! On SQLite the server runs on a disk whose every sync takes 2 ms, as a cloud disk's does
//! (`bench/shim/slow_fsync.c`, compiled here and preloaded into the server; left out, saying
//! why, without a C compiler). That is the case group commit is for: each write still waits
//! for a sync of its own commit, but writes that commit while one sync runs share the next.
//! With `SCRATCHPAD_TEST_POSTGRES` set, the same levels run on PostgreSQL (its own disk), on
//! a database of the run's own ([`scratchpad_bench::database`]).
//!
//! `cargo run --release -p scratchpad-bench --bin load [-- --quick]`, after `cargo build
//! --release`; `SCRATCHPAD_BIN` names another server binary.

// A report: its table goes to stdout.
#![allow(clippy::print_stdout)]

use scratchpad_bench::database::Database;
use scratchpad_bench::document;
use scratchpad_bench::report::{Run, memory_mib, ms, row};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The numbers of callers at once, one level each.
const LEVELS: [usize; 4] = [1, 8, 32, 64];

/// How long a disk sync takes under the shim, in milliseconds.
const SYNC_MS: u64 = 2;

/// Where the server runs: on a SQLite file of its own per level (with the slow-sync shim
/// preloaded), or on a PostgreSQL database.
struct Setup {
    name: String,
    /// The database URL; none for SQLite.
    database: Option<String>,
    preload: Option<PathBuf>,
}

impl Setup {
    /// The server's store arguments, for a level whose folder is `dir`.
    fn store(&self, dir: &Path) -> Vec<String> {
        match &self.database {
            Some(url) => vec!["--database".into(), url.clone()],
            None => vec!["--db".into(), dir.join("store.db").display().to_string()],
        }
    }
}

/// A hosted server with one key for every caller of a level.
struct Hosted {
    child: Child,
    port: u16,
    key: String,
}

impl Hosted {
    /// A server for `agents` on a store in `dir`, loading the compiled component from `cache`.
    fn start(bin: &Path, setup: &Setup, dir: &Path, cache: &Path, agents: &[String]) -> Self {
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            "[http]\nmax_calls_in_flight = 1024\nmax_calls_in_flight_per_key = 1024\n",
        )
        .expect("write the config");
        let mut add = Command::new(bin);
        add.args(["--config".as_ref(), config.as_os_str()])
            .args(["keys", "add", "load"]);
        for a in agents {
            add.args(["--agent", a]);
        }
        let made = add.stderr(Stdio::null()).output().expect("keys add");
        assert!(made.status.success(), "keys add failed");
        let key = String::from_utf8(made.stdout)
            .expect("a key is text")
            .trim()
            .to_owned();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut serve = Command::new(bin);
        serve
            .args(["--config".as_ref(), config.as_os_str()])
            .args(setup.store(dir))
            .args(["--cache-dir".as_ref(), cache.as_os_str()])
            .args(["serve", "--http", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(shim) = &setup.preload {
            serve
                .env("LD_PRELOAD", shim)
                .env("SLOW_FSYNC_MS", SYNC_MS.to_string());
        }
        let child = serve.spawn().expect("start the server");
        let hosted = Hosted { child, port, key };
        let started = Instant::now();
        while !hosted.healthy() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the server did not start"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        hosted
    }

    fn healthy(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = write!(
            s,
            "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        );
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer.starts_with("HTTP/1.1 200")
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One caller's keep-alive connection, sending a tools/call and reading its answer.
struct Caller {
    stream: BufReader<TcpStream>,
    port: u16,
    key: String,
}

impl Caller {
    fn connect(hosted: &Hosted) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", hosted.port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Caller {
            stream: BufReader::new(stream),
            port: hosted.port,
            key: hosted.key.clone(),
        }
    }

    /// Calls `tool` and returns its structured result; a tool error stops the bench.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": { "name": tool, "arguments": args } })
        .to_string();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            self.key,
            body.len()
        );
        self.stream
            .get_mut()
            .write_all(request.as_bytes())
            .expect("send");
        let answer: Value = serde_json::from_slice(&self.body()).expect("a JSON answer");
        let result = &answer["result"];
        assert_eq!(result["isError"], json!(false), "{tool}: {answer}");
        result["structuredContent"].clone()
    }

    /// The body of the next response: by its length, or its chunks.
    fn body(&mut self) -> Vec<u8> {
        let (mut length, mut chunked) = (None, false);
        loop {
            let mut line = String::new();
            self.stream.read_line(&mut line).expect("a header");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse::<usize>().ok();
            }
            chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
        }
        if !chunked {
            let mut body = vec![0; length.expect("a length or chunks")];
            self.stream.read_exact(&mut body).expect("the body");
            return body;
        }
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            self.stream.read_line(&mut size).expect("a chunk size");
            let size = usize::from_str_radix(size.trim(), 16).expect("a hex chunk size");
            let mut chunk = vec![0; size + 2];
            self.stream.read_exact(&mut chunk).expect("a chunk");
            if size == 0 {
                return body;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
}

/// What one level measured.
struct Level {
    calls: Run,
    writes: usize,
    elapsed: Duration,
    peak_mib: f64,
}

/// Runs `callers` callers at once for `seconds`, each its own agent.
fn level(bin: &Path, setup: &Setup, cache: &Path, callers: usize, seconds: f64) -> Level {
    let dir = tempfile::tempdir().expect("temp dir");
    let agents: Vec<String> = (0..callers)
        .map(|i| format!("load-{}-{callers}-{i}", std::process::id()))
        .collect();
    let hosted = Hosted::start(bin, setup, dir.path(), cache, &agents);
    let start = Arc::new(Barrier::new(callers + 1));
    let run_for = Duration::from_secs_f64(seconds);
    let threads: Vec<_> = agents
        .iter()
        .map(|agent| {
            let (mut caller, agent, start) =
                (Caller::connect(&hosted), agent.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let args = |rev: usize| json!({ "agent_id": agent, "path": "plan.md", "content": document(rev) });
                // A first write outside the timing: the agent and its file exist.
                caller.call("write_file", args(0));
                start.wait();
                let began = Instant::now();
                let (mut latencies, mut writes) = (Vec::new(), 0);
                for rev in 1.. {
                    if began.elapsed() >= run_for {
                        break;
                    }
                    let t = Instant::now();
                    let version = caller.call("write_file", args(rev))["version"]
                        .as_u64()
                        .expect("a version");
                    latencies.push(t.elapsed());
                    writes += 1;
                    let t = Instant::now();
                    let read = caller.call(
                        "read_file",
                        json!({ "agent_id": agent, "path": "plan.md", "since_version": version - 1 }),
                    );
                    latencies.push(t.elapsed());
                    assert_eq!(read["current_version"], json!(version), "{read}");
                }
                (latencies, writes)
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let mut peak_mib: f64 = 0.0;
    while began.elapsed() < run_for {
        peak_mib = peak_mib.max(memory_mib(hosted.child.id()).0);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (mut all, mut writes) = (Vec::new(), 0);
    for t in threads {
        let (latencies, w) = t.join().expect("a caller");
        all.extend(latencies);
        writes += w;
    }
    let elapsed = began.elapsed();
    peak_mib = peak_mib.max(memory_mib(hosted.child.id()).0);
    hosted.stop();
    Level {
        calls: Run(all),
        writes,
        elapsed,
        peak_mib,
    }
}

/// The slow-sync shim compiled for this machine, or why it is not.
fn shim(out: &Path) -> Result<PathBuf, String> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("shim/slow_fsync.c");
    let library = out.join("slow_fsync.so");
    for cc in ["cc", "clang", "gcc"] {
        let built = Command::new(cc)
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&library)
            .arg(&source)
            .arg("-ldl")
            .stderr(Stdio::null())
            .status();
        if built.is_ok_and(|s| s.success()) {
            return Ok(library);
        }
    }
    Err("no C compiler (cc, clang or gcc) to build the slow-sync shim".into())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let seconds = if quick { 1.0 } else { 4.0 };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace");
    let bin = std::env::var_os("SCRATCHPAD_BIN")
        .map_or_else(|| root.join("target/release/scratchpad-mcp"), PathBuf::from);
    let out = root.join("target/bench");
    std::fs::create_dir_all(&out).expect("target/bench");

    let mut setups = Vec::new();
    match shim(&out) {
        Ok(shim) => setups.push(Setup {
            name: format!("SQLite, {SYNC_MS} ms a sync"),
            database: None,
            preload: Some(shim),
        }),
        Err(why) => row("hosted mode on SQLite under load", "left out".into(), why),
    }
    // Made before the levels run and dropped after them all.
    let postgres = std::env::var("SCRATCHPAD_TEST_POSTGRES")
        .ok()
        .map(|admin| Database::fresh(&admin, ""));
    if let Some(database) = &postgres {
        setups.push(Setup {
            name: format!("PostgreSQL (loopback, {})", database.note()),
            database: Some(database.url.clone()),
            preload: None,
        });
    }

    // Every level's server loads the component compiled once here, as a server that has
    // started before does: what Cranelift allocates compiling it, and the allocator keeps,
    // is no part of what a level's callers cost.
    let cache = tempfile::tempdir().expect("temp dir");
    let warm_up = Setup {
        name: "warm-up".into(),
        database: None,
        preload: None,
    };
    let scratch = tempfile::tempdir().expect("temp dir");
    Hosted::start(
        &bin,
        &warm_up,
        scratch.path(),
        cache.path(),
        &["warm-up".into()],
    )
    .stop();

    println!("| callers, store | calls/s (writes/s) | p50 / p95 / p99, peak resident |");
    println!("|---|---|---|");
    for setup in &setups {
        let measured: Vec<_> = LEVELS
            .iter()
            .map(|&callers| (callers, level(&bin, setup, cache.path(), callers, seconds)))
            .collect();
        for (callers, l) in &measured {
            let secs = l.elapsed.as_secs_f64();
            row(
                &format!("{callers} at once, {}", setup.name),
                format!(
                    "{:.0} ({:.0})",
                    l.calls.0.len() as f64 / secs,
                    l.writes as f64 / secs
                ),
                format!(
                    "{} / {} / {}, {:.1} MiB",
                    ms(l.calls.quantile(0.5)),
                    ms(l.calls.quantile(0.95)),
                    ms(l.calls.quantile(0.99)),
                    l.peak_mib
                ),
            );
        }
        let at = |n: usize| &measured.iter().find(|(c, _)| *c == n).expect("a level").1;
        let writes = |l: &Level| l.writes as f64 / l.elapsed.as_secs_f64();
        row(
            &format!("writes/s at 32 callers / at 1, {}", setup.name),
            format!("{:.2}x", writes(at(32)) / writes(at(1))),
            format!(
                "{:.0} vs {:.0} writes/s; goal on SQLite ≥ 3x",
                writes(at(32)),
                writes(at(1))
            ),
        );
        let busiest = at(64);
        row(
            &format!("p99 / p50 at 64 callers, {}", setup.name),
            format!(
                "{:.1}x",
                busiest.calls.quantile(0.99).as_secs_f64()
                    / busiest.calls.quantile(0.5).as_secs_f64()
            ),
            format!(
                "{} vs {}; goal ≤ 10x",
                ms(busiest.calls.quantile(0.99)),
                ms(busiest.calls.quantile(0.5))
            ),
        );
        row(
            &format!("peak resident at 64 callers, {}", setup.name),
            format!("{:.1} MiB", busiest.peak_mib),
            "goal ≤ 100 MiB".into(),
        );
    }
}
