//! Scratchpad files as MCP resources, so a person can attach one in their client:
//! `scratchpad://{agent_id}/{path}`, listed a page at a time, and a URI template for the rest.
//!
//! Over stdio, listing covers every agent's files: the store belongs to the person running
//! the client. Over HTTP it covers the caller's key's agents, filtered in the query, so every
//! page is full. Reading goes through `read_file`, part after part, so the guest's rules apply and
//! a resource is the whole current version however long it is.

use crate::service::{CallError, Service};
use scratchpad_guest::names::quoted;
use serde_json::{Map, Value, json};

/// The URI scheme.
pub const SCHEME: &str = "scratchpad://";

/// The RFC 6570 template of a file's URI (`+` keeps the path's slashes).
pub const TEMPLATE: &str = "scratchpad://{agent_id}/{+path}";

/// Resources in one page of `resources/list`.
pub const PAGE: u32 = 100;

/// One listed resource.
#[derive(Debug, PartialEq, Eq)]
pub struct Listed {
    /// Its URI.
    pub uri: String,
    /// The file's path.
    pub path: String,
    /// Its agent.
    pub agent: String,
    /// Its current version.
    pub version: u64,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Why a resource request was refused.
#[derive(Debug, thiserror::Error)]
pub enum ResourceError {
    /// The URI or cursor is not one of ours.
    #[error("{0}")]
    Invalid(String),
    /// The store or the tool failed (the file may not exist).
    #[error(transparent)]
    Call(#[from] CallError),
}

/// A file's URI.
pub fn uri(agent: &str, path: &str) -> String {
    format!("{SCHEME}{agent}/{path}")
}

/// The (agent, path) a URI names. Agent ids hold no `/`, so the first one ends it.
pub fn parse(uri: &str) -> Result<(&str, &str), ResourceError> {
    uri.strip_prefix(SCHEME)
        .and_then(|rest| rest.split_once('/'))
        .filter(|(agent, path)| !agent.is_empty() && !path.is_empty())
        .ok_or_else(|| {
            ResourceError::Invalid(format!(
                "resource URIs look like {TEMPLATE} (got {})",
                quoted(uri)
            ))
        })
}

/// The (agent, path) a listing's `cursor` continues after: the last URI of a page before.
fn after(cursor: &str) -> Result<(&str, &str), ResourceError> {
    parse(cursor).map_err(|_| {
        ResourceError::Invalid(format!(
            "the cursor {} is not one this server gave (a listing's cursor is the last URI of the page before): list again without one",
            quoted(cursor)
        ))
    })
}

/// A page of resources of `agents` (every agent when none) after `cursor` (the last URI of
/// the previous page), and the next cursor if there may be more.
pub fn list(
    service: &Service,
    agents: Option<&[String]>,
    cursor: Option<&str>,
) -> Result<(Vec<Listed>, Option<String>), ResourceError> {
    let after = cursor.map(after).transpose()?;
    let files = service.all_files(agents, after, PAGE)?;
    let listed: Vec<Listed> = files
        .into_iter()
        .map(|(agent, f)| Listed {
            uri: uri(&agent, &f.path),
            path: f.path,
            agent,
            version: f.version,
            bytes: f.bytes,
        })
        .collect();
    let next = (listed.len() == PAGE as usize)
        .then(|| listed.last().map(|l| l.uri.clone()))
        .flatten();
    Ok((listed, next))
}

/// The whole current content of the file `uri` names, read part after part.
pub fn read(service: &Service, uri: &str) -> Result<String, ResourceError> {
    let (agent, path) = parse(uri)?;
    let mut content = String::new();
    let mut cursor = Map::new();
    loop {
        let mut args = cursor.clone();
        args.insert("agent_id".into(), json!(agent));
        args.insert("path".into(), json!(path));
        let part = service.call("read_file", args)?;
        content.push_str(part["content"].as_str().unwrap_or_default());
        match part.get("next_line").and_then(Value::as_u64) {
            Some(next) => {
                cursor = Map::new();
                cursor.insert("offset".into(), json!(next));
                if let Some(column) = part.get("next_column").and_then(Value::as_u64) {
                    cursor.insert("column".into(), json!(column));
                }
            }
            None => return Ok(content),
        }
    }
}

/// A MIME type from the file's extension, for clients that render by it.
pub fn mime_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("md" | "markdown") => "text/markdown",
        Some("json") => "application/json",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        _ => "text/plain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_bad_ones_are_named() {
        assert_eq!(
            parse(&uri("a-1", "notes/plan.md")).unwrap(),
            ("a-1", "notes/plan.md")
        );
        for bad in [
            "file:///etc/passwd",
            "scratchpad://a",
            "scratchpad:///x",
            "scratchpad://a/",
        ] {
            let e = parse(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("resource URIs look like scratchpad://{agent_id}/{+path}"),
                "{e}"
            );
        }
        assert_eq!(
            after("garbage!!").unwrap_err().to_string(),
            "the cursor \"garbage!!\" is not one this server gave (a listing's cursor is the last URI of the page before): list again without one"
        );
        assert_eq!(after(&uri("a", "b/c")).unwrap(), ("a", "b/c"));
        // A long value is quoted cut short, not echoed whole.
        let long = format!("x{}", "y".repeat(5_000));
        assert!(
            parse(&long)
                .unwrap_err()
                .to_string()
                .ends_with("... (5001 characters))")
        );
        assert_eq!(mime_type("x/notes.md"), "text/markdown");
        assert_eq!(mime_type("Makefile"), "text/plain");
    }
}
