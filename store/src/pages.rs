//! Page checksums: every page of a store carries a checksum of itself in its last 8 bytes
//! (SQLite's reserved bytes, byte 20 of the header), written as the page goes to disk and
//! checked every time it is read back.
//!
//! Why: the content hashes (`versions.sha256`, `log_entries.sha256`) catch a changed
//! version or log entry, but not a changed timestamp, counter or summary, nor a b-tree
//! page whose change SQLite's own structure checks happen to accept. SQLite checks no page
//! bytes itself. With these, any changed byte of a page in use is an error the first time it
//! is read, and `verify` (which reads every page in use) names the page.
//!
//! How: a VFS shim over the platform's own VFS (the server's `unix`, the component's
//! `unix-none`), in this crate so that the server and the self-contained component write and
//! check the same bytes. It acts only on a store whose header says 8 reserved bytes, so a
//! store from before (0) is left as it is until [`enable`] rewrites it; it touches only the
//! main database file and its write-ahead log, never journals or temporary files.
//!
//! The write-ahead log needs care. SQLite chains a checksum through every frame of the WAL
//! (each frame's header and page, seeded by the frame before), computed *before* the page
//! reaches the VFS, and after a crash it replays frames only as far as that chain holds.
//! Putting a page checksum into the page would break the chain at that frame, and a
//! recovery would drop every commit from there on. So when a frame's page follows its
//! header, the shim writes the two again at once, with the frame's checksum computed anew
//! over the page as written, seeded from the frame before it *in the file*.
//! SQLite reads back from the file every chain value it later checks or continues (recovery;
//! rewriting a transaction's checksums after it overwrote one of its own frames), so the
//! file is the one truth; the chain value SQLite keeps in memory only seeds the next frame,
//! whose checksum the shim replaces in turn. Tests: `a_crash_replays_every_commit_from_the_wal`
//! and the damage tests below.

#![allow(unsafe_code)] // A VFS is SQLite's C interface: every function here is called by SQLite.

use crate::Error;
use rusqlite::{Connection, OpenFlags, ffi};
use std::cell::Cell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::Path;
use std::sync::Mutex;

/// Bytes reserved at the end of every page for its checksum.
pub const RESERVED: u8 = 8;

/// The first 16 bytes of every SQLite database, and of page 1 wherever it is written.
const MAGIC: &[u8; 16] = b"SQLite format 3\0";
/// Size of a WAL's header and of each frame's header.
const WAL_HEADER: i64 = 32;
const FRAME_HEADER: usize = 24;

/// File controls of this shim (beside SQLite's own, which stop in the low hundreds).
/// `STAMP` with 1: compute every page's checksum, verify none (while [`enable`] rewrites a
/// store that had none); with 0, back to what the header says.
const FCNTL_STAMP: c_int = 0x7370_0001;
/// `EXPECT`: a new, empty file is to have checksums from its first page on.
const FCNTL_EXPECT: c_int = 0x7370_0002;

/// The checksum of a page, over all of it but its last 8 bytes: SQLite's WAL checksum (two
/// running sums of 32-bit words, each folding in the other) of its little-endian words,
/// stored little-endian. Any change of one word changes the first sum.
pub fn checksum(page: &[u8]) -> [u8; 8] {
    let (s1, s2) = body_sums(page);
    let mut out = [0; 8];
    out[..4].copy_from_slice(&s1.to_le_bytes());
    out[4..].copy_from_slice(&s2.to_le_bytes());
    out
}

/// The two sums of a page's checksum ([`checksum`]).
fn body_sums(page: &[u8]) -> (u32, u32) {
    sums_from_zero(&page[..page.len() - usize::from(RESERVED)])
}

/// How many chains [`sums_from_zero`] runs side by side. Measured on a 4 KiB page (x86-64,
/// release): word by word 496 ns, 4 lanes 196 ns, 8 lanes 371 ns and 16 lanes 499 ns, their
/// sums no longer all held in registers.
const LANES: usize = 4;

/// `wal_chain((0, 0), data, false)`, the same sums sooner. Word by word, each step waits for
/// the one before (each sum folds in the other), so one chain runs at the speed of that
/// dependency, whatever the processor could do beside it; and every page a write puts in
/// the log is summed once here. So the words are cut into [`LANES`] runs of equal length,
/// each chained from zero, the runs stepped side by side; then each run's sums continue the
/// ones before by [`chain_from`], the same joining of a seed to a chain from zero that
/// continues a frame's chain. What does not divide evenly is chained on at the end.
fn sums_from_zero(data: &[u8]) -> (u32, u32) {
    let (pairs, _) = data.as_chunks::<8>();
    let run_pairs = pairs.len() / LANES;
    let runs: [&[[u8; 8]]; LANES] =
        std::array::from_fn(|lane| &pairs[lane * run_pairs..(lane + 1) * run_pairs]);
    let mut lanes = [(0u32, 0u32); LANES];
    for i in 0..run_pairs {
        for (sums, run) in lanes.iter_mut().zip(runs) {
            let [a, b, c, d, e, f, g, h] = run[i];
            sums.0 = sums
                .0
                .wrapping_add(u32::from_le_bytes([a, b, c, d]))
                .wrapping_add(sums.1);
            sums.1 = sums
                .1
                .wrapping_add(u32::from_le_bytes([e, f, g, h]))
                .wrapping_add(sums.0);
        }
    }
    let joined = lanes
        .into_iter()
        .fold((0, 0), |seed, run| chain_from(seed, run_pairs, run));
    wal_chain(joined, pairs[run_pairs * LANES..].as_flattened(), false)
}

/// Whether `page` holds its own checksum.
pub fn holds_checksum(page: &[u8]) -> bool {
    page[page.len() - usize::from(RESERVED)..] == checksum(page)
}

