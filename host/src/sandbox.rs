//! The sandbox the tool logic runs in: every wasmtime knob, in one place.
//!
//! An instance of the guest component serves one agent: nothing a call leaves in guest
//! memory can reach another agent's call, and a trap costs only that call. When a call ends
//! well, its instance is kept for that agent's next call, which then pays for no set-up:
//! making an instance and resetting it after was two thirds of what the sandbox added to a
//! read. What the guest keeps between one agent's calls is that agent's own, which its next
//! call may read anyway. An instance is dropped instead after a trap, when it holds WASI
//! resources, or when its memory has grown past [`KEPT_MEMORY`].
//!
//! Instances come from wasmtime's pooling allocator: a fixed number of slots whose memory is
//! reserved once and, when an instance is dropped, reset to the component's image (the pages
//! it dirtied, in place), so the next instance sees nothing of it, and no call maps or unmaps
//! anything. A fresh mapping per call, unmapped after, was a tenth of the server's CPU time
//! on reads, most of it the kernel stopping the process's other threads to flush their view
//! of the unmapped pages. A kept instance holds its slot; a call for another agent takes a
//! free slot, or else the slot of the instance kept longest, and waits while every slot
//! serves a call.
//!
//! The compiled component is cached on disk, keyed by its bytes and the engine's
//! configuration, so a start does not pay for Cranelift again.

use crate::bindings::exports::scratchpad::mcp::json;
use crate::bindings::{Scratchpad, ScratchpadPre};
use crate::bounds::{InstanceBounds, MEMORY_LIMIT, TABLE_LIMIT};
use crate::epoch::Ticker;
use crate::imports::{CallState, InstanceState};
use crate::wakeup::Wakeup;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use wasmtime::component::{Component, ComponentExportIndex, HasSelf, Instance, Linker};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap,
    UpdateDeadline,
};

/// The guest component, built from `guest/` by `build.rs`.
pub const GUEST_COMPONENT: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/scratchpad_guest.wasm"));

/// Most time one call may spend running guest code (time inside host imports, such as a
/// database wait or the summariser's HTTP request, does not count). The heaviest legal call
/// takes well under a second: the diff itself stops refining after 500 ms.
pub const CPU_LIMIT: Duration = Duration::from_secs(5);

/// How many instances may live at once; a call waits for a slot while every one serves a
/// call. A call holds its slot for its whole run, which includes a write's wait for its turn
/// at the write lock, so the pool is as large as hosted mode's default bound on calls in
/// flight: by default no call waits here. A slot costs address space, and the pages its
/// instance dirtied (see [`KEEP_RESIDENT`] and [`KEPT_MEMORY`]).
pub const SLOTS: u32 = 64;

/// Largest linear memory of an instance kept for its agent's next call. The component's
/// image asks for 3 MiB and an ordinary call stays in it; a call that grew the memory past
/// this (a large file, a long diff) leaves an instance that is dropped, so the slot is reset
/// and gives back what it dirtied past [`KEEP_RESIDENT`]. Bounds what kept instances hold:
/// at most this much in each of [`SLOTS`].
pub const KEPT_MEMORY: usize = 4 << 20;

/// How much of a slot's linear memory may stay resident when its instance is dropped. Where
/// the kernel can say which pages the instance dirtied (Linux 6.7 and later), only those are
/// reset, in place from the component's image, so the slot's next instance takes no page
/// faults on them: a fresh instance for a read cost 65 µs without this and 45 µs with it, in
/// process. What it dirtied past this is given back. A slot keeps only the pages its
/// instances dirtied, so under load resident memory grows with the slots in use (64 hosted
/// callers: about 3 MiB more than with nothing kept). Without a kernel that says so,
/// nothing is kept (see [`engine`]).
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
    fn from_wasmtime(e: &wasmtime::Error, limits: &InstanceBounds) -> Self {
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
    /// component that does not fit is refused at start); an instance is made from it.
    pre: ScratchpadPre<InstanceState>,
    /// Where the `json` export's functions are, found once: a call through it looks up
    /// and type-checks those two, not every export of the world (a fifth of an instance's
    /// set-up).
    json: json::GuestIndices,
    /// Advances the engine's epoch while a call runs; stops when the sandbox goes.
    ticker: Ticker,
    /// The pool's slots: the free ones, and the instances kept for their agents.
    slots: Slots<Kept>,
}

