"""The self-contained component under wasmtime-py: one engine, one compiled component, and
one live instance per open folder.

This is the only code in the package that touches wasmtime. It gives the component a folder
(preopened as `/store`, where it keeps `scratchpad.db`), the operator's limits, a summariser,
and a CPU and memory bound per call; every rule and all storage are inside the component.

A call that traps (its fuel ran out, it hit the memory cap, a bug) raises, and its instance is
dropped: the next call runs on a fresh one, whose SQLite journal rolls back whatever the
trapped call had started. Every instance of one `Runtime` carries the same lease token, so
the fresh instance resumes the folder's lease at once instead of waiting for it to lapse.
"""

from __future__ import annotations

import os
import secrets
from typing import Any, Callable

from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Record, Variant

from ._errors import SummariserError

PACKAGE = "scratchpad:mcp"
VERSION = "0.1.0"

#: Fuel a call may burn: about 10 s of the tools' own work on one core, far above any
#: legitimate call (a 1 MiB write with its diff takes well under 1% of it).
CALL_FUEL = 20_000_000_000
#: The fuel of a call without a CPU bound: more than any call could burn.
UNBOUNDED = 2**63 - 1
#: Memory one instance may grow to, as on the server (256 MiB).
MEMORY_LIMIT = 256 * 1024 * 1024

#: The server's `[limits]` names (its config file's), in the WIT record's order.
LIMIT_NAMES = (
    "max_files", "max_log_entries", "max_total_bytes", "max_write_bytes",
    "max_log_entry_bytes", "versions_kept", "log_page_size", "max_response_tokens",
)

_engines: dict[bool, Engine] = {}
_components: dict[tuple[str, bool], Component] = {}


def compiled(wasm_path: str, cache: bool) -> tuple[Engine, Component]:
    """The component at `wasm_path`, compiled once per process on an engine that meters
    fuel. With `cache`, wasmtime keeps the compiled code in its own per-user cache, so a new
    process starts in milliseconds instead of compiling for seconds."""
    engine = _engines.get(cache)
    if engine is None:
        config = Config()
        config.consume_fuel = True
        config.cache = cache
        engine = _engines[cache] = Engine(config)
    key = (wasm_path, cache)
    if key not in _components:
        _components[key] = Component.from_file(engine, wasm_path)
    return engine, _components[key]


def limit_record(limits: dict[str, int] | None) -> Record:
    """The WIT `limit-overrides` record for the server's `[limits]` names; a name the server
    does not know is refused, naming it."""
    limits = dict(limits or {})
    unknown = sorted(set(limits) - set(LIMIT_NAMES))
    if unknown:
        raise ValueError(f"unknown limit {unknown[0]!r}: the limits are {', '.join(LIMIT_NAMES)}")
    record = Record()
    for name in LIMIT_NAMES:
        value = limits.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValueError(f"limit {name} must be a whole number of at least 0, not {value!r}")
        setattr(record, name.replace("_", "-"), value)
    return record


class Runtime:
    """The component over one folder, instantiated on the first call and again after a trap."""

    def __init__(self, wasm_path: str, folder: str, summariser: Summariser, limits: Record,
                 fuel: int | None, memory: int | None, cache: bool):
        self.engine, self.component = compiled(wasm_path, cache)
        self.folder, self.fuel, self.memory, self.limits = folder, fuel, memory, limits
        self.linker = Linker(self.engine)
        self.linker.add_wasip2()
        with self.linker.root() as root:
            with root.add_instance(f"{PACKAGE}/types@{VERSION}"):
                pass
            with root.add_instance(f"{PACKAGE}/summariser@{VERSION}") as api:
                api.add_func("model", lambda _store: summariser.model)
                api.add_func("summarise", lambda _store, request: summariser.summarise(request))
        self.live: tuple[Store, Any] | None = None
        self.lease_token = str(secrets.randbits(63))

    def _instantiate(self) -> tuple[Store, Any]:
        store = Store(self.engine)
        wasi = WasiConfig()
        wasi.preopen_dir(self.folder, "/store")
        wasi.env = [("SCRATCHPAD_LEASE_TOKEN", self.lease_token)]
        store.set_wasi(wasi)
        if self.memory is not None:
            store.set_limits(memory_size=self.memory)
        store.set_fuel(UNBOUNDED)  # instantiating runs no tool: it is not a call's to pay for
        instance = self.linker.instantiate(store, self.component)
        self.live = (store, instance)
        self.export("settings", "set-limits")(self.limits)
        return self.live

    def export(self, interface: str, function: str) -> Callable[..., Any]:
        """The export `function` of `interface` on the live instance, as a callable that
        resets the call's fuel and drops the instance if it traps."""
        store, instance = self.live or self._instantiate()
        index = instance.get_export_index(store, f"{PACKAGE}/{interface}@{VERSION}")
        func = instance.get_func(store, instance.get_export_index(store, function, index))

        def call(*args: Any) -> Any:
            store.set_fuel(UNBOUNDED if self.fuel is None else self.fuel)
            try:
                return func(store, *args)
            except Exception:
                self.live = None
                raise

        call.type = lambda: func.type(store)  # type: ignore[attr-defined]
        return call

    def close(self) -> None:
        if self.live is not None:
            self.export("settings", "close")()
            self.live = None


class Summariser:
    """Adapts the user's callback to the WIT `summariser` import."""

    def __init__(self, summarise: Callable[[str, str, int], str] | None, model: str):
        self.callback, self.model = summarise, model

    def summarise(self, request: Record) -> Any:
        if self.callback is None:
            return Variant("not-configured",
                           "summarize_file needs a summariser: pass summariser= to Scratchpad(...)")
        try:
            text = self.callback(request.system, request.prompt, getattr(request, "max-tokens"))
        except SummariserError as e:
            return Variant(e.kind, str(e))
        except Exception as e:  # the user's model client failed: the call fails, not the process
            return Variant("failed", str(e) or "the summariser failed")
        if not isinstance(text, str):
            return Variant("failed", "the summariser must answer with the summary's text")
        return text


def default_component() -> str:
    """The self-contained component inside this package (or SCRATCHPAD_TOOLS_WASM)."""
    return os.environ.get("SCRATCHPAD_TOOLS_WASM") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "scratchpad.wasm")
