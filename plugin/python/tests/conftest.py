"""The package's tests run on the component it carries, or on SCRATCHPAD_TOOLS_WASM (what
scripts/test points at the one it just built)."""

import pytest

from scratchpad_tools import Scratchpad


@pytest.fixture
def folder(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def pad(folder):
    pad = Scratchpad(folder)
    yield pad
    pad.close()


#: A document long enough to need a summary (over 8,000 characters).
LONG = "".join(f"line {i}: the scratchpad keeps what an agent has already read\n" for i in range(200))
