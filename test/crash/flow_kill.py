"""A flow of 50 jobs under crashes, with real worker processes.

The flow is a random graph (each node after 0 to 3 earlier ones), enqueued
by one coord.enqueue_flow.  4 workers (2 session-bound, 2 with 2-second
leases) claim one job at a time; each records the claim in starts (its own
commit), works 20 to 200 ms, then in ONE transaction

    INSERT INTO results (job_id, token) ...;
    SELECT coord.complete(id, token);   -- false: ROLLBACK, else COMMIT

Two workers are SIGKILLed at random moments (a replacement of the same kind
is started each time) and the server is restarted once with pg_ctl -m
immediate.  At the end: every node is in results exactly once, with the
token of the claim that completed it; every start of a node (killed attempts
too) came after the results row of each of its parents; coord.job,
coord.job_wait and coord.job_dep are empty and the history holds 50 'done'.

    flow_kill.py               the test (the driver)
    flow_kill.py worker ...    one worker (started by the driver)

Environment: PGHOST/PGPORT/PGUSER (the cluster), PGDATA and COORD_TMP (for
the restart).  FLOW_SEED sets the random seed."""
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

DB = "coord_crash_flow"
QUEUE = "crash_flow"
HERE = os.path.dirname(os.path.abspath(__file__))
N_NODES = 50
N_WORKERS = 4
N_KILLS = 2
LEASE = "2 seconds"
TIME_LIMIT = 120.0
RECONNECT_LIMIT = 60.0



def worker(name, mode, seed):
    rng = random.Random(seed)
    stats = {"done": 0, "refused": 0, "reconnects": 0, "errors": []}
    conn = connect(DB, name, RECONNECT_LIMIT)
    hand = None
    while True:
        orphaned()
        try:
            cur = conn.cursor()
            if hand is None:
                cur.execute("SELECT id, token FROM coord.claim(%s, 1, lease => %s::interval, session_bound => %s)",
                            (QUEUE, LEASE, mode == "session"))
                row = cur.fetchone()
                conn.commit()
                if row is None:
                    cur.execute("SELECT (SELECT count(*) FROM coord.job WHERE queue = %s) "
                                "+ (SELECT count(*) FROM coord.job_wait WHERE queue = %s)", (QUEUE, QUEUE))
                    left = cur.fetchone()[0]
                    conn.commit()
                    if left == 0:
                        break
                    time.sleep(0.02)
                    continue
                hand = row
                cur.execute("INSERT INTO starts (job_id, token, worker) VALUES (%s, %s, %s)", (row[0], row[1], name))
                conn.commit()
                time.sleep(rng.uniform(0.02, 0.2))           # the work
            job_id, token = hand
            cur.execute("SELECT count(*) FROM coord.parent_results(%s, %s) WHERE state = 'done'", (job_id, token))
            parents_seen = cur.fetchone()[0]
            cur.execute("INSERT INTO results (job_id, token, worker, parents_seen) VALUES (%s, %s, %s, %s)",
                        (job_id, token, name, parents_seen))
            cur.execute("SELECT coord.complete(%s, %s)", (job_id, token))
            if cur.fetchone()[0]:
                conn.commit()
                stats["done"] += 1
            else:
                conn.rollback()
                stats["refused"] += 1
            hand = None
        except psycopg2.Error as err:
            if lost_connection(conn, err):
                try:
                    conn.close()
                except psycopg2.Error:
                    pass
                stats["reconnects"] += 1
                conn = connect(DB, name, RECONNECT_LIMIT)
                continue                                      # hand (if any) is tried again
            stats["errors"].append(f"{err.pgcode}: {str(err).strip()}")
            try:
                conn.rollback()
            except psycopg2.Error:
                pass
            hand = None
            if len(stats["errors"]) > 20:
                break
            time.sleep(0.05)
    conn.close()
    print(json.dumps(stats), flush=True)
    return 1 if stats["errors"] else 0


