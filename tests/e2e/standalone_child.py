"""A second process for test_standalone.py: the self-contained component in wasmtime-py,
through the scratchpad-tools package.

    python standalone_child.py writer COMPONENT FOLDER START  # writes nSTART.md, ... printing each id once acknowledged
    python standalone_child.py holder COMPONENT FOLDER   # holds the store, calling every 0.2 s, until stdin closes
"""

import select
import sys

from scratchpad_tools import Scratchpad


def write(pad, i):
    pad.call("write_file", {"path": f"n{i}.md", "content": f"content {i}\n"})


def main(mode, component, folder, start="0"):
    store = Scratchpad(folder, component=component)
    pad = store.for_agent("a")
    if mode == "writer":
        i = int(start)
        while True:
            write(pad, i)
            print(i, flush=True)
            i += 1
    write(pad, "held")
    print("holding", flush=True)
    while not select.select([sys.stdin], [], [], 0.2)[0]:
        pad.call("get_usage_stats")
    store.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
