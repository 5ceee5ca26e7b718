"""The scratchpad over real stdio, as a desktop MCP client uses it."""

import asyncio
import json
import os
import sqlite3
import subprocess

import pytest
from conftest import connect, run
from helpers import INITIALIZE, WAIT_SECONDS, command, environment, message, run_cli
from mcp.shared.exceptions import MCPError


def apply_diff(old, diff):
    """Rebuild the new text from the old one and a read_file diff, as the README says."""
    old_lines, out, at = old.split("\n"), [], 0
    for chunk in diff:
        op = chunk["op"]
        if op == "equal":
            assert old_lines[at : at + len(chunk["lines"])] == chunk["lines"]
            out += chunk["lines"]
            at += len(chunk["lines"])
        elif op == "remove":
            assert old_lines[at : at + len(chunk["lines"])] == chunk["lines"]
            at += len(chunk["lines"])
        elif op == "add":
            out += chunk["lines"]
        elif op == "skip":
            assert chunk["old_line"] == at + 1 and chunk["new_line"] == len(out) + 1
            out += old_lines[at : at + chunk["count"]]
            at += chunk["count"]
    if not diff:
        return old
    assert at == len(old_lines)
    return "\n".join(out)


def test_handshake_tools_and_metadata(db, era):
    async def go():
        async with connect(db, era) as s:
            c = s.client
            expected = "2025-11-25" if era == "legacy" else "2026-07-28"
            assert c.protocol_version == expected
            if era != "2026-07-28":  # a pinned stateless session has no handshake to carry these
                assert c.server_info.name == "scratchpad-mcp"
                assert "agent_id" in c.instructions
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert sorted(tools) == sorted(
                ["write_file", "edit_file", "read_file", "read_files", "file_history", "search",
                 "append_log", "read_log", "forget_log", "list_files", "delete_file",
                 "summarize_file", "get_usage_stats"]
            )
            for t in tools.values():
                assert t.description, t.name
                assert t.output_schema is None, t.name  # shapes are documented; see README
                assert "agent_id" in t.input_schema["required"], t.name
            for name in ["read_file", "read_files", "file_history", "search", "read_log",
                         "list_files", "get_usage_stats", "summarize_file"]:
                assert tools[name].annotations.read_only_hint is True, name
            assert tools["delete_file"].annotations.destructive_hint is True
            assert tools["forget_log"].annotations.destructive_hint is True
            assert not tools["write_file"].annotations.read_only_hint
            assert tools["write_file"].annotations.destructive_hint is False
            since = tools["read_file"].input_schema["properties"]["since_version"]
            assert "line diff from this version" in since["description"]

    run(go())


def test_versions_and_diffs(db, era):
    old = "".join(f"line {i}\n" for i in range(1, 301))
    new = old.replace("line 150\n", "line one-fifty\n")

    async def go():
        async with connect(db, era) as s:
            assert await s.ok("write_file", agent_id="a", path="doc.md", content=old) == {
                "path": "doc.md", "version": 1, "bytes": len(old), "unchanged": False}
            again = await s.ok("write_file", agent_id="a", path="doc.md", content=old)
            assert again["unchanged"] is True and again["version"] == 1
            assert (await s.ok("write_file", agent_id="a", path="doc.md", content=new))["version"] == 2

            compact = await s.ok("read_file", agent_id="a", path="doc.md", since_version=1)
            assert compact["current_version"] == 2 and compact["since_version"] == 1
            assert [c["op"] for c in compact["diff"]] == ["skip", "equal", "remove", "add", "equal", "skip"]
            assert apply_diff(old, compact["diff"]) == new
            assert len(json.dumps(compact)) * 5 < len(new), "a fifth of the bytes or less"

            full = await s.ok("read_file", agent_id="a", path="doc.md", since_version=1, full_diff=True)
            assert apply_diff(old, full["diff"]) == new
            assert all(c["op"] != "skip" for c in full["diff"])

            whole = await s.ok("read_file", agent_id="a", path="doc.md")
            assert whole == {"path": "doc.md", "current_version": 2, "content": new, "tokens": whole["tokens"]}
            assert 0 < whole["tokens"] <= 20_000

            for i in range(3, 13):
                await s.ok("write_file", agent_id="a", path="doc.md", content=f"{new}{i}")
            pruned = await s.ok("read_file", agent_id="a", path="doc.md", since_version=2)
            assert pruned["version_too_old"] is True and pruned["content"] == f"{new}12"
            newer = await s.err("read_file", agent_id="a", path="doc.md", since_version=13)
            assert newer == 'since_version 13 is newer than the current version 12 of "doc.md"'

    run(go())


