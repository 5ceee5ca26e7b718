"""Conflict checks across processes: of two writers racing from the same version, exactly one
wins, and the loser is told the version that won."""

import threading

from helpers import RawServer, Workers

ROUNDS = 40


def test_two_processes_racing_on_one_version_exactly_one_wins(tmp_path):
    db = tmp_path / "race.db"
    servers = [RawServer(db, tmp_path / f"stderr{i}.log") for i in range(2)]
    servers[0].ok("write_file", agent_id="a", path="doc", content="v1")
    barrier = threading.Barrier(2)
    wins, losses = [0, 0], []
    for round_ in range(ROUNDS):
        base = round_ + 1
        answers = [None, None]

        def race(i):
            barrier.wait()
            answers[i] = servers[i].call("write_file", agent_id="a", path="doc",
                                         content=f"round {round_} by {i}", expected_version=base)

        workers = Workers()
        for i in range(2):
            workers.start(race, i)
        workers.join()
        oks = [a[0] for a in answers]
        assert sorted(oks) == [False, True], answers
        winner = oks.index(True)
        wins[winner] += 1
        loss = answers[1 - winner][1]
        assert loss.startswith(f'conflict: "doc" is at version {base + 1}, but the call expected version {base}'), loss
        losses.append(loss)
        content = servers[1 - winner].ok("read_file", agent_id="a", path="doc")["content"]
        assert content == f"round {round_} by {winner}"
    for server in servers:
        server.close()
    print(f"\nfigure: {ROUNDS} races between two processes: wins {wins}, {len(losses)} conflicts, 0 lost updates")
