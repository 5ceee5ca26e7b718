//! MCP over rmcp: the only module that knows the protocol.
//!
//! Tools are listed from the guest crate's catalogue (the WIT's descriptions, schemars'
//! schemas), the same JSON the component's `json.list-tools` gives embedders.
//! A call runs on the blocking pool (the guest and the stores are synchronous) so the loop
//! keeps reading while it runs. Over stdio on a store of local files, a call that does not
//! wait on the network runs in place instead, on the async worker that read it, since handing
//! it to another thread and back costs more than a read takes, and more CPU than a write's
//! statements; but a write only while no other write runs, so that writes sent together still
//! share their syncs ([`Writes`]). What a caller can fix comes back as a tool result with
//! `isError: true`; only an unknown tool is a protocol error.

use crate::bindings::ToolError;
use crate::gate::{Gate, Metrics, Refusal};
use crate::in_flight::Ticket;
use crate::keys::{Access, Identity};
use crate::message::MaxMessage;
use crate::resources::{self, ResourceError};
use crate::service::{Answer, CallError, Service};
use crate::service::{ToolName, agent_of};
use crate::stdio::{self, Stdio};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, ServerInitializeError};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use scratchpad_guest::limits::{MAX_AGENT_ID_CHARS, MAX_PATH_CHARS};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// What a client's model reads first about this server; the naming rules' lengths are the
/// guest crate's.
fn instructions() -> String {
    format!(
        "Persistent, token-efficient storage for agents. Pick one agent_id ([a-zA-Z0-9_-], up to {MAX_AGENT_ID_CHARS} characters) and use it in every call: you see only your own data. \
Paths are relative, [a-zA-Z0-9/_.-], up to {MAX_PATH_CHARS} characters, without '..'. \
Store working documents with write_file (each change makes a version). Change part of one with edit_file instead of resending it. \
When you come back to a file, call read_file with since_version set to the version you last saw: you get a compact line diff (op equal/remove/add, and skip for unchanged runs left out) instead of the whole file. \
Long files come in parts: pass next_line back as offset. read_files reads many files in one call within a token budget. \
search finds words in your files and logs and shows the matching lines with their numbers: cheaper than reading to find a fact. \
Record what you did with append_log and replay it with read_log, passing last_entry_id back as since_entry. \
Pass expected_version to write_file or delete_file to make sure nobody changed the file since you read it. \
summarize_file gives a cached summary of a long file. list_files, file_history and get_usage_stats show what you hold."
    )
}

/// The MCP face of a [`Service`].
#[derive(Clone)]
pub struct McpServer {
    /// The one service every session and request shares.
    service: Arc<Service>,
    /// The catalogue, built once: `tools/list` answers it as it is.
    tools: Arc<Vec<Tool>>,
    /// Hosted mode's checks: the key's agents and scope, the agent's rate.
    gate: Arc<Gate>,
    /// Calls by tool and outcome, for `/metrics`.
    metrics: Arc<Metrics>,
    /// Whether every request must carry a key's identity (hosted mode). Over stdio one user
    /// owns the process and no request carries one.
    keyed: bool,
    /// Where calls may run on the async worker that received them, the write calls running
    /// now. Only over stdio, whose one client's requests are all the runtime serves (a long
    /// call, such as a diff of two large files or a write waiting for its sync, holds one
    /// worker for its length, and no other client waits behind it), and only on a store whose
    /// calls never wait on the network (see [`Service::calls_are_local`]).
    in_place: Option<Arc<Writes>>,
    /// Whether the transport writes a successful tool result's text as its structured
    /// content too, so that the result leaves it out (see [`crate::stdio`]). Only over stdio;
    /// rmcp's HTTP transport writes the structured content it is given.
    structured_by_transport: bool,
}

impl McpServer {
    /// Serves `service` over MCP.
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            tools: Arc::new(catalogue()),
            gate: Arc::default(),
            metrics: Arc::default(),
            keyed: false,
            in_place: None,
            structured_by_transport: false,
        }
    }

    /// The same behind hosted mode's checks, counting calls in `metrics`: from now on a
    /// request without a key's identity is refused, whatever path it took.
    pub fn gated(self, gate: Arc<Gate>, metrics: Arc<Metrics>) -> Self {
        Self {
            gate,
            metrics,
            keyed: true,
            ..self
        }
    }

    /// Who is calling: nobody in particular over stdio; by HTTP, the identity the key check
    /// put on the request. Fails closed: a keyed server refuses a request that carries none.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Result<Option<Identity>, McpError> {
        caller(self.keyed, identity(context))
    }

    /// Serves MCP on stdin and stdout until the client closes them.
    pub async fn serve_stdio(self) -> anyhow::Result<()> {
        let server = Self {
            in_place: self.service.calls_are_local().then(Arc::default),
            structured_by_transport: true,
            ..self
        };
        let (read, write) = rmcp::transport::stdio_pipes();
        let max = MaxMessage::of(server.service.limits());
        let running = match server.serve(Stdio::new(read, write, max)).await {
            Ok(running) => running,
            Err(e) => return not_started(e),
        };
        running.waiting().await?;
        Ok(())
    }
}

