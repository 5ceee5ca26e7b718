//! End-to-end figures over real stdio with a raw JSON-RPC client: start-up, calls per second
//! and latency per tool, memory, and how costs scale with what an agent holds.
//!
//! `cargo run --release -p scratchpad-bench --bin e2e [-- --quick]` (the release server must
//! be built: `cargo build --release`). `SCRATCHPAD_BIN` names another server binary;
//! `SCRATCHPAD_BIN_BEFORE` another build to compare it with, call for call in turns. With
//! `SCRATCHPAD_TEST_POSTGRES` set, the per-call figures are taken on PostgreSQL too, on a
//! database of the run's own ([`scratchpad_bench::database`]).

// A report: its table goes to stdout.
#![allow(clippy::print_stdout)]

use scratchpad_bench::database::Database;
use scratchpad_bench::document;
use scratchpad_bench::report::{Run, anonymous_mib, cpu_time, memory_mib, ms, row};
use serde_json::{Value, json};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server and a client that waits for each answer, as an agent does.
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    /// A server on the SQLite file `db`.
    fn start(bin: &Path, db: &Path, cache: &Path) -> Self {
        Self::start_on(bin, &["--db".as_ref(), db.as_os_str()], cache)
    }

    /// A server on the store `store` names (`--db FILE` or `--database URL`).
    fn start_on(bin: &Path, store: &[&OsStr], cache: &Path) -> Self {
        let mut command = Command::new(bin);
        command
            .args(store)
            .args(["--cache-dir".as_ref(), cache.as_os_str()]);
        Self::spawn(command)
    }

    /// Any MCP server over stdio that `command` starts, initialized.
    fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the server");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Server {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        server.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "bench", "version": "0" } }),
        );
        server.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        server
    }

    /// Sends `message` as one line in one write, as an MCP client does. (`writeln!` on the
    /// unbuffered pipe wrote each piece of the JSON as it was formatted: dozens of writes a
    /// request, each waking the server's reader, which every call's latency then counted.)
    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        self.send(
            &json!({ "jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params }),
        );
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read");
        let answer: Value = serde_json::from_str(&line).expect("JSON-RPC answer");
        answer["result"].clone()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        let result = self.request("tools/call", json!({ "name": tool, "arguments": args }));
        assert_ne!(result["isError"], true, "{tool} failed: {result}");
        result["structuredContent"].clone()
    }

    /// (resident, peak resident) memory in MiB.
    fn memory_mib(&self) -> (f64, f64) {
        memory_mib(self.child.id())
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// Where criterion keeps its last estimates of the benchmark `id`.
fn estimates_file(root: &Path, id: &str) -> PathBuf {
    root.join("target/criterion")
        .join(id)
        .join("new/estimates.json")
}

/// Criterion's median for one benchmark, from the estimates its last run saved.
fn criterion_median(root: &Path, id: &str) -> Option<Duration> {
    let path = estimates_file(root, id);
    let estimates: Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    estimates["median"]["point_estimate"]
        .as_f64()
        .map(|ns| Duration::from_secs_f64(ns / 1e9))
}

/// The in-process ratios, each against its reference measured in the same criterion run.
fn criterion_rows(root: &Path) {
    let pairs = [
        (
            "write_file + read_file diff",
            "write_diff/component",
            "write_diff/native",
            "(native); goal <= 1.2x",
        ),
        (
            "write_file",
            "write_file/component",
            "write_file/native",
            "(native)",
        ),
        (
            "read_file (diff)",
            "read_file/component",
            "read_file/native",
            "(native)",
        ),
        (
            "append_log",
            "append_log/component",
            "append_log/native",
            "(native)",
        ),
        (
            "read_log (page of 100)",
            "read_log/component",
            "read_log/native",
            "(native)",
        ),
        (
            "list_files (200 files)",
            "list_files/component",
            "list_files/native",
            "(native)",
        ),
        (
            "write_file + delete_file",
            "delete_file/component",
            "delete_file/native",
            "(native)",
        ),
        (
            "get_usage_stats",
            "get_usage_stats/component",
            "get_usage_stats/native",
            "(native)",
        ),
        (
            "summarize_file (cached)",
            "summarize_file_cached/component",
            "summarize_file_cached/native",
            "(native)",
        ),
        (
            "write_file + read_file diff",
            "write_diff/component",
            "floor/write_diff",
            "(SQLite floor); goal <= 1.5x",
        ),
        (
            "JSON layer: write_file + read_file diff",
            "write_diff/service",
            "write_diff/component",
            "(component)",
        ),
    ];
    let sandbox = [
        (
            "sandbox/kept",
            "the sandbox's part of a call, in the instance kept for its agent",
            "every call after an agent's first",
        ),
        (
            "sandbox/fresh",
            "the sandbox's part of a call, in a fresh store + instance",
            "an agent's first call; one kept instance dropped",
        ),
    ];
    let ids = pairs
        .iter()
        .flat_map(|&(_, measured, reference, _)| [measured, reference])
        .chain(sandbox.iter().map(|&(id, _, _)| id));
    if let Some((newest, oldest)) = criterion_age(root, ids) {
        row(
            "the in-process rows below: when criterion measured them",
            format!(
                "{}-{} min before this run",
                newest.as_secs() / 60,
                oldest.as_secs() / 60
            ),
            "read from its saved estimates: `scripts/bench` runs criterion just before; \
             a bare `e2e` shows what the last `cargo bench` left"
                .into(),
        );
    }
    for (what, measured, reference, goal) in pairs {
        if let (Some(m), Some(r)) = (
            criterion_median(root, measured),
            criterion_median(root, reference),
        ) {
            row(
                &format!("{what}: component / reference"),
                format!("{:.2}x", m.as_secs_f64() / r.as_secs_f64()),
                format!("{} vs {} {goal}", ms(m), ms(r)),
            );
        }
    }
    for (id, what, when) in sandbox {
        if let Some(setup) = criterion_median(root, id) {
            row(what, ms(setup), when.into());
        }
    }
}

/// How long ago criterion saved the estimates of `ids`: the newest and the oldest of those
/// it has. A filtered `cargo bench` refreshes only some, so the two can differ.
fn criterion_age<'a>(
    root: &Path,
    ids: impl Iterator<Item = &'a str>,
) -> Option<(Duration, Duration)> {
    let ages: Vec<Duration> = ids
        .filter_map(|id| std::fs::metadata(estimates_file(root, id)).ok())
        .filter_map(|meta| meta.modified().ok()?.elapsed().ok())
        .collect();
    Some((*ages.iter().min()?, *ages.iter().max()?))
}

/// Write `i` of the 50-line document (one line changed each time) as `agent`.
fn write(s: &mut Server, agent: &str, i: usize) {
    s.call(
        "write_file",
        json!({ "agent_id": agent, "path": "plan.md", "content": document(i) }),
    );
}

/// Read `i` of `n`: the document since a recent version, after its `n` writes.
fn read(s: &mut Server, agent: &str, n: usize, i: usize) {
    s.call(
        "read_file",
        json!({ "agent_id": agent, "path": "plan.md", "since_version": (n - 1 - i % 9).max(1) }),
    );
}

/// Who a lane of the side-by-side runs is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    /// This server on SQLite.
    Server,
    /// The stdio floor on SQLite.
    Floor,
    /// mcp-memory-rs 0.3.1, which only reads here.
    Peer,
    /// This server on PostgreSQL.
    Postgres,
    /// The stdio floor on PostgreSQL.
    PostgresFloor,
    /// Another build of this server on SQLite (`SCRATCHPAD_BIN_BEFORE`), to measure a change.
    Before,
    /// That build on PostgreSQL, beside this one there.
    PostgresBefore,
}

