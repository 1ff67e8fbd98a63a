"""Crash behaviour of coord.request with real processes.

1. An owner (a real psql process, idle while it 'works') is killed with
   SIGKILL while two clients wait: the first waiter takes over at once, the
   second keeps waiting on the new owner and answers false once it queues.
2. The server is restarted with pg_ctl -m immediate: every key's state
   survives, a key that was requested before the crash is taken over by
   the next request (no session owns it any more), and a fencing token
   issued after the crash is larger than one committed before it."""
import os
import signal
import subprocess
import sys
import threading
import time

import psycopg2

DB = "coord_crash_requests"
HERE = os.path.dirname(os.path.abspath(__file__))


def connect(app="crash-test", retries=0):
    for i in range(retries + 1):
        try:
            conn = psycopg2.connect(dbname=DB, application_name=app)
            conn.autocommit = True
            return conn
        except psycopg2.OperationalError:
            if i == retries:
                raise
            time.sleep(0.2)


def one(cur, sql, *args):
    cur.execute(sql, args)
    return cur.fetchone()[0]


def fail(msg):
    sys.exit("FAIL: " + msg)


def idle_owner(key):
    """A psql process that requests key and then sits idle, as a worker does."""
    p = subprocess.Popen(["psql", "-X", "-q", "-At", "-d", DB, "-f", "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p.stdin.write(f"SELECT coord.request('{key}');\n")
    p.stdin.flush()
    if p.stdout.readline().strip() != "t":
        fail(f"the owner did not get {key}")
    return p


def waiter(key, out, name):
    conn = connect(app=name)
    cur = conn.cursor()
    out[name] = one(cur, "SELECT coord.request(%s)", key)
    out[name + "_at"] = time.monotonic()
    out[name + "_conn"] = conn


def wait_for(cur, sql, want, what, limit=10.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if one(cur, sql) == want:
            return
        time.sleep(0.01)
    fail("timed out waiting for " + what)


def main():
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    admin.cursor().execute(f"DROP DATABASE IF EXISTS {DB}")
    admin.cursor().execute(f"CREATE DATABASE {DB}")
    admin.close()
    mon = connect()
    cur = mon.cursor()
    cur.execute("CREATE EXTENSION pg_coord")

    # 1. owner killed while two clients wait
    owner = idle_owner("https://example.org/a")
    out = {}
    waiters_sql = "SELECT waiters FROM coord.requests WHERE key = 'https://example.org/a'"
    w1 = threading.Thread(target=waiter, args=("https://example.org/a", out, "w1"))
    w1.start()
    wait_for(cur, waiters_sql, 1, "the first waiter")
    w2 = threading.Thread(target=waiter, args=("https://example.org/a", out, "w2"))
    w2.start()
    wait_for(cur, waiters_sql, 2, "the second waiter")
    killed = time.monotonic()
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    w1.join(10)
    if w1.is_alive() or out.get("w1") is not True:
        fail("the first waiter did not take over after the owner was killed")
    took = (out["w1_at"] - killed) * 1000
    time.sleep(0.3)
    if not w2.is_alive():
        fail("the second waiter returned while the new owner holds the key")
    if one(cur, waiters_sql) != 1:
        fail("the second waiter is not waiting on the new owner")
    out["w1_conn"].cursor().execute("SELECT coord.mark_queued('https://example.org/a')")
    w2.join(10)
    if w2.is_alive() or out.get("w2") is not False:
        fail("the second waiter did not answer false after the new owner queued")
    print(f"owner SIGKILLed: first waiter took over after {took:.1f} ms; second answered false after the queueing")
    out["w1_conn"].close()
    out["w2_conn"].close()

    # 2. immediate restart: state survives, requested keys are taken over,
    #    and fencing tokens committed before the crash are never issued again
    cur.execute("SELECT coord.mark_done('https://example.org/done')")
    cur.execute("SELECT coord.lock('/crash/fenced')")
    fence_before = one(cur, "SELECT coord.fence('/crash/fenced')")
    cur.execute("SELECT coord.unlock('/crash/fenced')")
    holder = idle_owner("https://example.org/requested")
    mon.close()
    subprocess.run(["bash", "-c", f". {HERE}/../lib.sh && coord_cluster_crash_restart"], check=True)
    holder.kill()
    holder.wait()
    mon = connect(retries=50)
    cur = mon.cursor()
    cur.execute("SELECT key, state, owner_alive FROM coord.requests ORDER BY key")
    states = {k: (s, alive) for k, s, alive in cur.fetchall()}
    want = {"https://example.org/a": ("queued", None),
            "https://example.org/done": ("done", None),
            "https://example.org/requested": ("requested", False)}
    if states != want:
        fail(f"state after restart {states}, expected {want}")
    answers = [one(cur, "SELECT coord.request(%s, wait => false)", k)
               for k in ("https://example.org/requested", "https://example.org/a", "https://example.org/done")]
    if answers != [True, False, False]:
        fail(f"answers after restart {answers}, expected takeover, false, false")
    cur.execute("SELECT coord.lock('/crash/fenced')")
    fence_after = one(cur, "SELECT coord.fence('/crash/fenced')")
    if not fence_after > fence_before or not one(cur, "SELECT coord.fence_ok('/crash/fenced', %s)", fence_after):
        fail(f"fencing token after the restart {fence_after}, before {fence_before}")
    print("after pg_ctl -m immediate: states survived; the requested key was taken over, queued and done answered false; "
          f"fencing token {fence_before} before the crash, {fence_after} after")
    mon.close()


if __name__ == "__main__":
    main()
