"""Hot standby and failover, with a streaming replica on loopback (issue 8).

Started by standby_failover.sh, which has set up the primary (PRIMARY_HOST /
PRIMARY_PORT, synchronous_commit = remote_apply, the replica as its only
synchronous standby) and the standby (STANDBY_HOST / STANDBY_PORT /
STANDBY_DATA).  Sync mode: remote_apply, so a commit the client saw is
replayed on the standby before the client sees it: nothing acknowledged is
lost in the failover, and a read on the standby right after a commit sees it.

1. State replicates: jobs, a session-bound and a lease claim, request keys in
   each state, a fencing token, a schedule; read back through coord.jobs,
   coord.queue_stats, coord.requests, coord.locks, coord.schedules,
   coord.fence_ok on the standby and compared with the primary.
2. On the standby every writing function must fail with a clear ERROR
   (SQLSTATE 25006 expected), never crash the backend, and leave no advisory
   lock behind; the table of SQLSTATEs is printed.  The lock functions work
   on a standby (documented: registration is skipped there) and are listed
   as such.
3. Failover: 3 worker processes claim (session_bound) and complete jobs, one
   transaction each (INSERT INTO results + coord.complete), and take fencing
   tokens on /svc/leader and a path of their own; a producer enqueues more
   jobs meanwhile.  Each records what the server acknowledged in a local
   file.  The primary is stopped with pg_ctl -m immediate, the standby is
   promoted, the processes reconnect through one libpq multi-host string
   (target_session_attrs=read-write) and finish.  Asserted on the new
   primary: every job is done exactly once (results has no unique
   constraint), every acknowledged completion and enqueue is there, and
   every fencing token issued after the promotion is larger than every token
   issued before it.

    standby_failover.py                    the driver
    standby_failover.py worker NAME SEED   a worker (started by the driver)
    standby_failover.py producer N         the producer"""
import json
import os
import random
import subprocess
import sys
import time

import psycopg2

