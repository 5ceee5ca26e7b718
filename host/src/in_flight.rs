//! How many calls hosted mode runs at once: at most so many for the whole server and so many
//! for one key, counted from the moment a call is admitted until its work has finished.
//!
//! A rate bounds how often a caller may start work, not how much of it runs at once: a
//! client that sends a burst of heavy calls and drops its connections leaves the work
//! running on the blocking pool, where the next callers queue behind it. So the count is
//! held by a [`Ticket`] that travels with the work onto its blocking thread and is given
//! back only when the work ends, not when the request that asked for it goes away.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The server's and each key's bound on calls in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// For every key together.
    pub server: u32,
    /// For one key.
    pub per_key: u32,
}

/// The calls in flight, by key.
#[derive(Debug)]
pub struct InFlight {
    /// How many calls may run at once, in all and per key.
    bounds: Bounds,
    /// The calls running now; every admission and every ticket dropped changes it.
    running: Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    /// Calls running for every key together.
    total: u32,
    /// Calls running per key (a key with none has no entry).
    by_key: HashMap<String, u32>,
}

/// Why a call was not admitted: the bound it met.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Full {
    /// This key runs as many calls as it may.
    #[error(
        "too many calls at once: {key} may run {limit} at a time; retry when one has answered (nothing was changed)"
    )]
    Key {
        /// The caller, as [`crate::keys::Identity::caller`] names it (`key "ci"`).
        key: String,
        /// Its bound.
        limit: u32,
    },
    /// The server runs as many calls as it may.
    #[error(
        "the server is running as many calls as it may ({limit}); retry shortly (nothing was changed)"
    )]
    Server {
        /// The server's bound.
        limit: u32,
    },
}

impl InFlight {
    /// No call in flight yet, under `bounds`.
    pub fn new(bounds: Bounds) -> Arc<Self> {
        Arc::new(Self {
            bounds,
            running: Mutex::default(),
        })
    }

    /// Admits one call of `key`'s, or says which bound it met. The call counts until its
    /// ticket is dropped.
    pub fn enter(self: &Arc<Self>, key: &str) -> Result<Ticket, Full> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        let of_key = running.by_key.get(key).copied().unwrap_or(0);
        if of_key >= self.bounds.per_key {
            return Err(Full::Key {
                key: key.to_owned(),
                limit: self.bounds.per_key,
            });
        }
        if running.total >= self.bounds.server {
            return Err(Full::Server {
                limit: self.bounds.server,
            });
        }
        running.total += 1;
        *running.by_key.entry(key.to_owned()).or_insert(0) += 1;
        Ok(Ticket {
            of: Arc::clone(self),
            key: key.to_owned(),
        })
    }
}

/// One admitted call; dropping it (where the call's work ends) lets the next one in.
#[derive(Debug)]
pub struct Ticket {
    /// Where the call was counted, to be let go of on drop.
    of: Arc<InFlight>,
    /// The caller the call was counted for.
    key: String,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut running = self.of.running.lock().unwrap_or_else(|p| p.into_inner());
        running.total = running.total.saturating_sub(1);
        if let Some(n) = running.by_key.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                running.by_key.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_and_the_server_are_each_held_to_their_bound_until_a_ticket_is_dropped() {
        let calls = InFlight::new(Bounds {
            server: 3,
            per_key: 2,
        });
        let a1 = calls.enter("a").unwrap();
        let _a2 = calls.enter("a").unwrap();
        assert_eq!(
            calls.enter("a").unwrap_err(),
            Full::Key {
                key: "a".into(),
                limit: 2
            }
        );
        let _b1 = calls.enter("b").unwrap();
        assert_eq!(calls.enter("b").unwrap_err(), Full::Server { limit: 3 });
        drop(a1);
        let _b2 = calls.enter("b").unwrap();
        assert_eq!(
            calls.enter("c").unwrap_err().to_string(),
            "the server is running as many calls as it may (3); retry shortly (nothing was changed)"
        );
    }

    #[test]
    fn a_ticket_given_back_on_another_thread_frees_its_place() {
        let calls = InFlight::new(Bounds {
            server: 1,
            per_key: 1,
        });
        let ticket = calls.enter("a").unwrap();
        assert!(calls.enter("a").is_err());
        std::thread::spawn(move || drop(ticket)).join().unwrap();
        let running = calls.running.lock().unwrap();
        assert_eq!((running.total, running.by_key.len()), (0, 0));
        drop(running);
        assert!(calls.enter("a").is_ok());
    }
}
