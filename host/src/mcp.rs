//! MCP over rmcp: the only module that knows the protocol.
//!
//! Tools are listed from [`ToolName`] with the WIT's descriptions and schemars' schemas;
//! every call runs on the blocking pool (the guest and SQLite are synchronous) so the stdio
//! loop keeps reading while calls run. What a caller can fix comes back as a tool result with
//! `isError: true`; only an unknown tool is a protocol error.

use crate::service::{CallError, Service};
use crate::tools::ToolName;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use std::sync::Arc;

/// What a client's model reads first about this server.
const INSTRUCTIONS: &str = "Persistent, token-efficient storage for agents. Pick one agent_id and use it in every call: you see only your own data. \
Store working documents with write_file (each change makes a version; the newest 10 are kept). \
When you come back to a file, call read_file with since_version set to the version you last saw: you get a compact line diff (op equal/remove/add, and skip for unchanged runs left out) instead of the whole file. \
Record what you did with append_log and replay it with read_log, 100 entries a page, passing last_entry_id back as since_entry. \
summarize_file gives a cached summary of a long file. list_files and get_usage_stats show what you hold and your quotas.";

/// The MCP face of a [`Service`].
#[derive(Clone)]
pub struct McpServer {
    service: Arc<Service>,
    tools: Arc<Vec<Tool>>,
}

impl McpServer {
    /// Serves `service` over MCP.
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            tools: Arc::new(ToolName::ALL.into_iter().map(describe).collect()),
        }
    }

    /// Serves MCP on stdin and stdout until the client closes them.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        let running = self.serve(rmcp::transport::stdio_pipes()).await?;
        running.waiting().await?;
        Ok(())
    }
}

fn describe(tool: ToolName) -> Tool {
    let (description, _) = tool.docs();
    let hints = tool.hints();
    Tool::new(tool.as_str(), description, Arc::new(tool.input_schema()))
        .with_raw_output_schema(Arc::new(tool.output_schema()))
        .with_annotations(
            ToolAnnotations::new()
                .read_only(hints.read_only)
                .destructive(hints.destructive)
                .idempotent(hints.idempotent)
                .open_world(hints.open_world),
        )
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "scratchpad-mcp",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let service = Arc::clone(&self.service);
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let outcome = tokio::task::spawn_blocking(move || service.call(&name, args))
            .await
            .map_err(|_| McpError::internal_error("the tool call was abandoned", None))?;
        match outcome {
            Ok(value) => Ok(CallToolResult::structured(value).into()),
            Err(e @ CallError::UnknownTool(_)) => {
                Err(McpError::invalid_params(e.to_string(), None))
            }
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into()),
        }
    }
}
