//! The `scratchpad-mcp` command: serves MCP over stdio.
//!
//! stdout carries MCP messages only; every log line, and a fatal error, goes to stderr.

use anyhow::Context;
use clap::{Parser, Subcommand};
use scratchpad_mcp::mcp::McpServer;
use scratchpad_mcp::{Service, Settings};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Persistent, token-efficient storage for AI agents, served over MCP (stdio).
///
/// Versioned files answered with line diffs, append-only logs read by cursor, and cached
/// summaries of long files, each agent in its own namespace.
///
/// Environment: ANTHROPIC_API_KEY (only for summarize_file), ANTHROPIC_BASE_URL,
/// SCRATCHPAD_SUMMARY_MODEL (default: claude-haiku-5-5).
#[derive(Debug, Parser)]
#[command(name = "scratchpad-mcp", version, about, long_about)]
struct Cli {
    /// The SQLite file [default: the per-user data folder, e.g. ~/.local/share/scratchpad-mcp/scratchpad.db]
    #[arg(
        long,
        value_name = "PATH",
        env = "SCRATCHPAD_DB_PATH",
        hide_env_values = true
    )]
    db: Option<PathBuf>,

    /// Where the compiled tool logic is cached [default: the per-user cache folder]
    #[arg(
        long,
        value_name = "DIR",
        env = "SCRATCHPAD_CACHE_DIR",
        hide_env_values = true
    )]
    cache_dir: Option<PathBuf>,

    /// What to log on stderr: error, warn, info, debug or trace for this server (its
    /// libraries stay at warn), or a full tracing filter such as "info,wasmtime=debug"
    #[arg(
        long,
        value_name = "LEVEL",
        env = "SCRATCHPAD_LOG",
        default_value = "warn"
    )]
    log: String,

    #[command(subcommand)]
    command: Option<Command>,
}

/// What to do instead of serving MCP on stdio (the default).
#[derive(Debug, Subcommand)]
enum Command {
    /// Write the tool-logic component (wasm32-wasip2) this binary runs, for embedding it in
    /// another runtime; its interface is documented in wit/README.md
    Component {
        /// Where to write it
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
}

/// A plain level applies to this server and its MCP library only: trace logs from Cranelift
/// compiling the component would run to gigabytes. A full filter is taken as written.
fn log_filter(log: &str) -> anyhow::Result<tracing_subscriber::EnvFilter> {
    let directives = if log.contains(['=', ',']) {
        log.to_owned()
    } else {
        format!("warn,scratchpad_mcp={log},rmcp={log}")
    };
    tracing_subscriber::EnvFilter::try_new(&directives)
        .with_context(|| format!("--log {log:?} is not a log level or filter"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::Error::new(e).context("cannot start the async runtime")),
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}

/// Reports a fatal error as one line of causes: never a backtrace, even with
/// `RUST_BACKTRACE` set, since stderr is shown to users by their MCP client.
fn fail(e: &anyhow::Error) -> ExitCode {
    eprintln!("scratchpad-mcp: {e:#}");
    ExitCode::FAILURE
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(Command::Component { out }) = &cli.command {
        return std::fs::write(out, scratchpad_mcp::sandbox::GUEST_COMPONENT)
            .with_context(|| format!("cannot write the component to {}", out.display()));
    }
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_env_filter(log_filter(&cli.log)?)
        .init();

    let settings = Settings::resolve(cli.db, cli.cache_dir)?;
    let service = tokio::task::spawn_blocking(move || {
        Service::open(&settings)
            .with_context(|| format!("cannot start with the store at {}", settings.db.display()))
    })
    .await??;
    McpServer::new(Arc::new(service)).serve_stdio().await
}