/// One server of the side-by-side runs, and the agent it writes and reads as.
struct Lane {
    who: Who,
    server: Server,
    agent: String,
}

/// Each lane's writes and reads, by who made them, and the CPU time its process spent on
/// them.
struct Runs {
    writes: Vec<(Who, Run)>,
    reads: Vec<(Who, Run)>,
    write_cpu: Vec<(Who, Duration)>,
    read_cpu: Vec<(Who, Duration)>,
}

impl Runs {
    fn writes(&self, who: Who) -> Option<&Run> {
        find(&self.writes, who)
    }

    fn reads(&self, who: Who) -> Option<&Run> {
        find(&self.reads, who)
    }

    /// `who`'s writes and reads, when it made both.
    fn both(&self, who: Who) -> Option<(&Run, &Run)> {
        self.writes(who).zip(self.reads(who))
    }

    /// The CPU time `who`'s process spent on its writes and on its reads.
    fn cpu(&self, who: Who) -> Option<(Duration, Duration)> {
        find(&self.write_cpu, who)
            .copied()
            .zip(find(&self.read_cpu, who).copied())
    }
}

/// What `who` made among `made`.
fn find<T>(made: &[(Who, T)], who: Who) -> Option<&T> {
    made.iter().find(|(w, _)| *w == who).map(|(_, it)| it)
}