/// SQLite's WAL checksum of `data` continued from `seed`; `big_endian` is what the WAL's
/// magic number says of the words.
fn wal_chain(seed: (u32, u32), data: &[u8], big_endian: bool) -> (u32, u32) {
    let (mut s1, mut s2) = seed;
    for pair in data.chunks_exact(8) {
        let word = |i: usize| {
            let b = [pair[i], pair[i + 1], pair[i + 2], pair[i + 3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        s1 = s1.wrapping_add(word(0)).wrapping_add(s2);
        s2 = s2.wrapping_add(word(4)).wrapping_add(s1);
    }
    (s1, s2)
}

/// The chain over some words from `seed`, given the chain over them from `(0, 0)`
/// (`from_zero`) and how many 8-byte pairs they are: each pair's step is linear in the sums
/// (`s1 += s2 + w0; s2 += s1 + w1`: the sums move by the matrix `[[1, 1], [1, 2]]`, the words
/// add a constant), so a seed's part and the words' part add, and the seed's part is that
/// matrix to the power `pairs` applied to it, computed by squaring. So a frame's chain over
/// a page follows from the page's own checksum without a second pass over its bytes.
fn chain_from(seed: (u32, u32), pairs: usize, from_zero: (u32, u32)) -> (u32, u32) {
    type Matrix = [u32; 4];
    let times = |a: Matrix, b: Matrix| -> Matrix {
        let dot =
            |x: u32, y: u32, z: u32, w: u32| x.wrapping_mul(y).wrapping_add(z.wrapping_mul(w));
        [
            dot(a[0], b[0], a[1], b[2]),
            dot(a[0], b[1], a[1], b[3]),
            dot(a[2], b[0], a[3], b[2]),
            dot(a[2], b[1], a[3], b[3]),
        ]
    };
    let (mut power, mut step, mut n): (Matrix, Matrix, usize) = ([1, 0, 0, 1], [1, 1, 1, 2], pairs);
    while n > 0 {
        if n & 1 == 1 {
            power = times(power, step);
        }
        step = times(step, step);
        n >>= 1;
    }
    let (s1, s2) = seed;
    (
        power[0]
            .wrapping_mul(s1)
            .wrapping_add(power[1].wrapping_mul(s2))
            .wrapping_add(from_zero.0),
        power[2]
            .wrapping_mul(s1)
            .wrapping_add(power[3].wrapping_mul(s2))
            .wrapping_add(from_zero.1),
    )
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Whether `n` bytes read or written at once are a whole page.
fn is_page(n: c_int) -> bool {
    (512..=65536).contains(&n) && n & (n - 1) == 0
}

/// Where a page that failed its checksum was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Page `n` (from 1) of the database file.
    Page(i64),
    /// The page of frame `n` (from 1) of the write-ahead log.
    WalFrame(i64),
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Page(n) => write!(f, "page {n} of the store's file"),
            Fault::WalFrame(n) => write!(f, "the page in frame {n} of the store's write-ahead log"),
        }
    }
}

thread_local! {
    /// The last page this thread read that failed its checksum (SQLite reports only
    /// `SQLITE_IOERR_DATA`; `verify` names the page from here).
    static LAST_FAULT: Cell<Option<Fault>> = const { Cell::new(None) };
}

/// The last page this thread read that failed its checksum, forgotten as it is taken.
pub fn take_fault() -> Option<Fault> {
    LAST_FAULT.with(Cell::take)
}

/// Opens a connection to the store at `path` through the checksum shim over `parent` (the
/// platform's default VFS when `None`).
pub fn open(path: &Path, flags: OpenFlags, parent: Option<&str>) -> Result<Connection, Error> {
    let vfs = register(parent)?;
    let vfs = vfs
        .to_str()
        .map_err(|_| unregistered("a VFS name is not UTF-8"))?;
    Ok(Connection::open_with_flags_and_vfs(path, flags, vfs)?)
}

/// Gives the store `conn` has open page checksums, if it has none: a new, empty file gets
/// them from its first page; a store written before them is rewritten (`VACUUM`, under the
/// write lock) with every page checksummed. Returns whether the store was rewritten. Call
/// it outside a transaction, on a connection [`open`] made, before it writes anything.
pub fn enable(conn: &Connection) -> Result<bool, Error> {
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    let reserved = file_control(conn, ffi::SQLITE_FCNTL_RESERVE_BYTES, -1)?;
    if pages == 0 {
        file_control(conn, ffi::SQLITE_FCNTL_RESERVE_BYTES, RESERVED.into())?;
        file_control(conn, FCNTL_EXPECT, 1)?;
        return Ok(false);
    }
    if reserved == c_int::from(RESERVED) {
        return Ok(false);
    }
    if reserved > c_int::from(RESERVED) {
        // SQLite can raise the reserved bytes but never lower them; another tool owns them.
        return Err(Error::Database {
            words: "the store's pages reserve bytes for another tool: it cannot hold checksums",
            detail: format!("{reserved} reserved bytes"),
        });
    }
    file_control(conn, ffi::SQLITE_FCNTL_RESERVE_BYTES, RESERVED.into())?;
    file_control(conn, FCNTL_STAMP, 1)?;
    let rewritten = conn.execute_batch("VACUUM");
    file_control(conn, FCNTL_STAMP, 0)?;
    rewritten?;
    Ok(true)
}

/// Writes the checksum of every page of the database file at `path` that lacks it, when its
/// header reserves the bytes for them: for a copy SQLite wrote through the shim before the
/// page 1 that says so (`VACUUM INTO` writes page 1 last). Nothing else may have it open.
pub fn stamp_file(path: &Path) -> std::io::Result<()> {
    use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    let mut header = [0; 100];
    file.read_exact(&mut header)?;
    if !header.starts_with(MAGIC) || header[20] != RESERVED {
        return Ok(());
    }
    let size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65536,
        n => usize::from(n),
    };
    if !is_page(c_int::try_from(size).unwrap_or(0)) {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            "not a page size",
        ));
    }
    file.seek(SeekFrom::Start(0))?;
    let mut page = vec![0; size];
    let mut at = 0u64;
    loop {
        match file.read_exact(&mut page) {
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => break,
            read => read?,
        }
        if !holds_checksum(&page) {
            io::stamp(&mut page);
            file.seek(SeekFrom::Start(at))?;
            file.write_all(&page)?;
        }
        at += size as u64;
        file.seek(SeekFrom::Start(at))?;
    }
    file.sync_all()
}

/// Whether the store `conn` has open keeps page checksums (a page size's 8 last bytes).
pub fn enabled(conn: &Connection) -> Result<bool, Error> {
    Ok(file_control(conn, ffi::SQLITE_FCNTL_RESERVE_BYTES, -1)? == c_int::from(RESERVED))
}

