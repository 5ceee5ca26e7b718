"""Two server instances on one PostgreSQL database, as a team would run them behind a load
balancer: the real binary twice, real HTTP, the official SDK, a real database, and a real
kill -9 in the middle of a storm of writes. And one client's session over stdio, where calls
on PostgreSQL run apart from the loop that reads requests.

The server comes from SCRATCHPAD_TEST_POSTGRES (a postgres:// URL of a role that may create
databases); each test gets a database of its own. Without it these tests are skipped, unless
SCRATCHPAD_REQUIRE_POSTGRES is set (CI sets it), in which case they fail."""

import asyncio
import http.client
import http.server
import itertools
import threading
import time

import pytest
from conftest import psql, run
from helpers import Hosted, RawServer, call, free_port, run_cli


def verify(url):
    status, out, err = run_cli("--database", url, "verify", cache=False)
    return status, out + err


@pytest.fixture
def pair(tmp_path, database):
    """Two instances on one database, sharing one config (its keys and limits)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    # The burst of 60 writes below is about the quota across instances, not about how many
    # calls one key may run at once (16 by default; test_http_bounds.py holds that bound).
    extra = "[limits]\nmax_files = 40\n[http]\nmax_calls_in_flight_per_key = 64\n"
    first = Hosted(tmp_path / "a", extra=extra, store=["--database", database])
    second = Hosted(tmp_path / "b", store=["--database", database], like=first)
    yield first, second, database
    for h in (first, second):
        if h.proc.poll() is None:
            h.stop()  # exits 0, without a panic
        assert "panicked" not in h.log_text()


def test_two_instances_answer_as_one_server(pair):
    first, second, url = pair

    async def go():
        async with first.client(first.keys["rw"]) as a, second.client(second.keys["rw"]) as b:
            old = "".join(f"line {i}\n" for i in range(1, 101))
            assert (await call(a, "write_file", agent_id="a", path="doc.md", content=old))[0]
            # The other instance sees it, diffs against it, and searches it.
            new = old.replace("line 50\n", "line fifty\n")
            ok, wrote = await call(b, "write_file", agent_id="a", path="doc.md", content=new,
                                   expected_version=1)
            assert ok and wrote["version"] == 2, wrote
            ok, diff = await call(a, "read_file", agent_id="a", path="doc.md", since_version=1)
            assert ok and [c["op"] for c in diff["diff"]] == ["skip", "equal", "remove", "add", "equal", "skip"]
            ok, found = await call(a, "search", agent_id="a", query="fifty")
            assert ok and found["hits"][0]["lines"][0]["line"] == 50, found
            # A write against the version the other instance replaced is a conflict.
            ok, e = await call(a, "write_file", agent_id="a", path="doc.md", content="stale",
                               expected_version=1)
            assert not ok and e.startswith('conflict: "doc.md" is at version 2'), e
            # The quota (40 files, from the shared config) holds across both at once.
            results = await asyncio.gather(*[
                call(c, "write_file", agent_id="a", path=f"q/{i}", content="x")
                for i in range(60) for c in [(a, b)[i % 2]]])
            made = [ok for ok, _ in results if ok]
            refused = [e for ok, e in results if not ok]
            assert len(made) == 39, (len(made), refused[:3])
            assert all(e.startswith("quota exceeded: ") for e in refused), refused[:3]
            ok, usage = await call(b, "get_usage_stats", agent_id="a")
            assert ok and usage["file_count"] == 40, usage

    run(go())
    status, out = verify(url)
    assert status == 0 and out.startswith("ok: 1 agent, 40 files"), out


def test_an_agents_rate_holds_across_instances(tmp_path, database):
    """The rate is the agent's, not each instance's: its burst is spent once, through both."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = Hosted(tmp_path / "a", "[http]\ncalls_per_second = 0.01\nburst = 3\n",
                   store=["--database", database])
    second = Hosted(tmp_path / "b", store=["--database", database], like=first)
    try:
        async def go():
            async with first.client(first.keys["rw"]) as a, second.client(second.keys["rw"]) as b:
                results = [await call(c, "list_files", agent_id="a") for c in (a, b) * 4]
                # Each instance alone would have let three through.
                assert [ok for ok, _ in results] == [True] * 3 + [False] * 5, results
                for _, e in results[3:]:
                    assert e.startswith('rate limit: agent "a" may make 0.01 calls a second; retry in '), e
            # Another agent's bucket is its own.
            async with second.client(second.keys["b"]) as c:
                ok, e = await call(c, "list_files", agent_id="b")
                assert ok, e
        run(go())
    finally:
        first.stop()
        second.stop()