impl Sandbox {
    /// Loads a component (normally [`GUEST_COMPONENT`]), from the compile cache in
    /// `cache_dir` when it holds a copy compiled by this engine configuration.
    pub fn with_component(wasm: &[u8], cache_dir: Option<&Path>) -> Result<Self, SandboxError> {
        let engine = engine()?;
        let component = load(&engine, wasm, cache_dir)?;
        let mut linker = Linker::<InstanceState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .and_then(|()| {
                Scratchpad::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s.call())
            })
            .map_err(|e| SandboxError::Load(e.to_string()))?;
        let pre = linker
            .instantiate_pre(&component)
            .and_then(ScratchpadPre::new)
            .map_err(|e| SandboxError::Load(e.to_string()))?;
        let json = json::GuestIndices::new(pre.instance_pre())
            .map_err(|e| SandboxError::Load(e.to_string()))?;

        let ticking = engine.clone();
        let ticker = Ticker::start(move || ticking.increment_epoch())
            .map_err(|e| SandboxError::Load(e.to_string()))?;
        Ok(Self {
            engine,
            pre,
            json,
            ticker,
            slots: Slots::new(SLOTS),
        })
    }

    /// Calls `tool` with JSON `arguments` through the `json` export, as the service does:
    /// only that export's functions are looked up in the instance (the generated bindings'
    /// own instantiation would look up and type-check every export of the world), once for
    /// each instance, not at every call it serves.
    pub fn call_json(
        &self,
        state: CallState,
        tool: &str,
        arguments: &str,
    ) -> (
        Result<Result<String, json::CallError>, SandboxError>,
        CallState,
    ) {
        self.serve(state, |ready, store| {
            let json = match &mut ready.json {
                Some(json) => json,
                empty => empty.insert(self.json.load(&mut *store, &ready.instance)?),
            };
            json.call_call(store, tool, arguments)
        })
    }

    /// Runs `call` against an instance for the call's agent: the one kept from its last call,
    /// or a fresh one. `call` looks up what it calls (the conformance runner works from the
    /// component's own types, read from data files). Returns the call's state back with the
    /// result, so the caller can commit or roll back its transaction.
    pub fn run<R>(
        &self,
        state: CallState,
        call: impl FnOnce(&Instance, &mut Store<InstanceState>) -> wasmtime::Result<R>,
    ) -> (Result<R, SandboxError>, CallState) {
        self.serve(state, |ready, store| call(&ready.instance, store))
    }

    /// [`Sandbox::run`], with what the calls before looked up in the instance.
    fn serve<R>(
        &self,
        state: CallState,
        call: impl FnOnce(&mut Ready, &mut Store<InstanceState>) -> wasmtime::Result<R>,
    ) -> (Result<R, SandboxError>, CallState) {
        let agent = state.agent().to_owned();
        let (slot, kept) = self.slots.take(&agent);
        let (mut store, ready) = match kept {
            Some(kept) => (kept.store, Some(kept.ready)),
            None => (self.store(), None),
        };
        store.data_mut().serve(state);
        let _running = self.ticker.running();
        store.set_epoch_deadline(1);
        let result = match ready {
            Some(ready) => Ok(ready),
            None => self
                .pre
                .instance_pre()
                .instantiate(&mut store)
                .map(|instance| Ready {
                    instance,
                    json: None,
                }),
        }
        .and_then(|mut ready| call(&mut ready, &mut store).map(|answer| (ready, answer)));
        let (result, ready) = match result {
            Ok((ready, answer)) => (Ok(answer), Some(ready)),
            Err(e) => {
                let error = SandboxError::from_wasmtime(&e, &store.data().bounds);
                tracing::warn!(error = %e, "guest call failed");
                (Err(error), None)
            }
        };
        let state = store
            .data_mut()
            .served()
            .expect("the store served this call until now");
        if let Some(ready) = ready
            && keepable(&store)
        {
            slot.keep(agent, Kept { store, ready });
        } else {
            // The store goes before the slot: wasmtime has the instance back first.
            drop(store);
            drop(slot);
        }
        (result, state)
    }

    /// A store for a fresh instance, with its memory limiter and CPU bound.
    fn store(&self) -> Store<InstanceState> {
        let mut store = Store::new(&self.engine, InstanceState::new());
        store.limiter(|s| &mut s.bounds);
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

/// Whether an instance that served a call well may serve its agent's next: it holds no WASI
/// resources, and its memory is no larger than [`KEPT_MEMORY`].
fn keepable(store: &Store<InstanceState>) -> bool {
    let state = store.data();
    state.holds_no_resources() && state.bounds.memory <= KEPT_MEMORY
}

/// Where the `tools` interface's function `name` (its WIT name, such as `write-file`) is in
/// `instance`: for callers that call one tool by name (the benchmarks, the conformance
/// runner), looking up nothing else.
pub fn tool_function(
    instance: &Instance,
    store: &mut Store<InstanceState>,
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
        .max_memory_size(MEMORY_LIMIT)
        // Calls run synchronously, on no fiber stack of the pool's: by default it reserves
        // 1,000 of them at start, 2 GiB, each guard page made by a system call of its own.
        .total_stacks(0);
    if keep_resident {
        pool.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT);
    }
    pool
}

