"""Failover under load with pg_auto_failover (issue 24).

Started by failover.sh, which has set up a pg_auto_failover monitor and two
nodes, n1 (primary) and n2 (synchronous secondary), on loopback ports
HA_N1_PORT / HA_N2_PORT.  Every client here connects through one libpq
multi-host string with target_session_attrs=read-write, as the role
ha_worker (a member of coord_worker), and reconnects when it loses its
session.  Running at once:

  3 Python workers     claim from queue "ha" (two session-bound, one with
                       leases) and complete each job in one transaction that
                       also inserts (job_id, token) into ha_done.  A
                       completion whose COMMIT got no answer is an unknown
                       outcome: after reconnecting, the worker asks
                       coord.claim_state and looks for its own ha_done row
                       (the two must agree) in a transaction that writes; the
                       lease worker completes again, same token, when the
                       claim is still its own
  2 coord-agents       claim from queue "ha_agent" (one session-bound, one
                       with leases); the task prints {"agent", "attempt",
                       "token"}, which becomes the job's result
  1 producer           enqueues into both queues until told to stop
  4 lock holders       two per path: coord.lock, coord.fence (the token also
                       into ha_fences, same transaction), then writes
                       INSERT INTO ha_writes ... WHERE coord.fence_ok(path,
                       token), each transaction held open 30 ms.  A holder
                       that loses its session keeps writing with its old
                       token after reconnecting (a stale holder that does not
                       know) until a write is rejected
  3 candidates         coord.campaign('ha') (the term also into ha_terms),
                       lead a while writing ha_lead rows only while
                       coord.leader names their own term and backend, then
                       resign (and insert into ha_resigns)
  1 observer           samples coord.leader('ha')

Events: a planned failover (pg_autoctl perform failover) once some jobs are
done; once the formation is back to primary + synchronous secondary and
more jobs are done, the new primary's whole process group (pg_autoctl,
postmaster, backends) is SIGKILLed: a crash, which the monitor answers by
promoting n1.  Then the producer stops, the queues drain, everything stops,
and the final primary is checked:

  - every job is done; every acknowledged enqueue exists;
  - no acknowledged completion is missing, none is doubled: each job of "ha"
    has exactly one ha_done row, with the history's token; every unknown
    outcome the workers resolved as committed is there, every one resolved
    as not committed (session-bound) is not;
  - coord-agent never logged outcome=done for a claim whose completion is
    absent: the job's result names that agent and that attempt;
  - claim tokens, fencing tokens and terms strictly increase, across both
    failovers, in commit order (commit timestamps of the side tables' rows:
    track_commit_timestamp is on);
  - no guarded write with a token committed after a fence of a newer token
    of its path committed (a stale holder's writes are rejected once the new
    holder has fenced), and at least one stale holder was rejected;
  - never two leaders at once: the terms' intervals, from the campaign's
    commit to the resign's commit (or the last write the leader made), do not
    overlap, and the observer saw terms only grow.

Reports the time from the start of each failover until claims resumed on
the new primary (a Python worker's first claim there that returned jobs).

    failover.py                          the driver
    failover.py worker NAME MODE SEED    (the other roles: started by the driver)
    failover.py producer | holder NAME PATH | candidate NAME | observer"""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

import psycopg

DB = "coord_ha"
QUEUE, AGENT_QUEUE = "ha", "ha_agent"
ELECTION = "ha"
PATHS = ["/ha/res/1", "/ha/res/2"]
N1, N2 = int(os.environ.get("HA_N1_PORT", "55472")), int(os.environ.get("HA_N2_PORT", "55473"))
MON = int(os.environ.get("HA_MONITOR_PORT", "55471"))
HA_TMP = os.environ.get("HA_TMP", "/tmp")
WORKDIR = os.path.join(HA_TMP, "work")
FLEET = (f"host=127.0.0.1,127.0.0.1 port={N1},{N2} dbname={DB} target_session_attrs=read-write "
         "connect_timeout=2")
SETUP_JOBS = int(os.environ.get("HA_SETUP_JOBS", "600"))
AGENT_SETUP_JOBS = int(os.environ.get("HA_AGENT_SETUP_JOBS", "60"))
BATCH = int(os.environ.get("HA_BATCH", "10"))            # "ha" jobs per enqueue, every 100 ms
JOBS_BETWEEN = int(os.environ.get("HA_JOBS_BETWEEN", "600"))  # completions before each event and after the last
TIME_LIMIT = float(os.environ.get("HA_TIME_LIMIT", "240"))    # the driver's whole run, seconds
LEASE = "20 seconds"
STOP_PRODUCING = os.path.join(WORKDIR, "stop_producing")
DRAINED = os.path.join(WORKDIR, "drained")
STOP = os.path.join(WORKDIR, "stop")
PARENT = os.getppid()


def log(msg):
    print(msg, flush=True)


def orphaned():
    if os.getppid() != PARENT:
        sys.exit(3)