/// Every lane but the peer writes, then every lane reads, in turns ([`Run::in_turns`]): the
/// peer, which keeps no versions, reads its whole document beside our reads since a version.
/// Each lane's process's CPU time is read before and after each phase: while the others
/// take their turns it waits on its pipe, using none.
fn side_by_side(lanes: &mut [Lane], n: usize) -> Runs {
    let mut writers: Vec<&mut Lane> = lanes.iter_mut().filter(|l| l.who != Who::Peer).collect();
    let started = cpu_of(writers.iter().map(|l| &**l));
    let writes = Run::in_turns(&mut writers, n, |l, i| write(&mut l.server, &l.agent, i));
    let write_cpu = spent_since(writers.iter().map(|l| &**l), started);
    let writes = writers.iter().map(|l| l.who).zip(writes).collect();
    let started = cpu_of(lanes.iter());
    let reads = Run::in_turns(lanes, n, |l, i| match l.who {
        Who::Peer => {
            l.server.call("memory_read", json!({ "category": "plan" }));
        }
        _ => read(&mut l.server, &l.agent, n, i),
    });
    let read_cpu = spent_since(lanes.iter(), started);
    let reads = lanes.iter().map(|l| l.who).zip(reads).collect();
    Runs {
        writes,
        reads,
        write_cpu,
        read_cpu,
    }
}

/// Each lane's process's CPU time so far.
fn cpu_of<'a>(lanes: impl Iterator<Item = &'a Lane>) -> Vec<Duration> {
    lanes.map(|l| cpu_time(l.server.child.id())).collect()
}

/// The CPU time each lane's process spent since `started` ([`cpu_of`] the same lanes).
fn spent_since<'a>(
    lanes: impl Iterator<Item = &'a Lane>,
    started: Vec<Duration>,
) -> Vec<(Who, Duration)> {
    lanes
        .zip(started)
        .map(|(l, then)| (l.who, cpu_time(l.server.child.id()).saturating_sub(then)))
        .collect()
}

/// Rows of calls per second and latency, one call at a time: the writes and reads timed side
/// by side, then appends and pages of a log on `s` alone, as `agent`; `store` is added to
/// each row's name.
fn call_rows(s: &mut Server, (writes, reads): (&Run, &Run), n: usize, agent: &str, store: &str) {
    let appends = Run::time(n, |i| {
        s.call("append_log", json!({ "agent_id": agent, "path": "log", "entry": { "step": i, "did": "edited plan.md" } }));
    });
    let pages = Run::time(n / 10, |i| {
        s.call(
            "read_log",
            json!({ "agent_id": agent, "path": "log", "since_entry": (i * 100) % n }),
        );
    });
    for (what, run) in [
        ("write_file (50 lines, one changed)", writes),
        ("read_file since a recent version", reads),
        ("append_log", &appends),
        ("read_log (page of 100)", &pages),
    ] {
        row(
            &format!("{what}{store}"),
            format!("{:.0} calls/s", run.per_second()),
            format!(
                "p50 {}, p99 {}",
                ms(run.quantile(0.5)),
                ms(run.quantile(0.99))
            ),
        );
    }
}

/// The stdio floor (`floor.rs`: the same skeleton, the bare statements) on the store `store`
/// names; `None`, with a row saying so, when it is not built.
fn floor(floor_bin: &Path, store: &[&OsStr]) -> Option<Server> {
    if !floor_bin.exists() {
        row(
            "against the stdio floor",
            "left out".into(),
            format!(
                "build it first: cargo build --release -p scratchpad-bench --bins ({} is missing)",
                floor_bin.display()
            ),
        );
        return None;
    }
    Some(Server::start_on(floor_bin, store, Path::new("unused")))
}

/// The server's writes and reads over stdio beside the floor's on the same store; `on` is
/// added to each row's name.
fn floor_rows(runs: &Runs, lanes: (Who, Who), on: &str, goal: &str) {
    let names = (
        format!("write_file over stdio{on}, server / stdio floor"),
        format!("read_file since a version over stdio{on}, server / stdio floor (one select)"),
    );
    pair_rows(runs, lanes, names, goal);
}