/// An instance kept for its agent's next call, in the store it was made in.
struct Kept {
    store: Store<InstanceState>,
    ready: Ready,
}

/// An instance, and the `json` export's functions once a call has looked them up (the
/// look-up type-checks them, a microsecond or two a call).
struct Ready {
    instance: Instance,
    json: Option<json::Guest>,
}

/// The gate in front of the pool: wasmtime refuses an instance when every slot is taken, so
/// a call waits here for one instead. A slot is free, or serves a call, or holds a `T` kept
/// for one agent's next call (an instance; the tests keep plain values).
struct Slots<T> {
    /// The free slots and what is kept.
    state: Mutex<SlotState<T>>,
    /// Woken when a slot is freed or something kept (only when a call waits: nearly every
    /// call finds a slot).
    returned: Wakeup,
}

struct SlotState<T> {
    /// How many slots are free.
    free: u32,
    /// What is kept, and for which agent; the most recently used first.
    kept: VecDeque<(String, T)>,
}

/// A slot held by one call until it is dropped (after the call's store, which gives the
/// instance back to the pool) or keeps what the call leaves.
struct Slot<'a, T>(&'a Slots<T>);

impl<T> Slots<T> {
    fn new(count: u32) -> Self {
        Self {
            state: Mutex::new(SlotState {
                free: count,
                kept: VecDeque::new(),
            }),
            returned: Wakeup::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SlotState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives back a slot by `change`, waking a call that waits for one.
    fn give_back(&self, change: impl FnOnce(&mut SlotState<T>)) {
        let mut state = self.lock();
        change(&mut state);
        self.returned.notify_one();
    }

    /// Takes a slot for a call of `agent`: with what is kept for that agent if anything is;
    /// else a free slot; else the slot of what was kept longest, dropped here. Waits while
    /// every slot serves a call.
    fn take(&self, agent: &str) -> (Slot<'_, T>, Option<T>) {
        let busy = |s: &mut SlotState<T>| s.free == 0 && s.kept.is_empty();
        let mut state = self.lock();
        if busy(&mut state) {
            state = self.returned.wait_while(state, busy);
        }
        if let Some(at) = state.kept.iter().position(|(of, _)| of == agent) {
            let kept = state.kept.remove(at).map(|(_, kept)| kept);
            return (Slot(self), kept);
        }
        if state.free > 0 {
            state.free -= 1;
            return (Slot(self), None);
        }
        let oldest = state.kept.pop_back();
        drop(state);
        // Its slot passes to this call once wasmtime has the instance back.
        drop(oldest);
        (Slot(self), None)
    }
}

impl<T> Slot<'_, T> {
    /// Keeps `kept` in this slot for `agent`'s next call.
    fn keep(self, agent: String, kept: T) {
        self.0.give_back(|s| s.kept.push_front((agent, kept)));
        std::mem::forget(self);
    }
}

impl<T> Drop for Slot<'_, T> {
    fn drop(&mut self) {
        self.0.give_back(|s| s.free += 1);
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
            tracing::warn!(
                error = %e,
                file = %file.display(),
                "could not cache the compiled component (each start compiles it again)"
            );
            compiled
        }
    };
    crate::heap::give_back_freed_memory();
    Ok(component)
}

