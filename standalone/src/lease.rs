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
//! reader never sees half a lease. The file is reached through a [`Folder`]: `std::fs`
//! natively, the preopened directory's WASI descriptor in the component (Rust's `std::fs`
//! asks WASI for rights that some hosts, jco's Node shim among them, refuse).

use std::fs;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The few file operations a lease needs, in one folder. Errors are in words.
pub trait Folder {
    /// The text of the file `name`, or none if there is no such file.
    fn read(&self, name: &str) -> Result<Option<String>, String>;
    /// Writes `text` to the file `staged`, then renames it over `name`.
    fn replace(&self, name: &str, staged: &str, text: &str) -> Result<(), String>;
    /// Removes the file `name`.
    fn remove(&self, name: &str);
}

impl Folder for PathBuf {
    fn read(&self, name: &str) -> Result<Option<String>, String> {
        match fs::read_to_string(self.join(name)) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.kind().to_string()),
        }
    }
    fn replace(&self, name: &str, staged: &str, text: &str) -> Result<(), String> {
        fs::write(self.join(staged), text)
            .and_then(|()| fs::rename(self.join(staged), self.join(name)))
            .map_err(|e| e.kind().to_string())
    }
    fn remove(&self, name: &str) {
        let _ = fs::remove_file(self.join(name));
    }
}

/// How long a lease lasts without being renewed.
pub const LEASE: Duration = Duration::from_secs(5);

/// A lease renewed this recently is not written again: well inside [`LEASE`].
const RENEWED: Duration = Duration::from_secs(1);

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
    #[error("the lease file beside the store cannot be {action}: {reason}")]
    Io {
        /// "read" or "written".
        action: &'static str,
        /// What the file system said, in words.
        reason: String,
    },
}

/// The lease's file in the store's folder.
pub const LEASE_FILE: &str = "scratchpad.lease";

/// This process's hold on a store folder.
pub struct Lease<F: Folder> {
    folder: F,
    token: u64,
}

/// (token, last renewed in ms since the epoch), as the file holds it.
fn read(folder: &impl Folder) -> Result<Option<(u64, u64)>, LeaseError> {
    let text = folder.read(LEASE_FILE).map_err(|reason| LeaseError::Io {
        action: "read",
        reason,
    })?;
    let Some(text) = text else { return Ok(None) };
    let mut words = text.split_whitespace().map(str::parse::<u64>);
    match (words.next(), words.next()) {
        (Some(Ok(token)), Some(Ok(at))) => Ok(Some((token, at))),
        // A lease that does not parse holds nothing.
        _ => Ok(None),
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl<F: Folder> Lease<F> {
    /// Takes the lease in `folder` for `token`, waiting up to `wait` for another holder's
    /// lease to lapse.
    pub fn take(folder: F, token: u64, wait: Duration) -> Result<Self, LeaseError> {
        let lease = Self { folder, token };
        let started = SystemTime::now();
        loop {
            let age_ms = match read(&lease.folder)? {
                Some((holder, at)) if holder != token => now_ms().saturating_sub(at),
                _ => u64::MAX,
            };
            if age_ms >= LEASE.as_millis() as u64 {
                lease.write()?;
                // Two openers may both have seen a lapsed lease: the last rename wins, and
                // the other sees a token not its own.
                std::thread::sleep(POLL / 10);
                if read(&lease.folder)?.is_some_and(|(holder, _)| holder == token) {
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

    /// Checks the lease is still this process's and renews it (at most once a second: a
    /// lease renewed within [`RENEWED`] is fresh enough, and a call then costs one read).
    pub fn renew(&self) -> Result<(), LeaseError> {
        match read(&self.folder)? {
            Some((holder, at)) if holder == self.token => {
                if now_ms().saturating_sub(at) < RENEWED.as_millis() as u64 {
                    return Ok(());
                }
                self.write()
            }
            _ => Err(LeaseError::TakenOver),
        }
    }

    /// Frees the store for another process at once (if the lease is still this one's).
    pub fn release(self) {
        if matches!(read(&self.folder), Ok(Some((holder, _))) if holder == self.token) {
            self.folder.remove(LEASE_FILE);
        }
    }

    fn write(&self) -> Result<(), LeaseError> {
        let staged = format!("{LEASE_FILE}-{:x}", self.token);
        let text = format!("{} {}\n", self.token, now_ms());
        self.folder
            .replace(LEASE_FILE, &staged, &text)
            .map_err(|reason| LeaseError::Io {
                action: "written",
                reason,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_then_is_refused_while_the_first_renews() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let first = Lease::take(path.clone(), 1, Duration::ZERO).unwrap();
        let refused = Lease::take(path, 2, Duration::from_millis(300))
            .err()
            .unwrap();
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
        let path = dir.path().to_path_buf();
        let first = Lease::take(path.clone(), 1, Duration::ZERO).unwrap_or_else(|e| panic!("{e}"));
        first.release();
        let second = Lease::take(path.clone(), 2, Duration::ZERO)
            .unwrap_or_else(|e| panic!("free after release: {e}"));
        let old = Lease {
            folder: path,
            token: 1,
        };
        assert!(matches!(old.renew(), Err(LeaseError::TakenOver)));
        second.renew().unwrap();
    }

    #[test]
    fn a_lapsed_lease_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let stale = now_ms() - LEASE.as_millis() as u64 - 1;
        fs::write(path.join(LEASE_FILE), format!("7 {stale}\n")).unwrap();
        let lease = Lease::take(path.clone(), 8, Duration::ZERO).expect("a lapsed lease is free");
        lease.renew().unwrap();
        assert_eq!(read(&path).unwrap().map(|(t, _)| t), Some(8));
    }
}
