//! The operator's commands over a whole store: snapshot, restore, verify, export, import,
//! stats. The SQL is in [`crate::storage::admin`]; this module owns the snapshot folder and
//! its manifest, the order of the steps, and progress on a terminal.

use crate::bindings::LimitOverrides;
use crate::storage::admin;
use crate::storage::{
    Counts, ImportError, LockError, Sqlite, StoreError, StoreLock, Tally, read_header,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The database file's name inside a snapshot folder.
pub const SNAPSHOT_DB: &str = "scratchpad.db";
/// The manifest's name inside a snapshot folder.
pub const MANIFEST: &str = "manifest.json";
const MANIFEST_FORMAT: &str = "scratchpad-snapshot";

/// What a snapshot folder holds, written last: a folder without it is not a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// Always `scratchpad-snapshot`.
    pub format: String,
    /// The scratchpad-mcp version that took it.
    pub tool_version: String,
    /// The store's schema version.
    pub schema_version: i64,
    /// When it was taken (UTC).
    pub created_at: String,
    /// The database file, inside the folder.
    pub database: String,
    /// Its size.
    pub bytes: u64,
    /// Its SHA-256, hex.
    pub sha256: String,
    /// What it holds.
    pub counts: Counts,
}

/// Why an operation failed. Each message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An import was refused.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The store is in use, or its lock cannot be had.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A snapshot folder is not usable.
    #[error("{0}")]
    Snapshot(String),
    /// An agent id no call could name: no data can be under it.
    #[error("--agent: {0}")]
    Agent(String),
    /// A snapshot or store failed verification; nothing was changed.
    #[error("{what} failed verification; nothing was changed:\n  {}", problems.join("\n  "))]
    Unsound {
        /// What was verified.
        what: String,
        /// What is wrong.
        problems: Vec<String>,
    },
    /// A file could not be read or written.
    #[error("{what}: {error}")]
    Io {
        /// What was being done, and to which file.
        what: String,
        /// The error: said in this one's text, so not its source (a chain of causes would
        /// say it twice).
        error: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> OpsError {
    let what = what.into();
    move |error| OpsError::Io { what, error }
}

/// Progress on stderr when it is a terminal, at most a few times a second; silent otherwise.
pub struct Progress {
    label: &'static str,
    shown: Option<Instant>,
    on: bool,
}

impl Progress {
    /// Progress of `label` (e.g. "exporting").
    pub fn new(label: &'static str) -> Self {
        Self {
            label,
            shown: None,
            on: std::io::stderr().is_terminal(),
        }
    }

    /// Says a phase has started.
    pub fn phase(&mut self, what: &str) {
        if self.on {
            eprint!("\r\x1b[K{}: {what}", self.label);
        }
    }

    /// Says how many items are done.
    pub fn items(&mut self, done: u64) {
        let due = self
            .shown
            .is_none_or(|at| at.elapsed() >= Duration::from_millis(200));
        if self.on && due {
            eprint!("\r\x1b[K{}: {done} lines", self.label);
            self.shown = Some(Instant::now());
        }
    }

    /// Clears the line.
    pub fn done(&mut self) {
        if self.on {
            eprint!("\r\x1b[K");
        }
    }
}

fn sha256_of(path: &Path) -> Result<(u64, String), OpsError> {
    let mut file =
        std::fs::File::open(path).map_err(io(format!("cannot read {}", path.display())))?;
    let mut hasher = Sha256::new();
    let bytes = std::io::copy(&mut file, &mut hasher)
        .map_err(io(format!("cannot read {}", path.display())))?;
    let hex = scratchpad_guest::hex::hex(&hasher.finalize());
    Ok((bytes, hex))
}

/// Writes the file at `path` whole or not at all: `write` fills a file beside it (the name
/// with `.partial` added, so that no other file of the folder is taken for it), which is
/// synced and renamed to `path` once `write` succeeds, and removed if anything fails, so no
/// half-written file (a manifest, an export) is ever found at the name.
fn durably<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> Result<T, OpsError>,
) -> Result<T, OpsError> {
    let what = || format!("cannot write {}", path.display());
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = crate::private::create(&partial).map_err(io(what()))?;
    let mut out = std::io::BufWriter::new(file);
    let written = write(&mut out).and_then(|value| {
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)
            .and_then(|file| file.sync_all())
            .and_then(|()| std::fs::rename(&partial, path))
            .map_err(io(what()))?;
        Ok(value)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// Takes a consistent snapshot of the store at `db` into the new or empty folder `dir`,
/// verifies it, and writes its manifest last.
pub fn snapshot(db: &Path, dir: &Path) -> Result<Manifest, OpsError> {
    let mut progress = Progress::new("snapshot");
    if dir.exists() && !dir.is_dir() {
        return Err(OpsError::Snapshot(format!(
            "{} is a file; a snapshot goes to a new or empty folder",
            dir.display()
        )));
    }
    if dir.exists() {
        let mut entries =
            std::fs::read_dir(dir).map_err(io(format!("cannot read {}", dir.display())))?;
        if entries.next().is_some() {
            return Err(OpsError::Snapshot(format!(
                "{} is not empty; a snapshot goes to a new or empty folder",
                dir.display()
            )));
        }
    }
    crate::private::create_dir_all(dir).map_err(io(format!("cannot create {}", dir.display())))?;
    let file = dir.join(SNAPSHOT_DB);
    progress.phase("copying");
    admin::vacuum_into(db, &file)?;
    progress.phase("verifying");
    let check = admin::verify(&file)?;
    if !check.ok() {
        return Err(OpsError::Unsound {
            what: format!("the snapshot in {}", dir.display()),
            problems: check.problems,
        });
    }
    progress.phase("hashing");
    let (bytes, sha256) = sha256_of(&file)?;
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        schema_version: check.schema_version,
        created_at: admin::now(),
        database: SNAPSHOT_DB.into(),
        bytes,
        sha256,
        counts: check.counts,
    };
    let json =
        serde_json::to_vec_pretty(&manifest).map_err(|e| OpsError::Snapshot(e.to_string()))?;
    let at = dir.join(MANIFEST);
    durably(&at, |out| {
        out.write_all(&json)
            .map_err(io(format!("cannot write {}", at.display())))
    })?;
    progress.done();
    Ok(manifest)
}

/// Checks a snapshot folder: its manifest, its file's hash, and the store itself.
pub fn check_snapshot(dir: &Path) -> Result<Manifest, OpsError> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read(&path).map_err(|e| {
        OpsError::Snapshot(format!(
            "{} is not a snapshot (no readable {MANIFEST}: {e})",
            dir.display()
        ))
    })?;
    let manifest: Manifest = serde_json::from_slice(&text)
        .ok()
        .filter(|m: &Manifest| m.format == MANIFEST_FORMAT)
        .ok_or_else(|| {
            OpsError::Snapshot(format!("{} is not a snapshot manifest", path.display()))
        })?;
    if manifest.database.contains(['/', '\\']) {
        return Err(OpsError::Snapshot(format!(
            "{}: database {:?} must be a file name inside the folder",
            path.display(),
            manifest.database
        )));
    }
    let file = dir.join(&manifest.database);
    let (bytes, sha256) = sha256_of(&file)?;
    if (bytes, sha256.as_str()) != (manifest.bytes, manifest.sha256.as_str()) {
        return Err(OpsError::Unsound {
            what: format!("the snapshot in {}", dir.display()),
            problems: vec![format!(
                "{} is {bytes} bytes with SHA-256 {sha256}; the manifest says {} bytes, {}",
                manifest.database, manifest.bytes, manifest.sha256
            )],
        });
    }
    let check = admin::verify(&file)?;
    if !check.ok() {
        return Err(OpsError::Unsound {
            what: format!("the snapshot in {}", dir.display()),
            problems: check.problems,
        });
    }
    Ok(manifest)
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// The snapshot's manifest.
    pub manifest: Manifest,
    /// Where the store that was replaced now is, if there was one.
    pub replaced: Option<PathBuf>,
}

