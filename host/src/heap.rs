//! What this process tells glibc's allocator about how it uses memory: the one place that
//! tunes it, since the same calls serve the server's every part (SQLite's C included).
//!
//! Two things, both measured (BENCHMARKS.md, "A write's heap kept"):
//! - A call's working memory stays. glibc gives the free top of a heap back to the system
//!   once it passes 128 KiB, keeping 128 KiB (`M_TOP_PAD`); a write on SQLite frees about
//!   30 KiB past that each time, so every write gave those pages back (two `madvise` calls)
//!   and took them again by a page fault, about a tenth of a write's CPU. [`keep_working_pad`]
//!   keeps 256 KiB: at most that much more per heap, of pages a call touched anyway.
//! - Compiling the component at a first start frees tens of MiB at once, which glibc would
//!   keep: [`give_back_freed_memory`] returns them.

/// Bytes of free memory each heap keeps at its top rather than give back to the system: a
/// call's working set over SQLite, with room to spare (see the module's docs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const WORKING_PAD: libc::c_int = 256 * 1024;

/// Keeps [`WORKING_PAD`] free at the top of each heap; call it once, at the start.
///
/// Setting it also fixes glibc's threshold for serving an allocation by a mapping of its own
/// at 128 KiB, which glibc would otherwise raise after the first such block is freed: the
/// large, rare allocations (a 1 MiB file) are mapped and unmapped, and their memory leaves
/// with them.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn keep_working_pad() {
    // SAFETY: mallopt only changes the allocator's parameters, which it reads under its own
    // locks; called before any thread of ours is started.
    let set = unsafe { libc::mallopt(libc::M_TOP_PAD, WORKING_PAD) };
    if set != 1 {
        tracing::debug!("the allocator kept its default top pad");
    }
}

/// Other allocators keep what they keep.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_working_pad() {}

/// Compiling the component allocates tens of MiB that it frees at once, but glibc's
/// allocator keeps freed memory for later: a server that compiled at its start stayed at
/// 55 MiB resident for its whole life, against 21 MiB when it found the component cached.
/// This hands the free pages back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn give_back_freed_memory() {
    // SAFETY: malloc_trim only returns free memory of the allocator's own to the system; it
    // touches nothing in use and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators give memory back by themselves, or have no such call.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back_freed_memory() {}
