"""summarize_file end to end: the binary, a stand-in for the Anthropic API on loopback, and
a key that must never appear in anything the server writes."""

import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import BINARY, CACHE_DIR, connect, run

KEY = "sk-ant-e2e-NEVER-PRINT-91c2"
LONG = "".join(f"Paragraph {i}: the migration runs on Friday at 18:00.\n" for i in range(300))


class StandIn:
    """Answers POST /v1/messages from a script; counts requests."""

    def __init__(self, replies):
        self.replies, self.requests = list(replies), []
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                standin.requests.append((self.path, dict(self.headers), body))
                status, payload = standin.replies.pop(0) if standin.replies else (500, {})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()


def message(text):
    return 200, {"type": "message", "content": [{"type": "text", "text": text}]}


@pytest.fixture
def standin():
    s = StandIn([message("Migration on Friday 18:00."),
                 (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})])
    yield s
    s.close()


def test_the_key_never_reaches_stdout_or_stderr(db, standin, tmp_path):
    def call(i, name, **args):
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}

    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call(2, "write_file", agent_id="a", path="plan.md", content=LONG),
        call(3, "summarize_file", agent_id="a", path="plan.md"),
        call(4, "summarize_file", agent_id="a", path="plan.md"),
        call(5, "write_file", agent_id="a", path="plan.md", content=LONG + "more\n"),
        call(6, "summarize_file", agent_id="a", path="plan.md"),
    ]
    # One request at a time, each after the previous answer, as an agent works. stderr goes
    # to a file: trace logging would fill a pipe nobody reads until the end.
    errlog = open(tmp_path / "stderr.log", "w+")
    proc = subprocess.Popen(
        [str(BINARY), "--db", str(db), "--cache-dir", CACHE_DIR, "--log", "trace"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, text=True,
        env={"PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": standin.url},
    )
    answers = {}
    for r in requests:
        proc.stdin.write(json.dumps(r) + "\n")
        proc.stdin.flush()
        if "id" in r:
            line = json.loads(proc.stdout.readline())
            answers[line["id"]] = line["result"]
    proc.stdin.close()
    stdout = proc.stdout.read()
    proc.wait(timeout=30)
    errlog.seek(0)
    stderr = errlog.read()

    assert answers[3]["structuredContent"]["summary"] == "Migration on Friday 18:00."
    assert answers[4]["structuredContent"]["cached"] is True
    assert answers[6]["isError"] is True
    assert "refused the key" in answers[6]["content"][0]["text"]
    assert len(standin.requests) == 2
    assert all(headers["x-api-key"] == KEY for _, headers, _ in standin.requests)
    everything = json.dumps(answers) + stdout + stderr
    assert KEY not in everything
    assert "summarize_file" in stderr or "tool call" in stderr, "trace logging was on"


def test_cached_summaries_through_the_sdk(db, era):
    standin = StandIn([message("One summary.")])
    try:
        async def go():
            async with connect(db, era, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=standin.url) as s:
                await s.ok("write_file", agent_id="a", path="plan.md", content=LONG)
                first = await s.ok("summarize_file", agent_id="a", path="plan.md")
                second = await s.ok("summarize_file", agent_id="a", path="plan.md")
                assert (first["cached"], second["cached"]) == (False, True)
                assert second["summary"] == "One summary."

        run(go())
        assert len(standin.requests) == 1
    finally:
        standin.close()
