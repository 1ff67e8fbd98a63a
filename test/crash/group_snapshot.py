"""A group runs one job at a time, also when a claim reads the group from a
snapshot older than a claim's commit (issue 23 review).

Group g of queue gs holds job 1 and job 2, enqueued in that order but
committed in the other (job 1's enqueue commits last), so that W2's lease
claim takes job 2 while job 1 is not yet visible.  W2's transaction stays
open; job 1's commits; W1's claim statement takes its snapshot (job 2's row
still changing, no lease shown) and is stopped by gdb at its first
coord.claim_free, on job 1; W2 commits; W1 goes on.  Its group check must
hold job 1 back: job 2's lease, committed after W1's snapshot, is not in
what W1 reads, and a lease claim holds no claim lock (the check took job
2's row as not being changed any more, and W1 claimed job 1 beside the
running job 2).

Exit 0 = pass (or skipped: gdb cannot attach); the last line says what was
checked."""
import os
import subprocess
import sys
import tempfile
import threading
import time

import psycopg2

DB = "coord_groupsnap"


def connect(autocommit=True):
    conn = psycopg2.connect(dbname=DB, application_name="group-snapshot")
    conn.autocommit = autocommit
    return conn


def one(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def wait_for(what, cond, seconds=30):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            print(f"FAIL: timed out waiting for {what}", flush=True)
            sys.exit(1)
        time.sleep(0.05)


def main():
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    one(admin, "SELECT 1")
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {DB}")
        cur.execute(f"CREATE DATABASE {DB}")
    admin.close()
    main_conn = connect()
    one(main_conn, "CREATE EXTENSION pg_coord CASCADE; SELECT 1")

    e1 = connect(autocommit=False)
    one(e1, "SELECT coord.enqueue('gs', '{\"i\": 1}', group_key => 'g')")
    one(main_conn, "SELECT coord.enqueue('gs', '{\"i\": 2}', group_key => 'g')")
    w2 = connect(autocommit=False)
    got2 = one(w2, "SELECT payload->>'i' FROM coord.claim('gs', 1, lease => '10 min')")
    if got2 != [("2",)]:
        print(f"FAIL: W2 claimed {got2}, expected job 2", flush=True)
        sys.exit(1)
    e1.commit()

    w1 = connect()
    pid = one(w1, "SELECT pg_backend_pid()")[0][0]
    one(w1, "SELECT count(*) FROM coord.claim('gs-warm', 1)")  # plans, library loaded
    tmp = tempfile.mkdtemp()
    go = os.path.join(tmp, "go")
    log = open(os.path.join(tmp, "gdb.out"), "w+")
    gdb = subprocess.Popen(
        ["gdb", "-p", str(pid), "-batch", "-ex", "break coord_claim_free", "-ex", "continue",
         "-ex", f"shell while [ ! -f {go} ]; do sleep 0.05; done"],
        stdout=log, stderr=subprocess.STDOUT)

    def gdb_says(text):
        log.flush()
        with open(log.name) as f:
            return text in f.read()

    deadline = time.monotonic() + 30
    while not gdb_says("Breakpoint 1 at"):
        if gdb.poll() is not None or time.monotonic() > deadline:
            gdb.kill()
            with open(log.name) as f:
                out = f.read().strip().splitlines()
            print("skipped: gdb cannot attach (" + (out[-1] if out else "no output") + ")")
            return
        time.sleep(0.05)

    result = {}

    def claim():
        try:
            result["rows"] = one(w1, "SELECT payload->>'i' FROM coord.claim('gs', 1, lease => '10 min')")
        except psycopg2.Error as e:
            result["error"] = str(e)

    t = threading.Thread(target=claim)
    t.start()
    wait_for("W1's claim to stop in coord.claim_free", lambda: gdb_says("Breakpoint 1,"))
    w2.commit()
    open(go, "w").close()
    gdb.wait(timeout=30)
    t.join(timeout=30)
    if "error" in result:
        print(f"FAIL: W1's claim failed: {result['error']}", flush=True)
        sys.exit(1)
    running = one(main_conn, "SELECT string_agg(payload->>'i', ',' ORDER BY id) FROM coord.jobs "
                             "WHERE queue = 'gs' AND state = 'running'")[0][0]
    if result.get("rows") or running != "2":
        print(f"FAIL: W1 claimed {result.get('rows')} while job 2's lease claim runs; "
              f"running now: {running}", flush=True)
        sys.exit(1)
    print("ok: a claim whose snapshot predates the commit of a group's later job's lease claim "
          "holds the group's earlier job back (running: job 2 only)")


if __name__ == "__main__":
    main()
