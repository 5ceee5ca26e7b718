//! Agent ids, paths and prefixes: parsed once, at the boundary, into types that cannot hold
//! an invalid value. No function past a tool's first lines takes a raw `&str` for them.

use crate::ToolError;
use crate::limits::{MAX_AGENT_ID_CHARS, MAX_PATH_CHARS, QUOTED_CHARS};
use std::fmt;

/// Quotes a caller's value for an error message: escaped (so NUL or a look-alike character
/// shows as what it is) and cut short if long.
pub fn quoted(value: &str) -> String {
    let count = value.chars().count();
    if count <= QUOTED_CHARS {
        format!("{value:?}")
    } else {
        let head: String = value.chars().take(QUOTED_CHARS).collect();
        format!("{head:?}... ({count} characters)")
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::InvalidArgument(message)
}

/// An agent's namespace: 1 to 128 characters of `[a-zA-Z0-9_-]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentId(String);

impl AgentId {
    /// Parses an agent id, naming the broken rule and the value when it is not one.
    pub fn parse(raw: &str) -> Result<Self, ToolError> {
        let count = raw.chars().count();
        if count == 0 || count > MAX_AGENT_ID_CHARS {
            return Err(invalid(format!(
                "agent_id must be 1 to {MAX_AGENT_ID_CHARS} characters (got {count}: {})",
                quoted(raw)
            )));
        }
        if let Some((at, bad)) = first_char_outside(raw, |c| c == '_' || c == '-') {
            return Err(invalid(format!(
                "agent_id may contain only [a-zA-Z0-9_-] (got {}: {bad:?} at character {at})",
                quoted(raw)
            )));
        }
        Ok(Self(raw.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A file or log path: `[a-zA-Z0-9/_.-]+`, at most 255 characters, not starting with `/`,
/// containing no `..`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePath(String);

impl FilePath {
    /// Parses a path, naming the broken rule and the value when it is not one.
    pub fn parse(raw: &str) -> Result<Self, ToolError> {
        if raw.is_empty() {
            return Err(invalid("path must not be empty".to_owned()));
        }
        check_path_rules("path", raw)?;
        Ok(Self(raw.to_owned()))
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A `list_files` prefix: the path rules, except that it may be empty. It is compared byte
/// for byte, so `_` and `%` match only themselves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prefix(String);

impl Prefix {
    /// Parses an optional prefix; none and the empty prefix match every path.
    pub fn parse(raw: Option<&str>) -> Result<Self, ToolError> {
        match raw {
            None | Some("") => Ok(Self::default()),
            Some(raw) => {
                check_path_rules("prefix", raw)?;
                Ok(Self(raw.to_owned()))
            }
        }
    }

    /// The prefix as text (empty for "every path").
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The rules a non-empty path or prefix must keep, in the order a reader would check them.
fn check_path_rules(what: &str, raw: &str) -> Result<(), ToolError> {
    let count = raw.chars().count();
    if count > MAX_PATH_CHARS {
        return Err(invalid(format!(
            "{what} is {count} characters; the limit is {MAX_PATH_CHARS} (got {})",
            quoted(raw)
        )));
    }
    if let Some((at, bad)) = first_char_outside(raw, |c| matches!(c, '/' | '_' | '.' | '-')) {
        return Err(invalid(format!(
            "{what} may contain only [a-zA-Z0-9/_.-] (got {}: {bad:?} at character {at})",
            quoted(raw)
        )));
    }
    if raw.starts_with('/') {
        return Err(invalid(format!(
            "{what} must not start with '/' (got {})",
            quoted(raw)
        )));
    }
    if raw.contains("..") {
        return Err(invalid(format!(
            "{what} must not contain '..' (got {})",
            quoted(raw)
        )));
    }
    Ok(())
}

/// The first character (1-based position) that is neither an ASCII letter or digit nor
/// allowed by `extra`.
fn first_char_outside(raw: &str, extra: impl Fn(char) -> bool) -> Option<(usize, char)> {
    raw.chars()
        .enumerate()
        .find(|&(_, c)| !(c.is_ascii_alphanumeric() || extra(c)))
        .map(|(i, c)| (i + 1, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<impl fmt::Debug, ToolError>) -> String {
        match result {
            Err(ToolError::InvalidArgument(m)) => m,
            other => panic!("expected invalid-argument, got {other:?}"),
        }
    }

    #[test]
    fn agent_id_limits_at_n_and_n_plus_one() {
        assert_eq!(
            AgentId::parse(&"a".repeat(128)).unwrap().as_str(),
            "a".repeat(128)
        );
        let m = message(AgentId::parse(&"a".repeat(129)));
        assert!(
            m.starts_with("agent_id must be 1 to 128 characters (got 129:"),
            "{m}"
        );
        assert_eq!(
            message(AgentId::parse("")),
            r#"agent_id must be 1 to 128 characters (got 0: "")"#
        );
    }

    #[test]
    fn agent_id_charset_is_named_with_the_culprit() {
        assert_eq!(AgentId::parse("Agent_7-b").unwrap().as_str(), "Agent_7-b");
        for (raw, bad) in [
            ("a b", "' '"),
            ("a.b", "'.'"),
            ("a/b", "'/'"),
            ("al\u{0456}ce", "'\u{0456}'"),
            ("a\0", "'\\0'"),
        ] {
            let m = message(AgentId::parse(raw));
            assert!(
                m.starts_with("agent_id may contain only [a-zA-Z0-9_-]"),
                "{m}"
            );
            assert!(m.contains(bad), "{m} should name {bad}");
        }
    }

    #[test]
    fn path_rules_each_named() {
        assert_eq!(
            message(FilePath::parse("notes/../x")),
            r#"path must not contain '..' (got "notes/../x")"#
        );
        assert_eq!(
            message(FilePath::parse("/etc/passwd")),
            r#"path must not start with '/' (got "/etc/passwd")"#
        );
        assert_eq!(message(FilePath::parse("")), "path must not be empty");
        let m = message(FilePath::parse("a\\b"));
        assert!(
            m.starts_with("path may contain only [a-zA-Z0-9/_.-]"),
            "{m}"
        );
        for raw in [
            "a b",
            "a%2e%2e",
            "a\0b",
            "caf\u{e9}",
            "a\u{2024}\u{2024}b",
            "a*",
        ] {
            let m = message(FilePath::parse(raw));
            assert!(m.starts_with("path may contain only"), "{raw:?}: {m}");
        }
    }

    #[test]
    fn path_length_at_n_and_n_plus_one() {
        assert_eq!(
            FilePath::parse(&"p".repeat(255)).unwrap().as_str(),
            "p".repeat(255)
        );
        let m = message(FilePath::parse(&"p".repeat(256)));
        assert!(
            m.starts_with("path is 256 characters; the limit is 255"),
            "{m}"
        );
        assert!(
            m.contains("(256 characters)"),
            "long values are cut short: {m}"
        );
    }

    #[test]
    fn dots_that_are_not_dot_dot_are_fine() {
        for raw in [
            ".hidden",
            "a.b.c",
            "./a",
            "a/./b",
            "v1.2/notes.md",
            "a_b-c/",
        ] {
            assert_eq!(FilePath::parse(raw).unwrap().as_str(), raw);
        }
    }

    #[test]
    fn prefix_may_be_empty_but_keeps_the_path_rules() {
        assert_eq!(Prefix::parse(None).unwrap().as_str(), "");
        assert_eq!(Prefix::parse(Some("")).unwrap().as_str(), "");
        assert_eq!(Prefix::parse(Some("notes/")).unwrap().as_str(), "notes/");
        let m = message(Prefix::parse(Some("%")));
        assert!(m.starts_with("prefix may contain only"), "{m}");
        assert_eq!(
            message(Prefix::parse(Some("a/.."))),
            r#"prefix must not contain '..' (got "a/..")"#
        );
    }
}
