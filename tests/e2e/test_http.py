"""Hosted mode: the binary serving Streamable HTTP, driven by the official SDK's HTTP client,
with real API keys, a real port on loopback and real refusals."""

import json
import signal
import urllib.error
import urllib.request

import pytest
from conftest import run
from helpers import LONG_PLAN, Hosted, StandIn, call, http_post, message_reply, run_cli, wait_until
from mcp.shared.exceptions import MCPError


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
    # No standalone event streams: there are no sessions, and nothing is ever pushed.
    stream = urllib.request.Request(f"{hosted.url}/mcp", headers={**good, "Accept": "text/event-stream"})
    try:
        urllib.request.urlopen(stream, timeout=10)
        raise AssertionError("GET /mcp should be refused")
    except urllib.error.HTTPError as e:
        assert e.code == 405, e.code
    # A page served from this machine is not a rebinding attack.
    assert hosted.post({**good, "Origin": f"http://localhost:{hosted.port}"})[0] == 200
    # Keys are read again on SIGHUP: a revoked key is refused, a new one let in, no restart.
    status, _, err = hosted.cli("keys", "revoke", "b")
    assert status == 0, err
    status, new_key, err = hosted.cli("keys", "add", "b2", "--agent", "b")
    assert status == 0, err
    assert hosted.post({"Authorization": f"Bearer {new_key}"})[0] == 401
    pid = hosted.proc.pid
    hosted.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: hosted.post(good)[0] == 401, "the revoked key to be refused", seconds=5)
    assert hosted.post({"Authorization": f"Bearer {new_key}"})[0] == 200
    assert hosted.proc.pid == pid and hosted.proc.poll() is None
    # A broken config file leaves the keys in force as they were.
    text = hosted.config.read_text()
    hosted.config.write_text(text + "\n[[http.keys]]\nname = 1\n")
    hosted.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "API keys not read again" in hosted.log_text(), "the refusal to read keys", seconds=5)
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
    status, _, err = run_cli("--config", config, "--db", tmp_path / "s.db", "serve", "--http")
    assert status == 2 and "serve --http needs at least one API key" in err, err


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_an_unknown_tool_is_the_same_protocol_error_as_over_stdio(hosted, era):
    """The tool is known or not before any key is checked: no agent_id is needed to learn
    that a tool does not exist, and the answer is the protocol error stdio gives."""

    async def go():
        async with hosted.client(hosted.keys["rw"], era) as c:
            for args in [{}, {"agent_id": "b"}]:
                with pytest.raises(MCPError) as raised:
                    await c.call_tool("no_such_tool", args)
                assert raised.value.error.code == -32602, raised.value.error
                assert raised.value.error.message.startswith('unknown tool "no_such_tool"; the tools are '), \
                    raised.value.error.message

    run(go())
    metrics = urllib.request.urlopen(f"{hosted.url}/metrics").read().decode()
    assert 'scratchpad_tool_calls_total{tool="unknown",outcome="error"} 2' in metrics, metrics


