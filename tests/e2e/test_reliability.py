"""Durability under real processes: several servers on one file, kill -9 in a write storm,
a full disk, a read-only store. Each test prints its figures.

SCRATCHPAD_CRASH_KILLS sets how many kills the crash test makes (default 12; CI's long run
can raise it). SCRATCHPAD_SEED fixes the random kill times (default 20261130); the seed is
printed so a failure can be replayed.
"""

import os
import random
import sqlite3
import subprocess
import threading
import time

import pytest
from conftest import RawServer

PROCESSES, CALLS_EACH = 4, 60
KILLS = int(os.environ.get("SCRATCHPAD_CRASH_KILLS", "12"))
SEED = int(os.environ.get("SCRATCHPAD_SEED", "20261130"))


def read_whole_log(server, agent, path):
    entries, cursor = [], 0
    while True:
        ok, page = server.call("read_log", agent_id=agent, path=path, since_entry=cursor)
        assert ok, page
        entries += page["entries"]
        cursor = page["last_entry_id"]
        if not page["has_more"]:
            return entries


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

    threads = [threading.Thread(target=storm, args=(p, s)) for p, s in enumerate(servers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started

    attempted = 2 * PROCESSES * CALLS_EACH
    versions = sorted(v for v, _ in writes)
    assert versions == list(range(1, len(writes) + 1)), "every acknowledged write got its own version"
    ok, latest = servers[0].call("read_file", agent_id="team", path="shared.md")
    assert latest["content"] == dict(writes)[latest["current_version"]]
    logged = {e["id"]: e["entry"] for e in read_whole_log(servers[1], "team", "shared-log")}
    lost = sum(1 for entry_id, entry in appends if logged.get(entry_id) != entry)
    lost += len(writes) - len(set(versions))
    for failure in failures:
        assert failure.startswith("the store is busy"), failure
    stderr = "".join(s.stderr() for s in servers)
    for s in servers:
        s.close()
    assert "database is locked" not in stderr
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


def test_kill_9_in_a_write_storm_loses_no_acknowledged_write(tmp_path):
    rng = random.Random(SEED)
    print(f"\nseed {SEED}")
    db = tmp_path / "crash.db"
    acked_writes, acked_appends, lost, torn = [], [], 0, 0
    for kill in range(KILLS):
        server = RawServer(db, tmp_path / "stderr.log")

        def storm():
            for i in range(10_000):
                path, content = f"k{kill}/w{i}", f"kill {kill} write {i} " * 64
                answer = server.call("write_file", agent_id="storm", path=path, content=content)
                if answer is None:
                    return
                if answer[0]:
                    acked_writes.append((path, content))
                body = f"kill {kill} entry {i}"
                answer = server.call("append_log", agent_id="storm", path="log", entry=body)
                if answer is None:
                    return
                if answer[0]:
                    acked_appends.append((answer[1]["entry_id"], body))

        worker = threading.Thread(target=storm)
        worker.start()
        time.sleep(rng.uniform(0.05, 0.5))
        server.kill()
        worker.join()
        round_lost, round_torn = check_store(db, acked_writes, acked_appends)
        lost, torn = lost + round_lost, torn + round_torn

    # A server started after all that serves the same data.
    server = RawServer(db, tmp_path / "stderr.log")
    path, content = acked_writes[-1]
    assert server.call("read_file", agent_id="storm", path=path)[1]["content"] == content
    server.close()
    checked = len(acked_writes) + len(acked_appends)
    print(f"figure: {KILLS} kills, {checked} acknowledged writes checked, {lost} lost, {torn} torn")
    assert checked > KILLS, "the storm made progress before each kill"
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
    ok, usage = server.call("get_usage_stats", agent_id="a")
    assert ok and usage["file_count"] == len(written)
    server.close()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    print(f"\nfigure: disk full after {len(written)} writes of 200 KB; every earlier write intact")


def test_a_read_only_store_is_a_clear_error_and_does_no_damage(small_disk, tmp_path):
    db = small_disk / "store.db"
    server = RawServer(db, tmp_path / "stderr.log")
    assert server.call("write_file", agent_id="a", path="f", content="kept")[0]
    server.close()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    proc = subprocess.run([str(RawServer.binary()), "--db", str(db)], input="", capture_output=True,
                          text=True, timeout=60, env={"RUST_BACKTRACE": "1", "HOME": str(tmp_path)})
    assert proc.returncode != 0
    assert proc.stderr.endswith("the store cannot be written (read-only file or folder)\n"), proc.stderr
    assert "backtrace" not in proc.stderr.lower() and "panicked" not in proc.stderr
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    server = RawServer(db, tmp_path / "stderr.log")
    assert server.call("read_file", agent_id="a", path="f")[1]["content"] == "kept"
    server.close()
