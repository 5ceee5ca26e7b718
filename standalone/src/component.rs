//! The component's exports: the guest's tools, each in one transaction of the store in the
//! first preopened folder, and the settings. Nothing here decides a rule.

// `export!` expands to the canonical-ABI entry points, which are `unsafe extern` functions.
#![allow(unsafe_code)]

use crate::lease::Folder;
use crate::pad::Pad;
use scratchpad_guest::api::{self, Guest};
use scratchpad_guest::limits::NO_OVERRIDES;
use scratchpad_guest::{FileMeta, LimitOverrides, StorageError, ToolError, tools};
use scratchpad_store::storage::Tx;
use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, OpenFlags, PathFlags};

mod settings_bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "standalone-settings",
        with: { "scratchpad:mcp/types@0.1.0": scratchpad_guest::bindings::scratchpad::mcp::types },
    });
}

/// The preopened folder as the lease reaches it: WASI calls asking only for what they need.
struct Preopen(Descriptor);

impl Folder for Preopen {
    fn read(&self, name: &str) -> Result<Option<String>, String> {
        let file = match self.0.open_at(
            PathFlags::empty(),
            name,
            OpenFlags::empty(),
            DescriptorFlags::READ,
        ) {
            Ok(file) => file,
            Err(ErrorCode::NoEntry) => return Ok(None),
            Err(e) => return Err(e.message().into()),
        };
        let (bytes, _) = file.read(256, 0).map_err(|e| e.message().to_owned())?;
        Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
    }

    fn replace(&self, name: &str, staged: &str, text: &str) -> Result<(), String> {
        let file = self
            .0
            .open_at(
                PathFlags::empty(),
                staged,
                OpenFlags::CREATE | OpenFlags::TRUNCATE,
                DescriptorFlags::WRITE,
            )
            .map_err(|e| e.message().to_owned())?;
        file.write(text.as_bytes(), 0)
            .map_err(|e| e.message().to_owned())?;
        drop(file);
        self.0
            .rename_at(staged, &self.0, name)
            .map_err(|e| e.message().to_owned())
    }

    fn remove(&self, name: &str) {
        let _ = self.0.unlink_file_at(name);
    }
}

thread_local! {
    /// The store, opened by the first call.
    static PAD: RefCell<Option<Pad<Preopen>>> = const { RefCell::new(None) };
    /// The limits `set-limits` gave, for the store once it is open.
    static LIMITS: Cell<LimitOverrides> = const { Cell::new(NO_OVERRIDES) };
}

/// The summariser: the embedder's.
#[cfg(not(feature = "without-summariser"))]
fn summariser() -> impl scratchpad_guest::Summariser {
    scratchpad_guest::Imports
}

/// The summariser of a component built without one: always `not-configured`.
#[cfg(feature = "without-summariser")]
fn summariser() -> impl scratchpad_guest::Summariser {
    NoSummariser
}

#[cfg(feature = "without-summariser")]
struct NoSummariser;

#[cfg(feature = "without-summariser")]
impl scratchpad_guest::Summariser for NoSummariser {
    fn model(&self) -> String {
        "none".into()
    }
    fn summarise(
        &self,
        _: &scratchpad_guest::bindings::scratchpad::mcp::summariser::SummaryRequest,
    ) -> Result<String, scratchpad_guest::SummariserError> {
        Err(scratchpad_guest::SummariserError::NotConfigured(
            "summarize_file needs a summariser, and this component was built without one \
             (scratchpad-mcp component --standalone without --without-summariser has one); \
             every other tool works without it"
                .into(),
        ))
    }
}

/// The first preopened folder, where the store lives: its path for SQLite, and its
/// descriptor for the lease.
fn folder() -> Result<(PathBuf, Preopen), ToolError> {
    wasip2::filesystem::preopens::get_directories()
        .into_iter()
        .next()
        .map(|(dir, name)| (PathBuf::from(name), Preopen(dir)))
        .ok_or_else(|| {
            ToolError::Storage(StorageError::Other(
                "no folder was preopened: preopen the folder that holds (or will hold) scratchpad.db"
                    .into(),
            ))
        })
}