class Record:
    """A line-buffered local file of what the server acknowledged, each line
    stamped with CLOCK_MONOTONIC (one clock for every process here)."""

    def __init__(self, name):
        self.f = open(os.path.join(WORKDIR, name + ".jsonl"), "a", buffering=1)

    def __call__(self, *fields):
        self.f.write(json.dumps([*fields, time.monotonic()]) + "\n")


def read_log(name):
    path = os.path.join(WORKDIR, name + ".jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def lost(conn, err):
    """The session is gone (or is not on a primary): reconnect."""
    st = getattr(err, "sqlstate", None)
    return (conn is None or conn.closed or conn.broken or st is None or st.startswith("08")
            or st in ("57P01", "57P02", "57P03", "25006"))


def connect_fleet(app, user="ha_worker", limit=60.0):
    """An autocommit session on whichever node accepts writes, and its port."""
    deadline = time.monotonic() + limit
    while True:
        orphaned()
        try:
            conn = psycopg.connect(f"{FLEET} user={user} application_name={app}", autocommit=True)
            try:
                port = conn.execute("SELECT inet_server_port()").fetchone()[0]
                return conn, port
            except psycopg.Error:
                conn.close()
                raise
        except psycopg.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def close(conn):
    try:
        conn.close()
    except Exception:
        pass


# ---------------------------------------------------------------- worker

def worker(name, mode, seed):
    rng = random.Random(seed)
    rec = Record(name)
    leases = mode == "lease"
    stats = {"done": 0, "refused": 0, "unknown": 0, "reconnects": 0, "errors": []}
    conn, port = connect_fleet(name)
    rec("connected", port)
    hand = []          # [job, token] claimed and not finished
    pending = None     # the claim whose completing transaction was sent: its outcome is unknown until it ends
    resolve = False    # the session went while pending was in flight
    while True:
        orphaned()
        try:
            if resolve:
                # on the new session, in a transaction that writes (so that its
                # commit waits for the synchronous standby and the answer covers
                # the lost commit): what became of the claim, and is our row there?
                with conn.transaction():
                    state, mine = conn.execute(
                        "SELECT coord.claim_state(%s, %s), EXISTS (SELECT FROM ha_done WHERE job_id = %s "
                        "AND token = %s) FROM pg_logical_emit_message(true, 'ha', 'resolve')",
                        pending + pending).fetchone()
                rec("resolved", port, pending[0], pending[1], mine, state)
                if (state == "done") != mine:
                    stats["errors"].append(f"job {pending[0]}: coord.claim_state says {state}, "
                                           f"our row in the completing transaction is {'there' if mine else 'absent'}")
                if mine:
                    hand.remove(pending)
                    stats["done"] += 1
                elif not (leases and state == "claimed"):
                    hand = [h for h in hand if h != pending] if leases else []
                # (a lease claim still ours: complete again, same token)
                pending, resolve = None, False
                continue
            if not hand:
                n = rng.randint(1, 4)
                with conn.transaction():
                    rows = conn.execute(
                        "SELECT id, token FROM coord.claim(%s, %s, lease => %s::interval, session_bound => %s)",
                        (QUEUE, n, LEASE, not leases)).fetchall()
                if not rows:
                    if os.path.exists(DRAINED):
                        break
                    time.sleep(0.02)
                    continue
                hand = [list(r) for r in rows]
                rec("claimed", port, hand)
            job, token = hand[0]
            pending = [job, token]
            with conn.transaction() as tx:
                conn.execute("INSERT INTO ha_done (job_id, token, worker, port) VALUES (%s, %s, %s, %s)",
                             (job, token, name, port))
                ok = conn.execute("SELECT coord.complete(%s, %s)", (job, token)).fetchone()[0]
                if not ok:
                    raise psycopg.Rollback(tx)
            pending = None
            hand.pop(0)
            rec("done" if ok else "refused", port, job, token)
            stats["done" if ok else "refused"] += 1
        except psycopg.Error as err:
            if not lost(conn, err):
                # rolled back: not done
                stats["errors"].append(f"{err.sqlstate}: {str(err).strip()[:200]}")
                pending, hand = None, []
                if len(stats["errors"]) > 20:
                    break
                time.sleep(0.05)
                continue
            rec("lost", port, pending, hand, f"{err.sqlstate}: {str(err).strip()[:160]}")
            if pending is not None and not resolve:
                stats["unknown"] += 1
                resolve = True
            if not leases:
                hand = [pending] if pending is not None else []
            close(conn)
            stats["reconnects"] += 1
            conn, port = connect_fleet(name)
            rec("connected", port)
    close(conn)
    print(json.dumps(stats), flush=True)
    return 0


def producer():
    rec = Record("producer")
    conn, port = connect_fleet("producer")
    i = 0
    while not os.path.exists(STOP_PRODUCING):
        orphaned()
        try:
            for queue, k in ((QUEUE, BATCH),) + (((AGENT_QUEUE, 2),) if i % 5 == 0 else ()):
                with conn.transaction():
                    ids = [r[0] for r in conn.execute("SELECT * FROM coord.enqueue_many(%s, %s::jsonb[])",
                                                      (queue, [json.dumps({"n": i, "k": x}) for x in range(k)]))]
                rec("enqueued", port, queue, ids)
            i += 1
            time.sleep(0.1)
        except psycopg.Error as err:
            if not lost(conn, err):
                raise
            close(conn)
            conn, port = connect_fleet("producer")
    close(conn)
    return 0


# ---------------------------------------------------------------- fencing

def holder(name, path):
    """Takes the lock on path, fences, writes through fence_ok for 1.5-3 s,
    lets go; the other holder of the path waits meanwhile.  After a lost
    session it goes on writing with its old token, as a paused holder that
    does not know would, until a write is rejected."""
    rng = random.Random()
    rec = Record(name)
    conn, port = connect_fleet(name)
    token, stale, until = None, False, 0.0
    unexpected = 0
    while not os.path.exists(STOP):
        orphaned()
        try:
            if token is None:
                if not conn.execute("SELECT coord.lock(%s, '1 second')", (path,)).fetchone()[0]:
                    continue
                with conn.transaction():
                    t = conn.execute("SELECT coord.fence(%s)", (path,)).fetchone()[0]
                    conn.execute("INSERT INTO ha_fences (path, token, holder, port) VALUES (%s, %s, %s, %s)",
                                 (path, t, name, port))
                token, until = t, time.monotonic() + rng.uniform(1.5, 3.0)
                rec("fenced", port, path, token)
            with conn.transaction():
                ok = conn.execute(
                    "INSERT INTO ha_writes (path, token, holder, stale, port) SELECT %s, %s, %s, %s, %s "
                    "WHERE coord.fence_ok(%s, %s) RETURNING true", (path, token, name, stale, port, path, token)
                ).fetchone() is not None
                conn.execute("SELECT pg_sleep(0.03)")
            rec("write", port, path, token, ok, stale)
            if stale and not ok:
                rec("stale_rejected", port, path, token)
                token, stale = None, False
            elif not ok:
                unexpected += 1     # a holder of the lock with the newest token: cannot be
                rec("unexpected_reject", port, path, token)
                conn.execute("SELECT coord.unlock_all()")
                token = None
            elif stale and time.monotonic() > until:
                rec("stale_gave_up", port, path, token)
                token, stale = None, False
            elif not stale and time.monotonic() > until:
                conn.execute("SELECT coord.unlock(%s)", (path,))
                token = None
                time.sleep(0.02)
        except psycopg.Error as err:
            if not lost(conn, err):
                raise
            rec("lost", port, path, token)
            close(conn)
            conn, port = connect_fleet(name)
            rec("connected", port)
            if token is not None:
                stale, until = True, time.monotonic() + 15.0
                rec("stale_begin", port, path, token)
            else:
                time.sleep(1.0)    # let a stale holder of the path write first
    close(conn)
    print(json.dumps({"unexpected_rejects": unexpected}), flush=True)
    return 0


# ---------------------------------------------------------------- election

def candidate(name):
    rng = random.Random()
    rec = Record(name)
    conn, port = connect_fleet(name)
    term = None
    not_leading = 0
    while not os.path.exists(STOP):
        orphaned()
        try:
            with conn.transaction():
                term = conn.execute("SELECT coord.campaign(%s, %s, '1 second')", (ELECTION, name)).fetchone()[0]
                if term is not None:
                    conn.execute("INSERT INTO ha_terms (term, candidate, port) VALUES (%s, %s, %s)",
                                 (term, name, port))
            if term is None:
                continue
            rec("won", port, term)
            until = time.monotonic() + rng.uniform(0.8, 1.5)
            while time.monotonic() < until and not os.path.exists(STOP):
                with conn.transaction():
                    led = conn.execute(
                        "INSERT INTO ha_lead (term, candidate) SELECT %s, %s WHERE EXISTS (SELECT FROM "
                        "coord.leader(%s) AS l WHERE l.term = %s AND l.pid = pg_backend_pid()) RETURNING true",
                        (term, name, ELECTION, term)).fetchone() is not None
                if not led:
                    not_leading += 1
                    rec("not_leading", port, term)
                    break
                time.sleep(0.05)
            with conn.transaction():
                conn.execute("SELECT coord.resign(%s)", (ELECTION,))
                conn.execute("INSERT INTO ha_resigns (term, candidate) VALUES (%s, %s)", (term, name))
            rec("resigned", port, term)
            term = None
            time.sleep(0.02)
        except psycopg.Error as err:
            if not lost(conn, err):
                raise
            rec("lost", port, term)
            term = None
            close(conn)
            conn, port = connect_fleet(name)
            rec("connected", port)
    close(conn)
    print(json.dumps({"not_leading": not_leading}), flush=True)
    return 0


def observer():
    rec = Record("observer")
    conn, port = connect_fleet("observer")
    last = None
    while not os.path.exists(STOP):
        orphaned()
        try:
            row = conn.execute("SELECT term, pid FROM coord.leader(%s)", (ELECTION,)).fetchone()
            cur = list(row) if row else None
            if cur != last:
                rec("leader", port, cur)
                last = cur
            time.sleep(0.025)
        except psycopg.Error as err:
            if not lost(conn, err):
                raise
            close(conn)
            conn, port = connect_fleet("observer")
            rec("connected", port)
            last = None
    close(conn)
    return 0


# ---------------------------------------------------------------- driver

PROBLEMS = []


def problem(msg):
    PROBLEMS.append(msg)
    log("PROBLEM: " + msg)


def fail(msg):
    log("FAIL: " + msg)
    sys.exit(1)


class Fleet:
    """The driver's own session (postgres) on the primary, reconnecting."""

    def __init__(self):
        self.conn = None

    def q(self, sql, *args, limit=60.0):
        deadline = time.monotonic() + limit
        while True:
            try:
                if self.conn is None or self.conn.closed or self.conn.broken:
                    self.conn, _ = connect_fleet("ha-driver", user="postgres", limit=limit)
                return self.conn.execute(sql, args).fetchall()
            except psycopg.Error as err:
                if not lost(self.conn, err) or time.monotonic() > deadline:
                    raise
                close(self.conn)
                self.conn = None
                time.sleep(0.1)

    def q1(self, sql, *args):
        return self.q(sql, *args)[0][0]


def monitor_nodes():
    """{name: (port, reported state, goal state)} from the monitor."""
    try:
        with psycopg.connect(f"host=127.0.0.1 port={MON} dbname=pg_auto_failover user=autoctl_node "
                             "connect_timeout=2", autocommit=True) as m:
            return {r[0]: (r[1], r[2], r[3]) for r in m.execute(
                "SELECT nodename, nodeport, reportedstate::text, goalstate::text FROM pgautofailover.node")}
    except psycopg.Error:
        return {}


def wait_for(what, cond, limit):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    fail(f"timed out ({limit:.0f} s) waiting for {what}; monitor: {monitor_nodes()}")


def formation_in_sync(primary):
    """primary reports primary and the other node secondary, and the primary
    has a synchronous (quorum) standby."""
    nodes = monitor_nodes()
    states = {n: (r, g) for n, (_, r, g) in nodes.items()}
    other = "n2" if primary == "n1" else "n1"
    if states.get(primary) != ("primary", "primary") or states.get(other) != ("secondary", "secondary"):
        return False
    port = nodes[primary][0]
    try:
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname={DB} user=postgres connect_timeout=2",
                             autocommit=True) as c:
            return c.execute("SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')"
                             ).fetchone()[0] > 0
    except psycopg.Error:
        return False


