//! What this instance's own write calls left of each agent's files, so that the agent's next
//! write call need not look at the file before it stores a version.
//!
//! A write call on PostgreSQL took two round trips: the look at the file and the agent's
//! counters (under the agent's lock), whose answer the guest needs to choose the version and
//! check the quota, then the version and the commit. When this instance made the agent's last
//! change itself, it knows what that look would answer: the file's state and the counters as
//! that call's commit left them. The next write call answers its look from here and sends
//! everything, its `BEGIN`, the agent's lock, a check and its version, with the commit, in one
//! round trip.
//!
//! What is remembered is only trusted under the check: every change to an agent's data
//! updates the agent's row (its counters, every call's operation among them), and so gives
//! the row a new `xmin`. The check (`scratchpad_expect_agent`, migration 8) runs under the
//! agent's lock, before anything else of the call, and fails when the row is not the one
//! remembered: another instance, or a read call's counts, changed it. The call's transaction
//! is then rolled back, nothing of it stored, and the call runs again with a look of its own
//! ([`crate::storage::StoreError::Stale`]). A call that fails for any other reason stored
//! nothing either, so what is remembered still holds.
//!
//! A call that changes only the agent's logs (an append, a trim) leaves its files as they
//! were: its first look, at the agent's counters, is answered from here the same way, and its
//! commit brings the row and counters it left, so that the agent stays remembered across
//! appends. What an append left of its log (the last id, the entries, the retention) is
//! remembered too, under the same row: the next append takes its entry's id from here and
//! sends everything with its commit.
//!
//! Bounded: [`AGENTS`] agents, [`FILES`] files and [`LOGS`] logs across them, the least
//! recently written forgotten first.

use scratchpad_guest::Usage;
use scratchpad_guest::bindings::scratchpad::mcp::storage::{FileState, LogState};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many files are remembered at most, across agents: a file's state is about a kilobyte
/// (ten kept versions with their hashes).
const FILES: usize = 256;

/// How many agents are remembered at most: an agent is its id and counters.
const AGENTS: usize = 256;

/// How many logs are remembered at most, across agents: a log's state is a few numbers.
const LOGS: usize = 256;

/// One agent's data as this instance's last write call of it left them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Agent {
    /// The agent's row version (`xmin`) after that call: the check compares it.
    pub row: String,
    /// The agent's counters after that call.
    pub usage: Usage,
}

/// Agents and their files' states as this instance's write calls left them; clones share
/// them.
#[derive(Clone, Debug, Default)]
pub(super) struct Remembered(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// Each agent's row and counters, the most recently written last.
    agents: VecDeque<(String, Agent)>,
    /// (agent, path, the file's state), the most recently written last: only of agents in
    /// `agents`, and true as of the row remembered there.
    files: VecDeque<(String, String, FileState)>,
    /// (agent, path, the log's state), as `files` are.
    logs: VecDeque<(String, String, LogState)>,
}

impl State {
    /// Makes `now` what is remembered of `agent`, its files kept only if the call that left
    /// `now` began from the row remembered (`before`).
    fn moved(&mut self, agent: &str, before: Option<&str>, now: Agent) {
        let at = self.agents.iter().position(|(a, _)| a == agent);
        let known = at.and_then(|i| self.agents.remove(i));
        if known.is_none_or(|(_, known)| Some(known.row.as_str()) != before) {
            self.drop_data(agent);
        }
        self.agents.push_back((agent.to_owned(), now));
        while self.agents.len() > AGENTS {
            if let Some((gone, _)) = self.agents.pop_front() {
                self.drop_data(&gone);
            }
        }
    }

    /// Forgets `agent`'s files and logs.
    fn drop_data(&mut self, agent: &str) {
        self.files.retain(|(a, ..)| a != agent);
        self.logs.retain(|(a, ..)| a != agent);
    }
}

impl Remembered {
    fn state(&self) -> MutexGuard<'_, State> {
        // Each change below leaves the lists whole; a panic elsewhere cannot break them.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `agent`'s row and counters, if this instance made the agent's last change it knows
    /// of; to be trusted only under the check of the row.
    pub(super) fn agent(&self, agent: &str) -> Option<Agent> {
        let state = self.state();
        let (_, known) = state.agents.iter().find(|(a, _)| a == agent)?;
        Some(known.clone())
    }

    /// `agent`'s row and counters and `path`'s state, if this instance's last write call of
    /// the agent left them; to be trusted only under the check of the row.
    pub(super) fn recall(&self, agent: &str, path: &str) -> Option<(Agent, FileState)> {
        let state = self.state();
        let (_, known) = state.agents.iter().find(|(a, _)| a == agent)?;
        let (.., file) = state
            .files
            .iter()
            .find(|(a, p, _)| a == agent && p == path)?;
        Some((known.clone(), file.clone()))
    }

    /// `agent`'s log at `path` as this instance's last write call of the agent left it; to be
    /// trusted only under the check of the row.
    pub(super) fn log(&self, agent: &str, path: &str) -> Option<LogState> {
        let state = self.state();
        let (.., log) = state
            .logs
            .iter()
            .find(|(a, p, _)| a == agent && p == path)?;
        Some(*log)
    }

    /// Forgets everything of `agent`: a call of it changed what is not remembered, or failed.
    pub(super) fn forget(&self, agent: &str) {
        let mut state = self.state();
        state.agents.retain(|(a, _)| a != agent);
        state.drop_data(agent);
    }

    /// Forgets `agent`'s logs: a call changed them in a way not remembered (a trim, a
    /// retention), and nothing else.
    pub(super) fn forget_logs(&self, agent: &str) {
        self.state().logs.retain(|(a, ..)| a != agent);
    }

