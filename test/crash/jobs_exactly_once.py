"""Exactly-once job processing under crashes, with real worker processes.

8 worker processes (4 with session-bound claims, 4 with 2-second leases)
process 20,000 jobs.  Each job is done in ONE transaction:

    INSERT INTO results (job_id, worker, token) ...;
    SELECT coord.complete(id, token);   -- false: ROLLBACK, else COMMIT

results has no unique constraint, so a job done twice would show.  While
they work, 6 workers (3 of each kind) are killed with SIGKILL at random
moments (a replacement of the same kind is started each time, so 8 keep
running), and
the server is restarted once with pg_ctl -m immediate.  Workers survive the
restart by reconnecting; the job whose commit was in doubt is tried again,
and the rest of the batch they hold is completed with the old tokens (the
fencing tokens must refuse the ones that were claimed again meanwhile).

At the end: every enqueued job appears exactly once in results with the
token of the claim that completed it, coord.job is empty, coord.job_history
holds one 'done' row per job.

    jobs_exactly_once.py               the test (the driver)
    jobs_exactly_once.py worker ...    one worker (started by the driver)

Environment: PGHOST/PGPORT/PGUSER (the cluster), PGDATA and COORD_TMP (for
the restart).  JOBS_SEED sets the random seed, JOBS_N the number of jobs."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import psycopg2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from restart_common import (Monitor, Worker, connect, fail, log, lost_connection,  # noqa: E402
                            orphaned, server_log_problems, server_log_size, verdict, worker_reports)

DB = "coord_crash_jobs"
QUEUE = "crash_jobs"
HERE = os.path.dirname(os.path.abspath(__file__))
N_JOBS = int(os.environ.get("JOBS_N", "20000"))
N_WORKERS = 8
N_KILLS = 6
LEASE = "2 seconds"
TIME_LIMIT = 120.0          # seconds for the processing, from the first worker start
RECONNECT_LIMIT = 60.0      # seconds a worker keeps trying to reconnect




# ---------------------------------------------------------------- worker

def worker(name, mode, seed):
    """Claims batches of 1..10 jobs and does each in one transaction with complete."""
    rng = random.Random(seed)
    session_bound = mode == "session"
    stats = {"done": 0, "refused": 0, "reconnects": 0, "claims": 0, "errors": []}
    conn = connect(DB, name, RECONNECT_LIMIT)
    hand = []               # claimed jobs not yet done: [(id, token)]
    in_doubt = False        # hand[0] was being committed when the connection went
    carried = set()         # jobs claimed by an earlier connection of this worker
    while True:
        orphaned()
        try:
            cur = conn.cursor()
            if not hand:
                n = rng.randint(1, 10)
                cur.execute("SELECT id, token FROM coord.claim(%s, %s, lease => %s::interval, "
                            "session_bound => %s)", (QUEUE, n, LEASE, session_bound))
                rows = cur.fetchall()
                conn.commit()
                stats["claims"] += 1
                if not rows:
                    cur.execute("SELECT count(*) FROM coord.job WHERE queue = %s", (QUEUE,))
                    left = cur.fetchone()[0]
                    conn.commit()
                    if left == 0:
                        break
                    time.sleep(0.05)
                    continue
                hand = rows
            job_id, token = hand[0]
            cur.execute("INSERT INTO results (job_id, worker, token, carried) VALUES (%s, %s, %s, %s)",
                        (job_id, name, token, job_id in carried))
            cur.execute("SELECT coord.complete(%s, %s)", (job_id, token))
            ok = cur.fetchone()[0]
            if ok:
                conn.commit()
                stats["done"] += 1
            else:
                conn.rollback()
                stats["refused"] += 1
                # informative only: a claim this worker had lost
                cur.execute("INSERT INTO refused (job_id, worker, token, in_doubt, carried) "
                            "VALUES (%s, %s, %s, %s, %s)", (job_id, name, token, in_doubt, job_id in carried))
                conn.commit()
            hand.pop(0)
            in_doubt = False
        except psycopg2.Error as err:
            if lost_connection(conn, err):
                # the server went away: reconnect; the job at hand[0] is tried
                # again (its commit may or may not have happened), the rest of
                # the batch is completed with the old tokens
                try:
                    conn.close()
                except psycopg2.Error:
                    pass
                stats["reconnects"] += 1
                in_doubt = bool(hand)
                carried = {job_id for job_id, _ in hand}
                conn = connect(DB, name, RECONNECT_LIMIT)
                continue
            stats["errors"].append(f"{err.pgcode}: {str(err).strip()}")
            sys.stderr.write(f"{name}: unexpected error {err.pgcode}: {err}")
            try:
                conn.rollback()
            except psycopg2.Error:
                pass
            if len(stats["errors"]) > 20:
                break
            time.sleep(0.05)
    conn.close()
    print(json.dumps(stats), flush=True)
    return 1 if stats["errors"] else 0


# ---------------------------------------------------------------- driver

def setup():
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    cur = admin.cursor()
    cur.execute("SET client_min_messages = warning")
    cur.execute(f"DROP DATABASE IF EXISTS {DB}")
    cur.execute(f"CREATE DATABASE {DB}")
    admin.close()
    conn = psycopg2.connect(dbname=DB)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("CREATE EXTENSION pg_coord")
    # no unique constraint: a job done twice shows as two rows
    # carried: claimed before the worker lost its connection, completed after it reconnected
    cur.execute("CREATE TABLE results (job_id bigint NOT NULL, worker text NOT NULL, token bigint NOT NULL, "
                "carried boolean NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
    cur.execute("CREATE TABLE refused (job_id bigint, worker text, token bigint, in_doubt boolean, "
                "carried boolean, at timestamptz NOT NULL DEFAULT clock_timestamp())")
    cur.execute("CREATE TABLE enqueued (job_id bigint PRIMARY KEY, n int NOT NULL)")
    t0 = time.monotonic()
    batch = 1000
    returned = []
    for start in range(0, N_JOBS, batch):
        payloads = [json.dumps({"n": i}) for i in range(start, min(start + batch, N_JOBS))]
        cur.execute("SELECT coord.enqueue_many(%s, %s::jsonb[])", (QUEUE, payloads))
        returned.extend(r[0] for r in cur.fetchall())
    elapsed = time.monotonic() - t0
    # the accounting uses the jobs as stored; the ids enqueue_many returned are checked against them
    cur.execute("INSERT INTO enqueued SELECT id, (payload->>'n')::int FROM coord.job WHERE queue = %s", (QUEUE,))
    cur.execute("SELECT count(*), count(DISTINCT n), min(n), max(n) FROM enqueued")
    if cur.fetchone() != (N_JOBS, N_JOBS, 0, N_JOBS - 1):
        fail(f"coord.job does not hold one job for each of the {N_JOBS} payloads")
    cur.execute("SELECT count(*) FROM coord.job WHERE queue = %s", (QUEUE,))
    if cur.fetchone()[0] != N_JOBS:
        fail("not every enqueued job is ready")
    cur.execute("SELECT array_agg(job_id ORDER BY n) FROM enqueued")
    stored = cur.fetchone()[0]
    problems = []
    if returned != stored:
        bad = [k for k in range(min(len(returned), len(stored))) if returned[k] != stored[k]]
        first = bad[0] if bad else min(len(returned), len(stored))
        problems.append(f"coord.enqueue_many returned {len(returned)} ids ({len(set(returned))} distinct), "
                        f"{len(bad)} of them not the id of the job made from that array element "
                        f"(first: payload n={first}, in call {first // batch + 1} of {N_JOBS // batch}, got "
                        f"{returned[first] if first < len(returned) else None}, "
                        f"its job is {stored[first] if first < len(stored) else None})")
        log("problem: " + problems[-1])
    cur.execute("ANALYZE")
    conn.close()
    return elapsed, problems


def check(mon, workers, kills, restarts, elapsed, problems, crashes):
    q = mon.one
    n_results, n_distinct = q("SELECT count(*), count(DISTINCT job_id) FROM results")
    twice = q("SELECT count(*), min(job_id) FROM (SELECT job_id FROM results GROUP BY job_id "
              "HAVING count(*) > 1) d")
    missing = q("SELECT count(*), min(job_id) FROM enqueued e WHERE NOT EXISTS "
                "(SELECT 1 FROM results r WHERE r.job_id = e.job_id)")
    extra = q("SELECT count(*) FROM results r WHERE NOT EXISTS (SELECT 1 FROM enqueued e WHERE e.job_id = r.job_id)")[0]
    live = q("SELECT count(*) FROM coord.job")[0]
    hist = q("SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state <> 'done'), "
             "count(*) FROM coord.job_history")
    hist_missing = q("SELECT count(*) FROM enqueued e WHERE NOT EXISTS "
                     "(SELECT 1 FROM coord.job_history h WHERE h.id = e.job_id AND h.state = 'done')")[0]
    # the row written with complete carries the token of the claim that completed the job
    token_mismatch = q("SELECT count(*) FROM results r JOIN coord.job_history h ON h.id = r.job_id "
                       "WHERE h.token <> r.token")[0]
    not_done_state = q("SELECT count(*) FROM enqueued WHERE coord.job_state(job_id) IS DISTINCT FROM 'done'")[0]
    stats = q("SELECT ready, scheduled, running, dead, done_last_hour FROM coord.queue_stats WHERE queue = %s", QUEUE)
    refused, refused_in_doubt = q("SELECT count(*), count(*) FILTER (WHERE in_doubt) FROM refused")
    # a refused claim must never be the one that did the job, except for the job in doubt
    # whose commit had gone through before the connection was lost
    refused_done, refused_own = q("SELECT count(*) FILTER (WHERE NOT f.in_doubt), count(*) FILTER (WHERE f.in_doubt) "
                                  "FROM refused f JOIN results r ON r.job_id = f.job_id AND r.token = f.token")
    carried = q("SELECT count(*) FILTER (WHERE worker LIKE '%%session'), count(*) FILTER (WHERE worker LIKE '%%lease') "
                "FROM results WHERE carried")
    carried_refused = q("SELECT count(*) FILTER (WHERE worker LIKE '%%session'), "
                        "count(*) FILTER (WHERE worker LIKE '%%lease') FROM refused WHERE carried")
    attempts = q("SELECT max(attempt), count(*) FILTER (WHERE attempt > 1) FROM coord.job_history")
    by_worker = q("SELECT count(DISTINCT worker) FROM results")[0]

    log(f"results: {n_results} rows, {n_distinct} distinct jobs, by {by_worker} worker processes")
    log(f"jobs in results twice or more: {twice[0]}; enqueued jobs missing from results: {missing[0]}; "
        f"results for unknown jobs: {extra}")
    log(f"coord.job: {live} rows left; coord.job_history: {hist[0]} done, {hist[1]} other")
    log(f"coord.queue_stats ready/scheduled/running/dead/done_last_hour: {stats}")
    log(f"results whose token is not the completing claim's: {token_mismatch}; "
        f"job_state not 'done': {not_done_state}")
    log(f"complete() returned false {refused} times: {refused - refused_own} lost claims, {refused_own} retries "
        f"of a commit that had gone through before the connection went ({refused_in_doubt} retries in doubt "
        f"in all); refused claims that had done the job otherwise: {refused_done}")
    log(f"attempts: max {attempts[0]}, {attempts[1]} jobs claimed more than once")
    log(f"claims carried over a reconnect and then completed with the old token: accepted {carried[0]} "
        f"session-bound, {carried[1]} lease; refused {carried_refused[0]} session-bound, {carried_refused[1]} lease")

    if n_results != N_JOBS or n_distinct != N_JOBS:
        problems.append(f"{n_results} results rows for {n_distinct} distinct jobs, expected {N_JOBS}")
    if twice[0]:
        problems.append(f"{twice[0]} jobs done more than once (e.g. job {twice[1]})")
    if missing[0]:
        problems.append(f"{missing[0]} jobs never done (e.g. job {missing[1]})")
    if extra:
        problems.append(f"{extra} results rows for jobs never enqueued")
    if live:
        problems.append(f"{live} jobs left in coord.job")
    if hist[0] != N_JOBS or hist[1] or hist_missing:
        problems.append(f"coord.job_history has {hist[0]} done and {hist[1]} other rows, "
                        f"{hist_missing} enqueued jobs not done there")
    if token_mismatch:
        problems.append(f"{token_mismatch} results rows carry a token other than the history's")
    if not_done_state:
        problems.append(f"coord.job_state is not 'done' for {not_done_state} jobs")
    if refused_done:
        problems.append(f"{refused_done} claims refused by complete() were counted as done")
    if stats is None or tuple(stats) != (0, 0, 0, 0, N_JOBS):
        problems.append(f"coord.queue_stats shows {stats}, expected (0, 0, 0, 0, {N_JOBS})")

    worker_reports(workers, problems, kills, restarts, N_KILLS)
    verdict(mon, DB, problems, crashes,
            f"jobs_exactly_once: {N_JOBS} jobs done exactly once by {N_WORKERS} workers across {kills} SIGKILLs "
            f"and {restarts} immediate restart in {elapsed:.1f}s ({refused - refused_own} lost claims refused)")


def main():
    seed = int(os.environ.get("JOBS_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    log(f"seed {seed} (set JOBS_SEED to repeat the schedule)")
    log_start = server_log_size()
    t_enq, problems = setup()
    log(f"enqueued {N_JOBS} jobs in {t_enq:.1f}s")

    # kills at random points of the progress; the restart around the middle
    kill_at = sorted(rng.uniform(0.05, 0.85) for _ in range(N_KILLS))
    kill_kinds = ["session", "lease"] * (N_KILLS // 2)      # half of the victims of each kind
    rng.shuffle(kill_kinds)
    restart_at = rng.uniform(0.35, 0.6)
    modes = ["session", "lease"] * (N_WORKERS // 2)
    serial = 0

    def spawn(mode):
        nonlocal serial
        serial += 1
        return Worker(__file__, f"w{serial}-{mode}", mode, rng.randrange(1 << 30))

    mon = Monitor(DB, "jobs-driver", RECONNECT_LIMIT)
    workers = []
    try:
        run(mon, workers, spawn, modes, kill_at, kill_kinds, restart_at, rng, problems, log_start)
    finally:
        # never leave a worker behind, whatever happened
        for w in workers:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()


def run(mon, workers, spawn, modes, kill_at, kill_kinds, restart_at, rng, problems, log_start):
    workers.extend(spawn(m) for m in modes)
    t0 = time.monotonic()
    kills = restarts = 0
    done = 0
    last_report = t0
    while True:
        elapsed = time.monotonic() - t0
        if elapsed > TIME_LIMIT:
            for w in workers:
                if w.proc.poll() is None:
                    w.proc.kill()
                    w.proc.wait()
            left = mon.one("SELECT count(*) FROM coord.job")[0]
            fail(f"not finished after {TIME_LIMIT:.0f}s: {done} of {N_JOBS} in results, {left} jobs left")
        done = mon.one("SELECT count(*) FROM results")[0]
        if time.monotonic() - last_report >= 5:
            last_report = time.monotonic()
            log(f"  {elapsed:5.1f}s: {done} done")
        frac = done / N_JOBS
        if kills < N_KILLS and frac >= kill_at[kills]:
            # a random moment inside the victim's loop
            time.sleep(rng.uniform(0, 0.2))
            alive = [w for w in workers if not w.killed and w.proc.poll() is None and w.mode == kill_kinds[kills]]
            if alive:
                victim = rng.choice(alive)
                os.kill(victim.proc.pid, signal.SIGKILL)
                victim.proc.wait()
                victim.killed = True
                kills += 1
                workers.append(spawn(victim.mode))
                log(f"  {time.monotonic() - t0:5.1f}s: SIGKILL {victim.name} (pid {victim.proc.pid}) "
                    f"at {done} done; started {workers[-1].name}")
        if restarts == 0 and frac >= restart_at:
            time.sleep(rng.uniform(0, 0.2))
            t_r = time.monotonic()
            subprocess.run(["bash", "-c", f". {HERE}/../lib.sh && coord_cluster_crash_restart"], check=True)
            restarts += 1
            log(f"  {t_r - t0:5.1f}s: immediate restart at {done} done, server back in "
                f"{time.monotonic() - t_r:.1f}s")
        if all(w.killed or w.proc.poll() is not None for w in workers):
            break
        time.sleep(0.05)
    elapsed = time.monotonic() - t0
    log(f"all workers finished after {elapsed:.1f}s")
    check(mon, workers, kills, restarts, elapsed, problems, server_log_problems(log_start))



if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    main()
