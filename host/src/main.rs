//! The `scratchpad-mcp` command: serves MCP over stdio, and the operator's subcommands.
//!
//! stdout carries MCP messages only when serving; every log line, progress and a fatal error
//! go to stderr.

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};
use scratchpad_guest::words;
use scratchpad_mcp::bindings::LimitOverrides;
use scratchpad_mcp::mcp::McpServer;
use scratchpad_mcp::settings::{Flags, Resolved};
use scratchpad_mcp::storage::{admin, pg_admin};
use scratchpad_mcp::{Service, Settings};
use scratchpad_mcp::{keys, ops};
use std::io::{self, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Persistent, token-efficient storage for AI agents, served over MCP (stdio).
///
/// Versioned files answered with line diffs, append-only logs read by cursor, and cached
/// summaries of long files, each agent in its own namespace.
///
/// Settings come from flags, then environment variables, then the config file
/// (--config, $SCRATCHPAD_CONFIG, or ~/.config/scratchpad-mcp/config.toml), then defaults;
/// --print-config shows them. The API key is read from ANTHROPIC_API_KEY only.
///
/// Exit status: 0 on success, 2 on an error (one line on stderr); `verify` exits 1 when it
/// finds problems.
#[derive(Debug, Parser)]
#[command(name = "scratchpad-mcp", version, about, long_about)]
struct Cli {
    /// The config file [default: ~/.config/scratchpad-mcp/config.toml, if it exists; env: SCRATCHPAD_CONFIG]
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,

    /// The SQLite file [default: the per-user data folder, e.g. ~/.local/share/scratchpad-mcp/scratchpad.db; env: SCRATCHPAD_DB_PATH]
    #[arg(long, value_name = "PATH", global = true)]
    db: Option<PathBuf>,

    /// A PostgreSQL database (postgres://user:password@host/name) instead of the SQLite
    /// file, so that several instances can serve as one [env: SCRATCHPAD_DATABASE_URL]
    #[arg(long, value_name = "URL", global = true)]
    database: Option<String>,

    /// Where the compiled tool logic is cached [default: the per-user cache folder; env: SCRATCHPAD_CACHE_DIR]
    #[arg(long, value_name = "DIR", global = true)]
    cache_dir: Option<PathBuf>,

    /// What to log on stderr: error, warn, info, debug or trace for this server (its
    /// libraries stay at warn), or a full tracing filter such as "info,wasmtime=debug"
    #[arg(
        long,
        value_name = "LEVEL",
        env = "SCRATCHPAD_LOG",
        default_value = "warn",
        global = true
    )]
    log: String,

    /// How log lines look: text, or json (one object a line, for log collectors)
    #[arg(long, value_name = "FORMAT", default_value = "text", global = true)]
    log_format: LogFormat,

    /// Print the settings in force (as a config file, each value with where it came from)
    /// and exit
    #[arg(long)]
    print_config: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

/// The shape of log lines on stderr.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line.
    Json,
}