def test_every_write_the_limits_allow_arrives_and_a_body_that_is_no_message_is_told_why(tmp_path):
    """A body may be six bytes for each byte of the largest write and 64 KiB (rmcp's own bound,
    4 MiB, refused writes the operator's limit allowed); past that (the rest of the body read and
    dropped, so that a client still sending gets the answer, not a reset), and for a body that is not
    JSON, too deep or not JSON-RPC, the answer is a JSON-RPC error saying why, which the SDK
    shows, instead of rmcp's 415 with serde's words."""
    mib = 1024 * 1024
    h = Hosted(tmp_path, f"[limits]\nmax_write_bytes = {5 * mib}\n")
    try:
        async def go():
            async with h.client(h.keys["rw"]) as c:
                # 5 MiB of a control character: a body of 30 MiB, each byte written as \u0001.
                ok, answer = await call(c, "write_file", agent_id="a", path="raw", content="\x01" * (5 * mib))
                assert ok and answer["bytes"] == 5 * mib, answer
                with pytest.raises(MCPError) as raised:
                    await c.call_tool("write_file", {"agent_id": "a", "path": "big", "content": "x" * (50 * mib)})
                assert raised.value.error.code == -32600, raised.value.error
                assert raised.value.error.message.startswith(
                    "the request is over 31522816 bytes, the most a message may be: 6 bytes for each byte of "
                    "the largest content a call may carry (max_write_bytes = 5242880, "), raised.value.error.message
                ok, listing = await call(c, "list_files", agent_id="a")
                assert [f["path"] for f in listing["files"]] == ["raw"], "the refused write changed nothing"

        run(go())
        auth = {"Authorization": f"Bearer {h.keys['rw']}"}
        deep = {"jsonrpc": "2.0", "id": "d", "method": "tools/call",
                "params": {"name": "append_log", "arguments": {"agent_id": "a", "path": "l", "entry": []}}}
        deep = json.dumps(deep).replace("[]", "[" * 200 + "]" * 200).encode()
        cases = [
            (b'{"jsonrpc":"2.0","id":4,"method":"tools/call",', 4, -32700,
             "the request is not JSON: EOF while parsing a value at line 1 column 46 (nothing was changed)"),
            (b"not json", None, -32700,
             "the request is not JSON: expected ident at line 1 column 2 (nothing was changed)"),
            (deep, "d", -32600, "the request nests 203 levels deep (arrays and objects one inside another); "
             "a message may nest 127 levels, and a log entry in it 100 (nothing was changed)"),
            (b'[{"jsonrpc":"2.0","id":7,"method":"ping"}]', None, -32600,
             "the request is a batch (an array of messages), which MCP has not had since 2025-06-18: "
             "send each message alone (nothing was changed)"),
            (b'{"jsonrpc":"2.0","id":5}', 5, -32600,
             "the request is JSON but no JSON-RPC request, notification or response of MCP's (nothing was changed)"),
        ]
        for body, id, code, said in cases:
            status, headers, text = http_post(f"{h.url}/mcp", body, auth)
            assert status == 400, (status, text)
            assert headers["content-type"] == "application/json", headers
            answer = json.loads(text)
            assert (answer.get("id"), answer["error"]["code"], answer["error"]["message"]) == (id, code, said), answer
        # A tools/call whose params do not fit is told what they take, not "method not found".
        bad_call = {"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                    "params": {"name": "read_file", "arguments": [1]}}
        status, _, text = http_post(f"{h.url}/mcp", bad_call, auth)
        assert json.loads(text)["error"] == {"code": -32602, "message": (
            "the params of tools/call are not what MCP defines: they take `name`, a tool's name, "
            "and `arguments`, an object of its arguments")}, (status, text)
        # A wrong content type is still rmcp's own refusal.
        status, _, text = http_post(f"{h.url}/mcp", b"{}", {**auth, "Content-Type": "text/plain"})
        assert status == 415, (status, text)
    finally:
        h.stop()


def test_a_key_cannot_read_another_agents_file_as_a_resource(hosted):
    async def go():
        async with hosted.client(hosted.keys["b"]) as c:
            assert (await call(c, "write_file", agent_id="b", path="secret.md", content="b's secret"))[0]
        async with hosted.client(hosted.keys["rw"]) as c:
            with pytest.raises(MCPError) as raised:
                await c.read_resource("scratchpad://b/secret.md")
            assert raised.value.error.message == \
                'this key ("rw") acts for agent a; it cannot act for agent "b"', raised.value.error
            assert "b's secret" not in str(raised.value)
            listed = [str(r.uri) for r in (await c.list_resources()).resources]
            assert listed == [], listed
        async with hosted.client(hosted.keys["b"]) as c:
            read = await c.read_resource("scratchpad://b/secret.md")
            assert read.contents[0].text == "b's secret"

    run(go())


def test_resource_reads_and_listings_spend_from_the_agents_rate(tmp_path):
    """Every method that does work is a call: reading a file as a resource, or listing them,
    spends from the agent's bucket like a tool call, so a tenant cannot read around its rate."""
    h = Hosted(tmp_path, "[http]\ncalls_per_second = 0.01\nburst = 3\n")
    try:
        async def go():
            async with h.client(h.keys["rw"]) as c:
                assert (await call(c, "write_file", agent_id="a", path="big.md", content="x" * 800_000))[0]
                read = await c.read_resource("scratchpad://a/big.md")
                assert len(read.contents[0].text) == 800_000
                assert [str(r.uri) for r in (await c.list_resources()).resources] == ["scratchpad://a/big.md"]
                for attempt in (c.read_resource("scratchpad://a/big.md"), c.list_resources()):
                    with pytest.raises(MCPError) as refused:
                        await attempt
                    assert refused.value.error.message.startswith(
                        'rate limit: agent "a" may make 0.01 calls a second; retry in '), refused.value.error
                ok, e = await call(c, "list_files", agent_id="a")
                assert not ok and e.startswith('rate limit: agent "a"'), e

        run(go())
    finally:
        h.stop()


def test_summaries_need_a_key_allowed_them_and_stay_within_the_agents_budget(tmp_path):
    """A read-only key cannot spend the operator's model budget; a key allowed summaries can,
    up to the agent's summaries a day, and is then told how long to wait. No request reaches
    the model past the budget."""
    standin = StandIn([], then=message_reply("A summary."))
    h = Hosted(tmp_path, "[http]\nsummaries_per_day = 2\n")
    h.stop()
    status, ro_sum, err = h.cli("keys", "add", "ro-sum", "--agent", "a", "--read-only", "--summaries")
    assert status == 0, err
    status, listed, _ = h.cli("keys", "list")
    assert "ro\tread-only\tno-summaries\ta" in listed and "ro-sum\tread-only\tsummaries\ta" in listed, listed
    h.env = {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": standin.url}
    h.start()
    try:
        async def go():
            async with h.client(h.keys["rw"]) as c:
                assert (await call(c, "write_file", agent_id="a", path="plan.md", content=LONG_PLAN))[0]
            async with h.client(h.keys["ro"]) as c:
                ok, e = await call(c, "summarize_file", agent_id="a", path="plan.md")
                assert (ok, e) == (False, 'this key ("ro") may not ask for summaries, which spend the '
                                          "operator's model budget; ask for a key made with `keys add --summaries`")
                assert (await call(c, "read_file", agent_id="a", path="plan.md"))[0]
            async with h.client(ro_sum) as c:
                for _ in range(2):
                    ok, answer = await call(c, "summarize_file", agent_id="a", path="plan.md")
                    assert ok and answer["summary"] == "A summary.", answer
                ok, e = await call(c, "summarize_file", agent_id="a", path="plan.md")
                assert not ok and e.startswith(
                    'summary budget: agent "a" may ask for 2 summaries a day; the next one in '), e

        run(go())
    finally:
        h.stop()
        standin.close()
    assert len(standin.requests) == 1, "the second summary came from the cache; the third never asked"
