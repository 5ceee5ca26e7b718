//! Why a tool's arguments do not decode, in the tools' words: they are no JSON object, or
//! an argument is of the wrong kind.
//!
//! Serde says what went wrong in its own terms and not where: `invalid type: integer `5`,
//! expected a string` does not say which of a tool's string arguments was given the number,
//! and `expected u64` names a Rust type. A caller (often a model) needs the argument, what
//! it takes and what it got, as every other rule of the tools says it:
//! `since_version must be a whole number from 0 to 18446744073709551615 (got 1.5)`.
//! The server's config file is refused in the same words: [`misfit`] is the one reading of
//! serde's.

use crate::names::quoted;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::{Path, Segment};

/// Decodes `value`, the arguments, into `T`, or says why not. They must be one JSON object
/// of named arguments: serde would take an array for the arguments in their order, and name
/// its own type for any other value.
pub fn decode<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    if !value.is_object() {
        return Err(format!(
            "the arguments must be one JSON object, of named arguments (got {})",
            kind(&value)
        ));
    }
    // Serde takes the value apart as it decodes; the refusal quotes what was given.
    let given = value.clone();
    serde_path_to_error::deserialize(value).map_err(|e| {
        let why = e.inner().to_string();
        // An unknown field's refusal names it, and the fields there are, already.
        if why.starts_with("unknown field ")
            || matches!(e.path().iter().next(), None | Some(Segment::Unknown))
        {
            return why;
        }
        let field = e.path().to_string();
        match (misfit(&why, "an object"), at(&given, e.path())) {
            (Some(m), Some(got)) => format!("{field} must be {} (got {})", m.takes, describe(got)),
            _ => format!("{field}: {why}"),
        }
    })
}

/// A value of the wrong kind, as serde's refusal words it: what was given and what the
/// place takes.
#[derive(Debug, PartialEq, Eq)]
pub struct Misfit<'a> {
    /// What was given, in serde's words (`integer \`-1\``).
    pub got: &'a str,
    /// What the place takes, said plainly (`a whole number from 0 to 4294967295`, not `u32`).
    pub takes: &'a str,
}

/// Reads serde's refusal of a value of the wrong kind (`invalid type: …, expected …` or
/// `invalid value: …`); `None` for any other refusal (a missing or unknown field, a rule's
/// own words). `map` is the format's word for a map (`an object` in JSON, `a table` in
/// TOML), which serde may call by the name of a type of the code. Every refusal in serde's
/// words, of tool arguments or of the config file, is said plainly by this one reading.
pub fn misfit<'a>(why: &'a str, map: &'a str) -> Option<Misfit<'a>> {
    let rest = why
        .strip_prefix("invalid type: ")
        .or_else(|| why.strip_prefix("invalid value: "))?;
    let (got, takes) = rest.rsplit_once(", expected ")?;
    let takes = match takes {
        "u64" => "a whole number from 0 to 18446744073709551615",
        "u32" => "a whole number from 0 to 4294967295",
        "f64" => "a number",
        "a boolean" => "true or false",
        "a sequence" => "an array",
        "a string" | "path string" => "a string",
        "a map" => map,
        struct_name if struct_name.starts_with("struct ") => map,
        other => other,
    };
    Some(Misfit { got, takes })
}

/// The value at `path` in the arguments.
fn at<'v>(arguments: &'v Value, path: &Path) -> Option<&'v Value> {
    path.iter()
        .try_fold(arguments, |value, segment| match segment {
            Segment::Map { key } => value.get(key),
            Segment::Seq { index } => value.get(index),
            Segment::Enum { .. } | Segment::Unknown => None,
        })
}

/// A value's kind, in words.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "true or false",
        Value::Null => "null",
    }
}

