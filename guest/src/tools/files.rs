//! Versioned files: write, read (whole or as a diff), list and delete.

use super::not_found;
use crate::api::{
    DeleteFileRequest, DeleteFileResult, LineDiff, ListFilesRequest, ReadBody, ReadFileRequest,
    ReadFileResult, WholeContent, WholeContentReason, WriteFileRequest, WriteFileResult,
};
use crate::diff::{self, Form};
use crate::limits::quotas;
use crate::names::{AgentId, FilePath, Prefix};
use crate::ports::Storage;
use crate::{FileMeta, ToolError};

/// Stores content as a new version, unless it equals the current one; prunes to the newest
/// `versions_kept` in the same transaction.
pub fn write_file(s: &impl Storage, r: WriteFileRequest) -> Result<WriteFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    let q = quotas(&s.limits(&agent));
    let bytes = r.content.len() as u64;
    if bytes > q.max_write_bytes {
        return Err(ToolError::InvalidArgument(format!(
            "content is {bytes} bytes; the limit for one write is {} bytes",
            q.max_write_bytes
        )));
    }
    let state = s.stat_file(&agent, &path)?;
    let (last_version, kept) = state.map_or((0, Vec::new()), |st| (st.last_version, st.kept));
    if let Some(current) = kept.last()
        && current.bytes == bytes
        && s.read_version(&agent, &path, current.version)?.as_deref() == Some(r.content.as_str())
    {
        return Ok(WriteFileResult {
            path: r.path,
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
    let usage = s.get_usage(&agent)?;
    if kept.is_empty() && usage.file_count >= q.max_files {
        return Err(ToolError::QuotaExceeded(format!(
            "agent {agent} has {} files; the quota is {} files (delete one to make room)",
            usage.file_count, q.max_files
        )));
    }
    let total = (usage.total_bytes + bytes).saturating_sub(pruned_bytes);
    if total > q.max_total_bytes {
        return Err(ToolError::QuotaExceeded(format!(
            "writing {bytes} bytes would bring agent {agent} to {total} bytes stored; the quota is {} bytes",
            q.max_total_bytes
        )));
    }
    s.put_version(&agent, &path, version, &r.content)?;
    if pruned_bytes > 0 {
        s.prune_versions(&agent, &path, keep_from)?;
    }
    Ok(WriteFileResult {
        path: r.path,
        version,
        bytes,
        unchanged: false,
    })
}

/// The whole current content, or what changed since `since_version`.
pub fn read_file(s: &impl Storage, r: ReadFileRequest) -> Result<ReadFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
    let current = s
        .stat_file(&agent, &path)?
        .and_then(|st| st.kept.last().map(|v| v.version))
        .ok_or_else(|| not_found(&agent, &path))?;
    let read = |version| {
        s.read_version(&agent, &path, version)?
            .ok_or_else(|| not_found(&agent, &path))
    };
    let whole = |reason| -> Result<ReadBody, ToolError> {
        Ok(ReadBody::Content(WholeContent {
            content: read(current)?,
            reason,
        }))
    };
    let body = match r.since_version {
        None => whole(None)?,
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
        Some(since) if since == current => ReadBody::Diff(LineDiff {
            since_version: since,
            chunks: Vec::new(),
        }),
        Some(since) => match s.read_version(&agent, &path, since)? {
            None => whole(Some(WholeContentReason::VersionTooOld))?,
            Some(old) => {
                let new = read(current)?;
                let form = if r.full_diff {
                    Form::Full
                } else {
                    Form::Compact
                };
                let chunks = diff::diff(&old, &new, form);
                // A caller who asks for the full form wants every line, saving or not.
                if form == Form::Compact
                    && diff::encoded_chunks_len(&chunks) >= diff::encoded_len(&new)
                {
                    ReadBody::Content(WholeContent {
                        content: new,
                        reason: Some(WholeContentReason::DiffNotSmaller),
                    })
                } else {
                    ReadBody::Diff(LineDiff {
                        since_version: since,
                        chunks,
                    })
                }
            }
        },
    };
    Ok(ReadFileResult {
        path: r.path,
        current_version: current,
        body,
    })
}

/// The agent's files under a prefix, sorted by path.
pub fn list_files(s: &impl Storage, r: ListFilesRequest) -> Result<Vec<FileMeta>, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let prefix = Prefix::parse(r.prefix.as_deref())?;
    Ok(s.list_files(&agent, &prefix)?)
}

/// Deletes a file with all its versions and summaries; its version numbers are not reused.
pub fn delete_file(s: &impl Storage, r: DeleteFileRequest) -> Result<DeleteFileResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let path = FilePath::parse(&r.path)?;
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
    use crate::api::DiffChunk;
    use crate::limits::{MAX_FILES, MAX_TOTAL_BYTES, MAX_WRITE_BYTES, NO_OVERRIDES};
    use crate::testing::Memory;

    fn write(s: &Memory, path: &str, content: &str) -> Result<WriteFileResult, ToolError> {
        write_file(
            s,
            WriteFileRequest {
                agent_id: "a".into(),
                path: path.into(),
                content: content.into(),
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
            },
        )
    }

    fn delete(s: &Memory, path: &str) -> bool {
        delete_file(
            s,
            DeleteFileRequest {
                agent_id: "a".into(),
                path: path.into(),
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
            ReadBody::Content(WholeContent {
                content: "one".into(),
                reason: Some(WholeContentReason::VersionTooOld)
            }),
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
        assert!(write(&s, "f", &"x".repeat(limit)).is_ok());
        assert_eq!(
            write(&s, "g", &"x".repeat(limit + 1)),
            Err(ToolError::InvalidArgument(
                "content is 1048577 bytes; the limit for one write is 1048576 bytes".into()
            ))
        );
        // Bytes, not characters: 'é' is two bytes.
        let e = "é".repeat(limit / 2);
        assert!(write(&s, "h", &e).is_ok());
        assert!(write(&s, "h2", &format!("{e}x")).is_err());
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
        assert!(write(&s, "f0", "y").is_ok());
        assert!(delete(&s, "f1"));
        assert!(write(&s, "one-more", "x").is_ok());
    }

    #[test]
    fn byte_quota_counts_pruned_versions_as_freed() {
        let s = Memory::default();
        s.set_total_bytes("a", MAX_TOTAL_BYTES - 10);
        assert!(write(&s, "f", &"x".repeat(10)).is_ok());
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
        assert!(read(&s, "f", Some(0)).is_err());
    }

    #[test]
    fn a_diff_larger_than_the_content_sends_the_content() {
        let s = Memory::default();
        write(&s, "f", "a\nb").unwrap();
        write(&s, "f", "c\nd").unwrap();
        assert_eq!(
            read(&s, "f", Some(1)).unwrap().body,
            ReadBody::Content(WholeContent {
                content: "c\nd".into(),
                reason: Some(WholeContentReason::DiffNotSmaller)
            })
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
        assert!(write(&s, "../x", "c").is_err());
        assert!(write(&s, "ok", &"x".repeat(MAX_WRITE_BYTES as usize + 1)).is_err());
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
            Err(ToolError::QuotaExceeded(m)) if m.contains("the quota is 1 files")
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
}
