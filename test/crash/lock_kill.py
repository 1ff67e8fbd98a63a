"""A client holding a session lock is killed with SIGKILL while another
waits: the waiter must get the lock, and nothing of the dead holder may be
left.  Prints how long the hand-over took (measured, not asserted: the bench
owns speed; the bound here only catches a lock that is never freed)."""
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import psycopg2

DB = "coord_crash_locks"
PATH = "/crash/component/B1-RT1"
ROUNDS = 5


def connect(db=DB, app="crash-test"):
    conn = psycopg2.connect(dbname=db, application_name=app)
    conn.autocommit = True
    return conn


def wait_until(cur, sql, want, what, limit=10.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        cur.execute(sql)
        if cur.fetchone()[0] == want:
            return
        time.sleep(0.005)
    sys.exit(f"FAIL: timed out waiting for {what}")


def one_round(mon):
    # The holder is a real psql process that stays idle holding the lock,
    # as a worker does between statements.
    holder = subprocess.Popen(
        ["psql", "-X", "-q", "-d", DB, "-v", "ON_ERROR_STOP=1",
         "-c", "SET application_name = 'crash-holder'", "-f", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    holder.stdin.write(f"SELECT coord.lock('{PATH}');\n\\echo held\n")
    holder.stdin.flush()
    while holder.stdout.readline().strip() != "held":
        pass

    result = {}

    def waiter():
        conn = connect(app="crash-waiter")
        cur = conn.cursor()
        cur.execute("SELECT coord.lock(%s)", (PATH,))
        result["got"] = cur.fetchone()[0]
        result["at"] = time.monotonic()
        # the dead backend lets go of its locks one lock partition at a time,
        # so its ancestors' intention locks may outlive the path's by a moment
        deadline = time.monotonic() + 2
        while True:
            cur.execute("SELECT count(*) FROM coord.locks WHERE pid <> pg_backend_pid()")
            result["others"] = cur.fetchone()[0]
            if result["others"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        cur.execute("SELECT coord.unlock(%s)", (PATH,))
        conn.close()

    t = threading.Thread(target=waiter)
    t.start()
    wait_until(mon, "SELECT count(*) FROM coord.locks WHERE NOT granted AND application_name = 'crash-waiter'",
               1, "the waiter to queue")

    killed_at = time.monotonic()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    t.join(10)
    if t.is_alive() or not result.get("got"):
        sys.exit("FAIL: the waiter did not get the lock after the holder was killed")
    if result["others"] != 0:
        sys.exit(f"FAIL: {result['others']} lock rows of the dead holder were left")
    return (result["at"] - killed_at) * 1000.0


def main():
    admin = connect("postgres")
    admin.cursor().execute(f"DROP DATABASE IF EXISTS {DB}")
    admin.cursor().execute(f"CREATE DATABASE {DB}")
    mon = connect()
    mon.cursor().execute("CREATE EXTENSION pg_coord")
    cur = mon.cursor()
    times = [one_round(cur) for _ in range(ROUNDS)]
    mon.close()
    admin.cursor().execute(f"DROP DATABASE {DB}")
    print(f"holder SIGKILLed -> waiter holds the lock: median {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms over {ROUNDS} rounds")


if __name__ == "__main__":
    main()
