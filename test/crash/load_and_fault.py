"""Load and faults: every kind of pg_coord worker at once, killed and restarted.

Worker processes (each reconnects with backoff after losing its connection
or the server):

  lock      coord.lock on /lf/res/<k> (now and then the parent /lf/res),
            coord.fence, a write to lf.fenced_writes guarded by
            coord.fence_ok, coord.unlock.  Every token and write it saw
            committed goes to its local log.  A worker that lost its session
            between the fence and the write retries the write later with the
            old token, under the lock again: fence_ok decides.
  req       coord.request on 40 shared keys (half with stale_after 1 s);
            the owner holds it a few ms, then writes lf.owners (key, backend
            pid and start, when it got the key) in the same transaction as
            coord.mark_done, coord.mark_queued(key, 'lf_req', ...) or
            coord.release.  Each acquisition goes to its local log.
  prod      coord.enqueue (plain, keyed, grouped, delayed) and enqueue_many
            into lf_jobs; ids are logged locally once the commit returned.
  jobw      claims lf_jobs, lf_req, lf_sched and apps, two session-bound and
            two with 2-second leases; each job is one transaction: INSERT
            INTO lf.results, a few ms of work, coord.complete (ROLLBACK when
            it answers false).  Claims held across a lost connection are
            completed with their old tokens.  A few lf_jobs jobs are failed
            with retry_after.
  appdrv    coord.tick(simulated now): one simulated hour per LF_SIM_HOUR
            seconds, ahead of the wall clock (apps lf_up1, lf_up2 hourly and
            lf_down depending on both for each hour).
  tick      coord.tick() every 200 ms.
  monitor   samples coord.jobs every 50 ms (at most one live instance per
            schedule) and, every 0.5 s, coord.locks and the request locks
            against pg_stat_activity.

Faults during the run: SIGKILL of a random worker every 1.5-3.5 s (a new one
of the same kind replaces it), pg_terminate_backend of a random lf backend
every 0.7-2 s, and LF_RESTARTS (default 2) pg_ctl -m immediate restarts.
Then the writers stop, the job workers drain the queues without faults, and
the invariants are checked and printed; exit status 1 if any fails.

    load_and_fault.py                       the test (the driver)
    load_and_fault.py role KIND NAME SEED   one worker (started by the driver)

Environment: PGHOST/PGPORT/PGUSER, PGDATA and COORD_TMP (from lib.sh's
coord_cluster_start, for the restarts); LF_DURATION (45), LF_SEED, LF_RESTARTS,
LF_SIM_HOUR (1.0), LF_DRAIN (20), LF_KEEP (keep the logs)."""
import signal
import sys

STOP = False


def on_term(*_):
    global STOP
    STOP = True


if len(sys.argv) > 1 and sys.argv[1] == "role":
    # a worker: SIGTERM means "finish what you are doing and stop", from the start
    signal.signal(signal.SIGTERM, on_term)

import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import psycopg2  # noqa: E402

DB = "lf"
HERE = os.path.dirname(os.path.abspath(__file__))
DURATION = float(os.environ.get("LF_DURATION", "45"))
RESTARTS = int(os.environ.get("LF_RESTARTS", "2"))
SIM_HOUR = float(os.environ.get("LF_SIM_HOUR", "1.0"))
DRAIN_LIMIT = float(os.environ.get("LF_DRAIN", "20"))
LEASE = "2 seconds"
LOCK_PATHS = [f"/lf/res/{i}" for i in range(4)]
PARENT_PATH = "/lf/res"
REQUEST_KEYS = 40
SCHEDULES = ("lf_s1", "lf_s2")
UP_APPS = ("lf_up1", "lf_up2")
DOWN_APP = "lf_down"
JOB_QUEUES = ("lf_jobs", "lf_req", "lf_sched", "apps")
DRAINED_QUEUES = ["lf_jobs", "lf_req", "apps"]     # lf_sched always has the next instance

# how many of each kind run at once
FLEET = [("lock", 3), ("req", 3), ("prod", 2), ("jobw-session", 2), ("jobw-lease", 2),
         ("appdrv", 1), ("tick", 1), ("monitor", 1)]
KILLABLE = ("lock", "req", "prod", "jobw-session", "jobw-lease", "appdrv", "tick")
WRITERS = ("lock", "req", "prod", "appdrv")          # stopped before the drain

# SQLSTATEs that mean the session is gone (or not there yet), not an SQL error.
CONNECTION_STATES = {"57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004"}


def lost_connection(conn, err):
    return conn is None or conn.closed != 0 or err.pgcode is None or err.pgcode in CONNECTION_STATES


# ====================================================================== workers

PARENT = os.getppid()


def orphaned():
    """The driver is gone: stop instead of working on."""
    if os.getppid() != PARENT:
        os._exit(3)


class Stopped(Exception):
    pass


class Worker:
    def __init__(self, name, seed, logdir, extra):
        self.name = name
        self.rng = random.Random(seed)
        self.extra = extra
        self.log = open(os.path.join(logdir, name + ".log"), "a", buffering=1)
        self.conn = None
        self.phase = None
        self.init()
        self.ev(k="start")      # the driver waits for this line before it sends SIGTERM

    def init(self):
        pass

    def ev(self, **kw):
        """One line of the local log: written (and flushed) after what it reports committed."""
        kw["w"] = self.name
        kw["t"] = round(time.time(), 3)
        self.log.write(json.dumps(kw) + "\n")

    def connect(self):
        delay = 0.05
        while True:
            orphaned()
            if STOP:
                raise Stopped()
            try:
                conn = psycopg2.connect(dbname=DB, application_name="lf:" + self.name, connect_timeout=5)
                conn.autocommit = False
                self.conn = conn
                return
            except psycopg2.OperationalError:
                time.sleep(delay * (0.5 + self.rng.random()))
                delay = min(delay * 2, 1.0)

    def drop(self):
        try:
            self.conn.close()
        except Exception:
            pass
        self.conn = None

    def on_lost(self):
        pass

    def on_stop(self):
        pass

    def run(self):
        try:
            self.connect()
            self.ev(k="ready")      # the faults start once every first worker is ready
            while not STOP:
                orphaned()
                try:
                    self.step()
                except psycopg2.Error as err:
                    if lost_connection(self.conn, err):
                        self.on_lost()
                        self.ev(k="reconnect", phase=self.phase)
                    else:
                        # an SQL error nobody expects: log it, start a fresh session
                        # (that drops any lock or request this session held)
                        self.ev(k="error", phase=self.phase, code=err.pgcode, msg=str(err).strip()[:300])
                        time.sleep(0.05)
                    self.phase = None
                    self.drop()
                    self.connect()
        except Stopped:
            pass
        self.on_stop()
        self.ev(k="exit")
        if self.conn is not None:
            self.drop()
        return 0


