"""Durability under real processes: several servers on one file, kill -9 in a write storm,
a full disk, a read-only store. Each test prints its figures.

SCRATCHPAD_CRASH_KILLS sets how many kills the crash test makes (default 12; CI's long run
can raise it). SCRATCHPAD_SEED (default 20261130, printed) fixes after how many acknowledged
calls each kill comes, so a failure replays: the kill lands in the same call each time.
"""

import os
import random
import sqlite3
import subprocess
import time

import pytest
from helpers import RawServer, Workers, run_cli

PROCESSES, CALLS_EACH = 4, 60
KILLS = int(os.environ.get("SCRATCHPAD_CRASH_KILLS", "12"))
SEED = int(os.environ.get("SCRATCHPAD_SEED", "20261130"))


def read_whole_log(server, agent, path):
    entries, cursor = [], 0
    while True:
        page = server.ok("read_log", agent_id=agent, path=path, since_entry=cursor)
        entries += page["entries"]
        cursor = page["last_entry_id"]
        if not page["has_more"]:
            return entries


def verified(db):
    """`scratchpad-mcp verify` on the store: every invariant checked, exit 0 or the report."""
    status, out, err = run_cli("--db", db, "verify")
    assert status == 0, out + err
    return out


def test_four_processes_on_one_file_lose_nothing(tmp_path):
    db = tmp_path / "shared.db"
    servers = [RawServer(db, tmp_path / f"stderr-{p}.log") for p in range(PROCESSES)]
    writes, appends, failures = [], [], []

    def storm(p, server):
        for i in range(CALLS_EACH):
            content = f"process {p} write {i}\n" * 20
            ok, result = server.call("write_file", agent_id="team", path="shared.md", content=content)
            (writes.append((result["version"], content)) if ok else failures.append(result))
            entry = {"process": p, "i": i}
            ok, result = server.call("append_log", agent_id="team", path="shared-log", entry=entry)
            (appends.append((result["entry_id"], entry)) if ok else failures.append(result))

    workers = Workers()
    started = time.monotonic()
    for p, server in enumerate(servers):
        workers.start(storm, p, server)
    workers.join()  # a server that died, or any other failure in a worker, fails here
    elapsed = time.monotonic() - started

    attempted = 2 * PROCESSES * CALLS_EACH
    assert len(writes) + len(appends) + len(failures) == attempted, "every call was answered"
    versions = sorted(v for v, _ in writes)
    assert versions == list(range(1, len(writes) + 1)), "every acknowledged write got its own version"
    latest = servers[0].ok("read_file", agent_id="team", path="shared.md")
    assert latest["content"] == dict(writes)[latest["current_version"]]
    logged = {e["id"]: e["entry"] for e in read_whole_log(servers[1], "team", "shared-log")}
    lost = sum(1 for entry_id, entry in appends if logged.get(entry_id) != entry)
    for failure in failures:
        assert failure.startswith("the store is busy"), failure
    stderr = "".join(s.stderr() for s in servers)
    for s in servers:
        s.close()  # each exits 0, without a panic
    assert "database is locked" not in stderr
    verified(db)
    print(f"\nfigure: {PROCESSES} processes, {attempted} calls attempted in {elapsed:.2f} s, "
          f"{len(writes) + len(appends)} succeeded, {len(failures)} failed (busy), {lost} lost")
    assert lost == 0 and len(logged) == len(appends)


def check_store(db, acked_writes, acked_appends):
    """(lost, torn) after a crash, read straight from the file as a later process would."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        lost = torn = 0
        for path, content in acked_writes:
            row = conn.execute(
                "SELECT v.content FROM versions v JOIN files f ON f.id = v.file_id "
                "WHERE f.agent_id = 'storm' AND f.path = ? AND v.version = f.current_version",
                (path,)).fetchone()
            if row is None:
                lost += 1
            elif row[0] != content:
                torn += 1
        for entry_id, body in acked_appends:
            row = conn.execute(
                "SELECT body FROM log_entries WHERE agent_id = 'storm' AND path = 'log' AND id = ?",
                (entry_id,)).fetchone()
            lost += row is None
            torn += row is not None and row[0] != body
        return lost, torn
    finally:
        conn.close()


def storm_call(kill, i):
    """The i-th call of round `kill`'s storm: a file write or a log append, in turn."""
    if i % 2 == 0:
        path = f"k{kill}/w{i}"
        return "write_file", {"agent_id": "storm", "path": path, "content": f"kill {kill} write {i} " * 64}
    return "append_log", {"agent_id": "storm", "path": "log", "entry": f"kill {kill} entry {i}"}


