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
//! The WAL is opened by name once and kept: opening and closing it for every sync cost two
//! system calls and a path lookup a write. SQLite deletes the WAL when its last connection
//! closes and makes a new one at the next open, so a kept descriptor can outlive its file;
//! before each sync the kept file's link count says whether it is still the store's (a
//! deleted file has none), and if not the WAL is opened by name again.

use crate::wakeup::Wakeup;
use std::fs::File;
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
    /// The WAL as last opened; the running sync holds it meanwhile.
    wal: Option<File>,
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
    /// How the WAL is synced: [`File::sync_data`], but slower in a test that needs syncs
    /// to overlap.
    sync_with: fn(&File) -> io::Result<()>,
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
            sync_with: File::sync_data,
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
            let mut wal = syncs.wal.take();
            drop(syncs);
            let synced = self.sync(&mut wal);
            syncs = self.lock();
            syncs.wal = wal;
            syncs.running = false;
            if synced.is_ok() {
                syncs.durable = syncs.durable.max(covers);
            }
            self.synced.notify_all();
            synced?;
        }
    }

    /// Syncs the store's WAL through `wal`, the file kept from the last sync, after opening
    /// it again by name if it is gone.
    fn sync(&self, wal: &mut Option<File>) -> io::Result<()> {
        self.made.fetch_add(1, Ordering::Relaxed);
        let file = match wal.take().filter(still_linked) {
            Some(kept) => kept,
            None => match File::open(&self.wal) {
                Ok(file) => file,
                // No WAL: nothing committed is outside the database file, which a checkpoint
                // syncs before it lets the WAL go.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            },
        };
        let synced = (self.sync_with)(&file);
        *wal = Some(file);
        synced
    }

    fn lock(&self) -> MutexGuard<'_, Syncs> {
        self.syncs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `file` still has a name: SQLite deletes a WAL, it never renames one.
#[cfg(unix)]
fn still_linked(file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|m| m.nlink() > 0)
}

/// Where a file's links cannot be counted, the WAL is opened by name for every sync.
#[cfg(not(unix))]
fn still_linked(_: &File) -> bool {
    false
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

    /// The WAL is opened once and kept while it is the store's; once SQLite has deleted it
    /// and made a new one, the new one is synced.
    #[test]
    #[cfg(unix)]
    fn the_wal_is_kept_open_until_it_is_replaced() {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("s.db-wal");
        let flush = Flush::of(&dir.path().join("s.db"));
        let kept = || {
            let syncs = flush.lock();
            let file = syncs.wal.as_ref().expect("a WAL kept");
            (file.as_raw_fd(), file.metadata().unwrap().ino())
        };
        std::fs::write(&wal, b"frames").unwrap();
        flush.durable().unwrap();
        let first = kept();
        assert_eq!(first.1, std::fs::metadata(&wal).unwrap().ino());
        flush.durable().unwrap();
        assert_eq!(kept(), first, "the same descriptor, not opened again");
        std::fs::remove_file(&wal).unwrap();
        std::fs::write(&wal, b"frames of a new log").unwrap();
        flush.durable().unwrap();
        let (_, synced) = kept();
        assert_ne!(synced, first.1, "the deleted WAL is let go");
        assert_eq!(synced, std::fs::metadata(&wal).unwrap().ino());
        std::fs::remove_file(&wal).unwrap();
        flush.durable().unwrap();
        assert!(flush.lock().wal.is_none(), "no WAL, nothing kept or synced");
        assert_eq!(flush.made(), 4);
    }

    /// Calls that ask while a sync runs share the next one: with syncs slow enough to
    /// overlap (a 20 ms disk), 16 callers make far fewer syncs than calls, and every call
    /// returns only after a sync that began after it asked.
    #[test]
    fn concurrent_calls_share_syncs() {
        fn slow_disk(wal: &File) -> io::Result<()> {
            std::thread::sleep(std::time::Duration::from_millis(20));
            wal.sync_data()
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.db-wal"), b"frames").unwrap();
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
