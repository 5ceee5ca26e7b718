//! MCP over stdio: rmcp's messages and line framing, with a tool's answer written once as
//! its structured content, straight from the guest's JSON text.
//!
//! A successful tool result carries the answer twice, as text and as structured content
//! (SPEC). rmcp's own stdio transport takes the structured content as a `serde_json::Value`:
//! the host would parse the guest's text into one for every call and rmcp write it out
//! again, which for a read of 100 log entries was a third of the call's time. Over stdio,
//! [`crate::mcp::McpServer`] leaves a successful result's structured content out, and this
//! transport writes the result's one text block in its place: the answer's text, which
//! [`crate::guard::answers::check`] read as one JSON object before the call committed.
//!
//! The rest is rmcp's: its message types, serialised by serde, and its codec for each line
//! read (a byte order mark, a carriage return, a notification it cannot read). One departure:
//! a request this transport cannot read is answered under its id, saying why, where rmcp
//! would drop the line (or answer it with no id) and leave its caller waiting for ever: a line
//! longer than any call the limits allow needs ([`MaxMessage`], where rmcp stops at 16 MiB
//! whatever the limits), a message nested deeper than serde_json reads, one that is not JSON
//! (a string that is not UTF-8, a number out of range, a line cut short), and JSON that is no
//! message. A line that is not JSON and has no id to answer under is ignored, as rmcp does,
//! unless it is JSON too deep to read. And a notification or response that comes before the
//! session's first request is ignored, where rmcp would end the session on it, printing the
//! message's Rust form: a client that sends `notifications/initialized` (or anything else
//! not a request) too early is told nothing either way, and keeps its server.

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, CallToolResult, ClientRequest, ContentBlock, ErrorCode, ErrorData,
    JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use std::io;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

use crate::message::{MaxMessage, request_id, unreadable};

/// How much room a read of stdin has at least, as rmcp's transport reads.
const READ_SIZE: usize = 8 * 1024;

/// The transport: messages in from `R`, one line each out to `W`.
pub struct Stdio<R, W> {
    /// Where requests come from.
    read: R,
    /// What was read and not yet taken as a line.
    buffer: BytesMut,
    /// How far `buffer` is known to hold no line's end.
    scanned: usize,
    /// The longest line read as a message.
    max: MaxMessage,
    /// Whether the rest of a line longer than `max` is being dropped.
    discarding: bool,
    /// Whether a request that starts the session (`initialize`, or any other but `ping` and
    /// `server/discover`, which rmcp answers while it waits for one) has been handed over.
    started: bool,
    /// Where messages go, one whole line at a time: responses are sent concurrently.
    write: Arc<Mutex<W>>,
}

/// What the buffer holds next.
enum Next {
    /// A whole line, its end included.
    Line(BytesMut),
    /// The start of a line longer than a message may be, whose rest is dropped as it comes:
    /// the id of the request it began, when that came before the cut.
    TooLong(Option<RequestId>),
}

