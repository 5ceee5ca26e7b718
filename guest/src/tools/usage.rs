//! Usage statistics and the quotas they are measured against.

use crate::ToolError;
use crate::api::UsageStats;
use crate::limits::quotas;
use crate::names::AgentId;
use crate::ports::Storage;

/// The agent's counters and quotas.
pub fn get_usage_stats(
    s: &(impl Storage + ?Sized),
    agent_id: &str,
) -> Result<UsageStats, ToolError> {
    let agent = AgentId::parse(agent_id)?;
    Ok(UsageStats {
        usage: s.get_usage(&agent)?,
        quotas: quotas(&s.limits(&agent)),
    })
}
