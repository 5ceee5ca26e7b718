"""The PydanticAI toolset, driven by PydanticAI's own offline models: TestModel calls every
tool, FunctionModel plays a scripted conversation. Real tool calls, a real store."""

import json

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402
from pydantic_ai.models.test import TestModel  # noqa: E402

from scratchpad_tools import Scratchpad  # noqa: E402
from scratchpad_tools.pydantic_ai import toolset  # noqa: E402


def returns(result):
    """Every tool return of a run, as (tool name, content, failed)."""
    return [(part.tool_name, part.content, part.outcome != "success")
            for message in result.all_messages() for part in message.parts
            if isinstance(part, ToolReturnPart)]


def scripted(*turns):
    """A FunctionModel that makes each turn's tool calls in order, then answers "done"."""
    turns = list(turns)

    def respond(_messages, _info):
        if turns:
            return ModelResponse(parts=[ToolCallPart(name, args) for name, args in turns.pop(0)])
        return ModelResponse(parts=[TextPart("done")])
    return FunctionModel(respond)


def test_test_model_calls_every_tool_and_each_answers(pad):
    planner = pad.for_agent("planner")
    result = Agent(TestModel(call_tools="all"), toolsets=[toolset(planner)]).run_sync("use every tool")
    called = {name for name, _, _ in returns(result)}
    assert called == {t["name"] for t in pad.tools()}
    # TestModel's made-up arguments are legal for some tools and refused by others; either way
    # each answer reached the model as a tool result and the run finished.
    assert any(not failed for _, _, failed in returns(result))


def test_a_scripted_conversation_writes_and_reads_back(pad):
    planner = pad.for_agent("planner")
    model = scripted(
        [("write_file", {"path": "plan.md", "content": "1. read the spec\n"})],
        [("read_file", {"path": "plan.md"}), ("list_files", {})],
    )
    result = Agent(model, toolsets=[toolset(planner)]).run_sync("plan")
    assert result.output == "done"
    answers = {name: content for name, content, _ in returns(result)}
    assert answers["write_file"]["version"] == 1
    assert answers["read_file"]["content"] == "1. read the spec\n"
    assert [f["path"] for f in answers["list_files"]["files"]] == ["plan.md"]
    assert pad.call("read_file", {"agent_id": "planner", "path": "plan.md"})["current_version"] == 1


def test_errors_reach_the_model_as_failed_tool_results(pad):
    planner = pad.for_agent("planner")
    model = scripted(
        [("read_file", {"path": "missing.md"})],
        [("write_file", {"path": "../escape", "content": "x"})],
        [("read_file", {"path": "plan.md", "agent_id": "other"})],
    )
    result = Agent(model, toolsets=[toolset(planner)]).run_sync("fail three ways")
    assert result.output == "done", "the run went on"
    failures = [content for _, content, failed in returns(result) if failed]
    assert len(failures) == 3, returns(result)
    assert 'no file at path "missing.md"' in failures[0]
    assert "../escape" in failures[1]
    assert 'bound to agent "planner"' in failures[2]


def test_a_bound_agent_cannot_reach_another_agents_data(pad):
    pad.call("write_file", {"agent_id": "other", "path": "secret.md", "content": "theirs"})
    planner = pad.for_agent("planner")
    schemas = {t["name"]: t["inputSchema"] for t in planner.tools()}
    assert all("agent_id" not in s.get("properties", {}) for s in schemas.values())
    model = scripted([("read_file", {"path": "secret.md"}), ("search", {"query": "theirs"})])
    result = Agent(model, toolsets=[toolset(planner)]).run_sync("snoop")
    contents = json.dumps([content for _, content, _ in returns(result)])
    assert "theirs" not in contents.replace('"query": "theirs"', ""), contents


def test_data_persists_for_a_new_toolset_on_the_same_folder(folder):
    with Scratchpad(folder) as first:
        Agent(scripted([("write_file", {"path": "kept.md", "content": "kept"})]),
              toolsets=[toolset(first.for_agent("a"))]).run_sync("write")
    with Scratchpad(folder) as second:
        result = Agent(scripted([("read_file", {"path": "kept.md"})]),
                       toolsets=[toolset(second.for_agent("a"))]).run_sync("read")
        assert returns(result)[0][1]["content"] == "kept"
