"""The operator's subcommands on real stores, with real server processes running beside them."""

import json
import os
import pty
import select
import sqlite3
import subprocess

from helpers import BINARY, INITIALIZE, WAIT_SECONDS, RawServer, Workers, command, environment, message, run_cli, wait_until


def ops(db, *args, input=None, **env):
    """Runs `scratchpad-mcp --db DB ARGS`; (exit status, stdout, stderr)."""
    return run_cli("--db", db, *args, env=env, input=input)


def test_a_snapshot_taken_during_a_write_storm_restores_to_a_sound_store(tmp_path):
    db = tmp_path / "live.db"
    writers = [RawServer(db, tmp_path / f"stderr{i}.log") for i in range(2)]
    workers = Workers()
    acked = [[] for _ in writers]
    stopping = []

    def storm(i, server):
        n = 0
        while not stopping and not workers.failed():
            server.ok("write_file", agent_id=f"w{i}", path=f"f{n % 50}", content=f"w{i} write {n}\n" * 40)
            server.ok("append_log", agent_id=f"w{i}", path="log", entry={"n": n})
            acked[i].append(n)
            n += 1

    for i, server in enumerate(writers):
        workers.start(storm, i, server)

    def progressed(count):
        # A failed writer ends the wait at once; join() below raises its failure.
        return workers.failed() or min(len(a) for a in acked) >= count

    wait_until(lambda: progressed(50), "50 acknowledged writes from each writer")
    snap = tmp_path / "snap"
    status, _, err = ops(db, "snapshot", snap)
    during = [len(a) for a in acked]
    wait_until(lambda: progressed(during[0] + 50), "50 more writes after the snapshot")
    stopping.append(True)
    workers.join()
    assert status == 0, err
    manifest = json.loads((snap / "manifest.json").read_text())
    print(f"\nfigure: snapshot during {sum(during)} acknowledged writes; manifest {manifest['counts']}")

    # While the servers run, restore refuses and says how to stop them.
    status, _, err = ops(db, "restore", snap)
    assert status == 2 and "in use by another process" in err, err
    for server in writers:
        server.close()

    status, _, err = ops(db, "restore", snap)
    assert status == 0, err
    assert "the store it replaced is kept at" in err
    status, out, err = ops(db, "verify")
    assert (status, out.startswith("ok:")) == (0, True), out + err
    status, out, _ = ops(db, "stats", "--json")
    stats = {a["agent_id"]: a for a in json.loads(out)}
    assert stats["w0"]["log_entries"] == manifest["counts"]["log_entries"] - stats["w1"]["log_entries"]
    # The restored store is the snapshot's: fewer entries than the storm went on to write.
    assert stats["w0"]["log_entries"] < len(acked[0])


def test_verify_exit_status_says_the_result(tmp_path):
    db = tmp_path / "s.db"
    server = RawServer(db, tmp_path / "stderr.log")
    server.ok("write_file", agent_id="a", path="f", content="hello")
    server.close()
    assert ops(db, "verify")[0] == 0
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE agents SET file_count = 7")
    # A change written by another tool leaves its page without the checksum it should have.
    status, out, _ = ops(db, "verify")
    assert status == 1 and "no longer holds the checksum it was written with" in out, out
    status, _, err = ops(tmp_path / "missing.db", "verify")
    assert status == 2 and err.startswith("scratchpad-mcp: cannot open the store"), err