def is_primary(port):
    try:
        with psycopg.connect(f"host=127.0.0.1 port={port} dbname={DB} user=postgres connect_timeout=1",
                             autocommit=True) as c:
            return not c.execute("SELECT pg_is_in_recovery()").fetchone()[0]
    except psycopg.Error:
        return False


def as_pg_cmd(*argv):
    pre = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    env = [f"XDG_CONFIG_HOME={HA_TMP}/xdg/config", f"XDG_DATA_HOME={HA_TMP}/xdg/data",
           f"XDG_RUNTIME_DIR={HA_TMP}/xdg/run", f"TMPDIR={HA_TMP}/xdg/run"]
    return pre + ["env"] + env + list(argv)


class Proc:
    def __init__(self, *args):
        self.name = args[1] if len(args) > 1 else args[0]
        self.out = open(os.path.join(WORKDIR, self.name + ".out"), "w")
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), *args],
                                     stdout=self.out, stderr=subprocess.STDOUT)

    def finish(self, limit):
        try:
            self.proc.wait(limit)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            problem(f"{self.name} did not stop within {limit:.0f} s")
        self.out.close()
        with open(os.path.join(WORKDIR, self.name + ".out")) as f:
            text = f.read()
        if self.proc.returncode != 0:
            problem(f"{self.name} exited with {self.proc.returncode}: {text.strip()[-600:]}")
        last = [line for line in text.splitlines() if line.startswith("{")]
        return json.loads(last[-1]) if last else {}

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


