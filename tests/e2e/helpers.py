"""What every end-to-end test shares, written once: the binary's command line, the server
started over stdio or HTTP or run as a one-shot subcommand, raw JSON-RPC, the unwrapping of
tool results, worker threads whose failures fail the test, and the Anthropic stand-in.

The binary is `SCRATCHPAD_BIN`, else `target/debug/scratchpad-mcp` (built by `cargo test`, as
`scripts/test` runs it, or by `cargo build`).
"""

import json
import os
import pathlib
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = pathlib.Path(__file__).resolve().parents[2]
BINARY = pathlib.Path(os.environ.get("SCRATCHPAD_BIN", ROOT / "target" / "debug" / "scratchpad-mcp"))
# One compiled-component cache for the whole run: Cranelift runs once, not once per start.
# conftest.py removes it when the run ends.
CACHE_DIR = tempfile.mkdtemp(prefix="scratchpad-e2e-cache-")
# How long any wait in these tests may last before it fails the test instead of hanging.
WAIT_SECONDS = 120


def environment(**env):
    """The little a client passes a server (stdio clients pass a few variables), plus `env`."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"), **env}


def command(*args, cache=True):
    """The binary's argument list: every start-up goes through here."""
    cached = ["--cache-dir", CACHE_DIR] if cache else []
    return [str(BINARY), *cached, *map(str, args)]


def run_cli(*args, env=None, input=None, cache=True, timeout=WAIT_SECONDS):
    """Runs the binary once to its end: (exit status, stdout, stderr)."""
    done = subprocess.run(command(*args, cache=cache), capture_output=True, text=True, input=input,
                          env=environment(**(env or {})), timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def stdio_server(db, **env):
    """The SDK's parameters for a server on SQLite file `db` with only the environment given."""
    argv = command("--db", db)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=environment(**env))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition, what, seconds=WAIT_SECONDS, every=0.02):
    """Waits for `condition()` to hold; fails the test, naming `what`, when it never does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


class Workers:
    """Threads whose failures are the test's: an exception in any of them is raised by
    `join`, and a thread still running at its deadline fails the test instead of hanging it."""

    def __init__(self):
        self.threads, self.errors = [], []

    def start(self, target, *args):
        def guarded():
            try:
                target(*args)
            except BaseException as e:  # noqa: BLE001 — re-raised by join, in the test
                self.errors.append(e)

        thread = threading.Thread(target=guarded, daemon=True)
        self.threads.append(thread)
        thread.start()
        return thread

    def failed(self):
        return bool(self.errors)

    def join(self, seconds=WAIT_SECONDS):
        deadline = time.monotonic() + seconds
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t for t in self.threads if t.is_alive()]
        if self.errors:
            raise self.errors[0]
        assert not stuck, f"{len(stuck)} worker thread(s) still running after {seconds} s"


def message(method, params=None, id=None):
    """A JSON-RPC message: a request with an `id`, else a notification."""
    m = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        m["id"] = id
    if params is not None:
        m["params"] = params
    return m


INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {},
              "clientInfo": {"name": "raw", "version": "0"}}


def unwrap(is_error, text, structured):
    """A tool result as (ok, payload): the structured content, or the error text."""
    return (False, text) if is_error else (True, structured)


def sdk_result(result):
    """(ok, payload) of a tool result from the MCP SDK."""
    text = result.content[0].text if result.content else ""
    return unwrap(result.is_error, text, result.structured_content)


def raw_result(result):
    """(ok, payload) of a raw JSON-RPC `tools/call` result."""
    content = result.get("content") or [{}]
    return unwrap(result.get("isError", False), content[0].get("text", ""), result.get("structuredContent"))


class ServerDied(AssertionError):
    """The server process ended while a test was talking to it."""


class RawServer:
    """The binary driven by hand over stdio: one request at a time, each after the previous
    answer, as an agent works. For tests that need the process itself (kill it, run several,
    read its stderr). stderr goes to a file: a pipe nobody reads would fill and stall it.

    A process that dies under a call raises `ServerDied`, unless the test killed it itself
    (`kill`), in which case the call answers None. `store` replaces `--db db` (a database URL)."""

    def __init__(self, db, errlog, *, log="warn", store=None, **env):
        self.errlog = open(errlog, "a+")
        self.killed = False
        self.proc = subprocess.Popen(
            command(*(store or ["--db", db]), "--log", log), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errlog, text=True, env=environment(**env))
        self.next_id = 0
        assert self.request("initialize", INITIALIZE) is not None, "the server answered initialize"
        self.send(message("notifications/initialized"))

    def send(self, m):
        self.proc.stdin.write(json.dumps(m) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        """The JSON-RPC result of one request; None if this test killed the server first."""
        self.next_id += 1
        try:
            self.send(message(method, params, self.next_id))
            line = self.proc.stdout.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            if self.killed:
                return None
            status = self.proc.wait(timeout=WAIT_SECONDS)
            raise ServerDied(f"the server exited with status {status} during {method}; "
                             f"stderr:\n{self.stderr()[-2000:]}")
        answer = json.loads(line)
        assert answer["id"] == self.next_id, answer
        assert "error" not in answer, answer["error"]
        return answer["result"]

    def call(self, tool, **args):
        """(ok, structured content or error text), or None if this test killed the server."""
        result = self.request("tools/call", {"name": tool, "arguments": args})
        return None if result is None else raw_result(result)

    def ok(self, tool, **args):
        """The structured content of a call that must succeed."""
        ok, answer = self.call(tool, **args)
        assert ok, f"{tool} {args} failed: {answer}"
        return answer

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

    def stderr(self):
        self.errlog.flush()
        self.errlog.seek(0)
        return self.errlog.read()

    def close(self):
        """Closes stdin, as a client does; the server must exit cleanly, without a panic.
        Returns what it wrote to stdout after the last answer."""
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        status = self.proc.wait(timeout=WAIT_SECONDS)
        rest = self.proc.stdout.read()
        assert status == 0, f"the server exited with status {status}; stderr:\n{self.stderr()[-2000:]}"
        assert "panicked" not in self.stderr(), self.stderr()[-2000:]
        return rest

    def kill(self):
        """kill -9, on purpose: calls in flight answer None from now on."""
        self.killed = True
        self.proc.kill()
        self.proc.wait(timeout=WAIT_SECONDS)


def http_post(url, body, headers=None):
    """POSTs raw JSON-RPC (or any JSON; bytes as they are) to `url`: (status, response
    headers, body text)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class Hosted:
    """A server on a free loopback port, with keys made by `keys add`.

    `store` is the flags that choose the store (a SQLite file in `tmp_path` unless given);
    `like` is another instance whose config and keys this one shares, as a second instance
    of one deployment would; `port` a port to listen on, when the config must name it.
    `env` is what the next `start` adds to the environment."""

    KEYS = [("rw", ["--agent", "a"]), ("ro", ["--agent", "a", "--read-only"]), ("b", ["--agent", "b"])]

    def __init__(self, tmp_path, extra="", store=None, like=None, port=None):
        if like is not None:
            self.config, self.keys = like.config, like.keys
        else:
            self.config = tmp_path / "config.toml"
            self.config.write_text(extra)
            self.keys = {}
            for name, args in self.KEYS:
                status, key, err = self.cli("keys", "add", name, *args)
                assert status == 0, err
                self.keys[name] = key
        self.db = tmp_path / "s.db"
        self.store = store or ["--db", str(self.db)]
        self.log = open(tmp_path / f"server-{id(self)}.log", "a+")
        self.env = {}
        self.fixed_port = port
        self.start()

    def cli(self, *args):
        """Runs a subcommand on this deployment's config: (status, stdout stripped, stderr)."""
        status, out, err = run_cli("--config", self.config, *args, cache=False)
        return status, out.strip(), err

    def start(self):
        self.port = self.fixed_port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            command("--config", self.config, *self.store, "--log", "info", "--log-format", "json",
                    "serve", "--http", f"127.0.0.1:{self.port}"),
            stdout=subprocess.DEVNULL, stderr=self.log, env=environment(**self.env))

        def healthy():
            assert self.proc.poll() is None, f"the server exited: {self.log_text()[-2000:]}"
            try:
                return urllib.request.urlopen(f"{self.url}/health", timeout=1).read() == b"ok\n"
            except OSError:
                return False

        wait_until(healthy, "the server to come up", seconds=30, every=0.05)

    def log_text(self):
        self.log.flush()
        return open(self.log.name).read()

    def stop(self):
        """SIGTERM: the server must drain and exit 0, without a panic."""
        self.proc.terminate()
        status = self.proc.wait(timeout=30)
        assert status == 0, f"the server exited with status {status}: {self.log_text()[-2000:]}"
        assert "panicked" not in self.log_text()

    def client(self, key, era="legacy", url=None):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        transport = streamable_http_client(f"{url or self.url}/mcp",
                                           http_client=create_mcp_http_client(headers=headers))
        return Client(transport, mode=era)

    def post(self, headers, body=None):
        """A raw POST to /mcp (an initialize unless `body` is given): (status, body text)."""
        status, _, text = http_post(f"{self.url}/mcp", body or message("initialize", INITIALIZE, 1),
                                    headers)
        return status, text


