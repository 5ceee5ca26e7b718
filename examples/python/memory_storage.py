"""Bring your own storage: the tool-logic component (`scratchpad-mcp component`) with its
`storage` import supplied by Python, here dictionaries in memory.

This is the original world, for an embedder whose data must live in a store of its own. It
is also the test double the shared conformance cases hold to the same contract as the real
SQLite store. To keep data, use the self-contained component instead: the scratchpad-tools
package (plugin/python) carries it.
"""

import copy
import hashlib
import re
from datetime import datetime, timezone

from wasmtime import Engine, Store, WasiConfig
from wasmtime.component import Component, Linker, Variant

from wit_values import record, to_json, to_wit

PACKAGE = "scratchpad:mcp"
VERSION = "0.1.0"


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class MemoryStorage:
    """`scratchpad:mcp/storage` in memory. Every call names the agent of the tool call."""

    def __init__(self, limits=None):
        self.files = {}      # (agent, path) -> {"last": n, "versions": {n: (content, time)}, "updated": time}
        self.logs = {}       # (agent, path) -> [(id, entry, time)]
        self.log_meta = {}   # (agent, path) -> {"last": n, "keep-last": k, "max-age-seconds": s}
        self.summaries = {}  # (agent, path, version, model) -> text
        self.usage = {}      # agent -> counters
        self.limits = limits or {}

    def counters(self, agent):
        return self.usage.setdefault(agent, {"total-bytes": 0, "file-count": 0, "log-entry-count": 0, "total-operations": 0})

    def stat_file(self, agent, path):
        f = self.files.get((agent, path))
        if f is None:
            return None
        # The hash the contract asks a store to keep: SHA-256 of the content's UTF-8, hex.
        kept = [record(version=v, bytes=len(c.encode()), sha256=hashlib.sha256(c.encode()).hexdigest(), created_at=t)
                for v, (c, t) in sorted(f["versions"].items())]
        return record(last_version=f["last"], kept=kept)

    def read_version(self, agent, path, version):
        f = self.files.get((agent, path))
        kept = f and f["versions"].get(version)
        return kept[0] if kept else None

    def put_version(self, agent, path, version, content):
        f = self.files.setdefault((agent, path), {"last": 0, "versions": {}, "updated": None})
        if version <= f["last"]:
            raise ValueError(f"version {version} of {path} is not above {f['last']}")
        if not f["versions"]:
            self.counters(agent)["file-count"] += 1
        f["last"], f["updated"] = version, now()
        f["versions"][version] = (content, f["updated"])
        self.counters(agent)["total-bytes"] += len(content.encode())

    def prune_versions(self, agent, path, keep_from):
        f = self.files[(agent, path)]
        for v in [v for v in f["versions"] if v < keep_from]:
            self.counters(agent)["total-bytes"] -= len(f["versions"].pop(v)[0].encode())
            for key in [k for k in self.summaries if k[:3] == (agent, path, v)]:
                del self.summaries[key]

    def delete_file(self, agent, path):
        f = self.files.get((agent, path))
        if not f or not f["versions"]:
            return False
        self.prune_versions(agent, path, f["last"] + 1)
        self.counters(agent)["file-count"] -= 1
        return True

    def list_files(self, agent, prefix):
        found = []
        for (a, p), f in sorted(self.files.items(), key=lambda item: item[0][1].encode()):
            if a == agent and f["versions"] and p.startswith(prefix):
                v = max(f["versions"])
                found.append(record(path=p, version=v, bytes=len(f["versions"][v][0].encode()), updated_at=f["updated"]))
        return found

    def meta(self, agent, path):
        return self.log_meta.setdefault((agent, path), {"last": 0, "keep-last": None, "max-age-seconds": None})

    def append_log(self, agent, path, entry, size):
        meta = self.meta(agent, path)
        meta["last"] += 1
        self.logs.setdefault((agent, path), []).append((meta["last"], entry, now()))
        c = self.counters(agent)
        c["total-bytes"] += size
        c["log-entry-count"] += 1
        return meta["last"]

    def log_info(self, agent, path):
        meta = self.meta(agent, path)
        retention = record(keep_last=meta["keep-last"], max_age_seconds=meta["max-age-seconds"])
        return record(last_id=meta["last"], entries=len(self.logs.get((agent, path), [])), retention=retention)

    def set_log_retention(self, agent, path, retention):
        meta = self.meta(agent, path)
        meta["keep-last"], meta["max-age-seconds"] = getattr(retention, "keep-last"), getattr(retention, "max-age-seconds")

    def trim_log(self, agent, path, before, older_than_seconds):
        cutoff = None
        if older_than_seconds is not None:
            cutoff = datetime.fromtimestamp(datetime.now(timezone.utc).timestamp() - older_than_seconds, timezone.utc)
            cutoff = cutoff.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        log = self.logs.get((agent, path), [])
        gone = [e for e in log if e[0] < before or (cutoff is not None and e[2] < cutoff)]
        self.logs[(agent, path)] = [e for e in log if e not in gone]
        c = self.counters(agent)
        c["total-bytes"] -= sum(len(e[1].payload.encode()) for e in gone)
        c["log-entry-count"] -= len(gone)
        return len(gone)

    def read_log(self, agent, path, after, limit):
        log = self.logs.get((agent, path), [])
        return [record(id=i, entry=e, created_at=t) for i, e, t in log if i > after][:limit]

    def get_usage(self, agent):
        return record(**{k.replace("-", "_"): v for k, v in self.counters(agent).items()})

    def cached_summary(self, agent, path, version, model):
        return self.summaries.get((agent, path, version, model))

    def put_summary(self, agent, path, version, model, summary):
        self.summaries[(agent, path, version, model)] = summary

    def search(self, agent, terms, match_all, prefix, limit, offset):
        """Current file versions and log entries holding all (or any) of `terms`, most
        occurrences first. A real store would use its full-text index (SQLite FTS5, say)."""
        def score(text):
            words = re.findall(r"[^\W_]+", text.lower())
            held = [t in words for t in terms]
            if not (all(held) if match_all else any(held)):
                return None
            return sum(w in terms for w in words)

        hits = []
        for (a, path), f in self.files.items():
            if a == agent and f["versions"] and path.startswith(prefix):
                version = max(f["versions"])
                n = score(f["versions"][version][0])
                if n is not None:
                    hits.append((n, record(path=path, at=Variant("file", version))))
        for (a, path), log in self.logs.items():
            if a == agent and path.startswith(prefix):
                for entry_id, entry, _ in log:
                    n = score(entry.payload)
                    if n is not None:
                        hits.append((n, record(path=path, at=Variant("log-entry", entry_id))))
        hits.sort(key=lambda hit: -hit[0])
        return [m for _, m in hits[offset:offset + limit]]

    def get_limits(self, agent):
        names = ["max-files", "max-log-entries", "max-total-bytes", "max-write-bytes",
                 "max-log-entry-bytes", "versions-kept", "log-page-size", "max-response-tokens"]
        return record(**{n.replace("-", "_"): self.limits.get(n) for n in names})


