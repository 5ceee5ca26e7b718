//! Append-only logs, read back a page at a time with a cursor.

use crate::LogValue;
use crate::api::{
    AppendLogRequest, AppendLogResult, ForgetLogRequest, ForgetLogResult, LogPage, ReadLogRequest,
};
use crate::bindings::scratchpad::mcp::storage::{LogState, Retention};
use crate::diff::encoded_len;
use crate::limits::{ENTRY_FRAME_BYTES, MAX_AGE_DAYS, MAX_LOG_ENTRY_DEPTH, quotas};
use crate::names::{AgentId, FilePath};
use crate::ports::Storage;
use crate::{Quotas, ToolError, words};

/// The size an entry counts for: a string's UTF-8 bytes, any other value's compact JSON.
pub fn entry_bytes(entry: &LogValue) -> u64 {
    match entry {
        LogValue::Text(text) | LogValue::Json(text) => text.len() as u64,
    }
}

/// Refuses an entry of `bytes` over the agent's entry limit (the tools' rule, and `import`'s).
pub fn check_entry_size(q: &Quotas, bytes: u64) -> Result<(), ToolError> {
    if bytes > q.max_log_entry_bytes {
        return Err(ToolError::InvalidArgument(format!(
            "log entry is {}; the limit for one entry is {}",
            words::bytes(bytes),
            words::bytes(q.max_log_entry_bytes)
        )));
    }
    Ok(())
}

/// Refuses the text of a JSON entry when it is not one JSON value, or nests deeper than
/// [`MAX_LOG_ENTRY_DEPTH`]: every reader of an answer that carries it must be able to read it
/// (the tools' rule, and `import`'s). A text entry may be any string.
pub fn check_entry_json(json: &str) -> Result<(), ToolError> {
    let depth = nesting(json.as_bytes());
    if depth > MAX_LOG_ENTRY_DEPTH {
        return Err(ToolError::InvalidArgument(format!(
            "log entry nests {depth} levels deep (arrays and objects one inside another); the limit is {MAX_LOG_ENTRY_DEPTH} levels"
        )));
    }
    serde_json::from_str::<serde::de::IgnoredAny>(json)
        .map_err(|e| ToolError::InvalidArgument(format!("log entry is not one JSON value: {e}")))?;
    Ok(())
}

/// How deep `json` nests: the most arrays and objects open at once, brackets inside strings
/// not counted. A byte scan, so that text too deep for a JSON reader can still be measured
/// (and refused by its depth); for JSON that is not well formed the count means nothing.
pub fn nesting(json: &[u8]) -> usize {
    outside_strings(json)
        .filter(|(_, b, _)| matches!(b, b'[' | b'{'))
        .map(|(_, _, open)| open + 1)
        .max()
        .unwrap_or(0)
}

/// Each byte of `json` outside its strings, with its place and how many arrays and objects
/// are open before it. A string's opening quote is outside it; its other bytes are not.
pub fn outside_strings(json: &[u8]) -> impl Iterator<Item = (usize, u8, usize)> + '_ {
    let (mut open, mut in_string, mut escaped) = (0usize, false, false);
    json.iter().enumerate().filter_map(move |(at, &b)| {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            return None;
        }
        let before = open;
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => open += 1,
            b']' | b'}' => open = open.saturating_sub(1),
            _ => {}
        }
        Some((at, b, before))
    })
}

/// Appends one entry; entries are never changed afterwards.
pub fn append_log(
    s: &(impl Storage + ?Sized),
    r: AppendLogRequest,
) -> Result<AppendLogResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    let q = quotas(&s.limits(&agent));
    let bytes = entry_bytes(&r.entry);
    check_entry_size(&q, bytes)?;
    if let LogValue::Json(json) = &r.entry {
        check_entry_json(json)?;
    }
    let usage = s.get_usage(&agent)?;
    if usage.log_entry_count >= q.max_log_entries {
        return Err(ToolError::QuotaExceeded(format!(
            "agent {agent} has {}; the quota is {}",
            words::count(usage.log_entry_count, "log entry", "log entries"),
            words::count(q.max_log_entries, "entry", "entries")
        )));
    }
    let total = usage.total_bytes + bytes;
    if total > q.max_total_bytes {
        return Err(ToolError::QuotaExceeded(format!(
            "appending {} would bring agent {agent} to {} stored; the quota is {}",
            words::bytes(bytes),
            words::bytes(total),
            words::bytes(q.max_total_bytes)
        )));
    }
    let entry_id = s.append_log(&agent, &path, &r.entry, bytes)?;
    let info = s.log_info(&agent, &path)?;
    enforce(s, &agent, &path, 0, &info)?;
    Ok(AppendLogResult {
        path: r.path,
        entry_id,
    })
}

