//! Versioned files: write, read (whole or as a diff), list and delete.

use super::edit;
use super::not_found;
use crate::api::{
    DeleteFileRequest, DeleteFileResult, EditFileRequest, History, LineDiff, ListFilesRequest,
    ReadBody, ReadFileRequest, ReadFileResult, VersionSummary, WholeContent, WholeContentReason,
    WriteFileRequest, WriteFileResult,
};
use crate::bindings::scratchpad::mcp::storage::FileState;
use crate::budget;
use crate::diff::{self, Form};
use crate::limits::quotas;
use crate::names::{AgentId, FilePath, Prefix};
use crate::ports::{Storage, content_hash};
use crate::{FileMeta, Quotas, ToolError, words};

/// Stores content as a new version, unless it equals the current one; prunes to the newest
/// `versions_kept` in the same transaction.
pub fn write_file(
    s: &(impl Storage + ?Sized),
    r: WriteFileRequest,
) -> Result<WriteFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    let q = quotas(&s.limits(&agent));
    check_size(&q, &r.content)?;
    let state = s.stat_file(&agent, &path)?;
    if let Some(expected) = r.expected_version {
        expect_version(&path, current_version(state.as_ref()), expected)?;
    }
    store(s, &q, &agent, &path, state, r.content)
}

/// Refuses content over the agent's write limit (the tools' rule, and `import`'s).
pub fn check_size(q: &Quotas, content: &str) -> Result<(), ToolError> {
    let limit = q.max_write_bytes;
    let bytes = content.len() as u64;
    if bytes > limit {
        return Err(ToolError::InvalidArgument(format!(
            "content is {}; the limit for one write is {}",
            words::bytes(bytes),
            words::bytes(limit)
        )));
    }
    Ok(())
}

/// The current version of a path, or 0 when it does not exist.
fn current_version(state: Option<&FileState>) -> u64 {
    state.and_then(|st| st.kept.last()).map_or(0, |v| v.version)
}

/// A conflict unless the file is at `expected` (0: does not exist).
fn expect_version(path: &FilePath, current: u64, expected: u64) -> Result<(), ToolError> {
    if current == expected {
        return Ok(());
    }
    let now = match current {
        0 => "does not exist".to_owned(),
        v => format!("is at version {v}"),
    };
    let wanted = match expected {
        0 => "no file".to_owned(),
        v => format!("version {v}"),
    };
    Err(ToolError::Conflict(format!(
        "{path} {now}, but the call expected {wanted}; read it again and retry"
    )))
}

/// Stores `content` (of a checked size) as the next version of a path whose state is
/// `state`: the one place that applies the quotas and pruning.
fn store(
    s: &(impl Storage + ?Sized),
    q: &Quotas,
    agent: &AgentId,
    path: &FilePath,
    state: Option<FileState>,
    content: String,
) -> Result<WriteFileResult, ToolError> {
    let bytes = content.len() as u64;
    let (last_version, kept) = state.map_or((0, Vec::new()), |st| (st.last_version, st.kept));
    // Unchanged content is told by the hash the current version was stored with: no read
    // of the content itself (a round trip to a database server).
    if let Some(current) = kept.last()
        && current.bytes == bytes
        && current.sha256 == content_hash(&content)
    {
        return Ok(WriteFileResult {
            path: path.as_str().to_owned(),
            version: current.version,
            bytes,
            unchanged: true,
        });
    }

    let version = last_version + 1;
    let keep_from = (version + 1).saturating_sub(u64::from(q.versions_kept));
    let pruned_bytes: u64 = kept
        .iter()
        .filter(|v| v.version < keep_from)
        .map(|v| v.bytes)
        .sum();
    let usage = s.get_usage(agent)?;
    if kept.is_empty() && usage.file_count >= q.max_files {
        return Err(ToolError::QuotaExceeded(format!(
            "agent {agent} has {}; the quota is {} (delete one to make room)",
            words::count(usage.file_count, "file", "files"),
            words::count(q.max_files, "file", "files")
        )));
    }
    let total = (usage.total_bytes + bytes).saturating_sub(pruned_bytes);
    if total > q.max_total_bytes {
        return Err(ToolError::QuotaExceeded(format!(
            "writing {} would bring agent {agent} to {} stored; the quota is {}",
            words::bytes(bytes),
            words::bytes(total),
            words::bytes(q.max_total_bytes)
        )));
    }
    s.put_version(agent, path, version, &content)?;
    if pruned_bytes > 0 {
        s.prune_versions(agent, path, keep_from)?;
    }
    Ok(WriteFileResult {
        path: path.as_str().to_owned(),
        version,
        bytes,
        unchanged: false,
    })
}