def test_kill_9_in_a_write_storm_loses_no_acknowledged_write(tmp_path):
    """Each round makes a seeded number of acknowledged calls, sends one more and kills the
    server while it runs it (after a seeded pause of up to 2 ms). Then the file is checked
    by hand and by `verify`: every acknowledged call is there, whole, the invariants hold."""
    rng = random.Random(SEED)
    print(f"\nseed {SEED} (SCRATCHPAD_SEED replays it)")
    db = tmp_path / "crash.db"
    acked_writes, acked_appends, lost, torn, kills = [], [], 0, 0, []
    for kill in range(KILLS):
        server = RawServer(db, tmp_path / "stderr.log")
        calls = rng.randint(1, 40)
        for i in range(calls):
            tool, args = storm_call(kill, i)
            answer = server.ok(tool, **args)
            if tool == "write_file":
                acked_writes.append((args["path"], args["content"]))
            else:
                acked_appends.append((answer["entry_id"], args["entry"]))
        tool, args = storm_call(kill, calls)
        server.send({"jsonrpc": "2.0", "id": 10_000, "method": "tools/call",
                     "params": {"name": tool, "arguments": args}})
        time.sleep(rng.uniform(0, 0.002))
        server.kill()
        assert server.proc.returncode == -9, "it was the kill that ended it"
        kills.append(calls)
        round_lost, round_torn = check_store(db, acked_writes, acked_appends)
        lost, torn = lost + round_lost, torn + round_torn
        verified(db)

    # A server started after all that serves the same data.
    server = RawServer(db, tmp_path / "stderr.log")
    path, content = acked_writes[-1]
    assert server.ok("read_file", agent_id="storm", path=path)["content"] == content
    server.close()
    checked = len(acked_writes) + len(acked_appends)
    print(f"figure: {KILLS} kills after {kills} acknowledged calls, {checked} acknowledged "
          f"writes checked, {lost} lost, {torn} torn, verify ok after each")
    assert checked == sum(kills)
    assert (lost, torn) == (0, 0)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs of our own: the only way to fill a disk safely."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip("needs permission to mount a tmpfs (root, as in CI)")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_clear_error_and_does_no_damage(small_disk, tmp_path):
    db = small_disk / "store.db"
    server = RawServer(db, tmp_path / "stderr.log")
    written, error = [], None
    for i in range(100):
        content = f"{i:04d}" * 50_000  # 200 KB, unique
        ok, result = server.call("write_file", agent_id="a", path=f"f{i}", content=content)
        if not ok:
            error = result
            break
        written.append((f"f{i}", content))
    assert error == "the disk or the store is full; nothing was changed", error
    assert written, "some writes fit first"
    for path, content in written:
        assert server.read_whole("a", path) == (True, content)
    assert server.ok("get_usage_stats", agent_id="a")["file_count"] == len(written)
    server.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    print(f"\nfigure: disk full after {len(written)} writes of 200 KB; every earlier write intact")


def test_a_read_only_store_is_a_clear_error_and_does_no_damage(small_disk, tmp_path):
    db = small_disk / "store.db"
    server = RawServer(db, tmp_path / "stderr.log")
    server.ok("write_file", agent_id="a", path="f", content="kept")
    server.close()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    status, _, err = run_cli("--db", db, input="", env={"RUST_BACKTRACE": "1", "HOME": str(tmp_path)})
    assert status != 0
    assert err.endswith("the store cannot be written (read-only file or folder)\n"), err
    assert "backtrace" not in err.lower() and "panicked" not in err
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    server = RawServer(db, tmp_path / "stderr.log")
    assert server.ok("read_file", agent_id="a", path="f")["content"] == "kept"
    server.close()