def test_errors_name_the_rule_and_the_value_and_nothing_else(db, era):
    async def go():
        async with connect(db, era) as s:
            assert await s.err("write_file", agent_id="a", path="notes/../x", content="c") == (
                "path must not contain '..' (got \"notes/../x\")")
            too_big = await s.err("write_file", agent_id="a", path="f", content="x" * (1024 * 1024 + 1))
            assert too_big == "content is 1048577 bytes; the limit for one write is 1048576 bytes"
            bad_agent = await s.err("list_files", agent_id="bad id")
            assert bad_agent.startswith("agent_id may contain only"), bad_agent
            missing = await s.err("read_file", agent_id="a", path="nope")
            assert missing == 'no file at path "nope" for agent "a"'
            for text in [too_big, bad_agent, missing]:
                assert str(db) not in text and str(db.parent) not in text and "SELECT" not in text, text
            stats = await s.ok("get_usage_stats", agent_id="a")
            assert stats["file_count"] == 0 and stats["total_operations"] == 0

    run(go())


def test_log_paging_across_250_entries(db, era):
    async def go():
        async with connect(db, era) as s:
            for i in range(1, 251):
                entry = {"step": i} if i % 2 else f"step {i}"
                assert (await s.ok("append_log", agent_id="a", path="run", entry=entry))["entry_id"] == i
            seen, cursor, pages = [], None, 0
            while True:
                args = {"agent_id": "a", "path": "run"}
                if cursor is not None:
                    args["since_entry"] = cursor
                page = await s.ok("read_log", **args)
                pages += 1
                seen += page["entries"]
                cursor = page["last_entry_id"]
                if not page["has_more"]:
                    break
            assert pages == 3
            assert [e["id"] for e in seen] == list(range(1, 251))
            assert seen[0]["entry"] == {"step": 1} and seen[1]["entry"] == "step 2"

    run(go())


def test_agents_are_isolated(db, era):
    async def go():
        async with connect(db, era) as s:
            await s.ok("write_file", agent_id="alice", path="plan", content="alice only")
            await s.ok("append_log", agent_id="alice", path="log", entry="a")
            assert (await s.ok("list_files", agent_id="alice2"))["files"] == []
            assert (await s.ok("read_log", agent_id="alice2", path="log"))["entries"] == []
            assert (await s.err("read_file", agent_id="alice2", path="plan")).startswith("no file")
            assert (await s.ok("delete_file", agent_id="alice2", path="plan"))["deleted"] is False
            assert (await s.ok("get_usage_stats", agent_id="alice2"))["total_bytes"] == 0
            assert (await s.ok("read_file", agent_id="alice", path="plan"))["content"] == "alice only"

    run(go())


def test_data_survives_a_restart(db, era):
    async def first():
        async with connect(db, era) as s:
            await s.ok("write_file", agent_id="a", path="f", content="v1")
            await s.ok("write_file", agent_id="a", path="f", content="v2")
            await s.ok("delete_file", agent_id="a", path="f")

    async def second():
        async with connect(db, era) as s:
            assert (await s.ok("write_file", agent_id="a", path="f", content="v3"))["version"] == 3
            assert (await s.ok("list_files", agent_id="a"))["files"][0]["version"] == 3

    run(first())
    run(second())


def test_summarize_without_a_key(db, era):
    async def go():
        async with connect(db, era, ANTHROPIC_API_KEY="") as s:
            await s.ok("write_file", agent_id="a", path="short", content="brief")
            short = await s.ok("summarize_file", agent_id="a", path="short")
            assert short == {"path": "short", "version": 1, "summarized": False, "content": "brief"}
            await s.ok("write_file", agent_id="a", path="long", content="word " * 2000)
            message = await s.err("summarize_file", agent_id="a", path="long")
            assert "ANTHROPIC_API_KEY" in message
            assert (await s.ok("read_file", agent_id="a", path="long"))["current_version"] == 1

    run(go())