def setup(rng):
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
    # no unique constraint: a node done twice shows as two rows
    cur.execute("CREATE TABLE results (job_id bigint NOT NULL, token bigint NOT NULL, worker text NOT NULL, "
                "parents_seen int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
    cur.execute("CREATE TABLE starts (job_id bigint NOT NULL, token bigint NOT NULL, worker text NOT NULL, "
                "at timestamptz NOT NULL DEFAULT clock_timestamp())")
    cur.execute("CREATE TABLE edges (parent bigint NOT NULL, child bigint NOT NULL)")
    nodes = []
    for i in range(N_NODES):
        k = rng.randint(0, min(3, i))
        after = [f"n{p}" for p in rng.sample(range(i), k)]
        nodes.append({"name": f"n{i}", "queue": QUEUE, "payload": {"i": i}, "after": after})
    rng.shuffle(nodes)                                      # the flow orders them itself
    cur.execute("SELECT coord.enqueue_flow(%s)", (json.dumps(nodes),))
    ids = cur.fetchone()[0]
    for n in nodes:
        for p in n["after"]:
            cur.execute("INSERT INTO edges VALUES (%s, %s)", (ids[p], ids[n["name"]]))
    cur.execute("SELECT count(*) FROM coord.job WHERE queue = %s", (QUEUE,))
    ready = cur.fetchone()[0]
    roots = sum(1 for n in nodes if not n["after"])
    if ready != roots:
        fail(f"{ready} jobs ready after enqueue_flow, expected the {roots} roots")
    edges = sum(len(n["after"]) for n in nodes)
    conn.close()
    return roots, edges


def check(mon, workers, kills, restarts, elapsed, edges, crashes):
    q = mon.one
    problems = []
    n_results, n_distinct = q("SELECT count(*), count(DISTINCT job_id) FROM results")
    twice = q("SELECT count(*) FROM (SELECT job_id FROM results GROUP BY job_id HAVING count(*) > 1) d")[0]
    early = q("SELECT count(*), min(s.job_id) FROM edges e JOIN starts s ON s.job_id = e.child "
              "JOIN results r ON r.job_id = e.parent WHERE s.at <= r.at")
    unended_parent = q("SELECT count(*) FROM edges e JOIN starts s ON s.job_id = e.child "
                       "WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.job_id = e.parent)")[0]
    seen_short = q("SELECT count(*) FROM results r WHERE r.parents_seen <> "
                   "(SELECT count(*) FROM edges e WHERE e.child = r.job_id)")[0]
    token_mismatch = q("SELECT count(*) FROM results r JOIN coord.job_history h ON h.id = r.job_id "
                       "WHERE h.token <> r.token")[0]
    left = q("SELECT (SELECT count(*) FROM coord.job), (SELECT count(*) FROM coord.job_wait), "
             "(SELECT count(*) FROM coord.job_dep)")
    hist = q("SELECT count(*) FILTER (WHERE state = 'done'), count(*) FILTER (WHERE state <> 'done') "
             "FROM coord.job_history")
    starts = q("SELECT count(*), count(DISTINCT job_id) FROM starts")
    log(f"results: {n_results} rows, {n_distinct} distinct nodes; starts: {starts[0]} for {starts[1]} nodes")
    log(f"starts before a parent's result: {early[0]}; starts with a parent never done: {unended_parent}; "
        f"results whose parent_results missed a parent: {seen_short}")
    log(f"coord.job/job_wait/job_dep left: {left}; history done/other: {hist}")
    if n_results != N_NODES or n_distinct != N_NODES or twice:
        problems.append(f"{n_results} results rows for {n_distinct} nodes ({twice} twice), expected {N_NODES}")
    if early[0] or unended_parent:
        problems.append(f"{early[0] + unended_parent} starts of a node before its parents ended (e.g. {early[1]})")
    if seen_short:
        problems.append(f"{seen_short} nodes saw fewer done parents than they have")
    if token_mismatch:
        problems.append(f"{token_mismatch} results rows carry a token other than the history's")
    if tuple(left) != (0, 0, 0):
        problems.append(f"left behind in coord.job/job_wait/job_dep: {left}")
    if tuple(hist) != (N_NODES, 0):
        problems.append(f"coord.job_history has {hist}, expected ({N_NODES}, 0)")
    worker_reports(workers, problems, kills, restarts, N_KILLS)
    verdict(mon, DB, problems, crashes,
            f"flow_kill: a flow of {N_NODES} nodes ({edges} edges) done exactly once, parents first, by "
            f"{N_WORKERS} workers across {kills} SIGKILLs and {restarts} immediate restart in {elapsed:.1f}s")


def main():
    seed = int(os.environ.get("FLOW_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    log(f"seed {seed} (set FLOW_SEED to repeat the schedule)")
    log_start = server_log_size()
    roots, edges = setup(rng)
    log(f"enqueued a flow of {N_NODES} nodes, {roots} roots, {edges} edges")
    kill_at = sorted(rng.uniform(0.1, 0.8) for _ in range(N_KILLS))
    restart_at = rng.uniform(0.3, 0.6)
    modes = ["session", "lease"] * (N_WORKERS // 2)
    kill_kinds = ["session", "lease"]
    rng.shuffle(kill_kinds)
    serial = 0

    def spawn(mode):
        nonlocal serial
        serial += 1
        return Worker(__file__, f"w{serial}-{mode}", mode, rng.randrange(1 << 30))

    mon = Monitor(DB, "flow-driver", RECONNECT_LIMIT)
    workers = []
    try:
        workers.extend(spawn(m) for m in modes)
        t0 = time.monotonic()
        kills = restarts = 0
        while True:
            if time.monotonic() - t0 > TIME_LIMIT:
                fail(f"not finished after {TIME_LIMIT:.0f}s")
            done = mon.one("SELECT count(DISTINCT job_id) FROM results")[0]
            frac = done / N_NODES
            if kills < N_KILLS and frac >= kill_at[kills]:
                time.sleep(rng.uniform(0, 0.1))
                alive = [w for w in workers if not w.killed and w.proc.poll() is None and w.mode == kill_kinds[kills]]
                if alive:
                    victim = rng.choice(alive)
                    os.kill(victim.proc.pid, signal.SIGKILL)
                    victim.proc.wait()
                    victim.killed = True
                    kills += 1
                    workers.append(spawn(victim.mode))
                    log(f"  {time.monotonic() - t0:5.1f}s: SIGKILL {victim.name} at {done} done")
            if restarts == 0 and frac >= restart_at:
                time.sleep(rng.uniform(0, 0.1))
                subprocess.run(["bash", "-c", f". {HERE}/../lib.sh && coord_cluster_crash_restart"], check=True)
                restarts += 1
                log(f"  {time.monotonic() - t0:5.1f}s: immediate restart at {done} done")
            if all(w.killed or w.proc.poll() is not None for w in workers):
                break
            time.sleep(0.02)
        check(mon, workers, kills, restarts, time.monotonic() - t0, edges, server_log_problems(log_start))
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    main()
