"""The scratchpad's tools as a PydanticAI toolset.

    from pydantic_ai import Agent
    from scratchpad_tools import Scratchpad
    from scratchpad_tools.pydantic_ai import toolset

    pad = Scratchpad("data").for_agent("planner")
    agent = Agent("anthropic:claude-haiku-4-5", toolsets=[toolset(pad)])

Each tool keeps the component's own name, description and JSON schema (PydanticAI does not
re-validate the arguments: the component does, and says which field is wrong). A refused call
reaches the model as a failed tool result with the server's text (`ToolFailed`), never as an
exception out of the run.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.toolsets import FunctionToolset

from ._errors import ToolError
from .definitions import Pad

__all__ = ["toolset"]


def toolset(pad: Pad, *, id: str | None = "scratchpad") -> FunctionToolset[Any]:
    """A `FunctionToolset` of every tool of `pad` (a `Scratchpad`, or one bound to an agent by
    `for_agent`, whose tools take no `agent_id`)."""
    return FunctionToolset([_tool(pad, definition) for definition in pad.tools()], id=id)


def _tool(pad: Pad, definition: dict[str, Any]) -> Tool[Any]:
    name = definition["name"]

    def run(**arguments: Any) -> dict[str, Any]:
        try:
            return pad.call(name, arguments)
        except ToolError as e:
            raise ToolFailed(str(e)) from e

    return Tool.from_schema(run, name=name, description=definition.get("description"),
                            json_schema=definition["inputSchema"])