/// What to do instead of serving MCP on stdio (the default).
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP: on stdio (the default), or with --http as Streamable HTTP for many callers,
    /// each with an API key (see `keys`)
    Serve {
        /// Listen for HTTP on this address [default: the config's http.listen, else 127.0.0.1:8765]
        #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "")]
        http: Option<String>,
    },
    /// Manage the API keys of HTTP mode (kept hashed in the config file)
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Write a WebAssembly component (wasm32-wasip2) for embedding the tools in another
    /// runtime; its interface is documented in wit/README.md
    ///
    /// With --standalone: the tools and their SQLite store in one component, which needs
    /// only WASI and one preopened folder (the store is scratchpad.db there):
    ///   scratchpad-mcp component --standalone --out pad.wasm
    ///   wasmtime-py  WasiConfig().preopen_dir("data", "/store"); Linker.add_wasip2()
    ///   Node (jco)   jco transpile pad.wasm --instantiation sync; _setPreopens({"/store": "data"})
    ///   wasmtime     WasiCtx::builder().preopened_dir("data", "/store", FsPerms::ReadWrite)
    ///   wasmtime run --env SCRATCHPAD_LEASE_TOKEN=1 --dir data::/store \
    ///                --invoke 'call("list_files", "{\"agent_id\": \"me\"}")' pad-wasi.wasm
    /// then call the scratchpad:mcp/json export (MCP tool names and JSON arguments) or the
    /// typed scratchpad:mcp/tools one. In Python and Node, the scratchpad-tools packages
    /// (pip, npm) carry it already. Without --standalone: the tool logic this binary runs,
    /// which imports its storage from the embedder.
    #[command(verbatim_doc_comment)]
    Component {
        /// Where to write it
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The tools with SQLite compiled in: persistent in any WASI 0.2 runtime, no storage
        /// code to write
        #[arg(long)]
        standalone: bool,
        /// With --standalone: import nothing but WASI (summarize_file then answers
        /// not-configured), for hosts that supply only WASI, such as `wasmtime run`
        #[arg(long, requires = "standalone")]
        without_summariser: bool,
    },
    /// Copy the store, consistently, while servers keep serving, into a new or empty folder
    /// with a manifest; the copy is verified before this reports success
    Snapshot {
        /// The folder to create
        dir: PathBuf,
    },
    /// Replace the store with a snapshot: verified first, refused while any process has the
    /// store open, the old store kept aside. Safe to run again after an interruption
    Restore {
        /// The snapshot folder
        dir: PathBuf,
    },
    /// Check the store without changing it: SQLite's integrity check, and the invariants of
    /// versions, sizes, summaries and usage counters. Exit status 0: sound; 1: problems
    /// found; 2: the store could not be checked
    Verify {
        /// Print the result as JSON
        #[arg(long)]
        json: bool,
    },
    /// Write one agent's files (every kept version), summaries and logs as JSON Lines
    Export {
        /// The agent to export
        #[arg(long, value_name = "ID")]
        agent: String,
        /// Write here instead of stdout
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Read an export into the store in one transaction. Refuses an agent that already has
    /// data unless --replace is given
    Import {
        /// The export file ("-" for stdin)
        file: PathBuf,
        /// Import under this agent id instead of the exported one
        #[arg(long = "as", value_name = "ID")]
        as_agent: Option<String>,
        /// Replace the agent's existing data
        #[arg(long)]
        replace: bool,
    },
    /// Per-agent usage: files, log entries, bytes and operations
    Stats {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
    },
    /// Print a completion script for a shell, e.g. `scratchpad-mcp completions bash >
    /// /usr/share/bash-completion/completions/scratchpad-mcp`
    Completions {
        /// The shell
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `scratchpad-mcp man > scratchpad-mcp.1`
    Man,
}

/// What `keys` does.
#[derive(Debug, Subcommand)]
enum KeysAction {
    /// Make a key: printed once, only its SHA-256 is kept
    Add {
        /// A name to list and revoke it by
        name: String,
        /// An agent id it may act for (repeat for more)
        #[arg(long = "agent", value_name = "ID", required = true)]
        agents: Vec<String>,
        /// It may only call tools that change nothing
        #[arg(long)]
        read_only: bool,
        /// It may ask for summaries (which spend the model budget) even though read-only
        #[arg(long, conflicts_with = "no_summaries")]
        summaries: bool,
        /// It may not ask for summaries, though it may write
        #[arg(long)]
        no_summaries: bool,
    },
    /// List the keys: name, scope, whether it may ask for summaries, agents
    List,
    /// Remove a key; running servers refuse it once sent SIGHUP (or restarted)
    Revoke {
        /// Its name
        name: String,
    },
}

/// A plain level applies to this server and its MCP library only: trace logs from Cranelift
/// compiling the component would run to gigabytes. A full filter is taken as written.
fn log_filter(log: &str) -> anyhow::Result<tracing_subscriber::EnvFilter> {
    let directives = if is_plain_level(log) {
        format!("warn,scratchpad_mcp={log},rmcp={log}")
    } else {
        log.to_owned()
    };
    tracing_subscriber::EnvFilter::try_new(&directives)
        .with_context(|| format!("--log {log:?} is not a log level or filter"))
}

/// Whether `log` is a plain level (`info`), not a full filter (`rmcp=debug,hyper=info`).
fn is_plain_level(log: &str) -> bool {
    !log.contains(['=', ','])
}

/// Whether a log line is kept at level `log`, past [`log_filter`]. rmcp logs every error it
/// answers a request with as a warning, in its Rust form (`error=ErrorData { code:
/// ErrorCode(-32601), message: "prompts/list", data: None }`): a client's mistake, a method
/// this server does not serve or a request it cannot read, is for the client to read in the
/// answer, not for the operator in the server's log. Below a plain `debug` that line is left
/// out; a full filter is taken as written.
fn keeps(log: &str) -> impl Fn(&tracing::Metadata<'_>) -> bool + Send + Sync + 'static {
    let quiet = is_plain_level(log)
        && !["debug", "trace"]
            .iter()
            .any(|l| log.eq_ignore_ascii_case(l));
    move |line| !(quiet && is_rmcp_answered_error(line))
}

/// rmcp's line for an error answer: `tracing::warn!(%id, ?error, "response error")`.
fn is_rmcp_answered_error(line: &tracing::Metadata<'_>) -> bool {
    line.is_event()
        && line.target() == "rmcp::service"
        && *line.level() == tracing::Level::WARN
        && line.fields().field("id").is_some()
        && line.fields().field("error").is_some()
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            // One line of causes: never a backtrace, even with `RUST_BACKTRACE` set, since
            // stderr is shown to users by their MCP client.
            eprintln!("scratchpad-mcp: {e:#}");
            ExitCode::from(2)
        }
    }
}