DB = "coord_failover"
QUEUE = "failover"
N_JOBS = int(os.environ.get("FAILOVER_JOBS", "450"))        # enqueued before the workers start
N_PRODUCED = int(os.environ.get("FAILOVER_PRODUCED", "2000"))  # at most, by the producer while they work
N_WORKERS = 3
KILL_AFTER = int(os.environ.get("FAILOVER_KILL_AFTER", str(N_JOBS * 2 // 5)))  # completions before the kill
TIME_LIMIT = 40.0
RECONNECT_LIMIT = 30.0
LEADER = "/svc/leader"

PRIMARY = dict(host=os.environ.get("PRIMARY_HOST", ""), port=os.environ.get("PRIMARY_PORT", ""))
STANDBY = dict(host=os.environ.get("STANDBY_HOST", ""), port=os.environ.get("STANDBY_PORT", ""))
# one connection string for the fleet: whichever of the two accepts writes
FLEET = dict(host=f"{PRIMARY['host']},{STANDBY['host']}", port=f"{PRIMARY['port']},{STANDBY['port']}",
             target_session_attrs="read-write", connect_timeout="2")
WORKDIR = os.path.join(os.environ.get("COORD_TMP", "/tmp"), "failover")
STOP_FLAG = os.path.join(WORKDIR, "producer_finished")     # workers may stop once the queue is empty
STOP_PRODUCING = os.path.join(WORKDIR, "stop_producing")    # written a second after the promotion

CONNECTION_STATES = {"57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004"}


def log(msg):
    print(msg, flush=True)


def lost_connection(conn, err):
    return conn is None or conn.closed != 0 or err.pgcode is None or err.pgcode in CONNECTION_STATES


def orphaned():
    if os.getppid() != PARENT:
        sys.exit(3)


PARENT = os.getppid()


def connect_fleet(app):
    """A read-write session on whichever server accepts writes, and its port."""
    deadline = time.monotonic() + RECONNECT_LIMIT
    while True:
        orphaned()
        conn = None
        try:
            conn = psycopg2.connect(dbname=DB, application_name=app, **FLEET)
            cur = conn.cursor()
            cur.execute("SELECT current_setting('port')::int")
            port = cur.fetchone()[0]
            conn.commit()
            return conn, port
        except psycopg2.OperationalError:
            if conn is not None:
                conn.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class Record:
    """A line-buffered local file of what the server acknowledged."""

    def __init__(self, path):
        self.f = open(path, "a", buffering=1)

    def __call__(self, *fields):
        self.f.write(json.dumps([*fields, time.monotonic()]) + "\n")
        self.f.flush()


# ---------------------------------------------------------------- worker

def worker(name, seed):
    """Claims 1..5 jobs session-bound, does each in one transaction with
    coord.complete; every 8 jobs takes a fencing token on /svc/leader and on
    its own path (autocommit: the token is seen only once its commit is
    acknowledged).  Records acknowledged completions and tokens locally."""
    rng = random.Random(seed)
    rec = Record(os.path.join(WORKDIR, name + ".log"))
    stats = {"done": 0, "refused": 0, "reconnects": 0, "tokens": 0, "errors": []}
    own_path = f"/svc/worker/{name}"
    conn, port = connect_fleet(name)
    rec("connected", port)
    hand = []
    doing = None            # the job whose completing transaction is open
    completions = 0
    while True:
        orphaned()
        try:
            cur = conn.cursor()
            if not hand:
                cur.execute("SELECT id, token FROM coord.claim(%s, %s, session_bound => true)",
                            (QUEUE, rng.randint(1, 5)))
                rows = cur.fetchall()
                conn.commit()
                if not rows:
                    finished = os.path.exists(STOP_FLAG)
                    cur.execute("SELECT count(*) FROM coord.job WHERE queue = %s", (QUEUE,))
                    left = cur.fetchone()[0]
                    conn.commit()
                    if finished and left == 0:
                        break
                    time.sleep(0.02)
                    continue
                rec("claimed", port, [list(r) for r in rows])
                hand = rows
            job_id, token = hand[0]
            doing = job_id
            cur.execute("INSERT INTO results (job_id, worker, token, port) VALUES (%s, %s, %s, %s)",
                        (job_id, name, token, port))
            cur.execute("SELECT coord.complete(%s, %s)", (job_id, token))
            if cur.fetchone()[0]:
                conn.commit()
                rec("done", port, job_id, token)
                stats["done"] += 1
            else:
                conn.rollback()
                rec("refused", port, job_id, token)
                stats["refused"] += 1
            doing = None
            hand.pop(0)
            completions += 1
            if completions % 8 == 0:
                conn.autocommit = True
                try:
                    for path, wait in ((LEADER, "1 second"), (own_path, "0")):
                        cur.execute("SELECT coord.lock(%s, %s::interval)", (path, wait))
                        if cur.fetchone()[0]:
                            cur.execute("SELECT coord.fence(%s)", (path,))
                            tok = cur.fetchone()[0]
                            rec("token", port, path, tok)
                            stats["tokens"] += 1
                            cur.execute("SELECT coord.unlock(%s)", (path,))
                finally:
                    if not conn.closed:
                        conn.autocommit = False
            time.sleep(rng.uniform(0.001, 0.004))
        except psycopg2.Error as err:
            if lost_connection(conn, err):
                # session-bound claims went with the session; the job being
                # completed is in doubt (its commit may or may not be on the
                # standby): the new primary's tables decide
                rec("lost", port, doing, [list(r) for r in hand], f"{err.pgcode}: {str(err).strip()[:200]}")
                hand = []
                doing = None
                try:
                    conn.close()
                except psycopg2.Error:
                    pass
                stats["reconnects"] += 1
                conn, port = connect_fleet(name)
                rec("connected", port)
                continue
            stats["errors"].append(f"{err.pgcode}: {str(err).strip()}")
            sys.stderr.write(f"{name}: unexpected error {err.pgcode}: {err}")
            try:
                conn.rollback()
            except psycopg2.Error:
                pass
            if len(stats["errors"]) > 20:
                break
            time.sleep(0.05)
    conn.close()
    print(json.dumps(stats), flush=True)
    return 1 if stats["errors"] else 0


def producer(n):
    """Enqueues 5 jobs per transaction every 50 ms, recording the acknowledged
    ids, until the driver says stop (after the promotion) or n are enqueued."""
    rec = Record(os.path.join(WORKDIR, "producer.log"))
    stats = {"enqueued": 0, "in_doubt": 0, "reconnects": 0, "errors": []}
    conn, port = connect_fleet("producer")
    i = 0
    while stats["enqueued"] < n and not os.path.exists(STOP_PRODUCING):
        orphaned()
        payloads = [json.dumps({"p": i + k}) for k in range(5)]
        try:
            cur = conn.cursor()
            cur.execute("SELECT coord.enqueue_many(%s, %s::jsonb[])", (QUEUE, payloads))
            ids = [r[0] for r in cur.fetchall()]
            conn.commit()
            rec("enqueued", port, ids)
            stats["enqueued"] += len(ids)
            i += 5
            time.sleep(0.05)
        except psycopg2.Error as err:
            if lost_connection(conn, err):
                rec("lost", port, i, f"{err.pgcode}: {str(err).strip()[:200]}")
                stats["in_doubt"] += 1
                i += 5
                try:
                    conn.close()
                except psycopg2.Error:
                    pass
                stats["reconnects"] += 1
                conn, port = connect_fleet("producer")
                continue
            stats["errors"].append(f"{err.pgcode}: {str(err).strip()}")
            try:
                conn.rollback()
            except psycopg2.Error:
                pass
            if len(stats["errors"]) > 20:
                break
    conn.close()
    print(json.dumps(stats), flush=True)
    return 1 if stats["errors"] else 0


# ---------------------------------------------------------------- driver

PROBLEMS = []


def fail(msg):
    log("FAIL: " + msg)
    sys.exit(1)


def problem(msg):
    log("problem: " + msg)
    PROBLEMS.append(msg)


def connect(server, db=DB, app="failover-driver", autocommit=True):
    conn = psycopg2.connect(dbname=db, application_name=app, **server)
    conn.autocommit = autocommit
    return conn


def q(conn, sql, *args):
    cur = conn.cursor()
    cur.execute(sql, args)
    return cur.fetchall()


def q1(conn, sql, *args):
    rows = q(conn, sql, *args)
    return rows[0][0] if rows else None


def as_pg(*cmd):
    if os.getuid() == 0:
        cmd = ("runuser", "-u", "postgres", "--") + cmd
    return subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def pg_ctl(*args):
    r = as_pg(os.path.join(os.environ["PGBIN"], "pg_ctl"), *args)
    if r.returncode != 0:
        fail(f"pg_ctl {' '.join(args)}: {r.stderr.strip()}")


def log_problems(path, start=0):
    """Lines of a server log that show a crashed backend or an assertion."""
    if not os.path.exists(path):
        return []
    with open(path, errors="replace") as f:
        f.seek(start)
        text = f.read()
    # (not "terminated abnormally": the walreceiver says so when the primary goes)
    bad = ("was terminated by signal", "PANIC:", "TRAP:", "server process (PID")
    return [line for line in text.splitlines() if any(b in line for b in bad)]


def wait_replayed(primary, standby, limit=10.0):
    target = q1(primary, "SELECT pg_current_wal_lsn()")
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if q1(standby, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", target):
            return target
        time.sleep(0.01)
    fail(f"the standby did not replay up to {target} within {limit}s")


def setup():
    admin = connect(PRIMARY, db="postgres")
    q(admin, "SELECT 1")
    cur = admin.cursor()
    cur.execute("SET client_min_messages = warning")
    cur.execute(f"DROP DATABASE IF EXISTS {DB}")
    cur.execute(f"CREATE DATABASE {DB}")
    admin.close()
    p = connect(PRIMARY)
    cur = p.cursor()
    cur.execute("CREATE EXTENSION pg_coord")
    # no unique constraint: a job done twice shows as two rows
    cur.execute("CREATE TABLE results (job_id bigint NOT NULL, worker text NOT NULL, token bigint NOT NULL, "
                "port int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())")
    cur.execute("GRANT ALL ON results TO PUBLIC")
    t = time.monotonic()
    ids = []
    for start in range(0, N_JOBS, 500):
        payloads = [json.dumps({"n": i}) for i in range(start, min(start + 500, N_JOBS))]
        cur.execute("SELECT coord.enqueue_many(%s, %s::jsonb[])", (QUEUE, payloads))
        ids += [r[0] for r in cur.fetchall()]
    log(f"enqueued {len(ids)} jobs on the primary in {time.monotonic() - t:.2f}s (each commit remote_apply)")
    return p, ids


def probe_state(p):
    """State for the standby to show: a lease claim and a session-bound claim
    held, request keys in each state (one requested by a live session), a
    held lock with a fencing token, a schedule."""
    state = {}
    cur = p.cursor()
    cur.execute("SELECT coord.enqueue_many('probe', ARRAY['{\"k\":1}','{\"k\":2}','{\"k\":3}','{\"k\":4}']::jsonb[])")
    state["probe_ids"] = [r[0] for r in cur.fetchall()]
    cur.execute("SELECT id, token FROM coord.claim('probe', 1, lease => '10 minutes')")
    state["lease_job"] = cur.fetchone()
    holder = connect(PRIMARY, app="probe-holder")
    hc = holder.cursor()
    hc.execute("SELECT id, token FROM coord.claim('probe', 1, session_bound => true)")
    state["session_job"] = hc.fetchone()
    hc.execute("SELECT coord.request('https://example.org/owned')")
    hc.execute("SELECT coord.lock(%s)", (LEADER,))
    hc.execute("SELECT coord.fence(%s)", (LEADER,))
    state["fence"] = hc.fetchone()[0]
    cur.execute("SELECT coord.request('https://example.org/queued')")
    cur.execute("SELECT coord.mark_queued('https://example.org/queued')")
    cur.execute("SELECT coord.mark_done('https://example.org/done')")
    state["has_schedule"] = q1(p, "SELECT to_regproc('coord.schedule') IS NOT NULL")
    if state["has_schedule"]:
        cur.execute("SELECT coord.schedule('heartbeat', 'events', every => '1 hour')")
    state["holder"] = holder
    return state


# What the standby must show like the primary: (label, query).  Time-dependent
# columns (ages, lease ends) are left out; coord.locks and owner_alive are
# per-server by nature and compared separately.
COMPARE = [
    ("coord.jobs", "SELECT id, queue, CASE WHEN id = %(sid)s THEN '(session claim)' ELSE state END, payload::text, "
                   "attempt, token, origin FROM coord.jobs WHERE queue <> %(q)s OR id <= 20 ORDER BY id"),
    ("coord.jobs (count)", "SELECT queue, count(*) FROM coord.jobs GROUP BY 1 ORDER BY 1"),
    ("coord.queue_stats", "SELECT queue, ready + running, scheduled, dead FROM coord.queue_stats ORDER BY queue"),
    ("coord.requests", "SELECT key, state, owner_pid, waiters FROM coord.requests ORDER BY key"),
    ("coord.fences", "SELECT path, token FROM coord.fences ORDER BY path"),
    ("coord.lock_names", "SELECT key, path FROM coord.lock_names ORDER BY key"),
]


def check_replicated(p, s, state):
    lsn = wait_replayed(p, s)
    log(f"standby replayed up to {lsn}; in recovery: {q1(s, 'SELECT pg_is_in_recovery()')}")
    compare = list(COMPARE)
    if state["has_schedule"]:
        compare.append(("coord.schedules", "SELECT name, queue, every::text, next_run_at, job_id FROM coord.schedules "
                                           "ORDER BY name"))
    notes = []
    lid, ltok = state["lease_job"]
    sid, stok = state["session_job"]
    for label, sql in compare:
        args = {"sid": sid, "q": QUEUE}
        a, b = p.cursor(), s.cursor()
        a.execute(sql, args)
        b.execute(sql, args)
        a, b = a.fetchall(), b.fetchall()
        if a != b:
            problem(f"{label} differs on the standby:\n  primary {a}\n  standby {b}")
        else:
            log(f"  {label}: {len(a)} rows, same on the standby")
    # sessions do not replicate: what the standby shows of the primary's
    # session-bound claim, live request owner and held locks is printed
    for label, server in (("primary", p), ("standby", s)):
        rows = q(server, "SELECT id, state, coord.job_claimed(id) FROM coord.jobs WHERE id IN (%s, %s) ORDER BY id",
                 lid, sid)
        stats = q(server, "SELECT ready, running FROM coord.queue_stats WHERE queue = 'probe'")
        notes.append(f"{label}: lease claim, session-bound claim (id, state, job_claimed): {rows}; "
                     f"probe queue ready/running {stats[0]}")
    for line in notes:
        log("  " + line)
    st = dict((k, v) for k, v in q(s, "SELECT id, state FROM coord.jobs WHERE id IN (%s, %s)", lid, sid))
    if st.get(lid) != "running":
        problem(f"the lease-claimed job {lid} is {st.get(lid)} on the standby, expected running")
    if q1(s, "SELECT coord.fence_ok(%s, %s)", LEADER, state["fence"]) is not True:
        problem("coord.fence_ok on the standby does not accept the token issued on the primary")
    # owner_alive and coord.locks are about sessions, which do not replicate
    owner = q(s, "SELECT owner_alive FROM coord.requests WHERE key = 'https://example.org/owned'")
    owner_p = q(p, "SELECT owner_alive FROM coord.requests WHERE key = 'https://example.org/owned'")
    locks_s = q(s, "SELECT path, mode, granted FROM coord.locks ORDER BY 1, 2")
    locks_p = q(p, "SELECT path, mode, granted FROM coord.locks WHERE path LIKE '/svc%%' ORDER BY 1, 2")
    log(f"  coord.requests owner_alive of a key requested by a live primary session: primary {owner_p[0][0]}, "
        f"standby {owner[0][0]}")
    log(f"  coord.locks: primary shows {locks_p}; standby shows {locks_s}")
    return {"owner_alive_standby": owner[0][0], "locks_standby": locks_s}


def standby_writes(s, state):
    """Each writing function on the standby: the SQLSTATE and message."""
    lid, ltok = state["lease_job"]
    sid, stok = state["session_job"]
    free_id = state["probe_ids"][-1]
    W, L, R, N = "write", "lock", "read", "noop"
    cases = [
        (W, "coord.enqueue", "SELECT coord.enqueue('probe', '{}')"),
        (W, "coord.enqueue(key)", "SELECT coord.enqueue('probe', '{}', key => 'k1')"),
        (W, "coord.enqueue_many", "SELECT coord.enqueue_many('probe', ARRAY['{}']::jsonb[])"),
        (W, "coord.claim (lease)", "SELECT * FROM coord.claim('probe', 1)"),
        (W, "coord.claim (session_bound)", "SELECT * FROM coord.claim('probe', 1, session_bound => true)"),
        (W, "coord.claim (nothing due)", f"SELECT * FROM coord.claim('{QUEUE}-unused', 1)"),
        (W, "coord.complete (lease claim)", f"SELECT coord.complete({lid}, {ltok})"),
        (W, "coord.complete (session claim)", f"SELECT coord.complete({sid}, {stok})"),
        (W, "coord.complete_many", f"SELECT coord.complete_many(ARRAY[{lid}]::bigint[], ARRAY[{ltok}]::bigint[])"),
        (W, "coord.fail", f"SELECT coord.fail({lid}, {ltok}, 'x')"),
        (W, "coord.heartbeat", f"SELECT coord.heartbeat({lid}, {ltok})"),
        (W, "coord.cancel", f"SELECT coord.cancel({free_id})"),
        (W, "coord.retry", f"SELECT coord.retry({free_id})"),
        (W, "coord.purge_jobs", "SELECT coord.purge_jobs('0')"),
        (W, "coord.mark_queued(key, queue)", "SELECT coord.mark_queued('https://example.org/sq', 'probe')"),
        (W, "coord.request (new key)", "SELECT coord.request('https://example.org/new', wait => false)"),
        (W, "coord.request (owned on primary)", "SELECT coord.request('https://example.org/owned', wait => false)"),
        (W, "coord.request (done key)", "SELECT coord.request('https://example.org/done', wait => false)"),
        (W, "coord.mark_queued(key)", "SELECT coord.mark_queued('https://example.org/owned')"),
        (W, "coord.mark_done", "SELECT coord.mark_done('https://example.org/new')"),
        (N, "coord.release", "SELECT coord.release('https://example.org/owned')"),
        (W, "coord.purge_requests", "SELECT coord.purge_requests('0')"),
        (W, "coord.purge_lock_names", "SELECT coord.purge_lock_names()"),
        (L, "coord.lock (held on primary)", f"SELECT coord.lock('{LEADER}', '0')"),
        (W, "coord.fence (lock held here)", f"SELECT coord.fence('{LEADER}')"),
        (L, "coord.unlock", f"SELECT coord.unlock('{LEADER}')"),
        (W, "coord.fence (lock not held)", "SELECT coord.fence('/svc/unheld')"),
        (L, "coord.try_lock", "SELECT coord.try_lock('/svc/standby/a')"),
        (L, "coord.lock_first", "SELECT coord.lock_first(ARRAY['/svc/standby/b'])"),
        (L, "coord.lock_all", "SELECT coord.lock_all(ARRAY['/svc/standby/e', '/svc/standby/f/g'])"),
        (W, "coord.lease_lock", "SELECT coord.lease_lock('/svc/standby/lease', '1 minute')"),
        (W, "coord.renew", "SELECT coord.renew('/svc/standby/lease', 1, '1 minute')"),
        (W, "coord.lease_unlock", "SELECT coord.lease_unlock('/svc/standby/lease', 1)"),
        (L, "coord.xact_lock", "SELECT coord.xact_lock('/svc/standby/c')"),
        (L, "coord.try_xact_lock", "SELECT coord.try_xact_lock('/svc/standby/d', shared => true)"),
        (L, "coord.unlock_all", "SELECT coord.unlock_all()"),
        (R, "coord.fence_ok", f"SELECT coord.fence_ok('{LEADER}', {state['fence']})"),
        (R, "coord.job_state", f"SELECT coord.job_state({lid})"),
        (R, "coord.job_claimed", f"SELECT coord.job_claimed({lid})"),
        (R, "coord.request_state", "SELECT coord.request_state('https://example.org/queued')"),
        (R, "coord.path_key", f"SELECT coord.path_key('{LEADER}')"),
    ]
    if state["has_schedule"]:
        cases += [
            (W, "coord.schedule", "SELECT coord.schedule('standby', 'events', every => '1 hour')"),
            (W, "coord.schedule (unchanged)", "SELECT coord.schedule('heartbeat', 'events', every => '1 hour')"),
            (W, "coord.unschedule", "SELECT coord.unschedule('heartbeat')"),
            (W, "coord.tick", "SELECT coord.tick()"),
            (W, "coord.cron_install", "SELECT coord.cron_install()"),
            (R, "coord.cron_next", "SELECT coord.cron_next('*/5 * * * *')"),
        ]
    cur = s.cursor()
    table = []
    mine = ("SELECT objsubid, classid, objid, mode FROM pg_locks WHERE pid = pg_backend_pid() "
            "AND locktype = 'advisory' ORDER BY 1, 2, 3, 4")
    for kind, name, sql in cases:
        proname = name.split(" ")[0].split("(")[0].replace("coord.", "")
        if q1(s, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'coord'::regnamespace AND proname = %s",
              proname) == 0:
            table.append((kind, name, "absent", "", "function not installed"))
            continue
        held_before = q(s, mine)
        del s.notices[:]
        try:
            cur.execute(sql)
            rows = cur.fetchall()
            result = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 else rows
            notice = " ".join(n.strip() for n in s.notices)
            table.append((kind, name, "ok", "", f"returned {result!r}" + (f"; {notice}" if notice else "")))
        except psycopg2.Error as err:
            if s.closed:
                table.append((kind, name, "crash", err.pgcode or "", str(err).strip()))
                break
            msg = err.diag.message_primary or str(err).strip()
            table.append((kind, name, "error", err.pgcode or "", msg))
        try:
            held_after = q(s, mine)
        except psycopg2.Error as err:
            table.append((kind, name, "crash", "", f"session lost after the call: {err}"))
            break
        # a failed call must leave no new lock of this session behind
        new_locks = [x for x in held_after if x not in held_before]
        if table[-1][2] == "error" and new_locks:
            table[-1] = table[-1][:4] + (table[-1][4] + f" [left {len(new_locks)} advisory locks: {new_locks}]",)
    return table


def print_table(table):
    log("")
    log("writing functions on the hot standby:")
    w = max(len(r[1]) for r in table)
    log(f"  {'kind':5} {'function':{w}} {'outcome':7} {'sqlstate':8} message")
    for kind, name, outcome, code, msg in table:
        log(f"  {kind:5} {name:{w}} {outcome:7} {code:8} {msg}")
    log("")


def judge_table(table):
    for kind, name, outcome, code, msg in table:
        if outcome == "crash":
            problem(f"{name} on the standby lost the session: {msg}")
        elif kind == "write":
            if outcome == "ok":
                problem(f"{name} succeeded on the standby: {msg}")
            elif outcome == "error" and (code[:2] in ("XX", "58", "08", "57") or not code):
                problem(f"{name} on the standby raised an obscure error {code}: {msg}")
            if "left" in msg and "advisory locks" in msg:
                problem(f"{name} on the standby left locks behind: {msg}")
        elif kind == "noop" and outcome == "error" and code[:2] in ("XX", "58", "08", "57"):
            problem(f"{name} on the standby raised an obscure error {code}: {msg}")
        elif kind == "read" and outcome != "ok":
            problem(f"read-only {name} failed on the standby: {code} {msg}")
        elif kind == "lock" and outcome == "error" and code[:2] in ("XX", "58", "08", "57"):
            problem(f"{name} on the standby raised an obscure error {code}: {msg}")


class Proc:
    def __init__(self, *args):
        self.name = args[1] if args[0] == "worker" else args[0]
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), *args],
                                     stdout=subprocess.PIPE, text=True)

    def finish(self, limit):
        try:
            out, _ = self.proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            problem(f"{self.name} did not finish in time")
        lines = (out or "").strip().splitlines()
        if self.proc.returncode != 0:
            problem(f"{self.name} exited with {self.proc.returncode}")
        return json.loads(lines[-1]) if lines else {}


def read_log(name):
    path = os.path.join(WORKDIR, name + ".log")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def count_done():
    n = 0
    for i in range(N_WORKERS):
        path = os.path.join(WORKDIR, f"w{i + 1}.log")
        if os.path.exists(path):
            with open(path) as f:
                n += sum(1 for line in f if line.startswith('["done"'))
    return n


def failover(p, state, setup_ids):
    pport, sport = int(PRIMARY["port"]), int(STANDBY["port"])
    state["holder"].close()
    p.close()
    os.makedirs(WORKDIR, exist_ok=True)
    rng = random.Random()
    procs = [Proc("worker", f"w{i + 1}", str(rng.randrange(1 << 30))) for i in range(N_WORKERS)]
    prod = Proc("producer", str(N_PRODUCED))
    t_start = time.monotonic()
    while count_done() < KILL_AFTER:
        if time.monotonic() - t_start > TIME_LIMIT:
            fail("the workers did not reach the kill point in time")
        if any(x.proc.poll() is not None for x in procs):
            fail("a worker exited before the primary was stopped")
        time.sleep(0.01)
    done_before = count_done()
    t_kill = time.monotonic()
    pg_ctl("-D", os.environ["PGDATA"], "-m", "immediate", "-w", "stop")
    t_stopped = time.monotonic()
    pg_ctl("-D", os.environ["STANDBY_DATA"], "-w", "-t", "30", "promote")
    t_promoted = time.monotonic()
    log(f"primary stopped (-m immediate) after {done_before} acknowledged completions; "
        f"stop took {(t_stopped - t_kill) * 1000:.0f} ms, promote {(t_promoted - t_stopped) * 1000:.0f} ms")
    # the producer goes on a second on the new primary, then stops
    while time.monotonic() < t_promoted + 1.0 and prod.proc.poll() is None:
        time.sleep(0.05)
    open(STOP_PRODUCING, "w").close()
    pstats = prod.finish(TIME_LIMIT)
    open(STOP_FLAG, "w").close()
    wstats = {x.name: x.finish(TIME_LIMIT) for x in procs}
    t_end = time.monotonic()
    return dict(t_start=t_start, t_kill=t_kill, t_stopped=t_stopped, t_promoted=t_promoted, t_end=t_end,
                done_before=done_before, pstats=pstats, wstats=wstats)


def account(n, setup_ids, state, timing):
    pport, sport = int(PRIMARY["port"]), int(STANDBY["port"])
    logs = {f"w{i + 1}": read_log(f"w{i + 1}") for i in range(N_WORKERS)}
    plog = read_log("producer")
    acked_done = [(r[2], r[3], r[1], name, r[-1]) for name, rs in logs.items() for r in rs if r[0] == "done"]
    acked_enq = [i for r in plog if r[0] == "enqueued" for i in r[2]]
    tokens = [(r[3], r[1], r[2], name, r[-1]) for name, rs in logs.items() for r in rs if r[0] == "token"]
    lost = [(name, r) for name, rs in logs.items() for r in rs if r[0] == "lost"]
    reconnected = [(name, r[1]) for name, rs in logs.items() for r in rs if r[0] == "connected" and r[1] == sport]

    # --- the new primary's tables
    all_ids = [r[0] for r in q(n, "SELECT id FROM coord.job WHERE queue = %s UNION ALL "
                                  "SELECT id FROM coord.job_history WHERE queue = %s", QUEUE, QUEUE)]
    live = q1(n, "SELECT count(*) FROM coord.job WHERE queue = %s", QUEUE)
    hist = q(n, "SELECT state, count(*) FROM coord.job_history WHERE queue = %s GROUP BY 1", QUEUE)
    res_n, res_distinct = q(n, "SELECT count(*), count(DISTINCT job_id) FROM results")[0]
    twice = q(n, "SELECT job_id, count(*) FROM results GROUP BY 1 HAVING count(*) > 1 ORDER BY 1 LIMIT 5")
    not_done = q1(n, "SELECT count(*) FROM coord.job_history h WHERE queue = %s AND NOT EXISTS "
                     "(SELECT 1 FROM results r WHERE r.job_id = h.id)", QUEUE)
    mismatch = q1(n, "SELECT count(*) FROM results r JOIN coord.job_history h ON h.id = r.job_id "
                     "WHERE h.token <> r.token OR h.state <> 'done'")
    unknown = q1(n, "SELECT count(*) FROM results r WHERE NOT EXISTS "
                    "(SELECT 1 FROM coord.job_history h WHERE h.id = r.job_id)")
    by_port = dict(q(n, "SELECT port, count(*) FROM results GROUP BY 1"))
    results = dict((j, (t, w)) for j, t, w in q(n, "SELECT job_id, token, worker FROM results"))
    first_new = q1(n, "SELECT min(at) FROM results WHERE port = %s", sport)

    log(f"new primary: {len(all_ids)} jobs in queue {QUEUE} ({live} live, history {dict(hist)}); results "
        f"{res_n} rows for {res_distinct} jobs ({by_port.get(pport, 0)} done on :{pport}, "
        f"{by_port.get(sport, 0)} on :{sport})")
    if live:
        problem(f"{live} jobs left in coord.job")
    if dict(hist) != {"done": len(all_ids)}:
        problem(f"coord.job_history states {dict(hist)}, expected {len(all_ids)} done")
    if res_n != len(all_ids) or res_distinct != len(all_ids):
        problem(f"{res_n} results rows for {res_distinct} jobs, {len(all_ids)} jobs exist")
    if twice:
        problem(f"jobs done more than once: {twice}")
    if not_done:
        problem(f"{not_done} jobs done in coord.job_history have no results row")
    if mismatch or unknown:
        problem(f"{mismatch} results rows with another token or state than the history, {unknown} for unknown jobs")
    missing_setup = set(setup_ids) - set(all_ids)
    missing_enq = set(acked_enq) - set(all_ids)
    if missing_setup or missing_enq:
        problem(f"acknowledged enqueues lost in the failover: {len(missing_setup)} of the setup, "
                f"{len(missing_enq)} of the producer (e.g. {sorted(missing_setup | missing_enq)[:5]})")
    lost_done = [d for d in acked_done if results.get(d[0], (None,))[0] != d[1]]
    if lost_done:
        problem(f"{len(lost_done)} acknowledged completions are not in results with their token "
                f"(e.g. {lost_done[:3]})")
    in_doubt = [r[2] for name, r in lost if r[2] is not None]
    doubt_done_old = sum(1 for j in in_doubt if results.get(j) and
                         q1(n, "SELECT port FROM results WHERE job_id = %s", j) == pport)
    log(f"acknowledged: {len(acked_done)} completions ({sum(1 for d in acked_done if d[2] == pport)} on the old "
        f"primary), {len(acked_enq)} + {len(setup_ids)} enqueues; all on the new primary: "
        f"{'yes' if not (lost_done or missing_setup or missing_enq) else 'NO'}")
    log(f"connections lost at the kill: {len(lost)} ({len(in_doubt)} with a completion in doubt, "
        f"{doubt_done_old} of those had committed and replicated); reconnections to :{sport}: {len(reconnected)}")
    if len(set(name for name, _ in reconnected)) != N_WORKERS:
        problem(f"only {sorted(set(name for name, _ in reconnected))} reconnected to the new primary")

    # --- fencing tokens: seen by the workers (acknowledged), plus the setup's
    before = [t for t in tokens if t[1] == pport] + [(state["fence"], pport, LEADER, "setup", 0)]
    after = [t for t in tokens if t[1] == sport]
    if not after:
        problem("no fencing token was issued after the promotion")
    else:
        max_before, min_after = max(t[0] for t in before), min(t[0] for t in after)
        leader_after = [t for t in after if t[2] == LEADER]
        log(f"fencing tokens: {len(before)} issued before the failover (max {max_before}), {len(after)} after "
            f"(min {min_after}, gap {min_after - max_before}); newest on {LEADER}: "
            f"{q1(n, 'SELECT token FROM coord.fences WHERE path = %s', LEADER)}")
        if not min_after > max_before:
            problem(f"a fencing token issued after the promotion ({min_after}) is not larger than one "
                    f"issued before ({max_before})")
        for path in set(t[2] for t in tokens):
            newest_seen = max(t[0] for t in tokens if t[2] == path)
            stored = q1(n, "SELECT token FROM coord.fences WHERE path = %s", path)
            if stored != newest_seen:
                problem(f"coord.fences holds {stored} for {path}, the newest token a worker saw is {newest_seen}")
        if leader_after and q1(n, "SELECT coord.fence_ok(%s, %s)", LEADER, max_before):
            problem("fence_ok accepts a pre-failover token after newer ones were issued")
    # claim tokens (coord.job_token_seq) too
    claim_before = [tok for rs in logs.values() for r in rs if r[0] == "claimed" and r[1] == pport for _, tok in r[2]]
    claim_after = [tok for rs in logs.values() for r in rs if r[0] == "claimed" and r[1] == sport for _, tok in r[2]]
    if claim_before and claim_after:
        log(f"claim tokens: max {max(claim_before)} before, min {min(claim_after)} after")
        if not min(claim_after) > max(claim_before):
            problem("a claim token issued after the promotion is not larger than one issued before")

    # --- timings
    first_job = min((d[4] for d in acked_done if d[2] == sport), default=None)
    first_conn = min((r[-1] for rs in logs.values() for r in rs if r[0] == "connected" and r[1] == sport),
                     default=None)
    timing["first_job_ms"] = (first_job - timing["t_kill"]) * 1000 if first_job else None
    timing["first_conn_ms"] = (first_conn - timing["t_kill"]) * 1000 if first_conn else None
    timing["first_new_db"] = first_new
    timing["tokens"] = (len(before), len(after))
    timing["jobs"] = len(all_ids)
    timing["old"], timing["new"] = by_port.get(pport, 0), by_port.get(sport, 0)
    return timing


def main():
    spath = os.path.join(os.environ["COORD_TMP"], "standby.log")
    ppath = os.path.join(os.environ["COORD_TMP"], "server.log")
    s_start = os.path.getsize(spath) if os.path.exists(spath) else 0
    p_start = os.path.getsize(ppath) if os.path.exists(ppath) else 0
    t0 = time.monotonic()
    p, setup_ids = setup()
    state = probe_state(p)

    # 1. state replicates
    s = connect(STANDBY)
    extra = check_replicated(p, s, state)

    # 2. writes on the standby
    table = standby_writes(s, state)
    print_table(table)
    judge_table(table)
    s.close()
    # the standby is still a standby, streaming, and the primary unharmed
    s = connect(STANDBY)
    if not q1(s, "SELECT pg_is_in_recovery()"):
        problem("the standby left recovery")
    s.close()
    bad = log_problems(spath, s_start)
    if bad:
        problem("the standby's log shows a crash: " + " | ".join(bad[:3]))
    if PROBLEMS:
        fail("; ".join(PROBLEMS))
    t_checked = time.monotonic()
    log(f"setup and standby checks took {t_checked - t0:.1f}s")
    n_errors = sum(1 for r in table if r[0] == "write" and r[2] == "error")
    n_25006 = sum(1 for r in table if r[0] == "write" and r[3] == "25006")

    # 3. failover
    timing = failover(p, state, setup_ids)
    n = connect(STANDBY)
    if q1(n, "SELECT pg_is_in_recovery()"):
        problem("the promoted standby is still in recovery")
    log(f"failover phase: {timing['t_end'] - timing['t_start']:.1f}s "
        f"({timing['t_kill'] - timing['t_start']:.1f}s before the kill)")
    account(n, setup_ids, state, timing)
    for name, st in timing["wstats"].items():
        if st.get("errors"):
            problem(f"{name}: {len(st['errors'])} unexpected errors, e.g. {st['errors'][:2]}")
    if timing["pstats"].get("errors"):
        problem(f"producer: unexpected errors {timing['pstats']['errors'][:2]}")
    log(f"workers: {json.dumps({k: {x: v[x] for x in ('done', 'refused', 'reconnects', 'tokens')} for k, v in timing['wstats'].items() if v})}; "
        f"producer: {json.dumps({x: timing['pstats'].get(x) for x in ('enqueued', 'in_doubt', 'reconnects')})}")
    bad = log_problems(spath, s_start) + log_problems(ppath, p_start)
    if bad:
        problem("a server log shows a crash: " + " | ".join(bad[:3]))
    if PROBLEMS:
        log(f"(the new primary :{STANDBY['port']} is stopped with the test; database {DB})")
        fail("; ".join(PROBLEMS))
    n.cursor().execute("SELECT 1")
    n.close()
    fj = timing["first_job_ms"]
    fc = timing["first_conn_ms"]
    log(f"standby_failover: {n_errors} writing calls refused on the standby ({n_25006} with 25006), no crash; "
        f"{timing['jobs']} jobs done exactly once ({timing['old']} on the old primary, {timing['new']} after "
        f"promotion) with remote_apply; tokens after > before ({timing['tokens'][1]} > {timing['tokens'][0]}); "
        f"kill->promoted {(timing['t_promoted'] - timing['t_kill']) * 1000:.0f} ms, ->first reconnect "
        f"{fc:.0f} ms, ->first job on the new primary {fj:.0f} ms; {time.monotonic() - t0:.1f}s")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        sys.exit(worker(sys.argv[2], int(sys.argv[3])))
    if len(sys.argv) > 1 and sys.argv[1] == "producer":
        sys.exit(producer(int(sys.argv[2])))
    main()