AGENT_TASK = ("/bin/sh -c 'printf \"{\\\"agent\\\": \\\"%s\\\", \\\"attempt\\\": %s, \\\"token\\\": %s}\\n\" "
              "\"$AGENT\" \"$COORD_ATTEMPT\" \"$COORD_TOKEN\"'")


def start_agent(name, *args):
    conf = os.path.join(WORKDIR, name + ".conf")
    with open(conf, "w") as f:
        f.write(f"queues = {AGENT_QUEUE}\nconcurrency = 3\npoll = 500ms\ncheck = 1s\ngrace = 5s\n\n"
                f"[task {AGENT_QUEUE}]\ncommand = {AGENT_TASK}\nenv = AGENT={name}\n")
    os.chmod(conf, 0o600)
    out = open(os.path.join(WORKDIR, name + ".log"), "w")
    return subprocess.Popen([os.environ["HA_AGENT_BIN"], "-f", conf,
                             "-d", f"{FLEET} user=ha_worker application_name={name}", *args],
                            stdout=out, stderr=subprocess.STDOUT)


SETUP_SQL = """
CREATE EXTENSION pg_coord;
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ha_worker') THEN
    CREATE ROLE ha_worker LOGIN IN ROLE coord_worker;
  END IF;
END $$;
CREATE TABLE ha_done (job_id bigint, token bigint, worker text, port int, at timestamptz DEFAULT clock_timestamp());
CREATE TABLE ha_fences (path text, token bigint, holder text, port int);
CREATE TABLE ha_writes (path text, token bigint, holder text, stale boolean, port int);
CREATE TABLE ha_terms (term bigint, candidate text, port int);
CREATE TABLE ha_lead (term bigint, candidate text);
CREATE TABLE ha_resigns (term bigint, candidate text);
GRANT SELECT, INSERT ON ha_done, ha_fences, ha_writes, ha_terms, ha_lead, ha_resigns TO ha_worker;
"""


