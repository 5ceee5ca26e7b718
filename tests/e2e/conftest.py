"""End-to-end tests: the real binary, driven over real stdio by the official MCP Python SDK.

The binary is `SCRATCHPAD_BIN`, else `target/debug/scratchpad-mcp` (built by `cargo build`).
Every test runs in both protocol eras: the initialize handshake ("legacy"), and 2026-07-28
(stateless), both discovered ("auto", via server/discover) and pinned without discovery.
"""

import asyncio
import os
import pathlib
import shutil
import tempfile

import pytest
from mcp import Client, StdioServerParameters

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("SCRATCHPAD_BIN", ROOT / "target" / "debug" / "scratchpad-mcp"))
# One compiled-component cache for the whole run: Cranelift runs once, not once per start.
CACHE_DIR = tempfile.mkdtemp(prefix="scratchpad-e2e-cache-")
ERAS = ["legacy", "auto", "2026-07-28"]


def pytest_sessionfinish(session, exitstatus):
    """The cache is the run's own: leave nothing behind in the temporary directory."""
    shutil.rmtree(CACHE_DIR, ignore_errors=True)


def server(db, **env):
    """Parameters that start the server on `db` with only the environment given."""
    return StdioServerParameters(
        command=str(BINARY),
        args=["--db", str(db), "--cache-dir", CACHE_DIR],
        env={"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), **env},
    )


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
        result = await self.client.call_tool(tool, args)
        text = result.content[0].text if result.content else ""
        assert not result.is_error, f"{tool} {args} failed: {text}"
        return result.structured_content

    async def err(self, tool, **args):
        result = await self.client.call_tool(tool, args)
        assert result.is_error, f"{tool} {args} should fail, gave {result.structured_content}"
        return result.content[0].text


def connect(db, era, **env):
    """`async with connect(db, era) as s:` gives a Session."""

    class _Ctx:
        async def __aenter__(self):
            self.client = Client(server(db, **env), mode=era)
            return Session(await self.client.__aenter__())

        async def __aexit__(self, *exc):
            return await self.client.__aexit__(*exc)

    return _Ctx()


class RawServer:
    """The binary driven by hand over stdio: one request at a time, each after the previous
    answer, as an agent works. For tests that need the process itself (kill it, run several,
    read its stderr). stderr goes to a file: a pipe nobody reads would fill and stall it."""

    def __init__(self, db, errlog, *, log="warn", **env):
        import subprocess

        self.errlog = open(errlog, "a+")
        self.proc = subprocess.Popen(
            [str(BINARY), "--db", str(db), "--cache-dir", CACHE_DIR, "--log", log],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errlog, text=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        )
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "raw", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        import json

        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        """The JSON-RPC result, or None if the process died first."""
        import json

        self.next_id += 1
        try:
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            return None
        if not line:
            return None
        answer = json.loads(line)
        assert answer["id"] == self.next_id
        return answer["result"]

    def call(self, tool, **args):
        """(ok, structured content or error text), or None if the process died first."""
        result = self.request("tools/call", {"name": tool, "arguments": args})
        if result is None:
            return None
        if result.get("isError"):
            return False, result["content"][0]["text"]
        return True, result["structuredContent"]

    def read_whole(self, agent, path):
        """A file's content read part by part, following the cursors, as a client would for a
        file too long for one answer; or (False, error)."""
        content, cursor = "", {}
        while True:
            ok, part = self.call("read_file", agent_id=agent, path=path, **cursor)
            if not ok:
                return False, part
            content += part["content"]
            if part.get("next_line") is None:
                return True, content
            cursor = {"offset": part["next_line"]}
            if part.get("next_column") is not None:
                cursor["column"] = part["next_column"]

    @staticmethod
    def binary():
        return BINARY

    def stderr(self):
        self.errlog.flush()
        self.errlog.seek(0)
        return self.errlog.read()

    def close(self):
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        return self.proc.stdout.read()

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=30)
