//! The stdio floor: what an MCP server over stdio costs when its tools do nothing but the
//! bare statements, so that `e2e` can print the server's per-call figures beside it.
//!
//! The same rmcp server skeleton and stdio transport as the real server (so a successful
//! answer is its JSON text, which the transport also writes as the structured content), with
//! two tools named like the real ones:
//! `write_file` is one insert in a transaction of its own (as durable as the server's
//! writes), `read_file` one select of the newest content. No sandbox, no rules, no counters,
//! no diff.
//!
//! On SQLite (`floor --db FILE`) the statements, prepared once and kept, run where the
//! server's do over stdio: the write on the blocking pool, the read in place on the async
//! worker that read the request; at `synchronous = FULL`: one sync a write. On PostgreSQL
//! (`floor --database URL`, no TLS) each is one prepared statement in one round trip on one
//! connection, at the server's default durability (a commit returns once its WAL is
//! flushed). The server's write needs two round trips (it reads the file before it decides
//! what to store), so the PostgreSQL floor is the least a write there can cost, not what
//! this design can reach. The floor's table is its own, made at start and dropped when the
//! floor ends. `e2e` starts it.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use rusqlite::{Connection, params};
use scratchpad_mcp::bindings::NO_OVERRIDES;
use scratchpad_mcp::message::MaxMessage;
use scratchpad_mcp::stdio::{self, Stdio};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use tokio_postgres::{Client, NoTls, Statement};

/// The floor server: one connection, the statements, nothing else.
enum Floor {
    /// The only connection; the blocking pool's calls take turns on it.
    Sqlite(Arc<Mutex<Connection>>),
    /// The only connection, and its two statements, prepared at start.
    Postgres {
        client: Arc<Client>,
        write: Statement,
        read: Statement,
    },
}

/// The two tools, with the arguments the real ones take for the same calls.
fn tools() -> Vec<Tool> {
    let tool = |name: &str| {
        serde_json::from_value(json!({
            "name": name,
            "inputSchema": { "type": "object", "additionalProperties": true },
        }))
        .expect("a tool")
    };
    vec![tool("write_file"), tool("read_file")]
}

/// The string argument `key` of a call, or "".
fn text<'a>(args: &'a Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The floor's write on SQLite: the next version of a document, in one statement.
const WRITE: &str = "INSERT INTO docs (agent, path, version, content)
     SELECT ?1, ?2, coalesce(max(version), 0) + 1, ?3 FROM docs
     WHERE agent = ?1 AND path = ?2
     RETURNING version";

/// The floor's read on SQLite: a document's newest version.
const READ: &str = "SELECT version, content FROM docs WHERE agent = ?1 AND path = ?2
     ORDER BY version DESC LIMIT 1";

/// Runs one tool's statement on SQLite, prepared once and kept (as the server keeps its
/// own): a floor that parsed its SQL again at every call would flatter the server.
fn run(db: &Connection, tool: &str, args: &Map<String, Value>) -> rusqlite::Result<Value> {
    let (agent, path) = (text(args, "agent_id"), text(args, "path"));
    match tool {
        "write_file" => {
            let version: i64 = db
                .prepare_cached(WRITE)?
                .query_row(params![agent, path, text(args, "content")], |r| r.get(0))?;
            Ok(json!({ "path": path, "version": version }))
        }
        _ => {
            let (version, content): (i64, String) = db
                .prepare_cached(READ)?
                .query_row(params![agent, path], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(json!({ "path": path, "current_version": version, "content": content }))
        }
    }
}

/// Runs one tool's statement on PostgreSQL, in one round trip.
async fn run_postgres(
    client: &Client,
    (write, read): (&Statement, &Statement),
    tool: &str,
    args: &Map<String, Value>,
) -> Result<Value, tokio_postgres::Error> {
    let (agent, path) = (text(args, "agent_id"), text(args, "path"));
    if tool == "write_file" {
        let row = client
            .query_one(write, &[&agent, &path, &text(args, "content")])
            .await?;
        return Ok(json!({ "path": path, "version": row.get::<_, i64>(0) }));
    }
    let row = client.query_one(read, &[&agent, &path]).await?;
    Ok(json!({
        "path": path,
        "current_version": row.get::<_, i64>(0),
        "content": row.get::<_, String>(1),
    }))
}

impl ServerHandler for Floor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("floor", "0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let answer = match self {
            Self::Sqlite(db) => {
                let db = Arc::clone(db);
                let work = move || {
                    let db = db.lock().unwrap_or_else(|p| p.into_inner());
                    run(&db, &name, &args).map_err(|e| e.to_string())
                };
                if request.name == "read_file" {
                    work()
                } else {
                    tokio::task::spawn_blocking(work)
                        .await
                        .map_err(|_| McpError::internal_error("the call was abandoned", None))?
                }
            }
            Self::Postgres {
                client,
                write,
                read,
            } => run_postgres(client, (write, read), &name, &args)
                .await
                .map_err(|e| e.to_string()),
        };
        Ok(match answer {
            // As the server answers over stdio: the text, which the transport writes as the
            // structured content too.
            Ok(value) => stdio::answered(value.to_string()).into(),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into(),
        })
    }
}