impl<R, W> Stdio<R, W> {
    /// The transport over `read` and `write` (rmcp's `stdio_pipes()` in the server), reading
    /// lines up to `max`.
    pub fn new(read: R, write: W, max: MaxMessage) -> Self {
        Self {
            read,
            buffer: BytesMut::new(),
            scanned: 0,
            max,
            discarding: false,
            started: false,
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// The next whole line in the buffer, or the start of one too long to read; drops an
    /// over-long line's bytes as they come.
    fn next_line(&mut self) -> Option<Next> {
        loop {
            let end = self.buffer[self.scanned..].iter().position(|b| *b == b'\n');
            let Some(end) = end.map(|at| self.scanned + at) else {
                if self.discarding {
                    self.buffer.clear();
                } else if self.buffer.len() > self.max.bytes {
                    let id = request_id(&self.buffer);
                    self.discarding = true;
                    self.buffer.clear();
                    self.scanned = 0;
                    return Some(Next::TooLong(id));
                }
                self.scanned = self.buffer.len();
                return None;
            };
            self.scanned = 0;
            if self.discarding {
                self.buffer.advance(end + 1);
                self.discarding = false;
                continue;
            }
            let line = self.buffer.split_to(end + 1);
            if end > self.max.bytes {
                return Some(Next::TooLong(request_id(&line)));
            }
            return Some(Next::Line(line));
        }
    }
}

impl<R, W> Stdio<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// Answers a line that is no message this server can read with `refusal`, on a task of
    /// its own, as rmcp sends every message: a receive cancelled meanwhile loses nothing.
    fn refuse(&mut self, refusal: ErrorData, id: Option<RequestId>) {
        let send = self.send(JsonRpcMessage::error(refusal, id));
        tokio::spawn(async move {
            if let Err(e) = send.await {
                tracing::debug!("answering a line that is no message failed: {e}");
            }
        });
    }
}

impl<R, W> Transport<RoleServer> for Stdio<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        message: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let line = encode(&message);
        let write = Arc::clone(&self.write);
        async move {
            let line = line?;
            let mut write = write.lock().await;
            write.write_all(&line).await?;
            write.flush().await
        }
    }

    /// Cancel-safe, as rmcp needs (it polls this in a `select!`): bytes are only taken from
    /// the buffer in the poll that uses them, and a refusal is sent on a task of its own, as
    /// rmcp sends every message, so that a cancelled receive cannot cut a line short.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let mut line = match self.next_line() {
                Some(Next::Line(line)) => line,
                Some(Next::TooLong(id)) => {
                    tracing::debug!(max = self.max.bytes, "a message longer than any call needs");
                    let refusal = self.max.refusal();
                    self.refuse(refusal, id);
                    continue;
                }
                None => {
                    self.buffer.reserve(READ_SIZE);
                    match self.read.read_buf(&mut self.buffer).await {
                        // An unfinished last line is dropped, as rmcp's transport drops it.
                        Ok(0) => return None,
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::error!("reading stdin failed: {e}");
                            return None;
                        }
                    }
                }
            };
            if let Some(call) = tool_call(&line) {
                self.started = true;
                return Some(call);
            }
            let kept = line.clone();
            match JsonRpcMessageCodec::default().decode(&mut line) {
                Ok(Some(JsonRpcMessage::Request(request))) => {
                    self.started |= !matches!(
                        request.request,
                        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_)
                    );
                    return Some(JsonRpcMessage::Request(request));
                }
                Ok(Some(_)) if !self.started => {
                    tracing::debug!("ignoring a notification or response before the first request");
                }
                Ok(Some(message)) => return Some(message),
                // A notification outside MCP, which rmcp ignores.
                Ok(None) => {}
                Err(e) => {
                    // rmcp ignores a line that is not JSON (a message nested deeper than
                    // serde_json reads among them), and answers JSON that is no message with no
                    // id: either way a request's caller would wait for ever. Each is answered
                    // with why, under the request's id when it can be found; a line that is not
                    // JSON and has none (an empty line among them) is ignored, as rmcp does,
                    // unless it is too deep to read.
                    let id = request_id(&kept);
                    let why = unreadable(message_text(&kept))
                        .unwrap_or_else(|| ErrorData::invalid_request("Invalid request", None));
                    let json = matches!(&e, JsonRpcMessageCodecError::Serde(e) if e.is_data());
                    if !json && id.is_none() && why.code == ErrorCode::PARSE_ERROR {
                        tracing::debug!("ignoring a line that is not JSON: {e}");
                        continue;
                    }
                    tracing::debug!("a line that is no MCP message: {e}");
                    self.refuse(why, id);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        self.write.lock().await.flush().await
    }
}

/// The message a line holds: without its end, and without a byte order mark before it.
fn message_text(line: &[u8]) -> &[u8] {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `line` as a `tools/call` request, when it is one, read straight into its type. rmcp's
/// codec reads a request by trying each kind of request in turn until one fits, making (and
/// dropping) an error message for each that does not: thirteen before `tools/call`, the
/// request nearly every line is. What this does not read, rmcp's codec reads as before.
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let line = message_text(line);
    let call: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: ClientRequest::CallToolRequest(call.request),
    }))
}