/// The variable by which an embedder gives all its instances one lease token, so that an
/// instance made after a trap resumes the lease of the one that trapped at once.
const LEASE_TOKEN_VAR: &str = "SCRATCHPAD_LEASE_TOKEN";

/// This instance's lease token: the embedder's, or a random one.
fn lease_token() -> u64 {
    std::env::var(LEASE_TOKEN_VAR)
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(wasip2::random::random::get_random_u64)
}

/// Runs one call in the store's transaction, opening the store first if need be.
fn call<R>(agent: &str, run: impl FnOnce(&Tx<'_>) -> Result<R, ToolError>) -> Result<R, ToolError> {
    PAD.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let token = lease_token();
            let (path, preopen) = folder()?;
            let mut pad = Pad::open(&path, preopen, token)
                .map_err(|e| ToolError::Storage(StorageError::Other(e.to_string())))?;
            pad.set_limits(LIMITS.get());
            *slot = Some(pad);
        }
        let pad = slot.as_ref().expect("opened above");
        let answer = pad.call(agent, run);
        // A store another process took over is opened again (waiting for it) next time.
        if answer.is_err() && !pad.held() {
            *slot = None;
        }
        answer
    })
}

struct Component;

impl Guest for Component {
    fn write_file(r: api::WriteFileRequest) -> Result<api::WriteFileResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::write_file(s, r))
    }
    fn read_file(r: api::ReadFileRequest) -> Result<api::ReadFileResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::read_file(s, r))
    }
    fn edit_file(r: api::EditFileRequest) -> Result<api::WriteFileResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::edit_file(s, r))
    }
    fn file_history(agent_id: String, path: String) -> Result<api::History, ToolError> {
        call(&agent_id, |s| tools::file_history(s, &agent_id, &path))
    }
    fn append_log(r: api::AppendLogRequest) -> Result<api::AppendLogResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::append_log(s, r))
    }
    fn read_log(r: api::ReadLogRequest) -> Result<api::LogPage, ToolError> {
        call(&r.agent_id.clone(), |s| tools::read_log(s, r))
    }
    fn forget_log(r: api::ForgetLogRequest) -> Result<api::ForgetLogResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::forget_log(s, r))
    }
    fn list_files(r: api::ListFilesRequest) -> Result<Vec<FileMeta>, ToolError> {
        call(&r.agent_id.clone(), |s| tools::list_files(s, r))
    }
    fn delete_file(r: api::DeleteFileRequest) -> Result<api::DeleteFileResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::delete_file(s, r))
    }
    fn summarize_file(r: api::SummarizeFileRequest) -> Result<api::SummarizeFileResult, ToolError> {
        call(&r.agent_id.clone(), |s| {
            tools::summarize_file(s, &summariser(), r)
        })
    }
    fn read_files(r: api::ReadFilesRequest) -> Result<api::ReadFilesResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::read_files(s, r))
    }
    fn search(r: api::SearchRequest) -> Result<api::SearchResult, ToolError> {
        call(&r.agent_id.clone(), |s| tools::search(s, r))
    }
    fn get_usage_stats(agent_id: String) -> Result<api::UsageStats, ToolError> {
        call(&agent_id, |s| tools::get_usage_stats(s, &agent_id))
    }
}

impl settings_bindings::exports::scratchpad::mcp::settings::Guest for Component {
    fn set_limits(limits: LimitOverrides) {
        LIMITS.set(limits);
        PAD.with(|cell| {
            if let Some(pad) = cell.borrow_mut().as_mut() {
                pad.set_limits(limits);
            }
        });
    }

    fn close() {
        if let Some(pad) = PAD.with(|cell| cell.borrow_mut().take()) {
            pad.close();
        }
    }
}

// The JSON way in: each tool in its own transaction (see `Guest for Component` above).
scratchpad_guest::export_json!(Component);

scratchpad_guest::bindings::export!(Component with_types_in scratchpad_guest::bindings);
settings_bindings::export!(Component with_types_in settings_bindings);
