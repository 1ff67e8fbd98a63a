"""A wait that ends in an error or a timeout just as the lock is granted
must leave nothing behind: LockErrorCleanup keeps a grant that came with
the error, and a session lock outlives the (sub)transaction, so without
pg_coord's abort callback the caller would hold a lock although
coord.lock returned false (or raised).  Many rounds race a release against
(a) coord.lock's own timeout, (b) a cancel of a coord.lock without timeout,
(c) coord.lock_all's timeout and (d) coord.campaign's timeout, and after
every failed call the waiter must hold no lock at all."""
import random
import sys
import threading
import time

import psycopg2

from crash_common import connect, scratch_db

DB = "coord_crash_lock_timeout"
PATH = "/race/sub/leaf"
ROUNDS = 150


def leftovers(cur, pid):
    cur.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,))
    return cur.fetchone()[0]


def wait_queued(cur, pid, limit=5.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        cur.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND NOT granted", (pid,))
        if cur.fetchone()[0] > 0:
            return True
        time.sleep(0.0005)
    return False


def take(cur, kind):
    if kind == "campaign":
        cur.execute("SELECT coord.campaign('race') IS NOT NULL")
    else:
        cur.execute("SELECT coord.lock(%s)", (PATH,))
    assert cur.fetchone()[0]


def let_go(cur, kind):
    if kind == "campaign":
        cur.execute("SELECT coord.resign('race')")
    else:
        cur.execute("SELECT coord.unlock(%s)", (PATH,))


def round_(kind, holder, waiter, mon, wpid):
    hc, wc, mc = holder.cursor(), waiter.cursor(), mon.cursor()
    take(hc, kind)
    res = {}
    ms = random.choice([2, 3, 5, 8])

    def wait():
        try:
            if kind == "timeout":
                wc.execute("SELECT coord.lock(%s, %s::interval)", (PATH, f"{ms} ms"))
            elif kind == "lock_all":
                wc.execute("SELECT coord.lock_all(ARRAY[%s, '/race/other'], %s::interval)", (PATH, f"{ms} ms"))
            elif kind == "campaign":
                wc.execute("SELECT coord.campaign('race', NULL, %s::interval) IS NOT NULL", (f"{ms} ms",))
            else:
                wc.execute("SELECT coord.lock(%s)", (PATH,))
            res["got"] = wc.fetchone()[0]
        except psycopg2.Error as e:
            res["got"] = False
            res["err"] = e.pgcode

    t = threading.Thread(target=wait)
    t.start()
    if kind == "cancel":
        wait_queued(mc, wpid)
        # the cancel first, the release a moment later: the grant may come
        # while the waiter is already on its way to the abort
        hc.execute("SELECT pg_cancel_backend(%s)", (wpid,))
        time.sleep(random.random() * 0.0003)
        let_go(hc, kind)
    else:
        time.sleep(ms / 1000.0 * random.uniform(0.6, 1.3))
        let_go(hc, kind)
    t.join(10)
    if t.is_alive():
        sys.exit(f"FAIL: {kind}: the waiter never returned")
    if res["got"]:
        if kind == "campaign":
            wc.execute("SELECT coord.resign('race')")
        elif kind == "lock_all":
            wc.execute("SELECT coord.unlock(%s), coord.unlock('/race/other')", (PATH,))
        else:
            wc.execute("SELECT coord.unlock(%s)", (PATH,))
    n = leftovers(mc, wpid)
    if n != 0:
        mc.execute("SELECT locktype, objid, objsubid, mode, granted FROM pg_locks WHERE pid = %s", (wpid,))
        sys.exit(f"FAIL: {kind}: after got={res['got']} err={res.get('err')} the waiter holds "
                 f"{n} advisory locks: {mc.fetchall()}")
    return res["got"]


def main():
    with scratch_db(DB) as mon:
        holder = connect(DB, app="race-holder")
        waiter = connect(DB, app="race-waiter")
        wc = waiter.cursor()
        wc.execute("SELECT pg_backend_pid()")
        wpid = wc.fetchone()[0]
        summary = []
        for kind in ("timeout", "cancel", "lock_all", "campaign"):
            got = sum(1 for _ in range(ROUNDS) if round_(kind, holder, waiter, mon, wpid))
            summary.append(f"{kind}: {got}/{ROUNDS} granted")
        holder.close()
        waiter.close()
    print("no lock left after a failed wait; " + ", ".join(summary))


if __name__ == "__main__":
    main()