class LockWorker(Worker):
    WRITE = ("INSERT INTO lf.fenced_writes (path, token, pid, worker, stale) "
             "SELECT %s, %s, pg_backend_pid(), %s, %s WHERE coord.fence_ok(%s, %s) RETURNING id")

    def init(self):
        self.stale = None       # (path, token): fenced in a session lost before its write committed
        self.fenced = None

    def step(self):
        rng, conn = self.rng, self.conn
        cur = conn.cursor()
        if self.stale:
            path = self.stale[0]
        else:
            path = PARENT_PATH if rng.random() < 0.05 else rng.choice(LOCK_PATHS)
        self.phase = "lock"
        cur.execute("SELECT coord.lock(%s, '2 seconds')", (path,))
        got = cur.fetchone()[0]
        conn.commit()
        if not got:
            self.ev(k="lock_timeout", path=path)
            return
        self.ev(k="locked", path=path)
        if self.stale:
            # the write a lost session never committed, now under the lock again, with its old token
            _, old = self.stale
            self.stale = None
            self.phase = "stale-write"
            cur.execute(self.WRITE, (path, old, self.name, True, path, old))
            ok = cur.fetchone() is not None
            self.phase = "stale-commit"
            conn.commit()
            self.ev(k="write", path=path, token=old, ok=ok, stale=True)
        self.phase = "fence"
        cur.execute("SELECT coord.fence(%s), pg_postmaster_start_time()::text", (path,))
        token, pm = cur.fetchone()
        self.phase = "fence-commit"
        conn.commit()
        self.ev(k="fence", path=path, token=token, pm=pm)
        # from here until the write's COMMIT is sent, a lost session has not written
        self.phase = "work"
        self.fenced = (path, token)
        time.sleep(rng.uniform(0.001, 0.015))
        cur.execute(self.WRITE, (path, token, self.name, False, path, token))
        ok = cur.fetchone() is not None
        self.phase = "write-commit"
        conn.commit()
        self.ev(k="write", path=path, token=token, ok=ok, stale=False)
        self.phase = "unlock"
        cur.execute("SELECT coord.unlock(%s)", (path,))
        conn.commit()
        self.phase = None

    def on_lost(self):
        if self.phase == "work":
            self.stale = self.fenced


class RequestWorker(Worker):
    def step(self):
        rng, conn = self.rng, self.conn
        cur = conn.cursor()
        key = f"lf/k{rng.randrange(REQUEST_KEYS)}"
        stale = "1 second" if rng.random() < 0.5 else None
        self.phase = "request"
        cur.execute("SELECT coord.request(%s, stale_after => %s::interval, timeout => '2 seconds')", (key, stale))
        got = cur.fetchone()[0]
        conn.commit()
        self.ev(k="req", key=key, got=got)
        if not got:
            return
        self.phase = "owner"
        # measured after request() returned: later than the moment the key became ours
        cur.execute("SELECT clock_timestamp()::text, pg_backend_pid(), "
                    "(SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())")
        at, pid, bs = cur.fetchone()
        conn.commit()
        self.ev(k="acq", key=key, pid=pid, bs=bs, at=at)
        time.sleep(rng.uniform(0.002, 0.02))
        r = rng.random()
        action = "done" if r < 0.45 else "queued" if r < 0.9 else "release"
        cur.execute("SELECT owner_pid FROM coord.requests WHERE key = %s", (key,))
        row = cur.fetchone()
        seen = row[0] if row else None
        cur.execute("INSERT INTO lf.owners (key, pid, backend_start, action, acquired_at, seen_owner_pid, worker) "
                    "VALUES (%s, %s, %s::timestamptz, %s, %s::timestamptz, %s, %s) RETURNING id",
                    (key, pid, bs, action, at, seen, self.name))
        oid = cur.fetchone()[0]
        job = None
        if action == "done":
            cur.execute("SELECT coord.mark_done(%s)", (key,))
        elif action == "queued":
            cur.execute("SELECT coord.mark_queued(%s, 'lf_req', %s::jsonb)", (key, json.dumps({"key": key})))
            job = cur.fetchone()[0]
            cur.execute("UPDATE lf.owners SET job_id = %s WHERE id = %s", (job, oid))
        else:
            cur.execute("SELECT coord.release(%s)", (key,))
        self.phase = "mark-commit"
        conn.commit()
        self.ev(k="mark", key=key, action=action, job=job)
        self.phase = None


class Producer(Worker):
    def step(self):
        rng, conn = self.rng, self.conn
        cur = conn.cursor()
        r = rng.random()
        n = 0
        self.phase = "enqueue"
        if r < 0.2:
            payloads = [json.dumps({"p": self.name, "b": i}) for i in range(rng.randint(1, 8))]
            cur.execute("SELECT coord.enqueue_many('lf_jobs', %s::jsonb[])", (payloads,))
            ids = [x[0] for x in cur.fetchall()]
            kind = "many"
        else:
            key = group = None
            if r < 0.45:
                key, kind = f"pk{rng.randrange(20)}", "keyed"
            elif r < 0.65:
                group, kind = f"g{rng.randrange(3)}", "group"
            else:
                kind = "plain"
            delayed = rng.random() < 0.1
            if group is not None:
                # "enqueue order" is the order of commits: two enqueuers of one
                # group whose ids and commits cross would see the later id run
                # first (a claim cannot see an uncommitted job), so the check
                # below, which orders by id, needs them one at a time
                cur.execute("SELECT pg_advisory_xact_lock(hashtext('lf-group:' || %s))", (group,))
            cur.execute("SELECT coord.enqueue('lf_jobs', %s::jsonb, "
                        "run_at => CASE WHEN %s THEN clock_timestamp() + interval '300 milliseconds' END, "
                        "priority => %s, key => %s, group_key => %s)",
                        (json.dumps({"p": self.name, "kind": kind}), delayed, rng.choice((0, 0, 0, 5)), key, group))
            ids = [cur.fetchone()[0]]
            n = 1
        self.phase = "enqueue-commit"
        conn.commit()
        for i in ids:
            self.ev(k="enq", id=i, kind=kind)
        self.phase = None
        time.sleep(rng.uniform(0.01, 0.03) * max(n, 1))


class JobWorker(Worker):
    def init(self):
        self.session_bound = self.name.split("-")[1].startswith("session")
        self.hand = []          # claimed, not yet finished: [id, token, queue, payload]
        self.carried = set()

    def claim(self):
        rng, conn = self.rng, self.conn
        cur = conn.cursor()
        queues = list(JOB_QUEUES)
        rng.shuffle(queues)
        queues.sort(key=lambda q: q != "lf_jobs" and rng.random() < 0.5)
        for q in queues:
            self.phase = "claim"
            cur.execute("SELECT id, token, payload FROM coord.claim(%s, %s, lease => %s::interval, "
                        "session_bound => %s)", (q, rng.randint(1, 4), LEASE, self.session_bound))
            rows = cur.fetchall()
            conn.commit()
            if rows:
                self.hand = [[i, t, q, p] for i, t, p in rows]
                self.ev(k="claim", q=q, ids=[r[0] for r in rows])
                return True
        return False

    def step(self):
        rng, conn = self.rng, self.conn
        if not self.hand and not self.claim():
            time.sleep(0.02)
            return
        cur = conn.cursor()
        jid, token, q, payload = self.hand[0]
        if q == "lf_jobs" and jid not in self.carried and rng.random() < 0.03:
            self.phase = "fail"
            cur.execute("SELECT coord.fail(%s, %s, 'lf: injected failure', retry_after => '200 milliseconds')",
                        (jid, token))
            st = cur.fetchone()[0]
            conn.commit()
            self.ev(k="fail", id=jid, token=token, state=st)
            self.hand.pop(0)
            return
        self.phase = "job"
        cur.execute("INSERT INTO lf.results (job_id, token, queue, worker, carried) VALUES (%s, %s, %s, %s, %s)",
                    (jid, token, q, self.name, jid in self.carried))
        time.sleep(rng.uniform(0, 0.004))     # the work
        if q == "apps":
            result = {"app": payload.get("app"), "period": payload.get("period_start"), "token": token}
        else:
            result = {"token": token}
        cur.execute("SELECT coord.complete(%s, %s, %s::jsonb)", (jid, token, json.dumps(result)))
        ok = cur.fetchone()[0]
        if ok:
            self.phase = "commit"
            conn.commit()
            self.ev(k="done", id=jid, token=token)
        else:
            conn.rollback()
            self.ev(k="refused", id=jid, token=token, carried=jid in self.carried)
        self.hand.pop(0)
        self.phase = None

    def on_lost(self):
        # the job at hand[0] is tried again (its commit may have happened), the rest with the old tokens
        self.carried = {h[0] for h in self.hand}