/// Applies `edits` to the current version, which must be `base_version`, and stores the
/// result as a new version (through the same path as a write).
pub fn edit_file(
    s: &(impl Storage + ?Sized),
    r: EditFileRequest,
) -> Result<WriteFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    if r.edits.is_empty() {
        return Err(ToolError::InvalidArgument(
            "edits must hold at least one edit (got none)".to_owned(),
        ));
    }
    let state = s.stat_file(&agent, &path)?;
    let current = current_version(state.as_ref());
    if current == 0 {
        return Err(not_found(&agent, &path));
    }
    expect_version(&path, current, r.base_version)?;
    let mut content = s
        .read_version(&agent, &path, current)?
        .ok_or_else(|| not_found(&agent, &path))?;
    for (i, e) in r.edits.iter().enumerate() {
        content = edit::apply(&content, e).map_err(|reason| {
            ToolError::InvalidArgument(format!("edit {} of {}: {reason}", i + 1, r.edits.len()))
        })?;
    }
    let q = quotas(&s.limits(&agent));
    check_size(&q, &content)?;
    store(s, &q, &agent, &path, state, content)
}

/// The kept versions with their sizes, times and content hashes.
pub fn file_history(
    s: &(impl Storage + ?Sized),
    agent_id: &str,
    path: &str,
) -> Result<History, ToolError> {
    let agent = AgentId::parse(agent_id)?;
    let path = FilePath::parse(path)?;
    let kept = s
        .stat_file(&agent, &path)?
        .map(|st| st.kept)
        .filter(|kept| !kept.is_empty())
        .ok_or_else(|| not_found(&agent, &path))?;
    // The hashes the store kept from each write: no content is read.
    let versions = kept
        .into_iter()
        .map(|v| VersionSummary {
            version: v.version,
            bytes: v.bytes,
            sha256: v.sha256,
            created_at: v.created_at,
        })
        .collect();
    Ok(History {
        path: path.as_str().to_owned(),
        versions,
    })
}

/// The whole current content, or what changed since `since_version`; content too long for
/// one answer comes in parts of whole lines.
pub fn read_file(
    s: &(impl Storage + ?Sized),
    r: ReadFileRequest,
) -> Result<ReadFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    if r.since_version.is_some() && (r.offset.is_some() || r.limit.is_some() || r.column.is_some())
    {
        return Err(ToolError::InvalidArgument(
            "offset, limit and column page the whole content; they do not apply with since_version"
                .to_owned(),
        ));
    }
    let budget = crate::limits::payload_bytes(quotas(&s.limits(&agent)).max_response_tokens);
    let current = s
        .stat_file(&agent, &path)?
        .and_then(|st| st.kept.last().map(|v| v.version))
        .ok_or_else(|| not_found(&agent, &path))?;
    let read = |version| {
        s.read_version(&agent, &path, version)?
            .ok_or_else(|| not_found(&agent, &path))
    };
    // The content, or the part of it from `offset` that fits, with the payload's size.
    let whole = |content: &str, reason| -> Result<(ReadBody, usize), ToolError> {
        let start = budget::Start {
            line: r.offset,
            column: r.column,
        };
        let part = budget::part(content, start, r.limit, budget)?;
        let size = diff::encoded_len(&part.text);
        Ok((
            ReadBody::Content(WholeContent {
                content: part.text,
                reason,
                first_line: part.first_line,
                next_line: part.next_line,
                next_column: part.next_column,
                lines_left: part.lines_left,
            }),
            size,
        ))
    };
    let (body, size) = match r.since_version {
        None => whole(&read(current)?, None)?,
        Some(0) => {
            return Err(ToolError::InvalidArgument(
                "since_version must be a version number, 1 or more (got 0)".to_owned(),
            ));
        }
        Some(since) if since > current => {
            return Err(ToolError::InvalidArgument(format!(
                "since_version {since} is newer than the current version {current} of {path}"
            )));
        }
        Some(since) if since == current => (
            ReadBody::Diff(LineDiff {
                since_version: since,
                chunks: Vec::new(),
            }),
            0,
        ),
        Some(since) => match s.read_version(&agent, &path, since)? {
            None => whole(&read(current)?, Some(WholeContentReason::VersionTooOld))?,
            Some(old) => {
                let new = read(current)?;
                let form = if r.full_diff {
                    Form::Full
                } else {
                    Form::Compact
                };
                let chunks = diff::diff(&old, &new, form);
                let size = diff::encoded_chunks_len(&chunks);
                // A caller who asks for the full form wants every line, saving or not. The
                // content takes at least its bytes and two quotes as JSON, so its escapes are
                // counted only for a diff that is not already smaller than that.
                let not_smaller = size >= new.len() + 2 && size >= diff::encoded_len(&new);
                if form == Form::Compact && not_smaller {
                    whole(&new, Some(WholeContentReason::DiffNotSmaller))?
                } else if size as u64 > budget {
                    whole(&new, Some(WholeContentReason::DiffTooLarge))?
                } else {
                    let body = ReadBody::Diff(LineDiff {
                        since_version: since,
                        chunks,
                    });
                    (body, size)
                }
            }
        },
    };
    Ok(ReadFileResult {
        path: r.path,
        current_version: current,
        body,
        tokens: crate::limits::tokens(size as u64),
    })
}