def done_count(fleet):
    return fleet.q1("SELECT count(*) FROM coord.job_history WHERE queue = %s", QUEUE)


def run_events(fleet):
    """The two failovers; returns their timings."""
    ev = {}
    base = done_count(fleet)
    wait_for(f"{JOBS_BETWEEN} jobs done before the planned failover",
             lambda: done_count(fleet) >= base + JOBS_BETWEEN, 60)

    # 1. planned: n1 -> n2
    t = time.monotonic()
    r = subprocess.run(as_pg_cmd(os.environ.get("AUTOCTL", "pg_autoctl"), "perform", "failover",
                                 "--monitor", os.environ["MONITOR_URI"], "--wait", "90"),
                       capture_output=True, text=True, timeout=120)
    t_cmd = time.monotonic()
    if r.returncode != 0:
        fail(f"pg_autoctl perform failover: exit {r.returncode}: {r.stderr.strip()[-800:]}")
    wait_for("n2 to be primary with n1 its synchronous secondary", lambda: formation_in_sync("n2"), 60)
    t_sync = time.monotonic()
    ev["planned"] = dict(start=t, new_port=N2, old_port=N1, cmd_s=t_cmd - t, sync_s=t_sync - t)
    log(f"planned failover n1 -> n2: pg_autoctl perform failover took {t_cmd - t:.1f} s, "
        f"back in sync after {t_sync - t:.1f} s")

    base = done_count(fleet)
    wait_for(f"{JOBS_BETWEEN} jobs done before the crash", lambda: done_count(fleet) >= base + JOBS_BETWEEN, 60)

    # 2. crash of the primary n2: its keeper, postmaster and backends at once
    with open(os.path.join(HA_TMP, "n2.pgid")) as f:
        pgid = int(f.read())
    with open(os.path.join(HA_TMP, "n2", "postmaster.pid")) as f:
        postmaster = int(f.readline())
    t = time.monotonic()
    os.killpg(pgid, signal.SIGKILL)
    try:
        os.kill(postmaster, signal.SIGKILL)   # in the group, unless the keeper started it through pg_ctl
    except ProcessLookupError:
        pass
    wait_for("n1 to be promoted", lambda: is_primary(N1), 60)
    t_prom = time.monotonic()
    ev["crash"] = dict(start=t, new_port=N1, old_port=N2, promoted_s=t_prom - t)
    log(f"crash of n2 (SIGKILL of its process group): n1 accepts connections as a primary after {t_prom - t:.1f} s; "
        f"monitor: {monitor_nodes()}")
    base = done_count(fleet)
    wait_for(f"{JOBS_BETWEEN} jobs done after the crash", lambda: done_count(fleet) >= base + JOBS_BETWEEN, 60)
    return ev


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # stop the workers and agents (finally)
    t0 = time.monotonic()
    os.makedirs(WORKDIR, exist_ok=True)
    fleet = Fleet()
    with psycopg.connect(f"host=127.0.0.1 port={N1} dbname={DB} user=postgres", autocommit=True) as c:
        c.execute(SETUP_SQL)
        setup_ids = [r[0] for r in c.execute("SELECT * FROM coord.enqueue_many(%s, %s::jsonb[])",
                                             (QUEUE, [json.dumps({"s": i}) for i in range(SETUP_JOBS)]))]
        setup_ids += [r[0] for r in c.execute("SELECT * FROM coord.enqueue_many(%s, %s::jsonb[])",
                                              (AGENT_QUEUE, [json.dumps({"s": i}) for i in range(AGENT_SETUP_JOBS)]))]

    rng = random.Random()
    procs = [Proc("worker", "w1", "session", str(rng.randrange(1 << 30))),
             Proc("worker", "w2", "session", str(rng.randrange(1 << 30))),
             Proc("worker", "w3", "lease", str(rng.randrange(1 << 30)))]
    others = [Proc("holder", f"h{i + 1}{ab}", p) for i, p in enumerate(PATHS) for ab in "ab"]
    others += [Proc("candidate", f"c{i + 1}") for i in range(3)] + [Proc("observer")]
    prod = Proc("producer")
    agents = {"a1": start_agent("a1"), "a2": start_agent("a2", "--lease", "20s")}
    try:
        ev = run_events(fleet)
        open(STOP_PRODUCING, "w").close()
        prod.finish(30)
        t_stop = time.monotonic()
        left = fleet.q1("SELECT count(*) FROM coord.job WHERE queue IN (%s, %s)", QUEUE, AGENT_QUEUE)
        wait_for("every job to be done",
                 lambda: fleet.q1("SELECT count(*) FROM coord.job WHERE queue IN (%s, %s)", QUEUE, AGENT_QUEUE) == 0,
                 max(30.0, TIME_LIMIT - (time.monotonic() - t0)))
        log(f"producer stopped after {t_stop - t0:.0f} s with {left} jobs left; drained in {time.monotonic() - t_stop:.1f} s")
        open(DRAINED, "w").close()
        open(STOP, "w").close()
        wstats = {p.name: p.finish(30) for p in procs}
        ostats = {p.name: p.finish(30) for p in others}
        for a in agents.values():
            a.send_signal(signal.SIGTERM)
        for name, a in agents.items():
            try:
                a.wait(20)
            except subprocess.TimeoutExpired:
                problem(f"coord-agent {name} did not stop within 20 s of SIGTERM")
                a.kill()
    finally:
        for p in procs + others + [prod]:
            p.kill()
        for a in agents.values():
            if a.poll() is None:
                a.kill()
    t_run = time.monotonic() - t0
    check(fleet, setup_ids, ev, wstats, ostats)
    if PROBLEMS:
        fail(f"{len(PROBLEMS)} problems: " + "; ".join(PROBLEMS)[:3000])
    log(f"ha_failover: {SUMMARY['jobs']} jobs done once each ({SUMMARY['agent_jobs']} by coord-agents), "
        f"{SUMMARY['unknown']} unknown outcomes resolved; claims resumed {ev['planned']['resume_ms']:.0f} ms "
        f"after the planned failover started, {ev['crash']['resume_ms']:.0f} ms after the primary crashed; "
        f"{SUMMARY['terms']} terms, {SUMMARY['fences']} fences, {SUMMARY['stale_rejected']} stale holders rejected; "
        f"{t_run:.0f} s")