def test_a_killed_instance_loses_no_acknowledged_write(pair):
    first, second, url = pair
    acknowledged = {"log": [], "files": {}}

    async def writer(instance, name, stop):
        """Appends and writes until stopped or its instance dies; records what was answered."""
        try:
            async with instance.client(instance.keys["rw"]) as c:
                n = 0
                while not stop.is_set():
                    n += 1
                    entry = f"{name}-{n}"
                    ok, _ = await call(c, "append_log", agent_id="a", path="storm", entry=entry)
                    assert ok
                    acknowledged["log"].append(entry)
                    ok, wrote = await call(c, "write_file", agent_id="a", path=f"w/{name}",
                                           content=entry)
                    assert ok
                    acknowledged["files"][name] = (wrote["version"], entry)
        except Exception:  # the instance was killed under this writer: expected, see below
            if instance.proc.poll() is None:
                raise

    async def go():
        stop = asyncio.Event()
        tasks = [asyncio.create_task(writer(h, f"{tag}{i}", stop))
                 for i in range(3) for tag, h in [("a", first), ("b", second)]]
        await asyncio.sleep(2)
        first.proc.kill()  # kill -9, in the middle of the storm
        first.proc.wait()
        await asyncio.sleep(1.5)
        stop.set()
        await asyncio.gather(*tasks)

    run(go())
    assert len(acknowledged["log"]) > 50, len(acknowledged["log"])

    async def check():
        async with second.client(second.keys["rw"]) as b:
            stored, since = [], None
            while True:
                args = {"agent_id": "a", "path": "storm"}
                if since is not None:
                    args["since_entry"] = since
                ok, page = await call(b, "read_log", **args)
                assert ok, page
                stored += [e["entry"] for e in page["entries"]]
                if not page["has_more"]:
                    break
                since = page["last_entry_id"]
            # Every acknowledged entry is there, once; nothing is there twice.
            assert len(stored) == len(set(stored))
            missing = set(acknowledged["log"]) - set(stored)
            assert not missing, sorted(missing)[:5]
            for name, (version, content) in acknowledged["files"].items():
                ok, f = await call(b, "read_file", agent_id="a", path=f"w/{name}")
                assert ok and f["current_version"] >= version, (name, f)
                if f["current_version"] == version:
                    assert f["content"] == content
            ok, usage = await call(b, "get_usage_stats", agent_id="a")
            assert ok and usage["log_entry_count"] == len(stored), usage
            assert usage["file_count"] == len(acknowledged["files"]), usage
        return len(stored)

    stored = run(check())
    # Counters equal rows, the index matches: nothing half-written by the killed instance.
    status, out = verify(url)
    assert status == 0, out
    # The killed instance comes back on the same database and serves.
    first.start()

    async def again():
        async with first.client(first.keys["rw"]) as a:
            ok, answer = await call(a, "append_log", agent_id="a", path="storm", entry="after")
            assert ok and answer["entry_id"] > stored, answer

    run(again())
    print(f"figure: {len(acknowledged['log'])} acknowledged appends, {stored} stored, 0 lost")