/// `ours`'s writes and reads over `theirs`'s, their p50 and their CPU a call, in rows named
/// `write` and `read`; nothing when either lane is missing.
fn pair_rows(runs: &Runs, (ours, theirs): (Who, Who), (write, read): (String, String), goal: &str) {
    let (Some(our_runs), Some(their_runs)) = (runs.both(ours), runs.both(theirs)) else {
        return;
    };
    ratio_row(&write, our_runs.0, their_runs.0, goal);
    ratio_row(&read, our_runs.1, their_runs.1, goal);
    if let (Some(our_cpu), Some(their_cpu)) = (runs.cpu(ours), runs.cpu(theirs)) {
        let calls = our_runs.0.0.len();
        cpu_row(&format!("CPU a {write}"), our_cpu.0, their_cpu.0, calls);
        cpu_row(&format!("CPU a {read}"), our_cpu.1, their_cpu.1, calls);
    }
}

/// One row: the CPU time a call of one process over another's, each the process's whole
/// (every thread, user and system) over the same `calls` as the p50s above it. What neither
/// a disk's sync nor the machine's waking moves: on a machine whose idle processor wakes
/// slowly, a process that works longer between syncs can wait far longer for each (see
/// BENCHMARKS.md, 2026-12-07, fifth sitting), and the latency ratio swings with it.
fn cpu_row(what: &str, ours: Duration, theirs: Duration, calls: usize) {
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
    row(
        what,
        format!(
            "{:.2}x",
            ours.as_secs_f64() / theirs.as_secs_f64().max(f64::EPSILON)
        ),
        format!(
            "{:.0} µs vs {:.0} µs of CPU a call, every thread of each process",
            per_call(ours),
            per_call(theirs)
        ),
    );
}

/// mcp-memory-rs 0.3.1, when `SCRATCHPAD_PEER_MCP_MEMORY` names its binary (CI installs it),
/// holding the same 50-line document, which it serves from memory (`memory_read`); `None`,
/// with a row saying so, when it is not given. Only reads are compared: it keeps JSON
/// files, not durable the way a committed write is here.
fn peer(dir: &Path) -> Option<Server> {
    let Some(peer) = std::env::var_os("SCRATCHPAD_PEER_MCP_MEMORY") else {
        row(
            "read_file since a version / mcp-memory-rs 0.3.1 memory_read",
            "left out".into(),
            "set SCRATCHPAD_PEER_MCP_MEMORY to its binary (cargo install mcp-memory-rs@0.3.1 --locked)".into(),
        );
        return None;
    };
    let mut command = Command::new(peer);
    command.env("MCP_MEMORY_DIR", dir.join("peer-memory"));
    let mut peer = Server::spawn(command);
    for i in 0..10 {
        peer.call(
            "memory_write",
            json!({ "category": "plan", "data": { "text": document(i) } }),
        );
    }
    Some(peer)
}

/// The rows of the server on PostgreSQL (`pg`): its calls, its writes over SQLite's, its
/// drift, and its floor's rows; `on` says which database the figures come from.
fn postgres_rows(pg: &mut Lane, runs: &Runs, n: usize, on: &str) {
    let (pg_writes, pg_reads) = runs
        .both(Who::Postgres)
        .expect("the server's runs on PostgreSQL");
    let server_writes = runs
        .writes(Who::Server)
        .expect("the server's runs on SQLite");
    let store = " on PostgreSQL (loopback)";
    call_rows(&mut pg.server, (pg_writes, pg_reads), n, &pg.agent, store);
    ratio_row(
        "write_file, PostgreSQL (loopback) / SQLite",
        pg_writes,
        server_writes,
        &format!("goal ≤ 1.5x; on {on}"),
    );
    drift_row(
        "write_file on PostgreSQL, one file again and again: last tenth / first",
        pg_writes,
    );
    before_rows(runs, (Who::Postgres, Who::PostgresBefore), " on PostgreSQL");
    floor_rows(
        runs,
        (Who::Postgres, Who::PostgresFloor),
        " on PostgreSQL",
        "the floor: one statement, one round trip",
    );
    if let (Some(pg_floor), Some(floor)) =
        (runs.writes(Who::PostgresFloor), runs.writes(Who::Floor))
    {
        ratio_row(
            "write, PostgreSQL stdio floor / SQLite stdio floor",
            pg_floor,
            floor,
            "what PostgreSQL itself takes of the 1.5x above",
        );
    }
}