/// The floor's own table on PostgreSQL: named for this process, so that runs never meet.
fn postgres_table() -> String {
    format!("scratchpad_bench_floor_{}", std::process::id())
}

/// The floor on the database at `url`: its table made, its statements prepared.
async fn postgres(url: &str) -> Result<Floor, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(connection);
    let table = postgres_table();
    client
        .batch_execute(&format!(
            "CREATE TABLE {table} (agent text, path text, version bigint, content text,
                                   PRIMARY KEY (agent, path, version))"
        ))
        .await?;
    let write = client
        .prepare(&format!(
            "INSERT INTO {table} (agent, path, version, content)
             SELECT $1, $2, coalesce(max(version), 0) + 1, $3 FROM {table}
             WHERE agent = $1 AND path = $2
             RETURNING version"
        ))
        .await?;
    let read = client
        .prepare(&format!(
            "SELECT version, content FROM {table} WHERE agent = $1 AND path = $2
             ORDER BY version DESC LIMIT 1"
        ))
        .await?;
    Ok(Floor::Postgres {
        client: Arc::new(client),
        write,
        read,
    })
}

/// The floor on the SQLite file at `path`, its connection set up as the server's are
/// ([`scratchpad_store::keep_statements`]): without the query planner stability guarantee,
/// SQLite plans the select again at every read, since its bound values might change the plan
/// (STAT4), and the floor would be slower than its bare statements by a parse and a plan.
fn sqlite(path: &str) -> Result<Floor, Box<dyn std::error::Error>> {
    let conn = Connection::open(path)?;
    scratchpad_store::keep_statements(&conn)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS docs (agent TEXT, path TEXT, version INTEGER, content TEXT,
                                          PRIMARY KEY (agent, path, version));",
    )?;
    Ok(Floor::Sqlite(Arc::new(Mutex::new(conn))))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).cloned()
    };
    let floor = match (value("--db"), value("--database")) {
        (Some(file), None) => sqlite(&file)?,
        (None, Some(url)) => postgres(&url).await?,
        _ => return Err("usage: floor --db FILE | floor --database URL".into()),
    };
    let postgres = match &floor {
        Floor::Postgres { client, .. } => Some(Arc::clone(client)),
        Floor::Sqlite(_) => None,
    };
    let (read, write) = rmcp::transport::stdio_pipes();
    let max = MaxMessage::of(&NO_OVERRIDES);
    let ended = floor
        .serve(Stdio::new(read, write, max))
        .await?
        .waiting()
        .await;
    if let Some(client) = postgres {
        let table = postgres_table();
        client.batch_execute(&format!("DROP TABLE {table}")).await?;
    }
    ended?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::StatementStatus;

    /// The floor's statements are parsed and planned once, however the values bound to them
    /// change from call to call (without [`scratchpad_store::keep_statements`], every read and
    /// write is planned again).
    #[test]
    fn a_statement_run_again_is_not_planned_again() {
        let dir = tempfile::tempdir().unwrap();
        let Floor::Sqlite(db) = sqlite(dir.path().join("floor.db").to_str().unwrap()).unwrap()
        else {
            unreachable!("a SQLite floor")
        };
        let db = db.lock().unwrap();
        let args = |agent: &str, path: &str| {
            json!({ "agent_id": agent, "path": path, "content": format!("{agent} {path}") })
                .as_object()
                .cloned()
                .unwrap()
        };
        for (agent, path) in [("a", "x.md"), ("b", "y.md"), ("a", "y.md"), ("c", "z.md")] {
            run(&db, "write_file", &args(agent, path)).unwrap();
            let read = run(&db, "read_file", &args(agent, path)).unwrap();
            assert_eq!(read["content"], format!("{agent} {path}"));
        }
        for sql in [WRITE, READ] {
            let statement = db.prepare_cached(sql).unwrap();
            assert_eq!(statement.get_status(StatementStatus::Run), 4, "{sql}");
            assert_eq!(statement.get_status(StatementStatus::RePrepare), 0, "{sql}");
        }
    }
}