def test_text_content_mirrors_structured_content(db, era):
    """The text content is the guest's own JSON text, passed through: it must be exactly the
    structured content written compactly, in the same key order, for every kind of answer."""

    async def go():
        async with connect(db, era) as s:
            calls = [
                ("write_file", {"agent_id": "a", "path": "f", "content": "x\n\"é\"\t✓"}),
                ("write_file", {"agent_id": "a", "path": "f", "content": "y\n\"é\"\t✓"}),
                ("read_file", {"agent_id": "a", "path": "f", "since_version": 1}),
                ("append_log", {"agent_id": "a", "path": "l", "entry": {"b": [1, 2.5, None], "a": "ü"}}),
                ("read_log", {"agent_id": "a", "path": "l"}),
                ("list_files", {"agent_id": "a"}),
                ("get_usage_stats", {"agent_id": "a"}),
            ]
            for name, args in calls:
                result = await s.client.call_tool(name, args)
                assert not result.is_error, (name, result.content)
                text = result.content[0].text
                assert json.loads(text) == result.structured_content, name
                compact = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
                assert text == compact, name

    run(go())


def test_stdout_carries_only_mcp_messages(db):
    requests = [
        message("initialize", INITIALIZE, 1),
        message("notifications/initialized"),
        message("tools/call", {"name": "read_file", "arguments": {"agent_id": "a", "path": "missing"}}, 2),
    ]
    status, stdout, stderr = run_cli("--db", db, "--log", "debug",
                                     input="".join(json.dumps(r) + "\n" for r in requests))
    assert status == 0, stderr
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    assert [line["id"] for line in lines] == [1, 2]
    assert all(line["jsonrpc"] == "2.0" for line in lines)
    assert lines[1]["result"]["isError"] is True
    assert "tool call" in stderr, "logs go to stderr"


def test_an_unknown_tool_is_a_protocol_error_naming_the_tools(db):
    requests = [
        message("initialize", INITIALIZE, 1),
        message("notifications/initialized"),
        message("tools/call", {"name": "no_such_tool", "arguments": {}}, 2),
    ]
    status, stdout, stderr = run_cli("--db", db, input="".join(json.dumps(r) + "\n" for r in requests))
    assert status == 0, stderr
    answer = json.loads(stdout.splitlines()[-1])
    assert answer["error"]["code"] == -32602, answer
    assert answer["error"]["message"].startswith('unknown tool "no_such_tool"; the tools are '), answer


def test_an_entry_nested_too_deep_is_refused_and_a_message_too_deep_to_read_is_answered(db):
    """An entry may nest 100 levels; a message serde_json cannot read (128 levels or more) is
    answered under its id all the same, where it used to go unanswered and hang its caller."""
    def nested(depth):
        entry = []
        for _ in range(depth - 1):
            entry = [entry]
        return entry

    def append(depth, id):
        args = {"agent_id": "a", "path": "l", "entry": nested(depth)}
        return message("tools/call", {"name": "append_log", "arguments": args}, id)

    requests = [
        message("initialize", INITIALIZE, 1),
        message("notifications/initialized"),
        append(100, 2),
        append(101, 3),
        append(125, 4),
    ]
    status, stdout, stderr = run_cli("--db", db, input="".join(json.dumps(r) + "\n" for r in requests))
    assert status == 0, stderr
    answers = {a["id"]: a for a in map(json.loads, stdout.splitlines())}
    assert sorted(answers) == [1, 2, 3, 4], stdout[:500]
    assert answers[2]["result"]["structuredContent"] == {"path": "l", "entry_id": 1}
    refused = answers[3]["result"]
    assert refused["isError"] and refused["content"][0]["text"] == (
        "log entry nests 101 levels deep (arrays and objects one inside another); the limit is 100 levels")
    assert answers[4]["error"]["code"] == -32600, answers[4]
    assert answers[4]["error"]["message"] == (
        "the request nests 128 levels deep (arrays and objects one inside another); a message may "
        "nest 127 levels, and a log entry in it 100 (nothing was changed)")
    # Read in a session of its own: calls in one session run concurrently.
    read = [
        message("initialize", INITIALIZE, 1),
        message("notifications/initialized"),
        message("tools/call", {"name": "read_log", "arguments": {"agent_id": "a", "path": "l"}}, 2),
    ]
    status, stdout, stderr = run_cli("--db", db, input="".join(json.dumps(r) + "\n" for r in read))
    assert status == 0, stderr
    entries = json.loads(stdout.splitlines()[-1])["result"]["structuredContent"]["entries"]
    assert [e["entry"] for e in entries] == [nested(100)], "only the entry within the limit was stored"