/// This build's writes and reads over those of the build before it (`SCRATCHPAD_BIN_BEFORE`),
/// taken in turns on the same store (`on` names it).
fn before_rows(runs: &Runs, lanes: (Who, Who), on: &str) {
    let names = (
        format!("write_file over stdio{on}, this build / SCRATCHPAD_BIN_BEFORE"),
        format!("read_file since a version over stdio{on}, this build / SCRATCHPAD_BIN_BEFORE"),
    );
    pair_rows(
        runs,
        lanes,
        names,
        "a change, measured in turns with the build before it",
    );
}

/// One row: the p50 of `ours` over the p50 of `theirs`, measured in this run, and `goal`:
/// what the ratio should be at most ("goal ≤ 1.3x"), or what the row is for.
fn ratio_row(what: &str, ours: &Run, theirs: &Run, goal: &str) {
    let (ours, theirs) = (ours.quantile(0.5), theirs.quantile(0.5));
    row(
        what,
        format!("{:.2}x", ours.as_secs_f64() / theirs.as_secs_f64()),
        format!("p50 {} vs {}; {goal}", ms(ours), ms(theirs)),
    );
}

/// How a run of writes of one file moved from its first tenth to its last, at p50: a store
/// that leaves something behind at every write (a dead row not yet vacuumed, say) and then
/// reads past it, slows down as the run goes on.
fn drift_row(what: &str, writes: &Run) {
    if writes.0.len() < 1_000 {
        row(
            what,
            "left out".into(),
            "a full run only: a tenth of a quick one is a handful of calls".into(),
        );
        return;
    }
    let tenth = writes.0.len() / 10;
    let first = Run(writes.0[..tenth].to_vec()).quantile(0.5);
    let last = Run(writes.0[writes.0.len() - tenth..].to_vec()).quantile(0.5);
    row(
        what,
        format!("{:.2}x", last.as_secs_f64() / first.as_secs_f64()),
        format!(
            "p50 of the last tenth {} vs the first {}; flat is 1x",
            ms(last),
            ms(first)
        ),
    );
}

/// Writes that fit in the WAL before SQLite's automatic checkpoint (1,000 pages) would
/// start it over: what the frame counts below are taken over.
const FRAMED_WRITES: usize = 50;

/// Frames in the WAL of the store at `db`, by a connection of its own; `reset` first folds
/// the WAL into the file and empties it (the server sits idle between calls).
fn wal_frames(db: &Path, reset: bool) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("open the store beside the server");
    let mode = if reset { "TRUNCATE" } else { "PASSIVE" };
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |r| {
        r.get::<_, i64>(1)
    })
    .expect("checkpoint")
}

/// Pages written to the WAL per `write_file` of the 50-line document over stdio, beside the
/// floor: the same document inserted as one row of a bare table, one durable transaction
/// each, in the same WAL mode.
fn wal_rows(s: &mut Server, db: &Path, floor_db: &Path) {
    wal_frames(db, true);
    for i in 0..FRAMED_WRITES {
        s.call(
            "write_file",
            json!({ "agent_id": "frames", "path": "plan.md", "content": document(i) }),
        );
    }
    let frames = wal_frames(db, false) as f64 / FRAMED_WRITES as f64;
    let floor = rusqlite::Connection::open(floor_db).expect("floor store");
    floor
        .execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
             CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
        )
        .expect("floor schema");
    wal_frames(floor_db, true);
    for i in 0..FRAMED_WRITES {
        floor
            .execute("INSERT INTO docs (body) VALUES (?1)", [document(i)])
            .expect("floor insert");
    }
    let bare = wal_frames(floor_db, false) as f64 / FRAMED_WRITES as f64;
    row(
        "WAL pages per write_file (50 lines, one changed)",
        format!("{frames:.1}"),
        format!("a bare insert of the same document: {bare:.1}; goal <= 12"),
    );
}

