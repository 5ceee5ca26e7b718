"""scratchpad-mcp's tools inside your own Python process, sandboxed in WebAssembly.

    from scratchpad_tools import Scratchpad

    pad = Scratchpad("data")                      # the store is data/scratchpad.db
    planner = pad.for_agent("planner")            # its tools have no agent_id at all
    planner.call("write_file", {"path": "plan.md", "content": "1. read the spec"})
    planner.call("read_file", {"path": "plan.md"})

Every rule and the SQLite store are inside the self-contained component this package
carries; this package only gives it a folder and calls it. `call` takes the MCP tool name and
arguments and returns exactly what the scratchpad-mcp server returns as `structuredContent`;
`tools()` gives the tool definitions exactly as its `tools/list`. A refused call raises
`ToolError` and changes nothing.

Each call runs under a CPU budget and a memory cap (on by default, as in the server), so a
bug or a hostile input in the tool logic cannot hang or swell your process. Adapters:
`scratchpad_tools.pydantic_ai.toolset(pad)`, `scratchpad_tools.openai_agents.tools(pad)`, and
plain definitions in `scratchpad_tools.definitions`.
"""

from __future__ import annotations

import copy
import json
import os
import threading
from collections.abc import Mapping
from typing import Any, Callable

from wasmtime import Trap, WasmtimeError
from wasmtime.component import Variant

from ._errors import SummariserError, ToolError
from ._runtime import CALL_FUEL, LIMIT_NAMES, MEMORY_LIMIT, Runtime, Summariser, default_component, limit_record

__all__ = ["Scratchpad", "AgentScratchpad", "ToolError", "SummariserError", "CALL_FUEL",
           "MEMORY_LIMIT", "LIMIT_NAMES"]
__version__ = "0.1.0"


