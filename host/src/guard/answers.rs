//! What the host checks of a guest's answer before it commits the call: the answer is about
//! what was asked for. A guest that answers about another path, outside the prefix asked
//! for, with more hits than allowed or with cursors that go backwards is refused, and its
//! call rolled back, whatever it wrote.
//!
//! The checks read the answer as the JSON the client will get (the guest's `json` export
//! encodes it), and the arguments as the caller sent them; a missing optional argument
//! means its default.

use scratchpad_guest::json::ToolName;
use scratchpad_guest::limits::MAX_HITS;
use serde_json::{Map, Value};

/// Why an answer is refused, in a few words for the caller and the log.
type Refusal = String;

/// Checks the answer of `tool` called with `args`.
pub fn check(tool: ToolName, args: &Map<String, Value>, answer: &Value) -> Result<(), Refusal> {
    match tool {
        ToolName::WriteFile
        | ToolName::EditFile
        | ToolName::AppendLog
        | ToolName::ForgetLog
        | ToolName::DeleteFile
        | ToolName::SummarizeFile => same_path(args, answer),
        ToolName::FileHistory => {
            same_path(args, answer)?;
            rising(numbers(answer, "versions", "version"), 0, "versions")
        }
        ToolName::ReadFile => {
            same_path(args, answer)?;
            read_file(args, answer)
        }
        ToolName::ReadLog => {
            same_path(args, answer)?;
            let after = number(args, "since_entry").unwrap_or(0);
            rising(numbers(answer, "entries", "id"), after, "log entry ids")
        }
        ToolName::ListFiles => under_prefix(args, paths(answer, "files")),
        ToolName::Search => {
            under_prefix(args, paths(answer, "hits"))?;
            let hits = items(answer, "hits").len() as u64;
            let most = number(args, "limit").unwrap_or(MAX_HITS).min(MAX_HITS);
            if hits > most {
                return Err(format!("{hits} hits, asked for at most {most}"));
            }
            Ok(())
        }
        ToolName::ReadFiles => read_files(args, answer),
        ToolName::GetUsageStats => Ok(()),
    }
}

fn text<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

fn number(map: &Map<String, Value>, key: &str) -> Option<u64> {
    map.get(key).and_then(Value::as_u64)
}

/// The answer is about the path asked for.
fn same_path(args: &Map<String, Value>, answer: &Value) -> Result<(), Refusal> {
    let asked = text(args, "path").unwrap_or_default();
    let answered = &answer["path"];
    if answered.as_str() == Some(asked) {
        return Ok(());
    }
    // `answered` is shown as JSON: quoted, or `null` when the answer names no path.
    Err(format!(
        "asked about path {asked:?}, answered about {answered}"
    ))
}

/// The items of the list `list` of the answer (none when it has no such list).
fn items<'a>(answer: &'a Value, list: &str) -> &'a [Value] {
    answer[list]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The numbers under `field` of each object in the list `list`.
fn numbers<'a>(answer: &'a Value, list: &str, field: &'a str) -> impl Iterator<Item = u64> + 'a {
    items(answer, list)
        .iter()
        .map(move |item| item[field].as_u64().unwrap_or(0))
}

/// Each number above the one before, the first above `after`.
fn rising(mut found: impl Iterator<Item = u64>, after: u64, what: &str) -> Result<(), Refusal> {
    found.try_fold(after, |previous, n| {
        if n > previous {
            Ok(n)
        } else {
            Err(format!("{what} out of order: {n} after {previous}"))
        }
    })?;
    Ok(())
}

/// The `path` of each object in the list `list`.
fn paths<'a>(answer: &'a Value, list: &str) -> impl Iterator<Item = &'a str> {
    items(answer, list)
        .iter()
        .map(|item| item["path"].as_str().unwrap_or_default())
}

/// Every path begins with the prefix asked for.
fn under_prefix<'a>(
    args: &Map<String, Value>,
    mut found: impl Iterator<Item = &'a str>,
) -> Result<(), Refusal> {
    let prefix = text(args, "prefix").unwrap_or_default();
    match found.find(|path| !path.starts_with(prefix)) {
        Some(stray) => Err(format!("answered about {stray:?} for prefix {prefix:?}")),
        None => Ok(()),
    }
}

/// A part of the content starts at the line asked for; a diff starts at the version asked
/// for.
fn read_file(args: &Map<String, Value>, answer: &Value) -> Result<(), Refusal> {
    if answer.get("content").is_some() {
        let asked = number(args, "offset").unwrap_or(1);
        let first = answer["first_line"].as_u64().unwrap_or(1);
        if first != asked {
            return Err(format!(
                "asked for lines from {asked}, answered from {first}"
            ));
        }
    }
    if answer.get("diff").is_some() {
        let asked = number(args, "since_version");
        let since = answer["since_version"].as_u64();
        if since != asked {
            return Err(format!(
                "asked for a diff since {asked:?}, answered since {since:?}"
            ));
        }
    }
    Ok(())
}

/// Only paths asked for (by name, or under the prefix asked for).
fn read_files(args: &Map<String, Value>, answer: &Value) -> Result<(), Refusal> {
    let named: Option<Vec<&str>> = args
        .get("paths")
        .and_then(Value::as_array)
        .map(|paths| paths.iter().filter_map(Value::as_str).collect());
    let prefix = text(args, "prefix").unwrap_or_default();
    let asked = |path: &str| match &named {
        Some(paths) => paths.contains(&path),
        None => path.starts_with(prefix),
    };
    let missing = items(answer, "missing");
    let stray = paths(answer, "files")
        .chain(paths(answer, "left_out"))
        .chain(missing.iter().map(|m| m.as_str().unwrap_or_default()))
        .find(|path| !asked(path));
    match stray {
        Some(stray) => Err(format!("answered about {stray:?}, not asked for")),
        None => Ok(()),
    }
}
