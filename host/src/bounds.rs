//! What one instance may hold: linear memory and table elements, and the limiter that
//! enforces them, remembers that the guest ran into one (so that the sandbox can name the
//! limit rather than the trap it caused), and how large the memory has grown (so that the
//! sandbox keeps only small instances for later calls).
//!
//! Its own module, below both the state of an instance
//! ([`crate::imports::InstanceState`], which owns the limiter) and the sandbox (which
//! installs it and reads it after a call).

use wasmtime::ResourceLimiter;

/// Most linear memory one instance may use. The heaviest legal call, a diff of two
/// 1 MiB files of one-character lines, holds both texts, two slices of 2^20 line references
/// and the owned chunks: about 80 MiB. 256 MiB leaves room for allocator slack.
pub const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// Most elements one table may hold: the component's own tables are a few hundred entries.
pub const TABLE_LIMIT: usize = 100_000;

/// The resource limits of one instance, remembering how large its memory has grown and
/// whether the call it serves ran into them.
#[derive(Debug, Default)]
pub struct InstanceBounds {
    /// The guest asked for more memory than [`MEMORY_LIMIT`] in the call it serves.
    pub hit_memory_limit: bool,
    /// The size of the instance's linear memory: what its image asked for, and every growth
    /// since.
    pub memory: usize,
}

impl ResourceLimiter for InstanceBounds {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MEMORY_LIMIT {
            // An error (not `Ok(false)`) traps at once, rather than letting the guest's
            // allocator see a failed grow and abort in a way that reads like a bug.
            self.hit_memory_limit = true;
            return Err(wasmtime::Error::msg("memory limit"));
        }
        self.memory = desired;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= TABLE_LIMIT)
    }
}
