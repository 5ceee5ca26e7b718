//! Read calls' operation counts, kept in memory until a write carries them: one rule for
//! both backends.
//!
//! Counting a read in the database would make every read a write: on SQLite a wait for the
//! write lock, on PostgreSQL a write transaction and a round trip of its own (0.06-0.12 ms
//! of a 0.6 ms read on loopback, measured with pgbench). So a read only adds to its agent's
//! count here, which `get_usage_stats` adds to the stored one. The counts reach the database
//! with the process's next write (a write of an agent carries that agent's count in the same
//! update of its row), when a read brings them to [`COUNTS_KEPT`], and when the store is let
//! go. What a crash of the process loses is at most that many counts, never data; another
//! process (a second instance on one database) sees them once written.
//!
//! Counts are taken out while they are being written and put back if the write fails, so
//! two writers never both write the same count.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// How many read counts a process keeps before a read writes them.
pub(super) const COUNTS_KEPT: u64 = 100;

/// Read calls' operations not yet written, per agent; clones share one map.
#[derive(Clone, Debug, Default)]
pub(super) struct Uncounted(Arc<Mutex<HashMap<String, u64>>>);

impl Uncounted {
    fn map(&self) -> MutexGuard<'_, HashMap<String, u64>> {
        // A panic elsewhere while holding the lock left the counts whole: each change below
        // is one step.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Counts one read of `agent`. Whether the counts kept have reached [`COUNTS_KEPT`], and
    /// are worth a write of their own.
    pub(super) fn add(&self, agent: &str) -> bool {
        let mut map = self.map();
        *map.entry(agent.to_owned()).or_default() += 1;
        map.values().sum::<u64>() >= COUNTS_KEPT
    }

    /// The reads of `agent` kept here: what its usage adds to the stored count.
    pub(super) fn of(&self, agent: &str) -> u64 {
        self.map().get(agent).copied().unwrap_or(0)
    }

    /// Whether no count is kept.
    pub(super) fn is_empty(&self) -> bool {
        self.map().is_empty()
    }

    /// Takes `agent`'s count out, for a write of that agent to carry; [`Uncounted::restore`]
    /// puts it back if the write does not commit.
    pub(super) fn take(&self, agent: &str) -> u64 {
        self.map().remove(agent).unwrap_or(0)
    }

    /// Takes every count out, to be written; [`Uncounted::restore`] puts back what was not.
    /// In the agents' order: two processes on one PostgreSQL database writing theirs at once
    /// then lock the agents' rows in one order, and cannot deadlock (the database would end
    /// one after a second's wait).
    pub(super) fn take_all(&self) -> Vec<(String, u64)> {
        let mut all: Vec<_> = self.map().drain().collect();
        all.sort_unstable();
        all
    }

    /// Puts counts taken out back, when what was to write them failed.
    pub(super) fn restore(&self, counts: impl IntoIterator<Item = (String, u64)>) {
        let mut map = self.map();
        for (agent, n) in counts {
            if n > 0 {
                *map.entry(agent).or_default() += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_taken_out_are_counted_once_and_come_back_if_not_written() {
        let kept = Uncounted::default();
        let other = kept.clone();
        for _ in 0..3 {
            assert!(!kept.add("a"));
        }
        assert!(!other.add("b"));
        assert_eq!((kept.of("a"), kept.of("b"), kept.of("c")), (3, 1, 0));
        assert_eq!(kept.take("a"), 3);
        assert_eq!(other.take("a"), 0, "taken once");
        assert_eq!(kept.of("a"), 0);
        kept.restore([("a".to_owned(), 3)]);
        assert_eq!(kept.of("a"), 3);
        let all = kept.take_all();
        assert_eq!(all, [("a".to_owned(), 3), ("b".to_owned(), 1)]);
        assert!(kept.is_empty());
        kept.restore(all);
        assert_eq!((kept.of("a"), kept.of("b")), (3, 1));
    }

    #[test]
    fn the_hundredth_read_kept_asks_for_a_write() {
        let kept = Uncounted::default();
        for i in 1..COUNTS_KEPT {
            assert!(!kept.add(if i % 2 == 0 { "a" } else { "b" }), "read {i}");
        }
        assert!(kept.add("c"));
    }

    #[test]
    fn counts_come_out_in_the_agents_order() {
        let kept = Uncounted::default();
        let agents: Vec<String> = (0..64).rev().map(|i| format!("agent-{i:02}")).collect();
        for agent in &agents {
            kept.add(agent);
        }
        let taken: Vec<String> = kept.take_all().into_iter().map(|(a, _)| a).collect();
        let mut sorted = agents;
        sorted.sort();
        assert_eq!(taken, sorted);
    }
}
