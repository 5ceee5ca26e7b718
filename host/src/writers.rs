//! One write call per agent at a time in this process.
//!
//! A write call reads before it takes the store's write lock (see the SQLite backend), and
//! runs again when its agent's data changed in between. Two write calls of one agent in one
//! process would make each other run again; queueing them here, before either reads, leaves
//! that for the rare write from another process. Calls of different agents never wait here.

use crate::wakeup::Wakeup;
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

/// The agents with a write call running.
#[derive(Debug, Default)]
pub struct Writers {
    /// The agents with a write call running in this process.
    writing: Mutex<HashSet<String>>,
    /// Wakes the calls waiting for an agent's turn when one ends.
    done: Wakeup,
}

/// An agent's turn to write, given back when dropped.
#[derive(Debug)]
pub struct Turn<'w> {
    /// Whose turn this is, to be given back on drop.
    writers: &'w Writers,
    /// The agent the turn is for.
    agent: String,
}

impl Writers {
    /// Waits until no other write call of `agent` runs, and holds that until the turn drops.
    pub fn turn(&self, agent: &str) -> Turn<'_> {
        let mut writing = self.writing();
        while writing.contains(agent) {
            writing = self.done.wait(writing);
        }
        writing.insert(agent.to_owned());
        Turn {
            writers: self,
            agent: agent.to_owned(),
        }
    }

    fn writing(&self) -> MutexGuard<'_, HashSet<String>> {
        self.writing.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.writers.writing().remove(&self.agent);
        self.writers.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn an_agent_writes_alone_while_others_go_on() {
        let writers = Writers::default();
        let second_started = AtomicBool::new(false);
        std::thread::scope(|s| {
            let first = writers.turn("a");
            let waiter = s.spawn(|| {
                let _turn = writers.turn("a");
                second_started.store(true, Ordering::SeqCst);
            });
            // Another agent is not held up by a's turn.
            drop(writers.turn("b"));
            std::thread::sleep(Duration::from_millis(50));
            assert!(
                !second_started.load(Ordering::SeqCst),
                "a's second call waited"
            );
            drop(first);
            waiter.join().unwrap();
            assert!(second_started.load(Ordering::SeqCst));
        });
        assert!(writers.writing().is_empty());
    }
}