def test_export_import_through_the_command_line(tmp_path):
    db, copy = tmp_path / "s.db", tmp_path / "copy.db"
    server = RawServer(db, tmp_path / "stderr.log")
    server.ok("write_file", agent_id="a", path="f", content="hello")
    server.ok("append_log", agent_id="a", path="log", entry={"b": 1, "a": 2})
    server.close()
    status, exported, _ = ops(db, "export", "--agent", "a")
    assert status == 0
    (tmp_path / "a.jsonl").write_text(exported)
    assert ops(copy, "import", tmp_path / "a.jsonl")[0] == 0
    status, _, err = ops(copy, "import", tmp_path / "a.jsonl")
    assert status == 2 and "pass --replace" in err, err
    assert ops(copy, "import", tmp_path / "a.jsonl", "--replace")[0] == 0
    assert ops(copy, "export", "--agent", "a")[1] == exported
    out = tmp_path / "backup.jsonl"
    assert ops(db, "export", "--agent", "a", "--out", out)[0] == 0
    assert out.read_text() == exported
    for typo in ["b", "a b"]:
        status, _, err = ops(db, "export", "--agent", typo, "--out", out)
        assert status == 2 and err.startswith("scratchpad-mcp: --agent: " if " " in typo else
                                              'scratchpad-mcp: agent "b" has nothing in this store'), err
        assert out.read_text() == exported, "a refused export leaves the file at its name as it was"
    assert sorted(p.name for p in tmp_path.glob("backup*")) == ["backup.jsonl"]