def test_every_write_the_limits_allow_arrives_and_a_longer_message_is_answered(db, era):
    """A message may be six bytes for each byte of the largest write (JSON's longest escape)
    and 64 KiB: rmcp's 16 MiB line bound dropped a write the operator's limit allowed, and a
    longer line went unanswered, leaving its caller waiting for ever."""
    mib = 1024 * 1024

    async def largest():
        async with connect(db, era, SCRATCHPAD_MAX_WRITE_BYTES=str(4 * mib)) as s:
            # 4 MiB of a control character: a line of 24 MiB, each byte written as \u0001.
            assert (await s.ok("write_file", agent_id="a", path="raw", content="\x01" * (4 * mib)))["bytes"] == 4 * mib
            first = (await s.ok("read_file", agent_id="a", path="raw"))["content"]
            assert first and first == "\x01" * len(first), "read back as written, in parts"

    # Before, the line went unanswered: the wait fails the test instead of hanging it.
    run(asyncio.wait_for(largest(), WAIT_SECONDS))

    async def longer():
        async with connect(db, era) as s:
            with pytest.raises(MCPError) as raised:
                await s.client.call_tool("write_file", {"agent_id": "a", "path": "big", "content": "x" * (7 * mib)})
            assert raised.value.error.code == -32600, raised.value.error
            assert raised.value.error.message == (
                "the request is over 6356992 bytes, the most a message may be: 6 bytes for each byte of the "
                "largest content a call may carry (max_write_bytes = 1048576, max_log_entry_bytes = 65536), "
                "as many as JSON's escapes can take, and 65536 bytes more (nothing was changed)")
            # The session goes on, and nothing was written.
            assert [f["path"] for f in (await s.ok("list_files", agent_id="a"))["files"]] == ["raw"]

    run(asyncio.wait_for(longer(), WAIT_SECONDS))


def test_a_request_that_is_not_json_or_not_mcp_is_answered_under_its_id(db):
    """rmcp ignored a line that was not JSON, answered JSON that was no message without an
    id, and called a tools/call whose params did not fit an unknown method: a caller waited
    for ever, or was told the wrong thing. Each is now answered under its id, saying why."""
    lines = [
        json.dumps(message("initialize", INITIALIZE, 1)).encode(),
        json.dumps(message("notifications/initialized")).encode(),
        json.dumps(message("tools/call", {"name": "read_file", "arguments": [1]}, 2)).encode(),
        # Not UTF-8 inside a string: not JSON.
        b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":'
        b'{"agent_id":"a","path":"x","content":"\xff"}}}',
        b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":'
        b'{"agent_id":"a","path":"x","since_version":1e400}}}',
        b'{"jsonrpc":"2.0","id":5}',
        json.dumps(message("no/such/method", {}, 6)).encode(),
        b"not json and no id",
        json.dumps(message("ping", None, 7)).encode(),
    ]
    done = subprocess.run(command("--db", db), input=b"".join(l + b"\n" for l in lines), capture_output=True,
                          env=environment(), timeout=WAIT_SECONDS)
    assert done.returncode == 0, done.stderr
    answers = {a.get("id"): a for a in map(json.loads, done.stdout.decode().splitlines())}
    assert sorted(answers) == [1, 2, 3, 4, 5, 6, 7], done.stdout[:2000]
    said = {id: (a["error"]["code"], a["error"]["message"]) for id, a in answers.items() if "error" in a}
    assert said == {
        2: (-32602, "the params of tools/call are not what MCP defines: they take `name`, a tool's name, "
                    "and `arguments`, an object of its arguments"),
        3: (-32700, "the request is not JSON: invalid unicode code point at line 1 column 127 (nothing was changed)"),
        4: (-32700, "the request is not JSON: number out of range at line 1 column 135 (nothing was changed)"),
        5: (-32600, "the request is JSON but no JSON-RPC request, notification or response of MCP's "
                    "(nothing was changed)"),
        6: (-32601, 'no method "no/such/method" here: this server answers initialize, ping, tools/list, '
                    "tools/call, resources/list, resources/templates/list and resources/read"),
    }, said
    assert answers[7]["result"] == {}