#: A document long enough to need a summary.
LONG_PLAN = "".join(f"Paragraph {i}: the plan holds.\n" for i in range(400))


def with_model(hosted, standin):
    """`hosted` started again with the model at `standin` (and a key for it)."""
    hosted.stop()
    hosted.env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": standin.url}
    hosted.start()
    return hosted


async def call(client, tool, **args):
    """(ok, payload) of one tool call through an SDK client."""
    return sdk_result(await client.call_tool(tool, args))


# The Anthropic Messages API's answer, as the stand-ins here and in the Rust tests give it.
MESSAGE = json.loads((ROOT / "tests" / "fixtures" / "anthropic-message.json").read_text())


def message_reply(text):
    """A 200 whose Messages API body says `text`."""
    body = json.loads(json.dumps(MESSAGE))
    body["content"][0]["text"] = text
    return 200, body, {}


class StandIn:
    """A stand-in for the Anthropic Messages API on loopback: answers POST /v1/messages from
    a script of (status, body, headers) and records every request; past the script, it
    answers `then`, or a 500. Each answer waits `delay` seconds first (a model thinking)."""

    def __init__(self, replies, then=None, delay=0.0):
        self.replies, self.requests, self.then, self.delay = list(replies), [], then, delay
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                standin.requests.append((self.path, dict(self.headers), body))
                time.sleep(standin.delay)
                status, payload, headers = (standin.replies.pop(0) if standin.replies
                                            else standin.then or (500, {}, {}))
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
