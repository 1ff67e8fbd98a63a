"""A batch under killed workers (issue 27, crash test; docs/batches.md).

One batch of JOBS jobs (BATCH_JOBS, default 20,000: about a minute on a
shared 2-core box; BATCH_JOBS=100000 ran in 51 s on a quiet one) in queue crash_batch,
enqueued with enqueue_many by two producer connections at once (so from
several transactions), one in 20 jobs with max_attempts 1 and a payload
that tells the worker to fail it (it dies).  WORKERS worker processes (real
processes, each its own connection) claim up to 20 jobs at a time -- half
of them lease claims (lease 3 s), half session-bound -- and complete them
one by one, or all at once with complete_many, or fail the marked ones.
Every KILL_EVERY seconds a random worker is SIGKILLed mid-work and a new one
started: its session-bound claims come free at once, its lease claims when
the lease passes (the next claim of a job whose last attempt was taken kills
it: dead, counted too).  Meanwhile an admin connection cancels some ready
jobs, and the batch is sealed while the workers run.

Checks, once coord.batches says the batch has nothing waiting (or the
deadline passes): exactly one job was enqueued into the callback queue, its
payload is the batch's callback_payload plus counts that equal the history's
(done, dead, cancelled of the batch's jobs, summing to the jobs enqueued),
and the view agrees.  Prints the job count, the time taken, and how many
workers were killed.
"""
import os
import random
import signal
import subprocess
import sys
import time

import psycopg2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from crash_common import connect, scratch_db  # noqa: E402

DB = "coord_crash_batch"
QUEUE = "crash_batch"
CALLBACK = "crash_batch_done"
JOBS = int(os.environ.get("BATCH_JOBS", "20000"))
WORKERS = int(os.environ.get("BATCH_WORKERS", "4"))
KILL_EVERY = float(os.environ.get("BATCH_KILL_EVERY", "0.7"))
DEADLINE = float(os.environ.get("BATCH_DEADLINE", "240"))


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def worker(n):
    """A worker: claim, complete (one by one or all at once) or fail."""
    conn = psycopg2.connect(dbname=DB, application_name=f"batch-worker-{n}")
    conn.autocommit = True
    cur = conn.cursor()
    session_bound = n % 2 == 0
    rng = random.Random(n * 7919 + os.getpid())
    while True:
        cur.execute("SELECT id, token, payload->>'f' FROM coord.claim(%s, 20, lease => '3 s', "
                    "session_bound => %s)", (QUEUE, session_bound))
        rows = cur.fetchall()
        if not rows:
            time.sleep(0.05)
            continue
        good = [(i, t) for i, t, f in rows if f is None]
        for i, t, f in rows:
            if f is not None:
                cur.execute("SELECT coord.fail(%s, %s, 'marked to fail')", (i, t))
        if rng.random() < 0.5 or session_bound:
            for i, t in good:
                cur.execute("SELECT coord.complete(%s, %s)", (i, t))
        elif good:
            cur.execute("SELECT coord.complete_many(%s, %s)",
                        ([i for i, _ in good], [t for _, t in good]))


