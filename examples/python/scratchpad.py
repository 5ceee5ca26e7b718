"""The self-contained scratchpad component in Python, with wasmtime-py.

The component holds every rule and its own SQLite store; this file only gives it a folder,
limits, and (if you want summaries) a summariser, and calls it:

    from scratchpad import Scratchpad
    pad = Scratchpad("scratchpad.wasm", "data")  # scratchpad-mcp component --standalone --out scratchpad.wasm
    pad.call("write-file", {"agent-id": "a", "path": "plan.md", "content": "...", "expected-version": None})
    pad.close()

Everything written is in data/scratchpad.db, and there after a restart (a store the server
serves too: `scratchpad-mcp --db data/scratchpad.db verify`). Values go in and come out in
one JSON form (wit_values.py).

Each call runs under a CPU budget (wasmtime fuel) and a memory cap. A call that traps (the
budget ran out, a bug) raises, and its instance is dropped: the next call runs on a fresh
one, whose SQLite journal rolls back whatever the trapped call had started.
"""

import json
import secrets

from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Variant

from wit_values import record, to_json, to_wit

PACKAGE = "scratchpad:mcp"
VERSION = "0.1.0"

#: Fuel a call may burn: about 10 s of the tools' own work on one core, far above any
#: legitimate call (a 1 MiB write with its diff takes well under 1% of it).
CALL_FUEL = 20_000_000_000
#: Memory one instance may grow to, as on the server.
MEMORY_LIMIT = 256 * 1024 * 1024

_engine = None
_compiled = {}


def compiled(wasm_path):
    """The component at `wasm_path`, compiled once per process (compiling takes a second or
    two; instantiating, milliseconds), on one engine that meters fuel."""
    global _engine
    if _engine is None:
        config = Config()
        config.consume_fuel = True
        _engine = Engine(config)
    if wasm_path not in _compiled:
        _compiled[wasm_path] = Component.from_file(_engine, wasm_path)
    return _engine, _compiled[wasm_path]


LIMIT_NAMES = ["max-files", "max-log-entries", "max-total-bytes", "max-write-bytes",
               "max-log-entry-bytes", "versions-kept", "log-page-size", "max-response-tokens"]


class ToolError(Exception):
    """A call the tools refused: `kind` is the WIT error case (`not-found`, `conflict`,
    `invalid-arguments`, ...), the message the server's text."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class NoSummariser:
    """No model: summarize_file says so, and every other tool works."""

    def model(self):
        return "none"

    def summarise(self, request):
        return Variant("not-configured", "summarize_file needs a summariser: pass one to Scratchpad(...)")


class Scratchpad:
    """The component over the store in `folder`.

    `summariser` has `model()` and `summarise(request)` (return the text, or a
    `Variant("not-configured" | "unauthorized" | "unavailable" | "failed", message)`); with
    none, summarize_file answers not-configured, as the server does without a key. `limits` sets the server's `[limits]`
    by their WIT names (for example {"versions-kept": 3}); the rest keep their defaults.
    """

    def __init__(self, wasm_path, folder, summariser=None, limits=None,
                 fuel=CALL_FUEL, memory=MEMORY_LIMIT):
        self.engine, self.component = compiled(str(wasm_path))
        self.folder, self.fuel, self.memory = str(folder), fuel, memory
        self.limits = record(**{n.replace("-", "_"): (limits or {}).get(n) for n in LIMIT_NAMES})
        self.linker = Linker(self.engine)
        self.linker.add_wasip2()
        summariser = summariser or NoSummariser()
        with self.linker.root() as root:
            with root.add_instance(f"{PACKAGE}/types@{VERSION}"):
                pass
            with root.add_instance(f"{PACKAGE}/summariser@{VERSION}") as api:
                api.add_func("model", lambda _store: summariser.model())
                api.add_func("summarise", lambda _store, request: summariser.summarise(request))
        self.instance = None
        # One lease token for every instance of this object: after a trap the next instance
        # resumes the lease at once instead of waiting for it to lapse.
        self.lease_token = str(secrets.randbits(63))

    def _instantiate(self):
        store = Store(self.engine)
        wasi = WasiConfig()
        wasi.preopen_dir(self.folder, "/store")
        wasi.env = [("SCRATCHPAD_LEASE_TOKEN", self.lease_token)]
        store.set_wasi(wasi)
        store.set_limits(memory_size=self.memory)
        store.set_fuel(self.fuel)
        instance = self.linker.instantiate(store, self.component)
        self.instance = (store, instance)
        self._settings("set-limits")(store, self.limits)

    def _export(self, interface, name):
        store, instance = self.instance
        index = instance.get_export_index(store, f"{PACKAGE}/{interface}@{VERSION}")
        return instance.get_func(store, instance.get_export_index(store, name, index))

    def _settings(self, name):
        return self._export("settings", name)

    def call(self, tool, *args):
        """Calls a tool with arguments in the JSON form; returns {"tag": "ok"|"err", "val": ...}."""
        if self.instance is None:
            self._instantiate()
        store, _ = self.instance
        func = self._export("tools", tool)
        ty = func.type(store)
        params = [to_wit(t, a) for (_, t), a in zip(ty.params, args)]
        store.set_fuel(self.fuel)
        try:
            return to_json(ty.result, func(store, *params))
        except Exception:
            # A trapped instance is done for; the next call starts a fresh one.
            self.instance = None
            raise

    def tools(self):
        """The tools exactly as the server's MCP `tools/list` gives them (a list of dicts)."""
        return json.loads(self._json("list-tools"))

    def call_json(self, tool, arguments):
        """Calls a tool by its MCP name (`write_file`) with MCP arguments (a dict); returns the
        server's `structuredContent`, or raises ToolError with the server's text and kind."""
        answer = self._json("call", tool, json.dumps(arguments))
        if answer["tag"] == "ok":
            return json.loads(answer["val"])
        error = answer["val"]
        if error["tag"] == "tool":
            raise ToolError(error["val"]["error"]["tag"], error["val"]["message"])
        raise ToolError(error["tag"], error["val"])

    def _json(self, function, *args):
        if self.instance is None:
            self._instantiate()
        store, _ = self.instance
        func = self._export("json", function)
        ty = func.type(store)
        store.set_fuel(self.fuel)
        try:
            answer = func(store, *args)
        except Exception:
            self.instance = None
            raise
        return to_json(ty.result, answer)

    def close(self):
        """Closes the store: another process may open the folder at once."""
        if self.instance is not None:
            store, _ = self.instance
            self._settings("close")(store)
            self.instance = None
