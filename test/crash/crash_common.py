"""What the crash scripts that kill a holder while another session waits
share (lock_kill.py, semaphore_kill.py, lock_timeout_race.py): connections,
polling, a scratch database with pg_coord, idle psql holders, and the
hand-over round (a waiter queues, the holder is killed, the waiter must get
what it waited for).  Not a test of its own: no .sh runs it."""
import contextlib
import statistics
import subprocess
import sys
import threading
import time

import psycopg2


def connect(db, app="crash-test"):
    conn = psycopg2.connect(dbname=db, application_name=app)
    conn.autocommit = True
    return conn


def wait_until(cur, sql, want, what, limit=10.0, before=None):
    """Polls sql until its one value is want; before, if given, runs first
    each time (in a statement of its own, so sql sees what it did)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if before:
            cur.execute(before)
        cur.execute(sql)
        if cur.fetchone()[0] == want:
            return
        time.sleep(0.005)
    sys.exit(f"FAIL: timed out waiting for {what}")


@contextlib.contextmanager
def scratch_db(db):
    """A fresh database with pg_coord; yields a monitor connection to it,
    and drops the database afterwards."""
    admin = connect("postgres")
    admin.cursor().execute(f"DROP DATABASE IF EXISTS {db}")
    admin.cursor().execute(f"CREATE DATABASE {db}")
    mon = connect(db)
    mon.cursor().execute("CREATE EXTENSION pg_coord")
    try:
        yield mon
    finally:
        mon.close()
        admin.cursor().execute(f"DROP DATABASE {db}")
        admin.close()


def idle_psql(db, app, script, flags=()):
    """A real psql process that runs script and then stays idle, holding
    what it took, as a worker does between statements; the caller reads its
    output (stdout) to know when it holds."""
    p = subprocess.Popen(
        ["psql", "-X", "-q", *flags, "-d", db, "-v", "ON_ERROR_STOP=1",
         "-c", f"SET application_name = '{app}'", "-f", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write(script)
    p.stdin.flush()
    return p


def hand_over(mon, wait, queued_sql, kill, join_limit=10.0):
    """Runs wait(result) in a thread, waits until queued_sql says 1 (the
    waiter queues), then kill(); the waiter sets result["at"] (monotonic)
    when it got what it waited for.  Returns (result, ms from the kill to
    result["at"]); fails if the waiter never returns."""
    result = {}
    t = threading.Thread(target=wait, args=(result,))
    t.start()
    wait_until(mon, queued_sql, 1, "the waiter to queue")
    killed_at = time.monotonic()
    kill()
    t.join(join_limit)
    if t.is_alive() or "at" not in result:
        sys.exit("FAIL: the waiter got nothing after the holder was killed")
    return result, (result["at"] - killed_at) * 1000.0


def summary(times):
    return f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms"
