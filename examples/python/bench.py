"""Times the self-contained component in wasmtime-py: start to first result, then write_file
and read_file since a version per call (a 50-line file, one line changed per write).

    python bench.py standalone.wasm [CALLS]
"""

import statistics
import sys
import tempfile
import time

from scratchpad import Scratchpad


def lines(changed):
    return "".join(f"line {i} of the plan{' (changed)' if i == changed else ''}\n" for i in range(1, 51))


def main(wasm, calls="300"):
    calls = int(calls)
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        pad = Scratchpad(wasm, folder)
        first = pad.call("get-usage-stats", "bench")
        start_ms = (time.perf_counter() - started) * 1000
        assert first["tag"] == "ok", first
        pad.call("write-file", {"agent-id": "bench", "path": "plan.md", "content": lines(0), "expected-version": None})
        writes, reads = [], []
        for n in range(calls):
            t = time.perf_counter()
            w = pad.call("write-file", {"agent-id": "bench", "path": "plan.md", "content": lines(n % 50 + 1),
                                        "expected-version": None})
            writes.append(time.perf_counter() - t)
            assert w["tag"] == "ok", w
            t = time.perf_counter()
            r = pad.call("read-file", {"agent-id": "bench", "path": "plan.md", "since-version": w["val"]["version"] - 1,
                                       "full-diff": False, "offset": None, "limit": None, "column": None})
            reads.append(time.perf_counter() - t)
            assert r["tag"] == "ok" and r["val"]["body"]["tag"] == "diff", r
        pad.close()
    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    print(f"wasmtime-py: start to first result {start_ms:.0f} ms (compiling included); "
          f"write_file {ms(writes):.2f} ms, read_file since a version {ms(reads):.2f} ms (medians of {calls})")


if __name__ == "__main__":
    main(*sys.argv[1:])