class ByoScratchpad:
    """The component, its imports linked to a storage and a summariser (with `model()` and
    `summarise(request)`, answering the text or a `summariser-error` Variant)."""

    def __init__(self, wasm_path, storage, summariser):
        self.storage = storage
        self.summariser = summariser
        self.agent = None
        engine = Engine()
        self.component = Component.from_file(engine, wasm_path)
        linker = Linker(engine)
        linker.add_wasip2()
        with linker.root() as root:
            with root.add_instance(f"{PACKAGE}/types@{VERSION}"):
                pass
            with root.add_instance(f"{PACKAGE}/storage@{VERSION}") as storage_api:
                for name in ["stat-file", "read-version", "put-version", "prune-versions",
                             "delete-file", "list-files", "append-log", "read-log",
                             "get-usage", "cached-summary", "put-summary", "limits", "search",
                             "log-info", "set-log-retention", "trim-log"]:
                    storage_api.add_func(name, self._storage_func(name))
            with root.add_instance(f"{PACKAGE}/summariser@{VERSION}") as model_api:
                model_api.add_func("model", lambda _store: self.summariser.model())
                model_api.add_func("summarise", lambda _store, request: self.summariser.summarise(request))
        self.linker = linker
        self.engine = engine

    def _storage_func(self, name):
        method = getattr(self.storage, "get_limits" if name == "limits" else name.replace("-", "_"))

        def call(_store, agent, *args):
            # The embedder's one duty: a call may touch only its own agent's data.
            if agent != self.agent:
                raise PermissionError(f"storage request for agent {agent!r} in a call for {self.agent!r}")
            return method(agent, *args)
        return call

    def call(self, tool, *args):
        """Calls a tool on a fresh instance; a failed call changes nothing."""
        first = args[0]
        self.agent = first if isinstance(first, str) else first["agent-id"]
        saved = copy.deepcopy(self.storage.__dict__)
        store = Store(self.engine)
        store.set_wasi(WasiConfig())
        instance = self.linker.instantiate(store, self.component)
        tools = instance.get_export_index(store, f"{PACKAGE}/tools@{VERSION}")
        func = instance.get_func(store, instance.get_export_index(store, tool, tools))
        ty = func.type(store)
        params = [to_wit(t, a) for (_, t), a in zip(ty.params, args)]
        answer = to_json(ty.result, func(store, *params))
        if answer["tag"] == "ok":
            self.storage.counters(self.agent)["total-operations"] += 1
        else:
            self.storage.__dict__ = saved
        return answer

    def close(self):
        """Nothing to close: the storage is this object's dictionaries."""