/// A stdio session that never started: a client that closed stdin before it initialized (a
/// probe, a start cancelled) ended it and is no error; anything else is said in words, not in
/// the Rust form of the message rmcp did not expect.
fn not_started(e: ServerInitializeError) -> anyhow::Result<()> {
    match e {
        ServerInitializeError::ConnectionClosed(_) => {
            tracing::info!("the client closed stdin before it initialized");
            Ok(())
        }
        ServerInitializeError::ExpectedInitializeRequest(_) => Err(anyhow::anyhow!(
            "the session never started: a notification or response came before `initialize`, \
             after a request that could not start a session"
        )),
        other => Err(other.into()),
    }
}

/// The identity hosted mode's key check put on the HTTP request, if this call came by HTTP.
fn identity(context: &RequestContext<RoleServer>) -> Option<Identity> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Identity>())
        .cloned()
}

/// What a call of `tool` does, for the key's scope: a tool that reaches the outside world
/// (a summary) spends the operator's model budget; else it writes or it only reads.
pub(crate) fn access(tool: ToolName) -> Access {
    let hints = tool.hints();
    if hints.open_world {
        Access::Model
    } else if hints.read_only {
        Access::Read
    } else {
        Access::Write
    }
}

/// [`McpServer::caller`]'s rule: what a keyed server does without an identity.
fn caller(keyed: bool, found: Option<Identity>) -> Result<Option<Identity>, McpError> {
    match found {
        None if keyed => Err(McpError::invalid_request(
            "this server needs an API key, and none was checked for this request",
            None,
        )),
        found => Ok(found),
    }
}

/// Runs the gate's checks for each of `agents` (reading) as `caller`, on the blocking pool
/// like the work it guards; a refusal is the caller's to read: a key that does not cover the
/// agent is a bad parameter, a spent rate or a full house an invalid request now. The ticket
/// it answers with must go with the work it admitted.
async fn admit(
    gate: &Arc<Gate>,
    service: &Arc<Service>,
    caller: &Identity,
    agents: Vec<String>,
) -> Result<Option<Ticket>, McpError> {
    let ticket = gate
        .enter(Some(caller))
        .map_err(|full| McpError::invalid_request(full.to_string(), None))?;
    let (gate, service, caller) = (Arc::clone(gate), Arc::clone(service), caller.clone());
    tokio::task::spawn_blocking(move || {
        agents
            .iter()
            .try_for_each(|agent| gate.check(&caller, agent, Access::Read, &service))
    })
    .await
    .map_err(|_| McpError::internal_error("the request was abandoned", None))?
    .map_err(|refusal| match refusal {
        Refusal::Key(m) => McpError::invalid_params(m, None),
        other => McpError::invalid_request(other.to_string(), None),
    })?;
    Ok(ticket)
}

/// The write calls running now over stdio. A write runs in place, on the async worker that
/// read it, only when it is the only one: the hand-off to a blocking thread and back costs a
/// write more CPU than its SQLite statements (eight futex calls; see BENCHMARKS.md), but a
/// write in place holds its worker through its sync, so writes sent together go to the
/// blocking pool and share their syncs there, as over HTTP.
#[derive(Debug, Default)]
struct Writes(AtomicUsize);

impl Writes {
    /// Counts a write call until the returned mark is dropped, with its work.
    fn begin(self: &Arc<Self>) -> Writing {
        let before = self.0.fetch_add(1, Ordering::AcqRel);
        Writing {
            writes: Arc::clone(self),
            alone: before == 0,
        }
    }
}

/// One write call counted in [`Writes`].
struct Writing {
    writes: Arc<Writes>,
    /// Whether no other write was running when it began.
    alone: bool,
}

impl Drop for Writing {
    fn drop(&mut self) {
        self.writes.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a tool call's work hands its outcome to: the answer, or the gate's refusal with the
/// key's name.
type Deliver = Box<dyn FnOnce(Result<Result<Answer, CallError>, (String, Refusal)>) + Send>;

/// A tool result with `isError: true`: what the caller can read and fix, or retry.
fn failed(why: impl std::fmt::Display) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(why.to_string())]).into()
}

/// Runs resource work on the blocking pool, as tool calls run.
async fn blocking<R: Send + 'static>(
    work: impl FnOnce() -> Result<R, ResourceError> + Send + 'static,
) -> Result<R, McpError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| McpError::internal_error("the resource request was abandoned", None))?
        .map_err(resource_error)
}

