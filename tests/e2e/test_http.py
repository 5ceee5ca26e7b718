"""Hosted mode: the binary serving Streamable HTTP, driven by the official SDK's HTTP client,
with real API keys, a real port on loopback and real refusals."""

import json
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import BINARY, CACHE_DIR, run

ENV = {"PATH": "/usr/bin:/bin"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(config, *args):
    done = subprocess.run([str(BINARY), "--config", str(config), *map(str, args)],
                          capture_output=True, text=True, env=ENV, timeout=60)
    return done.returncode, done.stdout.strip(), done.stderr


def wait_for(condition, seconds=5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


class Hosted:
    """A server on a free loopback port, with keys made by `keys add`.

    `store` is the flags that choose the store (a SQLite file in `tmp_path` unless given);
    `like` is another instance whose config and keys this one shares, as a second instance
    of one deployment would."""

    def __init__(self, tmp_path, extra="", store=None, like=None):
        if like is not None:
            self.config, self.keys = like.config, like.keys
        else:
            self.config = tmp_path / "config.toml"
            self.config.write_text(extra)
            self.keys = {}
            for name, args in [("rw", ["--agent", "a"]), ("ro", ["--agent", "a", "--read-only"]),
                               ("b", ["--agent", "b"])]:
                status, key, err = cli(self.config, "keys", "add", name, *args)
                assert status == 0, err
                self.keys[name] = key
        self.db = tmp_path / "s.db"
        self.store = store or ["--db", str(self.db)]
        self.log = open(tmp_path / f"server-{id(self)}.log", "a+")
        self.start()

    def start(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [str(BINARY), "--config", str(self.config), *self.store, "--cache-dir", CACHE_DIR,
             "--log", "info", "--log-format", "json", "serve", "--http", f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=self.log, env=ENV)
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"{self.url}/health", timeout=1).read() == b"ok\n":
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("the server did not come up")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def client(self, key, era="legacy"):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        transport = streamable_http_client(f"{self.url}/mcp", http_client=create_mcp_http_client(headers=headers))
        return Client(transport, mode=era)

    def post(self, headers):
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        request = urllib.request.Request(f"{self.url}/mcp", data=body.encode(), method="POST", headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()


@pytest.fixture
def hosted(tmp_path):
    h = Hosted(tmp_path)
    yield h
    h.stop()


async def call(client, tool, **args):
    result = await client.call_tool(tool, args)
    text = result.content[0].text if result.content else ""
    return (not result.is_error), (text if result.is_error else result.structured_content)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_the_stdio_scenarios_work_over_http(hosted, era):
    old = "".join(f"line {i}\n" for i in range(1, 301))
    new = old.replace("line 150\n", "line one-fifty\n")

    async def go():
        async with hosted.client(hosted.keys["rw"], era) as c:
            assert (await call(c, "write_file", agent_id="a", path="doc.md", content=old))[0]
            assert (await call(c, "write_file", agent_id="a", path="doc.md", content=new))[0]
            ok, diff = await call(c, "read_file", agent_id="a", path="doc.md", since_version=1)
            assert ok and [ch["op"] for ch in diff["diff"]] == ["skip", "equal", "remove", "add", "equal", "skip"]
            ok, found = await call(c, "search", agent_id="a", query="one fifty")
            assert ok and found["hits"][0]["lines"][0]["line"] == 150
            assert (await call(c, "append_log", agent_id="a", path="log", entry={"did": "x"}))[0]
            ok, usage = await call(c, "get_usage_stats", agent_id="a")
            assert ok and usage["file_count"] == 1

    run(go())


def test_the_key_decides_who_you_are_and_what_you_may_do(hosted):
    async def go():
        async with hosted.client(hosted.keys["rw"]) as c:
            assert (await call(c, "write_file", agent_id="a", path="f", content="mine"))[0]
            ok, e = await call(c, "read_file", agent_id="b", path="f")
            assert not ok and e == 'this key ("rw") acts for agent a; it cannot act for agent "b"', e
            resources = await c.list_resources()
            assert [str(r.uri) for r in resources.resources] == ["scratchpad://a/f"]
        async with hosted.client(hosted.keys["b"]) as c:
            assert (await call(c, "write_file", agent_id="b", path="g", content="b's"))[0]
            assert [str(r.uri) for r in (await c.list_resources()).resources] == ["scratchpad://b/g"]
        async with hosted.client(hosted.keys["ro"]) as c:
            ok, e = await call(c, "write_file", agent_id="a", path="f", content="nope")
            assert not ok and e == 'this key ("ro") is read-only; the tool changes data', e
            ok, whole = await call(c, "read_file", agent_id="a", path="f")
            assert ok and whole["content"] == "mine"

    run(go())
    log = open(hosted.log.name).read()
    for key in hosted.keys.values():
        assert key not in log, "a key reached the log"
    assert '"agent":"a"' in log and '"tool":"write_file"' in log


def test_no_key_a_wrong_key_a_revoked_key_and_a_bad_origin_are_refused(hosted):
    assert hosted.post({})[0] == 401
    assert hosted.post({"Authorization": "Bearer sk-scratchpad-guess"})[0] == 401
    good = {"Authorization": f"Bearer {hosted.keys['b']}"}
    assert hosted.post(good)[0] == 200
    assert hosted.post({**good, "Origin": "http://evil.example"})[0] == 403
    # A page served from this machine is not a rebinding attack.
    assert hosted.post({**good, "Origin": f"http://localhost:{hosted.port}"})[0] == 200
    # Keys are read again on SIGHUP: a revoked key is refused, a new one let in, no restart.
    status, _, err = cli(hosted.config, "keys", "revoke", "b")
    assert status == 0, err
    status, new_key, err = cli(hosted.config, "keys", "add", "b2", "--agent", "b")
    assert status == 0, err
    assert hosted.post({"Authorization": f"Bearer {new_key}"})[0] == 401
    pid = hosted.proc.pid
    hosted.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: hosted.post(good)[0] == 401)
    assert hosted.post({"Authorization": f"Bearer {new_key}"})[0] == 200
    assert hosted.proc.pid == pid and hosted.proc.poll() is None
    # A broken config file leaves the keys in force as they were.
    text = hosted.config.read_text()
    hosted.config.write_text(text + "\n[[http.keys]]\nname = 1\n")
    hosted.proc.send_signal(signal.SIGHUP)
    assert wait_for(lambda: "API keys not read again" in open(hosted.log.name).read())
    assert hosted.post({"Authorization": f"Bearer {new_key}"})[0] == 200
    hosted.config.write_text(text)
    metrics = urllib.request.urlopen(f"{hosted.url}/metrics").read().decode()
    assert "# TYPE scratchpad_tool_calls_total counter" in metrics


def test_health_and_metrics_need_no_key_and_count_calls(hosted):
    async def go():
        async with hosted.client(hosted.keys["rw"]) as c:
            await call(c, "list_files", agent_id="a")
            await call(c, "list_files", agent_id="b")

    run(go())
    metrics = urllib.request.urlopen(f"{hosted.url}/metrics").read().decode()
    assert 'scratchpad_tool_calls_total{tool="list_files",outcome="ok"} 1' in metrics, metrics
    assert 'scratchpad_tool_calls_total{tool="list_files",outcome="refused"} 1' in metrics, metrics


def test_an_agent_over_its_rate_is_told_to_wait(tmp_path):
    h = Hosted(tmp_path, "[http]\ncalls_per_second = 1.0\nburst = 2\n")
    try:
        async def go():
            async with h.client(h.keys["rw"]) as c:
                results = [await call(c, "list_files", agent_id="a") for _ in range(3)]
                assert [ok for ok, _ in results] == [True, True, False]
                assert results[2][1].startswith('rate limit: agent "a" may make 1 calls a second; retry in '), results[2]
        run(go())
    finally:
        h.stop()


def test_it_will_not_start_without_a_key(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[http]\nlisten = \"127.0.0.1:9\"\n")
    status, _, err = cli(config, "--db", tmp_path / "s.db", "serve", "--http")
    assert status == 2 and "serve --http needs at least one API key" in err, err