/// The component compiled into the cache file `file`, if that file may be trusted with
/// native code (see [`trusted`]) and loads.
fn from_cache(engine: &Engine, file: &Path) -> Result<Component, String> {
    trusted(file).and_then(|()| deserialize(engine, file).map_err(|e| e.to_string()))
}

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
    let hex = scratchpad_guest::hex::hex(&key.finalize()[..16]);
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
    use std::thread;

    #[test]
    fn a_call_waits_for_a_slot_while_all_are_taken() {
        let slots = Slots::<()>::new(2);
        let (first, second) = (slots.take("a"), slots.take("b"));
        let (taken, told) = mpsc::channel();
        thread::scope(|scope| {
            scope.spawn(|| {
                let _third = slots.take("c");
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
        assert_eq!(slots.lock().free, 2, "every slot came back");
    }

    #[test]
    fn what_a_call_keeps_serves_only_its_agent_and_the_oldest_gives_way() {
        let slots = Slots::new(2);
        let (slot, kept) = slots.take("a");
        assert_eq!(kept, None, "nothing is kept at first");
        slot.keep("a".into(), "a's first");
        let (slot, kept) = slots.take("b");
        assert_eq!(kept, None, "b is not served by what a left");
        slot.keep("b".into(), "b's first");
        assert_eq!(slots.lock().free, 0, "what is kept holds its slot");

        let (slot, kept) = slots.take("a");
        assert_eq!(kept, Some("a's first"), "a gets back what it left");
        slot.keep("a".into(), "a's second");

        // No slot is free: c's call takes the slot of what was kept longest, b's.
        let (slot, kept) = slots.take("c");
        assert_eq!(kept, None);
        drop(slot);
        let state = slots.lock();
        assert_eq!(state.free, 1, "c's slot came back free");
        assert_eq!(Vec::from(state.kept.clone()), [("a".into(), "a's second")]);
    }

    #[test]
    fn a_call_waiting_for_a_slot_takes_one_as_soon_as_another_call_keeps_its_instance() {
        let slots = Slots::new(1);
        let (held, _) = slots.take("a");
        let (taken, told) = mpsc::channel();
        thread::scope(|scope| {
            scope.spawn(|| {
                let (_slot, kept) = slots.take("b");
                taken.send(kept).unwrap();
            });
            assert_eq!(
                told.recv_timeout(Duration::from_millis(200)),
                Err(mpsc::RecvTimeoutError::Timeout),
                "b's call took a slot while a's held the only one"
            );
            held.keep("a".into(), "a's");
            let kept = told
                .recv_timeout(Duration::from_secs(10))
                .expect("b's call took the slot a's instance was kept in");
            assert_eq!(kept, None, "b's call is not served by a's instance");
        });
        assert_eq!(slots.lock().free, 1);
        assert!(slots.lock().kept.is_empty());
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
