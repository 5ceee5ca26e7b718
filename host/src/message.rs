//! The messages both transports read, and the answer to one they cannot: too long for any
//! call the limits allow, nested deeper than serde_json reads, or not JSON-RPC at all.
//!
//! rmcp's transports bound a message by numbers of their own (a stdio line at 16 MiB, an
//! HTTP body at 4 MiB), so a write the operator's `max_write_bytes` allowed could be refused
//! over HTTP, or over stdio dropped unanswered, leaving its caller waiting for ever. Here the
//! bound follows the limits in force (the guest's [`max_message_bytes`]), and a message past
//! it, or too deep to read, is answered under its request's id when that can be found.

use crate::bindings::LimitOverrides;
use rmcp::model::{ClientJsonRpcMessage, ErrorData, RequestId};
use scratchpad_guest::limits::{
    ESCAPED_BYTES_PER_BYTE, MAX_LOG_ENTRY_DEPTH, MESSAGE_FRAME_BYTES, max_message_bytes, quotas,
};
use scratchpad_guest::tools::{nesting, outside_strings};

/// The deepest a message may nest: serde_json stops reading at 128 levels.
pub const MESSAGE_DEPTH: usize = 127;

/// The longest message a call within `limits` needs, and so the longest either transport
/// reads; with it, what a longer one is told.
#[derive(Clone, Debug)]
pub struct MaxMessage {
    /// The bound, in bytes.
    pub bytes: usize,
    /// The refusal of a longer message, which names the bound and where it comes from.
    refusal: String,
}

impl MaxMessage {
    /// The bound for a server whose operator set `limits`.
    pub fn of(limits: &LimitOverrides) -> Self {
        let q = quotas(limits);
        let bytes = max_message_bytes(&q);
        let refusal = format!(
            "the request is over {bytes} bytes, the most a message may be: {ESCAPED_BYTES_PER_BYTE} \
             bytes for each byte of the largest content a call may carry (max_write_bytes = {}, \
             max_log_entry_bytes = {}), as many as JSON's escapes can take, and {MESSAGE_FRAME_BYTES} \
             bytes more (nothing was changed)",
            q.max_write_bytes, q.max_log_entry_bytes
        );
        Self {
            bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
            refusal,
        }
    }

    /// A bound of `bytes`, refused with `refusal`: small enough for a test to pass.
    #[cfg(test)]
    pub(crate) fn for_test(bytes: usize, refusal: &str) -> Self {
        Self {
            bytes,
            refusal: refusal.to_owned(),
        }
    }

    /// The answer to a message longer than the bound.
    pub fn refusal(&self) -> ErrorData {
        ErrorData::invalid_request(self.refusal.clone(), None)
    }
}

/// The answer to a message nested `depth` levels deep, deeper than [`MESSAGE_DEPTH`].
pub fn too_deep(depth: usize) -> ErrorData {
    ErrorData::invalid_request(
        format!(
            "the request nests {depth} levels deep (arrays and objects one inside another); a message may nest {MESSAGE_DEPTH} levels, and a log entry in it {MAX_LOG_ENTRY_DEPTH} (nothing was changed)"
        ),
        None,
    )
}

/// Why `body` is no message a client may send, or `None` if it is one: nested too deep to
/// read, not JSON (a parse error, with where it stopped), or JSON that is no JSON-RPC
/// message MCP defines. For HTTP, which answers every body it is sent.
pub fn unreadable(body: &[u8]) -> Option<ErrorData> {
    let depth = nesting(body);
    if depth > MESSAGE_DEPTH {
        return Some(too_deep(depth));
    }
    // Into a value, which checks what skipping it would not: each string's UTF-8 and escapes,
    // each number's range.
    let value = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => value,
        Err(e) => {
            return Some(ErrorData::parse_error(
                format!("the request is not JSON: {e} (nothing was changed)"),
                None,
            ));
        }
    };
    if value.is_array() {
        return Some(ErrorData::invalid_request(
            "the request is a batch (an array of messages), which MCP has not had since 2025-06-18: send each message alone (nothing was changed)",
            None,
        ));
    }
    serde_json::from_slice::<ClientJsonRpcMessage>(body)
        .is_err()
        .then(|| {
            ErrorData::invalid_request(
                "the request is JSON but no JSON-RPC request, notification or response of MCP's (nothing was changed)",
                None,
            )
        })
}

