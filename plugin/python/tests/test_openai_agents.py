"""The OpenAI Agents SDK tools, driven by the SDK's own Runner with a scripted model (the
SDK's `Model` interface, answering with the Responses API's items): real tool calls, a real
store, no network."""

import json

import pytest

pytest.importorskip("agents")

from agents import Agent, ModelResponse, Runner, Usage, set_tracing_disabled  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from openai.types.responses import (  # noqa: E402
    ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText,
)

from scratchpad_tools import Scratchpad  # noqa: E402
from scratchpad_tools.openai_agents import tools  # noqa: E402

set_tracing_disabled(True)


class Scripted(Model):
    """Makes each turn's tool calls in order, then answers "done"; keeps what the tools said."""

    def __init__(self, *turns):
        self.turns, self.outputs = list(turns), []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                           handoffs, tracing, **_):
        if isinstance(input, list):
            self.outputs = [item["output"] for item in input
                            if isinstance(item, dict) and item.get("type") == "function_call_output"]
        if self.turns:
            calls = [ResponseFunctionToolCall(type="function_call", call_id=f"call-{i}-{len(self.turns)}",
                                              name=name, arguments=json.dumps(args))
                     for i, (name, args) in enumerate(self.turns.pop(0))]
            return ModelResponse(output=calls, usage=Usage(), response_id=None)
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(id="m", type="message", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the tests run the agent without streaming")


def run(pad, *turns):
    model = Scripted(*turns)
    result = Runner.run_sync(Agent(name="planner", model=model, tools=tools(pad)), "go", max_turns=len(turns) + 2)
    return result, model.outputs


def test_every_tool_is_offered_with_the_components_schema(pad):
    planner = pad.for_agent("planner")
    offered = {t.name: t for t in tools(planner)}
    assert set(offered) == {t["name"] for t in pad.tools()}
    for definition in planner.tools():
        assert offered[definition["name"]].params_json_schema == definition["inputSchema"]
        assert offered[definition["name"]].strict_json_schema is False


def test_every_tool_is_callable_through_the_runner(pad):
    planner = pad.for_agent("planner")
    calls = [
        ("write_file", {"path": "plan.md", "content": "one\ntwo\n"}),
        ("edit_file", {"path": "plan.md", "base_version": 1, "edits": [{"old": "two", "new": "three"}]}),
        ("read_file", {"path": "plan.md"}),
        ("read_files", {"paths": ["plan.md"]}),
        ("file_history", {"path": "plan.md"}),
        ("search", {"query": "three"}),
        ("append_log", {"path": "steps", "entry": "edited"}),
        ("read_log", {"path": "steps"}),
        ("list_files", {}),
        ("summarize_file", {"path": "plan.md"}),
        ("get_usage_stats", {}),
        ("forget_log", {"path": "steps"}),
        ("delete_file", {"path": "plan.md"}),
    ]
    assert {name for name, _ in calls} == {t["name"] for t in pad.tools()}
    result, outputs = run(planner, *[[call] for call in calls])
    assert result.final_output == "done"
    assert len(outputs) == len(calls)
    failed = [(name, out) for (name, _), out in zip(calls, outputs) if out.startswith("error: ")]
    assert failed == [], failed
    assert json.loads(outputs[2])["content"] == "one\nthree\n"


def test_errors_reach_the_model_as_tool_output_and_the_run_goes_on(pad):
    planner = pad.for_agent("planner")
    result, outputs = run(planner,
                          [("read_file", {"path": "missing.md"})],
                          [("read_file", {"path": "x", "agent_id": "other"})],
                          [("write_file", {"path": "x"})])
    assert result.final_output == "done"
    assert outputs[0] == 'error: no file at path "missing.md" for agent "planner"'
    assert 'bound to agent "planner"' in outputs[1]
    assert outputs[2].startswith("error: invalid arguments for write_file: missing field `content`"), outputs[2]


def test_a_bound_agent_cannot_reach_another_agents_data(pad):
    pad.call("write_file", {"agent_id": "other", "path": "secret.md", "content": "theirs"})
    _, outputs = run(pad.for_agent("planner"), [("read_file", {"path": "secret.md"}), ("list_files", {})])
    assert outputs[0].startswith("error: no file"), outputs
    assert json.loads(outputs[1])["files"] == []


def test_data_persists_for_new_tools_on_the_same_folder(folder):
    with Scratchpad(folder) as first:
        run(first.for_agent("a"), [("write_file", {"path": "kept.md", "content": "kept"})])
    with Scratchpad(folder) as second:
        _, outputs = run(second.for_agent("a"), [("read_file", {"path": "kept.md"})])
    assert json.loads(outputs[0])["content"] == "kept"
