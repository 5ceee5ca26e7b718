//! The tools, one function each, grouped by what they own. Each parses its arguments
//! first (a rejected call touches nothing), then works through the ports.

mod context;
mod edit;
mod files;
mod logs;
pub mod search;
mod summary;
mod usage;

pub use context::read_files;
pub use files::{
    check_size, delete_file, edit_file, file_history, list_files, read_file, write_file,
};
pub use logs::{
    append_log, check_entry_json, check_entry_size, forget_log, nesting, outside_strings, read_log,
};
pub use search::search;
pub use summary::summarize_file;
pub use usage::get_usage_stats;

use crate::names::{AgentId, FilePath};
use crate::{StorageError, ToolError};

impl From<StorageError> for ToolError {
    fn from(e: StorageError) -> Self {
        ToolError::Storage(e)
    }
}

fn not_found(agent: &AgentId, path: &FilePath) -> ToolError {
    ToolError::NotFound(format!("no file at path {path} for agent {agent}"))
}
