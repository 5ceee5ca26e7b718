//! Token buckets: how often an agent may start a call. The rule ([`Rate`]) is shared by
//! the buckets a backend keeps in its database (PostgreSQL, so that every instance on it
//! allows the rate once, not once each) and those this process keeps in memory
//! ([`RateLimiter`]); the gate decides which serves a call.
//!
//! Its own module, below storage: a backend takes calls from its buckets by this rule, and
//! the gate, far above storage, applies it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket's rule: `per_second` calls a second on average, `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Calls a second, on average.
    pub per_second: f64,
    /// Calls at once, at the most (at least 1).
    pub burst: f64,
}

impl Rate {
    /// How long a bucket holding `tokens` (less than one) takes to hold one call.
    pub fn wait_for_one(&self, tokens: f64) -> Duration {
        Duration::try_from_secs_f64((1.0 - tokens) / self.per_second).unwrap_or(Duration::MAX)
    }
}

/// What a bucket answers: the call may go ahead, or one may after this long.
pub type Allowance = Result<(), Duration>;

/// The per-agent rate, and the buckets kept in memory when the backend keeps none.
#[derive(Debug)]
pub struct RateLimiter {
    /// The rate every agent's bucket refills at.
    rate: Rate,
    /// Each agent's tokens and when they were counted; shared by every call of the process.
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimiter {
    /// The rule of every bucket.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// `per_second` calls a second on average, `burst` at once.
    pub fn new(per_second: f64, burst: u32) -> Self {
        Self {
            rate: Rate {
                per_second,
                burst: f64::from(burst.max(1)),
            },
            buckets: Mutex::default(),
        }
    }

    /// Takes one call for `agent` from the bucket in memory. PostgreSQL's buckets follow the
    /// same rule in one statement (`Postgres::take_from_bucket`): refill for the time since
    /// the last take, up to the burst; take one if there is one.
    pub fn take_at(&self, agent: &str, now: Instant) -> Allowance {
        let Rate { per_second, burst } = self.rate;
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let (tokens, last) = buckets.entry(agent.to_owned()).or_insert((burst, now));
        let refilled = (*tokens + now.duration_since(*last).as_secs_f64() * per_second).min(burst);
        *last = now;
        if refilled >= 1.0 {
            *tokens = refilled - 1.0;
            Ok(())
        } else {
            *tokens = refilled;
            Err(self.rate.wait_for_one(refilled))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_at_its_rate() {
        let limiter = RateLimiter::new(2.0, 2);
        let start = Instant::now();
        assert!(limiter.take_at("a", start).is_ok());
        assert!(limiter.take_at("a", start).is_ok());
        let wait = limiter.take_at("a", start).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert!(
            limiter.take_at("b", start).is_ok(),
            "agents have buckets of their own"
        );
        assert!(
            limiter
                .take_at("a", start + Duration::from_millis(500))
                .is_ok()
        );
    }

    #[test]
    fn a_wait_too_long_to_say_is_the_longest_there_is() {
        let rate = Rate {
            per_second: 0.0,
            burst: 1.0,
        };
        assert_eq!(rate.wait_for_one(0.0), Duration::MAX);
        let rate = Rate {
            per_second: 4.0,
            burst: 1.0,
        };
        assert_eq!(rate.wait_for_one(0.5), Duration::from_millis(125));
    }
}
