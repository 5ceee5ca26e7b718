//! Group commit: concurrent write calls share the fsync that makes them durable.
//!
//! With `synchronous = FULL`, SQLite syncs the WAL inside every `COMMIT`, while the call
//! still holds the store's only write lock: writers queue for the disk one sync at a time,
//! and on a disk whose sync takes 2 ms no number of callers gets past 500 writes a second.
//! Here the store's connections run `synchronous = NORMAL` (SQLite then syncs the WAL only
//! before a checkpoint, and the database after one), and a call that changed something calls
//! [`Flush::durable`] after its `COMMIT`: one sync of the WAL file makes every frame written
//! before it durable, whichever connection or process wrote it, so each call is answered only
//! after a sync that began after its commit, exactly as durable as FULL, but one sync covers
//! every call that committed while the previous one ran. The write lock is let go before the
//! sync, so the next writer's work overlaps this one's wait for the disk.
//!
//! The WAL is opened by name for each sync: SQLite may delete it when its last connection
//! closes and make a new one, and a descriptor kept from before would sync the old file.

use crate::wakeup::Wakeup;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Where the syncs of one store stand.
#[derive(Debug, Default)]
struct Syncs {
    /// Commits that asked to be made durable, numbered from 1.
    asked: u64,
    /// Every commit numbered up to this one is durable.
    durable: u64,
    /// A sync is running (its caller leads: the others wait for it).
    running: bool,
}

/// The durable point of one store's WAL, shared by every call of the process.
#[derive(Debug)]
pub struct Flush {
    /// The store's `-wal` file.
    wal: PathBuf,
    /// The syncs asked for and done; every waiting call watches it.
    syncs: Mutex<Syncs>,
    /// Wakes the calls waiting for the running sync.
    synced: Wakeup,
    /// Syncs made: beside the commits made, how many shared one (the tests read it).
    made: AtomicU64,
    /// How a sync is made: [`sync_wal`], but slower in a test that needs syncs to overlap.
    sync_with: fn(&Path) -> io::Result<()>,
}

impl Flush {
    /// The flush of the store at `store`.
    pub fn of(store: &Path) -> Self {
        let mut wal = store.as_os_str().to_owned();
        wal.push("-wal");
        Self {
            wal: wal.into(),
            syncs: Mutex::default(),
            synced: Wakeup::default(),
            made: AtomicU64::new(0),
            sync_with: sync_wal,
        }
    }

    /// The flush of the store at `store` on a disk that refuses every sync.
    #[cfg(test)]
    pub fn failing(store: &Path) -> Self {
        Self {
            sync_with: |_| Err(io::Error::other("the disk refused the sync")),
            ..Self::of(store)
        }
    }

    /// How many syncs this store has made.
    #[cfg(test)]
    pub fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// Returns once everything committed before the call is on disk: after a sync of the WAL
    /// that began after it. The first caller to find no sync running makes one, for itself
    /// and every commit before it; the others wait for it, or for the next.
    pub fn durable(&self) -> io::Result<()> {
        let mut syncs = self.lock();
        syncs.asked += 1;
        let mine = syncs.asked;
        loop {
            if syncs.durable >= mine {
                return Ok(());
            }
            if syncs.running {
                syncs = self.synced.wait(syncs);
                continue;
            }
            // Lead: this sync covers every commit that asked before it began.
            syncs.running = true;
            let covers = syncs.asked;
            drop(syncs);
            let synced = self.sync();
            syncs = self.lock();
            syncs.running = false;
            if synced.is_ok() {
                syncs.durable = syncs.durable.max(covers);
            }
            self.synced.notify_all();
            synced?;
        }
    }

    fn sync(&self) -> io::Result<()> {
        self.made.fetch_add(1, Ordering::Relaxed);
        (self.sync_with)(&self.wal)
    }

    fn lock(&self) -> MutexGuard<'_, Syncs> {
        self.syncs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Syncs the data of the WAL at `wal`.
fn sync_wal(wal: &Path) -> io::Result<()> {
    match std::fs::File::open(wal) {
        Ok(wal) => wal.sync_data(),
        // No WAL: nothing committed is outside the database file, which a checkpoint syncs
        // before it lets the WAL go.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_call_alone_makes_one_sync_and_a_missing_wal_is_nothing_to_sync() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s.db");
        let flush = Flush::of(&store);
        flush.durable().unwrap();
        assert_eq!(flush.made(), 1);
        std::fs::write(dir.path().join("s.db-wal"), b"frames").unwrap();
        flush.durable().unwrap();
        flush.durable().unwrap();
        assert_eq!(flush.made(), 3, "each call alone syncs for itself");
    }

    /// Calls that ask while a sync runs share the next one: with syncs slow enough to
    /// overlap (a 20 ms disk), 16 callers make far fewer syncs than calls, and every call
    /// returns only after a sync that began after it asked.
    #[test]
    fn concurrent_calls_share_syncs() {
        fn slow_disk(wal: &Path) -> io::Result<()> {
            std::thread::sleep(std::time::Duration::from_millis(20));
            sync_wal(wal)
        }
        let dir = tempfile::tempdir().unwrap();
        let flush = Arc::new(Flush {
            sync_with: slow_disk,
            ..Flush::of(&dir.path().join("s.db"))
        });
        let (callers, each) = (16, 5);
        let threads: Vec<_> = (0..callers)
            .map(|_| {
                let flush = Arc::clone(&flush);
                std::thread::spawn(move || {
                    for _ in 0..each {
                        let asked = std::time::Instant::now();
                        flush.durable().unwrap();
                        assert!(asked.elapsed().as_millis() >= 20, "answered before a sync");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let (made, calls) = (flush.made(), callers * each);
        assert!(made <= calls / 4, "{made} syncs for {calls} calls");
        let syncs = flush.lock();
        assert_eq!((syncs.asked, syncs.durable), (calls, calls));
        assert!(!syncs.running);
    }
}