    /// What a call that [`Remembered::moved`] `agent` left of its log at `path`.
    pub(super) fn remember_log(&self, agent: &str, path: &str, log: LogState) {
        let mut state = self.state();
        let logs = &mut state.logs;
        logs.retain(|(a, p, _)| a != agent || p != path);
        logs.push_back((agent.to_owned(), path.to_owned(), log));
        while logs.len() > LOGS {
            logs.pop_front();
        }
    }

    /// What a write call of `agent` that changed no file left: its row and counters. Its
    /// files are still as remembered when the call began from the row `before` remembered
    /// for them; otherwise they are forgotten.
    pub(super) fn moved(&self, agent: &str, before: Option<&str>, now: Agent) {
        self.state().moved(agent, before, now);
    }

    /// What a write call of `agent` that changed only `path` left: its row and counters and
    /// the file's state. The agent's other files are kept as [`Remembered::moved`] keeps them.
    pub(super) fn remember(
        &self,
        agent: &str,
        before: Option<&str>,
        now: Agent,
        path: &str,
        file: FileState,
    ) {
        let mut state = self.state();
        state.moved(agent, before, now);
        let files = &mut state.files;
        files.retain(|(a, p, _)| a != agent || p != path);
        files.push_back((agent.to_owned(), path.to_owned(), file));
        while files.len() > FILES {
            files.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scratchpad_guest::bindings::scratchpad::mcp::storage::{Retention, VersionInfo};

    fn agent(row: &str, files: u64) -> Agent {
        Agent {
            row: row.into(),
            usage: Usage {
                total_bytes: 0,
                file_count: files,
                log_entry_count: 0,
                total_operations: 0,
            },
        }
    }

    fn file(version: u64) -> FileState {
        FileState {
            last_version: version,
            kept: vec![VersionInfo {
                version,
                bytes: 1,
                created_at: "2026-12-07T00:00:00.000Z".into(),
                sha256: "0".repeat(64),
            }],
        }
    }

    #[test]
    fn other_files_are_kept_only_when_the_call_began_from_the_row_remembered() {
        let r = Remembered::default();
        r.remember("a", None, agent("10", 1), "f", file(1));
        r.remember("a", Some("10"), agent("11", 2), "g", file(1));
        assert_eq!(r.recall("a", "f"), Some((agent("11", 2), file(1))));
        assert_eq!(r.recall("a", "g"), Some((agent("11", 2), file(1))));
        // A call that looked for itself and found another row: "f" may have changed since.
        r.remember("a", Some("13"), agent("14", 2), "g", file(2));
        assert_eq!(r.recall("a", "f"), None);
        assert_eq!(r.recall("a", "g"), Some((agent("14", 2), file(2))));
    }

    #[test]
    fn agents_are_apart_and_forgotten_whole() {
        let r = Remembered::default();
        r.remember("a", None, agent("10", 1), "f", file(1));
        r.remember("b", None, agent("20", 1), "f", file(3));
        r.forget("a");
        assert_eq!(r.recall("a", "f"), None);
        assert_eq!(r.recall("b", "f"), Some((agent("20", 1), file(3))));
    }

    #[test]
    fn the_least_recently_written_go_first() {
        let r = Remembered::default();
        for i in 0..=FILES {
            r.remember(&format!("agent{i}"), None, agent("1", 1), "f", file(1));
        }
        assert_eq!(r.recall("agent0", "f"), None);
        assert!(r.recall("agent1", "f").is_some());
        assert!(r.recall(&format!("agent{FILES}"), "f").is_some());
        // Files of one agent are bounded the same way.
        for i in 0..=FILES {
            r.remember("one", Some("1"), agent("1", 1), &format!("f{i}"), file(1));
        }
        assert_eq!(r.recall("one", "f0"), None);
        assert!(r.recall("one", "f1").is_some());
    }

    #[test]
    fn a_call_that_changed_no_file_keeps_the_files_only_from_the_row_remembered() {
        let r = Remembered::default();
        r.moved("a", None, agent("10", 0));
        assert_eq!(r.agent("a"), Some(agent("10", 0)), "an agent of logs only");
        r.remember("a", Some("10"), agent("11", 1), "f", file(1));
        r.moved("a", Some("11"), agent("12", 1));
        assert_eq!(r.recall("a", "f"), Some((agent("12", 1), file(1))));
        // A call that found another row than the one remembered: "f" may have changed.
        r.moved("a", Some("14"), agent("15", 1));
        assert_eq!(r.recall("a", "f"), None);
        assert_eq!(r.agent("a"), Some(agent("15", 1)));
        r.forget("a");
        assert_eq!(r.agent("a"), None);
    }

    #[test]
    fn logs_are_kept_with_the_agents_row_as_files_are() {
        let log = |last_id| LogState {
            last_id,
            entries: last_id,
            retention: Retention {
                keep_last: None,
                max_age_seconds: None,
            },
        };
        let r = Remembered::default();
        r.moved("a", None, agent("10", 0));
        r.remember_log("a", "events", log(1));
        r.remember("a", Some("10"), agent("11", 1), "f", file(1));
        assert_eq!(r.log("a", "events"), Some(log(1)), "a write keeps the logs");
        r.forget_logs("a");
        assert_eq!(r.log("a", "events"), None);
        assert!(
            r.recall("a", "f").is_some(),
            "forgetting the logs keeps the files"
        );
        r.remember_log("a", "events", log(2));
        r.moved("a", Some("99"), agent("12", 1));
        assert_eq!(
            r.log("a", "events"),
            None,
            "another row: the log may have changed"
        );
        r.remember_log("a", "events", log(3));
        r.forget("a");
        assert_eq!(r.log("a", "events"), None);
    }
}
