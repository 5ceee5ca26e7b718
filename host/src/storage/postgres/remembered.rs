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
//! Bounded: [`FILES`] files across all agents, the least recently written forgotten first.

use scratchpad_guest::Usage;
use scratchpad_guest::bindings::scratchpad::mcp::storage::FileState;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many files are remembered at most, across agents: a file's state is about a kilobyte
/// (ten kept versions with their hashes).
const FILES: usize = 256;

/// One agent's data as this instance's last write call of it left them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Agent {
    /// The agent's row version (`xmin`) after that call: the check compares it.
    pub row: String,
    /// The agent's counters after that call.
    pub usage: Usage,
}

/// Files' states, by agent, as this instance's write calls left them; clones share them.
#[derive(Clone, Debug, Default)]
pub(super) struct Remembered(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// (agent, its row and counters, path, the file's state), the most recently written
    /// last. An agent's entries all carry the same row: a write replaces them.
    files: VecDeque<(String, Agent, String, FileState)>,
}

impl Remembered {
    fn state(&self) -> MutexGuard<'_, State> {
        // Each change below leaves the list whole; a panic elsewhere cannot break it.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `agent`'s row and counters and `path`'s state, if this instance's last write call of
    /// the agent left them; to be trusted only under the check of the row.
    pub(super) fn recall(&self, agent: &str, path: &str) -> Option<(Agent, FileState)> {
        let state = self.state();
        state
            .files
            .iter()
            .find(|(a, _, p, _)| a == agent && p == path)
            .map(|(_, known, _, file)| (known.clone(), file.clone()))
    }

    /// Forgets everything of `agent`: a call of it changed what is not remembered, or failed.
    pub(super) fn forget(&self, agent: &str) {
        self.state().files.retain(|(a, ..)| a != agent);
    }

    /// What a write call of `agent` that changed only `path` left: its row and counters and
    /// the file's state. The agent's other files are still as remembered when the call began
    /// from the row `before` remembered for them; otherwise they are forgotten.
    pub(super) fn remember(
        &self,
        agent: &str,
        before: Option<&str>,
        now: Agent,
        path: &str,
        file: FileState,
    ) {
        let mut state = self.state();
        let files = &mut state.files;
        files.retain(|(a, known, p, _)| {
            a != agent || (Some(known.row.as_str()) == before && p != path)
        });
        for (a, known, ..) in files.iter_mut() {
            if a == agent {
                *known = now.clone();
            }
        }
        files.push_back((agent.to_owned(), now, path.to_owned(), file));
        while files.len() > FILES {
            files.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scratchpad_guest::bindings::scratchpad::mcp::storage::VersionInfo;

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
    }
}
