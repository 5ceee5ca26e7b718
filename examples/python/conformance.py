"""Runs the shared conformance cases in wasmtime-py.

    python conformance.py ../../tests/conformance/cases.json --standalone standalone.wasm --byo scratchpad.wasm

--standalone: the self-contained component through the scratchpad-tools package
(plugin/python) on real files, each group in a new folder, and restarted halfway (a new
Scratchpad on the same folder), so every answer after the restart comes from what the first
half left on disk.
--byo: the tool-logic component over memory_storage.MemoryStorage, the test double that holds
bring-your-own storage to the same contract.
"""

import argparse
import json
import sys
import tempfile

from wasmtime.component import Variant

from memory_storage import ByoScratchpad, MemoryStorage
from scratchpad_tools import Scratchpad, SummariserError
from wit_values import to_json, to_wit


class FixedSummariser:
    """The cases' summariser: a fixed answer, or not-configured in the groups that say so."""

    def __init__(self, configured=True):
        self.configured = configured

    def model(self):
        return "conformance-model"

    def summarise(self, request):
        if not self.configured:
            return Variant("not-configured", "no API key")
        return "A fixed summary."


def fixed_summary(configured):
    """The same summariser as the package's callback."""
    def summarise(_system, _prompt, _max_tokens):
        if not configured:
            raise SummariserError("not-configured", "no API key")
        return "A fixed summary."
    return summarise


class TypedPad:
    """The package's Scratchpad, called by the WIT names and values the cases use."""

    def __init__(self, pad):
        self.pad = pad

    def call(self, tool, *args):
        func = self.pad.export("tools", tool)
        ty = func.type()
        return to_json(ty.result, func(*[to_wit(t, a) for (_, t), a in zip(ty.params, args)]))

    def close(self):
        self.pad.close()


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


def run(cases, label, open_pad, restart):
    """Runs every group on pads from `open_pad(group)`; with `restart`, on a second pad from
    halfway. Returns the calls made, or None after printing the first mismatch."""
    calls = 0
    for group in cases["groups"]:
        pad = open_pad(group)
        half = len(group["steps"]) // 2
        for i, step in enumerate(group["steps"]):
            if restart and i == half:
                pad.close()
                pad = open_pad(group)
            got = pad.call(step["call"], *step["args"])
            if not matches(step["expect"], got):
                print(f"{label}: {group['name']} step {i} ({step['call']}):\n  want {json.dumps(step['expect'])}\n  got  {json.dumps(got)}")
                return None
            calls += 1
        pad.close()
    return calls


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases")
    parser.add_argument("--standalone", help="the self-contained component")
    parser.add_argument("--byo", help="the tool-logic component (bring your own storage)")
    args = parser.parse_args()
    cases = json.load(open(args.cases, encoding="utf-8"))
    for row in cases["matcher"]:
        assert matches(row["want"], row["got"]) == row["matches"], f"the matcher breaks the shared rule: {row}"
    steps = sum(len(group["steps"]) for group in cases["groups"])

    def summariser(group):
        return FixedSummariser(configured=group.get("summariser") != "not-configured")

    runs = []
    if args.byo:
        runs.append(("bring your own storage", lambda g: ByoScratchpad(args.byo, MemoryStorage(g.get("limits")), summariser(g)), False))
    if args.standalone:
        folders = tempfile.TemporaryDirectory()
        opened = {}

        def standalone(group):
            folder = opened.setdefault(group["name"], tempfile.mkdtemp(dir=folders.name))
            configured = group.get("summariser") != "not-configured"
            limits = {name.replace("-", "_"): value for name, value in (group.get("limits") or {}).items()}
            return TypedPad(Scratchpad(folder, component=args.standalone, summariser=fixed_summary(configured),
                                       summary_model="conformance-model", limits=limits))
        runs.append(("self-contained, on files, restarted halfway", standalone, True))
    assert runs, "name a component: --standalone, --byo or both"
    for label, open_pad, restart in runs:
        calls = run(cases, label, open_pad, restart)
        if calls is None:
            return 1
        assert calls == steps, f"{calls} of {steps} steps ran"
        print(f"conformance: {calls} calls, all as expected (Python, wasmtime-py, {label})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