class Scratchpad:
    """The scratchpad's tools over the store in `folder` (created if missing).

    - `summariser(system, prompt, max_tokens) -> str`: your own model client, asked only by
      `summarize_file`, whose summaries are cached per `summary_model`. With none,
      `summarize_file` says it is not configured, as the server does without a key.
    - `limits`: the server's `[limits]` by their config-file names (for example
      `{"versions_kept": 3}`); the rest keep their defaults.
    - `fuel` and `memory`: the CPU budget (wasmtime fuel) and the memory cap of one call;
      `None` lifts a bound.
    - `cache`: keep the compiled component in wasmtime's per-user cache (a new process then
      starts in milliseconds rather than seconds).

    One process opens a folder at a time: another waits up to 5 s and then fails with "in use
    by another process". Calls from several threads are taken one at a time.
    """

    def __init__(self, folder: str | os.PathLike[str], *,
                 summariser: Callable[[str, str, int], str] | None = None,
                 summary_model: str = "custom", limits: dict[str, int] | None = None,
                 fuel: int | None = CALL_FUEL, memory: int | None = MEMORY_LIMIT,
                 cache: bool = True, component: str | os.PathLike[str] | None = None):
        self.folder = os.path.abspath(os.fspath(folder))
        os.makedirs(self.folder, exist_ok=True)
        self._runtime = Runtime(os.fspath(component or default_component()), self.folder,
                                Summariser(summariser, summary_model), limit_record(limits),
                                fuel, memory, cache)
        self._lock = threading.Lock()
        self._tools: list[dict[str, Any]] | None = None

    def tools(self) -> list[dict[str, Any]]:
        """The tools exactly as the server's MCP `tools/list` gives them: dicts with `name`,
        `description`, `inputSchema` and `annotations` (a fresh copy each time)."""
        if self._tools is None:
            with self._lock:
                self._tools = json.loads(self._runtime.export("json", "list-tools")())
        return copy.deepcopy(self._tools)

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Calls `tool` (its MCP name, e.g. `write_file`) with its MCP arguments; returns the
        server's `structuredContent`, or raises `ToolError` with the server's text."""
        try:
            # NaN and infinity are no JSON numbers: refused here, not sent as words JSON lacks.
            text = json.dumps({} if arguments is None else arguments, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ToolError("invalid-arguments", f"invalid arguments for {tool}: they are not JSON ({e})") from None
        with self._lock:
            try:
                answer = self._runtime.export("json", "call")(tool, text)
            except (Trap, WasmtimeError) as e:
                raise _stopped(tool, e) from None
        if isinstance(answer, str):
            return json.loads(answer)
        raise _tool_error(answer)

    def for_agent(self, agent_id: str) -> AgentScratchpad:
        """The same tools bound to one agent: they take no `agent_id`, and no call through
        them can name another agent."""
        return AgentScratchpad(self, agent_id)

    @property
    def fuel(self) -> int | None:
        """The CPU budget of each call from now on (wasmtime fuel; `None`: unbounded)."""
        return self._runtime.fuel

    @fuel.setter
    def fuel(self, fuel: int | None) -> None:
        self._runtime.fuel = fuel

    def export(self, interface: str, function: str) -> Callable[..., Any]:
        """A typed WIT export (`"tools", "write-file"`, ...) of the live instance, for
        embedders who want the WIT types rather than JSON: call it with wasmtime-py's values;
        its `type()` is the function's type. A trap raises wasmtime's error (where `call`
        raises `ToolError("trap")`) and ends the instance: take the export again after one."""
        with self._lock:
            func = self._runtime.export(interface, function)

        def call(*args: Any) -> Any:
            with self._lock:
                return func(*args)
        call.type = func.type  # type: ignore[attr-defined]
        return call

    def close(self) -> None:
        """Closes the store: another process may open the folder at once. The next call opens
        it again."""
        with self._lock:
            self._runtime.close()

    def __enter__(self) -> Scratchpad:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


class AgentScratchpad:
    """The tools of one `Scratchpad` bound to one agent (`Scratchpad.for_agent`): the same
    `call` and `tools`, without `agent_id`, which is always the bound agent's."""

    def __init__(self, pad: Scratchpad, agent_id: str):
        self.pad, self.agent_id = pad, agent_id

    def tools(self) -> list[dict[str, Any]]:
        """The tools as `tools/list` gives them, with `agent_id` taken out of every schema."""
        tools = self.pad.tools()
        for tool in tools:
            schema = tool["inputSchema"]
            schema.get("properties", {}).pop("agent_id", None)
            if "required" in schema:
                schema["required"] = [name for name in schema["required"] if name != "agent_id"]
        return tools

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Calls `tool` as the bound agent; arguments that name an agent are refused."""
        if arguments is not None and not isinstance(arguments, Mapping):
            # Not an object: sent as it is, for the tools to refuse by their rule (dict() would
            # take a list of pairs for named arguments).
            return self.pad.call(tool, arguments)
        arguments = dict(arguments or {})
        if "agent_id" in arguments:
            raise ToolError("invalid-arguments",
                            f"invalid arguments for {tool}: agent_id is not an argument here; "
                            f"these tools are bound to agent {json.dumps(self.agent_id)}")
        return self.pad.call(tool, {"agent_id": self.agent_id, **arguments})


def _stopped(tool: str, trap: Exception) -> ToolError:
    """A trapped call as a `ToolError` of kind `trap`: which bound stopped it, never
    wasmtime's backtrace."""
    if "fuel" in str(trap):
        return ToolError("trap", f"{tool} ran out of its CPU budget and was stopped; nothing was changed")
    return ToolError("trap", f"the tool logic failed while running {tool}; nothing was changed")


def _tool_error(error: Variant) -> ToolError:
    """The `call-error` variant as one exception: a tool's refusal keeps its WIT case."""
    if error.tag == "tool":
        return ToolError(error.payload.error.tag, error.payload.message)
    return ToolError(error.tag, error.payload)
