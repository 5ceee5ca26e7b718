//! The stdio floor: what an MCP server over stdio costs when its tools do nothing but the
//! bare SQLite statements, so that `e2e` can print the server's per-call figures beside it.
//!
//! The same rmcp server skeleton as the real server (stdio, the blocking pool for SQLite),
//! with two tools named like the real ones: `write_file` is one insert in a transaction of
//! its own at `synchronous = FULL` (one sync a write, as durable as the server's writes),
//! `read_file` one select of the newest content. No sandbox, no rules, no counters, no diff.
//!
//! `floor --db FILE`; `e2e` starts it.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use rusqlite::{Connection, params};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};

/// The floor server: one connection, the statements, nothing else.
struct Floor {
    /// The only connection; the blocking pool's calls take turns on it.
    db: Arc<Mutex<Connection>>,
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

/// Runs one tool's statement.
fn run(db: &Connection, tool: &str, args: &Map<String, Value>) -> rusqlite::Result<Value> {
    let text = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
    let (agent, path) = (text("agent_id"), text("path"));
    match tool {
        "write_file" => {
            let version: i64 = db.query_row(
                "INSERT INTO docs (agent, path, version, content)
                 SELECT ?1, ?2, coalesce(max(version), 0) + 1, ?3 FROM docs
                 WHERE agent = ?1 AND path = ?2
                 RETURNING version",
                params![agent, path, text("content")],
                |r| r.get(0),
            )?;
            Ok(json!({ "path": path, "version": version }))
        }
        _ => {
            let (version, content): (i64, String) = db.query_row(
                "SELECT version, content FROM docs WHERE agent = ?1 AND path = ?2
                 ORDER BY version DESC LIMIT 1",
                params![agent, path],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(json!({ "path": path, "current_version": version, "content": content }))
        }
    }
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
        let db = Arc::clone(&self.db);
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let answer = tokio::task::spawn_blocking(move || {
            let db = db.lock().unwrap_or_else(|p| p.into_inner());
            run(&db, &name, &args)
        })
        .await
        .map_err(|_| McpError::internal_error("the call was abandoned", None))?;
        Ok(match answer {
            Ok(value) => CallToolResult::structured(value).into(),
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into(),
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let db = match args.iter().position(|a| a == "--db") {
        Some(i) if i + 1 < args.len() => args[i + 1].clone(),
        _ => return Err("usage: floor --db FILE".into()),
    };
    let conn = Connection::open(db)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS docs (agent TEXT, path TEXT, version INTEGER, content TEXT,
                                          PRIMARY KEY (agent, path, version));",
    )?;
    let floor = Floor {
        db: Arc::new(Mutex::new(conn)),
    };
    floor
        .serve(rmcp::transport::stdio_pipes())
        .await?
        .waiting()
        .await?;
    Ok(())
}
