//! Files and folders only their owner can read or write: the store and its lock, snapshots,
//! exports, the config file (which holds the keys' hashes), the compiled-component cache.
//!
//! Everything the server creates goes through here, with mode 0600 for files and 0700 for
//! folders whatever the umask: agents' data, key hashes and native code are never
//! world-readable by default. (SQLite creates a store's `-wal` and `-shm` files with the mode
//! of the store itself, so a store created here keeps them private too.) Folders that exist
//! already keep the mode they have: the server only tightens what it makes.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// The mode of a file the server creates.
#[cfg(unix)]
const FILE_MODE: u32 = 0o600;
/// The mode of a folder the server creates.
#[cfg(unix)]
const DIR_MODE: u32 = 0o700;

/// `mkdir -p` with mode 0700 for each folder it makes.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(path)
}

/// Options for opening a file that, if this creates it, gets mode 0600.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, FILE_MODE);
    options
}

/// Creates (or truncates) a file for writing, mode 0600 if new.
pub fn create(path: &Path) -> io::Result<File> {
    options().write(true).create(true).truncate(true).open(path)
}

/// Writes a whole file, mode 0600 if new.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    io::Write::write_all(&mut create(path)?, bytes.as_ref())
}

/// Sets mode 0600 on a file something else created (SQLite's `VACUUM INTO`, a copy).
pub fn restrict(path: &Path) -> io::Result<()> {
    #[cfg(unix)]
    fs::set_permissions(
        path,
        std::os::unix::fs::PermissionsExt::from_mode(FILE_MODE),
    )?;
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn what_it_makes_is_the_owners_only() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        create_dir_all(&nested).unwrap();
        assert_eq!((mode(&dir.path().join("a")), mode(&nested)), (0o700, 0o700));
        let file = nested.join("f");
        write(&file, "secret").unwrap();
        assert_eq!(mode(&file), 0o600);
        let shared = nested.join("g");
        fs::write(&shared, "x").unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o644)).unwrap();
        restrict(&shared).unwrap();
        assert_eq!(mode(&shared), 0o600);
    }
}