class RoundRobin:
    """A load balancer with no stickiness at all: each request goes to the next instance."""

    def __init__(self, *instances):
        self.served = [0] * len(instances)
        turns = itertools.cycle(range(len(instances)))
        lock = threading.Lock()
        balancer = self

        class Forward(http.server.BaseHTTPRequestHandler):
            def forward(self):
                with lock:
                    i = next(turns)
                    balancer.served[i] += 1
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream = http.client.HTTPConnection("127.0.0.1", instances[i].port, timeout=30)
                upstream.request(self.command, self.path, body, dict(self.headers))
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = forward

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Forward)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_any_instance_answers_any_request_behind_a_round_robin_balancer(pair, era):
    first, second, _ = pair
    balancer = RoundRobin(first, second)

    async def go():
        async with first.client(first.keys["rw"], era, url=balancer.url) as c:
            text = "".join(f"line {i}\n" for i in range(1, 41))
            for v in range(1, 7):
                text = text.replace(f"line {v}\n", f"line {v} changed\n")
                ok, wrote = await call(c, "write_file", agent_id="a", path="doc.md", content=text,
                                       expected_version=v - 1)
                assert ok and wrote["version"] == v, wrote
                if v > 1:
                    ok, read = await call(c, "read_file", agent_id="a", path="doc.md",
                                          since_version=v - 1)
                    assert ok and read["current_version"] == v and "diff" in read, read
            ok, found = await call(c, "search", agent_id="a", query="changed")
            assert ok and found["hits"][0]["path"] == "doc.md", found

    try:
        run(go())
    finally:
        balancer.close()
    assert min(balancer.served) >= 5, balancer.served


def test_stdio_on_postgresql_reads_writes_and_searches(tmp_path, database):
    """Over stdio a read on SQLite runs where the request was read; on PostgreSQL, whose
    reads wait on the network through a driver of their own, every call goes to the blocking
    pool. One client's session on PostgreSQL, each kind of call once, and a clean exit."""
    server = RawServer(None, tmp_path / "stderr.log", store=["--database", database])
    lines = [f"step {i} of the plan" for i in range(30)]
    first = server.ok("write_file", agent_id="a", path="plan.md", content="\n".join(lines))
    lines[15] = "step 15, done"
    second = server.ok("write_file", agent_id="a", path="plan.md", content="\n".join(lines))
    assert (first["version"], second["version"]) == (1, 2)
    diff = server.ok("read_file", agent_id="a", path="plan.md", since_version=1)
    assert diff["current_version"] == 2, diff
    assert [c["lines"] for c in diff["diff"] if c["op"] == "add"] == [["step 15, done"]], diff
    assert [f["path"] for f in server.ok("list_files", agent_id="a")["files"]] == ["plan.md"]
    hits = server.ok("search", agent_id="a", query="done")
    assert [h["path"] for h in hits["hits"]] == ["plan.md"], hits
    assert server.ok("append_log", agent_id="a", path="work", entry="read the plan")["entry_id"] == 1
    assert server.ok("get_usage_stats", agent_id="a")["file_count"] == 1
    server.close()  # exits 0, without a panic
    # Its read calls were counted in memory and written as it stopped: the next session
    # counts all seven calls.
    again = RawServer(None, tmp_path / "stderr.log", store=["--database", database])
    assert again.ok("get_usage_stats", agent_id="a")["total_operations"] == 7
    again.close()


def test_stdio_on_postgresql_outlives_its_connections_and_logs_why(tmp_path, database):
    """The database ends the server's connections mid-session, as a restart or failover
    does: the next calls are answered as if nothing happened, and the operator's log says
    what PostgreSQL said, not only the driver's "db error"."""
    log = tmp_path / "stderr.log"
    server = RawServer(None, log, store=["--database", database])
    assert server.ok("write_file", agent_id="a", path="f", content="one")["version"] == 1
    mine = "application_name = 'scratchpad-mcp' AND datname = current_database()"
    assert psql(database, f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE {mine}") != "0"
    while psql(database, f"SELECT count(*) FROM pg_stat_activity WHERE {mine}") != "0":
        time.sleep(0.01)
    assert server.ok("read_file", agent_id="a", path="f")["content"] == "one"
    assert server.ok("write_file", agent_id="a", path="f", content="two")["version"] == 2
    server.close()  # exits 0, without a panic
    said = log.read_text()
    assert "the connection to PostgreSQL was lost" in said, said
    assert "terminating connection due to administrator command" in said, said
