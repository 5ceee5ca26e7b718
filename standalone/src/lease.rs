//! Who may use a store folder: a lease file, because WASI has no file locks.
//!
//! SQLite's own locks need `fcntl` locks (or shared memory for WAL), which WASI 0.2 does not
//! have, so two processes on one store would each think they hold it. Instead, the process
//! that opens a store writes `scratchpad.lease` beside it: a random token and the time it
//! last used the store. Every call checks that the token is still its own and renews the
//! time, at its start and again before it commits.
//!
//! The rule, as users see it:
//! - A process that finds a lease renewed within [`LEASE`] waits up to [`LEASE`] for it to
//!   lapse, then fails with a clear error: two live processes never share a store.
//! - A lease not renewed for [`LEASE`] (its process was killed, trapped, or idle) is taken
//!   over; if its old holder was only idle, its next call fails with a clear error and
//!   changes nothing, because the check before its commit sees the new token.
//! - [`Lease::release`] (the `close` export) frees the folder at once.
//!
//! The lease file is replaced by writing a new file and renaming it over the old one, so a
//! reader never sees half a lease.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a lease lasts without being renewed.
pub const LEASE: Duration = Duration::from_secs(5);

/// How often a waiting opener looks again.
const POLL: Duration = Duration::from_millis(100);

/// Why the store could not be taken or kept.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another process used the store within the lease.
    #[error(
        "the store in this folder is in use by another process (it used it {age_ms} ms ago); \
         WASI has no file locks, so one process at a time holds a store: close the other, \
         or wait until it has been idle for {} s",
        LEASE.as_secs()
    )]
    InUse {
        /// How long ago the other process renewed its lease.
        age_ms: u64,
    },
    /// This process's lease lapsed and another process took the store over.
    #[error(
        "another process took this store over after this one left it idle for more than {} s; \
         nothing was changed: open the store again once the other process is done",
        LEASE.as_secs()
    )]
    TakenOver,
    /// The lease file could not be read or written.
    #[error("the lease file beside the store cannot be {action}: {kind}")]
    Io {
        /// "read" or "written".
        action: &'static str,
        /// What the file system said, in words.
        kind: io::ErrorKind,
    },
}

/// This process's hold on a store folder.
#[derive(Debug)]
pub struct Lease {
    path: PathBuf,
    token: u64,
}

/// (token, last renewed in ms since the epoch), as the file holds it.
fn read(path: &Path) -> Result<Option<(u64, u64)>, LeaseError> {
    match fs::read_to_string(path) {
        Ok(text) => {
            let mut words = text.split_whitespace().map(str::parse::<u64>);
            match (words.next(), words.next()) {
                (Some(Ok(token)), Some(Ok(at))) => Ok(Some((token, at))),
                // A lease that does not parse holds nothing.
                _ => Ok(None),
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LeaseError::Io {
            action: "read",
            kind: e.kind(),
        }),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Lease {
    /// Takes the lease at `path` for `token`, waiting up to `wait` for another holder's
    /// lease to lapse.
    pub fn take(path: &Path, token: u64, wait: Duration) -> Result<Self, LeaseError> {
        let lease = Self {
            path: path.to_owned(),
            token,
        };
        let started = SystemTime::now();
        loop {
            let age_ms = match read(path)? {
                Some((holder, at)) if holder != token => now_ms().saturating_sub(at),
                _ => u64::MAX,
            };
            if age_ms >= LEASE.as_millis() as u64 {
                lease.write()?;
                // Two openers may both have seen a lapsed lease: the last rename wins, and
                // the other sees a token not its own.
                std::thread::sleep(POLL / 10);
                if read(path)?.is_some_and(|(holder, _)| holder == token) {
                    return Ok(lease);
                }
                continue;
            }
            if started.elapsed().unwrap_or_default() >= wait {
                return Err(LeaseError::InUse { age_ms });
            }
            std::thread::sleep(POLL);
        }
    }

    /// Checks the lease is still this process's and renews it.
    pub fn renew(&self) -> Result<(), LeaseError> {
        match read(&self.path)? {
            Some((holder, _)) if holder == self.token => self.write(),
            _ => Err(LeaseError::TakenOver),
        }
    }

    /// Frees the store for another process at once (if the lease is still this one's).
    pub fn release(self) {
        if matches!(read(&self.path), Ok(Some((holder, _))) if holder == self.token) {
            let _ = fs::remove_file(&self.path);
        }
    }

    fn write(&self) -> Result<(), LeaseError> {
        let staged = self.path.with_extension(format!("lease-{:x}", self.token));
        fs::write(&staged, format!("{} {}\n", self.token, now_ms()))
            .and_then(|()| fs::rename(&staged, &self.path))
            .map_err(|e| LeaseError::Io {
                action: "written",
                kind: e.kind(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_then_is_refused_while_the_first_renews() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scratchpad.lease");
        let first = Lease::take(&path, 1, Duration::ZERO).unwrap();
        let refused = Lease::take(&path, 2, Duration::from_millis(300)).unwrap_err();
        assert!(
            matches!(refused, LeaseError::InUse { age_ms } if age_ms < 1_000),
            "{refused:?}"
        );
        assert!(
            refused.to_string().contains("in use by another process"),
            "{refused}"
        );
        first.renew().expect("the first still holds it");
    }

    #[test]
    fn a_released_lease_is_free_at_once_and_its_old_holder_cannot_renew() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scratchpad.lease");
        Lease::take(&path, 1, Duration::ZERO).unwrap().release();
        let second = Lease::take(&path, 2, Duration::ZERO).expect("free after release");
        let old = Lease {
            path: path.clone(),
            token: 1,
        };
        assert!(matches!(old.renew(), Err(LeaseError::TakenOver)));
        second.renew().unwrap();
    }

    #[test]
    fn a_lapsed_lease_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scratchpad.lease");
        let stale = now_ms() - LEASE.as_millis() as u64 - 1;
        fs::write(&path, format!("7 {stale}\n")).unwrap();
        let lease = Lease::take(&path, 8, Duration::ZERO).expect("a lapsed lease is free");
        lease.renew().unwrap();
        assert_eq!(read(&path).unwrap().map(|(t, _)| t), Some(8));
    }
}
