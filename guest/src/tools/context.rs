//! `read_files`: many whole files in one call, as many as fit a token budget; the call an
//! agent makes to pick up where a session left off.
//!
//! Files are taken in the order asked (or path order under a prefix). A file that does not
//! fit is named with its size and skipped, and smaller files after it may still fit: the
//! budget is filled, not cut at the first large file. Files are never cut: a part of a file
//! is `read_file`'s job.

use super::not_found;
use crate::ToolError;
use crate::api::{FileContent, LeftOut, ReadFilesRequest, ReadFilesResult};
use crate::diff::encoded_len;
use crate::limits::{FILE_FRAME_BYTES, MAX_PATHS, quotas};
use crate::names::{AgentId, FilePath, Prefix};
use crate::ports::Storage;

/// Reads the files asked for, whole, within the budget.
pub fn read_files(
    s: &(impl Storage + ?Sized),
    r: ReadFilesRequest,
) -> Result<ReadFilesResult, ToolError> {
    let agent = AgentId::parse(&r.agent_id)?;
    let answer_limit = quotas(&s.limits(&agent)).max_response_tokens;
    let max_tokens = r.max_tokens.unwrap_or(answer_limit);
    if max_tokens == 0 || max_tokens > answer_limit {
        return Err(ToolError::InvalidArgument(format!(
            "max_tokens must be 1 to {answer_limit}, one answer's worth (got {max_tokens})"
        )));
    }
    let mut missing = Vec::new();
    let wanted: Vec<(FilePath, u64)> = match (r.paths, r.prefix) {
        (Some(_), Some(_)) => {
            return Err(ToolError::InvalidArgument(
                "give paths or prefix, not both".to_owned(),
            ));
        }
        (Some(paths), None) => {
            if paths.len() > MAX_PATHS {
                return Err(ToolError::InvalidArgument(format!(
                    "paths may name at most {MAX_PATHS} files (got {})",
                    paths.len()
                )));
            }
            let mut wanted = Vec::with_capacity(paths.len());
            for raw in paths {
                let path = FilePath::parse(&raw)?;
                match s
                    .stat_file(&agent, &path)?
                    .and_then(|st| st.kept.last().map(|v| v.version))
                {
                    Some(version) => wanted.push((path, version)),
                    None => missing.push(raw),
                }
            }
            wanted
        }
        (None, prefix) => {
            let prefix = Prefix::parse(prefix.as_deref())?;
            s.list_files(&agent, &prefix)?
                .into_iter()
                .map(|f| FilePath::parse(&f.path).map(|p| (p, f.version)))
                .collect::<Result<_, _>>()?
        }
    };
    // Every file is named in the answer, read or left out: that much is set aside first,
    // and the contents share the rest.
    let frame = |path: &FilePath| encoded_len(path.as_str()) as u64 + FILE_FRAME_BYTES;
    let reserved: u64 = wanted.iter().map(|(path, _)| frame(path)).sum();
    let budget = crate::limits::payload_bytes(max_tokens);
    let (mut files, mut left_out, mut used) = (Vec::new(), Vec::new(), reserved);
    for (path, version) in wanted {
        let content = s
            .read_version(&agent, &path, version)?
            .ok_or_else(|| not_found(&agent, &path))?;
        let size = encoded_len(&content) as u64;
        if used + size > budget {
            left_out.push(LeftOut {
                path: path.as_str().to_owned(),
                tokens: crate::limits::tokens(size + frame(&path)),
            });
            continue;
        }
        used += size;
        files.push(FileContent {
            path: path.as_str().to_owned(),
            version,
            content,
        });
    }
    Ok(ReadFilesResult {
        files,
        left_out,
        missing,
        tokens: crate::limits::tokens(used),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::WriteFileRequest;
    use crate::testing::Memory;
    use crate::tools::write_file;

    fn request(
        paths: Option<Vec<&str>>,
        prefix: Option<&str>,
        max_tokens: Option<u64>,
    ) -> ReadFilesRequest {
        ReadFilesRequest {
            agent_id: "a".into(),
            paths: paths.map(|p| p.into_iter().map(str::to_owned).collect()),
            prefix: prefix.map(str::to_owned),
            max_tokens,
        }
    }

    fn store() -> Memory {
        let s = Memory::default();
        for (path, size) in [
            ("a/small", 100),
            ("a/big", 8_000),
            ("a/medium", 1_000),
            ("b/other", 10),
        ] {
            let r = WriteFileRequest {
                agent_id: "a".into(),
                path: path.into(),
                content: "x".repeat(size),
                expected_version: None,
            };
            write_file(&s, r).unwrap();
        }
        s
    }

    #[test]
    fn the_budget_is_filled_and_what_does_not_fit_is_named() {
        let s = store();
        let r = read_files(
            &s,
            request(
                Some(vec!["a/small", "a/big", "a/medium", "nope"]),
                None,
                Some(1_000),
            ),
        )
        .unwrap();
        let read: Vec<&str> = r.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(read, vec!["a/small", "a/medium"]);
        assert_eq!(r.left_out.len(), 1);
        assert_eq!(
            (r.left_out[0].path.as_str(), r.left_out[0].tokens),
            ("a/big", 2_143)
        );
        assert_eq!(r.missing, vec!["nope"]);
        assert!(r.tokens <= 1_000);
        let all = read_files(&s, request(None, Some("a/"), None)).unwrap();
        assert_eq!(all.files.len(), 3);
    }

    #[test]
    fn bad_requests_are_named() {
        let s = store();
        assert!(
            matches!(read_files(&s, request(Some(vec![]), Some("a"), None)), Err(ToolError::InvalidArgument(m)) if m == "give paths or prefix, not both")
        );
        assert_eq!(
            read_files(&s, request(None, None, Some(0))).unwrap_err(),
            ToolError::InvalidArgument(
                "max_tokens must be 1 to 20000, one answer's worth (got 0)".into()
            )
        );
        assert_eq!(
            read_files(&s, request(None, None, Some(20_001))).unwrap_err(),
            ToolError::InvalidArgument(
                "max_tokens must be 1 to 20000, one answer's worth (got 20001)".into()
            )
        );
        assert_eq!(
            read_files(&s, request(Some(vec!["../x"]), None, None)).unwrap_err(),
            ToolError::InvalidArgument("path must not contain '..' (got \"../x\")".into())
        );
    }
}