/// A bad URI or cursor is the caller's to fix; a missing file is not found; anything else
/// (a busy or full store) is the server's, with the same words a tool call would have.
fn resource_error(e: ResourceError) -> McpError {
    match e {
        ResourceError::Invalid(m) => McpError::invalid_params(m, None),
        ResourceError::Call(
            e @ CallError::Tool {
                error: ToolError::NotFound(_),
                ..
            },
        ) => McpError::resource_not_found(e.to_string(), None),
        ResourceError::Call(
            e @ CallError::Tool {
                error: ToolError::InvalidArgument(_),
                ..
            },
        ) => McpError::invalid_params(e.to_string(), None),
        ResourceError::Call(e) => McpError::internal_error(e.to_string(), None),
    }
}

/// The answer to a request for `method` that rmcp could not read as one of MCP's.
fn not_served(method: &str) -> McpError {
    let params = match method {
        "tools/call" => "`name`, a tool's name, and `arguments`, an object of its arguments",
        "resources/read" => "`uri`, a string",
        "initialize" => "`protocolVersion`, `capabilities` and `clientInfo`",
        _ => {
            return McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!(
                    "no method {method:?} here: this server answers initialize, ping, tools/list, tools/call, resources/list, resources/templates/list and resources/read"
                ),
                None,
            );
        }
    };
    McpError::invalid_params(
        format!("the params of {method} are not what MCP defines: they take {params}"),
        None,
    )
}

