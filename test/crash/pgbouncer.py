"""pg_coord through PgBouncer in pool_mode = transaction (see pgbouncer.sh).

PgBouncer has one server connection, so clients A and B, one after the
other, run on the same server session: what a function leaves in its
session (a lock, a claim, an owner, a LISTEN, an idle mark) is then seen
by, or lost to, the next client.  Each check is one row of the table of
docs/operations/poolers.md; `direct` is a connection to the server without the pooler.

psycopg 3 prepares a statement on its sixth run on a connection (its
default prepare_threshold is 5): the prepared statement "_pg3_0" then
stays on the server connection, and the next client there that prepares
fails (42P05), unless it connects with prepare_threshold=None.
"""
import os
import select
import sys
import time

import psycopg
import psycopg2

PGB = dict(host=os.environ["PGB_HOST"], port=os.environ["PGB_PORT"], dbname="coord_pgb")
checks = []


def pooled():
    c = psycopg2.connect(**PGB)
    c.autocommit = True
    return c


def one(conn, sql, args=()):
    cur = conn.cursor()
    cur.execute(sql, args)
    return cur.fetchone()


def check(row, cond, detail):
    if not cond:
        print(f"FAIL: {row}: {detail}")
        sys.exit(1)
    checks.append(row)
    print(f"ok {row}: {detail}")