/// `sqlite3_file_control` on the main database with an integer argument; returns the
/// integer as the call left it.
fn file_control(conn: &Connection, op: c_int, value: c_int) -> Result<c_int, Error> {
    let mut arg = value;
    // SAFETY: the handle is the open connection's, used on this thread only for this call;
    // `arg` outlives the call, and every op passed here takes a pointer to one int.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            op,
            (&raw mut arg).cast::<c_void>(),
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(arg)
    } else {
        Err(unregistered(
            "the store's file refused a file control of the checksums",
        ))
    }
}

fn unregistered(words: &'static str) -> Error {
    Error::Database {
        words,
        detail: String::new(),
    }
}

/// The shims registered so far: (parent, name). Registered VFSes live as long as the
/// process, so each is made once and leaked.
static REGISTERED: Mutex<Vec<(Option<String>, &'static CStr)>> = Mutex::new(Vec::new());

/// Registers (once) the shim over `parent` and returns its name.
fn register(parent: Option<&str>) -> Result<&'static CStr, Error> {
    let mut registered = REGISTERED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, name)) = registered.iter().find(|(p, _)| p.as_deref() == parent) {
        return Ok(name);
    }
    let parent_name = parent
        .map(CString::new)
        .transpose()
        .map_err(|_| unregistered("a VFS name holds a NUL byte"))?;
    // SAFETY: `sqlite3_vfs_find` takes a NUL-terminated name or null (the default).
    let under = unsafe {
        ffi::sqlite3_vfs_find(
            parent_name
                .as_ref()
                .map_or(std::ptr::null(), |n| n.as_ptr()),
        )
    };
    if under.is_null() {
        return Err(unregistered("the platform's SQLite VFS is missing"));
    }
    let name: &'static CStr = Box::leak(
        CString::new(format!("scratchpad-pages/{}", parent.unwrap_or("default")))
            .map_err(|_| unregistered("a VFS name holds a NUL byte"))?
            .into_boxed_c_str(),
    );
    // SAFETY: `under` is a registered VFS, which SQLite keeps for the process.
    let below = unsafe { &*under };
    let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
        iVersion: below.iVersion.min(3),
        szOsFile: c_int::try_from(SHIM_SIZE).unwrap_or(c_int::MAX) + below.szOsFile,
        mxPathname: below.mxPathname,
        pNext: std::ptr::null_mut(),
        zName: name.as_ptr(),
        pAppData: under.cast(),
        xOpen: Some(vfs::open),
        xDelete: below.xDelete.map(|_| vfs::delete as _),
        xAccess: below.xAccess.map(|_| vfs::access as _),
        xFullPathname: below.xFullPathname.map(|_| vfs::full_pathname as _),
        xDlOpen: below.xDlOpen.map(|_| vfs::dl_open as _),
        xDlError: below.xDlError.map(|_| vfs::dl_error as _),
        xDlSym: below.xDlSym.map(|_| vfs::dl_sym as _),
        xDlClose: below.xDlClose.map(|_| vfs::dl_close as _),
        xRandomness: below.xRandomness.map(|_| vfs::randomness as _),
        xSleep: below.xSleep.map(|_| vfs::sleep as _),
        xCurrentTime: below.xCurrentTime.map(|_| vfs::current_time as _),
        xGetLastError: below.xGetLastError.map(|_| vfs::get_last_error as _),
        xCurrentTimeInt64: below
            .xCurrentTimeInt64
            .map(|_| vfs::current_time_int64 as _),
        xSetSystemCall: below.xSetSystemCall.map(|_| vfs::set_system_call as _),
        xGetSystemCall: below.xGetSystemCall.map(|_| vfs::get_system_call as _),
        xNextSystemCall: below.xNextSystemCall.map(|_| vfs::next_system_call as _),
    }));
    // SAFETY: `vfs` is leaked, so it lives as long as SQLite may use it; 0: not the default.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
    if rc != ffi::SQLITE_OK {
        return Err(unregistered("the checksum VFS could not be registered"));
    }
    registered.push((parent.map(str::to_owned), name));
    Ok(name)
}

/// What a file of the shim is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Db,
    Wal,
}

/// What a database file's pages hold, as last seen: byte 20 of its header when a page 1
/// was last read or written, and whether [`enable`] is rewriting it.
#[derive(Debug, Clone, Copy, Default)]
struct Pages {
    reserved: Option<u8>,
    stamping: bool,
}

impl Pages {
    fn computes(self) -> bool {
        self.stamping || self.reserved == Some(RESERVED)
    }

    fn verifies(self) -> bool {
        !self.stamping && self.reserved == Some(RESERVED)
    }

    /// Takes in a page 1 (or a header) read or written.
    fn observe(&mut self, data: &[u8]) {
        if data.len() >= 100 && data.starts_with(MAGIC) {
            self.reserved = Some(data[20]);
        }
    }
}

/// A file opened through the shim; the parent's file follows it in the same allocation.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    kind: Kind,
    /// The database file's own state (a WAL's points to its database's).
    pages: Pages,
    /// A WAL's database file, whose `pages` it follows.
    db: *mut ShimFile,
    /// A frame's header SQLite wrote to a WAL and the shim has not yet: where, and what. It
    /// goes with its page, which SQLite writes next, in one write with the frame's checksum;
    /// anything else done to the file first writes it as it is.
    header: Option<(i64, [u8; FRAME_HEADER])>,
    /// A WAL's checksum byte order, from its magic number, once read.
    big_endian: Option<bool>,
    /// A database's count of the lock changes on its shared memory, where SQLite takes and
    /// lets go of the WAL's write lock: while it stays, no other connection wrote the WAL.
    locks: u64,
    /// The frame this WAL file last wrote, under the database's `locks` of then: where it
    /// is, and its chain value, the seed of the frame after it (see `rechain`).
    last_frame: Option<(i64, [u8; 8], u64)>,
}

/// Where the parent's file starts, rounded up so that it is aligned.
const SHIM_SIZE: usize = size_of::<ShimFile>().next_multiple_of(16);

/// The SQLite VFS methods: each forwards to the parent VFS (in `pAppData`), and `open` puts
/// the shim around main databases and WALs.
mod vfs {
    use super::*;

    fn parent(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
        // SAFETY: every shim VFS keeps its parent in `pAppData` (see `register`).
        unsafe { (*vfs).pAppData.cast() }
    }