/// Every tool as the guest crate's catalogue describes it (the same JSON the component's
/// `json.list-tools` gives embedders): about 1,400 tokens of context.
fn catalogue() -> Vec<Tool> {
    serde_json::from_str(&scratchpad_guest::json::list_tools())
        .expect("the guest crate's catalogue is a list of MCP tools")
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new(
            "scratchpad-mcp",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(instructions())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let service = Arc::clone(&self.service);
        let cursor = request.and_then(|r| r.cursor);
        // By HTTP, a key sees its own agents' files only, and a listing is a call of each.
        let caller = self.caller(&context)?;
        let ticket = match &caller {
            Some(caller) => admit(&self.gate, &service, caller, caller.agents.clone()).await?,
            None => None,
        };
        let agents = caller.map(|caller| caller.agents);
        let (listed, next) = blocking(move || {
            let _ticket = ticket;
            resources::list(&service, agents.as_deref(), cursor.as_deref())
        })
        .await?;
        let items = listed
            .into_iter()
            .map(|l| {
                Resource::new(l.uri, l.path.clone())
                    .with_description(format!("version {} of agent {}'s file", l.version, l.agent))
                    .with_mime_type(resources::mime_type(&l.path))
                    .with_size(l.bytes)
            })
            .collect();
        let mut page = ListResourcesResult::with_all_items(items);
        page.next_cursor = next;
        Ok(page)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let template = ResourceTemplate::new(resources::TEMPLATE, "scratchpad file")
            .with_description("A file's current version, by agent id and path.");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let service = Arc::clone(&self.service);
        let uri = request.uri;
        let ticket = match self.caller(&context)? {
            Some(caller) => {
                let (agent, _) = resources::parse(&uri).map_err(resource_error)?;
                admit(&self.gate, &service, &caller, vec![agent.to_owned()]).await?
            }
            None => None,
        };
        let read_uri = uri.clone();
        let text = blocking(move || {
            let _ticket = ticket;
            resources::read(&service, &read_uri)
        })
        .await?;
        let (_, path) = resources::parse(&uri).map_err(resource_error)?;
        let contents = ResourceContents::TextResourceContents {
            mime_type: Some(resources::mime_type(path).into()),
            uri,
            text,
            meta: None,
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    /// A request rmcp did not read as one of MCP's: a method this server does not answer, or
    /// one of its own whose params do not fit (rmcp reads both alike, and would call either
    /// an unknown method, naming the method and nothing else).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(not_served(&request.method))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let started = Instant::now();
        // An unknown tool is a protocol error before anything else, the gate included: there
        // is no agent or kind of tool to check yet, and stdio and HTTP must answer alike.
        // Metrics are labelled by known tools only: a caller's made-up name is not a label.
        let Some(tool) = ToolName::parse(&name) else {
            self.metrics.record("unknown", "error", started.elapsed());
            return Err(McpError::invalid_params(
                CallError::UnknownTool(name).to_string(),
                None,
            ));
        };
        let label = tool.as_str();
        let caller = self.caller(&context)?;
        let access = access(tool);
        let (service, gate) = (Arc::clone(&self.service), Arc::clone(&self.gate));
        let ticket = match gate.enter(caller.as_ref()) {
            Ok(ticket) => ticket,
            Err(full) => {
                tracing::info!(tool = %name, %full, "refused: calls in flight");
                self.metrics.record(label, "refused", started.elapsed());
                return Ok(failed(full));
            }
        };
        // The gate may ask the database (a shared rate bucket), so it runs where the call does.
        // The ticket goes with the work: it counts until the work ends, even if the caller has
        // gone away meanwhile. The answer is handed over as soon as it is known: what the
        // store leaves for after it (a read's end on PostgreSQL) runs while it is sent.
        let work = move |deliver: Deliver| {
            let _ticket = ticket;
            if let Some(caller) = &caller
                && let Err(refusal) = gate.check(caller, agent_of(&args), access, &service)
            {
                return deliver(Err((caller.name.clone(), refusal)));
            }
            service.answer_then(label, args, |answer| deliver(Ok(answer)));
        };
        let (handed, answered) = tokio::sync::oneshot::channel();
        let deliver: Deliver = Box::new(move |outcome| {
            // A receiver gone is a caller gone: the work still ends as it would.
            let _ = handed.send(outcome);
        });
        // In place: a read, or a write while no other write runs (one that waits on the
        // model never). The count of writes goes with the work and ends with it.
        let writing = match (&self.in_place, access) {
            (Some(writes), Access::Write) => Some(writes.begin()),
            _ => None,
        };
        let here = match access {
            Access::Read => self.in_place.is_some(),
            Access::Write => writing.as_ref().is_some_and(|w| w.alone),
            Access::Model => false,
        };
        let work = move |deliver: Deliver| {
            let _writing = writing;
            work(deliver);
        };
        if here {
            work(deliver);
        } else {
            tokio::task::spawn_blocking(move || work(deliver));
        }
        let outcome = answered
            .await
            .map_err(|_| McpError::internal_error("the tool call was abandoned", None))?;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err((key, refusal)) => {
                tracing::info!(tool = %name, %key, %refusal, "refused at the gate");
                self.metrics.record(label, "refused", started.elapsed());
                return Ok(failed(refusal));
            }
        };
        let result = if outcome.is_ok() { "ok" } else { "error" };
        self.metrics.record(label, result, started.elapsed());
        match outcome {
            // The transport writes the structured content from the text (see `crate::stdio`).
            Ok(answer) if self.structured_by_transport => Ok(stdio::answered(answer.text).into()),
            Ok(answer) => match answer.json() {
                Ok(json) => {
                    let mut result = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
                    result.structured_content = Some(json);
                    Ok(result.into())
                }
                Err(e) => Ok(failed(e)),
            },
            Err(e) => Ok(failed(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{Credential, Scope};

    /// Over stdio a write runs in place only while it is the only write: one that begins
    /// while another runs goes to the blocking pool, and each counts until its work ends.
    #[test]
    fn a_write_runs_in_place_only_while_no_other_write_runs() {
        let writes = Arc::new(Writes::default());
        let first = writes.begin();
        let second = writes.begin();
        assert!(first.alone);
        assert!(!second.alone);
        drop(first);
        assert!(!writes.begin().alone, "the second still runs");
        drop(second);
        assert!(writes.begin().alone, "both ended");
    }

    /// Hosted mode fails closed: a request that reached a handler without the key check's
    /// identity is refused, not served as if by the single user of stdio mode.
    #[test]
    fn a_keyed_server_refuses_a_request_without_an_identity() {
        let refused = caller(true, None).unwrap_err();
        assert_eq!(
            refused.message,
            "this server needs an API key, and none was checked for this request"
        );
        let someone = Identity {
            credential: Credential::Key,
            name: "k".into(),
            agents: vec!["a".into()],
            scope: Scope::ReadOnly,
            summaries: false,
            reads: true,
        };
        assert_eq!(caller(true, Some(someone.clone())).unwrap(), Some(someone));
        assert_eq!(caller(false, None).unwrap(), None);
    }

    /// Every session pays for `tools/list` in its context before the first call, and the
    /// README says how much: the figure there is this one, so it cannot drift as tools change.
    #[test]
    fn the_tool_list_stays_under_2000_estimated_tokens_and_the_readme_says_its_size() {
        let tools: Vec<Tool> = catalogue();
        let count = tools.len();
        // As a client of today's protocol versions gets it: rmcp adds `"resultType"` (24
        // bytes) only for sessions on 2026-07-28 or later.
        let listing = serde_json::json!({ "tools": tools }).to_string();
        let tokens = listing.len() / 4;
        assert!(
            tokens < 2_000,
            "tools/list is {} bytes, about {tokens} tokens",
            listing.len()
        );
        let said = format!(
            "The `tools/list` answer is {} bytes of JSON for the {count} tools",
            scratchpad_guest::json::catalogue::grouped(listing.len() as u64)
        );
        assert!(
            include_str!("../../README.md").contains(&said),
            "README.md should say: {said}"
        );
    }
}
