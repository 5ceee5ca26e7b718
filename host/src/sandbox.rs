//! The sandbox the tool logic runs in: every wasmtime knob, in one place.
//!
//! Each tool call gets a fresh `Store` and instance of the guest component: nothing a call
//! leaves in guest memory can reach the next call (another agent's, perhaps), and a trap
//! costs only that call. The compiled component is cached on disk, keyed by its bytes and the
//! engine's configuration, so a start does not pay for Cranelift again.
//!
//! Instances come from wasmtime's pooling allocator: a fixed number of slots whose memory is
//! reserved once and, when a call ends, reset to the component's image (the pages the call
//! dirtied, in place), so the next call sees nothing of it, and a call maps and unmaps
//! nothing. A fresh mapping per call, unmapped after, was a tenth of the server's CPU time
//! on reads, most of it the kernel stopping the process's other threads to flush their view
//! of the unmapped pages. A call takes a slot before it instantiates and waits while all are
//! taken.

use crate::bindings::exports::scratchpad::mcp::json;
use crate::bindings::{Scratchpad, ScratchpadPre};
use crate::bounds::{CallBounds, MEMORY_LIMIT, TABLE_LIMIT};
use crate::imports::CallState;
use sha2::{Digest, Sha256};
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::Duration;
use wasmtime::component::{Component, ComponentExportIndex, HasSelf, Instance, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap,
    UpdateDeadline,
};

/// The guest component, built from `guest/` by `build.rs`.
pub const GUEST_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/scratchpad_guest.wasm"));

/// How often the epoch ticks: the granularity of the time limit.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Most time one call may spend running guest code (time inside host imports, such as a
/// database wait or the summariser's HTTP request, does not count). The heaviest legal call
/// takes well under a second: the diff itself stops refining after 500 ms.
pub const CPU_LIMIT: Duration = Duration::from_secs(5);

/// How many calls may hold an instance at once; more wait for a slot. A call holds its slot
/// while its instance lives, which includes a write's wait for its turn at the write lock,
/// so the pool is as large as hosted mode's default bound on calls in flight: by default no
/// call waits here. A slot costs address space, and the pages calls dirtied in it (see
/// [`KEEP_RESIDENT`]).
pub const SLOTS: u32 = 64;

/// How much of a slot's linear memory may stay resident between calls. Where the kernel can
/// say which pages a call dirtied (Linux 6.7 and later), only those are reset, in place from
/// the component's image, so the next call takes no page faults on them: a read's instance
/// cost 65 µs without this and 45 µs with it, in process. What a call dirtied past this is
/// given back. A slot keeps only the pages calls dirtied, so under load resident memory
/// grows with the slots in use (64 hosted callers: about 3 MiB more than with nothing
/// kept). Without a kernel that says so, nothing is kept (see [`engine`]).
const KEEP_RESIDENT: usize = 2 << 20;

/// The same for a slot's tables (the component's few hundred function references).
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Core instances one instance of a component may create: the guest is one module plus
/// the few the component model adds to adapt its imports.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;

/// Why a call could not complete inside the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The guest ran past [`CPU_LIMIT`].
    #[error("the tool logic ran past its {}-second time limit", CPU_LIMIT.as_secs())]
    TimeLimit,
    /// The guest tried to grow past [`MEMORY_LIMIT`].
    #[error("the tool logic ran out of its {} MiB memory limit", MEMORY_LIMIT >> 20)]
    MemoryLimit,
    /// Any other trap: a panic, an out-of-bounds access, a stack overflow.
    #[error("the tool logic failed ({0})")]
    Trap(String),
    /// The component could not be compiled, loaded or instantiated.
    #[error("the tool logic could not be loaded: {0}")]
    Load(String),
}

impl SandboxError {
    fn from_wasmtime(e: &wasmtime::Error, limits: &CallBounds) -> Self {
        if limits.hit_memory_limit {
            return SandboxError::MemoryLimit;
        }
        match e.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => SandboxError::TimeLimit,
            Some(trap) => SandboxError::Trap(trap.to_string()),
            None => SandboxError::Trap(e.root_cause().to_string()),
        }
    }
}

