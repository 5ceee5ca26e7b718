"""The scratchpad's tools as OpenAI Agents SDK function tools.

    from agents import Agent
    from scratchpad_tools import Scratchpad
    from scratchpad_tools.openai_agents import tools

    pad = Scratchpad("data").for_agent("planner")
    agent = Agent(name="planner", tools=tools(pad))

Each tool keeps the component's own name, description and JSON schema (not in strict mode:
its optional arguments are optional). A refused call reaches the model as the tool's output,
the server's text after "error: ", never as an exception out of the run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import FunctionTool, RunContextWrapper

from .definitions import Pad, run

__all__ = ["tools"]


def tools(pad: Pad) -> list[FunctionTool]:
    """A `FunctionTool` for every tool of `pad` (a `Scratchpad`, or one bound to an agent by
    `for_agent`, whose tools take no `agent_id`)."""
    return [_tool(pad, definition) for definition in pad.tools()]


def _tool(pad: Pad, definition: dict[str, Any]) -> FunctionTool:
    name = definition["name"]

    async def invoke(_context: RunContextWrapper[Any], arguments: str) -> str:
        # The component runs on a thread: the event loop is not held while it works.
        text, _failed = await asyncio.to_thread(run, pad, name, arguments)
        return text

    return FunctionTool(name=name, description=definition.get("description", ""),
                        params_json_schema=definition["inputSchema"], on_invoke_tool=invoke,
                        strict_json_schema=False)
