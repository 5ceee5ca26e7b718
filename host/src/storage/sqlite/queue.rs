//! The write calls of one process take SQLite's write lock in the order they asked for it.
//!
//! SQLite's own wait for a held lock is a busy handler that sleeps and tries again, sleeping
//! longer each time (up to 100 ms a try): fine between processes, unfair between the many
//! callers of one hosted server, where a write that lost a few tries waited hundreds of
//! milliseconds while later ones went by (p99 at 64 callers was 55 times p50). So a write
//! call of this process first takes a numbered turn here and waits its turn on a condition
//! variable, and only then asks SQLite, which another process may still hold (its busy
//! handler still covers that). The turn is held only for the short write phase: a call's
//! reading and work come before it, and its sync after ([`super::flush`]).

use super::BUSY_TIMEOUT;
use crate::storage::StoreError;
use crate::wakeup::Wakeup;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// Where the queue stands.
#[derive(Debug, Default)]
struct Turns {
    /// The number the next caller gets.
    next: u64,
    /// The number whose turn it is.
    serving: u64,
    /// Numbers whose callers stopped waiting: skipped when their turn comes.
    gone: BTreeSet<u64>,
}

impl Turns {
    /// Moves the turn on, past the numbers nobody waits for any more.
    fn advance(&mut self) {
        self.serving += 1;
        while self.gone.remove(&self.serving) {
            self.serving += 1;
        }
    }
}

/// The queue for the write lock of one store, shared by its calls.
#[derive(Debug, Default)]
pub struct WriteQueue {
    /// The numbers given out and served.
    turns: Mutex<Turns>,
    /// Wakes the waiting calls when the turn moves on.
    moved: Wakeup,
}

/// A call's turn at the write lock; dropping it gives the turn to the next caller.
#[derive(Debug)]
pub struct Turn {
    /// The queue to move on.
    queue: Arc<WriteQueue>,
}

impl WriteQueue {
    /// Waits for this caller's turn, at most [`BUSY_TIMEOUT`] ("busy" then, as SQLite's wait).
    pub fn wait(self: &Arc<Self>) -> Result<Turn, StoreError> {
        let until = Instant::now() + BUSY_TIMEOUT;
        let mut turns = self.lock();
        let mine = turns.next;
        turns.next += 1;
        while turns.serving != mine {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                turns.gone.insert(mine);
                return Err(StoreError::Busy(BUSY_TIMEOUT.as_secs()));
            }
            turns = self.moved.wait_timeout(turns, left);
        }
        Ok(Turn {
            queue: Arc::clone(self),
        })
    }

    /// The turn at once when nobody holds or waits for it: for bookkeeping not worth a wait.
    pub fn now(self: &Arc<Self>) -> Option<Turn> {
        let mut turns = self.lock();
        (turns.serving == turns.next).then(|| {
            turns.next += 1;
            Turn {
                queue: Arc::clone(self),
            }
        })
    }

    fn lock(&self) -> MutexGuard<'_, Turns> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.queue.lock().advance();
        self.queue.moved.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Callers are served in the order they asked, each alone.
    #[test]
    fn turns_come_in_order_one_at_a_time() {
        let queue = Arc::new(WriteQueue::default());
        let first = queue.wait().unwrap();
        assert!(queue.now().is_none(), "held");
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiting: Vec<_> = (0..4)
            .map(|i| {
                let (mine, order) = (Arc::clone(&queue), Arc::clone(&order));
                let t = std::thread::spawn(move || {
                    let _turn = mine.wait().unwrap();
                    order.lock().unwrap().push(i);
                });
                // Each asks before the next one does.
                while queue.lock().next != 2 + i {
                    std::thread::yield_now();
                }
                t
            })
            .collect();
        drop(first);
        for t in waiting {
            t.join().unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
        assert!(queue.now().is_some(), "free again");
    }

    /// A caller that stopped waiting is skipped when its turn comes.
    #[test]
    fn a_caller_that_gave_up_is_skipped() {
        let queue = Arc::new(WriteQueue::default());
        let held = queue.wait().unwrap();
        {
            let mut turns = queue.lock();
            let gave_up = turns.next;
            turns.next += 1;
            turns.gone.insert(gave_up);
        }
        let next = {
            let queue = Arc::clone(&queue);
            std::thread::spawn(move || queue.wait().map(drop))
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(held);
        next.join().unwrap().unwrap();
        let turns = queue.lock();
        assert_eq!((turns.serving, turns.next), (3, 3));
        assert!(turns.gone.is_empty());
    }
}