/// What a sync costs on this run's disk, right after the last one and after a call's worth
/// of work: a write's WAL (9 frames of a 4 KiB page) then `fdatasync`, `rounds` rounds of 20
/// each way taken in turns. On a machine where the two differ much, a process that works
/// longer between its syncs waits longer for each, and the write ratios above swing from run
/// to run while the CPU ones hold (BENCHMARKS.md, 2026-12-07, fifth sitting).
fn sync_row(file: &Path, rounds: usize) {
    use std::os::unix::fs::FileExt;
    const FRAMES: usize = 9;
    const FRAME: usize = 4096 + 24;
    const WORK: Duration = Duration::from_micros(150);
    let wal = std::fs::File::create(file).expect("the sync probe's file");
    let frame: Vec<u8> = (0..FRAME).map(|i| (i % 251) as u8).collect();
    let mut at = 0;
    let mut sync_after = |work: Duration| {
        let worked = Instant::now();
        while worked.elapsed() < work {
            std::hint::spin_loop();
        }
        for _ in 0..FRAMES {
            wal.write_at(&frame, at).expect("the probe's write");
            at = (at + FRAME as u64) % (1 << 22);
        }
        let t = Instant::now();
        wal.sync_data().expect("the probe's sync");
        t.elapsed()
    };
    let (mut at_once, mut after_work) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        at_once.extend((0..20).map(|_| sync_after(Duration::ZERO)));
        after_work.extend((0..20).map(|_| sync_after(WORK)));
    }
    let (at_once, after_work) = (Run(at_once).quantile(0.5), Run(after_work).quantile(0.5));
    row(
        "fdatasync of a write's WAL (9 pages), after 150 µs of work / right after the last",
        format!("{:.2}x", after_work.as_secs_f64() / at_once.as_secs_f64()),
        format!(
            "p50 {} vs {}; this disk, this run: where it is far above 1x, work between syncs \
             is paid for again in waiting",
            ms(after_work),
            ms(at_once)
        ),
    );
    std::fs::remove_file(file).ok();
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_owned();
    let bin = std::env::var_os("SCRATCHPAD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/release/scratchpad-mcp"));
    assert!(
        bin.exists(),
        "build the server first: cargo build --release ({} is missing)",
        bin.display()
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let cache = tmp.path().join("cache");
    let n = if quick { 50 } else { 2000 };

    println!("| what | figure | reference |\n|---|---|---|");
    criterion_rows(&root);

    // Start-up: process start to the first tool result, and the memory resident then.
    let start = |db: &str, cache: &Path| {
        let t = Instant::now();
        let mut s = Server::start(&bin, &tmp.path().join(db), cache);
        s.call("get_usage_stats", json!({ "agent_id": "bench" }));
        let took = t.elapsed();
        let (resident, _) = s.memory_mib();
        s.stop();
        (took, resident)
    };
    let (cold, cold_rss): (Vec<Duration>, Vec<f64>) = (0..3)
        .map(|i| start("start.db", &tmp.path().join(format!("cold{i}"))))
        .unzip();
    start("start.db", &cache);
    let warm = Run((0..10).map(|_| start("start.db", &cache).0).collect());
    row(
        "start to first result, cold (compiles the component)",
        ms(cold.iter().min().copied().unwrap()),
        "best of 3".into(),
    );
    row(
        "start to first result, warm (cached component)",
        ms(warm.quantile(0.5)),
        "p50 of 10; goal < 50 ms".into(),
    );

    // Calls per second and latency, one call at a time.
    let mut s = Server::start(&bin, &tmp.path().join("calls.db"), &cache);
    let (idle_rss, _) = s.memory_mib();
    let idle_own = anonymous_mib(s.child.id());

    // What every session pays up front: the tools/list answer, as compact JSON.
    let listing = s.request("tools/list", json!({})).to_string();
    let tools = listing.matches("\"inputSchema\"").count();
    row(
        "tools/list answer",
        format!("{} bytes", listing.len()),
        format!(
            "{tools} tools; about {} tokens at 4 bytes a token; goal < 2,000 tokens",
            listing.len() / 4
        ),
    );
    // The servers compared in a ratio, alive together so that they take turns: the floor,
    // the peer, and when a PostgreSQL server is given (as for the tests), this server and
    // the floor on a database of this run's own, as SQLite's store is, so that what
    // PostgreSQL itself costs beside SQLite shows apart from what the server adds.
    let floor_bin = std::env::current_exe()
        .expect("this binary")
        .with_file_name("floor");
    let lane = |who, server, agent: &str| Lane {
        who,
        server,
        agent: agent.to_owned(),
    };
    let mut lanes = vec![lane(Who::Server, s, "bench")];
    let floor_db = tmp.path().join("stdio-floor.db");
    let on_sqlite = ["--db".as_ref(), floor_db.as_os_str()];
    lanes.extend(floor(&floor_bin, &on_sqlite).map(|f| lane(Who::Floor, f, "bench")));
    lanes.extend(peer(tmp.path()).map(|p| lane(Who::Peer, p, "")));
    let before = std::env::var_os("SCRATCHPAD_BIN_BEFORE").map(PathBuf::from);
    let cache_before = tmp.path().join("cache-before");
    if let Some(before) = &before {
        // Its component compiled and cached by a start of its own first, so the build
        // before serves from its cache as this one does: a process that compiled kept
        // glibc's thresholds raised by what compiling freed, and wrote 10 % cheaper (see
        // BENCHMARKS.md, "A write's heap kept").
        Server::start(before, &tmp.path().join("start-before.db"), &cache_before).stop();
        let server = Server::start(before, &tmp.path().join("before.db"), &cache_before);
        lanes.push(lane(Who::Before, server, "bench"));
    }
    let admin = std::env::var("SCRATCHPAD_TEST_POSTGRES").ok();
    let database = admin.as_deref().map(|admin| Database::fresh(admin, ""));
    // The build before gets a database of its own: it refuses one a newer build migrated.
    let database_before = admin
        .as_deref()
        .filter(|_| before.is_some())
        .map(|admin| Database::fresh(admin, "_before"));
    if let Some(database) = &database {
        let on_postgres = ["--database".as_ref(), database.url.as_ref()];
        let agent = format!("bench-{}", std::process::id());
        let pg = Server::start_on(&bin, &on_postgres, &cache);
        lanes.push(lane(Who::Postgres, pg, &agent));
        if let (Some(before), Some(own)) = (&before, &database_before) {
            let on_own = ["--database".as_ref(), own.url.as_ref()];
            let server = Server::start_on(before, &on_own, &cache_before);
            lanes.push(lane(
                Who::PostgresBefore,
                server,
                &format!("{agent}-before"),
            ));
        }
        if !database.plain {
            row(
                "against the stdio floor on PostgreSQL",
                "left out".into(),
                "the floor connects without TLS, and this server asks for it".into(),
            );
        } else if let Some(f) = floor(&floor_bin, &on_postgres) {
            lanes.push(lane(Who::PostgresFloor, f, "bench"));
        }
    }
    let runs = side_by_side(&mut lanes, n);
    let mut lanes = lanes.into_iter();
    let mut s = lanes.next().expect("the server's lane").server;
    let (server_writes, server_reads) = runs.both(Who::Server).expect("the server's runs");
    call_rows(&mut s, (server_writes, server_reads), n, "bench", "");
    drift_row(
        "write_file, one file again and again: last tenth / first",
        server_writes,
    );
    floor_rows(&runs, (Who::Server, Who::Floor), "", "goal ≤ 1.3x");
    before_rows(&runs, (Who::Server, Who::Before), "");
    if let Some(peer) = runs.reads(Who::Peer) {
        let what = "read_file since a version / mcp-memory-rs 0.3.1 memory_read (whole document)";
        ratio_row(what, server_reads, peer, "goal ≤ 1.0x");
        if let (Some((_, ours)), Some(theirs)) =
            (runs.cpu(Who::Server), find(&runs.read_cpu, Who::Peer))
        {
            cpu_row(
                &format!("CPU a {what}"),
                ours,
                *theirs,
                server_reads.0.len(),
            );
        }
    }
    let mut others: Vec<Lane> = lanes.collect();
    let pg = others.iter_mut().find(|l| l.who == Who::Postgres);
    if let (Some(pg), Some(database)) = (pg, &database) {
        postgres_rows(pg, &runs, n, database.note());
    }
    for other in others {
        other.server.stop();
    }
    drop(database);
    wal_rows(
        &mut s,
        &tmp.path().join("calls.db"),
        &tmp.path().join("floor.db"),
    );
    sync_row(&tmp.path().join("sync-probe"), if quick { 2 } else { 20 });
    row(
        "resident memory, idle",
        format!("{idle_rss:.1} MiB"),
        format!(
            "goal ≤ 20 MiB; {idle_own:.1} MiB of it the process's own, the rest pages of its \
             binary and the compiled component, as many as the page cache maps at once"
        ),
    );
    row(
        "resident memory after a cold start (compiled the component)",
        format!(
            "{:.1} MiB",
            cold_rss.iter().copied().fold(f64::MAX, f64::min)
        ),
        format!("least of 3; idle with the component cached: {idle_rss:.1} MiB"),
    );
    let big = 1024 * 1024 - 64;
    for i in 0..(if quick { 3 } else { 20 }) {
        s.call("write_file", json!({ "agent_id": "big", "path": format!("mb/{i}"), "content": format!("{i:>64}").repeat(big / 64) }));
    }
    let (_, peak) = s.memory_mib();
    row(
        "peak resident memory under 1 MiB writes",
        format!("{peak:.1} MiB"),
        "VmHWM".into(),
    );

    // Scaling with what an agent holds.
    let holdings = if quick { 3 } else { 90 };
    for i in 0..holdings {
        s.call("write_file", json!({ "agent_id": "heavy", "path": format!("mb/{i}"), "content": format!("{i:>64}").repeat(big / 64) }));
    }
    s.call(
        "write_file",
        json!({ "agent_id": "light", "path": "mb/0", "content": "x".repeat(big) }),
    );
    let light = Run::time(n / 4, |i| {
        s.call(
            "write_file",
            json!({ "agent_id": "light", "path": "plan.md", "content": document(i) }),
        );
    });
    let heavy = Run::time(n / 4, |i| {
        s.call(
            "write_file",
            json!({ "agent_id": "heavy", "path": "plan.md", "content": document(i) }),
        );
    });
    row(
        &format!("write_file, agent holding {holdings} MiB"),
        ms(heavy.quantile(0.5)),
        format!(
            "1 MiB: {} (ratio {:.2}; goal within 1.2x)",
            ms(light.quantile(0.5)),
            heavy.quantile(0.5).as_secs_f64() / light.quantile(0.5).as_secs_f64()
        ),
    );

    let old: String = (0..100_000).map(|i| format!("{i:09}\n")).collect();
    let similar = old.replace("050000\n", "fifty-k\n");
    let different: String = (0..100_000)
        .map(|i| format!("{:09}\n", i * 7 + 3))
        .collect();
    for (name, new) in [("similar", &similar), ("completely different", &different)] {
        let path = format!("diff/{}", name.replace(' ', "-"));
        s.call(
            "write_file",
            json!({ "agent_id": "bench", "path": path, "content": old }),
        );
        let v = s.call(
            "write_file",
            json!({ "agent_id": "bench", "path": path, "content": new }),
        )["version"]
            .as_u64()
            .unwrap();
        let run = Run::time(3, |_| {
            s.call(
                "read_file",
                json!({ "agent_id": "bench", "path": path, "since_version": v - 1 }),
            );
        });
        row(
            &format!("read_file diff of two 1 MiB files, {name}"),
            ms(run.quantile(0.5)),
            "CPU limit per call 5 s".into(),
        );
    }

    for i in 0..(if quick { 100 } else { 1000 }) {
        s.call(
            "write_file",
            json!({ "agent_id": "many", "path": format!("files/{i:04}"), "content": "x" }),
        );
    }
    let lists = Run::time(20, |_| {
        s.call("list_files", json!({ "agent_id": "many" }));
    });
    row(
        &format!("list_files of {} files", if quick { 100 } else { 1000 }),
        ms(lists.quantile(0.5)),
        "p50 of 20".into(),
    );

    let entries = if quick { 1_000 } else { 100_000 };
    for i in n..entries {
        s.call(
            "append_log",
            json!({ "agent_id": "bench", "path": "log", "entry": i }),
        );
    }
    let tail = Run::time(50, |_| {
        s.call(
            "read_log",
            json!({ "agent_id": "bench", "path": "log", "since_entry": entries - 100 }),
        );
    });
    let head = Run::time(50, |_| {
        s.call(
            "read_log",
            json!({ "agent_id": "bench", "path": "log", "since_entry": 0 }),
        );
    });
    row(
        &format!("read_log at entry {entries}"),
        ms(tail.quantile(0.5)),
        format!("at entry 0: {}", ms(head.quantile(0.5))),
    );
    s.stop();
}
