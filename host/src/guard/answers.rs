//! What the host checks of a guest's answer before it commits the call: the answer is about
//! what was asked for. A guest that answers about another path, outside the prefix asked
//! for, with more hits than allowed or with cursors that go backwards is refused, and its
//! call rolled back, whatever it wrote.
//!
//! The checks read the answer as the JSON text the client will get (the guest's `json`
//! export encodes it), and the arguments as the caller sent them; a missing optional
//! argument means its default. The text is read once, into [`Fields`]: only the fields a
//! check needs, borrowed from the text, the rest (file contents, log entries) skipped
//! unread. Building a whole `serde_json::Value` instead cost a read of 100 log entries a
//! third of its time. Reading it also proves the text is one JSON object, so a transport
//! may send it as the call's structured content unchanged.

use scratchpad_guest::json::ToolName;
use scratchpad_guest::limits::MAX_HITS;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use std::borrow::Cow;

/// Why an answer is refused, in a few words for the caller and the log.
type Refusal = String;

/// The fields of an answer that some check reads. Every tool's answer uses these names with
/// these shapes; any other field is skipped, and a field a tool does not have is empty.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields<'a> {
    /// The one file or log the answer is about.
    #[serde(borrow)]
    path: Option<Cow<'a, str>>,
    /// `file_history`'s versions.
    versions: Vec<Version>,
    /// `read_log`'s entries.
    entries: Vec<Entry>,
    /// `list_files`' and `read_files`' files.
    #[serde(borrow)]
    files: Vec<Named<'a>>,
    /// `search`'s hits.
    #[serde(borrow)]
    hits: Vec<Named<'a>>,
    /// `read_files`' files left out of the budget.
    #[serde(borrow)]
    left_out: Vec<Named<'a>>,
    /// `read_files`' paths with no file.
    #[serde(borrow)]
    missing: Vec<Cow<'a, str>>,
    /// `read_file`'s content, when it has one (not read).
    content: Option<IgnoredAny>,
    /// The line `read_file`'s content starts at.
    first_line: Option<u64>,
    /// `read_file`'s diff, when it has one (not read).
    diff: Option<IgnoredAny>,
    /// The version `read_file`'s diff starts at.
    since_version: Option<u64>,
}

/// An item of a list that names a path.
#[derive(Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
}

/// A version of `file_history`.
#[derive(Deserialize)]
struct Version {
    version: u64,
}

/// An entry of `read_log`.
#[derive(Deserialize)]
struct Entry {
    id: u64,
}