SUMMARY = {}


def commit_order_ok(rows, what):
    """rows: (key, value, commit timestamp) in commit order: values strictly
    increase per key."""
    last = {}
    for key, value, ts in rows:
        if ts is None:
            problem(f"{what}: no commit timestamp for {key} {value}")
            continue
        if key in last and not value > last[key][0]:
            problem(f"{what}: {key}: {value} committed at {ts} after {last[key][0]} (at {last[key][1]})")
        last[key] = (value, ts)


def check(fleet, setup_ids, ev, wstats, ostats):
    q, q1 = fleet.q, fleet.q1
    final = q1("SELECT inet_server_port()")
    if final != N1:
        problem(f"the final primary is :{final}, expected n1 :{N1}")
    logs = {n: read_log(n) for n in ("w1", "w2", "w3", "producer", "h1a", "h1b", "h2a", "h2b",
                                     "c1", "c2", "c3", "observer")}

    # --- jobs
    hist = dict(q("SELECT state, count(*) FROM coord.job_history WHERE queue IN (%s, %s) GROUP BY 1",
                  QUEUE, AGENT_QUEUE))
    live = q1("SELECT count(*) FROM coord.job WHERE queue IN (%s, %s)", QUEUE, AGENT_QUEUE)
    ids = {r[0]: (r[1], r[2], r[3], r[4]) for r in q(
        "SELECT id, queue, state, token, result FROM coord.job_history WHERE queue IN (%s, %s)", QUEUE, AGENT_QUEUE)}
    if live or set(hist) != {"done"}:
        problem(f"jobs not all done: {live} live, history {hist}")
    acked_enq = [i for r in logs["producer"] if r[0] == "enqueued" for i in r[3]]
    missing = (set(acked_enq) | set(setup_ids)) - set(ids)
    if missing:
        problem(f"{len(missing)} acknowledged enqueues are not on the final primary, e.g. {sorted(missing)[:5]}")
    n_rows, n_jobs = q("SELECT count(*), count(DISTINCT job_id) FROM ha_done")[0]
    twice = q("SELECT job_id, array_agg(token) FROM ha_done GROUP BY 1 HAVING count(*) > 1 LIMIT 5")
    if twice:
        problem(f"{n_rows - n_jobs} completions doubled (ha_done rows for one job), e.g. {twice}")
    done_tok = dict(q("SELECT job_id, token FROM ha_done"))
    py = {i: v for i, v in ids.items() if v[0] == QUEUE}
    bad = [i for i, v in py.items() if done_tok.get(i) != v[2]]
    if bad:
        problem(f"{len(bad)} jobs of {QUEUE} done without their completing transaction's row "
                f"(ha_done with the history's token), e.g. {[(i, py[i][2], done_tok.get(i)) for i in bad[:3]]}")
    stray = set(done_tok) - set(py)
    if stray:
        problem(f"{len(stray)} ha_done rows for jobs not done in {QUEUE}, e.g. {sorted(stray)[:5]}")
    acked = [(n, r[2], r[3]) for n in ("w1", "w2", "w3") for r in logs[n] if r[0] == "done"]
    resolved = [(n, r[2], r[3], r[4]) for n in ("w1", "w2", "w3") for r in logs[n] if r[0] == "resolved"]
    lost_acks = [a for a in acked + [(n, j, t) for n, j, t, c in resolved if c] if done_tok.get(a[1]) != a[2]]
    if lost_acks:
        problem(f"{len(lost_acks)} acknowledged completions are missing on the final primary, e.g. {lost_acks[:3]}")
    # a session-bound completion resolved as not committed must stay absent
    ghost = [(n, j, t) for n, j, t, c in resolved if not c and n != "w3" and done_tok.get(j) == t]
    if ghost:
        problem(f"{len(ghost)} completions resolved as not committed are there after all, e.g. {ghost[:3]}")

    # --- coord-agent: outcome=done only for completions that are there
    agent_done = agent_unknown = 0
    for name in ("a1", "a2"):
        starts = {}
        with open(os.path.join(WORKDIR, name + ".log")) as f:
            text = f.read()
        agent_unknown += len(re.findall(r"the outcome of coord\.\w+ is unknown", text))
        for m in re.finditer(r"job (\d+) (start|end) \S+ (?:queue=\S+ attempt=(\d+)|duration=\S+ outcome=(\w+))",
                             text):
            job = int(m.group(1))
            if m.group(2) == "start":
                starts[job] = int(m.group(3))
            elif m.group(4) == "done":
                agent_done += 1
                h = ids.get(job)
                res = h[3] if h else None
                if not (h and h[1] == "done" and isinstance(res, dict) and res.get("agent") == name
                        and res.get("attempt") == starts.get(job) and res.get("token") == h[2]):
                    problem(f"coord-agent {name} logged outcome=done for job {job} (attempt {starts.get(job)}), "
                            f"but the final primary has {h[1:] if h else 'no such job'}")
    ag = {i: v for i, v in ids.items() if v[0] == AGENT_QUEUE}
    bad = [i for i, v in ag.items() if not (isinstance(v[3], dict) and v[3].get("token") == v[2])]
    if bad:
        problem(f"{len(bad)} jobs of {AGENT_QUEUE} done without their task's result, e.g. {bad[:5]}")
    if not ag or agent_done == 0:
        problem("the coord-agents did no job")

    # --- claim tokens strictly increase across each failover
    claims = [(r[-1], r[1], t) for n in ("w1", "w2", "w3") for r in logs[n] if r[0] == "claimed" for _, t in r[2]]
    for name, e in ev.items():
        before = [t for at, port, t in claims if port == e["old_port"] and at < e["start"]]
        after = [(at, t) for at, port, t in claims if port == e["new_port"] and at > e["start"]]
        if not before or not after:
            problem(f"{name}: no claims before ({len(before)}) or after ({len(after)}) the failover")
            e["resume_ms"] = float("nan")
            continue
        first = min(after)
        e["resume_ms"] = (first[0] - e["start"]) * 1000
        e["token_gap"] = min(t for _, t in after) - max(before)
        if not min(t for _, t in after) > max(before):
            problem(f"{name}: a claim token after the failover ({min(t for _, t in after)}) is not larger "
                    f"than one before ({max(before)})")
        dones = [r[-1] for n in ("w1", "w2", "w3") for r in logs[n] if r[0] == "done" and r[1] == e["new_port"]
                 and r[-1] > e["start"]]
        e["first_done_ms"] = (min(dones) - e["start"]) * 1000 if dones else float("nan")

    # --- fencing: tokens increase in commit order; no stale write after a newer fence
    commit_order_ok(q("SELECT path, token, pg_xact_commit_timestamp(xmin) FROM ha_fences "
                      "ORDER BY pg_xact_commit_timestamp(xmin), token"), "fencing tokens")
    late = q("SELECT w.path, w.token, w.holder, w.stale, f.token, f.holder, "
             "pg_xact_commit_timestamp(w.xmin) - pg_xact_commit_timestamp(f.xmin) "
             "FROM ha_writes w JOIN ha_fences f ON f.path = w.path AND f.token > w.token "
             "WHERE pg_xact_commit_timestamp(w.xmin) >= pg_xact_commit_timestamp(f.xmin) LIMIT 5")
    n_late = q1("SELECT count(*) FROM ha_writes w JOIN ha_fences f ON f.path = w.path AND f.token > w.token "
                "WHERE pg_xact_commit_timestamp(w.xmin) >= pg_xact_commit_timestamp(f.xmin)")
    if n_late:
        problem(f"{n_late} guarded writes with an old token committed after a newer fence of their path, "
                f"e.g. (path, token, holder, stale, newer token, its holder, how much later) {late[:3]}")
    fences = set(map(tuple, q("SELECT path, token FROM ha_fences")))
    writes = dict(((p, t, h), c) for p, t, h, c in q("SELECT path, token, holder, count(*) FROM ha_writes GROUP BY 1, 2, 3"))
    hl = {n: logs[n] for n in ("h1a", "h1b", "h2a", "h2b")}
    for n, rs in hl.items():
        for r in rs:
            if r[0] == "fenced" and (r[2], r[3]) not in fences:
                problem(f"{n}: acknowledged fence {r[2]} {r[3]} is missing")
        acked_w = {}
        for r in rs:
            if r[0] == "write" and r[4]:
                acked_w[(r[2], r[3], n)] = acked_w.get((r[2], r[3], n), 0) + 1
        for k, c in acked_w.items():
            if writes.get(k, 0) < c:
                problem(f"{n}: {c} acknowledged writes with token {k[1]}, {writes.get(k, 0)} on the final primary")
        if any(r[0] == "unexpected_reject" for r in rs):
            problem(f"{n}: a write of the lock holder with the newest token was rejected")
    stale_begin = sum(1 for rs in hl.values() for r in rs if r[0] == "stale_begin")
    stale_ok = sum(1 for rs in hl.values() for r in rs if r[0] == "write" and r[5] and r[4])
    stale_rej = sum(1 for rs in hl.values() for r in rs if r[0] == "stale_rejected")
    if stale_rej == 0:
        problem(f"no stale lock holder was rejected ({stale_begin} stale phases): the fencing check checked nothing")

    # --- election: terms increase in commit order, never two leaders at once
    terms = q("SELECT t.term, t.candidate, pg_xact_commit_timestamp(t.xmin), "
              "(SELECT pg_xact_commit_timestamp(r.xmin) FROM ha_resigns r WHERE r.term = t.term), "
              "(SELECT max(pg_xact_commit_timestamp(l.xmin)) FROM ha_lead l WHERE l.term = t.term) "
              "FROM ha_terms t ORDER BY 3, 1")
    commit_order_ok([("ha", t, c) for t, _, c, _, _ in terms], "terms")
    if len({t for t, *_ in terms}) != len(terms):
        problem("a term was taken twice")
    for (t, cand, start, resign, last), nxt in zip(terms, terms[1:]):
        end = resign or last or start
        if end is not None and nxt[2] is not None and end > nxt[2]:
            problem(f"two leaders at once: term {t} ({cand}) led until {end}, term {nxt[0]} ({nxt[1]}) "
                    f"began at {nxt[2]}")
    won = {r[2] for c in ("c1", "c2", "c3") for r in logs[c] if r[0] == "won"}
    if won - {t for t, *_ in terms}:
        problem(f"acknowledged terms missing: {sorted(won - {t for t, *_ in terms})[:5]}")
    seen = [r[2][0] for r in logs["observer"] if r[0] == "leader" and r[2]]
    if any(b < a for a, b in zip(seen, seen[1:])):
        problem(f"the observer saw a term go back: {seen}")
    for name, e in ev.items():
        if not any(r[0] == "won" and r[1] == e["new_port"] and r[-1] > e["start"]
                   for c in ("c1", "c2", "c3") for r in logs[c]):
            problem(f"{name}: nobody was elected on the new primary")
    for n, st in ostats.items():
        if st.get("not_leading"):
            problem(f"{n}: coord.leader did not name a leader whose session lived")
    for n, st in wstats.items():
        if st.get("errors"):
            problem(f"{n}: unexpected errors {st['errors'][:3]}")

    unknown = sum(st.get("unknown", 0) for st in wstats.values())
    SUMMARY.update(jobs=len(ids), agent_jobs=len(ag), unknown=unknown, terms=len(terms), fences=len(fences),
                   stale_rejected=stale_rej)
    log(f"final primary :{final}: {len(ids)} jobs done ({len(py)} by workers, {len(ag)} by coord-agents, "
        f"{agent_done} outcome=done lines checked, {agent_unknown} unknown outcomes logged); {len(acked)} acknowledged completions, {unknown} unknown "
        f"outcomes ({sum(1 for x in resolved if x[3])} had committed); workers {json.dumps(wstats)}")
    log(f"fencing: {len(fences)} tokens, {sum(writes.values())} guarded writes; {stale_begin} stale holders wrote "
        f"{stale_ok} times with their old token before the new holder fenced, {stale_rej} then rejected; "
        f"election: {len(terms)} terms")
    for name, e in ev.items():
        log(f"{name}: claims resumed on :{e['new_port']} {e['resume_ms']:.0f} ms after the failover started, "
            f"first completion {e['first_done_ms']:.0f} ms; the first claim token there exceeds the last "
            f"before by {e.get('token_gap')} (claims during the failover and the sequence's jump)")


if __name__ == "__main__":
    role = sys.argv[1] if len(sys.argv) > 1 else "driver"
    if role == "worker":
        sys.exit(worker(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    if role == "producer":
        sys.exit(producer())
    if role == "holder":
        sys.exit(holder(sys.argv[2], sys.argv[3]))
    if role == "candidate":
        sys.exit(candidate(sys.argv[2]))
    if role == "observer":
        sys.exit(observer())
    main()
