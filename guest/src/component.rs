//! The component glue: the WIT exports call the tools, with the WIT imports as the ports.
//! Nothing here decides anything; it only forwards.

// `export!` expands to the canonical-ABI entry points, which are `unsafe extern` functions.
#![allow(unsafe_code)]

use crate::bindings::scratchpad::mcp::storage::{
    self, FileState, LogState, Retention, SearchMatch,
};
use crate::bindings::scratchpad::mcp::summariser::{self, SummaryRequest};
use crate::names::{AgentId, FilePath, Prefix};
use crate::ports::{Storage, Summariser};
use crate::{FileMeta, LimitOverrides, LogEntry, LogValue, StorageError, SummariserError, Usage};

/// The WIT imports, seen as the ports.
pub struct Imports;

impl Storage for Imports {
    fn stat_file(&self, a: &AgentId, p: &FilePath) -> Result<Option<FileState>, StorageError> {
        storage::stat_file(a.as_str(), p.as_str())
    }
    fn read_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
    ) -> Result<Option<String>, StorageError> {
        storage::read_version(a.as_str(), p.as_str(), v)
    }
    fn put_version(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        content: &str,
    ) -> Result<(), StorageError> {
        storage::put_version(a.as_str(), p.as_str(), v, content)
    }
    fn prune_versions(
        &self,
        a: &AgentId,
        p: &FilePath,
        keep_from: u64,
    ) -> Result<(), StorageError> {
        storage::prune_versions(a.as_str(), p.as_str(), keep_from)
    }
    fn delete_file(&self, a: &AgentId, p: &FilePath) -> Result<bool, StorageError> {
        storage::delete_file(a.as_str(), p.as_str())
    }
    fn list_files(&self, a: &AgentId, prefix: &Prefix) -> Result<Vec<FileMeta>, StorageError> {
        storage::list_files(a.as_str(), prefix.as_str())
    }
    fn append_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        e: &LogValue,
        bytes: u64,
    ) -> Result<u64, StorageError> {
        storage::append_log(a.as_str(), p.as_str(), e, bytes)
    }
    fn read_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        after: u64,
        limit: u32,
    ) -> Result<Vec<LogEntry>, StorageError> {
        storage::read_log(a.as_str(), p.as_str(), after, limit)
    }
    fn log_info(&self, a: &AgentId, p: &FilePath) -> Result<LogState, StorageError> {
        storage::log_info(a.as_str(), p.as_str())
    }
    fn set_log_retention(
        &self,
        a: &AgentId,
        p: &FilePath,
        retention: Retention,
    ) -> Result<(), StorageError> {
        storage::set_log_retention(a.as_str(), p.as_str(), retention)
    }
    fn trim_log(
        &self,
        a: &AgentId,
        p: &FilePath,
        before: u64,
        older_than_seconds: Option<u64>,
    ) -> Result<u64, StorageError> {
        storage::trim_log(a.as_str(), p.as_str(), before, older_than_seconds)
    }
    fn get_usage(&self, a: &AgentId) -> Result<Usage, StorageError> {
        storage::get_usage(a.as_str())
    }
    fn cached_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        model: &str,
    ) -> Result<Option<String>, StorageError> {
        storage::cached_summary(a.as_str(), p.as_str(), v, model)
    }
    fn put_summary(
        &self,
        a: &AgentId,
        p: &FilePath,
        v: u64,
        model: &str,
        summary: &str,
    ) -> Result<(), StorageError> {
        storage::put_summary(a.as_str(), p.as_str(), v, model, summary)
    }
    fn limits(&self, a: &AgentId) -> LimitOverrides {
        storage::limits(a.as_str())
    }
    fn search(
        &self,
        a: &AgentId,
        terms: &[String],
        match_all: bool,
        prefix: &Prefix,
        limit: u32,
        offset: u32,
    ) -> Result<Vec<SearchMatch>, StorageError> {
        storage::search(a.as_str(), terms, match_all, prefix.as_str(), limit, offset)
    }
}

impl Summariser for Imports {
    fn model(&self) -> String {
        summariser::model()
    }
    fn summarise(&self, request: &SummaryRequest) -> Result<String, SummariserError> {
        summariser::summarise(request)
    }
}

/// The tools as this component's exports (the `export` feature).
#[cfg(feature = "export")]
mod export {
    use super::Imports;
    use crate::api::{self, Guest};
    use crate::tools;
    use crate::{FileMeta, ToolError};

    /// The exported component.
    struct Component;

    impl Guest for Component {
        fn write_file(r: api::WriteFileRequest) -> Result<api::WriteFileResult, ToolError> {
            tools::write_file(&Imports, r)
        }
        fn read_file(r: api::ReadFileRequest) -> Result<api::ReadFileResult, ToolError> {
            tools::read_file(&Imports, r)
        }
        fn edit_file(r: api::EditFileRequest) -> Result<api::WriteFileResult, ToolError> {
            tools::edit_file(&Imports, r)
        }
        fn file_history(agent_id: String, path: String) -> Result<api::History, ToolError> {
            tools::file_history(&Imports, &agent_id, &path)
        }
        fn append_log(r: api::AppendLogRequest) -> Result<api::AppendLogResult, ToolError> {
            tools::append_log(&Imports, r)
        }
        fn read_log(r: api::ReadLogRequest) -> Result<api::LogPage, ToolError> {
            tools::read_log(&Imports, r)
        }
        fn forget_log(r: api::ForgetLogRequest) -> Result<api::ForgetLogResult, ToolError> {
            tools::forget_log(&Imports, r)
        }
        fn list_files(r: api::ListFilesRequest) -> Result<Vec<FileMeta>, ToolError> {
            tools::list_files(&Imports, r)
        }
        fn delete_file(r: api::DeleteFileRequest) -> Result<api::DeleteFileResult, ToolError> {
            tools::delete_file(&Imports, r)
        }
        fn summarize_file(
            r: api::SummarizeFileRequest,
        ) -> Result<api::SummarizeFileResult, ToolError> {
            tools::summarize_file(&Imports, &Imports, r)
        }
        fn read_files(r: api::ReadFilesRequest) -> Result<api::ReadFilesResult, ToolError> {
            tools::read_files(&Imports, r)
        }
        fn search(r: api::SearchRequest) -> Result<api::SearchResult, ToolError> {
            tools::search(&Imports, r)
        }
        fn get_usage_stats(agent_id: String) -> Result<api::UsageStats, ToolError> {
            tools::get_usage_stats(&Imports, &agent_id)
        }
    }

    crate::export_json!(Component);

    crate::bindings::export!(Component with_types_in crate::bindings);

    /// This crate's version, in a custom section of its own where a build can read it
    /// without running the component: the server's build refuses a prebuilt component
    /// (`SCRATCHPAD_GUEST_WASM`) of another version than the guest crate it links natively.
    #[used]
    #[unsafe(link_section = "scratchpad-guest-version")]
    static VERSION: [u8; VERSION_MARK.len()] = bytes_of(VERSION_MARK);

    /// What the section holds: `build_support::VERSION_MARK`, the version, a `;`.
    const VERSION_MARK: &str = concat!("scratchpad-guest-version=", env!("CARGO_PKG_VERSION"), ";");

    /// `text` as an array of its bytes.
    const fn bytes_of<const N: usize>(text: &str) -> [u8; N] {
        let bytes = text.as_bytes();
        let mut out = [0; N];
        let mut i = 0;
        while i < N {
            out[i] = bytes[i];
            i += 1;
        }
        out
    }
}
