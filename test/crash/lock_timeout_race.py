"""A wait that ends in an error or a timeout just as the lock is granted
must leave nothing behind: LockErrorCleanup keeps a grant that came with
the error, and a session lock outlives the (sub)transaction, so without
pg_coord's abort callback the caller would hold a lock although
coord.lock returned false (or raised).  Many rounds race a release against
(a) coord.lock's own timeout, (b) a cancel of a coord.lock without timeout,
(c) coord.lock_all's timeout and (d) coord.campaign's timeout, and after
every failed call the waiter must hold no lock at all.

(e) An interrupt can also stay pending past the last grant (a timeout that
fires after the grant but before ProcSleep disables it, a cancel while the
rest of a set is taken without waiting): it must be raised while the set is
still in flight, not by the statement after the call returned true.  The
timeout case is a window of microseconds; the cancel case is made wide: a
coord.lock_all of about 3900 tags waits for the first, and the cancel comes
just after that wait ended (the waiter reniced, so the canceller runs
first on a loaded machine).  A round counts when the cancel provably came
before the waiter reached a tag near the end of its set."""
import os
import random
import sys
import threading
import time

import psycopg2

from crash_common import connect, scratch_db

DB = "coord_crash_lock_timeout"
PATH = "/race/sub/leaf"
ROUNDS = {"timeout": 150, "cancel": 150, "lock_all": 300, "campaign": 150}
# (e): chains of DEPTH segments under /race/z, each path 61 tags
CHAINS = 64
DEPTH = 60
TIMED_WANTED = 12
TIMED_MAX_ROUNDS = 80


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


def chain(i, depth):
    return f"/race/z/c{i}/" + "/".join(f"s{j}" for j in range(depth))


CANCEL_AFTER_WAIT = """
DO $$
DECLARE
  t0 timestamptz := pg_catalog.clock_timestamp();
  ev text;
BEGIN
  PERFORM coord.unlock('/race/a');
  LOOP  -- until the waiter's wait for /race/a has ended
    PERFORM pg_catalog.pg_stat_clear_snapshot();
    SELECT wait_event_type INTO ev FROM pg_catalog.pg_stat_get_activity(%(pid)s);
    EXIT WHEN ev IS DISTINCT FROM 'Lock';
    IF pg_catalog.clock_timestamp() > t0 + interval '10 s' THEN
      RAISE EXCEPTION 'the waiter never stopped waiting';
    END IF;
  END LOOP;
  t0 := pg_catalog.clock_timestamp();
  LOOP  -- past ProcSleep's own check for interrupts
    EXIT WHEN pg_catalog.clock_timestamp() > t0 + interval '100 us';
  END LOOP;
  PERFORM pg_catalog.pg_cancel_backend(%(pid)s);
  -- still free: the cancel came before the waiter got near its end
  IF coord.try_lock(%(late)s, true) THEN
    PERFORM coord.unlock(%(late)s, true);
    RAISE NOTICE 'timed';
  ELSE
    RAISE NOTICE 'late';
  END IF;
END $$"""


def cancel_in_flight(holder, waiter, mon, wpid):
    """(e): returns (timed rounds, rounds whose cancel came too late)."""
    hc, wc, mc = holder.cursor(), waiter.cursor(), mon.cursor()
    paths = ["/race/a"] + [chain(i, DEPTH) for i in range(CHAINS)]
    late = chain(0, DEPTH - 5)
    wc.execute("SET coord.max_locks_per_session = 0")
    # names registered and cached once, outside the rounds
    wc.execute("SELECT coord.lock_all(%s), coord.unlock_all()", (paths,))
    hc.execute("SELECT coord.try_lock(%s, true), coord.unlock(%s, true)", (late, late))
    try:
        os.setpriority(os.PRIO_PROCESS, wpid, 19)
    except OSError:
        pass
    do = CANCEL_AFTER_WAIT % {"pid": wpid, "late": "'" + late + "'"}
    timed = too_late = 0
    for n in range(TIMED_MAX_ROUNDS):
        if timed >= TIMED_WANTED:
            break
        hc.execute("SELECT coord.lock('/race/a')")
        res = {}
        timeout = "10 s" if n % 2 == 0 else None

        def wait():
            try:
                wc.execute("SELECT coord.lock_all(%s, %s::interval)", (paths, timeout))
                res["got"] = wc.fetchone()[0]
            except psycopg2.Error as e:
                res["got"] = False
                res["err"] = e.pgcode

        t = threading.Thread(target=wait)
        t.start()
        if not wait_queued(mc, wpid):
            sys.exit("FAIL: cancel_in_flight: the waiter never queued for /race/a")
        del holder.notices[:]
        hc.execute(do)
        t.join(10)
        if t.is_alive():
            sys.exit("FAIL: cancel_in_flight: the waiter never returned")
        was_timed = any("timed" in x for x in holder.notices)
        n_left = leftovers(mc, wpid)
        if was_timed and not res["got"] and n_left != 0:
            sys.exit(f"FAIL: cancel_in_flight ({'no ' if timeout is None else ''}timeout): after "
                     f"err={res.get('err')} the waiter holds {n_left} advisory locks (of {len(paths)} "
                     "paths): the cancel came while the set was being taken")
        if was_timed:
            timed += 1
        else:
            too_late += 1
        # a cancel after the call returned true fails the statement, the set held
        wc.execute("SELECT coord.unlock_all(), pg_catalog.pg_advisory_unlock_all()")
    wc.execute("RESET coord.max_locks_per_session")
    return timed, too_late


def main():
    with scratch_db(DB) as mon:
        holder = connect(DB, app="race-holder")
        waiter = connect(DB, app="race-waiter")
        wc = waiter.cursor()
        wc.execute("SELECT pg_backend_pid()")
        wpid = wc.fetchone()[0]
        summary = []
        for kind in ("timeout", "cancel", "lock_all", "campaign"):
            got = sum(1 for _ in range(ROUNDS[kind]) if round_(kind, holder, waiter, mon, wpid))
            summary.append(f"{kind}: {got}/{ROUNDS[kind]} granted")
        timed, too_late = cancel_in_flight(holder, waiter, mon, wpid)
        summary.append(f"cancel_in_flight: {timed} timed rounds ({too_late} too late)")
        holder.close()
        waiter.close()
    print("no lock left after a failed wait; " + ", ".join(summary))


if __name__ == "__main__":
    main()
