"""The self-contained component in a real embedding (wasmtime-py, through the scratchpad-tools
package): what a kill -9 leaves, two processes on one folder, and the server's verdict on the
store.

The component comes from `scratchpad-mcp component --standalone`; a build without it (no C
compiler for WASI) skips these tests, unless SCRATCHPAD_REQUIRE_STANDALONE is set.
"""

import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import pytest
from helpers import WAIT_SECONDS, run_cli

from scratchpad_tools import Scratchpad, ToolError

HERE = pathlib.Path(__file__).resolve().parent

CHILD = HERE / "standalone_child.py"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """The self-contained component with the summariser import, written by the binary."""
    out = tmp_path_factory.mktemp("component") / "standalone.wasm"
    status, _, stderr = run_cli("component", "--standalone", "--out", out)
    if status != 0:
        if os.environ.get("SCRATCHPAD_REQUIRE_STANDALONE"):
            pytest.fail(f"SCRATCHPAD_REQUIRE_STANDALONE is set: {stderr}")
        pytest.skip(stderr.strip())
    return out


def child(mode, component, folder, *more):
    return subprocess.Popen([sys.executable, str(CHILD), mode, str(component), str(folder), *map(str, more)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def read(pad, path):
    return pad.call("read_file", {"agent_id": "a", "path": path})["content"]


def test_kill_9_loses_no_acknowledged_write(standalone, tmp_path):
    seed = int(os.environ.get("SCRATCHPAD_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    folder = tmp_path / "store"
    folder.mkdir()
    kills = [rng.randrange(5, 60) for _ in range(3)]
    print(f"SCRATCHPAD_SEED={seed}: {len(kills)} kills after {kills} acknowledged writes")
    acknowledged = []
    for round, after in enumerate(kills):
        writer = child("writer", standalone, folder, 1000 * round)
        for _ in range(after):
            line = writer.stdout.readline()
            assert line, "the writer died before it was killed"
            acknowledged.append(int(line))
        # It is writing the next one (or between two): kill it wherever it is.
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait()
        pad = Scratchpad(folder, component=standalone)  # waits out the dead writer's lease (5 s at most)
        for i in acknowledged:
            assert read(pad, f"n{i}.md") == f"content {i}\n"
        pad.close()
        status, _, stderr = run_cli("--db", folder / "scratchpad.db", "verify")
        assert status == 0, stderr
    assert len(acknowledged) == sum(kills)


def test_a_second_process_is_refused_clearly_while_the_first_holds_the_store(standalone, tmp_path):
    holder = child("holder", standalone, tmp_path)
    try:
        assert holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        pad = Scratchpad(tmp_path, component=standalone)
        with pytest.raises(ToolError) as refused:
            pad.call("get_usage_stats", {"agent_id": "a"})
        waited = time.monotonic() - started
        assert refused.value.kind == "storage", refused.value.kind
        assert "in use by another process" in str(refused.value), str(refused.value)
        assert 4 < waited < WAIT_SECONDS, f"waited {waited:.1f} s for the holder's lease"
        holder.stdin.close()
        assert holder.stdout.readline().strip() == "closed"
        # The holder closed the store: the folder is free at once, with its write in it.
        started = time.monotonic()
        assert read(pad, "nheld.md") == "content held\n"
        assert time.monotonic() - started < 2
        pad.close()
    finally:
        holder.kill()
        holder.wait()


def test_a_trapped_call_is_rolled_back_and_the_next_instance_carries_on(standalone, tmp_path):
    pad = Scratchpad(tmp_path, component=standalone)
    assert pad.call("write_file", {"agent_id": "a", "path": "big.md", "content": "small\n"})["version"] == 1
    # A 1 MiB write is far beyond this budget: the call traps.
    pad.fuel, budget = 200_000, pad.fuel
    big = "x\n" * (512 * 1024)
    with pytest.raises(ToolError, match="CPU budget") as stopped:
        pad.call("write_file", {"agent_id": "a", "path": "big.md", "content": big})
    assert stopped.value.kind == "trap"
    pad.fuel = budget
    started = time.monotonic()
    assert read(pad, "big.md") == "small\n", "the trapped write left nothing"
    assert time.monotonic() - started < 2, "the new instance resumed the lease at once"
    pad.close()
    status, _, stderr = run_cli("--db", tmp_path / "scratchpad.db", "verify")
    assert status == 0, stderr


def without_times(value):
    """An answer with its timestamps left out: the two stores write at different moments."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k not in ("updated_at", "created_at")}
    if isinstance(value, (list, tuple)):
        return [without_times(v) for v in value]
    return value


# One call of each kind, by MCP name and arguments, as an agent would make them.
SAME_CALLS = [
    ("write_file", {"agent_id": "a", "path": "plan.md", "content": "".join(f"step {i}\n" for i in range(40))}),
    ("write_file", {"agent_id": "a", "path": "plan.md", "content": "".join(f"step {i}{' done' if i == 7 else ''}\n" for i in range(40))}),
    ("read_file", {"agent_id": "a", "path": "plan.md", "since_version": 1}),
    ("read_file", {"agent_id": "a", "path": "plan.md", "offset": 3, "limit": 2}),
    ("edit_file", {"agent_id": "a", "path": "plan.md", "base_version": 2, "edits": [{"old": "step 9\n", "new": "step nine\n"}]}),
    ("file_history", {"agent_id": "a", "path": "plan.md"}),
    ("append_log", {"agent_id": "a", "path": "journal", "entry": "the quokka smiled"}),
    ("append_log", {"agent_id": "a", "path": "journal", "entry": {"seen": ["quokka"], "n": 2}}),
    ("read_log", {"agent_id": "a", "path": "journal"}),
    ("search", {"agent_id": "a", "query": "quokka"}),
    ("read_files", {"agent_id": "a", "paths": ["plan.md", "missing.md"]}),
    ("list_files", {"agent_id": "a"}),
    ("summarize_file", {"agent_id": "a", "path": "plan.md"}),
    ("forget_log", {"agent_id": "a", "path": "journal", "keep_last": 1}),
    ("delete_file", {"agent_id": "a", "path": "plan.md"}),
    ("get_usage_stats", {"agent_id": "a"}),
    # Errors: the text and whether it is one are the same too.
    ("read_file", {"agent_id": "a", "path": "plan.md"}),
    ("write_file", {"agent_id": "a", "path": "../up", "content": "x"}),
    ("write_file", {"agent_id": "a", "path": "x", "content": "x", "colour": "red"}),
]


def test_the_component_lists_and_answers_exactly_as_the_server(standalone, tmp_path, db):
    from conftest import connect, run
    from helpers import sdk_result

    async def server():
        async with connect(db, "legacy") as s:
            listed = [t.model_dump(by_alias=True, exclude_none=True) for t in (await s.client.list_tools()).tools]
            answers = []
            for tool, args in SAME_CALLS:
                answers.append(sdk_result(await s.client.call_tool(tool, args)))
            return listed, answers

    listed, served = run(server())
    pad = Scratchpad(tmp_path, component=standalone)
    assert pad.tools() == listed
    for (tool, args), (ok, answer) in zip(SAME_CALLS, served):
        try:
            got = (True, pad.call(tool, args))
        except ToolError as e:
            got = (False, str(e))
        assert without_times(got) == without_times((ok, answer)), (tool, args)
    pad.close()