/// The engine, the pre-linked component, and the clock that bounds each call.
pub struct Sandbox {
    /// One engine for the process: compiled code and the epoch clock are shared by every call.
    engine: Engine,
    /// The component linked once, and every export type-checked against the WIT once (a
    /// component that does not fit is refused at start); each call only instantiates it.
    pre: ScratchpadPre<CallState>,
    /// Where the `json` export's functions are, found once: a call through it looks up
    /// and type-checks those two, not every export of the world (a fifth of an instance's
    /// set-up).
    json: json::GuestIndices,
    /// Tells the epoch ticker thread to stop when the sandbox goes.
    ticker_stop: Arc<AtomicBool>,
    /// The pool's free slots: a call takes one before it instantiates.
    slots: Slots,
}

impl Sandbox {
    /// Loads a component (normally [`GUEST_COMPONENT`]), from the compile cache in
    /// `cache_dir` when it holds a copy compiled by this engine configuration.
    pub fn with_component(wasm: &[u8], cache_dir: Option<&Path>) -> Result<Self, SandboxError> {
        let engine = engine()?;
        let component = load(&engine, wasm, cache_dir)?;
        let mut linker = Linker::<CallState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .and_then(|()| Scratchpad::add_to_linker::<_, HasSelf<_>>(&mut linker, |s| s))
            .map_err(|e| SandboxError::Load(e.to_string()))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(ScratchpadPre::new)
            .map_err(|e| SandboxError::Load(e.to_string()))?;
        let json = json::GuestIndices::new(pre.instance_pre())
            .map_err(|e| SandboxError::Load(e.to_string()))?;

        let ticker_stop = Arc::new(AtomicBool::new(false));
        let (ticking, stop) = (engine.clone(), Arc::clone(&ticker_stop));
        thread::Builder::new()
            .name("epoch-ticker".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(EPOCH_TICK);
                    ticking.increment_epoch();
                }
            })
            .map_err(|e| SandboxError::Load(e.to_string()))?;
        Ok(Self {
            engine,
            pre,
            json,
            ticker_stop,
            slots: Slots::new(SLOTS),
        })
    }

    /// Calls `tool` with JSON `arguments` through the `json` export of a fresh instance, as
    /// the service does: only that export's functions are looked up in it (the generated
    /// bindings' own instantiation would look up and type-check every export of the world).
    pub fn call_json(
        &self,
        state: CallState,
        tool: &str,
        arguments: &str,
    ) -> (
        Result<Result<String, json::CallError>, SandboxError>,
        CallState,
    ) {
        self.run(state, |instance, store| {
            self.json
                .load(&mut *store, instance)?
                .call_call(store, tool, arguments)
        })
    }

    /// Runs `call` against a fresh instance, which looks up what it calls (the conformance
    /// runner works from the component's own types, read from data files). Returns the call's
    /// state back with the result, so the caller can commit or roll back its transaction.
    pub fn run<R>(
        &self,
        state: CallState,
        call: impl FnOnce(&Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> (Result<R, SandboxError>, CallState) {
        let _slot = self.slots.take();
        let mut store = self.store(state);
        let result = self
            .pre
            .instance_pre()
            .instantiate(&mut store)
            .and_then(|instance| call(&instance, &mut store));
        finish(store, result)
    }

    /// A fresh store for one call, with its memory limiter and CPU bound.
    fn store(&self, state: CallState) -> Store<CallState> {
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.bounds);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| {
            if ctx.data().guest_time() > CPU_LIMIT {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        store
    }
}

/// Where the `tools` interface's function `name` (its WIT name, such as `write-file`) is in
/// `instance`: for callers that call one tool by name (the benchmarks, the conformance
/// runner), looking up nothing else.
pub fn tool_function(
    instance: &Instance,
    store: &mut Store<CallState>,
    name: &str,
) -> Option<ComponentExportIndex> {
    let tools = instance.get_export_index(&mut *store, None, "scratchpad:mcp/tools@0.1.0")?;
    instance.get_export_index(store, Some(&tools), name)
}

/// The engine, with epoch interruption and pooled instances: pages kept resident where the
/// kernel can say which pages a call dirtied (else keeping them would mean resetting the
/// whole kept region at every call, dirtied or not), given back where it cannot.
fn engine() -> Result<Engine, SandboxError> {
    let engine = |keep_resident: bool| {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool(keep_resident)));
        Engine::new(&config)
    };
    engine(true)
        .or_else(|_| engine(false))
        .map_err(|e| SandboxError::Load(e.to_string()))
}