class Ticker(Worker):
    def step(self):
        cur = self.conn.cursor()
        self.phase = "tick"
        cur.execute("SELECT coord.tick()")
        cur.fetchone()
        self.conn.commit()
        self.phase = None
        time.sleep(0.2)


class AppDriver(Worker):
    """coord.tick(simulated now): hour k after the apps' first period at k * LF_SIM_HOUR s after the start."""

    def step(self):
        h0, t0 = float(self.extra[0]), float(self.extra[1])
        sim = h0 + 3600 * (1 + int((time.time() - t0) / SIM_HOUR))
        cur = self.conn.cursor()
        self.phase = "simtick"
        cur.execute("SELECT coord.tick(to_timestamp(%s))", (sim,))
        n = cur.fetchone()[0]
        self.conn.commit()
        self.ev(k="simtick", sim=sim, n=n)
        self.phase = None
        time.sleep(0.25)


class Monitor(Worker):
    def init(self):
        self.s = {"samples": 0, "max_live": {s: 0 for s in SCHEDULES}, "live_violations": [],
                  "lock_checks": 0, "lock_suspects": 0, "lock_violations": [], "request_double": [],
                  "held_samples": 0}
        self.suspects = set()
        self.next_lock_check = 0.0
        self.next_dump = 0.0

    def dump(self):
        path = os.path.join(os.path.dirname(self.log.name), "monitor.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.s, f)
        os.replace(path + ".tmp", path)

    def step(self):
        cur = self.conn.cursor()
        self.phase = "sample"
        cur.execute("SELECT origin, count(*) FROM coord.jobs WHERE origin = ANY (%s) "
                    "AND state IN ('scheduled', 'ready', 'running') GROUP BY origin",
                    (["s:" + s for s in SCHEDULES],))
        rows = cur.fetchall()
        self.conn.commit()
        self.s["samples"] += 1
        for origin, n in rows:
            s = origin[2:]
            self.s["max_live"][s] = max(self.s["max_live"][s], n)
            if n > 1:
                self.s["live_violations"].append([time.time(), s, n])
        now = time.monotonic()
        if now >= self.next_lock_check:
            self.next_lock_check = now + 0.5
            self.phase = "locks"
            # holders that pg_stat_activity does not know; a backend may be exiting right
            # now, so only one still there at the next check (0.5 s later) counts
            cur.execute("SELECT 'lock', l.path, l.pid FROM coord.locks AS l "
                        "WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = l.pid) "
                        "UNION ALL SELECT 'request', r.key::text, r.pid FROM coord.request_lock_status() AS r "
                        "WHERE r.granted AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = r.pid) "
                        # every pg_coord namespace: paths 17201, requests 17203, job claims 17204, idle 17205
                        "UNION ALL SELECT 'advisory ' || l.objsubid, l.classid || ':' || l.objid, l.pid "
                        "FROM pg_locks AS l JOIN pg_database AS d ON d.oid = l.database AND d.datname = current_database() "
                        "WHERE l.locktype = 'advisory' AND l.granted "
                        "AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = l.pid)")
            found = {tuple(r) for r in cur.fetchall()}
            cur.execute("SELECT count(*) FROM coord.locks WHERE granted")
            self.s["held_samples"] += cur.fetchone()[0] > 0
            cur.execute("SELECT key::text, array_agg(DISTINCT pid) FROM coord.request_lock_status() WHERE granted "
                        "GROUP BY key HAVING count(DISTINCT pid) > 1")
            double = cur.fetchall()
            self.conn.commit()
            self.s["lock_checks"] += 1
            self.s["lock_suspects"] += len(found)
            for f in found & self.suspects:
                self.s["lock_violations"].append([time.time()] + list(f))
            self.suspects = found
            for key, pids in double:
                self.s["request_double"].append([time.time(), key, pids])
        if now >= self.next_dump:
            self.next_dump = now + 1.0
            self.dump()
        self.phase = None
        time.sleep(0.04)

    def on_stop(self):
        self.dump()


ROLES = {"lock": LockWorker, "req": RequestWorker, "prod": Producer, "jobw-session": JobWorker,
         "jobw-lease": JobWorker, "appdrv": AppDriver, "tick": Ticker, "monitor": Monitor}


def role_main(argv):
    kind, name, seed = argv[0], argv[1], int(argv[2])
    logdir = os.environ["LF_LOGDIR"]
    return ROLES[kind](name, seed, logdir, argv[3:]).run()


# ====================================================================== driver

def log(msg=""):
    print(msg, flush=True)


class Admin:
    """The driver's own connection; survives restarts (and being terminated)."""

    def __init__(self):
        self.conn = None

    def _cur(self):
        if self.conn is None or self.conn.closed:
            self.conn = psycopg2.connect(dbname=DB, application_name="lf-driver")
            self.conn.autocommit = True
        return self.conn.cursor()

    def run(self, fn, limit=60.0):
        deadline = time.monotonic() + limit
        while True:
            try:
                return fn(self._cur())
            except psycopg2.Error as err:
                if self.conn is not None and not lost_connection(self.conn, err):
                    raise
                if self.conn is not None:
                    try:
                        self.conn.close()
                    except psycopg2.Error:
                        pass
                self.conn = None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def all(self, sql, *args, limit=60.0):
        def f(cur):
            cur.execute(sql, args or None)
            return cur.fetchall() if cur.description else None
        return self.run(f, limit)

    def one(self, sql, *args, limit=60.0):
        rows = self.all(sql, *args, limit=limit)
        return rows[0] if rows else None

    def val(self, sql, *args, limit=60.0):
        row = self.one(sql, *args, limit=limit)
        return row[0] if row else None


SETUP = """
SET client_min_messages = warning;
CREATE SCHEMA lf;
-- writes guarded by fencing tokens, in commit order (under the path's exclusive lock)
CREATE TABLE lf.fenced_writes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path text NOT NULL, token bigint NOT NULL, pid int NOT NULL, worker text NOT NULL,
    stale boolean NOT NULL, pm_start timestamptz NOT NULL DEFAULT pg_postmaster_start_time(),
    at timestamptz NOT NULL DEFAULT clock_timestamp());
-- one row per request ownership that ended in mark_done / mark_queued / release (same transaction)
CREATE TABLE lf.owners (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key text NOT NULL, pid int NOT NULL, backend_start timestamptz NOT NULL, action text NOT NULL,
    acquired_at timestamptz NOT NULL, finished_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    seen_owner_pid int, job_id bigint, worker text NOT NULL);
-- written in the transaction of coord.complete; no unique constraint: a job done twice shows
CREATE TABLE lf.results (
    job_id bigint NOT NULL, token bigint NOT NULL, queue text NOT NULL, worker text NOT NULL,
    carried boolean NOT NULL, started_at timestamptz NOT NULL DEFAULT clock_timestamp());
SELECT coord.schedule('lf_s1', 'lf_sched', every => '200 milliseconds', payload => '{"s": "lf_s1"}');
SELECT coord.schedule('lf_s2', 'lf_sched', every => '500 milliseconds', fixed_rate => true,
                      payload => '{"s": "lf_s2"}');
SELECT coord.define_app('lf_up1', 'hourly', conf => '{"n": 1}');
SELECT coord.define_app('lf_up2', 'hourly', conf => '{"n": 2}');
SELECT coord.define_app('lf_down', depends => '{"lf_up1": "hourly", "lf_up2": "hourly"}');
"""


class Proc:
    serial = 0

    def __init__(self, kind, rng, logdir, extra=()):
        Proc.serial += 1
        self.kind = kind
        self.name = f"{kind}-{Proc.serial}"
        self.out = open(os.path.join(logdir, self.name + ".out"), "w")
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "role", kind, self.name,
                                   str(rng.randrange(1 << 30))] + [str(x) for x in extra],
                                  stdout=self.out, stderr=subprocess.STDOUT)
        self.killed = False
        self.started = time.monotonic()

    def alive(self):
        return self.p.poll() is None


