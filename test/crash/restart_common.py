"""What the crash scripts whose worker processes outlive a server restart
share (jobs_exactly_once.py, flow_kill.py): telling a lost connection from
an SQL error, reconnecting, stopping when the driver is gone, the driver's
own reconnecting connection, a worker process running the script's
`worker` entry, and the server log's crash lines.  Not a test of its own:
no .sh runs it."""
import json
import os
import subprocess
import sys
import time

import psycopg2

# SQLSTATEs that mean the session is gone (or not there yet), not an SQL error.
CONNECTION_STATES = {"57P01", "57P02", "57P03", "08000", "08003", "08006", "08001", "08004"}
# the driver that started this process (a worker checks it is still there)
PARENT = os.getppid()


def log(msg):
    print(msg, flush=True)


def fail(msg):
    log("FAIL: " + msg)
    sys.exit(1)


def lost_connection(conn, err):
    return conn is None or conn.closed != 0 or err.pgcode is None or err.pgcode in CONNECTION_STATES


def orphaned():
    """The driver is gone (it died or was killed): stop instead of working on."""
    if os.getppid() != PARENT:
        sys.exit(3)


def connect(db, app, limit):
    """A worker's connection (autocommit off), retried for limit seconds
    while the server restarts."""
    deadline = time.monotonic() + limit
    while True:
        orphaned()
        try:
            conn = psycopg2.connect(dbname=db, application_name=app)
            conn.autocommit = False
            return conn
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


class Monitor:
    """The driver's own connection, which survives the restart."""

    def __init__(self, db, app, limit):
        self.conn = None
        self.db, self.app, self.limit = db, app, limit

    def one(self, sql, *args, limit=None):
        deadline = time.monotonic() + (self.limit if limit is None else limit)
        while True:
            try:
                if self.conn is None or self.conn.closed:
                    self.conn = psycopg2.connect(dbname=self.db, application_name=self.app)
                    self.conn.autocommit = True
                cur = self.conn.cursor()
                cur.execute(sql, args)
                return cur.fetchone()
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


class Worker:
    """A worker process: `script worker NAME MODE SEED`, its stdout piped."""

    def __init__(self, script, name, mode, seed):
        self.name, self.mode = name, mode
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(script), "worker", name, mode, str(seed)],
                                     stdout=subprocess.PIPE, text=True)
        self.killed = False


def server_log_size():
    path = os.path.join(os.environ.get("COORD_TMP", ""), "server.log")
    return os.path.getsize(path) if os.path.exists(path) else None


def server_log_problems(start):
    """Lines of the server log since start that show a backend crash or an assertion.

    A backend that crashed would make the server restart every session, which
    the workers survive by reconnecting: only the log tells it apart from the
    restart the test does itself."""
    if start is None:
        return []
    path = os.path.join(os.environ["COORD_TMP"], "server.log")
    with open(path, errors="replace") as f:
        f.seek(start)
        text = f.read()
    bad = ("was terminated by signal", "PANIC:", "TRAP:", "terminated abnormally")
    return [line for line in text.splitlines() if any(b in line for b in bad)]


def worker_reports(workers, problems, kills, restarts, n_kills):
    """Reads the last line (JSON stats) of every worker not killed; adds to
    problems a worker that failed, its unexpected errors, and kills or
    restarts other than planned.  Returns (clean workers, reconnects)."""
    errors, reconnects, clean = [], 0, 0
    for w in workers:
        if w.killed:
            continue
        out = w.proc.stdout.read().strip().splitlines()
        w.proc.wait()
        if w.proc.returncode != 0 or not out:
            problems.append(f"worker {w.name} exited with {w.proc.returncode}")
        if out:
            s = json.loads(out[-1])
            errors += [f"{w.name}: {e}" for e in s["errors"]]
            reconnects += s.get("reconnects", 0)
            clean += 1
    log(f"{clean} workers finished cleanly, {reconnects} reconnects; unexpected errors: {len(errors)}")
    for e in errors[:10]:
        log("  " + e)
    if errors:
        problems.append(f"{len(errors)} unexpected errors in workers")
    if kills != n_kills or restarts != 1:
        problems.append(f"{kills} kills and {restarts} restarts, expected {n_kills} and 1")
    return clean, reconnects


def verdict(mon, db, problems, crashes, summary):
    """Fails with every problem (keeping the database), or drops the
    database and prints summary."""
    for line in crashes[:10]:
        log("server log: " + line)
    if crashes:
        problems.append(f"{len(crashes)} lines of the server log show a backend crash")
    if problems:
        for p in problems:
            log("problem: " + p)
        log(f"(database {db} is kept for inspection)")
        fail("; ".join(problems))
    mon.conn.close()
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    admin.cursor().execute(f"DROP DATABASE {db} WITH (FORCE)")
    admin.close()
    log(summary)