/// The pool: [`SLOTS`] instances of the component, each memory bounded by [`MEMORY_LIMIT`]
/// and each table by [`TABLE_LIMIT`] (the limiter names a call that reaches one); with
/// `keep_resident`, the dirtied pages are found by `PAGEMAP_SCAN`, and the engine is refused
/// where the kernel has none.
fn pool(keep_resident: bool) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(SLOTS)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .total_core_instances(SLOTS * CORE_INSTANCES_PER_COMPONENT)
        .total_memories(SLOTS)
        .max_memories_per_component(1)
        .total_tables(SLOTS * CORE_INSTANCES_PER_COMPONENT)
        .table_elements(TABLE_LIMIT)
        .max_memory_size(MEMORY_LIMIT);
    if keep_resident {
        pool.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT);
    }
    pool
}

/// A counting gate in front of the pool: wasmtime refuses an instance when every slot is
/// taken, so a call waits here for one instead.
struct Slots {
    /// How many slots are free.
    free: Mutex<u32>,
    /// Woken when a slot is given back.
    returned: Condvar,
}

/// A slot held by one call until it is dropped (after the call's store, which gives the
/// instance back to the pool).
struct Slot<'a>(&'a Slots);

impl Slots {
    fn new(count: u32) -> Self {
        Self {
            free: Mutex::new(count),
            returned: Condvar::new(),
        }
    }

    /// Waits for a free slot and takes it.
    fn take(&self) -> Slot<'_> {
        let free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        let mut free = self
            .returned
            .wait_while(free, |free| *free == 0)
            .unwrap_or_else(PoisonError::into_inner);
        *free -= 1;
        Slot(self)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.returned.notify_one();
    }
}

