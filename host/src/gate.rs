//! What hosted mode checks before a call does any storage work: the caller's key allows
//! the agent and the kind of call, the agent is within its rate, and a summary is within the
//! agent's summary budget. And what it counts: calls per tool and outcome, for `/metrics`.
//!
//! An agent's token bucket lives where every instance serving it can see it: in the database
//! when the backend keeps buckets (PostgreSQL, so that two instances allow the configured
//! rate and not twice it), else in this process's memory (SQLite: one instance; see
//! [`crate::rate`]).

use crate::in_flight::{Full, InFlight, Ticket};
use crate::keys::{Access, Identity};
use crate::rate::{Allowance, RateLimiter};
use crate::service::Service;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a call was stopped at the gate. Its text is the tool result the caller reads.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The key does not allow this agent or this kind of tool.
    #[error("{0}")]
    Key(String),
    /// The agent is over its rate.
    #[error(
        "rate limit: agent {agent:?} may make {per_second} calls a second; retry in {wait_ms} ms (nothing was changed)"
    )]
    Rate {
        /// The agent.
        agent: String,
        /// Its rate.
        per_second: f64,
        /// How long to wait.
        wait_ms: u64,
    },
    /// The agent has spent its summaries for now.
    #[error(
        "summary budget: agent {agent:?} may ask for {per_day} summaries a day; the next one in {wait_s} s (nothing was changed)"
    )]
    Budget {
        /// The agent.
        agent: String,
        /// Its budget.
        per_day: u32,
        /// How long until the next.
        wait_s: u64,
    },
    /// The shared bucket could not be read: the store's own message.
    #[error("{0}")]
    Store(String),
}

/// The checks of hosted mode.
#[derive(Debug, Default)]
pub struct Gate {
    /// Per-agent rate, if one is configured.
    pub limiter: Option<RateLimiter>,
    /// Per-agent summaries a day, if a budget is configured: a bucket of its own, refilled
    /// over the day, so the operator's model spend per agent is bounded.
    pub summaries: Option<(u32, RateLimiter)>,
    /// The calls running at once, for the server and each key (hosted mode always bounds
    /// them; stdio has one caller).
    pub in_flight: Option<Arc<InFlight>>,
}

impl Gate {
    /// Admits one call of `caller`'s among those in flight (none to count without a caller
    /// or a bound): the ticket must go with the call's work to wherever it runs, and is
    /// dropped when that work ends.
    pub fn enter(&self, caller: Option<&Identity>) -> Result<Option<Ticket>, Full> {
        match (&self.in_flight, caller) {
            (Some(calls), Some(caller)) => calls.enter(&caller.caller()).map(Some),
            _ => Ok(None),
        }
    }

    /// Checks a call of kind `access` for `agent` by `identity`, before any storage work of
    /// the tool's. With a rate on a backend that keeps buckets this is a database round
    /// trip: call it from a blocking thread.
    pub fn check(
        &self,
        identity: &Identity,
        agent: &str,
        access: Access,
        service: &Service,
    ) -> Result<(), Refusal> {
        identity.allows(agent, access).map_err(Refusal::Key)?;
        if let Some(limiter) = &self.limiter {
            take(limiter, agent, service)?.map_err(|wait| Refusal::Rate {
                agent: agent.to_owned(),
                per_second: limiter.rate().per_second,
                wait_ms: u64::try_from(wait.as_millis().max(1)).unwrap_or(u64::MAX),
            })?;
        }
        if access == Access::Model
            && let Some((per_day, budget)) = &self.summaries
        {
            // Agent ids have no '#': the budget's bucket cannot be another agent's.
            take(budget, &format!("{agent}#summaries"), service)?.map_err(|wait| {
                Refusal::Budget {
                    agent: agent.to_owned(),
                    per_day: *per_day,
                    wait_s: wait.as_secs().max(1),
                }
            })?;
        }
        Ok(())
    }
}

/// Takes one call from the bucket named `key` under `limiter`'s rate: the backend's, shared
/// by every instance, where it keeps buckets; else this process's.
fn take(limiter: &RateLimiter, key: &str, service: &Service) -> Result<Allowance, Refusal> {
    match service.take_call(key, limiter.rate()) {
        Some(shared) => shared.map_err(|e| Refusal::Store(e.to_string())),
        None => Ok(limiter.take_at(key, Instant::now())),
    }
}

/// (tool, outcome) of a counted call.
type CallKind = (&'static str, &'static str);

/// Calls per (tool, outcome), and their total time in seconds.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Shared by every call of the server; `/metrics` reads it whole.
    calls: Mutex<BTreeMap<CallKind, (u64, f64)>>,
}

impl Metrics {
    /// Counts one call of a known tool (`unknown` for any other name).
    pub fn record(&self, tool: &'static str, outcome: &'static str, took: Duration) {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let entry = calls.entry((tool, outcome)).or_default();
        entry.0 += 1;
        entry.1 += took.as_secs_f64();
    }

    /// The counts in Prometheus' text format.
    pub fn render(&self) -> String {
        let calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::from(
            "# HELP scratchpad_tool_calls_total Tool calls by tool and outcome.\n\
             # TYPE scratchpad_tool_calls_total counter\n",
        );
        for ((tool, outcome), (count, _)) in calls.iter() {
            let _ = writeln!(
                out,
                "scratchpad_tool_calls_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} {count}"
            );
        }
        out.push_str(
            "# HELP scratchpad_tool_call_seconds_total Time spent in tool calls by tool and outcome.\n\
             # TYPE scratchpad_tool_call_seconds_total counter\n",
        );
        for ((tool, outcome), (_, seconds)) in calls.iter() {
            let _ = writeln!(
                out,
                "scratchpad_tool_call_seconds_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} {seconds:.6}"
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_render_as_prometheus_text() {
        let m = Metrics::default();
        m.record("write_file", "ok", Duration::from_millis(2));
        m.record("write_file", "ok", Duration::from_millis(3));
        let text = m.render();
        assert!(
            text.contains("scratchpad_tool_calls_total{tool=\"write_file\",outcome=\"ok\"} 2\n"),
            "{text}"
        );
        assert!(text.contains(
            "scratchpad_tool_call_seconds_total{tool=\"write_file\",outcome=\"ok\"} 0.005000\n"
        ));
    }
}
