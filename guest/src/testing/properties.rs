//! Properties of the logic, each a function that panics with the counter-example.

use super::Memory;
use crate::api::{AppendLogRequest, ReadBody, ReadFileRequest, ReadLogRequest, WriteFileRequest};
use crate::diff::{self, Form};
use crate::limits::NO_OVERRIDES;
use crate::limits::{LOG_PAGE_SIZE, MAX_AGENT_ID_CHARS, MAX_PATH_CHARS};
use crate::names::{AgentId, FilePath, Prefix};
use crate::tools::{append_log, read_file, read_log, write_file};
use crate::{LimitOverrides, LogValue, ToolError};

/// Parsing is a fixed point, what parses keeps the rules by construction, and what does not
/// is refused with a message that shows no raw control character.
pub fn names(raw: &str) {
    fn refused<T>(result: Result<T, ToolError>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(ToolError::InvalidArgument(m)) => {
                assert!(
                    !m.chars().any(char::is_control),
                    "raw control character in {m:?}"
                );
                None
            }
            Err(other) => panic!("names are refused as invalid arguments, got {other:?}"),
        }
    }
    let path_like = |s: &str| {
        s.chars().count() <= MAX_PATH_CHARS
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_.-".contains(c))
            && !s.starts_with('/')
            && !s.contains("..")
    };
    if let Some(agent) = refused(AgentId::parse(raw)) {
        let s = agent.as_str();
        assert!(
            (1..=MAX_AGENT_ID_CHARS).contains(&s.chars().count()),
            "{s:?}"
        );
        assert!(
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{s:?}"
        );
        assert_eq!(AgentId::parse(s), Ok(agent.clone()));
    }
    if let Some(path) = refused(FilePath::parse(raw)) {
        assert!(
            !path.as_str().is_empty() && path_like(path.as_str()),
            "{path:?}"
        );
        assert_eq!(FilePath::parse(path.as_str()), Ok(path.clone()));
    }
    if let Some(prefix) = refused(Prefix::parse(Some(raw))) {
        assert!(path_like(prefix.as_str()), "{prefix:?}");
        assert_eq!(Prefix::parse(Some(prefix.as_str())), Ok(prefix.clone()));
    }
}

/// Applying either form of the diff to the old text gives the new text, byte for byte.
pub fn diff_round_trip(old: &str, new: &str) {
    for form in [Form::Full, Form::Compact] {
        let chunks = diff::diff(old, new, form);
        assert_eq!(
            diff::apply(old, &chunks).as_deref(),
            Ok(new),
            "{form:?} diff of {old:?} -> {new:?}"
        );
    }
}

/// Paging a log of `entries` entries from any cursor yields every later entry once, in
/// order, in full pages but the last.
pub fn log_paging(entries: u16, cursor: u64) {
    let store = Memory::default();
    for i in 0..entries {
        let request = AppendLogRequest {
            agent_id: "a".into(),
            path: "log".into(),
            entry: LogValue::Json(i.to_string()),
        };
        assert_eq!(
            append_log(&store, request).map(|r| r.entry_id),
            Ok(u64::from(i) + 1)
        );
    }
    let (mut since, mut seen) = (Some(cursor), Vec::new());
    loop {
        let request = ReadLogRequest {
            agent_id: "a".into(),
            path: "log".into(),
            since_entry: since,
        };
        let page = read_log(&store, request).expect("reading a log works");
        assert!(page.entries.len() <= LOG_PAGE_SIZE as usize);
        assert!(!page.has_more || page.entries.len() == LOG_PAGE_SIZE as usize);
        seen.extend(page.entries.iter().map(|e| e.id));
        assert_eq!(page.last_entry_id, seen.last().copied().unwrap_or(cursor));
        since = Some(page.last_entry_id);
        if !page.has_more {
            break;
        }
    }
    let expected: Vec<u64> = (cursor + 1..=u64::from(entries)).collect();
    assert_eq!(seen, expected);
}

/// Reading a file of these lines under a budget of `max_tokens`: every answer reports at
/// most that many tokens, and the parts, followed by their cursors, join to the content.
pub fn budgets(lines: &[(usize, char)], max_tokens: u64) {
    let store = Memory::with_limits(LimitOverrides {
        max_response_tokens: Some(max_tokens),
        ..NO_OVERRIDES
    });
    let content: String = lines
        .iter()
        .map(|&(len, c)| format!("{}\n", c.to_string().repeat(len)))
        .collect();
    let write = WriteFileRequest {
        agent_id: "a".into(),
        path: "f".into(),
        content: content.clone(),
        expected_version: None,
    };
    if write_file(&store, write).is_err() {
        return; // over the write limit: nothing to read
    }
    let (mut offset, mut byte, mut joined) = (None, None, String::new());
    loop {
        let request = ReadFileRequest {
            agent_id: "a".into(),
            path: "f".into(),
            since_version: None,
            full_diff: false,
            offset,
            limit: None,
            column: byte,
        };
        let answer = read_file(&store, request).expect("every part of a file can be read");
        assert!(
            answer.tokens <= max_tokens,
            "{} tokens > {max_tokens}",
            answer.tokens
        );
        let ReadBody::Content(part) = answer.body else {
            panic!("a plain read answers with content")
        };
        joined.push_str(&part.content);
        match part.next_line {
            Some(next) => (offset, byte) = (Some(next), part.next_column),
            None => break,
        }
    }
    assert_eq!(joined, content);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;

    /// Strings near the rules' edges: the allowed characters, the ones they exclude, the
    /// look-alikes, and lengths around the limits.
    fn name_like() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            "[a-zA-Z0-9_-]{1,8}",
            Just("/".to_owned()),
            Just(".".to_owned()),
            Just("..".to_owned()),
            Just("%2e".to_owned()),
            Just("\0".to_owned()),
            Just("\u{ff0e}".to_owned()),
            Just(" ".to_owned()),
            "\\PC{1,3}",
        ];
        prop_oneof![
            prop::collection::vec(piece, 0..12).prop_map(|p| p.concat()),
            (120usize..260).prop_map(|n| "a".repeat(n)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 2048,
            rng_seed: RngSeed::Fixed(0x6e61_6d65),
            ..ProptestConfig::default()
        })]

        #[test]
        fn names_parse_to_a_fixed_point_that_keeps_the_rules(raw in name_like()) {
            names(&raw);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            rng_seed: RngSeed::Fixed(0x6375_7273),
            ..ProptestConfig::default()
        })]

        #[test]
        fn every_cursor_pages_through_the_rest_of_the_log(entries in 0u16..350, cursor in 0u64..400) {
            log_paging(entries, cursor);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            rng_seed: RngSeed::Fixed(0x6275_6467),
            ..ProptestConfig::default()
        })]

        #[test]
        fn no_answer_exceeds_its_budget_and_parts_join_to_the_file(
            lines in prop::collection::vec((0usize..20_000, prop_oneof![Just('x'), Just('"'), Just('ü'), Just('\u{1}')]), 0..80),
            max_tokens in 1_000u64..6_000,
        ) {
            budgets(&lines, max_tokens);
        }
    }
}
