"""Three members of a partition group, weights 3:2:1, each a process of
its own claiming session-bound jobs of one queue through coord.claim(...,
partition_group).  Mid-run the weight-2 member's client is SIGKILLed (its
backend ends at once, with no cleanup of ours).  Passes when:
  - the survivors own all the group's segments again, in the split the
    weights 3:1 give (measured: how long after the kill; the bound here only
    catches segments that are never taken over),
  - every job was done exactly once (done rows, one per job, none lost),
  - no claim returned a job outside the claimer's owned segments.
Needs the cluster in the PG* environment; creates and drops its database."""
import os
import signal
import subprocess
import sys
import time

import psycopg2

DB = "coord_crash_parts"
GROUP = "crash/g"
SEGMENTS = 64
JOBS = 600


def connect(db=DB, app="parts-test"):
    conn = psycopg2.connect(dbname=db, application_name=app)
    conn.autocommit = True
    return conn


def worker(name, weight):
    conn = connect(app=f"parts-{name}")
    cur = conn.cursor()
    cur.execute("SELECT coord.join(%s, %s, %s, segments => %s)", (GROUP, name, weight, SEGMENTS))
    print("joined", flush=True)
    idle_since = None
    while True:
        conn.autocommit = False
        cur.execute("""SELECT id, token, coord.segment_of(%s, key) FROM coord.claim('pq', 2, session_bound => true,
                                                                            partition_group => %s)""",
                    (GROUP, GROUP))
        rows = cur.fetchall()
        cur.execute("SELECT coord.segment_token(%s, s) IS NOT NULL FROM unnest(%s::integer[]) AS s",
                    (GROUP, [r[2] for r in rows]))
        outside = sum(1 for (ok,) in cur.fetchall() if not ok)
        for (job, token, seg) in rows:
            cur.execute("INSERT INTO done (job_id, member, outside) VALUES (%s, %s, %s)", (job, name, outside > 0))
            cur.execute("SELECT coord.complete(%s, %s)", (job, token))
        conn.commit()
        conn.autocommit = True
        if rows:
            idle_since = None
            time.sleep(0.004)
        else:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 1.5:
                break
            time.sleep(0.01)
    print("finished", flush=True)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "worker":
        worker(sys.argv[2], float(sys.argv[3]))
        return
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    ac = admin.cursor()
    ac.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    ac.execute(f"CREATE DATABASE {DB}")
    procs = {}
    try:
        mon = connect()
        cur = mon.cursor()
        cur.execute("CREATE EXTENSION pg_coord")
        cur.execute("CREATE TABLE done (job_id bigint, member text, outside boolean)")
        cur.execute("SELECT count(coord.enqueue('pq', jsonb_build_object('n', n), key => 'k' || n)) "
                    "FROM generate_series(1, %s) AS n", (JOBS,))
        for name, weight in (("a", 3), ("b", 2), ("c", 1)):
            procs[name] = subprocess.Popen([sys.executable, __file__, "worker", name, str(weight)],
                                           stdout=subprocess.PIPE, text=True)
        for p in procs.values():
            if p.stdout.readline().strip() != "joined":
                sys.exit("FAIL: a member did not join")
        # until a third of the jobs are done
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            cur.execute("SELECT count(*) FROM done")
            if cur.fetchone()[0] >= JOBS // 3:
                break
            time.sleep(0.01)
        cur.execute("SELECT member, owned FROM coord.members WHERE partition_group = %s ORDER BY member", (GROUP,))
        before = dict(cur.fetchall())
        killed_at = time.monotonic()
        os.kill(procs["b"].pid, signal.SIGKILL)
        procs["b"].wait()
        # the survivors own every segment again (each takes on its next claim)
        took = None
        while time.monotonic() - killed_at < 10:
            cur.execute("""SELECT count(*) FROM coord.partition_segments AS s
                            JOIN coord.members AS m ON m.partition_group = s.partition_group
                             AND m.pid = s.owner_pid AND m.alive AND m.member IN ('a', 'c')
                           WHERE s.partition_group = %s""", (GROUP,))
            if cur.fetchone()[0] == SEGMENTS:
                took = time.monotonic() - killed_at
                break
            time.sleep(0.002)
        if took is None:
            sys.exit("FAIL: the survivors did not take over the killed member's segments")
        cur.execute("SELECT member, owned FROM coord.members WHERE partition_group = %s AND alive ORDER BY member",
                    (GROUP,))
        after = dict(cur.fetchall())
        for name in ("a", "c"):
            out, _ = procs[name].communicate(timeout=120)
            if procs[name].returncode != 0 or "finished" not in out:
                sys.exit(f"FAIL: member {name} failed")
        cur.execute("""SELECT count(*), count(DISTINCT job_id), count(*) FILTER (WHERE outside),
                              (SELECT count(*) FROM coord.job WHERE queue = 'pq'),
                              (SELECT count(*) FROM coord.job_history WHERE queue = 'pq' AND state = 'done')
                         FROM done""")
        rows, distinct, outside, live, history = cur.fetchone()
        if rows != JOBS or distinct != JOBS or outside != 0 or live != 0 or history != JOBS:
            sys.exit(f"FAIL: done rows {rows}, distinct jobs {distinct}, outside the claimer's segments {outside}, "
                     f"left in the queue {live}, done in history {history} (want {JOBS}, {JOBS}, 0, 0, {JOBS})")
        if after.get("b") is not None or set(after) != {"a", "c"}:
            sys.exit(f"FAIL: live members after the kill: {after}")
        print(f"partitions_kill: {JOBS} jobs done exactly once by members 3:2:1 with one SIGKILLed; "
              f"shares before {before}, after {after}; survivors owned all {SEGMENTS} segments "
              f"{took * 1000:.0f} ms after the kill")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        try:
            mon.close()
        except Exception:
            pass
        ac.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


main()