// With --print-config, stdout is the command's output: no MCP session runs.
#[allow(clippy::print_stdout)]
fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let logs = tracing_subscriber::fmt()
        .with_writer(io::stderr)
        .with_ansi(false)
        .with_env_filter(log_filter(&cli.log)?);
    let kept = tracing_subscriber::filter::filter_fn(keeps(&cli.log));
    match cli.log_format {
        LogFormat::Text => logs.finish().with(kept).init(),
        LogFormat::Json => logs.json().flatten_event(true).finish().with(kept).init(),
    }
    scratchpad_mcp::heap::keep_working_pad();
    // What describes the command line needs no settings (and must work where none resolve).
    match &cli.command {
        Some(Command::Completions { shell }) => {
            clap_complete::generate(
                *shell,
                &mut Cli::command(),
                "scratchpad-mcp",
                &mut io::stdout(),
            );
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Man) => {
            clap_mangen::Man::new(Cli::command())
                .render(&mut io::stdout())
                .context("cannot write the man page")?;
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    // `keys add` is how a config file often starts: a named one that is missing is created.
    if let (
        Some(Command::Keys {
            action: KeysAction::Add { .. },
        }),
        Some(path),
    ) = (&cli.command, &cli.config)
        && !path.exists()
    {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            scratchpad_mcp::private::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        scratchpad_mcp::private::write(path, "")
            .with_context(|| format!("cannot create {}", path.display()))?;
    }
    let resolved = Settings::resolve(Flags {
        config: cli.config,
        db: cli.db,
        database: cli.database,
        cache_dir: cli.cache_dir,
    })?;
    if cli.print_config {
        print!("{}", resolved.to_toml());
        return Ok(ExitCode::SUCCESS);
    }
    match cli.command {
        None => serve(resolved),
        Some(command) => operate(command, resolved),
    }
}

fn serve_http(resolved: Resolved, addr: &str) -> anyhow::Result<ExitCode> {
    let flag =
        if addr.is_empty() {
            None
        } else {
            Some(addr.parse().with_context(|| {
                format!("--http {addr:?} is not an address like 127.0.0.1:8765")
            })?)
        };
    let settings = resolved.settings;
    let addr = scratchpad_mcp::http::address(flag, &settings.http);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let http = settings.http.clone();
        let service =
            tokio::task::spawn_blocking(move || Service::open(&settings).context("cannot start"))
                .await??;
        let ring = Arc::new(keys::KeyRing::new(keys::Keys::new(&http.keys)));
        let router = scratchpad_mcp::http::router(Arc::new(service), &http, Arc::clone(&ring))?;
        if let Some(file) = resolved.config_file {
            tokio::spawn(scratchpad_mcp::http::reload_keys_on_hangup(ring, file));
        }
        eprintln!("scratchpad-mcp: serving MCP at http://{addr}/mcp");
        let connections = scratchpad_mcp::http::Connections::of(&http);
        scratchpad_mcp::http::serve(router, addr, connections).await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

fn serve(resolved: Resolved) -> anyhow::Result<ExitCode> {
    let settings = resolved.settings;
    let store = settings.store_name();
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let service =
            tokio::task::spawn_blocking(move || Service::open(&settings).context("cannot start"))
                .await??;
        // Someone who runs the command to try it would otherwise see it wait without a word:
        // say what it waits for. A client's pipe gets nothing, so its log stays as it was.
        if io::stdin().is_terminal() {
            eprintln!(
                "scratchpad-mcp: serving MCP on stdio (store: {store}); an MCP client starts \
                 this command and speaks JSON-RPC on its stdin (see README.md, \"Add it to \
                 your client\"). Ctrl-D ends it; --help lists the other commands."
            );
        }
        McpServer::new(Arc::new(service)).serve_stdio().await
    })?;
    Ok(ExitCode::SUCCESS)
}