/// `message` as one line of JSON; a successful tool result gets its text as its structured
/// content too.
fn encode(message: &TxJsonRpcMessage<RoleServer>) -> io::Result<Vec<u8>> {
    let answer = answer_text(message);
    // Room for the answer twice (the text content escapes it a little) and the envelope.
    let room = answer.map_or(256, |answer| 2 * answer.len() + 256);
    let mut line = Vec::with_capacity(room);
    serde_json::to_writer(&mut line, message)?;
    if let Some(answer) = answer {
        // The message ends with the result's closing brace and then its own: the field goes
        // in before them.
        debug_assert!(line.ends_with(b"}}"));
        line.truncate(line.len() - 2);
        line.extend_from_slice(b",\"structuredContent\":");
        line.extend_from_slice(answer.as_bytes());
        line.extend_from_slice(b"}}");
    }
    line.push(b'\n');
    Ok(line)
}

/// A tool's successful result whose structured content this transport writes: `answer`, one
/// JSON object, as its one text block, and no structured content yet. The one way to build
/// what [`answer_text`] finds.
pub fn answered(answer: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(answer)])
}

/// The answer's text, when `message` is a tool's successful result built by [`answered`].
fn answer_text(message: &TxJsonRpcMessage<RoleServer>) -> Option<&str> {
    let JsonRpcMessage::Response(JsonRpcResponse {
        result: ServerResult::CallToolResult(result),
        ..
    }) = message
    else {
        return None;
    };
    match (
        result.is_error,
        &result.structured_content,
        &result.content[..],
    ) {
        (Some(false), None, [block]) => block.as_text().map(|text| text.text.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bindings::NO_OVERRIDES;
    use crate::message::{MESSAGE_DEPTH, too_deep};
    use rmcp::model::{NumberOrString, RequestId};
    use serde_json::{Value, json};

    fn response(result: CallToolResult) -> TxJsonRpcMessage<RoleServer> {
        JsonRpcMessage::response(
            ServerResult::CallToolResult(result),
            RequestId::from(NumberOrString::Number(7)),
        )
    }

    fn written(message: &TxJsonRpcMessage<RoleServer>) -> Value {
        let line = encode(message).unwrap();
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        assert!(line.ends_with(b"\n"));
        serde_json::from_slice(&line).unwrap()
    }

    /// What rmcp would write for the same result with the answer as its structured content.
    #[test]
    fn a_successful_result_is_written_as_rmcp_writes_it_with_its_structured_content() {
        let answer = r#"{"path":"notes/a.md","content":"line \"1\"\n","entries":[{"id":1,"entry":{"b":1,"a":2}}]}"#;
        let ours = written(&response(answered(answer.into())));
        let mut theirs = CallToolResult::success(vec![ContentBlock::text(answer)]);
        theirs.structured_content = Some(serde_json::from_str(answer).unwrap());
        assert_eq!(ours, serde_json::to_value(response(theirs)).unwrap());
        assert_eq!(ours["result"]["structuredContent"]["path"], "notes/a.md");
        // Keys keep the answer's order.
        let entry = ours["result"]["structuredContent"]["entries"][0]["entry"]
            .as_object()
            .unwrap();
        assert_eq!(entry.keys().collect::<Vec<_>>(), ["b", "a"]);
    }

    #[test]
    fn errors_and_every_other_message_are_written_as_rmcp_writes_them() {
        let error = response(CallToolResult::error(vec![ContentBlock::text(
            "no file \"f\"",
        )]));
        let refusal =
            JsonRpcMessage::error(ErrorData::invalid_request("Invalid request", None), None);
        for message in [error, refusal] {
            assert_eq!(written(&message), serde_json::to_value(&message).unwrap());
        }
        let error = written(&response(CallToolResult::error(vec![ContentBlock::text(
            "x",
        )])));
        assert!(
            error["result"].get("structuredContent").is_none(),
            "{error}"
        );
    }

    async fn received(input: &[u8]) -> (Vec<RxJsonRpcMessage<RoleServer>>, String) {
        received_within(input, MaxMessage::of(&NO_OVERRIDES)).await
    }

    async fn received_within(
        input: &[u8],
        max: MaxMessage,
    ) -> (Vec<RxJsonRpcMessage<RoleServer>>, String) {
        let (mut ours, theirs) = tokio::io::duplex(1 << 16);
        let mut transport = Stdio::new(input, theirs, max);
        let mut messages = Vec::new();
        while let Some(message) = transport.receive().await {
            messages.push(message);
        }
        drop(transport);
        let mut out = String::new();
        ours.read_to_string(&mut out).await.unwrap();
        (messages, out)
    }

    #[tokio::test]
    async fn lines_are_read_as_rmcp_reads_them_and_a_request_is_always_answered() {
        let input = b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\
\n\
not json\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/other\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{}}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/other\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":3}\n\
{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\n\
[1]\n\
{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}";
        let (messages, out) = received(input).await;
        let ids: Vec<Value> = messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["id"].clone())
            .collect();
        // The BOM and CR are dropped; an empty line and a line that is not JSON and has no id
        // are ignored; a notification before the session's first request (a ping starts
        // none) is ignored, and one after it goes on to rmcp, even one it does not know (its
        // handler ignores it); an unfinished last line is dropped. A request that is not
        // JSON, or JSON that is no message, is answered under its id where rmcp would leave
        // its caller waiting.
        assert_eq!(ids, [json!(1), json!(2), Value::Null]);
        let mut refusals: Vec<(String, Value, Value)> = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| {
                (
                    r["id"].to_string(),
                    r["error"]["code"].clone(),
                    r["error"]["message"].clone(),
                )
            })
            .collect();
        refusals.sort_by(|a, b| a.0.cmp(&b.0));
        let no_message = json!(
            "the request is JSON but no JSON-RPC request, notification or response of MCP's (nothing was changed)"
        );
        assert_eq!(
            refusals,
            [
                ("3".to_owned(), json!(-32600), no_message),
                (
                    "5".to_owned(),
                    json!(-32700),
                    json!(
                        "the request is not JSON: EOF while parsing a value at line 1 column 40 (nothing was changed)"
                    )
                ),
                (
                    "null".to_owned(),
                    json!(-32600),
                    json!(
                        "the request is a batch (an array of messages), which MCP has not had since 2025-06-18: send each message alone (nothing was changed)"
                    )
                ),
            ],
            "{out}"
        );
    }

    /// A call whose arguments nest `depth` levels, the message three more.
    fn nested_call(id: &str, depth: usize) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"append_log","arguments":{{"agent_id":"a","path":"l","entry":{}{}}}}},"id":{id}}}"#,
            "[".repeat(depth - 3),
            "]".repeat(depth - 3),
        ) + "\n"
    }

    /// serde_json reads a message 127 levels deep and no deeper; rmcp would ignore the deeper
    /// one as not JSON, and leave its caller waiting.
    #[tokio::test]
    async fn a_message_too_deep_to_read_is_answered_under_its_id() {
        let input = [
            nested_call("1", MESSAGE_DEPTH),
            nested_call("\"two\"", MESSAGE_DEPTH + 1),
            nested_call("3", 5_000),
            // No id to answer under, but not a line to ignore either.
            format!("{}{}\n", "[".repeat(200), "]".repeat(200)),
        ]
        .concat();
        let (messages, out) = received(input.as_bytes()).await;
        let ids: Vec<Value> = messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["id"].clone())
            .collect();
        assert_eq!(ids, [json!(1)], "the deepest readable message is read");
        let refusals: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let said: Vec<(&Value, &Value)> = refusals
            .iter()
            .map(|r| (&r["id"], &r["error"]["message"]))
            .collect();
        assert_eq!(
            said,
            [
                (&json!("two"), &json!(too_deep(128).message)),
                (&json!(3), &json!(too_deep(5_000).message)),
                (&Value::Null, &json!(too_deep(200).message)),
            ]
        );
        assert!(
            too_deep(128)
                .message
                .starts_with("the request nests 128 levels deep")
        );
    }

    /// The fast read of a `tools/call` gives what rmcp's codec gives for the same line, its
    /// `_meta` included; any other line is left to the codec.
    #[test]
    fn a_tool_call_is_read_as_rmcp_reads_it() {
        let calls: [&[u8]; 2] = [
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"arguments\":{\"agent_id\":\"x\",\"path\":\"f\"},\"_meta\":{\"progressToken\":3}}}\n",
            b"{\"id\":9,\"params\":{\"name\":\"list_files\"},\"method\":\"tools/call\",\"jsonrpc\":\"2.0\"}\r\n",
        ];
        for line in calls {
            let ours = tool_call(line).expect("a tool call");
            assert!(matches!(
                &ours,
                JsonRpcMessage::Request(JsonRpcRequest {
                    request: ClientRequest::CallToolRequest(_),
                    ..
                })
            ));
            let theirs: RxJsonRpcMessage<RoleServer> = JsonRpcMessageCodec::default()
                .decode(&mut BytesMut::from(line))
                .unwrap()
                .unwrap();
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&theirs).unwrap()
            );
        }
        let others: [&[u8]; 3] = [
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n",
            b"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\n",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}\n",
        ];
        for line in others {
            assert!(
                tool_call(line).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    /// rmcp drops a `receive` whenever a response is ready first: what it had read of a line
    /// must still be there for the next one.
    #[tokio::test]
    async fn a_receive_cancelled_halfway_through_a_line_loses_nothing() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut transport = Stdio::new(server, tokio::io::sink(), MaxMessage::of(&NO_OVERRIDES));
        client
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":8,")
            .await
            .unwrap();
        let wait = std::time::Duration::from_millis(20);
        let cancelled = tokio::time::timeout(wait, transport.receive()).await;
        assert!(cancelled.is_err(), "half a line is no message");
        client.write_all(b"\"method\":\"ping\"}\n").await.unwrap();
        let message = transport.receive().await.unwrap();
        assert_eq!(serde_json::to_value(&message).unwrap()["id"], 8);
    }

    /// A line longer than a message may be is answered under its id and the next one read,
    /// whether its end came in the read that took it past the bound or long after.
    #[tokio::test]
    async fn a_line_over_the_limit_is_answered_under_its_id_and_the_next_one_read() {
        let max = MaxMessage::for_test(140, "too long");
        let line = |id: &str, content: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"write_file","arguments":{{"agent_id":"a","path":"p","content":"{}"}}}}}}"#,
                "x".repeat(content)
            ) + "\n"
        };
        let ping = |id: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#) + "\n";
        let input = [
            line("1", 0),
            // Its end comes in the same read as its 141st byte.
            line("2", 40),
            ping(3),
            // Its end comes reads after its 141st byte; its id is at its start.
            line("\"four\"", 100_000),
            ping(5),
            // Its id comes last, but the line came whole: the id is found.
            format!(r#"{{"params":{{"content":"{}"}},"id":6}}"#, "x".repeat(200)) + "\n",
            // Its id comes last, reads after the bound: the refusal has none.
            format!(
                r#"{{"params":{{"content":"{}"}},"id":7}}"#,
                "x".repeat(100_000)
            ) + "\n",
            ping(8),
        ]
        .concat();
        let (messages, out) = received_within(input.as_bytes(), max).await;
        let ids: Vec<Value> = messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["id"].clone())
            .collect();
        assert_eq!(ids, [json!(1), json!(3), json!(5), json!(8)]);
        let refusals: Vec<(Value, Value)> = out
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|r| (r["id"].clone(), r["error"]["message"].clone()))
            .collect();
        assert_eq!(
            refusals,
            [
                (json!(2), json!("too long")),
                (json!("four"), json!("too long")),
                (json!(6), json!("too long")),
                (Value::Null, json!("too long")),
            ]
        );
    }
}
