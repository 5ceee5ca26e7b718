//! The tools as MCP lists them: names, descriptions (the WIT's doc comments, see
//! `build.rs`), argument schemas (schemars, made as small as they can be) and annotations.

use super::args::{
    AgentArgs, AppendLogArgs, DeleteFileArgs, EditFileArgs, ForgetLogArgs, ListFilesArgs, PathArgs,
    ReadFileArgs, ReadFilesArgs, ReadLogArgs, SearchArgs, WriteFileArgs,
};
#[cfg(test)]
use crate::limits::MAX_HITS;
use crate::limits::QUOTED_IN_DOCS;
use schemars::JsonSchema;
use serde_json::{Map, Value};

/// A tool's words, from its WIT doc comments.
pub struct ToolDoc {
    /// The MCP tool name.
    pub name: &'static str,
    /// The function's doc comment.
    pub description: &'static str,
    /// (argument, doc comment) for each documented field of its request record.
    pub args: &'static [(&'static str, &'static str)],
}

include!(concat!(env!("OUT_DIR"), "/tool_docs.rs"));

/// The tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolName {
    /// `write_file`
    WriteFile,
    /// `edit_file`
    EditFile,
    /// `read_file`
    ReadFile,
    /// `file_history`
    FileHistory,
    /// `read_files`
    ReadFiles,
    /// `search`
    Search,
    /// `append_log`
    AppendLog,
    /// `read_log`
    ReadLog,
    /// `forget_log`
    ForgetLog,
    /// `list_files`
    ListFiles,
    /// `delete_file`
    DeleteFile,
    /// `summarize_file`
    SummarizeFile,
    /// `get_usage_stats`
    GetUsageStats,
}

/// How MCP clients should treat a tool: the annotations they show and ask permission by.
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    /// Changes nothing the agent can see.
    pub read_only: bool,
    /// May remove data.
    pub destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    pub idempotent: bool,
    /// Talks to something outside this machine.
    pub open_world: bool,
}

impl ToolName {
    /// Every tool, in the order `tools/list` shows them.
    pub const ALL: [ToolName; 13] = [
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::ReadFile,
        ToolName::ReadFiles,
        ToolName::FileHistory,
        ToolName::Search,
        ToolName::AppendLog,
        ToolName::ReadLog,
        ToolName::ForgetLog,
        ToolName::ListFiles,
        ToolName::DeleteFile,
        ToolName::SummarizeFile,
        ToolName::GetUsageStats,
    ];

    /// The MCP name.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::WriteFile => "write_file",
            ToolName::EditFile => "edit_file",
            ToolName::ReadFile => "read_file",
            ToolName::FileHistory => "file_history",
            ToolName::Search => "search",
            ToolName::ReadFiles => "read_files",
            ToolName::AppendLog => "append_log",
            ToolName::ReadLog => "read_log",
            ToolName::ForgetLog => "forget_log",
            ToolName::ListFiles => "list_files",
            ToolName::DeleteFile => "delete_file",
            ToolName::SummarizeFile => "summarize_file",
            ToolName::GetUsageStats => "get_usage_stats",
        }
    }

    /// The tool of that MCP name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// The description (the WIT doc comment) and the argument descriptions.
    pub fn docs(self) -> (&'static str, &'static [(&'static str, &'static str)]) {
        TOOL_DOCS
            .iter()
            .find(|doc| doc.name == self.as_str())
            .map(|doc| (doc.description, doc.args))
            .unwrap_or(("", &[]))
    }

    /// How clients should treat it.
    pub fn hints(self) -> Hints {
        let (read_only, destructive, idempotent, open_world) = match self {
            ToolName::WriteFile => (false, false, true, false),
            ToolName::AppendLog | ToolName::EditFile => (false, false, false, false),
            ToolName::DeleteFile | ToolName::ForgetLog => (false, true, true, false),
            ToolName::SummarizeFile => (true, false, true, true),
            ToolName::ReadFile
            | ToolName::FileHistory
            | ToolName::ReadFiles
            | ToolName::Search
            | ToolName::ReadLog
            | ToolName::ListFiles => (true, false, true, false),
            ToolName::GetUsageStats => (true, false, true, false),
        };
        Hints {
            read_only,
            destructive,
            idempotent,
            open_world,
        }
    }

    /// The JSON Schema of its arguments, with the WIT's words for each argument.
    pub fn input_schema(self) -> Map<String, Value> {
        let mut schema = match self {
            ToolName::WriteFile => schema::<WriteFileArgs>(),
            ToolName::EditFile => schema::<EditFileArgs>(),
            ToolName::Search => schema::<SearchArgs>(),
            ToolName::ReadFiles => schema::<ReadFilesArgs>(),
            ToolName::ReadFile => schema::<ReadFileArgs>(),
            ToolName::AppendLog => schema::<AppendLogArgs>(),
            ToolName::ReadLog => schema::<ReadLogArgs>(),
            ToolName::ForgetLog => schema::<ForgetLogArgs>(),
            ToolName::ListFiles => schema::<ListFilesArgs>(),
            ToolName::DeleteFile => schema::<DeleteFileArgs>(),
            ToolName::FileHistory | ToolName::SummarizeFile => schema::<PathArgs>(),
            ToolName::GetUsageStats => schema::<AgentArgs>(),
        };
        // The tool's description says what the arguments are for; the struct's doc comment
        // would only repeat it.
        schema.remove("description");
        let (_, arg_docs) = self.docs();
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for (arg, doc) in arg_docs.iter().chain(COMMON_ARG_DOCS) {
                let Some(property) = properties.get_mut(*arg) else {
                    continue;
                };
                // Any value (`true`) takes a description as the empty schema, which means the
                // same.
                if *property == Value::Bool(true) {
                    *property = Value::Object(Map::new());
                }
                if let Value::Object(property) = property {
                    property
                        .entry("description")
                        .or_insert_with(|| Value::String(with_numbers(doc)));
                }
            }
        }
        schema
    }
}

