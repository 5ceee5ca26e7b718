"""The package's own API: calls, tools, agents bound or not, errors, persistence, limits,
bounds and the summariser callback, all on the real component over a real folder."""

import json
import threading

import pytest
from conftest import LONG

from scratchpad_tools import Scratchpad, SummariserError, ToolError


def test_a_call_answers_the_servers_structured_content(pad):
    lines = [f"line {i} of the plan\n" for i in range(50)]
    written = pad.call("write_file", {"agent_id": "a", "path": "plan.md", "content": "".join(lines)})
    assert written == {"path": "plan.md", "version": 1, "bytes": 990, "unchanged": False}
    lines[20] = "line 20, changed\n"
    pad.call("write_file", {"agent_id": "a", "path": "plan.md", "content": "".join(lines)})
    since = pad.call("read_file", {"agent_id": "a", "path": "plan.md", "since_version": 1})
    assert since["current_version"] == 2 and "content" not in since, since
    assert "line 20, changed" in json.dumps(since["diff"]), since


def test_tools_are_the_servers_list_and_each_is_callable(pad):
    tools = pad.tools()
    names = [t["name"] for t in tools]
    assert len(names) == 13 and "write_file" in names and "search" in names
    for tool in tools:
        assert set(tool) >= {"name", "description", "inputSchema"}, tool
        assert "agent_id" in tool["inputSchema"]["properties"], tool["name"]
    tools[0]["name"] = "changed"
    assert pad.tools()[0]["name"] != "changed", "tools() hands out its own copy"


def test_a_bound_agent_has_no_agent_id_and_cannot_name_another(pad):
    pad.call("write_file", {"agent_id": "other", "path": "secret.md", "content": "theirs"})
    planner = pad.for_agent("planner")
    for tool in planner.tools():
        assert "agent_id" not in tool["inputSchema"].get("properties", {}), tool["name"]
        assert "agent_id" not in tool["inputSchema"].get("required", []), tool["name"]
    with pytest.raises(ToolError) as refused:
        planner.call("read_file", {"agent_id": "other", "path": "secret.md"})
    assert refused.value.kind == "invalid-arguments"
    assert 'bound to agent "planner"' in str(refused.value)
    with pytest.raises(ToolError) as missing:
        planner.call("read_file", {"path": "secret.md"})
    assert missing.value.kind == "not-found", "the bound agent sees only its own files"
    assert planner.call("list_files", {})["files"] == []


def test_errors_carry_the_wit_case_and_the_servers_text(pad):
    cases = [
        ("nope", {}, "unknown-tool", 'unknown tool "nope"'),
        ("read_file", {"agent_id": "a"}, "invalid-arguments", "missing field `path`"),
        ("read_file", {"agent_id": "a", "path": "x"}, "not-found", 'no file at path "x"'),
        ("write_file", {"agent_id": "a", "path": "../x", "content": ""}, "invalid-argument", "../x"),
        ("write_file", {"agent_id": "a", "path": "x", "content": "", "expected_version": 3},
         "conflict", "version"),
    ]
    for tool, arguments, kind, text in cases:
        with pytest.raises(ToolError) as error:
            pad.call(tool, arguments)
        assert error.value.kind == kind, (tool, arguments, error.value.kind, str(error.value))
        assert text in str(error.value), (tool, str(error.value))
    assert pad.call("list_files", {"agent_id": "a"})["files"] == [], "a refused call changes nothing"


def test_arguments_that_are_no_json_object_are_refused_by_the_rule(pad):
    """An array used to be taken for the arguments in their order (a write, through a bound
    agent too), a string or number refused with a name from the code, NaN sent as a word JSON
    lacks, bytes raised as a TypeError: each is now a ToolError saying why."""
    planner = pad.for_agent("planner")
    object_rule = "the arguments must be one JSON object, of named arguments (got {})"
    cases = [
        (pad.call, ["a", "x", "written"], object_rule.format("an array")),
        (planner.call, [("path", "x"), ("content", "written")], object_rule.format("an array")),
        (pad.call, "x", object_rule.format("a string")),
        (planner.call, 5, object_rule.format("a number")),
        (planner.call, {"path": "x", "content": float("nan")}, "they are not JSON (Out of range float values"),
        (planner.call, {"path": "x", "content": b"bytes"}, "they are not JSON (Object of type bytes"),
        (planner.call, {"path": "x", "content": 5}, "content must be a string (got 5)"),
    ]
    for call, arguments, said in cases:
        with pytest.raises(ToolError) as refused:
            call("write_file", arguments)
        assert refused.value.kind == "invalid-arguments", (arguments, str(refused.value))
        assert str(refused.value).startswith(f"invalid arguments for write_file: {said}"), str(refused.value)
    assert pad.call("list_files", {"agent_id": "a"})["files"] == []
    assert planner.call("list_files")["files"] == [], "nothing was written"


