"""summarize_file end to end: the binary, a stand-in for the Anthropic API on loopback, and
a key that must never appear in anything the server writes."""

import json
import time

import pytest
from conftest import connect, run
from helpers import RawServer, StandIn, message, message_reply

KEY = "sk-ant-e2e-NEVER-PRINT-91c2"
LONG = "".join(f"Paragraph {i}: the migration runs on Friday at 18:00.\n" for i in range(300))
REFUSED = (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}, {})


@pytest.fixture
def standin():
    s = StandIn([message_reply("Migration on Friday 18:00."), REFUSED])
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
    standin = StandIn([message_reply("One summary.")])
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


def test_a_generic_5xx_is_retried_end_to_end(db, tmp_path):
    """A 502 from a proxy in front of the API, with no body the API would give: retried, and
    the second answer is the summary."""
    standin = StandIn([(502, {}, {}), message_reply("After a bad gateway.")])
    try:
        server = RawServer(db, tmp_path / "stderr.log", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=standin.url)
        server.ok("write_file", agent_id="a", path="plan.md", content=LONG)
        summary = server.ok("summarize_file", agent_id="a", path="plan.md")
        server.close()
        assert (summary["summary"], summary["cached"]) == ("After a bad gateway.", False)
        assert len(standin.requests) == 2
    finally:
        standin.close()


def test_a_retry_after_beyond_the_retry_window_is_not_waited_for(db, tmp_path):
    """An API that says "come back in an hour" gets no second request and no hour-long call:
    the agent is told at once to try later, and nothing is cached."""
    busy = (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many requests"}},
            {"retry-after": "3600"})
    standin = StandIn([busy], then=message_reply("never asked for"))
    try:
        server = RawServer(db, tmp_path / "stderr.log", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=standin.url)
        server.ok("write_file", agent_id="a", path="plan.md", content=LONG)
        started = time.monotonic()
        ok, error = server.call("summarize_file", agent_id="a", path="plan.md")
        took = time.monotonic() - started
        assert (ok, error) == (False, "the Anthropic API is rate limiting this key (HTTP 429); "
                                      "gave up after 1 attempt(s), try again later")
        assert took < 10, f"it waited {took:.1f} s"
        assert len(standin.requests) == 1
        # Nothing was cached: the next call asks again, and this time gets a summary.
        assert server.ok("summarize_file", agent_id="a", path="plan.md")["cached"] is False
        server.close()
        assert len(standin.requests) == 2
    finally:
        standin.close()


def test_the_summary_cache_is_per_agent(db, tmp_path):
    """Two agents holding the same text at the same path share nothing: the second agent's
    summary is its own request, and neither sees the other's."""
    standin = StandIn([message_reply("Agent a's summary."), message_reply("Agent b's summary.")])
    try:
        server = RawServer(db, tmp_path / "stderr.log", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=standin.url)
        for agent in ("a", "b"):
            server.ok("write_file", agent_id=agent, path="plan.md", content=LONG)
        a = server.ok("summarize_file", agent_id="a", path="plan.md")
        b = server.ok("summarize_file", agent_id="b", path="plan.md")
        again = server.ok("summarize_file", agent_id="a", path="plan.md")
        server.close()
        assert (a["summary"], a["cached"]) == ("Agent a's summary.", False)
        assert (b["summary"], b["cached"]) == ("Agent b's summary.", False)
        assert (again["summary"], again["cached"]) == ("Agent a's summary.", True)
        assert len(standin.requests) == 2
    finally:
        standin.close()


def test_reads_and_writes_are_answered_while_a_summary_waits_for_the_model(db, tmp_path):
    """Over stdio a read runs on the thread that reads requests: a summary, which waits on
    the network, must not. With the model taking 3 s, a read and a write sent after the
    summary are answered first, long before it."""
    standin = StandIn([], then=message_reply("A slow summary."), delay=3.0)
    try:
        server = RawServer(db, tmp_path / "stderr.log", ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=standin.url)
        server.ok("write_file", agent_id="a", path="plan.md", content=LONG)
        started = time.monotonic()
        server.send(message("tools/call", {"name": "summarize_file",
                                           "arguments": {"agent_id": "a", "path": "plan.md"}}, "summary"))
        while not standin.requests:  # the summary is with the model now
            assert time.monotonic() - started < 10, "the summary never reached the model"
            time.sleep(0.01)
        server.send(message("tools/call", {"name": "read_file",
                                           "arguments": {"agent_id": "a", "path": "plan.md",
                                                         "since_version": 1}}, "read"))
        server.send(message("tools/call", {"name": "write_file",
                                           "arguments": {"agent_id": "a", "path": "notes.md",
                                                         "content": "x"}}, "write"))
        answers = []
        for _ in range(3):
            answer = json.loads(server.proc.stdout.readline())
            answers.append((answer["id"], round(time.monotonic() - started, 1)))
            assert "error" not in answer, answer
        server.close()
        order = [id for id, _ in answers]
        assert order[2] == "summary", answers
        assert sorted(order[:2]) == ["read", "write"], answers
        assert all(at < 2.5 for id, at in answers if id != "summary"), answers
    finally:
        standin.close()
