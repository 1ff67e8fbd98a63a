"""Lease locks through PgBouncer in pool_mode = transaction (see
lease_pgbouncer.sh), and a lease holder killed with SIGKILL.

PgBouncer has one server connection, so clients A and B run on the same
server session one transaction after the other: a session lock taken by A
would be B's too (and coord.lock is reentrant), while a lease lives in a
row and belongs to whoever has its token.
"""
import os
import signal
import subprocess
import sys
import time

import psycopg2

PGB = dict(host=os.environ["PGB_HOST"], port=os.environ["PGB_PORT"], dbname="coord_lpgb")
checks = []


def pooled():
    c = psycopg2.connect(**PGB)
    c.autocommit = True
    return c


def one(conn, sql, args=()):
    cur = conn.cursor()
    cur.execute(sql, args)
    return cur.fetchone()


def check(what, cond, detail):
    if not cond:
        print(f"FAIL: {what}: {detail}")
        sys.exit(1)
    checks.append(what)
    print(f"ok {what}: {detail}")


HOLDER = """
import os, sys, time, psycopg2
c = psycopg2.connect(host=os.environ["PGB_HOST"], port=os.environ["PGB_PORT"], dbname="coord_lpgb")
c.autocommit = True
cur = c.cursor()
cur.execute("SELECT coord.lease_lock('/lpgb/k', '3 seconds', 'victim')")
print(cur.fetchone()[0], flush=True)
time.sleep(600)
"""


def main():
    a, b = pooled(), pooled()
    (pa,) = one(a, "SELECT pg_backend_pid()")
    (pb,) = one(b, "SELECT pg_backend_pid()")
    check("one server session", pa == pb, f"A and B both run on backend {pa}")

    (ta,) = one(a, "SELECT coord.lease_lock('/lpgb/a', '1 minute', 'A')")
    check("lease_lock", ta is not None, f"A got token {ta}")
    (tb,) = one(b, "SELECT coord.lease_lock('/lpgb/a', '1 minute', 'B')")
    check("no sharing by session", tb is None, "B, on the same server session, gets NULL")
    (tc,) = one(b, "SELECT coord.lease_lock('/lpgb/a/child', '1 minute', 'B')")
    check("hierarchy", tc is None, "B gets NULL for a descendant too")
    (exp, later) = one(b, "SELECT coord.renew('/lpgb/a', %s, '2 minutes'), clock_timestamp() + '1 minute'", (ta,))
    check("renew", exp is not None and exp > later, f"the token renews from any client: {exp}")
    (stale,) = one(a, "SELECT coord.renew('/lpgb/a', %s, '2 minutes')", (ta - 1,))
    check("stale token", stale is None, "a wrong token renews nothing")
    (ok,) = one(a, "SELECT coord.fence_ok('/lpgb/a', %s)", (ta,))
    check("fence_ok", ok, "the lease token is the path's fencing token")
    (u,) = one(a, "SELECT coord.lease_unlock('/lpgb/a', %s)", (ta,))
    check("lease_unlock", u is True, "A lets go with its token")
    (tb,) = one(b, "SELECT coord.lease_lock('/lpgb/a', '1 minute', 'B')")
    check("next lease", tb is not None and tb > ta, f"B gets {tb} > {ta}")
    (ok_old, ok_new) = one(a, "SELECT coord.fence_ok('/lpgb/a', %s), coord.fence_ok('/lpgb/a', %s)", (ta, tb))
    check("fencing", not ok_old and ok_new, "A's token is stale, B's is current")
    a.autocommit = False
    (tx,) = one(a, "SELECT coord.lease_lock('/lpgb/x', '1 minute', 'A-xact')")
    a.rollback()
    a.autocommit = True
    (n,) = one(b, "SELECT count(*) FROM coord.leases WHERE path = '/lpgb/x'")
    check("rollback", tx is not None and n == 0, "a lease taken in a transaction rolled back is gone")

    # A holder killed: its lease lives on until its TTL, and not a moment longer.
    env = dict(os.environ)
    victim = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, env=env, text=True)
    tk = int(victim.stdout.readline())
    (expires,) = one(b, "SELECT expires_at FROM coord.leases WHERE path = '/lpgb/k' AND live")
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    refused = 0
    got = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        (t, at) = one(b, "SELECT coord.lease_lock('/lpgb/k', '1 minute', 'heir'), clock_timestamp()")
        if t is not None:
            got = (t, at)
            break
        refused += 1
        time.sleep(0.05)
    check("killed holder: still held", refused > 0, f"{refused} tries refused after the SIGKILL")
    check("killed holder: freed", got is not None, "the heir got the lease")
    check("killed holder: at its TTL, not before", got[1] >= expires and got[0] > tk,
          f"taken at {got[1]} >= expiry {expires}, {(got[1] - expires).total_seconds() * 1000:.0f} ms after; token {got[0]} > {tk}")

    print(f"lease_pgbouncer: {len(checks)} checks passed; leases through PgBouncer transaction mode "
          f"(one server session, no sharing by session), renew, stale token, unlock, fencing; "
          f"a SIGKILLed holder's lease freed at its TTL, not before")


if __name__ == "__main__":
    main()