/// Checks the answer of `tool` called with `args`, as the JSON text `answer`.
pub fn check(tool: ToolName, args: &Map<String, Value>, answer: &str) -> Result<(), Refusal> {
    // A struct would read from a JSON array too: the answer must be an object.
    if !answer.trim_start().starts_with('{') {
        return Err("an answer that is not a JSON object".into());
    }
    let answer: Fields = serde_json::from_str(answer).map_err(|e| {
        if e.is_data() {
            format!("an answer whose fields are not the tool's ({e})")
        } else {
            "an answer that is not JSON".into()
        }
    })?;
    let answer = &answer;
    match tool {
        ToolName::WriteFile
        | ToolName::EditFile
        | ToolName::AppendLog
        | ToolName::ForgetLog
        | ToolName::DeleteFile
        | ToolName::SummarizeFile => same_path(args, answer),
        ToolName::FileHistory => {
            same_path(args, answer)?;
            rising(answer.versions.iter().map(|v| v.version), 0, "versions")
        }
        ToolName::ReadFile => {
            same_path(args, answer)?;
            read_file(args, answer)
        }
        ToolName::ReadLog => {
            same_path(args, answer)?;
            let after = number(args, "since_entry").unwrap_or(0);
            rising(answer.entries.iter().map(|e| e.id), after, "log entry ids")
        }
        ToolName::ListFiles => under_prefix(args, paths(&answer.files)),
        ToolName::Search => {
            under_prefix(args, paths(&answer.hits))?;
            let hits = answer.hits.len() as u64;
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
fn same_path(args: &Map<String, Value>, answer: &Fields) -> Result<(), Refusal> {
    let asked = text(args, "path").unwrap_or_default();
    match answer.path.as_deref() {
        Some(answered) if answered == asked => Ok(()),
        Some(answered) => Err(format!(
            "asked about path {asked:?}, answered about {answered:?}"
        )),
        None => Err(format!("asked about path {asked:?}, answered about none")),
    }
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

/// The paths the items of a list name.
fn paths<'a>(items: &'a [Named]) -> impl Iterator<Item = &'a str> {
    items.iter().map(|item| item.path.as_ref())
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
fn read_file(args: &Map<String, Value>, answer: &Fields) -> Result<(), Refusal> {
    if answer.content.is_some() {
        let asked = number(args, "offset").unwrap_or(1);
        let first = answer.first_line.unwrap_or(1);
        if first != asked {
            return Err(format!(
                "asked for lines from {asked}, answered from {first}"
            ));
        }
    }
    if answer.diff.is_some() {
        let asked = number(args, "since_version");
        if answer.since_version != asked {
            let version =
                |v: Option<u64>| v.map_or("no version".to_owned(), |v| format!("version {v}"));
            return Err(format!(
                "asked for a diff since {}, answered since {}",
                version(asked),
                version(answer.since_version)
            ));
        }
    }
    Ok(())
}

/// Only paths asked for (by name, or under the prefix asked for).
fn read_files(args: &Map<String, Value>, answer: &Fields) -> Result<(), Refusal> {
    let named: Option<Vec<&str>> = args
        .get("paths")
        .and_then(Value::as_array)
        .map(|paths| paths.iter().filter_map(Value::as_str).collect());
    let prefix = text(args, "prefix").unwrap_or_default();
    let asked = |path: &str| match &named {
        Some(paths) => paths.contains(&path),
        None => path.starts_with(prefix),
    };
    let stray = paths(&answer.files)
        .chain(paths(&answer.left_out))
        .chain(answer.missing.iter().map(AsRef::as_ref))
        .find(|path| !asked(path));
    match stray {
        Some(stray) => Err(format!("answered about {stray:?}, not asked for")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("arguments must be an object, not {other}"),
        }
    }

    fn check_of(tool: ToolName, asked: Value, answer: Value) -> Result<(), Refusal> {
        check(tool, &args(asked), &answer.to_string())
    }

    #[test]
    fn an_answer_about_the_path_asked_for_passes_and_any_other_is_refused() {
        let asked = json!({ "agent_id": "a", "path": "notes/a.md" });
        let ok = json!({ "path": "notes/a.md", "version": 2, "content": "x\"y" });
        assert_eq!(check_of(ToolName::WriteFile, asked.clone(), ok), Ok(()));
        // The same path written with an escape is the same path.
        let escaped = r#"{"path":"notes\/a.md","version":2}"#;
        assert_eq!(
            check(ToolName::WriteFile, &args(asked.clone()), escaped),
            Ok(())
        );
        assert_eq!(
            check_of(ToolName::DeleteFile, asked.clone(), json!({ "path": "b" })),
            Err(r#"asked about path "notes/a.md", answered about "b""#.into())
        );
        assert_eq!(
            check_of(ToolName::AppendLog, asked, json!({ "entry_id": 1 })),
            Err(r#"asked about path "notes/a.md", answered about none"#.into())
        );
    }

    #[test]
    fn an_answer_that_is_not_one_json_object_of_the_tools_fields_is_refused() {
        let asked = args(json!({ "agent_id": "a", "prefix": "" }));
        let refusal = |text: &str| check(ToolName::ListFiles, &asked, text).unwrap_err();
        assert_eq!(
            refusal(r#"[{"path":"x"}]"#),
            "an answer that is not a JSON object"
        );
        assert_eq!(refusal(r#""files""#), "an answer that is not a JSON object");
        assert_eq!(refusal(r#"{"files":[]"#), "an answer that is not JSON");
        assert_eq!(refusal(r#"{"files":[]} {}"#), "an answer that is not JSON");
        let e = refusal(r#"{"files":[{"path":5}]}"#);
        assert!(
            e.starts_with("an answer whose fields are not the tool's (invalid type: integer `5`"),
            "{e}"
        );
        let e = refusal(r#"{"files":[{"version":1}]}"#);
        assert!(e.contains("missing field `path`"), "{e}");
    }

    #[test]
    fn versions_and_log_entries_must_rise_from_where_they_were_asked() {
        let history = json!({ "agent_id": "a", "path": "f" });
        let versions = |v: Value| json!({ "path": "f", "versions": v });
        let rising_versions = versions(json!([{ "version": 1 }, { "version": 3 }]));
        assert_eq!(
            check_of(ToolName::FileHistory, history.clone(), rising_versions),
            Ok(())
        );
        assert_eq!(
            check_of(
                ToolName::FileHistory,
                history,
                versions(json!([{ "version": 2 }, { "version": 2 }]))
            ),
            Err("versions out of order: 2 after 2".into())
        );
        let log = json!({ "agent_id": "a", "path": "f", "since_entry": 5 });
        let entries = |ids: &[u64]| {
            let entries: Vec<Value> = ids
                .iter()
                .map(|id| json!({ "id": id, "entry": {"id": 0} }))
                .collect();
            json!({ "path": "f", "entries": entries })
        };
        assert_eq!(
            check_of(ToolName::ReadLog, log.clone(), entries(&[6, 9])),
            Ok(())
        );
        assert_eq!(
            check_of(ToolName::ReadLog, log, entries(&[5])),
            Err("log entry ids out of order: 5 after 5".into())
        );
    }

    #[test]
    fn listings_and_hits_stay_under_the_prefix_and_hits_within_the_limit() {
        let asked = json!({ "agent_id": "a", "prefix": "a/", "limit": 1 });
        let listed = json!({ "files": [{ "path": "a/1" }, { "path": "b/2" }] });
        assert_eq!(
            check_of(ToolName::ListFiles, asked.clone(), listed),
            Err(r#"answered about "b/2" for prefix "a/""#.into())
        );
        let one = json!({ "hits": [{ "path": "a/1", "lines": [] }] });
        assert_eq!(check_of(ToolName::Search, asked.clone(), one), Ok(()));
        let two = json!({ "hits": [{ "path": "a/1" }, { "path": "a/2" }] });
        assert_eq!(
            check_of(ToolName::Search, asked, two),
            Err("2 hits, asked for at most 1".into())
        );
    }

    #[test]
    fn read_file_answers_from_the_line_and_version_asked_for() {
        let asked = json!({ "agent_id": "a", "path": "f", "offset": 3, "since_version": 2 });
        let part = |first: u64| json!({ "path": "f", "content": "c", "first_line": first });
        assert_eq!(check_of(ToolName::ReadFile, asked.clone(), part(3)), Ok(()));
        assert_eq!(
            check_of(ToolName::ReadFile, asked.clone(), part(1)),
            Err("asked for lines from 3, answered from 1".into())
        );
        let diff = |since: u64| json!({ "path": "f", "diff": [{ "op": "skip", "lines": 1 }], "since_version": since });
        assert_eq!(check_of(ToolName::ReadFile, asked.clone(), diff(2)), Ok(()));
        assert_eq!(
            check_of(ToolName::ReadFile, asked, diff(1)),
            Err("asked for a diff since version 2, answered since version 1".into())
        );
    }

    #[test]
    fn read_files_answers_only_about_the_paths_asked_for() {
        let named = json!({ "agent_id": "a", "paths": ["x", "y"] });
        let answer = |missing: &str| json!({ "files": [{ "path": "x", "content": "" }], "left_out": [], "missing": [missing] });
        assert_eq!(
            check_of(ToolName::ReadFiles, named.clone(), answer("y")),
            Ok(())
        );
        assert_eq!(
            check_of(ToolName::ReadFiles, named, answer("z")),
            Err(r#"answered about "z", not asked for"#.into())
        );
        let under = json!({ "agent_id": "a", "prefix": "p/" });
        let left_out =
            json!({ "files": [], "left_out": [{ "path": "q/1", "tokens": 9 }], "missing": [] });
        assert_eq!(
            check_of(ToolName::ReadFiles, under, left_out),
            Err(r#"answered about "q/1", not asked for"#.into())
        );
    }
}
