#!/usr/bin/env python3
"""bench/await_notify.py RUNS QUEUE: coord.await's wake-up latency against a
LISTEN/NOTIFY wake-up measured the same way (make bench, section workflows).

Each run, alternately for the two kinds:
  await:  a waiter connection runs SELECT ... FROM coord.await(id, '10 s') on a
          claimed job (seen waiting in pg_stat_activity, wait_event_type
          Extension); a finisher connection runs BEGIN; coord.complete(id,
          token); COMMIT.
  notify: the waiter has run LISTEN and sleeps in select() on its socket; the
          finisher runs BEGIN; coord.complete(id, token); NOTIFY; COMMIT.
Latency = the waiter's client clock when the answer (await) or the
notification (notify) arrived, minus the finisher's client clock just before
it sent COMMIT (time.perf_counter in one process: the waiter is a thread
blocked in libpq, which releases the GIL).  The finisher runs with
synchronous_commit off, so the figure is the commit plus the wake-up, not the
WAL flush.  Prints one line per run: kind, milliseconds.
"""
import select
import sys
import threading
import time

import psycopg2

runs, queue = int(sys.argv[1]), sys.argv[2]


def connect():
    c = psycopg2.connect("")
    c.autocommit = True
    return c


setup, waiter, finisher = connect(), connect(), connect()
wpid = waiter.get_backend_pid()
finisher.cursor().execute("SET synchronous_commit = off")
waiter.cursor().execute("LISTEN wf_lat")
s = setup.cursor()


def claimed():
    s.execute("SELECT coord.enqueue(%s, '{}')", (queue,))
    s.execute("SELECT id, token FROM coord.claim(%s, 1, '1 hour')", (queue,))
    return s.fetchone()


def finish(job, notify):
    f = finisher.cursor()
    f.execute("BEGIN")
    f.execute("SELECT coord.complete(%s, %s)", job)
    if notify:
        f.execute("NOTIFY wf_lat")
    t0 = time.perf_counter()
    f.execute("COMMIT")
    return t0


for i in range(runs):
    for kind in ("await", "notify"):
        job = claimed()
        got = {}

        if kind == "await":
            def wait():
                waiter.cursor().execute("SELECT state FROM coord.await(%s, '10 seconds')", (job[0],))
                got["t"] = time.perf_counter()
            th = threading.Thread(target=wait)
            th.start()
            deadline = time.monotonic() + 5
            while True:
                s.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Extension'",
                          (wpid,))
                if s.fetchone()[0] == 1:
                    break
                if time.monotonic() > deadline:
                    sys.exit("the awaiter never waited")
                time.sleep(0.001)
        else:
            ready = threading.Event()

            def wait():
                waiter.notifies.clear()
                ready.set()
                while True:
                    select.select([waiter], [], [], 10)
                    waiter.poll()
                    if waiter.notifies:
                        got["t"] = time.perf_counter()
                        return
            th = threading.Thread(target=wait)
            th.start()
            ready.wait()
            time.sleep(0.005)    # the thread is in select() by now
        t0 = finish(job, kind == "notify")
        th.join(15)
        if "t" not in got:
            sys.exit(f"{kind}: no wake-up")
        print(f"{kind}\t{(got['t'] - t0) * 1000:.3f}", flush=True)