def test_a_notification_or_response_before_initialize_is_ignored_and_a_hang_up_is_no_error(db):
    """rmcp ended the session on any message before `initialize` that was not a request, and
    printed the message's Rust form as the error (type names and all); a client that hung up
    before it initialized (a probe, a start cancelled) got exit status 2 and "connection
    closed: initialize request". The early messages are now ignored, and the hang-up ends the
    server quietly."""
    lines = [
        message("notifications/initialized"),
        message("notifications/cancelled", {"requestId": 9}),
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 10, "error": {"code": -32601, "message": "no"}},
        message("ping", None, 1),
        message("initialize", INITIALIZE, 2),
        message("notifications/initialized"),
        message("tools/call", {"name": "write_file", "arguments": {"agent_id": "a", "path": "f", "content": "x"}},
                3),
    ]
    status, stdout, stderr = run_cli("--db", db, input="".join(json.dumps(l) + "\n" for l in lines))
    assert status == 0 and stderr == "", stderr
    answers = [json.loads(line) for line in stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3], stdout
    assert answers[2]["result"]["structuredContent"]["version"] == 1

    # A request that cannot start a session (no `initialize`, no metadata of MCP's stateless
    # revision) is answered, and rmcp then still waits for `initialize`: a notification after
    # it ends the session, said in words.
    lines = [message("tools/list", {}, 1), message("notifications/initialized")]
    status, stdout, stderr = run_cli("--db", db, input="".join(json.dumps(l) + "\n" for l in lines))
    assert json.loads(stdout)["error"]["code"] == -32602, stdout
    assert (status, stderr) == (2, "scratchpad-mcp: the session never started: a notification or response came "
                                   "before `initialize`, after a request that could not start a session\n")

    for before in ["", json.dumps(message("ping", None, 1)) + "\n"]:
        status, stdout, stderr = run_cli("--db", db, input=before)
        assert (status, stderr) == (0, ""), stderr
        assert len(stdout.splitlines()) == len(before.splitlines())


def test_a_clients_mistake_is_answered_not_logged_as_a_warning(db):
    """rmcp logged every error answer as a warning in its Rust form (`error=ErrorData { code:
    ErrorCode(-32601), ... }`), so a client's mistakes filled the server's log, which MCP
    clients show their users. At the default level they are now answered only; at `debug`
    the line is still there."""
    lines = [
        message("initialize", INITIALIZE, 1),
        message("notifications/initialized"),
        message("prompts/list", {}, 2),
        message("logging/setLevel", {"level": "debug"}, 3),
        message("tools/call", {"name": "no_such_tool", "arguments": {}}, 4),
    ]
    requests = "".join(json.dumps(l) + "\n" for l in lines)
    status, stdout, stderr = run_cli("--db", db, input=requests)
    assert (status, stderr) == (0, ""), stderr
    codes = {a["id"]: a["error"]["code"] for a in map(json.loads, stdout.splitlines()) if "error" in a}
    assert codes == {2: -32601, 3: -32601, 4: -32602}, stdout
    status, _, stderr = run_cli("--db", db, "--log", "debug", input=requests)
    assert status == 0 and stderr.count("response error") == 3, stderr


def test_completions_and_the_man_page_come_from_the_cli(tmp_path):
    """They need no settings: not even a home folder to find a config or a store in."""
    for shell, marker in [("bash", "complete -F"), ("zsh", "#compdef scratchpad-mcp"),
                          ("fish", "complete -c scratchpad-mcp")]:
        status, script, err = run_cli("completions", shell, env={"HOME": str(tmp_path / "nowhere")})
        assert status == 0 and marker in script and "snapshot" in script, (shell, err)
    status, man, _ = run_cli("man")
    assert status == 0 and ".TH scratchpad-mcp 1" in man and "verify" in man
    status, _, err = run_cli("completions", "nope")
    assert status == 2 and "invalid value 'nope'" in err, err


