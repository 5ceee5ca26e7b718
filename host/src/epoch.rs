//! The clock that bounds a call's CPU time: a thread that advances the engine's epoch every
//! [`EPOCH_TICK`] while at least one call is running, and sleeps while none is.
//!
//! wasmtime stops guest code when the epoch passes its store's deadline, and the sandbox then
//! checks how long the call has run (see `sandbox::CPU_LIMIT`), so ticks matter only while a
//! call runs. A ticker that ran for the life of the server woke it 100 times a second with
//! nobody calling: a stdio server sits idle in a desktop client for hours.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

/// How often the epoch ticks while a call runs: the granularity of the time limit.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// What the ticker thread is told: how many calls are running, and whether to stop; and
/// whether it waits to be told (else it is between ticks, and looks at its next).
#[derive(Default)]
struct Orders {
    running: usize,
    stop: bool,
    waiting: bool,
}

/// The orders, and the signal that they changed.
#[derive(Default)]
struct Shared {
    orders: Mutex<Orders>,
    changed: Condvar,
}

impl Shared {
    fn orders(&self) -> MutexGuard<'_, Orders> {
        self.orders.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the thread to read its orders. A notification is a system call whether or not
    /// the thread waits, so it is sent only when the thread must act at once: to start
    /// ticking (and only if it waits: calls one after another mostly find it between ticks),
    /// and to stop.
    fn wake(&self) {
        self.changed.notify_one();
    }
}

/// The ticker thread's owner: the thread stops when this goes.
pub struct Ticker {
    shared: Arc<Shared>,
}

/// A call that is running: the epoch ticks while any of these lives.
pub struct Running<'a> {
    ticker: &'a Ticker,
}

impl Ticker {
    /// Starts the thread, which calls `advance` (the engine's `increment_epoch`) every
    /// [`EPOCH_TICK`] while a call runs.
    pub fn start(mut advance: impl FnMut() + Send + 'static) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let theirs = Arc::clone(&shared);
        thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                let mut orders = theirs.orders();
                while !orders.stop {
                    if orders.running == 0 {
                        orders.waiting = true;
                        orders = theirs
                            .changed
                            .wait(orders)
                            .unwrap_or_else(PoisonError::into_inner);
                        orders.waiting = false;
                        continue;
                    }
                    drop(orders);
                    thread::sleep(EPOCH_TICK);
                    advance();
                    orders = theirs.orders();
                }
            })?;
        Ok(Self { shared })
    }

    /// Marks a call as running until the value returned goes.
    pub fn running(&self) -> Running<'_> {
        let waiting = {
            let mut orders = self.shared.orders();
            orders.running += 1;
            orders.waiting
        };
        // Between ticks the thread looks at its orders by itself: only a waiting one is woken.
        if waiting {
            self.shared.wake();
        }
        Running { ticker: self }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        // No wake: the thread sees that the call ended at its next tick, and goes to sleep.
        self.ticker.shared.orders().running -= 1;
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.orders().stop = true;
        self.shared.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    /// A ticker whose ticks are counted.
    fn counted() -> (Ticker, Arc<AtomicUsize>) {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&ticks);
        let ticker = Ticker::start(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        (ticker, ticks)
    }

    /// Waits until three more ticks than `from` have come, failing after 10 s.
    fn three_ticks_past(ticks: &AtomicUsize, from: usize) {
        let started = Instant::now();
        while ticks.load(Ordering::SeqCst) < from + 3 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "no ticks while a call ran"
            );
            thread::sleep(EPOCH_TICK);
        }
    }

    #[test]
    fn the_epoch_ticks_only_while_a_call_runs() {
        let (ticker, ticks) = counted();
        let idle = EPOCH_TICK * 10;
        thread::sleep(idle);
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            0,
            "ticked with no call running"
        );

        let running = ticker.running();
        three_ticks_past(&ticks, 0);
        drop(running);
        let at_end = ticks.load(Ordering::SeqCst);
        thread::sleep(idle);
        // The tick under way when the call ended may still land, however late the thread
        // runs; a ticker that kept on would land about ten.
        let since = ticks.load(Ordering::SeqCst) - at_end;
        assert!(since <= 1, "{since} ticks after the call ended");
    }

    /// Calls overlap: the epoch ticks until the last one ends, and again for the next.
    #[test]
    fn the_epoch_ticks_until_the_last_of_overlapping_calls_ends() {
        let (ticker, ticks) = counted();
        let (first, second) = (ticker.running(), ticker.running());
        drop(first);
        three_ticks_past(&ticks, ticks.load(Ordering::SeqCst));
        drop(second);
        thread::sleep(EPOCH_TICK * 3);
        let after = ticks.load(Ordering::SeqCst);
        thread::sleep(EPOCH_TICK * 10);
        let since = ticks.load(Ordering::SeqCst) - after;
        assert!(since <= 1, "{since} ticks with no call running");
        // A call after a quiet spell wakes the thread again.
        let third = ticker.running();
        three_ticks_past(&ticks, ticks.load(Ordering::SeqCst));
        drop(third);
    }
}