def read_logs(logdir):
    events = []
    for fn in sorted(os.listdir(logdir)):
        if not fn.endswith(".log"):
            continue
        with open(os.path.join(logdir, fn), errors="replace") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass        # a line cut by SIGKILL
    return events


def server_log_size():
    path = os.path.join(os.environ.get("COORD_TMP", ""), "server.log")
    return os.path.getsize(path) if os.path.exists(path) else None


def server_log_problems(start):
    if start is None:
        return []
    with open(os.path.join(os.environ["COORD_TMP"], "server.log"), errors="replace") as f:
        f.seek(start)
        text = f.read()
    bad = ("was terminated by signal", "PANIC:", "TRAP:", "terminated abnormally", "segmentation fault")
    return [line for line in text.splitlines() if any(b in line for b in bad)]


class Checks:
    def __init__(self):
        self.results = []

    def add(self, name, ok, detail):
        self.results.append((name, ok, detail))
        log(f"  {'ok  ' if ok else 'FAIL'}  {name}: {detail}")


def main():
    seed = int(os.environ.get("LF_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    logdir = tempfile.mkdtemp(prefix="lf_logs.")
    os.environ["LF_LOGDIR"] = logdir
    log(f"load_and_fault: seed {seed} (LF_SEED repeats the fault schedule), {DURATION:.0f}s of load, "
        f"{RESTARTS} immediate restarts; logs in {logdir}")
    procs = []
    ok = False
    try:
        ok = drive(rng, logdir, procs, seed)
    finally:
        for p in procs:
            if p.alive():
                p.p.kill()
                p.p.wait()
        if ok and not os.environ.get("LF_KEEP"):
            shutil.rmtree(logdir, ignore_errors=True)
        else:
            server_log = os.path.join(os.environ.get("COORD_TMP", ""), "server.log")
            if os.path.exists(server_log):
                shutil.copy(server_log, os.path.join(logdir, "server.log"))
            log(f"(worker logs and the server log kept in {logdir})")
    return 0 if ok else 1


def drive(rng, logdir, procs, seed):
    t_setup = time.monotonic()
    log_start = server_log_size()
    admin = Admin()
    admin.run(lambda cur: cur.execute(SETUP))
    # the apps' first period: the hour of this first tick; simulated hours follow it
    admin.val("SELECT coord.tick()")
    h0 = admin.val("SELECT extract(epoch FROM first_period)::bigint FROM coord.app_defs WHERE name = 'lf_up1'")
    t0_wall = time.time()
    incarnations = [admin.val("SELECT pg_postmaster_start_time()")]
    log(f"setup: schema lf, schedules lf_s1 (200 ms) and lf_s2 (500 ms fixed rate), apps lf_up1/lf_up2 hourly "
        f"and lf_down on both, first period {time.strftime('%Y-%m-%d %H:%M', time.gmtime(h0))} UTC "
        f"({time.monotonic() - t_setup:.1f}s)")

    def spawn(kind):
        extra = (h0, t0_wall) if kind == "appdrv" else ()
        p = Proc(kind, rng, logdir, extra)
        procs.append(p)
        return p

    for kind, n in FLEET:
        for _ in range(n):
            spawn(kind)

    def ready(p):
        path = os.path.join(logdir, p.name + ".log")
        if not os.path.exists(path):
            return False
        with open(path) as f:
            return '"ready"' in f.read()
    if not wait_for(lambda: all(ready(p) for p in procs), 60.0):
        log("FAIL: the workers did not all connect within 60 s")
        return False
    log(f"started {len(procs)} worker processes ({time.monotonic() - t_setup:.1f}s after the setup began): "
        + ", ".join(f"{n} {k}" for k, n in FLEET))

    # ---------------------------------------------------------------- the faulty run
    t0 = time.monotonic()
    next_kill = t0 + rng.uniform(1.5, 3.5)
    next_term = t0 + rng.uniform(0.7, 2.0)
    restart_at = sorted(t0 + DURATION * rng.uniform(lo, lo + 0.15) for lo in (0.2, 0.5, 0.05)[:RESTARTS])
    # every kind of worker gets some time with each server incarnation, the last one included
    end = t0 + DURATION
    kills = {}
    terms = 0
    term_apps = {}
    restarts = []           # (seconds into the run, seconds down)
    unexpected_exits = []
    while time.monotonic() < end:
        now = time.monotonic()
        for p in list(procs):
            if not p.killed and not p.alive():
                unexpected_exits.append(f"{p.name} exited with {p.p.returncode} at {now - t0:.1f}s")
                log(f"  {now - t0:5.1f}s: {p.name} exited on its own ({p.p.returncode}); starting another")
                p.killed = True
                spawn(p.kind)
        if now >= next_kill:
            next_kill = now + rng.uniform(1.5, 3.5)
            victims = [p for p in procs if p.kind in KILLABLE and not p.killed and p.alive()]
            if victims:
                v = rng.choice(victims)
                os.kill(v.p.pid, signal.SIGKILL)
                v.p.wait()
                v.killed = True
                kills[v.kind] = kills.get(v.kind, 0) + 1
                n = spawn(v.kind)
                log(f"  {now - t0:5.1f}s: SIGKILL {v.name}; started {n.name}")
        if now >= next_term:
            next_term = now + rng.uniform(0.7, 2.0)
            try:
                row = admin.one("SELECT application_name, pg_terminate_backend(pid) FROM pg_stat_activity "
                                "WHERE datname = current_database() AND application_name LIKE 'lf:%' "
                                "AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1", limit=1.0)
                if row and row[1]:
                    terms += 1
                    k = row[0][3:].rsplit("-", 1)[0]
                    term_apps[k] = term_apps.get(k, 0) + 1
            except psycopg2.Error:
                pass        # the server is down: the next one
        if restart_at and now >= restart_at[0]:
            restart_at.pop(0)
            t_r = time.monotonic()
            subprocess.run(["bash", "-c", f". {HERE}/../lib.sh && coord_cluster_crash_restart"], check=True)
            down = time.monotonic() - t_r
            restarts.append((t_r - t0, down))
            incarnations.append(admin.val("SELECT pg_postmaster_start_time()"))
            end = max(end, time.monotonic() + 6.0)
            log(f"  {t_r - t0:5.1f}s: pg_ctl -m immediate restart; server back after {down:.1f}s")
        time.sleep(0.05)
    run_time = time.monotonic() - t0
    log(f"faulty run over after {run_time:.1f}s: {sum(kills.values())} SIGKILLs, {terms} backends terminated, "
        f"{len(restarts)} immediate restarts")

    # coord.locks at the end of the run, every worker still there: each holder a live session
    # (one missing from pg_stat_activity counts only if it is still there 0.5 s later)
    lock_sql = ("SELECT l.path, l.mode, l.granted, l.pid, EXISTS (SELECT 1 FROM pg_stat_activity AS a "
                "WHERE a.pid = l.pid) FROM coord.locks AS l")
    live_lock_rows = admin.all(lock_sql)
    if any(not r[4] for r in live_lock_rows):
        time.sleep(0.5)
        again = {(r[0], r[3]) for r in admin.all(lock_sql) if not r[4]}
        live_lock_rows = [r[:4] + (r[4] or (r[0], r[3]) not in again,) for r in live_lock_rows]

    # ---------------------------------------------------------------- drain, without faults
    t_drain = time.monotonic()
    stopping = [p for p in procs if p.kind in WRITERS and not p.killed and p.alive()]
    # the request workers are SIGKILLed: a key one of them owned stays requested by an ended session
    stop_procs(stopping, kill_kinds=("req",))
    final_sim = h0 + 3600 * (1 + int((time.time() - t0_wall) / SIM_HOUR))
    drained = False
    while time.monotonic() - t_drain < DRAIN_LIMIT:
        admin.val("SELECT coord.tick(to_timestamp(%s))", final_sim)
        live = admin.val("SELECT count(*) FROM coord.job WHERE queue = ANY (%s)", DRAINED_QUEUES)
        unmade = admin.val("SELECT count(*) FROM generate_series(to_timestamp(%s), to_timestamp(%s), '1 hour') AS p, "
                           "unnest(%s::text[]) AS a WHERE NOT EXISTS (SELECT 1 FROM coord.app_runs AS r "
                           "WHERE r.app = a AND r.period_start = p)", h0, final_sim, list(UP_APPS))
        if live == 0 and unmade == 0:
            drained = True
            break
        time.sleep(0.2)
    drain_time = time.monotonic() - t_drain
    log(f"drain: writers stopped, queues {'empty' if drained else 'NOT empty'} after {drain_time:.1f}s "
        f"(apps ticked to {time.strftime('%Y-%m-%d %H:%M', time.gmtime(final_sim))} UTC)")

    # requests left 'requested' by sessions that ended: the next request takes each over
    def req_backends_gone():
        return admin.val("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'lf:req-%'") == 0
    wait_for(req_backends_gone, 5.0)
    # coord.tick does not touch requests: such keys wait for the next request, which takes them over
    admin.val("SELECT coord.tick(to_timestamp(%s))", final_sim)
    left = admin.all("SELECT key, owner_alive FROM coord.requests WHERE state = 'requested' ORDER BY key")
    takeovers = []
    for key, alive in left:
        got = admin.val("SELECT coord.request(%s, wait => false)", key)
        if got:
            admin.val("SELECT coord.mark_done(%s)", key)
        takeovers.append((key, alive, got))
    still_requested = admin.val("SELECT count(*) FROM coord.requests WHERE state = 'requested'")
    dead_requested = admin.val("SELECT count(*) FROM coord.requests WHERE state = 'requested' AND NOT owner_alive")
    queued_left = admin.val("SELECT count(*) FROM coord.requests WHERE state = 'queued'")

    rest = [p for p in procs if not p.killed and p.alive()]
    stop_procs(rest)

    def locks_gone():
        return admin.val("SELECT (SELECT count(*) FROM coord.locks) + "
                         "(SELECT count(*) FROM coord.request_lock_status()) + "
                         "(SELECT count(*) FROM pg_locks AS l JOIN pg_database AS d ON d.oid = l.database "
                         "AND d.datname = current_database() WHERE l.locktype = 'advisory')") == 0
    locks_free = wait_for(locks_gone, 5.0)
    locks_after = admin.all("SELECT l.path, l.mode, l.pid, EXISTS (SELECT 1 FROM pg_stat_activity AS a "
                            "WHERE a.pid = l.pid) FROM coord.locks AS l")

    exit_codes = [f"{p.name}: {p.p.returncode}" for p in procs if not p.killed and p.p.returncode not in (0,)]
    crashes = server_log_problems(log_start)

    # ---------------------------------------------------------------- the invariants
    log("")
    log("invariants:")
    events = read_logs(logdir)
    mon = {}
    mon_path = os.path.join(logdir, "monitor.json")
    if os.path.exists(mon_path):
        with open(mon_path) as f:
            mon = json.load(f)
    load_logs(admin, events)
    c = Checks()
    counts = check_all(admin, c, events, mon, h0, final_sim, drained, takeovers, still_requested,
                       dead_requested, queued_left, live_lock_rows, locks_free, locks_after, incarnations)

    c.add("workers: no unexpected SQL error, no worker died on its own",
          not counts["errors"] and not unexpected_exits and not exit_codes,
          f"{len(counts['errors'])} unexpected SQL errors, {len(unexpected_exits)} workers exited during the run, "
          f"{len(exit_codes)} stopped with a non-zero status"
          + "".join(f"\n          {e}" for e in (counts["errors"] + unexpected_exits + exit_codes)[:8]))
    c.add("server log: no backend crashed", not crashes,
          f"{len(crashes)} lines show a crash" + "".join(f"\n          {x}" for x in crashes[:5]))

    # ---------------------------------------------------------------- summary
    log("")
    log("summary:")
    rows = [
        ("jobs enqueued (ids seen committed)", counts["enq"]),
        ("  of them by producers / by request owners (mark_queued)", f"{counts['enq_prod']} / {counts['enq_req']}"),
        ("jobs done (history, lf queues)", counts["done_all"]),
        ("  lf_jobs / lf_req / lf_sched / apps", " / ".join(str(counts["done_q"].get(q, 0)) for q in JOB_QUEUES)),
        ("complete() refused (lost claims) / injected failures", f"{counts['refused']} / {counts['fails']}"),
        ("requests asked / owned / owners rows (done, queued, release)",
         f"{counts['req_asked']} / {counts['req_acq']} / {counts['owners']} ({counts['owners_by']})"),
        ("requests taken over at the end (ended owners)", sum(1 for t in takeovers if t[2])),
        ("lock acquisitions / timeouts", f"{counts['locked']} / {counts['lock_timeouts']}"),
        ("fencing tokens committed / fenced writes / stale writes (accepted, refused)",
         f"{counts['fences']} / {counts['writes']} / {counts['stale_ok']}, {counts['stale_refused']}"),
        ("schedule instances done (lf_s1, lf_s2)", f"{counts['sched'].get('lf_s1', 0)}, {counts['sched'].get('lf_s2', 0)}"),
        ("app runs done (up1, up2, down) / simulated hours", f"{counts['runs']} / {counts['hours']}"),
        ("monitor samples (schedules / locks)", f"{mon.get('samples', 0)} / {mon.get('lock_checks', 0)}"),
        ("SIGKILLs", f"{sum(kills.values())} ({', '.join(f'{k} {v}' for k, v in sorted(kills.items()))})"),
        ("backends terminated", f"{terms} ({', '.join(f'{k} {v}' for k, v in sorted(term_apps.items()))})"),
        ("immediate restarts", f"{len(restarts)} (" + ", ".join(f"at {a:.1f}s, down {d:.1f}s" for a, d in restarts) + ")"),
        ("reconnects by workers", counts["reconnects"]),
        ("timings", f"setup {t0 - t_setup:.1f}s, faulty run {run_time:.1f}s, drain {drain_time:.1f}s, "
                    f"total {time.monotonic() - t_setup:.1f}s"),
    ]
    width = max(len(r[0]) for r in rows)
    for k, v in rows:
        log(f"  {k.ljust(width)}  {v}")
    failed = [name for name, ok, _ in c.results if not ok]
    log("")
    if failed:
        log(f"load_and_fault: FAILED {len(failed)} of {len(c.results)} invariants ({'; '.join(failed)}); seed {seed}")
        return False
    log(f"load_and_fault: ok, {len(c.results)} invariants hold: {counts['enq']} jobs, {counts['req_acq']} request "
        f"ownerships, {counts['locked']} locks, {counts['fences']} tokens across {sum(kills.values())} SIGKILLs, "
        f"{terms} terminations, {len(restarts)} immediate restarts in {time.monotonic() - t_setup:.0f}s")
    return True


def wait_for(cond, limit):
    deadline = time.monotonic() + limit
    while True:
        if cond():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def stop_procs(ps, limit=6.0, kill_kinds=()):
    """SIGTERM (or SIGKILL for kill_kinds) and wait; SIGKILL whoever does not stop in time."""
    for p in ps:
        if p.alive():
            # a process just started may not have installed its SIGTERM handler yet
            log_path = os.path.join(os.environ["LF_LOGDIR"], p.name + ".log")
            deadline = time.monotonic() + 10.0
            while p.alive() and time.monotonic() < deadline and not (
                    os.path.exists(log_path) and os.path.getsize(log_path) > 0):
                time.sleep(0.05)
            if p.kind in kill_kinds:
                p.p.kill()
                p.killed = True
            else:
                p.p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + limit
    for p in ps:
        try:
            p.p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log(f"  {p.name} did not stop on SIGTERM within {limit:.0f}s: SIGKILL")
            p.p.kill()
            p.p.wait()


def load_logs(admin, events):
    """The local logs into tables, for the checks."""
    def f(cur):
        cur.execute("""
            CREATE TABLE lf.log_enq (id bigint NOT NULL, src text NOT NULL);
            CREATE TABLE lf.log_done (id bigint NOT NULL, token bigint NOT NULL);
            CREATE TABLE lf.log_fence (path text NOT NULL, token bigint NOT NULL, pm_start timestamptz NOT NULL);
            CREATE TABLE lf.log_write (path text NOT NULL, token bigint NOT NULL, ok boolean NOT NULL,
                                       stale boolean NOT NULL);
            CREATE TABLE lf.log_acq (key text NOT NULL, pid int NOT NULL, backend_start timestamptz NOT NULL,
                                     at timestamptz NOT NULL, worker text NOT NULL);""")
        import psycopg2.extras
        ins = psycopg2.extras.execute_values
        ins(cur, "INSERT INTO lf.log_enq VALUES %s",
            [(e["id"], "prod") for e in events if e["k"] == "enq"] +
            [(e["job"], "req") for e in events if e["k"] == "mark" and e.get("job")])
        ins(cur, "INSERT INTO lf.log_done VALUES %s", [(e["id"], e["token"]) for e in events if e["k"] == "done"])
        ins(cur, "INSERT INTO lf.log_fence VALUES %s",
            [(e["path"], e["token"], e["pm"]) for e in events if e["k"] == "fence"])
        ins(cur, "INSERT INTO lf.log_write VALUES %s",
            [(e["path"], e["token"], e["ok"], e["stale"]) for e in events if e["k"] == "write"])
        ins(cur, "INSERT INTO lf.log_acq VALUES %s",
            [(e["key"], e["pid"], e["bs"], e["at"], e["w"]) for e in events if e["k"] == "acq"])
        cur.execute("ANALYZE lf.log_enq, lf.log_done, lf.log_fence, lf.log_write, lf.log_acq, lf.results, lf.owners")
    admin.run(f)


def check_all(admin, c, events, mon, h0, final_sim, drained, takeovers, still_requested, dead_requested,
              queued_left, live_lock_rows, locks_free, locks_after, incarnations):
    q, v = admin.one, admin.val
    counts = {}
    kinds = {}
    for e in events:
        kinds[e["k"]] = kinds.get(e["k"], 0) + 1
    counts["errors"] = [f"{e['w']} ({e.get('phase')}): {e.get('code')} {e.get('msg')}" for e in events
                        if e["k"] == "error"]
    counts["reconnects"] = kinds.get("reconnect", 0)
    counts["refused"] = kinds.get("refused", 0)
    counts["fails"] = kinds.get("fail", 0)
    counts["req_asked"] = kinds.get("req", 0)
    counts["req_acq"] = kinds.get("acq", 0)
    counts["locked"] = kinds.get("locked", 0)
    counts["lock_timeouts"] = kinds.get("lock_timeout", 0)
    counts["fences"] = kinds.get("fence", 0)

    # ---- jobs: none lost
    enq, enq_prod, enq_req = q("SELECT count(DISTINCT id), count(DISTINCT id) FILTER (WHERE src = 'prod'), "
                               "count(DISTINCT id) FILTER (WHERE src = 'req') FROM lf.log_enq")
    counts.update(enq=enq, enq_prod=enq_prod, enq_req=enq_req)
    st = dict(admin.all("SELECT COALESCE(coord.job_state(id), 'purged/never'), count(*) "
                        "FROM (SELECT DISTINCT id FROM lf.log_enq) AS e GROUP BY 1"))
    bad_done = v("SELECT count(*) FROM (SELECT DISTINCT id FROM lf.log_enq) AS e "
                 "JOIN coord.job_history AS h ON h.id = e.id AND h.state = 'done' "
                 "WHERE (SELECT count(*) FROM lf.results AS r WHERE r.job_id = e.id AND r.token = h.token) <> 1")
    c.add("jobs: no job lost",
          enq > 0 and st.get("done", 0) == enq and bad_done == 0 and drained,
          f"{enq} job ids seen committed by producers ({enq_prod}) and request owners ({enq_req}): "
          + ", ".join(f"{n} {s}" for s, n in sorted(st.items()))
          + f"; done ones without exactly one lf.results row carrying the final token: {bad_done}"
          + ("" if drained else "; the queues did not drain"))

    # ---- jobs: none completed twice
    res_rows, res_jobs = q("SELECT count(*), count(DISTINCT job_id) FROM lf.results")
    twice = q("SELECT count(*), min(job_id) FROM (SELECT job_id FROM lf.results GROUP BY job_id "
              "HAVING count(*) > 1) AS d")
    wrong_token = v("SELECT count(*) FROM lf.results AS r JOIN coord.job_history AS h ON h.id = r.job_id "
                    "WHERE h.token <> r.token")
    not_done = v("SELECT count(*) FROM lf.results AS r WHERE NOT EXISTS (SELECT 1 FROM coord.job_history AS h "
                 "WHERE h.id = r.job_id AND h.state = 'done')")
    done_no_result = v("SELECT count(*) FROM coord.job_history AS h WHERE h.queue = ANY (%s) AND h.state = 'done' "
                       "AND NOT EXISTS (SELECT 1 FROM lf.results AS r WHERE r.job_id = h.id)", list(JOB_QUEUES))
    acked_missing = v("SELECT count(*) FROM lf.log_done AS d WHERE NOT EXISTS (SELECT 1 FROM lf.results AS r "
                      "WHERE r.job_id = d.id AND r.token = d.token)")
    counts["done_all"] = v("SELECT count(*) FROM coord.job_history WHERE state = 'done' AND queue = ANY (%s)",
                           list(JOB_QUEUES))
    counts["done_q"] = dict(admin.all("SELECT queue, count(*) FROM coord.job_history WHERE state = 'done' "
                                      "GROUP BY queue"))
    carried = v("SELECT count(*) FROM lf.results WHERE carried")
    c.add("jobs: none completed twice",
          twice[0] == 0 and wrong_token == 0 and not_done == 0 and done_no_result == 0 and acked_missing == 0,
          f"{res_rows} lf.results rows for {res_jobs} jobs; jobs with 2+ rows: {twice[0]}"
          + (f" (e.g. {twice[1]})" if twice[0] else "")
          + f"; rows whose token is not the final one: {wrong_token}; rows of jobs not done: {not_done}; "
          f"done jobs without a row: {done_no_result}; completions acknowledged to a worker but not stored: "
          f"{acked_missing}; {carried} done with a claim carried over a lost connection")

    # ---- jobs: groups one at a time, in enqueue order (work intervals: results.started_at .. finished_at)
    grp = q("SELECT count(*), count(*) FILTER (WHERE NOT ok) FROM ("
            " SELECT r.started_at > lag(h.finished_at) OVER w AND h.id > lag(h.id) OVER w "
            "        OR lag(h.id) OVER w IS NULL AS ok"
            " FROM coord.job_history AS h JOIN lf.results AS r ON r.job_id = h.id"
            " WHERE h.group_key IS NOT NULL AND h.state = 'done'"
            " WINDOW w AS (PARTITION BY h.group_key ORDER BY h.finished_at)) AS x")
    c.add("jobs: a group's jobs ran one at a time, in enqueue order", grp[1] == 0,
          f"{grp[0]} grouped jobs done; started before the previous one finished, or out of id order: {grp[1]}")

    # ---- requests: no key owned by two sessions at once
    owners = v("SELECT count(*) FROM lf.owners")
    counts["owners"] = owners
    counts["owners_by"] = ", ".join(f"{n} {a}" for a, n in admin.all(
        "SELECT action, count(*) FROM lf.owners GROUP BY action ORDER BY action"))
    overlap = q("SELECT count(*), min(key) FROM (SELECT key, acquired_at, "
                "lag(finished_at) OVER (PARTITION BY key ORDER BY acquired_at) AS prev_end FROM lf.owners) AS x "
                "WHERE acquired_at <= prev_end")
    inside = q("SELECT count(*), min(a.key) FROM lf.log_acq AS a JOIN lf.owners AS o ON o.key = a.key "
               "AND (o.pid, o.backend_start) <> (a.pid, a.backend_start) "
               "AND a.at BETWEEN o.acquired_at AND o.finished_at")
    seen_other = v("SELECT count(*) FROM lf.owners WHERE seen_owner_pid IS DISTINCT FROM pid")
    acq_total = v("SELECT count(*) FROM lf.log_acq")
    acq_died = v("SELECT count(*) FROM lf.log_acq AS a WHERE NOT EXISTS (SELECT 1 FROM lf.owners AS o "
                 "WHERE o.key = a.key AND o.pid = a.pid AND o.backend_start = a.backend_start AND o.acquired_at = a.at)")
    c.add("requests: no key owned by two sessions at once",
          overlap[0] == 0 and inside[0] == 0 and seen_other == 0 and not mon.get("request_double"),
          f"{owners} ownerships ended by mark_done/mark_queued/release, {acq_total} acquisitions logged by workers "
          f"({acq_died} of them by sessions that died before marking); owner intervals of one key that overlap: {overlap[0]}; "
          f"acquisitions by another session inside a committed owner's interval: {inside[0]}; "
          f"owners that coord.requests did not show as the owner: {seen_other}; "
          f"monitor: request locks granted to two sessions: {len(mon.get('request_double', []))}")
    dead_before = sum(1 for t in takeovers if t[1] is False)
    live_before = sum(1 for t in takeovers if t[1])
    taken = sum(1 for t in takeovers if t[2])
    c.add("requests: keys of ended owners are free",
          live_before == 0 and taken == len(takeovers) and still_requested == 0 and dead_requested == 0
          and queued_left == 0,
          f"after the request workers ended and a final coord.tick, {len(takeovers)} keys were still 'requested' "
          f"({dead_before} with owner_alive false, {live_before} true); the next request took over "
          f"{taken} of them; then 'requested' keys: {still_requested} (with a dead owner: {dead_requested}); "
          f"'queued' keys whose job is finished: {queued_left}")

    # ---- locks: free or held by a live session
    dead_holders = [r for r in live_lock_rows if not r[4]]
    held = sum(1 for r in live_lock_rows if r[2])
    c.add("locks: every lock free or held by a live session",
          not dead_holders and not mon.get("lock_violations") and locks_free,
          f"monitor: {mon.get('lock_checks', 0)} checks of coord.locks, the request locks and every pg_coord "
          f"advisory lock in pg_locks against pg_stat_activity ({mon.get('held_samples', 0)} with a path lock held), holders not in pg_stat_activity "
          f"at two checks in a row: {len(mon.get('lock_violations', []))}; at the end of the faulty run: "
          f"{len(live_lock_rows)} coord.locks rows ({held} granted), {len(dead_holders)} of sessions that are gone; "
          f"after every worker "
          f"stopped: {'no pg_coord lock held' if locks_free else f'still held: {locks_after}'}")

    # ---- fencing tokens
    writes, paths = q("SELECT count(*), count(DISTINCT path) FROM lf.fenced_writes")
    counts["writes"] = writes
    not_incr = q("SELECT count(*), min(path) FROM (SELECT path, token, "
                 "lag(token) OVER (PARTITION BY path ORDER BY id) AS prev FROM lf.fenced_writes) AS x "
                 "WHERE token <= prev")
    # every token committed in a later server incarnation is larger than every one before it
    inc = admin.all("SELECT pm_start, count(*), min(token), max(token) FROM ("
                    " SELECT pm_start, token FROM lf.log_fence UNION ALL"
                    " SELECT pm_start, token FROM lf.fenced_writes WHERE NOT stale"   # a stale write's token is older
                    ") AS t GROUP BY pm_start ORDER BY pm_start")
    across = []
    top = None
    for pm, _, lo, hi in inc:
        if top is not None and lo <= top:
            across.append(pm)
        top = hi if top is None else max(top, hi)
    strange_inc = [r[0] for r in inc if r[0] not in incarnations]
    across_path = v("SELECT count(*) FROM (SELECT path, pm_start, min(token) AS lo, max(token) AS hi "
                    "FROM lf.log_fence GROUP BY 1, 2) AS a JOIN (SELECT path, pm_start, min(token) AS lo "
                    "FROM lf.log_fence GROUP BY 1, 2) AS b ON b.path = a.path AND b.pm_start > a.pm_start "
                    "WHERE b.lo <= a.hi")
    dup = v("SELECT count(*) FROM (SELECT token FROM lf.log_fence GROUP BY token HAVING count(*) > 1) AS d")
    write_missing = v("SELECT count(*) FROM lf.log_write AS l WHERE l.ok AND NOT EXISTS "
                      "(SELECT 1 FROM lf.fenced_writes AS w WHERE w.path = l.path AND w.token = l.token)")
    refused_fresh = v("SELECT count(*) FROM lf.log_write WHERE NOT ok AND NOT stale")
    counts["stale_ok"] = v("SELECT count(*) FROM lf.log_write WHERE ok AND stale")
    counts["stale_refused"] = v("SELECT count(*) FROM lf.log_write WHERE NOT ok AND stale")
    unknown = v("SELECT count(*) FROM lf.fenced_writes AS w WHERE NOT EXISTS "
                "(SELECT 1 FROM lf.log_fence AS f WHERE f.path = w.path AND f.token = w.token)")
    c.add("fencing: tokens strictly increasing",
          not_incr[0] == 0 and not across and across_path == 0 and dup == 0 and write_missing == 0
          and refused_fresh == 0 and unknown == 0 and not strange_inc and len(inc) == len(incarnations),
          f"{writes} fenced writes on {paths} paths, out of token order: {not_incr[0]}; "
          f"{counts['fences']} tokens seen committed in {len(inc)} of {len(incarnations)} server incarnations "
          f"(" + ", ".join(f"{n} in {lo}..{hi}" for _, n, lo, hi in inc) + f"); a later incarnation's token not "
          f"above an earlier one's: {len(across)} (per path: {across_path}); a token committed twice: {dup}; "
          f"acknowledged writes not stored: {write_missing}; fence_ok false for the holder's own fresh token: "
          f"{refused_fresh}; writes with a token from a lost session: {counts['stale_ok']} accepted (nobody fenced "
          f"the path since), {counts['stale_refused']} refused; writes whose token no worker saw committed: {unknown}")

    # ---- schedules
    sched = {}
    per_inc_fail = []
    incs = incarnations
    for s in SCHEDULES:
        sched[s] = v("SELECT count(*) FROM coord.job_history WHERE origin = %s AND state = 'done'", "s:" + s)
        for pm in incs[1:]:
            n = v("SELECT count(*) FROM coord.job_history WHERE origin = %s AND state = 'done' AND claimed_at > %s",
                  "s:" + s, pm)
            if n == 0:
                per_inc_fail.append(f"{s} after {pm}")
    counts["sched"] = sched
    sched_overlap = v("SELECT count(*) FROM (SELECT r.started_at, lag(h.finished_at) OVER w AS prev_end "
                      "FROM coord.job_history AS h JOIN lf.results AS r ON r.job_id = h.id "
                      "WHERE h.origin LIKE 's:%' AND h.state = 'done' "
                      "WINDOW w AS (PARTITION BY h.origin ORDER BY h.finished_at)) AS x WHERE started_at <= prev_end")
    sched_other = dict(admin.all("SELECT state, count(*) FROM coord.job_history WHERE origin LIKE 's:%' "
                                 "AND state <> 'done' GROUP BY state"))
    max_live = mon.get("max_live", {})
    c.add("schedules: at most one live instance, one run at a time, ran after every restart",
          mon.get("samples", 0) > 0 and all(n <= 1 for n in max_live.values()) and not mon.get("live_violations")
          and sched_overlap == 0 and not per_inc_fail and all(n > 0 for n in sched.values()),
          f"monitor: {mon.get('samples', 0)} samples of coord.jobs, most live instances at once: "
          + ", ".join(f"{s} {n}" for s, n in sorted(max_live.items()))
          + "; instances done: " + ", ".join(f"{s} {n}" for s, n in sched.items())
          + (f" (not done: {sched_other})" if sched_other else "")
          + f"; an instance started before the previous one finished: {sched_overlap}; "
          f"schedules with no run after a restart: {per_inc_fail or 0}")

    # ---- apps
    hours = int((final_sim - h0) / 3600) + 1
    counts["hours"] = hours
    runs_twice = v("SELECT count(*) FROM (SELECT app, period_start FROM coord.runs GROUP BY 1, 2 "
                   "HAVING count(*) > 1) AS d")
    by_app = {a: (n, d) for a, n, d in admin.all(
        "SELECT app, count(*), count(*) FILTER (WHERE state = 'done') FROM coord.runs "
        "WHERE period_start BETWEEN to_timestamp(%s) AND to_timestamp(%s) GROUP BY app", h0, final_sim)}
    counts["runs"] = ", ".join(str(by_app.get(a, (0, 0))[1]) for a in UP_APPS + (DOWN_APP,))
    down_missing = v("SELECT count(*) FROM coord.app_runs AS u1 JOIN coord.app_runs AS u2 "
                     "ON u2.app = 'lf_up2' AND u2.period_start = u1.period_start "
                     "WHERE u1.app = 'lf_up1' AND u1.state = 'done' AND u2.state = 'done' "
                     "AND NOT EXISTS (SELECT 1 FROM coord.app_runs AS d WHERE d.app = 'lf_down' "
                     "AND d.period_start = u1.period_start)")
    down_early = v("SELECT count(*) FROM coord.app_runs AS d WHERE d.app = 'lf_down' AND (SELECT count(*) "
                   "FROM coord.app_runs AS u WHERE u.app IN ('lf_up1', 'lf_up2') AND u.period_start = d.period_start "
                   "AND u.state = 'done') <> 2")
    bad_payload = v("SELECT count(*) FROM coord.app_runs AS d JOIN coord.job_history AS h ON h.id = d.job_id "
                    "WHERE d.app = 'lf_down' AND d.state = 'done' AND ("
                    " h.payload->'upstream'->'lf_up1' IS DISTINCT FROM (SELECT jsonb_build_array(u.result) "
                    "   FROM coord.app_runs AS u WHERE u.app = 'lf_up1' AND u.period_start = d.period_start) OR"
                    " h.payload->'upstream'->'lf_up2' IS DISTINCT FROM (SELECT jsonb_build_array(u.result) "
                    "   FROM coord.app_runs AS u WHERE u.app = 'lf_up2' AND u.period_start = d.period_start))")
    run_jobs = q("SELECT count(*) FILTER (WHERE n > 1), count(*) FILTER (WHERE n = 0) FROM ("
                 " SELECT r.app, r.period_start, (SELECT count(*) FROM coord.job_history AS h WHERE h.origin = "
                 " 'a:' || r.app || ':' || to_char(r.period_start AT TIME ZONE 'UTC', 'YYYY-MM-DD-HH24MI') "
                 " AND h.state = 'done') AS n FROM coord.app_runs AS r WHERE r.state = 'done') AS x")
    want_up = all(by_app.get(a, (0, 0)) == (hours, hours) for a in UP_APPS)
    c.add("apps: one run per (app, period), downstream runs once their upstreams are done",
          runs_twice == 0 and want_up and by_app.get(DOWN_APP, (0, 0)) == (hours, hours) and down_missing == 0
          and down_early == 0 and bad_payload == 0 and run_jobs == (0, 0),
          f"{hours} simulated hours: runs (done) " + ", ".join(f"{a} {n} ({d})" for a, (n, d) in sorted(by_app.items()))
          + f"; (app, period) with two runs: {runs_twice}; periods with both upstreams done and no lf_down run: "
          f"{down_missing}; lf_down runs without both upstreams done: {down_early}; lf_down payloads not carrying "
          f"their upstreams' results: {bad_payload}; done runs whose job was done twice / never: "
          f"{run_jobs[0]} / {run_jobs[1]}")
    return counts


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "role":
        sys.exit(role_main(sys.argv[2:]))
    sys.exit(main())
