"""Times the self-contained component through the scratchpad-tools package (wasmtime-py), and
under `wasmtime run` (one process per call): start to first result, then write_file and
read_file since a version per call (a 50-line file, one line changed per write), by MCP name
and arguments as an agent calls them. Prints rows of `scripts/bench`'s table, beside the
native server's rows over stdio from the same run.

    python bench.py standalone.wasm [CALLS] [--wasmtime CLI standalone-wasi.wasm]
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time


def lines(changed):
    return "".join(f"line {i} of the plan{' (changed)' if i == changed else ''}\n" for i in range(1, 51))


def row(what, figure, reference):
    print(f"| {what} | {figure} | {reference} |")


def ms(seconds):
    return f"{seconds * 1000:.2f} ms"


def package(wasm, calls):
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        from scratchpad_tools import Scratchpad

        store = Scratchpad(folder, component=wasm)
        pad = store.for_agent("bench")
        pad.call("get_usage_stats")
        start = time.perf_counter() - started
        pad.call("write_file", {"path": "plan.md", "content": lines(0)})
        writes, reads = [], []
        for n in range(calls):
            t = time.perf_counter()
            w = pad.call("write_file", {"path": "plan.md", "content": lines(n % 50 + 1)})
            writes.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = pad.call("read_file", {"path": "plan.md", "since_version": w["version"] - 1})
            reads.append(time.perf_counter() - t)
            assert "diff" in r, r
        store.close()
    row("Python package: start to first result", ms(start), "import and instantiation; compiled code from wasmtime's cache (warm)")
    row("Python package: write_file (50 lines, one changed)", ms(statistics.median(writes)), f"p50 of {calls}; beside the server's write_file row")
    row("Python package: read_file since a version", ms(statistics.median(reads)), f"p50 of {calls}; beside the server's read_file row")


def wasmtime_run(cli, wasm, calls):
    def invoke(folder, tool, arguments):
        call = f"call({json.dumps(tool)}, {json.dumps(json.dumps(arguments))})"
        t = time.perf_counter()
        done = subprocess.run([cli, "run", "--env", "SCRATCHPAD_LEASE_TOKEN=1", "--dir", f"{folder}::/store",
                               "--invoke", call, wasm], capture_output=True, text=True, check=True)
        assert done.stdout.startswith("ok("), done.stdout
        return time.perf_counter() - t

    with tempfile.TemporaryDirectory() as folder:
        invoke(folder, "write_file", {"agent_id": "bench", "path": "plan.md", "content": lines(0)})
        writes = [invoke(folder, "write_file", {"agent_id": "bench", "path": "plan.md", "content": lines(n % 50 + 1)})
                  for n in range(calls)]
        reads = [invoke(folder, "read_file", {"agent_id": "bench", "path": "plan.md", "since_version": calls})
                 for _ in range(calls)]
    row("`wasmtime run`: write_file, a process per call", ms(statistics.median(writes)), f"p50 of {calls}; process start and instantiation included")
    row("`wasmtime run`: read_file since a version, a process per call", ms(statistics.median(reads)), f"p50 of {calls}")


def main(wasm, calls="300", *more):
    calls = int(calls)
    package(wasm, calls)
    if more[:1] == ("--wasmtime",):
        wasmtime_run(more[1], more[2], max(calls // 10, 5))


if __name__ == "__main__":
    main(*sys.argv[1:])
