//! Usage statistics and the quotas they are measured against.

use crate::ToolError;
use crate::api::{Quotas, UsageStats};
use crate::limits::{
    LOG_PAGE_SIZE, MAX_FILES, MAX_LOG_ENTRIES, MAX_LOG_ENTRY_BYTES, MAX_TOTAL_BYTES,
    MAX_WRITE_BYTES, VERSIONS_KEPT,
};
use crate::names::AgentId;
use crate::ports::Storage;

/// The limits every agent has.
pub fn quotas() -> Quotas {
    Quotas {
        max_files: MAX_FILES,
        max_log_entries: MAX_LOG_ENTRIES,
        max_total_bytes: MAX_TOTAL_BYTES,
        max_write_bytes: MAX_WRITE_BYTES,
        max_log_entry_bytes: MAX_LOG_ENTRY_BYTES,
        versions_kept: VERSIONS_KEPT,
        log_page_size: LOG_PAGE_SIZE,
    }
}

/// The agent's counters and quotas.
pub fn get_usage_stats(s: &impl Storage, agent_id: &str) -> Result<UsageStats, ToolError> {
    let agent = AgentId::parse(agent_id)?;
    Ok(UsageStats {
        usage: s.get_usage(&agent)?,
        quotas: quotas(),
    })
}