// The subcommands print their results on stdout: no MCP session runs alongside them.
#[allow(clippy::print_stdout)]
fn operate(command: Command, resolved: Resolved) -> anyhow::Result<ExitCode> {
    let db = &resolved.settings.db;
    match command {
        Command::Serve { http: None } => return serve(resolved),
        Command::Serve { http: Some(addr) } => return serve_http(resolved, &addr),
        Command::Keys { action } => keys_command(action, &resolved)?,
        Command::Snapshot { .. }
        | Command::Restore { .. }
        | Command::Export { .. }
        | Command::Import { .. }
            if resolved.settings.database.is_some() =>
        {
            anyhow::bail!(
                "snapshot, restore, export and import work on the SQLite file; the store is the PostgreSQL database {}: back it up with pg_dump and restore it with pg_restore",
                resolved.settings.store_name()
            );
        }
        Command::Component {
            out,
            standalone,
            without_summariser,
        } => component(&out, standalone, without_summariser)?,
        Command::Snapshot { dir } => snapshot(db, &dir)?,
        Command::Restore { dir } => restore(db, &dir)?,
        Command::Verify { json } => return verify(json, &resolved),
        Command::Export { agent, out } => export(db, &agent, out)?,
        Command::Import {
            file,
            as_agent,
            replace,
        } => import(
            db,
            &file,
            as_agent.as_deref(),
            replace,
            &resolved.settings.limits,
        )?,
        Command::Stats { json } => stats(json, &resolved)?,
        Command::Completions { .. } | Command::Man => unreachable!("answered before settings"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `keys add`, `keys list`, `keys revoke`: the config file's keys.
#[allow(clippy::print_stdout)]
fn keys_command(action: KeysAction, resolved: &Resolved) -> anyhow::Result<()> {
    let file = resolved
        .keys_file
        .as_deref()
        .context("no per-user config folder is known on this system; pass --config FILE")?;
    match action {
        KeysAction::Add {
            name,
            agents,
            read_only,
            summaries,
            no_summaries,
        } => {
            let scope = if read_only {
                keys::Scope::ReadOnly
            } else {
                keys::Scope::ReadWrite
            };
            // Said only when it differs from what the scope gives.
            let summaries = match (summaries, no_summaries) {
                (true, _) if !scope.summaries_by_default() => Some(true),
                (_, true) if scope.summaries_by_default() => Some(false),
                _ => None,
            };
            let key = keys::add(file, &name, &agents, scope, summaries)?;
            println!("{key}");
            eprintln!(
                "key {name:?} added to {} (only its hash is kept: this is the one time it is shown)",
                file.display()
            );
        }
        KeysAction::List => {
            for k in &resolved.settings.http.keys {
                let summaries = if k.may_summarise() {
                    "summaries"
                } else {
                    "no-summaries"
                };
                println!(
                    "{}\t{}\t{summaries}\t{}",
                    k.name,
                    k.scope.as_str(),
                    k.agents.join(",")
                );
            }
        }
        KeysAction::Revoke { name } => {
            keys::revoke(file, &name)?;
            eprintln!(
                "key {name:?} revoked in {}; servers refuse it once sent SIGHUP (or restarted)",
                file.display()
            );
        }
    }
    Ok(())
}

/// `component`: writes the tool logic, or the self-contained component, to `out`.
fn component(out: &Path, standalone: bool, without_summariser: bool) -> anyhow::Result<()> {
    let bytes = if standalone {
        scratchpad_mcp::standalone::component(without_summariser)?
    } else {
        scratchpad_mcp::sandbox::GUEST_COMPONENT
    };
    std::fs::write(out, bytes)
        .with_context(|| format!("cannot write the component to {}", out.display()))?;
    Ok(())
}

/// `snapshot DIR`.
fn snapshot(db: &Path, dir: &Path) -> anyhow::Result<()> {
    let m = ops::snapshot(db, dir)?;
    eprintln!(
        "snapshot of {} written to {}: {}; the snapshot is {} (SHA-256 {})",
        db.display(),
        dir.display(),
        m.counts,
        words::bytes(m.bytes),
        m.sha256
    );
    Ok(())
}

/// `restore DIR`.
fn restore(db: &Path, dir: &Path) -> anyhow::Result<()> {
    let r = ops::restore(db, dir)?;
    match &r.replaced {
        Some(old) => eprintln!(
            "restored {} from the snapshot of {}; the store it replaced is kept at {}",
            db.display(),
            r.manifest.created_at,
            old.display()
        ),
        None => eprintln!(
            "restored {} from the snapshot of {}",
            db.display(),
            r.manifest.created_at
        ),
    }
    Ok(())
}

/// `verify`: exit 1 when the store has a problem.
#[allow(clippy::print_stdout)]
fn verify(json: bool, resolved: &Resolved) -> anyhow::Result<ExitCode> {
    let db = &resolved.settings.db;
    let v = match &resolved.settings.database {
        Some(url) => pg_admin::verify(url)?,
        None => admin::verify(db)?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if v.ok() {
        println!("ok: {}", v.counts);
    } else {
        let store = resolved.settings.store_name();
        let count = v.problems.len();
        let plural = if count == 1 { "" } else { "s" };
        println!("{count} problem{plural} in {store}:");
        for problem in &v.problems {
            println!("  {problem}");
        }
    }
    Ok(if v.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `export AGENT [--out FILE]`: to the file (private, synced) or to stdout.
fn export(db: &Path, agent: &str, out: Option<PathBuf>) -> anyhow::Result<()> {
    let tally = match out {
        Some(path) => ops::export_file(db, agent, &path)?,
        None => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::new(stdout.lock());
            let tally = ops::export(db, agent, &mut out)?;
            out.flush()?;
            tally
        }
    };
    eprintln!("exported agent {agent:?}: {tally}");
    Ok(())
}

/// `import FILE|-`.
fn import(
    db: &Path,
    file: &Path,
    as_agent: Option<&str>,
    replace: bool,
    limits: &LimitOverrides,
) -> anyhow::Result<()> {
    let (agent, tally) = if file.as_os_str() == "-" {
        ops::import(db, &mut io::stdin().lock(), as_agent, replace, limits)?
    } else {
        let input =
            std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        ops::import(db, &mut BufReader::new(input), as_agent, replace, limits)?
    };
    eprintln!("imported agent {agent:?}: {tally}");
    Ok(())
}

/// `stats`: each agent's counters, as a table or JSON.
#[allow(clippy::print_stdout)]
fn stats(json: bool, resolved: &Resolved) -> anyhow::Result<()> {
    let db = &resolved.settings.db;
    let stats = match &resolved.settings.database {
        Some(url) => pg_admin::stats(url)?,
        None => admin::stats(db)?,
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
    } else {
        let width = stats
            .iter()
            .map(|s| s.agent_id.chars().count())
            .chain([5])
            .max()
            .unwrap_or(5);
        println!(
            "{:<width$}  {:>7}  {:>11}  {:>13}  {:>10}",
            "AGENT", "FILES", "LOG ENTRIES", "BYTES", "OPERATIONS"
        );
        for s in &stats {
            println!(
                "{:<width$}  {:>7}  {:>11}  {:>13}  {:>10}",
                s.agent_id, s.files, s.log_entries, s.total_bytes, s.total_operations
            );
        }
    }
    Ok(())
}
