#!/usr/bin/env python3
"""Jobs/s of the Python client beside a hand-written psycopg 3 loop doing the
same SQL on the same cluster (PG* environment; pg_coord installed there):

    python3 clients/python/bench.py [N]

single-job: Worker(concurrency=1) against claim(1) + complete; batched:
Worker(concurrency=16, batch=16) against claim(16) + one complete per job in
a statement; enqueue: Client.enqueue against a bare execute. Client CPU per
job is this process's CPU time. For make bench (bench/RESULTS.md)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
import psycopg  # noqa: E402
from psycopg.types.json import Jsonb  # noqa: E402

import pg_coord  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000


def fill(q: str) -> None:
    with psycopg.connect("", autocommit=True) as c:
        c.execute("SELECT coord.enqueue_many(%s, array_fill('{}'::jsonb, ARRAY[%s]))", (q, N))


def hand(q: str, n: int) -> int:
    done = 0
    with psycopg.connect("", autocommit=True) as c:
        while True:
            rows = c.execute("SELECT id, token FROM coord.claim(%s, %s, session_bound => true)", (q, n)).fetchall()
            if not rows:
                return done
            if n == 1:
                c.execute("SELECT coord.complete(%s, %s, %s)", (rows[0][0], rows[0][1], Jsonb({"ok": 1})))
            else:
                c.execute("SELECT coord.complete(t.id, t.token, t.r) FROM ROWS FROM (unnest(%s::bigint[]),"
                          " unnest(%s::bigint[]), unnest(%s::jsonb[])) t(id, token, r)",
                          ([r[0] for r in rows], [r[1] for r in rows], [Jsonb({"ok": 1})] * len(rows)))
            done += len(rows)


def worker(q: str, **kw: int) -> int:
    w = pg_coord.Worker("", q, lambda job: {"ok": 1}, burst=True, handle_signals=False, **kw)
    w.run()
    return w.completed


def enqueue_bare(q: str) -> int:
    with psycopg.connect("", autocommit=True) as c:
        for i in range(N):
            c.execute("SELECT coord.enqueue(%s, %s)", (q, Jsonb({"i": i})))
    return N


def enqueue_lib(q: str) -> int:
    with pg_coord.Client("") as c:
        for i in range(N):
            c.enqueue(q, {"i": i})
    return N


def measure(name: str, fn, prefill: bool = True) -> float:  # type: ignore[no-untyped-def]
    q = f"bench_py_{name.replace(' ', '_')}_{os.getpid()}"
    if prefill:
        fill(q)
    t0, c0 = time.perf_counter(), time.process_time()
    n = fn(q)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    print(f"{name:32s} {n / dt:8.0f} jobs/s   client CPU {dc / n * 1e6:6.0f} us/job", flush=True)
    return n / dt


a = measure("hand-written single-job", lambda q: hand(q, 1))
b = measure("Worker single-job", lambda q: worker(q))
c = measure("hand-written batch 16", lambda q: hand(q, 16))
d = measure("Worker concurrency 16 batch 16", lambda q: worker(q, concurrency=16, batch=16))
e = measure("bare enqueue", enqueue_bare, prefill=False)
f = measure("Client.enqueue", enqueue_lib, prefill=False)
print(f"ratios: single-job {b / a:.2f}x, batched {d / c:.2f}x, enqueue {f / e:.2f}x of the hand-written")