/// A value given, as a refusal quotes it: numbers, `true`, `false` and `null` as written,
/// a string quoted, an array or an object by its kind.
fn describe(value: &Value) -> String {
    match value {
        Value::String(s) => quoted(s),
        Value::Array(_) | Value::Object(_) => kind(value).into(),
        Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::args::{EditFileArgs, ReadFileArgs, WriteFileArgs};
    use serde_json::json;

    fn refusal<T: DeserializeOwned + std::fmt::Debug>(arguments: Value) -> String {
        decode::<T>(arguments).unwrap_err()
    }

    /// Each wrong kind of value is refused naming the argument, what it takes and what was
    /// given: never serde's `u64` or its unnamed `invalid type`.
    #[test]
    fn a_value_of_the_wrong_kind_names_its_argument_and_what_it_takes() {
        let read = |field: &str, value: Value| {
            let mut a = json!({"agent_id": "a", "path": "f"});
            a[field] = value;
            refusal::<ReadFileArgs>(a)
        };
        let whole = "a whole number from 0 to 18446744073709551615";
        for (value, got) in [
            (json!(1.5), "1.5"),
            (json!(-1), "-1"),
            (json!(1.18e21), "1.18e+21"),
            (json!("1"), "\"1\""),
            (json!(true), "true"),
            (json!([1]), "an array"),
            (json!({"v": 1}), "an object"),
        ] {
            assert_eq!(
                read("since_version", value),
                format!("since_version must be {whole} (got {got})")
            );
        }
        assert_eq!(
            read("agent_id", json!(5)),
            "agent_id must be a string (got 5)"
        );
        assert_eq!(
            read("agent_id", json!(null)),
            "agent_id must be a string (got null)"
        );
        assert_eq!(
            read("full_diff", json!("yes")),
            "full_diff must be true or false (got \"yes\")"
        );
        let long = "x".repeat(500);
        assert_eq!(
            read("full_diff", json!(long)),
            format!("full_diff must be true or false (got {})", quoted(&long))
        );
        let write = json!({"agent_id": "a", "path": "f", "content": {"text": "x"}});
        assert_eq!(
            refusal::<WriteFileArgs>(write),
            "content must be a string (got an object)"
        );
    }

    /// Serde's words for each kind a tool argument or a setting takes are read, and no
    /// other refusal is taken for one.
    #[test]
    fn serdes_words_are_read_for_what_was_given_and_what_is_taken() {
        assert_eq!(
            misfit(
                "invalid type: integer `5`, expected struct Store",
                "a table"
            ),
            Some(Misfit {
                got: "integer `5`",
                takes: "a table"
            })
        );
        assert_eq!(
            misfit("invalid value: integer `-1`, expected u32", "an object"),
            Some(Misfit {
                got: "integer `-1`",
                takes: "a whole number from 0 to 4294967295"
            })
        );
        assert_eq!(
            misfit(
                "invalid type: string \"a, expected b\", expected f64",
                "an object"
            ),
            Some(Misfit {
                got: "string \"a, expected b\"",
                takes: "a number"
            })
        );
        assert_eq!(misfit("missing field `path`", "an object"), None);
        assert_eq!(
            misfit("unknown field `x`, expected `a` or `b`", "an object"),
            None
        );
    }

    /// Inside an array the place is named by its index; a refusal in a rule's own words
    /// keeps them, and one of the whole object (a missing or unknown field) names no place.
    #[test]
    fn a_refusal_inside_names_the_place_and_keeps_the_rules_words() {
        let edit = |edits: Value| {
            refusal::<EditFileArgs>(
                json!({"agent_id": "a", "path": "f", "base_version": 1, "edits": edits}),
            )
        };
        assert_eq!(edit(json!("x")), "edits must be an array (got \"x\")");
        let range = edit(json!([{"old": "a", "new": "b"}, {"start": 1, "end": "2", "lines": []}]));
        assert!(
            range.starts_with("edits[1]: an edit is {\"old\", \"new\"}"),
            "{range}"
        );
        assert_eq!(
            refusal::<ReadFileArgs>(json!({"agent_id": "a"})),
            "missing field `path`"
        );
        assert!(
            refusal::<ReadFileArgs>(json!({"agent_id": "a", "path": "f", "if": 1}))
                .starts_with("unknown field `if`, expected one of `agent_id`")
        );
    }
}
