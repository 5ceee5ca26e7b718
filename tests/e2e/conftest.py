"""End-to-end tests: the real binary, driven over real stdio (and HTTP) by the official MCP
Python SDK. The shared helpers are in `helpers.py`; this file holds the fixtures.

Every SDK test over stdio runs in both protocol eras: the initialize handshake ("legacy"),
and 2026-07-28 (stateless), both discovered ("auto", via server/discover) and pinned without
discovery.
"""

import asyncio
import os
import shutil
import subprocess
import uuid

import pytest
from helpers import CACHE_DIR, Hosted, sdk_result, stdio_server
from mcp import Client

ERAS = ["legacy", "auto", "2026-07-28"]


def pytest_sessionfinish(session, exitstatus):
    """The cache is the run's own: leave nothing behind in the temporary directory."""
    shutil.rmtree(CACHE_DIR, ignore_errors=True)


@pytest.fixture(params=ERAS)
def era(request):
    return request.param


@pytest.fixture
def db(tmp_path):
    return tmp_path / "scratch.db"


def run(coroutine):
    return asyncio.run(coroutine)


class Session:
    """A connected client with helpers that unwrap tool results."""

    def __init__(self, client):
        self.client = client

    async def ok(self, tool, **args):
        ok, answer = sdk_result(await self.client.call_tool(tool, args))
        assert ok, f"{tool} {args} failed: {answer}"
        return answer

    async def err(self, tool, **args):
        ok, answer = sdk_result(await self.client.call_tool(tool, args))
        assert not ok, f"{tool} {args} should fail, gave {answer}"
        return answer


def connect(db, era, **env):
    """`async with connect(db, era) as s:` gives a Session."""

    class _Ctx:
        async def __aenter__(self):
            self.client = Client(stdio_server(db, **env), mode=era)
            return Session(await self.client.__aenter__())

        async def __aexit__(self, *exc):
            return await self.client.__aexit__(*exc)

    return _Ctx()


@pytest.fixture
def hosted(tmp_path):
    h = Hosted(tmp_path)
    yield h
    h.stop()


def psql(url, sql):
    done = subprocess.run(["psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def database():
    """A PostgreSQL database of this test's own, on the server SCRATCHPAD_TEST_POSTGRES names
    (a role that may create databases); dropped after. Without it the test is skipped, unless
    SCRATCHPAD_REQUIRE_POSTGRES is set (CI sets it), in which case it fails."""
    admin = os.environ.get("SCRATCHPAD_TEST_POSTGRES")
    if not admin:
        assert not os.environ.get("SCRATCHPAD_REQUIRE_POSTGRES"), \
            "SCRATCHPAD_REQUIRE_POSTGRES is set, but SCRATCHPAD_TEST_POSTGRES is not"
        pytest.skip('needs PostgreSQL: run `eval "$(./scripts/test-postgres)"` first')
    name = f"sp_e2e_{uuid.uuid4().hex[:12]}"
    psql(admin, f"CREATE DATABASE {name}")
    base, _, query = admin.partition("?")
    scheme, _, rest = base.partition("://")
    server = rest.split("/", 1)[0]
    yield f"{scheme}://{server}/{name}" + (f"?{query}" if query else "")
    psql(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
