"""The scratchpad's tools as plain JSON-schema definitions, for any model client.

    import anthropic
    from scratchpad_tools import Scratchpad, definitions

    pad = Scratchpad("data").for_agent("planner")
    reply = anthropic.Anthropic().messages.create(..., tools=definitions.anthropic(pad))
    for block in reply.content:
        if block.type == "tool_use":
            text, failed = definitions.run(pad, block.name, block.input)
            # answer with {"type": "tool_result", "tool_use_id": block.id,
            #              "content": text, "is_error": failed}

`anthropic` gives the Messages API's tool format, `openai` the Chat Completions one
(`openai_responses` the Responses API's); `run` turns a model's tool call into the text to
send back and whether the call failed.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from ._errors import ToolError

__all__ = ["Pad", "anthropic", "openai", "openai_responses", "run"]


class Pad(Protocol):
    """What the adapters need: a `Scratchpad`, or one bound to an agent."""

    def tools(self) -> list[dict[str, Any]]: ...

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]: ...


def anthropic(pad: Pad) -> list[dict[str, Any]]:
    """The tools in the Anthropic Messages API's format."""
    return [{"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
            for t in pad.tools()]


def openai(pad: Pad) -> list[dict[str, Any]]:
    """The tools in the OpenAI Chat Completions API's format."""
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": t["inputSchema"]}}
            for t in pad.tools()]


def openai_responses(pad: Pad) -> list[dict[str, Any]]:
    """The tools in the OpenAI Responses API's format."""
    return [{"type": "function", "name": t["name"], "description": t["description"],
             "parameters": t["inputSchema"], "strict": False}
            for t in pad.tools()]


def run(pad: Pad, tool: str, arguments: dict[str, Any] | str | None) -> tuple[str, bool]:
    """Runs a model's tool call (arguments as a dict or as JSON text): the text to give the
    model back (the result as JSON, or "error: " and the server's text) and whether it
    failed. Never raises for what the model sent."""
    try:
        if isinstance(arguments, str):
            arguments = json.loads(arguments or "{}")
        if arguments is not None and not isinstance(arguments, dict):
            raise ToolError("invalid-arguments", f"invalid arguments for {tool}: expected a JSON object")
        return json.dumps(pad.call(tool, arguments), ensure_ascii=False), False
    except json.JSONDecodeError as e:
        return f"error: invalid arguments for {tool}: not JSON ({e.msg} at character {e.pos})", True
    except ToolError as e:
        return f"error: {e}", True