def test_config_file_limits_reach_a_running_server(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[limits]\nmax_write_bytes = 10\nversions_kept = 3\n")
    status, out, _ = ops(tmp_path / "s.db", "--config", config, "--print-config", ANTHROPIC_API_KEY="sk-secret")
    assert status == 0
    assert "max_write_bytes = 10" in out and "# from the config file" in out
    assert "ANTHROPIC_API_KEY: set" in out and "sk-secret" not in out
    server = RawServer(tmp_path / "s.db", tmp_path / "stderr.log", SCRATCHPAD_CONFIG=str(config))
    ok, error = server.call("write_file", agent_id="a", path="f", content="x" * 11)
    assert (ok, error) == (False, "content is 11 bytes; the limit for one write is 10 bytes")
    server.close()
    config.write_text("[limits]\nversions_kept = 0\n")
    status, _, err = ops(tmp_path / "s.db", "--config", config, "stats")
    assert status == 2 and "versions_kept = 0 is out of range: it must be 1 to 1000" in err, err


def test_progress_shows_on_a_terminal_only(tmp_path):
    db = tmp_path / "s.db"
    server = RawServer(db, tmp_path / "stderr.log")
    server.ok("write_file", agent_id="a", path="f", content="hello")
    server.close()
    # Not a terminal: stderr has the result line and nothing else.
    status, _, err = ops(db, "snapshot", tmp_path / "plain")
    assert status == 0 and "\r" not in err and err.startswith("snapshot of "), err
    # A terminal (script(1) gives the command a pseudo-terminal): the phases show, then clear.
    command = f"{BINARY} --db {db} snapshot {tmp_path / 'tty'}"
    done = subprocess.run(["script", "-qec", command, "/dev/null"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    for phase in ["snapshot: copying", "snapshot: verifying", "snapshot: hashing", "\x1b[K"]:
        assert phase in done.stdout, repr(done.stdout)


def test_verify_names_a_damaged_file_as_a_problem_found(tmp_path):
    """Bytes overwritten in a b-tree page: a problem found (exit 1) in a sentence, not a
    failure to check (exit 2) with a type name."""
    db = tmp_path / "s.db"
    server = RawServer(db, tmp_path / "stderr.log")
    for i in range(60):
        server.ok("write_file", agent_id="a", path=f"f{i}", content=f"text {i} " * 300)
    server.close()
    with open(db, "r+b") as f:
        f.seek(4096 * 2)  # the third page: a b-tree page of this store
        f.write(b"\xff" * 64)
    status, out, _ = ops(db, "verify")
    assert status == 1, out
    assert out.endswith("1 problem in " + str(db) + ":\n  page 3 of the store's file no longer holds the checksum it was written with: "
                        "the file was changed on disk (damage, or a tool writing it without scratchpad-mcp)\n"), out
    assert "Corrupt" not in out and "database error" not in out


def test_a_command_that_fails_says_why_in_one_line(tmp_path):
    """`--help` promises one line on stderr for an error: a store that is no database used to
    add a log line naming a module of the code before it."""
    garbage = tmp_path / "notes.txt"
    garbage.write_text("not a database, just notes\n" * 200)
    for args in [("stats",), ("export", "--agent", "a"), ("snapshot", str(tmp_path / "snap"))]:
        status, out, err = ops(garbage, *args)
        assert status == 2, (args, out, err)
        assert err == "scratchpad-mcp: the store's file is damaged: SQLite cannot read it as a database\n", (args, err)
    status, _, err = ops(tmp_path, "stats")
    assert status == 2 and err == (f"scratchpad-mcp: cannot open the store at {tmp_path}: it is a folder, "
                                   "and the store is a file (such as scratchpad.db in it)\n"), err
    # A store whose folder cannot be made names that folder (it used to give only the
    # system's words, "Not a directory", beside the store's path).
    under_a_file = garbage / "sub" / "s.db"
    status, _, err = ops(under_a_file, input="")
    assert status == 2 and err.startswith(
        f"scratchpad-mcp: cannot start: cannot open the store at {under_a_file}: "
        f"cannot create its folder {garbage / 'sub'}: "), err
    assert err.count("\n") == 1, err
    # A database that cannot be reached is one line too, without the URL's password (the
    # connection's failure was also logged, a second line naming a module of the code).
    for args in [("stats",), ("verify",)]:
        status, _, err = run_cli("--database", "postgres://sp:s3cret@127.0.0.1:1/sp", *args)
        assert status == 2 and err == (
            "scratchpad-mcp: cannot open the store at postgres://sp:***@127.0.0.1:1/sp: cannot connect "
            "to PostgreSQL: error connecting to server: Connection refused (os error 111)\n"), (args, err)


def test_verify_finds_one_changed_byte_anywhere_in_a_page(tmp_path):
    """One byte of a stored version changed on disk ("text" to "tExt"), and one byte of a
    timestamp on another page: each is a problem found, naming its page."""
    db = tmp_path / "s.db"
    server = RawServer(db, tmp_path / "stderr.log")
    for i in range(40):
        server.ok("write_file", agent_id="a", path=f"f{i}", content=f"plain text {i} " * 200)
    server.ok("write_file", agent_id="a", path="marked", content="the marked text")
    server.close()
    assert ops(db, "verify")[0] == 0
    data = bytearray(db.read_bytes())
    for needle, at in [(b"the marked text", 5), (b"Z", -2)]:
        copy = bytearray(data)
        found = copy.rfind(needle)
        assert found > 0, needle
        copy[found + at] ^= 0x20  # "text" -> "tExt"; a digit of the last timestamp
        db.write_bytes(bytes(copy))
        status, out, _ = ops(db, "verify")
        page = found // 4096 + 1
        assert status == 1 and f"page {page} of the store's file no longer holds the checksum" in out, (needle, out)
    db.write_bytes(bytes(data))
    assert ops(db, "verify")[0] == 0


def mode(path):
    return path.stat().st_mode & 0o777


def test_what_the_server_writes_is_its_owners_only(tmp_path):
    """Under the usual umask (022), the store and everything beside it, snapshots, exports,
    the compiled-component cache and the config holding the keys' hashes are 0600 files in
    0700 folders; `keys add` keeps a config file private."""
    previous = os.umask(0o022)
    try:
        check_modes(tmp_path)
    finally:
        os.umask(previous)


def test_a_cache_folder_that_cannot_be_made_is_named_and_the_server_serves(tmp_path):
    """The compiled tool logic is only cached: a cache folder under a file costs each start a
    compile, which the log says once, naming the file it could not write; the calls are
    answered as ever."""
    blocker = tmp_path / "a-file"
    blocker.write_text("kept")
    requests = "".join(json.dumps(m) + "\n" for m in [
        message("initialize", INITIALIZE, 1), message("notifications/initialized"),
        message("tools/call", {"name": "write_file", "arguments": {"agent_id": "a", "path": "f", "content": "x"}}, 2)])
    status, out, err = run_cli("--db", tmp_path / "s.db", "--cache-dir", blocker / "cache", input=requests,
                               cache=False)
    assert status == 0, err
    assert '"version":1' in out.splitlines()[1], out
    warnings = [line for line in err.splitlines() if "could not cache the compiled component" in line]
    assert len(warnings) == 1 and f"file={blocker / 'cache'}/" in warnings[0], err
    assert "each start compiles it again" in warnings[0], err
    assert blocker.read_text() == "kept"


def check_modes(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    store = home / ".local" / "share" / "scratchpad-mcp"
    cache = tmp_path / "cache"
    requests = "".join(json.dumps(m) + "\n" for m in [
        message("initialize", INITIALIZE, 1), message("notifications/initialized"),
        message("tools/call", {"name": "write_file", "arguments": {"agent_id": "a", "path": "f", "content": "x"}}, 2)])
    status, _, err = run_cli("--cache-dir", cache, env=env, input=requests, cache=False)
    assert status == 0, err
    files = [p for p in store.iterdir()]
    assert {p.name for p in files} >= {"scratchpad.db", "scratchpad.db.lock"}, files
    assert mode(store) == 0o700
    for path in files:
        assert mode(path) == 0o600, (path.name, oct(mode(path)))
    assert mode(cache) == 0o700 and all(mode(p) == 0o600 for p in cache.rglob("*") if p.is_file())
    status, _, err = run_cli("snapshot", tmp_path / "snap", env=env)
    assert status == 0, err
    assert mode(tmp_path / "snap") == 0o700
    assert [oct(mode(p)) for p in sorted((tmp_path / "snap").iterdir())] == ["0o600", "0o600"]
    status, _, err = run_cli("export", "--agent", "a", "--out", tmp_path / "a.jsonl", env=env)
    assert status == 0 and mode(tmp_path / "a.jsonl") == 0o600, err
    config = tmp_path / "etc" / "config.toml"
    status, _, err = run_cli("--config", config, "keys", "add", "k", "--agent", "a", env=env)
    assert status == 0 and (mode(config.parent), mode(config)) == (0o700, 0o600), err
    config.chmod(0o600)
    status, _, err = run_cli("--config", config, "keys", "add", "k2", "--agent", "a", env=env)
    assert status == 0 and mode(config) == 0o600, (err, oct(mode(config)))


def test_started_by_hand_it_says_what_it_waits_for(tmp_path):
    """Run in a terminal, the server says on stderr that it serves MCP on stdio for a client,
    and where its store is; Ctrl-D ends it. Started by a client (a pipe), it says nothing."""
    db = tmp_path / "s.db"
    leader, follower = pty.openpty()
    server = subprocess.Popen(command("--db", db), stdin=follower, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=environment())
    os.close(follower)
    try:
        ready, _, _ = select.select([server.stderr], [], [], WAIT_SECONDS)
        assert ready, "no word on stderr"
        hint = server.stderr.readline()
        assert hint.decode() == (f"scratchpad-mcp: serving MCP on stdio (store: {db}); an MCP client starts "
                                 "this command and speaks JSON-RPC on its stdin (see README.md, \"Add it to "
                                 "your client\"). Ctrl-D ends it; --help lists the other commands.\n"), hint
        os.write(leader, b"\x04")  # Ctrl-D: the end of the terminal's input
        assert server.wait(timeout=WAIT_SECONDS) == 0
    finally:
        server.kill()
        os.close(leader)
    assert server.stderr.read() == b"" and server.stdout.read() == b""
    status, out, err = ops(db, input="")
    assert (status, out, err) == (0, "", ""), (status, out, err)
