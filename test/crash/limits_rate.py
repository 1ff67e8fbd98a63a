"""A queue-wide rate limit under real worker processes (issue 17).

300 jobs in one queue with coord.set_limit(rate => 10, per => '1 second',
burst => 5).  Six worker processes claim as fast as they can: three poll
(a claim every millisecond while the queue gives them nothing), three LISTEN
on "coord:<queue>" and sleep until coord.next_due(queue) (at most 200 ms);
half of each claim one job at a time, the other half up to four; half are
session-bound, half lease claims.  Each claim records the server's
clock_timestamp() in the claiming statement, and the job is completed at
once.

Passes when
  - no sliding one-second window [t, t + 1 s) of claim timestamps holds more
    than 15 claims (a bucket of 5 plus 10 refilled in a second),
  - the whole run takes about 30 s (295 claims at 10/s after the burst):
    between 25 and 40 s, a generous band: this is a correctness property of
    the limiter, not a performance figure,
  - every job was claimed exactly once and is done,
  - coord.limits shows the queue's limit (rate 10, per 1 s, burst 5).
Prints the figures (largest window, run time, claims per second after the
burst, empty claims, wake-ups).

Then the same workers on a second queue with a per-key rate instead
(coord.set_limit(rate => 5, burst => 2, per_key => true)) and 3 keys of 45
jobs each: no key has more than 7 claims in a one-second window, the run
takes about 8.6 s (43 claims per key at 5/s after the burst; 6-15 s), and
every job is done exactly once.

    limits_rate.py                 the test (the driver)
    limits_rate.py worker ...      one worker (started by the driver)

Environment: PGHOST/PGPORT/PGUSER (the cluster in the PG* environment)."""
import os
import select
import subprocess
import sys
import time

import psycopg2

DB = "coord_crash_rate"
QUEUE = "crash_rate"
KEY_QUEUE = "crash_rate_keys"
KEYS, KEY_JOBS, KEY_RATE, KEY_BURST = 3, 45, 5, 2
KEY_BAND = (6.0, 15.0)
HERE = os.path.dirname(os.path.abspath(__file__))
N_JOBS = 300
RATE, BURST = 10, 5
WINDOW_MAX = BURST + RATE          # claims in any one-second window at most
RUN_BAND = (25.0, 40.0)            # seconds for the whole run
TIME_LIMIT = 90.0                  # the driver gives up after this
# name, how it waits when a claim is empty, batch size, session-bound
WORKERS = [("poll-1", "poll", 1, True), ("poll-2", "poll", 4, False), ("poll-3", "poll", 1, False),
           ("listen-1", "listen", 1, False), ("listen-2", "listen", 4, True), ("listen-3", "listen", 1, True)]


def connect(db=DB, app="limits-rate"):
    conn = psycopg2.connect(dbname=db, application_name=app)
    conn.autocommit = True
    return conn


# ---------------------------------------------------------------- worker

def worker(name, how, batch, session_bound, queue, n_jobs):
    conn = connect(app=f"limits-rate:{name}")
    cur = conn.cursor()
    if how == "listen":
        cur.execute(f'LISTEN "coord:{queue}"')     # before the first claim
    claims = empty = wakeups = done = 0
    deadline = time.monotonic() + TIME_LIMIT
    while time.monotonic() < deadline:
        cur.execute("INSERT INTO t.claims (job_id, token, worker, batch, at)"
                    " SELECT c.id, c.token, %s, %s, pg_catalog.clock_timestamp()"
                    "   FROM coord.claim(%s, %s, session_bound => %s) AS c"
                    " RETURNING job_id, token",
                    (name, batch, queue, batch, session_bound))
        got = cur.fetchall()
        if got:
            claims += 1
            for job_id, token in got:
                cur.execute("SELECT coord.complete(%s, %s)", (job_id, token))
                if not cur.fetchone()[0]:
                    sys.exit(f"{name}: complete({job_id}, {token}) answered false")
                done += 1
            continue
        empty += 1
        cur.execute("SELECT count(*) FROM t.claims")
        if cur.fetchone()[0] >= n_jobs:
            break
        if how == "poll":
            time.sleep(0.001)
            continue
        cur.execute("SELECT extract(epoch FROM coord.next_due(%s) - pg_catalog.clock_timestamp())", (queue,))
        due = cur.fetchone()[0]
        wait = 0.2 if due is None else min(max(float(due), 0.0), 0.2)
        if wait > 0 and select.select([conn], [], [], wait)[0]:
            conn.poll()
            conn.notifies.clear()
            wakeups += 1
    print(f"{name}: {how}, batch {batch}, {'session-bound' if session_bound else 'lease'}: "
          f"{claims} claims, {done} jobs, {empty} empty claims, {wakeups} wake-ups", flush=True)


