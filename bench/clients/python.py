#!/usr/bin/env python3
"""The Python client (clients/python, pg_coord) beside hand-written psycopg 3
loops sending the same SQL on the same cluster (PG* environment, pg_coord
installed there), for bench/run.sh's clients section:

    python3 bench/clients/python.py [--rounds R] [--jobs N] [--batch-jobs M] [--sides a,b]

Output (bench/run.sh's header, section clients, describes it): first one
line per comparison

    ratio|SIDE|BASELINE|MIN_RATIO|DESCRIPTION

then, for each round, one line per side (the sides alternate: forward in odd
rounds, backward in even ones)

    SIDE|JOBS_PER_S|CPU_US_PER_JOB|CLIENT_CPU_US_PER_JOB|SERVER_CPU_US_PER_JOB

CPU per job is this process's CPU time (all its threads) plus the CPU time of
the side's server backend (/proc/<pid>/stat of pg_backend_pid(), read just
before its connection closes), over the jobs the side finished (or
enqueued).  Every job runs a handler returning {"ok": 1}; payloads are {}.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python", "src"))
import psycopg  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

import pg_coord  # noqa: E402
import pg_coord.worker  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) a backend has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class Meter:
    """Server CPU of the backends opened for one side."""

    def __init__(self) -> None:
        self.server = 0.0

    def watch(self, conn: "psycopg.Connection[Any]") -> "psycopg.Connection[Any]":
        pid = conn.pgconn.backend_pid
        start = backend_cpu(pid)
        close = conn.close

        def closing() -> None:
            if not conn.closed:
                try:
                    self.server += backend_cpu(pid) - start
                except OSError:
                    pass
            close()
        conn.close = closing  # type: ignore[assignment]
        return conn

    def connect(self) -> "psycopg.Connection[Any]":
        return self.watch(psycopg.connect("", autocommit=True))


METER = Meter()
_lib_connect = pg_coord.worker.connect  # type: ignore[attr-defined]


def _metered_connect(*a: Any, **kw: Any) -> "psycopg.Connection[Any]":
    return METER.watch(_lib_connect(*a, **kw))


pg_coord.worker.connect = _metered_connect  # type: ignore[attr-defined]  # the Worker's connection, metered


def handler(payload: Any) -> Any:
    return {"ok": 1}


def work(job: "pg_coord.Job") -> Any:
    return handler(job.payload)


# -- hand-written loops: what a careful psycopg 3 user writes --------------------------
def hand_one_commit(q: str, n: int) -> int:
    """claim once, then coord.complete_and_claim per job (the SQL of
    Worker(concurrency=1) on a 0.4.0 extension)."""
    done = 0
    with METER.connect() as c:
        row = c.execute("SELECT id, payload, token FROM coord.claim(%s, 1, session_bound => true)",
                        (q,)).fetchone()
        while row is not None and row[0] is not None:
            result = handler(row[1])
            row = c.execute("SELECT completed, id, payload, token FROM coord.complete_and_claim(%s, %s, %s,"
                            " session_bound => true)", (row[0], row[2], Jsonb(result))).fetchone()
            done += 1
            row = row[1:] if row is not None else None
    return done


def hand_two_commits(q: str, n: int) -> int:
    """coord.claim, then coord.complete: two statements, two commits per job."""
    done = 0
    with METER.connect() as c:
        while True:
            row = c.execute("SELECT id, payload, token FROM coord.claim(%s, 1, session_bound => true)",
                            (q,)).fetchone()
            if row is None:
                return done
            result = handler(row[1])
            c.execute("SELECT coord.complete(%s, %s, %s)", (row[0], row[2], Jsonb(result)))
            done += 1


def hand_batch(q: str, n: int, batch: int = 16) -> int:
    """coord.claim of 16, each handler, one statement completing them all."""
    done = 0
    with METER.connect() as c:
        while True:
            rows = c.execute("SELECT id, payload, token FROM coord.claim(%s, %s, session_bound => true)",
                             (q, batch)).fetchall()
            if not rows:
                return done
            results = [Jsonb(handler(r[1])) for r in rows]
            c.execute("SELECT coord.complete(t.id, t.token, t.result) FROM ROWS FROM (unnest(%s::bigint[]),"
                      " unnest(%s::bigint[]), unnest(%s::jsonb[])) AS t(id, token, result)",
                      ([r[0] for r in rows], [r[2] for r in rows], results))
            done += len(rows)


def lib_worker(**kw: Any) -> Callable[[str, int], int]:
    def run(q: str, n: int) -> int:
        w = pg_coord.Worker("", q, work, burst=True, handle_signals=False, **kw)
        w.run()
        return w.completed
    return run


def enqueue_bare(q: str, n: int) -> int:
    with METER.connect() as c:
        for i in range(n):
            c.execute("SELECT coord.enqueue(%s, %s)", (q, Jsonb({"i": i})))
    return n


def enqueue_client(q: str, n: int) -> int:
    client = pg_coord.Client("")
    METER.watch(client.connection)
    with client:
        for i in range(n):
            client.enqueue(q, {"i": i})
    return n


# side -> (function, fill the queue first, which job count)
SIDES: Dict[str, Tuple[Callable[[str, int], int], bool, str]] = {
    "single-hand": (hand_one_commit, True, "jobs"),
    "single-worker": (lib_worker(), True, "jobs"),
    "twocommit-hand": (hand_two_commits, True, "jobs"),
    "twocommit-worker": (lib_worker(use_complete_and_claim=False), True, "jobs"),
    "batch-hand": (hand_batch, True, "batch_jobs"),
    "batch-worker": (lib_worker(concurrency=16, batch=16), True, "batch_jobs"),
    "enqueue-bare": (enqueue_bare, False, "jobs"),
    "enqueue-client": (enqueue_client, False, "jobs"),
}
RATIOS = [
    ("single-worker", "single-hand", "0.9",
     "Worker(concurrency=1) against a hand-written loop sending the same SQL (coord.complete_and_claim)"),
    ("batch-worker", "batch-hand", "0.9",
     "Worker(concurrency=16, batch=16) against a hand-written loop: claim 16, one statement completing them"),
    ("single-hand", "twocommit-hand", "1.3",
     "the one-commit loop (coord.complete_and_claim) against claim-then-complete, both hand-written"),
    ("single-worker", "twocommit-worker", "1.3",
     "Worker(concurrency=1) on coord.complete_and_claim against the same Worker claiming then completing"),
    ("twocommit-worker", "twocommit-hand", "0.9",
     "Worker(use_complete_and_claim=False) against the hand-written claim-then-complete loop"),
    ("enqueue-client", "enqueue-bare", "0.909",
     "Client.enqueue(q, payload) against a bare cursor execute of SELECT coord.enqueue(%s, %s)"),
]


def prepare(admin: "psycopg.Connection[Any]", q: str, fill: bool, n: int) -> None:
    admin.execute("DELETE FROM coord.job WHERE queue = %s", (q,))
    admin.execute("DELETE FROM coord.job_history WHERE queue = %s", (q,))
    admin.execute("VACUUM coord.job")
    if fill:
        admin.execute("SELECT count(*) FROM coord.enqueue_many(%s, array_fill('{}'::jsonb, ARRAY[%s]))", (q, n))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=800, help="jobs per round of a single-job or enqueue side")
    ap.add_argument("--batch-jobs", type=int, default=3200, help="jobs per round of a batched side")
    ap.add_argument("--sides", default=",".join(SIDES))
    a = ap.parse_args()
    sides = [s for s in a.sides.split(",") if s]
    for s in sides:
        if s not in SIDES:
            sys.exit(f"unknown side {s}; known: {', '.join(SIDES)}")
    for side, base, target, text in RATIOS:
        if side in sides and base in sides:
            print(f"ratio|{side}|{base}|{target}|{text}", flush=True)
    counts = {"jobs": a.jobs, "batch_jobs": a.batch_jobs}
    with psycopg.connect("", autocommit=True) as admin:
        # warm-up: every side once on a few jobs (imports, plans, caches)
        for s in sides:
            fn, fill, which = SIDES[s]
            q = f"bench_py_{s}"
            prepare(admin, q, fill, 50)
            fn(q, 50)
        for rnd in range(1, a.rounds + 1):
            for s in (sides if rnd % 2 else list(reversed(sides))):
                fn, fill, which = SIDES[s]
                n = counts[which]
                q = f"bench_py_{s}"
                prepare(admin, q, fill, n)
                METER.server = 0.0
                t0, c0 = time.perf_counter(), time.process_time()
                done = fn(q, n)
                dt, dc = time.perf_counter() - t0, time.process_time() - c0
                if done != n:
                    sys.exit(f"side {s}: {done} jobs of {n}")
                cl, sv = dc / done * 1e6, METER.server / done * 1e6
                print(f"{s}|{done / dt:.1f}|{cl + sv:.1f}|{cl:.1f}|{sv:.1f}", flush=True)
        for s in sides:
            prepare(admin, f"bench_py_{s}", False, 0)


if __name__ == "__main__":
    main()