const SECONDS_A_DAY: u64 = 86_400;

/// Removes the entries below `before` and those the log's retention no longer keeps.
/// Removal only ever takes the oldest entries, so the ones left have consecutive ids up to
/// `last_id`, and "the newest k" are those from `last_id + 1 - k`.
fn enforce(
    s: &(impl Storage + ?Sized),
    agent: &AgentId,
    path: &FilePath,
    before: u64,
    info: &LogState,
) -> Result<u64, ToolError> {
    let kept_from = info
        .retention
        .keep_last
        .map_or(0, |k| (info.last_id + 1).saturating_sub(k));
    let before = before.max(kept_from);
    let older_than = info.retention.max_age_seconds;
    if before <= 1 && older_than.is_none() {
        return Ok(0);
    }
    Ok(s.trim_log(agent, path, before, older_than)?)
}

/// Deletes entries of a log now, and sets how long it keeps them from now on.
pub fn forget_log(
    s: &(impl Storage + ?Sized),
    r: ForgetLogRequest,
) -> Result<ForgetLogResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    if r.keep_last == Some(0) {
        return Err(ToolError::InvalidArgument(
            "keep_last must be 1 or more entries (got 0); to delete every entry, give neither keep_last nor max_age_days"
                .to_owned(),
        ));
    }
    if let Some(days) = r.max_age_days
        && !(1..=MAX_AGE_DAYS).contains(&days)
    {
        return Err(ToolError::InvalidArgument(format!(
            "max_age_days must be 1 to {MAX_AGE_DAYS} (got {days})"
        )));
    }
    let mut info = s.log_info(&agent, &path)?;
    let sets_retention = r.keep_last.is_some() || r.max_age_days.is_some();
    if sets_retention {
        info.retention = Retention {
            keep_last: r.keep_last,
            max_age_seconds: r.max_age_days.map(|d| d * SECONDS_A_DAY),
        };
        s.set_log_retention(&agent, &path, info.retention)?;
    }
    let before = match r.before_entry {
        Some(before) => before,
        None if sets_retention => 0,
        None => info.last_id + 1,
    };
    let removed = enforce(s, &agent, &path, before, &info)?;
    Ok(ForgetLogResult {
        path: r.path,
        removed,
        remaining: info.entries.saturating_sub(removed),
    })
}

/// One page of entries after the cursor, oldest first. An unknown log reads as empty.
pub fn read_log(s: &(impl Storage + ?Sized), r: ReadLogRequest) -> Result<LogPage, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    let after = r.since_entry.unwrap_or(0);
    let q = quotas(&s.limits(&agent));
    let page = q.log_page_size;
    // One entry more than a page tells whether another page follows.
    let mut entries = s.read_log(&agent, &path, after, page.saturating_add(1))?;
    let mut has_more = entries.len() > page as usize;
    entries.truncate(page as usize);
    // As many entries as fit one answer; always at least one, so the cursor moves.
    let budget = crate::limits::payload_bytes(q.max_response_tokens);
    let mut size = 0u64;
    let fit = entries
        .iter()
        .position(|e| {
            size += ENTRY_FRAME_BYTES + entry_json_len(&e.entry);
            size > budget
        })
        .map_or(entries.len(), |over| over.max(1));
    if fit < entries.len() {
        entries.truncate(fit);
        has_more = true;
    }
    let size: u64 = entries
        .iter()
        .map(|e| ENTRY_FRAME_BYTES + entry_json_len(&e.entry))
        .sum();
    let last_entry_id = entries.last().map_or(after, |e| e.id);
    Ok(LogPage {
        path: r.path,
        entries,
        has_more,
        last_entry_id,
        tokens: crate::limits::tokens(size),
    })
}

