"""Runs the shared conformance cases against the component in wasmtime-py.

    python conformance.py scratchpad.wasm ../../tests/conformance/cases.json
"""

import json
import sys

from scratchpad import FixedSummariser, MemoryStorage, Scratchpad


def matches(want, got):
    """The cases' matching rule (see their "about"): "*" matches anything, objects key for
    key, arrays item by item, a number only an equal integer."""
    if want == "*":
        return True
    if isinstance(want, dict) and isinstance(got, dict):
        return want.keys() == got.keys() and all(matches(want[k], got[k]) for k in want)
    if isinstance(want, list) and isinstance(got, list):
        return len(want) == len(got) and all(matches(w, g) for w, g in zip(want, got))
    if isinstance(want, int) and not isinstance(want, bool):
        return isinstance(got, int) and not isinstance(got, bool) and want == got
    return type(want) is type(got) and want == got


def main(wasm, cases_file):
    cases = json.load(open(cases_file, encoding="utf-8"))
    for row in cases["matcher"]:
        assert matches(row["want"], row["got"]) == row["matches"], f"the matcher breaks the shared rule: {row}"
    steps = sum(len(group["steps"]) for group in cases["groups"])
    calls = 0
    for group in cases["groups"]:
        summariser = FixedSummariser(configured=group.get("summariser") != "not-configured")
        pad = Scratchpad(wasm, MemoryStorage(group.get("limits")), summariser)
        for i, step in enumerate(group["steps"]):
            got = pad.call(step["call"], *step["args"])
            if not matches(step["expect"], got):
                print(f"{group['name']} step {i} ({step['call']}):\n  want {json.dumps(step['expect'])}\n  got  {json.dumps(got)}")
                return 1
            calls += 1
    assert calls == steps, f"{calls} of {steps} steps ran"
    print(f"conformance: {calls} calls, all as expected (Python, wasmtime-py)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