    pub unsafe extern "C" fn open(
        vfs: *mut ffi::sqlite3_vfs,
        name: ffi::sqlite3_filename,
        file: *mut ffi::sqlite3_file,
        flags: c_int,
        out_flags: *mut c_int,
    ) -> c_int {
        let under = parent(vfs);
        // SAFETY (for the block): SQLite hands `file` with `szOsFile` bytes, the shim's
        // `SHIM_SIZE` followed by the parent's; the parent VFS is live and has `xOpen`.
        unsafe {
            let Some(open) = (*under).xOpen else {
                return ffi::SQLITE_CANTOPEN;
            };
            let kind = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
                Kind::Db
            } else if flags & ffi::SQLITE_OPEN_WAL != 0 {
                Kind::Wal
            } else {
                return open(under, name, file, flags, out_flags);
            };
            let shim = file.cast::<ShimFile>();
            let inner = file.cast::<u8>().add(SHIM_SIZE).cast::<ffi::sqlite3_file>();
            let db = if kind == Kind::Wal {
                // The WAL's database was opened through this same VFS, so its file is a shim.
                ffi::sqlite3_database_file_object(name).cast::<ShimFile>()
            } else {
                std::ptr::null_mut()
            };
            shim.write(ShimFile {
                base: ffi::sqlite3_file {
                    pMethods: std::ptr::null(),
                },
                inner,
                kind,
                pages: Pages::default(),
                db,
                header: None,
                big_endian: None,
                locks: 0,
                last_frame: None,
            });
            (*inner).pMethods = std::ptr::null();
            let rc = open(under, name, inner, flags, out_flags);
            if rc != ffi::SQLITE_OK || (*inner).pMethods.is_null() {
                return rc;
            }
            let version = (*(*inner).pMethods).iVersion.clamp(1, 3);
            (*shim).base.pMethods = &io::METHODS[usize::try_from(version - 1).unwrap_or(0)];
            ffi::SQLITE_OK
        }
    }

    // The rest only forward; `register` installs each only where the parent has it.
    macro_rules! forward {
        ($($name:ident => $field:ident ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr;)*) => {$(
            pub unsafe extern "C" fn $name(vfs: *mut ffi::sqlite3_vfs, $($arg: $ty),*) -> $ret {
                let under = parent(vfs);
                // SAFETY: the parent VFS is live; this is installed only where it has `$field`.
                unsafe {
                    match (*under).$field {
                        Some(f) => f(under, $($arg),*),
                        None => $missing,
                    }
                }
            }
        )*};
    }

    forward! {
        delete => xDelete(name: *const c_char, sync_dir: c_int) -> c_int, ffi::SQLITE_IOERR_DELETE;
        access => xAccess(name: *const c_char, flags: c_int, out: *mut c_int) -> c_int, ffi::SQLITE_IOERR_ACCESS;
        full_pathname => xFullPathname(name: *const c_char, n: c_int, out: *mut c_char) -> c_int, ffi::SQLITE_CANTOPEN;
        dl_open => xDlOpen(name: *const c_char) -> *mut c_void, std::ptr::null_mut();
        dl_error => xDlError(n: c_int, out: *mut c_char) -> (), ();
        dl_sym => xDlSym(handle: *mut c_void, symbol: *const c_char) -> Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>, None;
        dl_close => xDlClose(handle: *mut c_void) -> (), ();
        randomness => xRandomness(n: c_int, out: *mut c_char) -> c_int, 0;
        sleep => xSleep(micros: c_int) -> c_int, 0;
        current_time => xCurrentTime(out: *mut f64) -> c_int, ffi::SQLITE_ERROR;
        get_last_error => xGetLastError(n: c_int, out: *mut c_char) -> c_int, 0;
        current_time_int64 => xCurrentTimeInt64(out: *mut ffi::sqlite3_int64) -> c_int, ffi::SQLITE_ERROR;
        set_system_call => xSetSystemCall(name: *const c_char, call: ffi::sqlite3_syscall_ptr) -> c_int, ffi::SQLITE_NOTFOUND;
        get_system_call => xGetSystemCall(name: *const c_char) -> ffi::sqlite3_syscall_ptr, None;
        next_system_call => xNextSystemCall(name: *const c_char) -> *const c_char, std::ptr::null();
    }
}

/// The file methods: reads check, writes stamp, everything else forwards to the parent's
/// file.
mod io {
    use super::*;

    /// The method tables, one per version the parent's files may have.
    pub static METHODS: [ffi::sqlite3_io_methods; 3] = [table(1), table(2), table(3)];

    const fn table(version: c_int) -> ffi::sqlite3_io_methods {
        ffi::sqlite3_io_methods {
            iVersion: version,
            xClose: Some(close),
            xRead: Some(read),
            xWrite: Some(write),
            xTruncate: Some(truncate),
            xSync: Some(sync),
            xFileSize: Some(file_size),
            xLock: Some(lock),
            xUnlock: Some(unlock),
            xCheckReservedLock: Some(check_reserved_lock),
            xFileControl: Some(file_control),
            xSectorSize: Some(sector_size),
            xDeviceCharacteristics: Some(device_characteristics),
            xShmMap: Some(shm_map),
            xShmLock: Some(shm_lock),
            xShmBarrier: Some(shm_barrier),
            xShmUnmap: Some(shm_unmap),
            xFetch: Some(fetch),
            xUnfetch: Some(unfetch),
        }
    }

