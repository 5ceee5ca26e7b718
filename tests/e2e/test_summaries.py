"""summarize_file end to end: the binary, a stand-in for the Anthropic API on loopback, and
a key that must never appear in anything the server writes."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import RawServer, connect, run

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
    # Everything at trace (reqwest, hyper and rustls included) but the compiler.
    quiet = ",".join(f"{c}=warn" for c in ["cranelift_codegen", "cranelift_frontend", "regalloc2",
                                           "wasmtime", "wasmtime_cranelift", "wasmtime_environ"])
    server = RawServer(db, tmp_path / "stderr.log", log=f"trace,{quiet}",
                       ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=standin.url)
    assert server.call("write_file", agent_id="a", path="plan.md", content=LONG)[0]
    first = server.call("summarize_file", agent_id="a", path="plan.md")
    second = server.call("summarize_file", agent_id="a", path="plan.md")
    assert server.call("write_file", agent_id="a", path="plan.md", content=LONG + "more\n")[0]
    refused = server.call("summarize_file", agent_id="a", path="plan.md")
    stdout = server.close()

    assert first == (True, {"path": "plan.md", "version": 1, "summarized": True,
                            "summary": "Migration on Friday 18:00.", "cached": False,
                            "model": "claude-haiku-5-5"})
    assert second[1]["cached"] is True
    assert refused == (False, "the Anthropic API refused the key (HTTP 401); check ANTHROPIC_API_KEY")
    assert len(standin.requests) == 2
    assert all(headers["x-api-key"] == KEY for _, headers, _ in standin.requests)
    stderr = server.stderr()
    assert "tool call" in stderr and "reqwest" in stderr, "trace logging was on"
    assert KEY not in json.dumps([first, second, refused]) + stdout + stderr


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
