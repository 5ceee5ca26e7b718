//! Search over an agent's current files and log entries: the query's words, the fallback
//! from "all words" to "any word", and the lines and snippets that show each hit.
//!
//! Ranking is the store's (SQLite: FTS5 with BM25). Everything a caller reads is made here:
//! which words count, which lines are shown and how they are cut, and how many hits fit
//! one answer. Words are runs of letters and digits, compared in lower case; the store is
//! given them as plain words, never as query syntax, so a query cannot inject operators.

use crate::api::{HitAt, MatchedLine, SearchHit, SearchRequest, SearchResult};
use crate::bindings::scratchpad::mcp::storage::{MatchRef, SearchMatch};
use crate::diff::encoded_len;
use crate::limits::{
    DEFAULT_HITS, LINES_PER_HIT, MAX_HITS, MAX_OFFSET, MAX_TERMS, SNIPPET_CHARS, quotas,
};
use crate::names::{AgentId, FilePath, Prefix, quoted};
use crate::ports::Storage;
use crate::{LogValue, ToolError};

/// The words of a text: runs of letters and digits, in lower case, each with the index of
/// its first character.
pub fn words(text: &str) -> impl Iterator<Item = (usize, String)> + '_ {
    let mut chars = text.chars().enumerate().peekable();
    std::iter::from_fn(move || {
        while chars.next_if(|(_, c)| !c.is_alphanumeric()).is_some() {}
        let (start, first) = chars.next()?;
        let mut word: String = first.to_lowercase().collect();
        while let Some((_, c)) = chars.next_if(|(_, c)| c.is_alphanumeric()) {
            word.extend(c.to_lowercase());
        }
        Some((start, word))
    })
}