def main():
    direct = psycopg2.connect(dbname="coord_pgb")
    direct.autocommit = True

    # --- works: each call is complete in one transaction
    a, b = pooled(), pooled()
    (jid,) = one(a, "SELECT coord.enqueue('w', '{\"n\": 1}')")
    jid2, tok2 = one(b, "SELECT id, token FROM coord.claim('w', 1, '1 minute')")
    check("lease claims", jid2 == jid, "A enqueues, B claims with a lease")
    (hb,) = one(a, "SELECT coord.heartbeat(%s, %s) > now()", (jid, tok2))
    (done,) = one(a, "SELECT coord.complete(%s, %s)", (jid, tok2))
    check("heartbeat, complete (lease)", hb and done, "A heartbeats and completes B's lease claim with its token")
    one(a, "SELECT coord.enqueue('w', '{\"n\": 2}')")
    jid3, tok3 = one(b, "SELECT id, token FROM coord.claim('w')")
    (st,) = one(a, "SELECT coord.fail(%s, %s, 'x')", (jid3, tok3))
    check("fail", st == "scheduled", f"fail of a lease claim: {st}")
    one(a, "SELECT coord.enqueue_many('w', ARRAY['{}', '{}']::jsonb[])")
    (n,) = one(b, "SELECT coord.complete_many(array_agg(id), array_agg(token)) FROM coord.claim('w', 5)")
    check("enqueue_many, complete_many", n == 2, f"{n} completed")
    a.autocommit = False
    one(a, "SELECT coord.xact_lock('/pgb/x')")
    (f,) = one(a, "SELECT coord.fence('/pgb/x')")
    (other,) = one(direct, "SELECT coord.try_lock('/pgb/x')")
    a.commit()
    (after,) = one(direct, "SELECT coord.try_lock('/pgb/x') AND coord.unlock('/pgb/x')")
    a.autocommit = True
    check("xact_lock, fence", f > 0 and not other and after,
          "held through A's transaction (another session cannot take it), gone at its commit")
    (r,) = one(a, "SELECT coord.tick() >= 0 AND (SELECT count(*) FROM coord.jobs) >= 0")
    check("tick, views", r, "coord.tick() and the views")
    a.close()
    b.close()

    # --- session locks pass to the next client
    a = pooled()
    (pid_a,) = one(a, "SELECT pg_backend_pid()")
    one(a, "SELECT coord.lock('/pgb/s')")
    a.close()
    b = pooled()
    (pid_b,) = one(b, "SELECT pg_backend_pid()")
    (held,) = one(b, "SELECT count(*) FROM coord.locks WHERE pid = pg_backend_pid() AND path = '/pgb/s'")
    (unl,) = one(b, "SELECT coord.unlock('/pgb/s')")
    check("session locks", pid_a == pid_b and held == 1 and unl,
          "A's coord.lock outlives A; B holds it and its coord.unlock succeeds")
    b.close()

    # --- session-bound claims stay held on the server connection
    a = pooled()
    one(a, "SELECT coord.enqueue('sb')")
    sid, stok = one(a, "SELECT id, token FROM coord.claim('sb', session_bound => true)")
    a.close()
    time.sleep(0.2)
    (state,) = one(direct, "SELECT coord.job_state(%s)", (sid,))
    b = pooled()
    (bdone,) = one(b, "SELECT coord.complete(%s, %s)", (sid, stok))
    check("session-bound claims", state == "running" and bdone,
          f"A disconnected, its claim is still held ({state}); B completes it")
    b.close()

    # --- two clients both own a request
    a, b = pooled(), pooled()
    (ra,) = one(a, "SELECT coord.request('pgb-key', wait => false)")
    (rb,) = one(b, "SELECT coord.request('pgb-key', wait => false)")
    check("requests", ra and rb, "A and B both get true from coord.request for the same key")
    one(b, "SELECT coord.release('pgb-key')")
    a.close()
    b.close()

    # --- LISTEN loses notifications; idle marks stick to the pooled connection
    a, b = pooled(), pooled()
    a.cursor().execute('LISTEN "coord:lq"')
    (nclaimed,) = one(a, "SELECT count(*) FROM coord.claim('lq')")    # nothing: marks the session idle
    (server_pid,) = one(a, "SELECT pg_backend_pid()")
    one(b, "SELECT coord.enqueue('lq')")
    select.select([a], [], [], 1.0)
    a.poll()
    got_a = len(a.notifies)
    b.poll()
    got_b = len(b.notifies)
    check("LISTEN", nclaimed == 0 and got_a == 0,
          f"A listens and idles, B enqueues: A gets {got_a} notifications (B, the next client, got {got_b})")
    one(b, "SELECT count(*) FROM coord.claim('lq')")   # takes the job: not idle any more
    a.close()
    b.close()
    a = pooled()
    one(a, "SELECT count(*) FROM coord.claim('lq2')")   # finds nothing: idle mark
    a.close()
    time.sleep(0.2)
    (marks,) = one(direct, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 17205 "
                           "AND pid = %s AND granted", (server_pid,))
    listener = psycopg2.connect(dbname="coord_pgb")   # listens, never claims: not idle
    listener.autocommit = True
    listener.cursor().execute('LISTEN "coord:lq2"')
    one(direct, "SELECT coord.enqueue('lq2')")
    select.select([listener], [], [], 2.0)
    listener.poll()
    sent = len(listener.notifies)
    listener.cursor().execute('LISTEN "coord:lq3"')     # control: a queue nobody idled on
    one(direct, "SELECT coord.enqueue('lq3')")
    select.select([listener], [], [], 1.0)
    listener.poll()
    control = len(listener.notifies) - sent
    check("idle marks", marks >= 1 and sent == 1 and control == 0,
          f"A idled on a queue and disconnected: its server connection still holds {marks} idle mark(s), "
          f"and an enqueue there still sends a NOTIFY ({sent} seen; {control} on a queue nobody idled on) "
          f"with no client waiting")
    # --- psycopg 3: its defaults prepare on the sixth run; prepare_threshold=None never does
    claim = "SELECT id, token, payload FROM coord.claim(%s, 10)"

    def runs(conn, n):
        for i in range(1, n + 1):
            try:
                conn.execute(claim, ("p3",)).fetchall()
            except psycopg.Error as e:
                return i, e.sqlstate, str(e).strip()
        return n, None, ""

    a3 = psycopg.connect(**PGB, autocommit=True)
    (pid_a,) = a3.execute("SELECT pg_backend_pid()").fetchone()
    got_a = runs(a3, 8)
    a3.close()
    b3 = psycopg.connect(**PGB, autocommit=True)
    (pid_b,) = b3.execute("SELECT pg_backend_pid()").fetchone()
    got_b = runs(b3, 8)
    b3.close()
    if os.environ.get("PGB_TRACKS_PREPARED"):
        # PgBouncer 1.21+ with max_prepared_statements: it renames and tracks them
        check("psycopg 3 defaults", pid_a == pid_b and got_a[1] is None and got_b[1] is None,
              f"PgBouncer {os.environ.get('PGB_VERSION')} with max_prepared_statements: A runs a claim 8 times "
              f"({'ok' if got_a[1] is None else got_a}); B, on the same server connection, too "
              f"({'ok' if got_b[1] is None else got_b})")
    else:
        check("psycopg 3 defaults", pid_a == pid_b and got_a[1] is None and got_b[:2] == (6, "42P05"),
              f"PgBouncer {os.environ.get('PGB_VERSION')}: A runs a claim 8 times "
              f"({'ok' if got_a[1] is None else got_a}); B, on the same server connection, "
              f"fails on its run {got_b[0]}: {got_b[1]} {got_b[2]}")
    c3 = psycopg.connect(**PGB, autocommit=True, prepare_threshold=None)
    d3 = psycopg.connect(**PGB, autocommit=True, prepare_threshold=None)
    got_cd = [runs(conn, 1) for _ in range(10) for conn in (c3, d3)]
    (pid_c,) = c3.execute("SELECT pg_backend_pid()").fetchone()
    (pid_d,) = d3.execute("SELECT pg_backend_pid()").fetchone()
    c3.close()
    d3.close()
    fails = [g for g in got_cd if g[1] is not None]
    check("psycopg 3 prepare_threshold=None", not fails and pid_c == pid_d == pid_a,
          f"C and D, by turns on that server connection (where A's _pg3_0 still is), each run it 10 times "
          f"({fails[0] if fails else 'ok'})")

    print(f"pgbouncer: {len(checks)} checks passed through PgBouncer (pool_mode = transaction): "
          + ", ".join(checks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