def test_the_component_is_written_for_embedders(tmp_path):
    out = tmp_path / "scratchpad.wasm"
    status, _, err = run_cli("component", "--out", out)
    assert status == 0, err
    data = out.read_bytes()
    assert data[:8] == b"\0asm\x0d\x00\x01\x00", "a component, not a core module"
    assert b"scratchpad:mcp/tools@0.1.0" in data
    status, _, err = run_cli("component", "--out", tmp_path / "no" / "such" / "dir" / "x")
    assert status != 0 and err.startswith("scratchpad-mcp: cannot write the component"), err


def paths_in(db):
    """The (agent, path) pairs stored in a SQLite store, read straight from the file."""
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT agent_id, path FROM files ORDER BY agent_id, path").fetchall()


def write_one(cwd, path, *flags, **env):
    """Starts the server in folder `cwd` with `flags` and `env`, writes `path`, stops."""
    requests = [
        message("initialize", INITIALIZE, 1),
        message("notifications/initialized"),
        message("tools/call", {"name": "write_file",
                               "arguments": {"agent_id": "a", "path": path, "content": "x"}}, 2),
    ]
    here = os.getcwd()
    os.chdir(cwd)
    try:
        status, stdout, stderr = run_cli(*flags, env=env, input="".join(json.dumps(r) + "\n" for r in requests))
    finally:
        os.chdir(here)
    assert status == 0, stderr
    assert '"isError":true' not in stdout, stdout


def test_the_store_is_found_by_flag_then_variable_then_data_folder(tmp_path):
    """`--db` wins over SCRATCHPAD_DB_PATH, which wins over the per-user data folder; the
    data folder does not depend on the folder the client started the server in."""
    home, one, two = tmp_path / "home", tmp_path / "cwd-one", tmp_path / "cwd-two"
    for folder in (home, one, two):
        folder.mkdir()
    flag_db, env_db = tmp_path / "flag.db", tmp_path / "env.db"
    write_one(one, "by-flag", "--db", flag_db, HOME=str(home), SCRATCHPAD_DB_PATH=str(env_db))
    assert paths_in(flag_db) == [("a", "by-flag")]
    assert not env_db.exists(), "the variable is not used when the flag is given"
    write_one(one, "by-variable", HOME=str(home), SCRATCHPAD_DB_PATH=str(env_db))
    assert paths_in(env_db) == [("a", "by-variable")]
    write_one(one, "from-one", HOME=str(home))
    write_one(two, "from-two", HOME=str(home))
    stores = [p for p in home.rglob("*.db")]
    assert len(stores) == 1, stores
    assert paths_in(stores[0]) == [("a", "from-one"), ("a", "from-two")], "one store whatever the folder"
    assert not list(one.glob("*.db")) and not list(two.glob("*.db")), "nothing in the working folder"


def test_edits_conflicts_and_history(db, era):
    doc = "".join(f"line {i}\n" for i in range(1, 1001))

    async def go():
        async with connect(db, era) as s:
            await s.ok("write_file", agent_id="a", path="doc.md", content=doc, expected_version=0)
            clash = await s.err("write_file", agent_id="a", path="doc.md", content="x", expected_version=0)
            assert clash.startswith('conflict: "doc.md" is at version 1'), clash
            edited = await s.ok("edit_file", agent_id="a", path="doc.md", base_version=1,
                                edits=[{"old": "line 500\n", "new": "line five hundred\n"},
                                       {"start": 1, "end": 0, "lines": ["# title"]}])
            assert edited["version"] == 2
            whole = await s.ok("read_file", agent_id="a", path="doc.md")
            assert whole["content"] == "# title\n" + doc.replace("line 500\n", "line five hundred\n")
            stale = await s.err("edit_file", agent_id="a", path="doc.md", base_version=1,
                                edits=[{"old": "line 7\n", "new": "x\n"}])
            assert "is at version 2, but the call expected version 1" in stale
            history = await s.ok("file_history", agent_id="a", path="doc.md")
            assert [v["version"] for v in history["versions"]] == [1, 2]
            assert all(len(v["sha256"]) == 64 for v in history["versions"])
            gone = await s.ok("delete_file", agent_id="a", path="doc.md", expected_version=2)
            assert gone["deleted"] is True

    run(go())