/// Keywords dropped from every schema: schemars' `format` ("uint64"), `minimum` for
/// unsigned numbers, `additionalProperties: false` and `default: null`. No client needs
/// them to call a tool right, the server checks every argument itself (unknown ones are
/// refused by name), and each costs tokens in every session's `tools/list`.
const DROPPED_KEYWORDS: [&str; 4] = ["format", "minimum", "additionalProperties", "default"];

/// Makes a generated schema as small as it can be while saying the same to a caller:
/// drops [`DROPPED_KEYWORDS`], and turns an optional argument's `["integer", "null"]` into
/// `"integer"` (it is optional because it is not `required`). A keyword is dropped only
/// where its value is not a schema, so a property with one of those names stays.
fn compact(schema: &mut Map<String, Value>) {
    for keyword in DROPPED_KEYWORDS {
        if schema
            .get(keyword)
            .is_some_and(|v| !v.is_object() && (keyword != "default" || v.is_null()))
        {
            schema.remove(keyword);
        }
    }
    if let Some(Value::Array(types)) = schema.get("type")
        && types.len() == 2
        && types.iter().any(|t| t == "null")
        && let Some(one) = types.iter().find(|t| *t != "null").cloned()
    {
        schema.insert("type".into(), one);
    }
    for value in schema.values_mut() {
        match value {
            Value::Object(inner) => compact(inner),
            Value::Array(items) => items.iter_mut().for_each(|item| {
                if let Value::Object(inner) = item {
                    compact(inner);
                }
            }),
            _ => {}
        }
    }
}

/// A doc text with each `{NAME}` of [`QUOTED_IN_DOCS`] written as the number it stands for
/// (thousands set apart by commas, as the docs write numbers).
fn with_numbers(text: &str) -> String {
    QUOTED_IN_DOCS
        .iter()
        .fold(text.to_owned(), |text, (name, value)| {
            text.replace(&format!("{{{name}}}"), &grouped(*value))
        })
}

/// `value` with its thousands set apart by commas: 8000 as "8,000", as the docs write it.
pub fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Descriptions of the arguments every tool shares. A path needs none; the naming rules
/// are in the server's instructions and in every error that breaks one.
const COMMON_ARG_DOCS: &[(&str, &str)] = &[("agent_id", "Your namespace.")];

fn schema<T: JsonSchema>() -> Map<String, Value> {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    match generator.into_root_schema_for::<T>().to_value() {
        Value::Object(mut map) => {
            map.remove("$schema");
            map.remove("title");
            compact(&mut map);
            map
        }
        _ => Map::new(),
    }
}

/// The tool's entry in `tools/list`: name, description, input schema and the annotations
/// that differ from MCP's defaults (which assume a tool may write, destroy and reach the
/// outside world), and whether a writing tool destroys.
pub fn describe(tool: ToolName) -> Value {
    let hints = tool.hints();
    let mut annotations = Map::new();
    if hints.read_only {
        annotations.insert("readOnlyHint".into(), true.into());
    } else {
        // Said either way: a client asks before a destructive call by it.
        annotations.insert("destructiveHint".into(), hints.destructive.into());
        if hints.idempotent {
            annotations.insert("idempotentHint".into(), true.into());
        }
    }
    if !hints.open_world {
        annotations.insert("openWorldHint".into(), false.into());
    }
    let mut entry = Map::new();
    entry.insert("name".into(), tool.as_str().into());
    entry.insert("description".into(), with_numbers(tool.docs().0).into());
    entry.insert("inputSchema".into(), Value::Object(tool.input_schema()));
    entry.insert("annotations".into(), Value::Object(annotations));
    Value::Object(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `{NAME}` in the WIT's docs is written out, and with this build's number: the
    /// tool list never shows a placeholder, nor a number the limits no longer hold.
    #[test]
    fn tool_docs_quote_the_limits_this_build_enforces() {
        // A `{NAME}` left: a brace, capitals and underscores, a brace.
        let placeholder = |text: &str| {
            text.split('{').skip(1).any(|after| {
                after.split_once('}').is_some_and(|(name, _)| {
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                })
            })
        };
        let listed = super::super::list_tools();
        assert!(!placeholder(&listed), "{listed}");
        for tool in ToolName::ALL {
            let (description, args) = tool.docs();
            assert!(!placeholder(&with_numbers(description)), "{description}");
            for (_, doc) in args {
                assert!(!placeholder(&with_numbers(doc)), "{doc}");
            }
        }
        let search = describe(ToolName::Search).to_string();
        assert!(search.contains(&format!("at most {MAX_HITS}")), "{search}");
        assert_eq!(grouped(8_000), "8,000");
        assert_eq!(grouped(200), "200");
        assert_eq!(grouped(1_234_567), "1,234,567");
        let summarize = describe(ToolName::SummarizeFile).to_string();
        assert!(summarize.contains("over 8,000 characters"), "{summarize}");
    }
}