/// Names a failed call's error by the limit it hit, and hands back the call's state.
fn finish<R>(
    store: Store<CallState>,
    result: wasmtime::Result<R>,
) -> (Result<R, SandboxError>, CallState) {
    let result = result.map_err(|e| {
        let error = SandboxError::from_wasmtime(&e, &store.data().bounds);
        tracing::warn!(error = %e, "guest call failed");
        error
    });
    (result, store.into_data())
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

/// Compiles the component, or loads it from the cache, refreshing a stale or broken entry.
/// A cache folder that another user could write is not used at all: what it holds is native
/// code this process would run.
fn load(engine: &Engine, wasm: &[u8], cache_dir: Option<&Path>) -> Result<Component, SandboxError> {
    let compile = || Component::new(engine, wasm).map_err(|e| SandboxError::Load(e.to_string()));
    let Some(dir) = cache_dir else {
        return compile();
    };
    if dir.exists()
        && let Err(why) = trusted(dir)
    {
        tracing::warn!(%why, "not using the component cache; compiling at every start");
        return compile();
    }
    let file = cache_file(engine, wasm, dir);
    if file.symlink_metadata().is_ok() {
        match from_cache(engine, &file) {
            Ok(component) => return Ok(component),
            Err(why) => tracing::warn!(%why, "cached component unusable; recompiling"),
        }
    }
    let compiled = compile()?;
    // Served from the cached file once it is there, as at every later start: its code is
    // then mapped from the file, not held in memory of this process's own.
    let component = match store_in_cache(&compiled, &file) {
        Ok(()) => from_cache(engine, &file).unwrap_or(compiled),
        Err(e) => {
            tracing::warn!(error = %e, "could not cache the compiled component");
            compiled
        }
    };
    give_back_freed_memory();
    Ok(component)
}

/// The component compiled into the cache file `file`, if that file may be trusted with
/// native code (see [`trusted`]) and loads.
fn from_cache(engine: &Engine, file: &Path) -> Result<Component, String> {
    trusted(file).and_then(|()| deserialize(engine, file).map_err(|e| e.to_string()))
}

/// Compiling the component allocates tens of MiB that it frees at once, but glibc's
/// allocator keeps freed memory for later: a server that compiled at its start stayed at
/// 55 MiB resident for its whole life, against 21 MiB when it found the component cached.
/// This hands the free pages back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn give_back_freed_memory() {
    // SAFETY: malloc_trim only returns free memory of the allocator's own to the system; it
    // touches nothing in use and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Other allocators give memory back by themselves, or have no such call.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back_freed_memory() {}

/// Whether the cache entry or folder at `path` may be trusted with native code: this user's
/// own, not a symbolic link, and writable by nobody else (anyone who can write there could
/// plant code this process would load and run).
#[cfg(unix)]
fn trusted(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if meta.file_type().is_symlink() {
        return Err(format!("{} is a symbolic link", path.display()));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(format!("{} belongs to another user", path.display()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("others may write {}", path.display()));
    }
    Ok(())
}

/// Elsewhere the folder's ACLs are the operator's to set.
#[cfg(not(unix))]
fn trusted(_path: &Path) -> Result<(), String> {
    Ok(())
}

/// `DIR/component-<hash>.cwasm`: the hash covers the component and everything about the
/// engine that makes compiled code incompatible, so a stale file is never even opened.
fn cache_file(engine: &Engine, wasm: &[u8], dir: &Path) -> PathBuf {
    let mut engine_hash = DefaultHasher::new();
    engine
        .precompile_compatibility_hash()
        .hash(&mut engine_hash);
    let mut key = Sha256::new();
    key.update(wasm);
    key.update(engine_hash.finish().to_le_bytes());
    key.update(env!("CARGO_PKG_VERSION"));
    let hex: String = key.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("component-{hex}.cwasm"))
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, file: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `store_in_cache` from `Component::serialize` of this
    // engine configuration (the name is keyed by it), into the user's own cache folder, and
    // renamed into place whole, so it is never seen half-written. wasmtime also checks its
    // header and configuration before use.
    unsafe { Component::deserialize_file(engine, file) }
}

fn store_in_cache(component: &Component, file: &Path) -> anyhow::Result<()> {
    let dir = file.parent().expect("cache files live in a folder");
    crate::private::create_dir_all(dir)?;
    let bytes = component.serialize()?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    crate::private::write(&tmp, bytes)?;
    fs::rename(&tmp, file)?;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};
    use std::sync::mpsc;

    #[test]
    fn a_call_waits_for_a_slot_while_all_are_taken() {
        let slots = Slots::new(2);
        let (first, second) = (slots.take(), slots.take());
        let (taken, told) = mpsc::channel();
        thread::scope(|scope| {
            scope.spawn(|| {
                let _third = slots.take();
                taken.send(()).unwrap();
            });
            assert_eq!(
                told.recv_timeout(Duration::from_millis(200)),
                Err(mpsc::RecvTimeoutError::Timeout),
                "a third call took a slot while both were held"
            );
            drop(first);
            told.recv_timeout(Duration::from_secs(10))
                .expect("the slot given back went to the waiting call");
        });
        drop(second);
        assert_eq!(*slots.free.lock().unwrap(), 2, "every slot came back");
    }

    #[test]
    fn only_a_private_folder_of_ones_own_holds_trusted_code() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        crate::private::create_dir_all(&cache).unwrap();
        assert_eq!(trusted(&cache), Ok(()));
        let file = cache.join("component.cwasm");
        crate::private::write(&file, b"code").unwrap();
        assert_eq!(trusted(&file), Ok(()));
        let link = dir.path().join("link");
        symlink(&cache, &link).unwrap();
        assert!(trusted(&link).unwrap_err().ends_with("is a symbolic link"));
        fs::set_permissions(&file, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(trusted(&file).unwrap_err().starts_with("others may write"));
    }
}