def spawn(n):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(n)])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(int(sys.argv[2]))
        return
    with scratch_db(DB) as mon:
        cur = mon.cursor()
        cur.execute("SELECT coord.open_batch(%s, '{\"report\": \"crash\"}')", (CALLBACK,))
        batch = cur.fetchone()[0]
        started = time.monotonic()
        procs = {n: spawn(n) for n in range(WORKERS)}
        next_n = WORKERS
        kills = 0
        try:
            # two producers, chunks of 5,000, from several transactions
            prods = [connect(DB, "batch-producer-a"), connect(DB, "batch-producer-b")]
            chunk = 5000
            for k, start in enumerate(range(0, JOBS, chunk)):
                size = min(chunk, JOBS - start)
                pc = prods[k % 2].cursor()
                pc.execute(
                    "SELECT count(*) FROM coord.enqueue_many(%s, ARRAY(SELECT CASE WHEN g %% 20 = 0 "
                    "THEN jsonb_build_object('f', 1) ELSE jsonb_build_object('i', g) END "
                    "FROM generate_series(%s, %s) AS g ORDER BY g), max_attempts => 2, batch => %s)",
                    (QUEUE, start + 1, start + size, batch))
                if pc.fetchone()[0] != size:
                    fail("enqueue_many added fewer jobs than asked")
            # the marked jobs die at their first failure
            cur.execute("UPDATE coord.job SET max_attempts = 1 WHERE batch = %s AND payload ? 'f'", (batch,))
            cur.execute("SELECT coord.seal_batch(%s)", (batch,))
            if not cur.fetchone()[0]:
                fail("seal_batch returned false for an open batch")
            cancelled_by_admin = 0
            last_kill = time.monotonic()
            rng = random.Random(27)
            while time.monotonic() - started < DEADLINE:
                cur.execute("SELECT waiting, callback_job FROM coord.batches WHERE batch = %s", (batch,))
                waiting, cb = cur.fetchone()
                if waiting == 0:
                    break
                if cancelled_by_admin < 200:
                    cur.execute("SELECT count(*) FILTER (WHERE coord.cancel(id)) FROM (SELECT id FROM coord.job "
                                "WHERE batch = %s AND NOT coord.job_claimed(id) AND lease_until IS NULL "
                                "LIMIT 20 FOR UPDATE SKIP LOCKED) AS j", (batch,))
                    cancelled_by_admin += cur.fetchone()[0]
                if time.monotonic() - last_kill >= KILL_EVERY:
                    n = rng.choice(sorted(procs))
                    procs[n].send_signal(signal.SIGKILL)
                    procs[n].wait()
                    del procs[n]
                    kills += 1
                    procs[next_n] = spawn(next_n)
                    next_n += 1
                    last_kill = time.monotonic()
                time.sleep(0.05)
            else:
                fail(f"the batch still had {waiting} jobs waiting after {DEADLINE} s")
            took = time.monotonic() - started
        finally:
            for p in procs.values():
                p.send_signal(signal.SIGKILL)
                p.wait()
        for p in prods:
            p.close()
        cur.execute("SELECT id, payload FROM coord.job WHERE queue = %s UNION ALL "
                    "SELECT id, payload FROM coord.job_history WHERE queue = %s", (CALLBACK, CALLBACK))
        callbacks = cur.fetchall()
        if len(callbacks) != 1:
            fail(f"{len(callbacks)} callback jobs, want exactly 1")
        cur.execute("SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state = 'dead'), "
                    "count(*) FILTER (WHERE state = 'cancelled'), count(*) FROM coord.job_history "
                    "WHERE batch = %s", (batch,))
        done, dead, cancelled, total = cur.fetchone()
        if total != JOBS:
            fail(f"{total} jobs of the batch in the history, want {JOBS}")
        want = {"report": "crash", "batch": batch, "done": done, "dead": dead, "cancelled": cancelled}
        if callbacks[0][1] != want:
            fail(f"callback payload {callbacks[0][1]}, want {want}")
        cur.execute("SELECT total, done, dead, cancelled, waiting, callback_job FROM coord.batches "
                    "WHERE batch = %s", (batch,))
        view = cur.fetchone()
        if view != (JOBS, done, dead, cancelled, 0, callbacks[0][0]):
            fail(f"coord.batches shows {view}")
        if dead == 0 or cancelled == 0 or kills == 0:
            fail(f"the run did not exercise every end (dead {dead}, cancelled {cancelled}, kills {kills})")
        print(f"ok: {JOBS} jobs ({done} done, {dead} dead, {cancelled} cancelled) in {took:.1f} s, "
              f"{kills} workers killed, one callback (job {callbacks[0][0]})", flush=True)


if __name__ == "__main__":
    main()
