"""The shared lock table (issue 23, section 1): a coord_worker cannot fill it.

The cluster (lock_table.sh) runs with max_locks_per_transaction = 64, so
its lock table has room for roughly 8,000 to 20,000 entries.  The attacker
is a role with only coord_worker, in a database of its own; a prober
connects to another database (postgres) again and again, all through the
attack, and takes a lock there (each new connection needs lock-table
entries: with the table full it fails with FATAL: out of shared memory).

  lease:   40,000 lease claims in one transaction (a SAVEPOINT around each
           coord.claim(q, 1000)), then the transaction stays open.  They must
           all succeed and the attacker must hold (almost) no lock-table
           entry: a lease claim takes none.  The former code kept one per
           claimed job until commit and filled the table.
  keys:    claims over 3,000 limit keys (a per-key concurrency limit) in one
           transaction: each key claimed from is a lock until commit.  The
           attacker must get 53400 before it holds coord.max_locks_per_session
           (1000) entries.
  permits: a permit taken twice and released once, over 3,000 paths, each
           in its own transaction: 53400 again, and no more entries held
           than the cap (the former count lost one entry per transaction).

After each attack, with the attacker holding its most, 20 more connections
to the other database must work.  Exit 0 = pass; the last line says what
was checked."""
import sys
import threading
import time

import psycopg2

DB = "coord_crash_locktable"
OTHER = "postgres"
ROLE = "coord_lt_attacker"
LEASE_JOBS = 40000
KEYS = 3000
PERMITS = 3000
CAP = 1000


def connect(db, user=None, autocommit=True):
    conn = psycopg2.connect(dbname=db, user=user, application_name="lock-table")
    conn.autocommit = autocommit
    return conn


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def probe_once():
    """A new connection to the other database that takes a lock there."""
    conn = connect(OTHER)
    try:
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_lock(23), pg_advisory_unlock(23)")
        cur.fetchall()
    finally:
        conn.close()