def test_search_finds_a_fact_for_far_fewer_bytes_than_reading(db, era):
    notes = "".join(f"Note {i}: routine progress on task {i}, nothing unusual.\n" for i in range(400))
    notes = notes.replace("Note 250: routine", "Note 250: the staging database password rotates on Tuesdays;")

    async def go():
        async with connect(db, era) as s:
            await s.ok("write_file", agent_id="a", path="notes/log.md", content=notes)
            await s.ok("write_file", agent_id="b", path="notes/log.md", content="b rotates too")
            found = await s.ok("search", agent_id="a", query="when does the password rotate")
            assert found["partial"] is True  # no note holds every word of the question
            found = await s.ok("search", agent_id="a", query="password rotates")
            hit = found["hits"][0]
            assert hit["path"] == "notes/log.md" and hit["lines"][0]["line"] == 251
            assert "Tuesdays" in hit["lines"][0]["text"]
            assert len(found["hits"]) == 1  # agent b's note never shows
            whole = await s.ok("read_file", agent_id="a", path="notes/log.md")
            searched, read = len(json.dumps(found)), len(json.dumps(whole))
            print(f"\nfigure: finding a fact: search answers in {searched} bytes, reading the file in {read}")
            assert searched * 20 < read

    run(go())


def test_files_are_resources_a_person_can_attach(db, era):
    long = "".join(f"{i:05}: a long line of notes for the resource test\n" for i in range(3000))

    async def go():
        async with connect(db, era) as s:
            for i in range(120):
                await s.ok("write_file", agent_id="a", path=f"notes/n{i:03}.md", content=f"note {i}")
            await s.ok("write_file", agent_id="b", path="big.txt", content=long)
            c = s.client
            first = await c.list_resources()
            assert len(first.resources) == 100 and first.next_cursor
            rest = await c.list_resources(cursor=first.next_cursor)
            uris = [str(r.uri) for r in first.resources + rest.resources]
            assert len(uris) == 121 and len(set(uris)) == 121 and rest.next_cursor is None
            assert uris[0] == "scratchpad://a/notes/n000.md"
            assert first.resources[0].mime_type == "text/markdown"
            templates = await c.list_resource_templates()
            assert templates.resource_templates[0].uri_template == "scratchpad://{agent_id}/{+path}"
            # A file longer than one tool answer still reads whole as a resource.
            big = await c.read_resource("scratchpad://b/big.txt")
            assert big.contents[0].text == long
            small = await c.read_resource("scratchpad://a/notes/n007.md")
            assert small.contents[0].text == "note 7"
            for bad, words in [("scratchpad://a/missing.md", "no file at path"),
                               ("file:///etc/passwd", "resource URIs look like")]:
                try:
                    await c.read_resource(bad)
                except Exception as e:  # the SDK raises the JSON-RPC error
                    assert words in str(e), e
                else:
                    raise AssertionError(f"{bad} should fail")

    run(go())


def test_read_files_and_forget_log_over_stdio(db, era):
    async def go():
        async with connect(db, era) as s:
            await s.ok("write_file", agent_id="a", path="ctx/plan.md", content="the plan")
            await s.ok("write_file", agent_id="a", path="ctx/huge.md", content="word " * 30_000)
            warm = await s.ok("read_files", agent_id="a", prefix="ctx/", max_tokens=2_000)
            assert [f["path"] for f in warm["files"]] == ["ctx/plan.md"]
            assert warm["left_out"][0]["path"] == "ctx/huge.md" and warm["tokens"] <= 2_000
            for i in range(6):
                await s.ok("append_log", agent_id="a", path="run", entry={"step": i})
            kept = await s.ok("forget_log", agent_id="a", path="run", keep_last=2)
            assert (kept["removed"], kept["remaining"]) == (4, 2)
            page = await s.ok("read_log", agent_id="a", path="run")
            assert [e["id"] for e in page["entries"]] == [5, 6]
            usage = await s.ok("get_usage_stats", agent_id="a")
            assert usage["log_entry_count"] == 2

    run(go())