/// Puts the snapshot in `dir` in place of the store at `db`: verified first, refused while
/// any process has the store open, the old store kept aside.
pub fn restore(db: &Path, dir: &Path) -> Result<Restored, OpsError> {
    let mut progress = Progress::new("restore");
    progress.phase("verifying the snapshot");
    let manifest = check_snapshot(dir)?;
    if let Some(parent) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::create_dir_all(parent)
            .map_err(io(format!("cannot create {}", parent.display())))?;
    }
    let lock = StoreLock::exclusive(db)?;
    progress.phase("replacing the store");
    let stamp: String = admin::now()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let replaced = admin::replace_store(
        &lock,
        &dir.join(&manifest.database),
        db,
        &format!(".before-restore-{stamp}"),
    )
    .map_err(io(format!("cannot replace {}", db.display())))?;
    progress.done();
    Ok(Restored { manifest, replaced })
}

/// [`export`] into the file at `path`, which appears only when the export is whole: a
/// refused or interrupted one leaves what was at the name as it was.
pub fn export_file(db: &Path, agent: &str, path: &Path) -> Result<Tally, OpsError> {
    durably(path, |out| export(db, agent, out))
}

/// Exports agent `agent` to `out`, reading the store without changing it.
pub fn export(db: &Path, agent: &str, out: &mut dyn Write) -> Result<Tally, OpsError> {
    scratchpad_guest::names::AgentId::parse(agent)
        .map_err(|e| OpsError::Agent(scratchpad_guest::json::message(&e)))?;
    let mut progress = Progress::new("exporting");
    let tally = admin::export(db, agent, out, &mut |n| progress.items(n))?;
    progress.done();
    Ok(tally)
}

/// Imports an export into the store at `db` (created if missing).
pub fn import(
    db: &Path,
    input: &mut dyn std::io::BufRead,
    as_agent: Option<&str>,
    replace: bool,
    limits: &LimitOverrides,
) -> Result<(String, Tally), OpsError> {
    let agent = read_header(input, as_agent)?;
    let store = Sqlite::open(db)?;
    let mut progress = Progress::new("importing");
    let quotas = scratchpad_guest::limits::quotas(limits);
    let tally = store.import(&agent, input, replace, quotas, &mut |n| progress.items(n))?;
    progress.done();
    Ok((agent, tally))
}