def test_data_persists_across_a_new_scratchpad_on_the_folder(folder):
    with Scratchpad(folder) as first:
        first.call("write_file", {"agent_id": "a", "path": "kept.md", "content": "still here"})
        first.call("append_log", {"agent_id": "a", "path": "steps", "entry": "step one"})
    with Scratchpad(folder) as second:
        assert second.call("read_file", {"agent_id": "a", "path": "kept.md"})["content"] == "still here"
        assert [e["entry"] for e in second.call("read_log", {"agent_id": "a", "path": "steps"})["entries"]] == ["step one"]
    assert (folder / "scratchpad.db").is_file()


def test_limits_are_the_servers_names_and_unknown_ones_are_refused(folder):
    with Scratchpad(folder, limits={"max_write_bytes": 4}) as pad:
        with pytest.raises(ToolError) as big:
            pad.call("write_file", {"agent_id": "a", "path": "x", "content": "12345"})
        assert big.value.kind == "invalid-argument" and "4" in str(big.value), str(big.value)
    with pytest.raises(ValueError, match="unknown limit 'max_writes'"):
        Scratchpad(folder, limits={"max_writes": 4})
    with pytest.raises(ValueError, match="versions_kept must be a whole number"):
        Scratchpad(folder, limits={"versions_kept": -1})


def test_a_call_past_its_cpu_budget_is_stopped_and_changes_nothing(folder):
    with Scratchpad(folder, fuel=2_000_000) as pad:
        with pytest.raises(ToolError) as stopped:
            pad.call("write_file", {"agent_id": "a", "path": "x", "content": "y\n" * 100_000})
        assert stopped.value.kind == "trap" and "CPU budget" in str(stopped.value), str(stopped.value)
    with Scratchpad(folder) as pad:
        assert pad.call("list_files", {"agent_id": "a"})["files"] == []
        pad.call("write_file", {"agent_id": "a", "path": "x", "content": "fits"})


def test_calls_from_many_threads_are_taken_one_at_a_time(pad):
    errors = []

    def write(n):
        try:
            for i in range(10):
                pad.call("append_log", {"agent_id": "a", "path": "log", "entry": f"{n}-{i}"})
        except Exception as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert pad.call("get_usage_stats", {"agent_id": "a"})["log_entry_count"] == 40


def test_the_summariser_callback_is_asked_once_per_version(folder):
    asked = []

    def summarise(system, prompt, max_tokens):
        asked.append((system, prompt, max_tokens))
        return "A summary of the document."

    with Scratchpad(folder, summariser=summarise, summary_model="my-model") as pad:
        pad.call("write_file", {"agent_id": "a", "path": "doc.md", "content": LONG})
        first = pad.call("summarize_file", {"agent_id": "a", "path": "doc.md"})
        again = pad.call("summarize_file", {"agent_id": "a", "path": "doc.md"})
    assert first["summary"] == again["summary"] == "A summary of the document."
    assert len(asked) == 1, "the second answer came from the cache"
    assert "line 199" in asked[0][1] and asked[0][2] > 0


def test_without_a_summariser_summaries_are_not_configured(pad):
    pad.call("write_file", {"agent_id": "a", "path": "doc.md", "content": LONG})
    with pytest.raises(ToolError) as error:
        pad.call("summarize_file", {"agent_id": "a", "path": "doc.md"})
    assert error.value.kind == "summariser" and "needs a summariser" in str(error.value), str(error.value)


@pytest.mark.parametrize("raised, text", [
    (SummariserError("unavailable", "the model is overloaded"), "overloaded"),
    (RuntimeError("connection reset"), "connection reset"),
])
def test_a_failing_summariser_fails_the_call_not_the_process(folder, raised, text):
    def summarise(*_):
        raise raised

    with Scratchpad(folder, summariser=summarise) as pad:
        pad.call("write_file", {"agent_id": "a", "path": "doc.md", "content": LONG})
        with pytest.raises(ToolError) as error:
            pad.call("summarize_file", {"agent_id": "a", "path": "doc.md"})
        assert error.value.kind == "summariser" and text in str(error.value), str(error.value)
        assert pad.call("read_file", {"agent_id": "a", "path": "doc.md"})["current_version"] == 1


def test_plain_definitions_and_run(pad):
    from scratchpad_tools import definitions

    planner = pad.for_agent("planner")
    anthropic = definitions.anthropic(planner)
    assert {t["name"] for t in anthropic} == {t["name"] for t in pad.tools()}
    assert all("agent_id" not in t["input_schema"]["properties"] for t in anthropic)
    chat = definitions.openai(planner)
    assert [t["function"]["name"] for t in chat] == [t["name"] for t in anthropic]
    assert chat[0]["function"]["parameters"] == anthropic[0]["input_schema"]
    responses = definitions.openai_responses(planner)
    assert {(t["type"], t["name"], t["strict"]) for t in responses} == {("function", t["name"], False) for t in anthropic}
    text, failed = definitions.run(planner, "write_file", json.dumps({"path": "a", "content": "b"}))
    assert not failed and json.loads(text)["version"] == 1
    text, failed = definitions.run(planner, "read_file", "{not json")
    assert failed and text.startswith("error: invalid arguments for read_file: not JSON"), text
    text, failed = definitions.run(planner, "read_file", {"path": "missing"})
    assert failed and 'no file at path "missing"' in text, text