    /// The shim and the parent's file and methods behind `file`.
    ///
    /// SAFETY: `file` is a shim file `vfs::open` opened (its methods are these).
    unsafe fn parts<'a>(
        file: *mut ffi::sqlite3_file,
    ) -> (
        &'a mut ShimFile,
        *mut ffi::sqlite3_file,
        &'a ffi::sqlite3_io_methods,
    ) {
        // SAFETY: per the function's contract; the parent's methods live as long as its file.
        unsafe {
            let shim = &mut *file.cast::<ShimFile>();
            let inner = shim.inner;
            (shim, inner, &*(*inner).pMethods)
        }
    }

    /// The page state that governs this file: a database's own, a WAL's database's.
    fn pages(shim: &mut ShimFile) -> &mut Pages {
        if shim.kind == Kind::Wal && !shim.db.is_null() {
            // SAFETY: SQLite closes a WAL before its database, so the database's shim lives.
            unsafe { &mut (*shim.db).pages }
        } else {
            &mut shim.pages
        }
    }

    fn read_at(
        inner: *mut ffi::sqlite3_file,
        m: &ffi::sqlite3_io_methods,
        buf: &mut [u8],
        offset: i64,
    ) -> c_int {
        let Some(read) = m.xRead else {
            return ffi::SQLITE_IOERR_READ;
        };
        // SAFETY: `buf` is valid for its length; the parent's file is open.
        unsafe { read(inner, buf.as_mut_ptr().cast(), buf.len() as c_int, offset) }
    }

    unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
        // SAFETY: SQLite calls this on a file `vfs::open` opened.
        let (shim, inner, m) = unsafe { parts(file) };
        // A header held back is written even so: the file's bytes are then as SQLite wrote
        // them, as they would be had SQLite written to the parent directly.
        let _ = release(shim, inner, m);
        // SAFETY: closing the parent's file once, as SQLite closes ours once.
        m.xClose
            .map_or(ffi::SQLITE_OK, |close| unsafe { close(inner) })
    }

    unsafe extern "C" fn read(
        file: *mut ffi::sqlite3_file,
        buf: *mut c_void,
        amount: c_int,
        offset: i64,
    ) -> c_int {
        // SAFETY: SQLite calls this on a file `vfs::open` opened, with `buf` of `amount` bytes.
        let (shim, inner, m) = unsafe { parts(file) };
        let Some(read) = m.xRead else {
            return ffi::SQLITE_IOERR_READ;
        };
        let rc = release(shim, inner, m);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // SAFETY: as above.
        let rc = unsafe { read(inner, buf, amount, offset) };
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // SAFETY: the parent filled `amount` bytes of `buf`.
        let data = unsafe {
            std::slice::from_raw_parts(buf.cast::<u8>(), usize::try_from(amount).unwrap_or(0))
        };
        let kind = shim.kind;
        let state = pages(shim);
        let fault = match kind {
            Kind::Db if offset == 0 || is_page(amount) => {
                if offset == 0 {
                    state.observe(data);
                }
                (is_page(amount) && offset % i64::from(amount) == 0)
                    .then(|| Fault::Page(offset / i64::from(amount) + 1))
            }
            Kind::Wal if is_page(amount) => {
                state.observe(data);
                let frame = i64::from(amount) + FRAME_HEADER as i64;
                let at = offset - WAL_HEADER - FRAME_HEADER as i64;
                (at >= 0 && at % frame == 0).then(|| Fault::WalFrame(at / frame + 1))
            }
            _ => None,
        };
        match fault {
            Some(fault) if state.verifies() && !holds_checksum(data) => {
                LAST_FAULT.with(|f| f.set(Some(fault)));
                ffi::SQLITE_IOERR_DATA
            }
            _ => ffi::SQLITE_OK,
        }
    }

    unsafe extern "C" fn write(
        file: *mut ffi::sqlite3_file,
        buf: *const c_void,
        amount: c_int,
        offset: i64,
    ) -> c_int {
        // SAFETY: SQLite calls this on a file `vfs::open` opened, with `buf` of `amount` bytes.
        let (shim, inner, m) = unsafe { parts(file) };
        let Some(write) = m.xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let n = usize::try_from(amount).unwrap_or(0);
        // SAFETY: as above.
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) };
        let put = |bytes: &[u8], at: i64| {
            // SAFETY: `bytes` outlives the call; the parent's file is open.
            unsafe { write(inner, bytes.as_ptr().cast(), bytes.len() as c_int, at) }
        };
        // A frame's header is held until its page comes, to go with it in one write; a
        // write of anything else writes it first.
        let header = match shim.header.take() {
            Some((at, header))
                if shim.kind == Kind::Wal
                    && is_page(amount)
                    && at + FRAME_HEADER as i64 == offset =>
            {
                Some((at, header))
            }
            Some((at, header)) => match put(&header, at) {
                ffi::SQLITE_OK => None,
                rc => return rc,
            },
            None => None,
        };
        // Only a frame written whole is remembered as the seed of the next (see `rechain`).
        let last_frame = shim.last_frame.take();
        match shim.kind {
            Kind::Db => {
                let state = pages(shim);
                if offset == 0 {
                    state.observe(data);
                }
                if state.computes() && is_page(amount) && offset % i64::from(amount) == 0 {
                    let mut page = data.to_vec();
                    stamp(&mut page);
                    put(&page, offset)
                } else {
                    put(data, offset)
                }
            }
            Kind::Wal if n == FRAME_HEADER && offset >= WAL_HEADER => {
                if !pages(shim).computes() {
                    return put(data, offset);
                }
                let mut copy = [0; FRAME_HEADER];
                copy.copy_from_slice(data);
                shim.header = Some((offset, copy));
                // The page comes next, and needs the frame before this one.
                shim.last_frame = last_frame;
                ffi::SQLITE_OK
            }
            Kind::Wal if is_page(amount) => {
                let state = pages(shim);
                state.observe(data);
                let computes = state.computes();
                match header {
                    Some((at, header)) if computes => {
                        // The frame in one write: its header, then its page, checksummed.
                        let mut frame = Vec::with_capacity(FRAME_HEADER + n);
                        frame.extend_from_slice(&header);
                        frame.extend_from_slice(data);
                        let (header, page) = frame.split_at_mut(FRAME_HEADER);
                        let sums = stamp(page);
                        let rc = rechain(shim, inner, m, (at, last_frame), header, page, sums);
                        if rc != ffi::SQLITE_OK {
                            return rc;
                        }
                        let mut chain = [0; 8];
                        chain.copy_from_slice(&header[16..]);
                        let rc = put(&frame, at);
                        if rc == ffi::SQLITE_OK {
                            shim.last_frame = locks_of(shim).map(|locks| (at, chain, locks));
                        }
                        rc
                    }
                    Some((at, header)) => match put(&header, at) {
                        ffi::SQLITE_OK => put(data, offset),
                        rc => rc,
                    },
                    None if !computes => put(data, offset),
                    // A page written over its own frame: SQLite then writes the chain again
                    // from the file, header by header.
                    None => {
                        let mut page = data.to_vec();
                        stamp(&mut page);
                        put(&page, offset)
                    }
                }
            }
            Kind::Wal => put(data, offset),
        }
    }

    /// Writes the frame header `shim` holds, if any (see `write`): before anything but its
    /// page reads, sizes, syncs, truncates or closes the file; and forgets the last frame
    /// written (see `rechain`), whose chain the file may no longer hold after any of these.
    fn release(
        shim: &mut ShimFile,
        inner: *mut ffi::sqlite3_file,
        m: &ffi::sqlite3_io_methods,
    ) -> c_int {
        shim.last_frame = None;
        let Some((at, header)) = shim.header.take() else {
            return ffi::SQLITE_OK;
        };
        let Some(write) = m.xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        // SAFETY: `header` outlives the call; the parent's file is open.
        unsafe { write(inner, header.as_ptr().cast(), FRAME_HEADER as c_int, at) }
    }

    /// Writes `page`'s checksum into its reserved bytes; returns its two sums.
    pub(super) fn stamp(page: &mut [u8]) -> (u32, u32) {
        let (s1, s2) = body_sums(page);
        let at = page.len() - usize::from(RESERVED);
        page[at..at + 4].copy_from_slice(&s1.to_le_bytes());
        page[at + 4..].copy_from_slice(&s2.to_le_bytes());
        (s1, s2)
    }

    /// The lock changes of a WAL's database so far (see `ShimFile::locks`).
    fn locks_of(shim: &ShimFile) -> Option<u64> {
        // SAFETY: SQLite closes a WAL before its database, so the database's shim lives.
        (!shim.db.is_null()).then(|| unsafe { (*shim.db).locks })
    }

    /// Sets the checksum of the frame at `at` (its header `header`, its page `page`, whose
    /// checksum's two sums are `sums`) to SQLite's chain over them, seeded from the frame
    /// before it in the file (or the WAL's header for the first frame): read from the file,
    /// unless that frame is `last_frame`, the one this file wrote last, remembered.
    fn rechain(
        shim: &mut ShimFile,
        inner: *mut ffi::sqlite3_file,
        m: &ffi::sqlite3_io_methods,
        (at, last_frame): (i64, Option<(i64, [u8; 8], u64)>),
        header: &mut [u8],
        page: &[u8],
        sums: (u32, u32),
    ) -> c_int {
        let big_endian = match shim.big_endian {
            Some(order) => order,
            None => {
                let mut magic = [0; 4];
                let rc = read_at(inner, m, &mut magic, 0);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let order = be32(&magic) & 1 == 1;
                shim.big_endian = Some(order);
                order
            }
        };
        let frame = (FRAME_HEADER + page.len()) as i64;
        let mut seed = [0; 8];
        match last_frame {
            // The frame before is the one this file wrote last, and no connection has
            // taken the write lock since: its chain value is the one in the file.
            Some((before, chain, locks))
                if before + frame == at && Some(locks) == locks_of(shim) =>
            {
                seed = chain;
            }
            _ => {
                let seed_at = if at == WAL_HEADER {
                    24
                } else {
                    at - frame + 16
                };
                let rc = read_at(inner, m, &mut seed, seed_at);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
            }
        }
        let chain = wal_chain(
            (be32(&seed[..4]), be32(&seed[4..])),
            &header[..8],
            big_endian,
        );
        let (s1, s2) = if big_endian {
            wal_chain(chain, page, big_endian)
        } else {
            // The page's own checksum is its body's chain from zero, in the same words.
            let body = page.len() - usize::from(RESERVED);
            let chain = chain_from(chain, body / 8, sums);
            wal_chain(chain, &page[body..], false)
        };
        header[16..20].copy_from_slice(&s1.to_be_bytes());
        header[20..24].copy_from_slice(&s2.to_be_bytes());
        ffi::SQLITE_OK
    }

    // The rest only forward.
    macro_rules! forward {
        ($($name:ident => $field:ident ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr;)*) => {$(
            unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> $ret {
                // SAFETY: SQLite calls this on a file `vfs::open` opened.
                let (_, inner, m) = unsafe { parts(file) };
                // SAFETY: the parent's file is open; the arguments are SQLite's own.
                m.$field.map_or($missing, |f| unsafe { f(inner, $($arg),*) })
            }
        )*};
    }

    // These first write a frame header held back (see `release`).
    macro_rules! released {
        ($($name:ident => $field:ident ($($arg:ident: $ty:ty),*) -> $missing:expr;)*) => {$(
            unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> c_int {
                // SAFETY: SQLite calls this on a file `vfs::open` opened.
                let (shim, inner, m) = unsafe { parts(file) };
                match release(shim, inner, m) {
                    // SAFETY: the parent's file is open; the arguments are SQLite's own.
                    ffi::SQLITE_OK => m.$field.map_or($missing, |f| unsafe { f(inner, $($arg),*) }),
                    rc => rc,
                }
            }
        )*};
    }

    released! {
        truncate => xTruncate(size: i64) -> ffi::SQLITE_IOERR_TRUNCATE;
        sync => xSync(flags: c_int) -> ffi::SQLITE_IOERR_FSYNC;
        file_size => xFileSize(size: *mut i64) -> ffi::SQLITE_IOERR_FSTAT;
    }

    forward! {
        lock => xLock(level: c_int) -> c_int, ffi::SQLITE_OK;
        unlock => xUnlock(level: c_int) -> c_int, ffi::SQLITE_OK;
        check_reserved_lock => xCheckReservedLock(out: *mut c_int) -> c_int, ffi::SQLITE_OK;
        sector_size => xSectorSize() -> c_int, 4096;
        device_characteristics => xDeviceCharacteristics() -> c_int, 0;
        shm_map => xShmMap(region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int, ffi::SQLITE_IOERR_SHMMAP;
        shm_barrier => xShmBarrier() -> (), ();
        shm_unmap => xShmUnmap(delete: c_int) -> c_int, ffi::SQLITE_OK;
        unfetch => xUnfetch(offset: i64, page: *mut c_void) -> c_int, ffi::SQLITE_OK;
    }

    unsafe extern "C" fn shm_lock(
        file: *mut ffi::sqlite3_file,
        offset: c_int,
        n: c_int,
        flags: c_int,
    ) -> c_int {
        // SAFETY: SQLite calls this on a file `vfs::open` opened.
        let (shim, inner, m) = unsafe { parts(file) };
        shim.locks = shim.locks.wrapping_add(1);
        // SAFETY: the parent's file is open; the arguments are SQLite's own.
        m.xShmLock.map_or(ffi::SQLITE_IOERR_SHMLOCK, |f| unsafe {
            f(inner, offset, n, flags)
        })
    }

    unsafe extern "C" fn fetch(
        file: *mut ffi::sqlite3_file,
        offset: i64,
        amount: c_int,
        out: *mut *mut c_void,
    ) -> c_int {
        // SAFETY: SQLite calls this on a file `vfs::open` opened, with `out` to write.
        let (shim, inner, m) = unsafe { parts(file) };
        if pages(shim).computes() || shim.kind == Kind::Wal {
            // Pages mapped into memory would skip the checks in `read`.
            // SAFETY: `out` is SQLite's to fill.
            unsafe { *out = std::ptr::null_mut() };
            return ffi::SQLITE_OK;
        }
        // SAFETY: as above.
        m.xFetch.map_or_else(
            || {
                unsafe { *out = std::ptr::null_mut() };
                ffi::SQLITE_OK
            },
            |f| unsafe { f(inner, offset, amount, out) },
        )
    }

    unsafe extern "C" fn file_control(
        file: *mut ffi::sqlite3_file,
        op: c_int,
        arg: *mut c_void,
    ) -> c_int {
        // SAFETY: SQLite calls this on a file `vfs::open` opened.
        let (shim, inner, m) = unsafe { parts(file) };
        if shim.kind == Kind::Db && (op == FCNTL_STAMP || op == FCNTL_EXPECT) {
            // SAFETY: this shim's own ops take a pointer to one int (see `file_control`).
            let on = unsafe { *arg.cast::<c_int>() } != 0;
            if op == FCNTL_STAMP {
                shim.pages.stamping = on;
            } else if on {
                shim.pages.reserved = Some(RESERVED);
            }
            return ffi::SQLITE_OK;
        }
        let rc = release(shim, inner, m);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        // SAFETY: the parent's file is open; the arguments are SQLite's own.
        m.xFileControl
            .map_or(ffi::SQLITE_NOTFOUND, |f| unsafe { f(inner, op, arg) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::params;

    fn store(dir: &Path, journal: &str) -> Connection {
        let conn = open(&dir.join("s.db"), OpenFlags::default(), None).unwrap();
        assert!(!enable(&conn).unwrap(), "a new store needs no rewriting");
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = {journal}; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
        ))
        .unwrap();
        conn
    }

    /// Rows of about 700 bytes: a few hundred fill many pages, and overflow none.
    fn fill(conn: &Connection, from: i64, n: i64) {
        let tx = conn.unchecked_transaction().unwrap();
        for id in from..from + n {
            tx.execute(
                "INSERT OR REPLACE INTO t VALUES (?1, ?2)",
                params![id, format!("{id:>8}").repeat(90)],
            )
            .unwrap();
        }
        tx.commit().unwrap();
    }

    fn pages_of(file: &Path) -> Vec<Vec<u8>> {
        std::fs::read(file)
            .unwrap()
            .chunks(4096)
            .map(<[u8]>::to_vec)
            .collect()
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap()
    }

    #[test]
    fn a_new_store_checksums_every_page_in_both_journal_modes() {
        for journal in ["WAL", "DELETE"] {
            let dir = tempfile::tempdir().unwrap();
            let conn = store(dir.path(), journal);
            fill(&conn, 0, 300);
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .unwrap();
            assert!(enabled(&conn).unwrap());
            let pages = pages_of(&dir.path().join("s.db"));
            assert!(pages.len() > 50, "{journal}: {} pages", pages.len());
            assert_eq!(
                pages[0][20], RESERVED,
                "{journal}: the header reserves the bytes"
            );
            for (i, page) in pages.iter().enumerate() {
                assert!(holds_checksum(page), "{journal}: page {}", i + 1);
            }
        }
    }

    #[test]
    fn a_crash_replays_every_commit_from_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let conn = store(dir.path(), "WAL");
        // A small cache makes SQLite write pages of a transaction to the WAL before its
        // commit and then write some of them again over their own frames.
        conn.execute_batch("PRAGMA cache_size = 8").unwrap();
        for round in 0..5 {
            fill(&conn, round * 40, 120);
        }
        let wal = std::fs::metadata(dir.path().join("s.db-wal"))
            .unwrap()
            .len();
        assert!(wal > 100 * 4096, "the commits are in the WAL ({wal} bytes)");
        // What a crash leaves: the file and its WAL, no shared memory, no checkpoint.
        let crashed = tempfile::tempdir().unwrap();
        for name in ["s.db", "s.db-wal"] {
            std::fs::copy(dir.path().join(name), crashed.path().join(name)).unwrap();
        }
        let replayed = open(&crashed.path().join("s.db"), OpenFlags::default(), None).unwrap();
        assert_eq!(count(&replayed), 280, "every commit is replayed");
        let check: String = replayed
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
        replayed
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        for (i, page) in pages_of(&crashed.path().join("s.db")).iter().enumerate() {
            assert!(holds_checksum(page), "page {}", i + 1);
        }
    }

    /// A WAL file remembers the chain of the frame it wrote last, as the seed of its next;
    /// once another connection may have written there (here: the WAL started over, and the
    /// other's commits reached just that far), it reads the seed from the file again, and
    /// every commit replays after a crash. Unsynced commits, as the server makes them (it
    /// syncs the WAL itself), leave that memory in place from one commit to the next.
    #[test]
    fn a_frame_after_another_connections_is_chained_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = store(dir.path(), "WAL");
        a.execute_batch(
            "PRAGMA synchronous = OFF;
             CREATE TABLE u (v INTEGER NOT NULL); INSERT INTO u VALUES (0);
             CREATE TABLE w (v INTEGER NOT NULL); INSERT INTO w VALUES (0);",
        )
        .unwrap();
        let wal = dir.path().join("s.db-wal");
        let frame = 24 + 4096;
        let frames = || (std::fs::metadata(&wal).unwrap().len() - 32) / frame;
        let written = frames();
        // The other connection checkpoints, so its next commit starts the WAL over, and
        // commits one frame at a time up to where this one's last frame was.
        let b = open(&dir.path().join("s.db"), OpenFlags::default(), None).unwrap();
        b.execute_batch("PRAGMA wal_checkpoint(PASSIVE)").unwrap();
        for _ in 0..written {
            b.execute_batch("UPDATE u SET v = v + 1").unwrap();
        }
        assert_eq!(
            frames(),
            written,
            "the other's commits end where this one's did"
        );
        let bytes = std::fs::read(&wal).unwrap();
        let last = usize::try_from(32 + (written - 1) * frame).unwrap();
        assert_ne!(be32(&bytes[last + 4..]), 0, "the frame there is a commit");
        // This connection's next frame follows the other's last; it reads nothing of the
        // WAL first (what it writes is all in the database file).
        a.execute_batch("INSERT INTO w VALUES (1)").unwrap();
        let crashed = tempfile::tempdir().unwrap();
        for name in ["s.db", "s.db-wal"] {
            std::fs::copy(dir.path().join(name), crashed.path().join(name)).unwrap();
        }
        let replayed = open(&crashed.path().join("s.db"), OpenFlags::default(), None).unwrap();
        let (updates, rows): (i64, i64) = replayed
            .query_row(
                "SELECT (SELECT v FROM u), (SELECT count(*) FROM w)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (u64::try_from(updates).unwrap(), rows),
            (written, 2),
            "every commit replayed"
        );
    }

    #[test]
    fn a_changed_byte_of_a_page_is_an_error_naming_the_page() {
        let dir = tempfile::tempdir().unwrap();
        let conn = store(dir.path(), "WAL");
        fill(&conn, 0, 100);
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        drop(conn);
        let path = dir.path().join("s.db");
        let mut bytes = std::fs::read(&path).unwrap();
        // A byte in the free space of page 5: nothing SQLite itself would look at.
        bytes[4 * 4096 + 3000] ^= 0x20;
        std::fs::write(&path, bytes).unwrap();
        let conn = open(&path, OpenFlags::default(), None).unwrap();
        take_fault();
        let read = conn.query_row("SELECT sum(length(body)) FROM t", [], |r| {
            r.get::<_, i64>(0)
        });
        assert!(matches!(read.map_err(Error::from), Err(Error::Damaged)));
        assert_eq!(take_fault(), Some(Fault::Page(5)));
        assert_eq!(take_fault(), None, "taken once");
    }

    #[test]
    fn a_changed_byte_in_the_wal_is_an_error_naming_the_frame() {
        let dir = tempfile::tempdir().unwrap();
        let conn = store(dir.path(), "WAL");
        fill(&conn, 0, 100);
        let wal = dir.path().join("s.db-wal");
        let mut bytes = std::fs::read(&wal).unwrap();
        // The page of the third frame.
        let at = 32 + 2 * (24 + 4096) + 24 + 100;
        bytes[at] ^= 0x01;
        std::fs::write(&wal, bytes).unwrap();
        let other = open(&dir.path().join("s.db"), OpenFlags::default(), None).unwrap();
        take_fault();
        let read = other.query_row("SELECT sum(length(body)) FROM t", [], |r| {
            r.get::<_, i64>(0)
        });
        assert!(matches!(read.map_err(Error::from), Err(Error::Damaged)));
        assert_eq!(take_fault(), Some(Fault::WalFrame(3)));
    }

    #[test]
    fn a_store_from_before_is_rewritten_with_checksums_and_keeps_its_rows() {
        for journal in ["WAL", "DELETE"] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let plain = Connection::open(&path).unwrap();
            plain
                .execute_batch(&format!(
                    "PRAGMA journal_mode = {journal};
                     CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL);"
                ))
                .unwrap();
            fill(&plain, 0, 200);
            drop(plain);
            let conn = open(&path, OpenFlags::default(), None).unwrap();
            assert!(!enabled(&conn).unwrap());
            assert!(enable(&conn).unwrap(), "{journal}: rewritten");
            assert!(!enable(&conn).unwrap(), "{journal}: once");
            fill(&conn, 200, 10);
            conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
                .unwrap();
            assert_eq!(count(&conn), 210);
            let pages = pages_of(&path);
            assert_eq!(pages[0][20], RESERVED);
            for (i, page) in pages.iter().enumerate() {
                assert!(holds_checksum(page), "{journal}: page {}", i + 1);
            }
        }
    }

    #[test]
    fn a_copy_made_by_vacuum_into_is_stamped_whole() {
        let dir = tempfile::tempdir().unwrap();
        let conn = store(dir.path(), "WAL");
        // More than SQLite's cache of the copy (2 MB): some of its pages are written before
        // its page 1, which tells the shim they have checksums.
        fill(&conn, 0, 6000);
        let out = dir.path().join("copy.db");
        conn.execute("VACUUM INTO ?1", [out.to_str().unwrap()])
            .unwrap();
        let before = pages_of(&out);
        assert!(before.len() > 1000);
        assert!(
            before.iter().any(|p| !holds_checksum(p)),
            "some pages went out unstamped (else stamp_file is not needed)"
        );
        stamp_file(&out).unwrap();
        for (i, page) in pages_of(&out).iter().enumerate() {
            assert!(holds_checksum(page), "page {}", i + 1);
        }
        let copy = open(&out, OpenFlags::default(), None).unwrap();
        assert_eq!(count(&copy), 6000);
    }

    /// A chain continued from a seed by `chain_from` is the chain computed word by word, for
    /// any seed (large sums wrap) and any number of pairs, a page's among them.
    #[test]
    fn a_chain_from_a_seed_follows_from_the_chain_from_zero() {
        let data: Vec<u8> = (0..65536u32).map(|i| (i * 31 % 253) as u8).collect();
        for seed in [
            (0, 0),
            (1, 0),
            (0, 1),
            (0xdead_beef, 0xffff_ffff),
            (7, 0x8000_0000),
        ] {
            for pairs in [0, 1, 2, 3, 511, 512, 1023, 8191] {
                let words = &data[..pairs * 8];
                assert_eq!(
                    chain_from(seed, pairs, wal_chain((0, 0), words, false)),
                    wal_chain(seed, words, false),
                    "seed {seed:?}, {pairs} pairs"
                );
            }
        }
    }

    /// The sums taken in lanes are the chain word by word, for any length: pages of every
    /// size, lengths the lanes do not divide, bytes past the last whole pair (ignored by both).
    #[test]
    fn sums_in_lanes_are_the_chain_word_by_word() {
        let data: Vec<u8> = (0..65536u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [
            0, 7, 8, 16, 24, 31, 32, 40, 100, 504, 4088, 4096, 8184, 65528, 65536,
        ] {
            let words = &data[..len];
            assert_eq!(
                sums_from_zero(words),
                wal_chain((0, 0), words, false),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn the_checksum_sees_any_one_changed_byte() {
        let mut page: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
        io::stamp(&mut page);
        assert!(holds_checksum(&page));
        for at in [0, 1, 2, 3, 2047, 4087] {
            let mut changed = page.clone();
            changed[at] ^= 0x80;
            assert!(!holds_checksum(&changed), "byte {at}");
        }
    }
}