/// The agent's files under a prefix, sorted by path.
pub fn list_files(
    s: &(impl Storage + ?Sized),
    r: ListFilesRequest,
) -> Result<Vec<FileMeta>, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let prefix = Prefix::parse(r.prefix.as_deref())?;
    Ok(s.list_files(&agent, &prefix)?)
}

/// Deletes a file with all its versions and summaries; its version numbers are not reused.
pub fn delete_file(
    s: &(impl Storage + ?Sized),
    r: DeleteFileRequest,
) -> Result<DeleteFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    if let Some(expected) = r.expected_version {
        let state = s.stat_file(&agent, &path)?;
        expect_version(&path, current_version(state.as_ref()), expected)?;
    }
    let deleted = s.delete_file(&agent, &path)?;
    Ok(DeleteFileResult {
        path: r.path,
        deleted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LimitOverrides;
    use crate::api::{DiffChunk, Edit, LineEdit, TextEdit};
    use crate::limits::{MAX_FILES, MAX_TOTAL_BYTES, MAX_WRITE_BYTES, NO_OVERRIDES};
    use crate::testing::Memory;

    fn write(s: &Memory, path: &str, content: &str) -> Result<WriteFileResult, ToolError> {
        write_file(
            s,
            WriteFileRequest {
                agent_id: "a".into(),
                path: path.into(),
                content: content.into(),
                expected_version: None,
            },
        )
    }

    fn read(s: &Memory, path: &str, since: Option<u64>) -> Result<ReadFileResult, ToolError> {
        read_file(
            s,
            ReadFileRequest {
                agent_id: "a".into(),
                path: path.into(),
                since_version: since,
                full_diff: false,
                offset: None,
                limit: None,
                column: None,
            },
        )
    }

    /// The body of a whole content that fits one answer.
    fn whole(content: &str, reason: Option<WholeContentReason>) -> ReadBody {
        ReadBody::Content(WholeContent {
            content: content.into(),
            reason,
            first_line: 1,
            next_line: None,
            next_column: None,
            lines_left: 0,
        })
    }

    fn delete(s: &Memory, path: &str) -> bool {
        delete_file(
            s,
            DeleteFileRequest {
                agent_id: "a".into(),
                path: path.into(),
                expected_version: None,
            },
        )
        .unwrap()
        .deleted
    }

    #[test]
    fn versions_count_up_and_unchanged_writes_make_none() {
        let s = Memory::default();
        assert_eq!(write(&s, "f", "one").unwrap().version, 1);
        let again = write(&s, "f", "one").unwrap();
        assert_eq!((again.version, again.unchanged), (1, true));
        let two = write(&s, "f", "two").unwrap();
        assert_eq!((two.version, two.unchanged, two.bytes), (2, false, 3));
        // Same size, other content: a new version.
        assert_eq!(write(&s, "f", "owt").unwrap().version, 3);
    }

    #[test]
    fn numbers_never_repeat_after_a_delete() {
        let s = Memory::default();
        write(&s, "f", "one").unwrap();
        write(&s, "f", "two").unwrap();
        assert!(delete(&s, "f"));
        assert!(!delete(&s, "f"), "a second delete finds nothing");
        assert_eq!(write(&s, "f", "one").unwrap().version, 3);
        let r = read(&s, "f", Some(1)).unwrap();
        assert_eq!(
            r.body,
            whole("one", Some(WholeContentReason::VersionTooOld)),
            "version 1 of the deleted file must not be diffed against"
        );
    }

    #[test]
    fn only_the_newest_ten_versions_are_kept_and_bytes_follow() {
        let s = Memory::default();
        for i in 1..=12 {
            write(&s, "f", &format!("v{i:02}")).unwrap();
        }
        assert_eq!(s.kept_versions("a", "f"), (3..=12).collect::<Vec<_>>());
        assert_eq!(s.usage_of("a").total_bytes, 10 * 3);
        let r = read(&s, "f", Some(2)).unwrap();
        assert!(matches!(
            r.body,
            ReadBody::Content(WholeContent {
                reason: Some(WholeContentReason::VersionTooOld),
                ..
            })
        ));
        // Version 3 is kept; a three-byte file's diff is larger than the file itself.
        assert!(matches!(
            read(&s, "f", Some(3)).unwrap().body,
            ReadBody::Content(WholeContent {
                reason: Some(WholeContentReason::DiffNotSmaller),
                ..
            })
        ));
    }

    #[test]
    fn write_size_limit_at_n_and_n_plus_one() {
        let s = Memory::default();
        let limit = MAX_WRITE_BYTES as usize;
        assert_eq!(
            write(&s, "f", &"x".repeat(limit)).unwrap().bytes,
            limit as u64
        );
        assert_eq!(
            write(&s, "g", &"x".repeat(limit + 1)),
            Err(ToolError::InvalidArgument(
                "content is 1048577 bytes; the limit for one write is 1048576 bytes".into()
            ))
        );
        // Bytes, not characters: 'é' is two bytes.
        let e = "é".repeat(limit / 2);
        assert_eq!(write(&s, "h", &e).unwrap().bytes, limit as u64);
        assert_eq!(
            write(&s, "h2", &format!("{e}x")).unwrap_err(),
            ToolError::InvalidArgument(
                "content is 1048577 bytes; the limit for one write is 1048576 bytes".into()
            )
        );
    }

    #[test]
    fn file_quota_at_n_and_n_plus_one() {
        let s = Memory::default();
        for i in 0..MAX_FILES {
            write(&s, &format!("f{i}"), "x").unwrap();
        }
        let err = write(&s, "one-more", "x").unwrap_err();
        assert_eq!(
            err,
            ToolError::QuotaExceeded(
                "agent \"a\" has 1000 files; the quota is 1000 files (delete one to make room)"
                    .into()
            )
        );
        // Rewriting an existing file at the quota is fine, and a delete makes room.
        assert_eq!(write(&s, "f0", "y").unwrap().version, 2);
        assert!(delete(&s, "f1"));
        assert_eq!(write(&s, "one-more", "x").unwrap().version, 1);
    }

    #[test]
    fn byte_quota_counts_pruned_versions_as_freed() {
        let s = Memory::default();
        s.set_total_bytes("a", MAX_TOTAL_BYTES - 10);
        assert_eq!(write(&s, "f", &"x".repeat(10)).unwrap().bytes, 10);
        let err = write(&s, "g", "y").unwrap_err();
        assert!(
            matches!(&err, ToolError::QuotaExceeded(m) if m.contains("104857601 bytes")),
            "{err:?}"
        );
        assert_eq!(
            s.usage_of("a").total_bytes,
            MAX_TOTAL_BYTES,
            "nothing changed"
        );
    }

    #[test]
    fn diff_answers() {
        let s = Memory::default();
        let old: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        write(&s, "f", &old).unwrap();
        let new = old.replace("line 100\n", "changed\n");
        write(&s, "f", &new).unwrap();

        let r = read(&s, "f", Some(1)).unwrap();
        assert_eq!(r.current_version, 2);
        let ReadBody::Diff(d) = r.body else {
            panic!("expected a diff")
        };
        assert_eq!(d.since_version, 1);
        assert_eq!(diff::apply(&old, &d.chunks).unwrap(), new);
        assert!(d.chunks.iter().any(|c| matches!(c, DiffChunk::Skip(_))));

        let same = read(&s, "f", Some(2)).unwrap();
        assert_eq!(
            same.body,
            ReadBody::Diff(LineDiff {
                since_version: 2,
                chunks: vec![]
            })
        );
        assert_eq!(
            read(&s, "f", Some(3)).unwrap_err(),
            ToolError::InvalidArgument(
                "since_version 3 is newer than the current version 2 of \"f\"".into()
            )
        );
        assert_eq!(
            read(&s, "f", Some(0)).unwrap_err(),
            ToolError::InvalidArgument(
                "since_version must be a version number, 1 or more (got 0)".into()
            )
        );
    }

    #[test]
    fn a_diff_larger_than_the_content_sends_the_content() {
        let s = Memory::default();
        write(&s, "f", "a\nb").unwrap();
        write(&s, "f", "c\nd").unwrap();
        assert_eq!(
            read(&s, "f", Some(1)).unwrap().body,
            whole("c\nd", Some(WholeContentReason::DiffNotSmaller))
        );
    }

    #[test]
    fn the_full_form_is_sent_even_when_larger() {
        let s = Memory::default();
        write(&s, "f", "a\nb").unwrap();
        write(&s, "f", "c\nd").unwrap();
        let r = read_file(
            &s,
            ReadFileRequest {
                agent_id: "a".into(),
                path: "f".into(),
                since_version: Some(1),
                full_diff: true,
                offset: None,
                limit: None,
                column: None,
            },
        )
        .unwrap();
        assert!(matches!(r.body, ReadBody::Diff(_)));
    }

    #[test]
    fn missing_files_are_named() {
        let s = Memory::default();
        assert_eq!(
            read(&s, "nope", None).unwrap_err(),
            ToolError::NotFound("no file at path \"nope\" for agent \"a\"".into())
        );
    }

    #[test]
    fn rejected_calls_touch_nothing() {
        let s = Memory::default();
        assert_eq!(
            write(&s, "../x", "c").unwrap_err(),
            ToolError::InvalidArgument("path must not contain '..' (got \"../x\")".into())
        );
        assert_eq!(
            write(&s, "ok", &"x".repeat(MAX_WRITE_BYTES as usize + 1)).unwrap_err(),
            ToolError::InvalidArgument(
                "content is 1048577 bytes; the limit for one write is 1048576 bytes".into()
            )
        );
        assert_eq!(s.calls(), 0, "validation happens before any storage call");
    }

    #[test]
    fn embedder_limits_replace_the_defaults() {
        let s = Memory::with_limits(LimitOverrides {
            max_write_bytes: Some(10),
            versions_kept: Some(2),
            max_files: Some(1),
            ..NO_OVERRIDES
        });
        assert_eq!(
            write(&s, "f", &"x".repeat(11)),
            Err(ToolError::InvalidArgument(
                "content is 11 bytes; the limit for one write is 10 bytes".into()
            ))
        );
        for content in ["1", "2", "3"] {
            write(&s, "f", content).unwrap();
        }
        assert_eq!(s.kept_versions("a", "f"), vec![2, 3]);
        assert!(matches!(
            write(&s, "g", "x"),
            Err(ToolError::QuotaExceeded(m)) if m.contains("the quota is 1 file ")
        ));
    }

    #[test]
    fn a_zero_history_still_keeps_the_current_version() {
        let s = Memory::with_limits(LimitOverrides {
            versions_kept: Some(0),
            ..NO_OVERRIDES
        });
        write(&s, "f", "1").unwrap();
        write(&s, "f", "2").unwrap();
        assert_eq!(s.kept_versions("a", "f"), vec![2]);
    }

    fn edit(s: &Memory, base: u64, edits: Vec<Edit>) -> Result<WriteFileResult, ToolError> {
        edit_file(
            s,
            EditFileRequest {
                agent_id: "a".into(),
                path: "f".into(),
                base_version: base,
                edits,
            },
        )
    }

    fn conditional(s: &Memory, content: &str, expected: u64) -> Result<WriteFileResult, ToolError> {
        write_file(
            s,
            WriteFileRequest {
                agent_id: "a".into(),
                path: "f".into(),
                content: content.into(),
                expected_version: Some(expected),
            },
        )
    }

    #[test]
    fn expected_versions_guard_writes_and_deletes() {
        let s = Memory::default();
        assert_eq!(conditional(&s, "one", 0).unwrap().version, 1);
        assert_eq!(
            conditional(&s, "two", 0),
            Err(ToolError::Conflict(
                "\"f\" is at version 1, but the call expected no file; read it again and retry"
                    .into()
            ))
        );
        assert_eq!(conditional(&s, "two", 1).unwrap().version, 2);
        let stale = conditional(&s, "three", 1).unwrap_err();
        assert!(
            matches!(&stale, ToolError::Conflict(m) if m.contains("is at version 2, but the call expected version 1")),
            "{stale:?}"
        );
        let delete = |expected| {
            delete_file(
                &s,
                DeleteFileRequest {
                    agent_id: "a".into(),
                    path: "f".into(),
                    expected_version: Some(expected),
                },
            )
        };
        assert!(matches!(delete(1), Err(ToolError::Conflict(_))));
        assert_eq!(s.kept_versions("a", "f"), vec![1, 2]);
        assert!(delete(2).unwrap().deleted);
        assert!(matches!(delete(2), Err(ToolError::Conflict(m)) if m.contains("does not exist")));
    }

    #[test]
    fn edits_apply_in_order_against_the_current_version() {
        let s = Memory::default();
        write(&s, "f", "alpha\nbeta\ngamma\n").unwrap();
        let r = edit(
            &s,
            1,
            vec![
                Edit::Text(TextEdit {
                    old: "beta".into(),
                    new: "BETA".into(),
                }),
                Edit::Lines(LineEdit {
                    start: 1,
                    end: 1,
                    lines: vec!["ALPHA".into()],
                }),
            ],
        )
        .unwrap();
        assert_eq!((r.version, r.bytes), (2, 17));
        assert_eq!(
            read(&s, "f", None).unwrap().body,
            whole("ALPHA\nBETA\ngamma\n", None)
        );
        // A stale base is a conflict; a failing edit names itself; both change nothing.
        assert!(matches!(
            edit(&s, 1, vec![]),
            Err(ToolError::InvalidArgument(_))
        ));
        let stale = edit(
            &s,
            1,
            vec![Edit::Text(TextEdit {
                old: "gamma".into(),
                new: "G".into(),
            })],
        );
        assert!(matches!(stale, Err(ToolError::Conflict(m)) if m.contains("is at version 2")));
        let missing = edit(
            &s,
            2,
            vec![
                Edit::Text(TextEdit {
                    old: "gamma".into(),
                    new: "G".into(),
                }),
                Edit::Text(TextEdit {
                    old: "delta".into(),
                    new: "D".into(),
                }),
            ],
        );
        assert!(
            matches!(missing, Err(ToolError::InvalidArgument(m)) if m.starts_with("edit 2 of 2: old text \"delta\" does not occur"))
        );
        assert_eq!(s.kept_versions("a", "f"), vec![1, 2]);
        // An edit that changes nothing makes no version.
        let same = edit(
            &s,
            2,
            vec![Edit::Text(TextEdit {
                old: "gamma".into(),
                new: "gamma".into(),
            })],
        )
        .unwrap();
        assert!(same.unchanged);
    }

    #[test]
    fn an_edit_may_not_grow_a_file_past_the_write_limit() {
        let s = Memory::with_limits(LimitOverrides {
            max_write_bytes: Some(8),
            ..NO_OVERRIDES
        });
        write(&s, "f", "12345678").unwrap();
        let grown = edit(
            &s,
            1,
            vec![Edit::Text(TextEdit {
                old: "8".into(),
                new: "89".into(),
            })],
        );
        assert_eq!(
            grown,
            Err(ToolError::InvalidArgument(
                "content is 9 bytes; the limit for one write is 8 bytes".into()
            ))
        );
    }

    #[test]
    fn history_lists_kept_versions_with_hashes() {
        let s = Memory::with_limits(LimitOverrides {
            versions_kept: Some(2),
            ..NO_OVERRIDES
        });
        for content in ["abc", "abcd", "abc"] {
            write(&s, "f", content).unwrap();
        }
        let h = file_history(&s, "a", "f").unwrap();
        let got: Vec<_> = h
            .versions
            .iter()
            .map(|v| (v.version, v.bytes, &v.sha256[..8]))
            .collect();
        assert_eq!(got, vec![(2, 4, "88d4266f"), (3, 3, "ba7816bf")]);
        assert!(matches!(
            file_history(&s, "a", "nope"),
            Err(ToolError::NotFound(_))
        ));
    }
}