# ---------------------------------------------------------------- driver

def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def run_workers(queue, n_jobs):
    """Runs the WORKERS on queue until n_jobs are claimed; returns the seconds it took."""
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, __file__, "worker", n, how, str(b), "1" if sb else "0",
                               queue, str(n_jobs)],
                              stdout=subprocess.PIPE, text=True)
             for n, how, b, sb in WORKERS]
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1.0, TIME_LIMIT + 10 - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            fail("a worker did not end")
        outs.append(out.strip())
        if p.returncode != 0:
            fail(f"a worker exited {p.returncode}: {out.strip()}")
    for o in outs:
        print("  " + o)
    return time.monotonic() - t0


def per_key_phase(cur):
    """The per-key rate; returns the summary's words."""
    cur.execute("TRUNCATE t.claims")
    cur.execute("SELECT coord.set_limit(%s, rate => %s, per => '1 second', burst => %s, per_key => true)",
                (KEY_QUEUE, KEY_RATE, KEY_BURST))
    cur.execute("SELECT count(coord.enqueue(%s, '{}', limit_key => 'k' || k))"
                "  FROM generate_series(1, %s) AS i, generate_series(1, %s) AS k", (KEY_QUEUE, KEY_JOBS, KEYS))
    run_s = run_workers(KEY_QUEUE, KEYS * KEY_JOBS)
    cur.execute("SELECT count(*), count(DISTINCT c.job_id), count(*) FILTER (WHERE j.state = 'done')"
                "  FROM t.claims AS c JOIN coord.jobs AS j ON j.id = c.job_id")
    n_claims, n_distinct, n_done = cur.fetchone()
    cur.execute("SELECT string_agg(k || ' ' || w, ', ' ORDER BY k), max(w) FROM"
                " (SELECT j.limit_key AS k, max(n) AS w FROM"
                "   (SELECT c.job_id, count(*) OVER (PARTITION BY j.limit_key ORDER BY c.at RANGE BETWEEN CURRENT ROW"
                "                    AND interval '999999 microseconds' FOLLOWING) AS n"
                "      FROM t.claims AS c JOIN coord.jobs AS j ON j.id = c.job_id) AS x"
                "   JOIN coord.jobs AS j ON j.id = x.job_id GROUP BY j.limit_key) AS y")
    windows, window = cur.fetchone()
    # not asserted: what is left of the keys once their jobs are done (their buckets stay)
    cur.execute("SELECT count(*) FROM coord.limits WHERE queue = %s AND limit_key IS NOT NULL", (KEY_QUEUE,))
    key_rows = cur.fetchone()[0]
    limit = KEY_BURST + KEY_RATE
    print(f"  per-key rate {KEY_RATE}/s burst {KEY_BURST}, {KEYS} keys x {KEY_JOBS} jobs: {n_claims} claims of"
          f" {n_distinct} jobs, {n_done} done, in {run_s:.1f} s; largest 1 s window per key: {windows} (limit {limit});"
          f" coord.limits rows of its keys left with no job: {key_rows}")
    if n_claims != KEYS * KEY_JOBS or n_distinct != n_claims or n_done != n_claims:
        fail(f"per-key phase: {n_claims} claims of {n_distinct} jobs, {n_done} done: want each of"
             f" {KEYS * KEY_JOBS} claimed once, done")
    if window > limit:
        fail(f"per-key phase: a key has {window} claims in a one-second window, more than {limit}")
    if not KEY_BAND[0] <= run_s <= KEY_BAND[1]:
        fail(f"per-key phase: the run took {run_s:.1f} s, outside {KEY_BAND[0]:.0f}-{KEY_BAND[1]:.0f} s")
    return f"per key {KEY_RATE}/s burst {KEY_BURST} x {KEYS} keys in {run_s:.1f} s, largest window {window} <= {limit}"


