//! A condition variable that makes no system call to wake nobody.
//!
//! std's `Condvar::notify_all` is a `futex` wake every time, waiters or not, and a write on
//! SQLite ended three waits that almost never had a waiter (its agent's turn, its turn at
//! the write lock, its sync): three system calls a write for nothing. [`Wakeup`] counts its
//! waiters and wakes only when there are some; the sandbox's slots, which nearly every call
//! finds free, wait on one too.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, MutexGuard};
use std::time::Duration;

/// A `Condvar` that knows whether anyone waits on it.
#[derive(Debug, Default)]
pub struct Wakeup {
    condvar: Condvar,
    /// Callers inside one of the waits ([`Wakeup::counted`]). Counted while the
    /// caller still holds the mutex the waking side changes its state under, so a waker that
    /// changed the state after it reads every waiter that could have missed the change.
    waiting: AtomicUsize,
}

impl Wakeup {
    /// Waits for a wake, giving `guard`'s mutex up meanwhile (a poisoned mutex is taken as
    /// it is: the state it guards is plain counts and sets, whole after any panic).
    pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
        self.counted(|condvar| condvar.wait(guard).unwrap_or_else(|p| p.into_inner()))
    }

    /// [`Wakeup::wait`], for at most `timeout`.
    pub fn wait_timeout<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        timeout: Duration,
    ) -> MutexGuard<'a, T> {
        self.counted(|condvar| {
            let waited = condvar.wait_timeout(guard, timeout);
            waited.unwrap_or_else(|p| p.into_inner()).0
        })
    }

    /// Waits, giving `guard`'s mutex up meanwhile, while `condition` holds of the state.
    pub fn wait_while<'a, T>(
        &self,
        guard: MutexGuard<'a, T>,
        condition: impl FnMut(&mut T) -> bool,
    ) -> MutexGuard<'a, T> {
        self.counted(|condvar| {
            let waited = condvar.wait_while(guard, condition);
            waited.unwrap_or_else(|p| p.into_inner())
        })
    }

    /// Runs `wait` on the condition variable with the caller counted as a waiter. Called
    /// with the mutex held, so the count is up before `wait` gives the mutex up.
    fn counted<G>(&self, wait: impl FnOnce(&Condvar) -> G) -> G {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let guard = wait(&self.condvar);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        guard
    }

    /// Wakes one waiter, if there is one; call it after changing the state under the mutex
    /// the waiters hold.
    pub fn notify_one(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.condvar.notify_one();
        }
    }

    /// Wakes every waiter, if there is one; call it after changing the state under the
    /// mutex the waiters hold.
    pub fn notify_all(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            self.condvar.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A waiter that began waiting before the state changed is woken, however the two
    /// threads interleave (run many times to meet the close ones); one never woken fails
    /// after its 5 s, rather than hang.
    #[test]
    fn a_change_after_a_wait_began_wakes_it() {
        for _ in 0..2000 {
            let state = Arc::new((Mutex::new(false), Wakeup::default()));
            let waiter = {
                let state = Arc::clone(&state);
                std::thread::spawn(move || {
                    let (done, wakeup) = &*state;
                    let began = std::time::Instant::now();
                    let mut done = done.lock().unwrap();
                    while !*done {
                        done = wakeup.wait_timeout(done, Duration::from_secs(5));
                        assert!(began.elapsed() < Duration::from_secs(5), "never woken");
                    }
                })
            };
            let (done, wakeup) = &*state;
            *done.lock().unwrap() = true;
            wakeup.notify_all();
            waiter.join().unwrap();
        }
    }
}
