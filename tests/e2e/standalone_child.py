"""A second process for test_standalone.py: the self-contained component in wasmtime-py.

    python standalone_child.py writer COMPONENT FOLDER START  # writes nSTART.md, ... printing each id once acknowledged
    python standalone_child.py holder COMPONENT FOLDER   # holds the store, calling every 0.2 s, until stdin closes
"""

import pathlib
import select
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
from scratchpad import Scratchpad  # noqa: E402


def write_args(i):
    return {"agent-id": "a", "path": f"n{i}.md", "content": f"content {i}\n", "expected-version": None}


def main(mode, component, folder, start="0"):
    pad = Scratchpad(component, folder)
    if mode == "writer":
        i = int(start)
        while True:
            answer = pad.call("write-file", write_args(i))
            assert answer["tag"] == "ok", answer
            print(i, flush=True)
            i += 1
    answer = pad.call("write-file", write_args("held"))
    assert answer["tag"] == "ok", answer
    print("holding", flush=True)
    while not select.select([sys.stdin], [], [], 0.2)[0]:
        assert pad.call("get-usage-stats", "a")["tag"] == "ok"
    pad.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