def main():
    admin = connect("postgres")
    admin.cursor().execute(f"DROP DATABASE IF EXISTS {DB}")
    admin.cursor().execute(f"CREATE DATABASE {DB}")
    conn = connect()
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION pg_coord")
    cur.execute("CREATE SCHEMA t")
    # no unique constraint: a job claimed twice would show as two rows
    cur.execute("CREATE TABLE t.claims (job_id bigint, token bigint, worker text, batch int, at timestamptz)")
    cur.execute("SELECT coord.set_limit(%s, rate => %s, per => '1 second', burst => %s)", (QUEUE, RATE, BURST))
    cur.execute("SELECT count(*) FROM coord.enqueue_many(%s, array_fill('{}'::jsonb, ARRAY[%s]))",
                (QUEUE, N_JOBS))
    cur.execute("SELECT limit_key IS NULL AND rate = %s AND per = interval '1 second' AND burst = %s"
                "  FROM coord.limits WHERE queue = %s", (RATE, BURST, QUEUE))
    shown = cur.fetchall()

    run_s = run_workers(QUEUE, N_JOBS)
    cur.execute("SELECT count(*), count(DISTINCT job_id) FROM t.claims")
    n_claims, n_distinct = cur.fetchone()
    cur.execute("SELECT count(*) FROM coord.jobs WHERE queue = %s AND state = 'done'", (QUEUE,))
    n_done = cur.fetchone()[0]
    # the largest number of claims in a window [t, t + 1 s) that starts at a claim
    cur.execute("SELECT max(n) FROM (SELECT count(*) OVER (ORDER BY at RANGE BETWEEN CURRENT ROW"
                "                    AND interval '999999 microseconds' FOLLOWING) AS n FROM t.claims) AS w")
    window = cur.fetchone()[0]
    cur.execute("SELECT extract(epoch FROM max(at) - min(at)) FROM t.claims")
    span = float(cur.fetchone()[0] or 0)
    # the steady rate: claims after the first second, over the time they took
    cur.execute("SELECT count(*) - 1, extract(epoch FROM max(at) - min(at)) FROM t.claims"
                " WHERE at >= (SELECT min(at) FROM t.claims) + interval '1 second'")
    n_after, t_after = cur.fetchone()
    steady = n_after / float(t_after) if t_after else 0.0
    cur.execute("SELECT string_agg(n::text, ' ' ORDER BY s) FROM (SELECT s, count(*) AS n FROM"
                " (SELECT floor(extract(epoch FROM at - (SELECT min(at) FROM t.claims))) AS s FROM t.claims) AS x"
                " GROUP BY s) AS y")
    per_second = cur.fetchone()[0]
    print(f"  claims per second of the run: {per_second}")
    print(f"  {n_claims} claims of {n_distinct} distinct jobs, {n_done} done; largest 1 s window {window} claims"
          f" (limit {WINDOW_MAX}); first to last claim {span:.1f} s, whole run {run_s:.1f} s;"
          f" steady rate {steady:.2f}/s")
    if shown != [(True,)]:
        fail(f"coord.limits does not show the queue's limit (rate {RATE}, per 1 s, burst {BURST}): {shown}")
    if n_claims != N_JOBS or n_distinct != N_JOBS or n_done != N_JOBS:
        fail(f"{n_claims} claims of {n_distinct} jobs, {n_done} done: want each of {N_JOBS} jobs claimed once, done")
    if window > WINDOW_MAX:
        fail(f"a one-second window holds {window} claims, more than {WINDOW_MAX}")
    if not RUN_BAND[0] <= run_s <= RUN_BAND[1]:
        fail(f"the run took {run_s:.1f} s, outside {RUN_BAND[0]:.0f}-{RUN_BAND[1]:.0f} s")
    keys = per_key_phase(cur)
    conn.close()
    admin.cursor().execute(f"DROP DATABASE {DB}")
    print(f"limits_rate: {N_JOBS} jobs at {RATE}/s burst {BURST} by {len(WORKERS)} workers in {run_s:.1f} s,"
          f" largest 1 s window {window} <= {WINDOW_MAX}, steady {steady:.2f}/s; {keys}; each job done once: ok")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6], int(sys.argv[7]))
    else:
        main()