class Prober(threading.Thread):
    """Probes the other database until stopped; keeps the failures."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.ok = 0
        self.failures = []

    def run(self):
        while not self.stop.is_set():
            try:
                probe_once()
                self.ok += 1
            except psycopg2.Error as e:
                self.failures.append(str(e).strip().splitlines()[0])
            time.sleep(0.02)


def held(mon, pid):
    cur = mon.cursor()
    cur.execute("SELECT count(*) FROM pg_locks WHERE pid = %s AND locktype = 'advisory'", (pid,))
    return cur.fetchone()[0]


def probe_at_most(what):
    """20 connections to the other database while the attacker holds its most."""
    for i in range(20):
        try:
            probe_once()
        except psycopg2.Error as e:
            fail(f"{what}: connection {i + 1} to database {OTHER} failed while the attacker "
                 f"held its most: {str(e).strip().splitlines()[0]}")


def setup():
    admin = connect("postgres")
    cur = admin.cursor()
    cur.execute(f"DROP DATABASE IF EXISTS {DB}")
    cur.execute(f"CREATE DATABASE {DB}")
    cur.execute(f"DROP ROLE IF EXISTS {ROLE}")
    admin.close()
    own = connect(DB)
    cur = own.cursor()
    cur.execute("CREATE EXTENSION pg_coord")
    cur.execute(f"CREATE ROLE {ROLE} LOGIN IN ROLE coord_worker")
    cur.execute("SHOW max_locks_per_transaction")
    if cur.fetchone()[0] != "64":
        fail("the cluster does not run with max_locks_per_transaction = 64")
    for start in range(0, LEASE_JOBS, 10000):     # enqueue_many takes 10,000 at most
        cur.execute("SELECT count(*) FROM coord.enqueue_many('lt_lease', "
                    "array_fill('{}'::jsonb, ARRAY[%s]))", (min(10000, LEASE_JOBS - start),))
    cur.execute("SELECT coord.set_limit('lt_keys', concurrency => 1, per_key => true)")
    cur.execute("SELECT count(coord.enqueue('lt_keys', '{}', limit_key => 'k' || i)) "
                "FROM generate_series(1, %s) i", (KEYS,))
    return own


def attacker(autocommit=False):
    conn = connect(DB, user=ROLE, autocommit=True)
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    conn.autocommit = autocommit
    return conn, cur, pid


def attack_lease(mon):
    conn, cur, pid = attacker()
    claimed = 0
    most = 0
    try:
        while claimed < LEASE_JOBS:
            cur.execute("SAVEPOINT s")
            cur.execute("SELECT count(*) FROM coord.claim('lt_lease', 1000, lease => '1 hour')")
            n = cur.fetchone()[0]
            cur.execute("RELEASE s")
            if n == 0:
                break
            claimed += n
            most = max(most, held(mon, pid))
    except psycopg2.Error as e:
        fail(f"lease: the attacker's claim failed after {claimed} jobs "
             f"({e.pgcode}): {str(e).strip().splitlines()[0]}")
    if claimed != LEASE_JOBS:
        fail(f"lease: {claimed} of {LEASE_JOBS} jobs claimed")
    most = max(most, held(mon, pid))
    if most > 10:
        fail(f"lease: the attacker held {most} lock-table entries for {claimed} lease claims")
    probe_at_most("lease")
    conn.rollback()
    conn.close()
    return claimed, most


def attack_keys(mon):
    conn, cur, pid = attacker()
    claimed = 0
    code = None
    while claimed < KEYS:
        cur.execute("SAVEPOINT s")
        try:
            cur.execute("SELECT count(*) FROM coord.claim('lt_keys', 250, lease => '1 hour')")
        except psycopg2.Error as e:
            code = e.pgcode
            cur.execute("ROLLBACK TO s")
            break
        n = cur.fetchone()[0]
        cur.execute("RELEASE s")
        if n == 0:
            break
        claimed += n
    most = held(mon, pid)
    if code != "53400":
        fail(f"keys: the attacker claimed {claimed} jobs over as many limit keys in one transaction "
             f"and got {code or 'no error'}, not 53400 (it holds {most} entries)")
    if most > CAP:
        fail(f"keys: the attacker holds {most} entries, more than the cap ({CAP})")
    probe_at_most("keys")
    conn.rollback()
    conn.close()
    return claimed, most


def attack_permits(mon):
    conn, cur, pid = attacker(autocommit=True)
    taken = 0
    code = None
    for i in range(1, PERMITS + 1):
        try:
            cur.execute("SELECT coord.acquire_permit(%(p)s, 1), coord.acquire_permit(%(p)s, 1), "
                        "coord.release_permit(%(p)s)", {"p": f"/lt/{i}"})
        except psycopg2.Error as e:
            code = e.pgcode
            break
        taken += 1
    most = held(mon, pid)
    if code != "53400":
        fail(f"permits: {taken} permits taken twice and released once, got {code or 'no error'}, "
             f"not 53400 (the attacker holds {most} entries)")
    if most > CAP:
        fail(f"permits: the attacker holds {most} entries, more than the cap ({CAP})")
    probe_at_most("permits")
    conn.close()
    return taken, most


def main():
    own = setup()
    prober = Prober()
    prober.start()
    try:
        lease = attack_lease(own)
        keys = attack_keys(own)
        permits = attack_permits(own)
    finally:
        prober.stop.set()
        prober.join(10)
    if prober.failures:
        fail(f"{len(prober.failures)} of {prober.ok + len(prober.failures)} connections to database "
             f"{OTHER} failed during the attacks, first: {prober.failures[0]}")
    if prober.ok < 10:
        fail(f"only {prober.ok} probes ran")
    own.close()
    admin = connect("postgres")
    admin.cursor().execute(f"DROP DATABASE {DB}")
    admin.cursor().execute(f"DROP ROLE {ROLE}")
    admin.close()
    print(f"lock table (max_locks_per_transaction 64): {lease[0]} lease claims in one transaction "
          f"held {lease[1]} entries; claims over {keys[0]} limit keys got 53400 at {keys[1]} entries; "
          f"{permits[0]} double permits got 53400 at {permits[1]} entries; "
          f"{prober.ok} connections to another database during the attacks and 60 at the attacker's "
          f"most all worked")


if __name__ == "__main__":
    main()