/// The query's distinct words, in order.
fn terms(query: &str) -> Result<Vec<String>, ToolError> {
    let mut terms: Vec<String> = Vec::new();
    for (_, word) in words(query) {
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    if terms.is_empty() {
        return Err(ToolError::InvalidArgument(format!(
            "query must hold at least one word of letters or digits (got {})",
            quoted(query)
        )));
    }
    if terms.len() > MAX_TERMS {
        return Err(ToolError::InvalidArgument(format!(
            "query may hold at most {MAX_TERMS} words (got {})",
            terms.len()
        )));
    }
    Ok(terms)
}

/// Up to `SNIPPET_CHARS` of `text` around the first of `terms` in it.
fn snippet(text: &str, terms: &[String]) -> String {
    let count = text.chars().count();
    if count <= SNIPPET_CHARS {
        return text.to_owned();
    }
    let at = words(text)
        .find(|(_, w)| terms.contains(w))
        .map_or(0, |(at, _)| at);
    let start = at
        .saturating_sub(SNIPPET_CHARS * 2 / 5)
        .min(count - SNIPPET_CHARS);
    let cut: String = text.chars().skip(start).take(SNIPPET_CHARS).collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if start + SNIPPET_CHARS < count {
        "…"
    } else {
        ""
    };
    format!("{before}{cut}{after}")
}

/// The lines of `content` that hold one of `terms`, numbered, at most `LINES_PER_HIT`.
fn matched_lines(content: &str, terms: &[String]) -> Vec<MatchedLine> {
    content
        .split('\n')
        .enumerate()
        .filter(|(_, line)| words(line).any(|(_, w)| terms.contains(&w)))
        .take(LINES_PER_HIT)
        .map(|(i, line)| MatchedLine {
            line: i as u64 + 1,
            text: snippet(line, terms),
        })
        .collect()
}

/// A log entry as searchable text: a string as it is, other JSON as its text.
pub fn entry_text(entry: &LogValue) -> &str {
    match entry {
        LogValue::Text(text) | LogValue::Json(text) => text,
    }
}

/// What a match shows: its lines or its snippet, read from the store.
fn hit(
    s: &(impl Storage + ?Sized),
    agent: &AgentId,
    found: SearchMatch,
    terms: &[String],
) -> Result<Option<SearchHit>, ToolError> {
    let path = FilePath::parse(&found.path).map_err(|_| {
        ToolError::Storage(crate::StorageError::Other(format!(
            "the search index names an invalid path {}",
            quoted(&found.path)
        )))
    })?;
    let at = match found.at {
        MatchRef::File(version) => match s.read_version(agent, &path, version)? {
            Some(content) => HitAt::File((version, matched_lines(&content, terms))),
            None => return Ok(None),
        },
        MatchRef::LogEntry(id) => {
            let entry = s.read_log(agent, &path, id.saturating_sub(1), 1)?;
            match entry.into_iter().find(|e| e.id == id) {
                Some(e) => HitAt::LogEntry((id, snippet(entry_text(&e.entry), terms))),
                None => return Ok(None),
            }
        }
    };
    Ok(Some(SearchHit {
        path: found.path,
        at,
    }))
}

fn hit_len(h: &SearchHit) -> u64 {
    let shown = match &h.at {
        HitAt::File((_, lines)) => lines.iter().map(|l| encoded_len(&l.text) + 16).sum(),
        HitAt::LogEntry((_, text)) => encoded_len(text),
    };
    (encoded_len(&h.path) + shown + 48) as u64
}

/// Searches the agent's current files and log entries.
pub fn search(s: &(impl Storage + ?Sized), r: SearchRequest) -> Result<SearchResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let prefix = Prefix::parse(r.prefix.as_deref())?;
    let terms = terms(&r.query)?;
    let limit = r.limit.unwrap_or(DEFAULT_HITS);
    if !(1..=MAX_HITS).contains(&limit) {
        return Err(ToolError::InvalidArgument(format!(
            "limit must be 1 to {MAX_HITS} hits (got {limit})"
        )));
    }
    let offset = r.offset.unwrap_or(0);
    if offset > MAX_OFFSET {
        return Err(ToolError::InvalidArgument(format!(
            "offset may skip at most {MAX_OFFSET} hits (got {offset}); narrow the query or the prefix"
        )));
    }
    // Both are bounded above, so they fit the store's u32.
    let (limit, offset) = (limit as u32, offset as u32);
    let find =
        |all: bool, limit: u32, offset: u32| s.search(&agent, &terms, all, &prefix, limit, offset);
    // One more than asked tells whether another page follows. Any-word matches stand in
    // only when no file or entry holds every word, so pages never mix the two.
    let mut found = find(true, limit + 1, offset)?;
    let partial =
        terms.len() > 1 && found.is_empty() && (offset == 0 || find(true, 1, 0)?.is_empty());
    if partial {
        found = find(false, limit + 1, offset)?;
    }
    let more = found.len() > limit as usize;
    found.truncate(limit as usize);
    let budget = crate::limits::payload_bytes(quotas(&s.limits(&agent)).max_response_tokens);
    let (mut hits, mut used, mut skipped) = (Vec::new(), 0, 0);
    let considered = found.len();
    for m in found {
        match hit(s, &agent, m, &terms)? {
            Some(h) if used + hit_len(&h) > budget && !hits.is_empty() => break,
            Some(h) => {
                used += hit_len(&h);
                hits.push(h);
            }
            None => skipped += 1,
        }
    }
    let taken = (hits.len() + skipped) as u32;
    let next_offset = (more || (taken as usize) < considered).then_some(u64::from(offset + taken));
    Ok(SearchResult {
        hits,
        partial,
        next_offset,
        tokens: crate::limits::tokens(used),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_letter_and_digit_runs_in_lower_case() {
        let found: Vec<_> = words("Ship on FRIDAY, v2-rc! Café").collect();
        let expected = [
            (0, "ship"),
            (5, "on"),
            (8, "friday"),
            (16, "v2"),
            (19, "rc"),
            (23, "café"),
        ];
        assert_eq!(found, expected.map(|(i, w)| (i, w.to_owned())));
    }

    #[test]
    fn a_query_needs_words_and_not_too_many() {
        assert!(
            matches!(terms("!!! ---"), Err(ToolError::InvalidArgument(m)) if m.starts_with("query must hold"))
        );
        assert_eq!(terms("Plan plan PLAN ship").unwrap(), vec!["plan", "ship"]);
        let many = (0..17)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(
            terms(&many).unwrap_err(),
            ToolError::InvalidArgument("query may hold at most 16 words (got 17)".into())
        );
    }

    #[test]
    fn snippets_are_cut_around_the_first_word() {
        let line = format!("{}needle{}", "a ".repeat(200), " b".repeat(200));
        let cut = snippet(&line, &["needle".to_owned()]);
        assert!(
            cut.starts_with('…') && cut.ends_with('…') && cut.contains("needle"),
            "{cut}"
        );
        assert_eq!(cut.chars().count(), SNIPPET_CHARS + 2);
        assert_eq!(snippet("short", &[]), "short");
    }

    use crate::api::{AppendLogRequest, WriteFileRequest};
    use crate::testing::Memory;
    use crate::tools::{append_log, write_file};

    fn store() -> Memory {
        let s = Memory::default();
        let files = [
            (
                "a",
                "notes/plan.md",
                "# Plan\nShip the release on Friday.\nThen rest.\n",
            ),
            (
                "a",
                "notes/ideas.md",
                "Friday lunch ideas\nA plan for tacos\n",
            ),
            ("a", "other.md", "nothing to see"),
            ("b", "notes/plan.md", "Ship on Friday, says agent b\n"),
        ];
        for (agent, path, content) in files {
            let r = WriteFileRequest {
                agent_id: agent.into(),
                path: path.into(),
                content: content.into(),
                expected_version: None,
            };
            write_file(&s, r).unwrap();
        }
        let entry = AppendLogRequest {
            agent_id: "a".into(),
            path: "run.log".into(),
            entry: LogValue::Text("deployed; will ship again friday".into()),
        };
        append_log(&s, entry).unwrap();
        s
    }

    fn find(s: &Memory, query: &str, limit: Option<u64>, offset: Option<u64>) -> SearchResult {
        let r = SearchRequest {
            agent_id: "a".into(),
            query: query.into(),
            prefix: None,
            limit,
            offset,
        };
        search(s, r).unwrap()
    }

    #[test]
    fn hits_show_numbered_lines_and_stay_in_the_agents_namespace() {
        let s = store();
        let r = find(&s, "ship FRIDAY", None, None);
        assert!(!r.partial);
        let paths: Vec<&str> = r.hits.iter().map(|h| h.path.as_str()).collect();
        assert_eq!(paths, vec!["notes/plan.md", "run.log"]);
        let HitAt::File((1, lines)) = &r.hits[0].at else {
            panic!("{:?}", r.hits[0])
        };
        assert_eq!(
            lines,
            &vec![MatchedLine {
                line: 2,
                text: "Ship the release on Friday.".into()
            }]
        );
        assert!(matches!(&r.hits[1].at, HitAt::LogEntry((1, text)) if text.contains("friday")));
        assert_eq!(r.next_offset, None);
    }

    #[test]
    fn no_hit_with_every_word_falls_back_to_any_word_on_every_page() {
        let s = store();
        let first = find(&s, "tacos release", Some(1), None);
        assert!(first.partial);
        assert_eq!(first.hits.len(), 1);
        let next = first.next_offset.expect("a second page");
        let second = find(&s, "tacos release", Some(1), Some(next));
        assert!(second.partial && second.hits.len() == 1);
        assert_ne!(first.hits[0].path, second.hits[0].path);
        assert!(find(&s, "zebra", None, None).hits.is_empty());
    }

    #[test]
    fn bad_queries_and_limits_are_named() {
        let s = store();
        let r = SearchRequest {
            agent_id: "a".into(),
            query: "x".into(),
            prefix: None,
            limit: Some(51),
            offset: None,
        };
        assert!(
            matches!(search(&s, r), Err(ToolError::InvalidArgument(m)) if m == "limit must be 1 to 50 hits (got 51)")
        );
    }
}