/// An entry's value as the answer carries it: a string encoded, other JSON as it is.
fn entry_json_len(entry: &LogValue) -> u64 {
    match entry {
        LogValue::Text(text) => encoded_len(text) as u64,
        LogValue::Json(json) => json.len() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LimitOverrides;
    use crate::limits::{MAX_LOG_ENTRIES, MAX_LOG_ENTRY_BYTES, NO_OVERRIDES};
    use crate::testing::Memory;

    fn append(s: &Memory, entry: LogValue) -> Result<u64, ToolError> {
        append_log(
            s,
            AppendLogRequest {
                agent_id: "a".into(),
                path: "log".into(),
                entry,
            },
        )
        .map(|r| r.entry_id)
    }

    /// The message of a refusal as an invalid argument.
    fn invalid<T: std::fmt::Debug>(refused: Result<T, ToolError>) -> String {
        match refused {
            Err(ToolError::InvalidArgument(message)) => message,
            other => panic!("not refused as an invalid argument: {other:?}"),
        }
    }

    fn page(s: &Memory, since: Option<u64>) -> LogPage {
        read_log(
            s,
            ReadLogRequest {
                agent_id: "a".into(),
                path: "log".into(),
                since_entry: since,
            },
        )
        .unwrap()
    }

    #[test]
    fn cursor_pages_across_250_entries() {
        let s = Memory::default();
        for i in 1..=250 {
            assert_eq!(append(&s, LogValue::Text(format!("e{i}"))).unwrap(), i);
        }
        let (mut cursor, mut seen, mut pages) = (None, Vec::new(), 0);
        loop {
            let p = page(&s, cursor);
            pages += 1;
            seen.extend(p.entries.iter().map(|e| e.id));
            cursor = Some(p.last_entry_id);
            if !p.has_more {
                break;
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, (1..=250).collect::<Vec<_>>());
        let past = page(&s, Some(250));
        assert!(past.entries.is_empty() && !past.has_more);
        assert_eq!(past.last_entry_id, 250, "an empty page keeps the cursor");
    }

    #[test]
    fn exactly_one_page_has_no_more() {
        let s = Memory::default();
        for i in 0..100 {
            append(&s, LogValue::Json(i.to_string())).unwrap();
        }
        let p = page(&s, None);
        assert_eq!(
            (p.entries.len(), p.has_more, p.last_entry_id),
            (100, false, 100)
        );
    }

    #[test]
    fn a_json_entry_nests_at_most_the_limit_and_is_one_json_value() {
        let s = Memory::default();
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let deepest = nested(MAX_LOG_ENTRY_DEPTH);
        assert_eq!(append(&s, LogValue::Json(deepest.clone())), Ok(1));
        assert_eq!(
            append(&s, LogValue::Json(nested(MAX_LOG_ENTRY_DEPTH + 1))),
            Err(ToolError::InvalidArgument(
                "log entry nests 101 levels deep (arrays and objects one inside another); the limit is 100 levels".into()
            ))
        );
        // Deeper than serde_json reads: refused by its depth all the same, not by a parse.
        let refused = invalid(append(&s, LogValue::Json(nested(5_000))));
        assert!(
            refused.starts_with("log entry nests 5000 levels"),
            "{refused}"
        );
        // Brackets inside strings are text, not nesting.
        let in_strings = format!(r#"{{"k":"{}","q":"\"["}}"#, "[".repeat(500));
        assert_eq!(append(&s, LogValue::Json(in_strings)), Ok(2));
        // An embedder's `json` entry that is not JSON would read back as a string, or not at
        // all: refused, naming the rule.
        for bad in ["{\"a\":", "1 2", ""] {
            let refused = invalid(append(&s, LogValue::Json(bad.into())));
            assert!(
                refused.starts_with("log entry is not one JSON value: "),
                "{bad:?}: {refused}"
            );
        }
        let p = page(&s, None);
        assert_eq!(p.entries.len(), 2, "a refused entry changes nothing");
        assert_eq!(p.entries[0].entry, LogValue::Json(deepest));
    }

    #[test]
    fn entry_size_at_n_and_n_plus_one_in_utf8_bytes() {
        let s = Memory::default();
        let limit = MAX_LOG_ENTRY_BYTES as usize;
        assert_eq!(append(&s, LogValue::Text("ü".repeat(limit / 2))), Ok(1));
        assert_eq!(
            append(&s, LogValue::Text(format!("{}x", "ü".repeat(limit / 2)))),
            Err(ToolError::InvalidArgument(
                "log entry is 65537 bytes; the limit for one entry is 65536 bytes".into()
            ))
        );
        assert_eq!(s.usage_of("a").total_bytes, limit as u64);
    }

    #[test]
    fn entry_quota_at_n_and_n_plus_one() {
        let s = Memory::default();
        s.set_log_entry_count("a", MAX_LOG_ENTRIES - 1);
        assert_eq!(append(&s, LogValue::Text("last".into())), Ok(1));
        assert!(matches!(
            append(&s, LogValue::Text("over".into())),
            Err(ToolError::QuotaExceeded(m)) if m.contains("100000 log entries")
        ));
    }

    #[test]
    fn embedder_page_size_and_entry_quota() {
        let s = Memory::with_limits(LimitOverrides {
            log_page_size: Some(3),
            max_log_entries: Some(4),
            ..NO_OVERRIDES
        });
        for i in 0..4 {
            append(&s, LogValue::Json(i.to_string())).unwrap();
        }
        assert!(matches!(
            append(&s, LogValue::Text("over".into())),
            Err(ToolError::QuotaExceeded(m)) if m.contains("the quota is 4 entries")
        ));
        let p = page(&s, None);
        assert_eq!((p.entries.len(), p.has_more, p.last_entry_id), (3, true, 3));
        let p = page(&s, Some(3));
        assert_eq!(
            (p.entries.len(), p.has_more, p.last_entry_id),
            (1, false, 4)
        );
    }

    fn forget(s: &Memory, before: Option<u64>, keep_last: Option<u64>) -> ForgetLogResult {
        let r = ForgetLogRequest {
            agent_id: "a".into(),
            path: "log".into(),
            before_entry: before,
            keep_last,
            max_age_days: None,
        };
        forget_log(s, r).unwrap()
    }

    #[test]
    fn forgetting_removes_the_oldest_and_ids_never_repeat() {
        let s = Memory::default();
        for i in 0..10 {
            append(&s, LogValue::Text(format!("e{i}"))).unwrap();
        }
        assert_eq!(
            (
                forget(&s, Some(4), None).removed,
                s.usage_of("a").log_entry_count
            ),
            (3, 7)
        );
        assert_eq!(page(&s, None).entries[0].id, 4);
        let all = forget(&s, None, None);
        assert_eq!((all.removed, all.remaining), (7, 0));
        assert_eq!(
            (s.usage_of("a").total_bytes, s.usage_of("a").log_entry_count),
            (0, 0)
        );
        assert_eq!(append(&s, LogValue::Text("after".into())), Ok(11));
    }

    #[test]
    fn a_retention_applies_now_and_at_every_append() {
        let s = Memory::default();
        for i in 0..5 {
            append(&s, LogValue::Text(format!("e{i}"))).unwrap();
        }
        let r = forget(&s, None, Some(2));
        assert_eq!((r.removed, r.remaining), (3, 2));
        append(&s, LogValue::Text("e5".into())).unwrap();
        let ids: Vec<u64> = page(&s, None).entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, vec![5, 6]);
        assert_eq!(s.usage_of("a").log_entry_count, 2);
        let zero = ForgetLogRequest {
            agent_id: "a".into(),
            path: "log".into(),
            before_entry: None,
            keep_last: Some(0),
            max_age_days: None,
        };
        assert!(
            matches!(forget_log(&s, zero), Err(ToolError::InvalidArgument(m)) if m.starts_with("keep_last must be 1 or more"))
        );
    }
}