/// The `id` of the request `message` holds, found without reading the rest of it (which may
/// be too deep to read, or cut short): the value after a key `"id"` of the outermost object.
pub fn request_id(message: &[u8]) -> Option<RequestId> {
    outside_strings(message)
        .filter(|&(_, b, open)| b == b'"' && open == 1)
        .find_map(|(at, _, _)| {
            let mut key =
                serde_json::Deserializer::from_slice(&message[at..]).into_iter::<String>();
            if key.next()?.ok()? != "id" {
                return None;
            }
            let after = message[at + key.byte_offset()..].trim_ascii_start();
            let value = after.strip_prefix(b":")?;
            serde_json::Deserializer::from_slice(value)
                .into_iter()
                .next()?
                .ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use scratchpad_guest::limits::NO_OVERRIDES;
    use serde_json::{Value, json};

    #[test]
    fn a_request_id_is_found_at_the_top_level_only() {
        let cases: [(&[u8], Option<Value>); 6] = [
            (br#"{"id":7,"method":"ping"}"#, Some(json!(7))),
            (
                br#"{"method":"id","params":{"id":1},"id" : "k\"ey"}"#,
                Some(json!("k\"ey")),
            ),
            (br#"{"params":{"id":1},"x":"\"id\":2"}"#, None),
            (br#"{"id":{"nested":1}}"#, None),
            (b"[[[", None),
            // A message cut short after its id, as a refused long line is.
            (
                br#"{"jsonrpc":"2.0","id":"w","params":{"content":"xxx"#,
                Some(json!("w")),
            ),
        ];
        for (line, id) in cases {
            let found = request_id(line).map(|id| serde_json::to_value(id).unwrap());
            assert_eq!(found, id, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn the_bound_and_its_refusal_name_the_limits_it_follows() {
        let max = MaxMessage::of(&NO_OVERRIDES);
        assert_eq!(max.bytes, 6 * 1024 * 1024 + 64 * 1024);
        assert_eq!(
            max.refusal().message,
            "the request is over 6356992 bytes, the most a message may be: 6 bytes for each byte \
             of the largest content a call may carry (max_write_bytes = 1048576, \
             max_log_entry_bytes = 65536), as many as JSON's escapes can take, and 65536 bytes \
             more (nothing was changed)"
        );
        let larger = MaxMessage::of(&LimitOverrides {
            max_write_bytes: Some(8 << 20),
            ..NO_OVERRIDES
        });
        assert_eq!(larger.bytes, 48 * 1024 * 1024 + 64 * 1024);
    }

    /// The error's code, and how its message begins; `None` for a message.
    type Told = Option<(i32, &'static str)>;

    #[test]
    fn what_is_no_message_is_told_why() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let cases: [(&[u8], Told); 9] = [
            (br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, None),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","#,
                Some((
                    -32700,
                    "the request is not JSON: EOF while parsing a value at line 1 column 46 (nothing was changed)",
                )),
            ),
            (
                br#"{"jsonrpc":"2.0","id":1}"#,
                Some((
                    -32600,
                    "the request is JSON but no JSON-RPC request, notification or response of MCP's (nothing was changed)",
                )),
            ),
            (
                deep.as_bytes(),
                Some((-32600, "the request nests 200 levels deep")),
            ),
            (b"", Some((-32700, "the request is not JSON: EOF"))),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                Some((-32600, "the request is a batch (an array of messages)")),
            ),
            (
                b"{\"id\":1,\"x\":\"\xff\"}",
                Some((
                    -32700,
                    "the request is not JSON: invalid unicode code point",
                )),
            ),
            (
                br#"{"id":1,"x":"\ud800"}"#,
                Some((
                    -32700,
                    "the request is not JSON: unexpected end of hex escape",
                )),
            ),
            (
                br#"{"id":1,"x":1e400}"#,
                Some((-32700, "the request is not JSON: number out of range")),
            ),
        ];
        for (body, expected) in cases {
            let found = unreadable(body);
            let said = found.as_ref().map(|e| (e.code.0, e.message.as_ref()));
            match (said, expected) {
                (None, None) => {}
                (Some((code, message)), Some((want_code, want))) => {
                    assert_eq!(code, want_code, "{message}");
                    assert!(message.starts_with(want), "{message}");
                }
                (said, _) => panic!("{said:?} for {}", String::from_utf8_lossy(body)),
            }
        }
    }
}
