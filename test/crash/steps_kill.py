"""Durable steps when the handler dies (issue 27, crash test).

A handler (a real python3 process, psycopg2) claims a job of queue steps
with a 1-second lease and runs three durable steps, "one", "two", "three":
for each, coord.step tells whether an earlier attempt recorded it; if not,
the handler does it -- a side effect, one row in the table effects -- and
records it with coord.step_done in the same transaction as that row, then
completes the job with the three results.

  kill round:   the handler is SIGKILLed right after step 2 committed.
                Re-run (it claims the job again once the lease has passed,
                by the server's clock), it must not redo steps 1 and 2 and
                must do step 3 once: effects holds each step once, the job
                is done with the three results, coord.job_steps shows
                steps 1 and 2 recorded by attempt 1, step 3 by attempt 2.
  zombie round: the handler is SIGSTOPped after step 1, holding step 2's
                side effect uncommitted (it inserted the row, then stopped
                before step_done).  Its lease passes, a second handler
                claims the job and runs every step to the end; then the
                first is resumed (SIGCONT): its step_done answers false, so
                it rolls its side effect back, and its complete answers
                false.  effects still holds each step once.
Exit 0 = pass; the last line says what was checked."""
import os
import signal
import subprocess
import sys
import time

import psycopg2

DB = "coord_crash_steps"
QUEUE = "steps"
STEPS = ("one", "two", "three")


def connect(db):
    conn = psycopg2.connect(dbname=db, application_name="steps-crash")
    conn.autocommit = True
    return conn


def handler(db, stop_after, stop_how):
    """The worker: claim (waiting for the job to be claimable), run the
    steps, complete.  stop_after: after that many steps, print "stopped"
    and wait to be killed (kill) or stop (stop: step stop_after + 1's
    effect is inserted, uncommitted, before the stop)."""
    conn = psycopg2.connect(dbname=db, application_name="steps-handler")
    cur = conn.cursor()
    deadline = time.monotonic() + 15
    while True:
        cur.execute("SELECT id, token FROM coord.claim(%s, 1, lease => '1 second')", (QUEUE,))
        row = cur.fetchone()
        conn.commit()
        if row:
            break
        if time.monotonic() > deadline:
            sys.exit("handler: no job to claim")
        time.sleep(0.05)
    job, token = row
    results = {}
    for n, name in enumerate(STEPS, 1):
        cur.execute("SELECT coord.step(%s, %s, %s)", (job, token, name))
        done = cur.fetchone()[0]
        conn.commit()
        if done is not None:
            results[name] = done
            continue
        # the step: its side effect and its record commit together
        cur.execute("INSERT INTO effects (job, step, pid) VALUES (%s, %s, %s)", (job, name, os.getpid()))
        if stop_how == "stop" and n == stop_after + 1:
            print("stopped", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
        value = {"step": name, "pid": os.getpid()}
        cur.execute("SELECT coord.step_done(%s, %s, %s, %s::jsonb)", (job, token, name, psycopg2.extras.Json(value)))
        if not cur.fetchone()[0]:
            conn.rollback()     # not ours any more: undo the side effect
            print("refused", flush=True)
            cur.execute("SELECT coord.complete(%s, %s)", (job, token))
            print("complete", cur.fetchone()[0], flush=True)
            conn.commit()
            return
        conn.commit()
        results[name] = value
        if stop_how == "kill" and n == stop_after:
            print("stopped", flush=True)
            time.sleep(60)
    cur.execute("SELECT coord.complete(%s, %s, %s::jsonb)", (job, token, psycopg2.extras.Json(results)))
    print("complete", cur.fetchone()[0], flush=True)
    conn.commit()


def spawn(*args):
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), "handler", DB, *args],
                            stdout=subprocess.PIPE, text=True)


def expect_line(p, want, what):
    line = p.stdout.readline().strip()
    if line != want:
        sys.exit(f"FAIL: {what}: the handler said {line!r}, want {want!r}")


def check(cur, sql, want, what):
    cur.execute(sql)
    got = cur.fetchone()[0]
    if got != want:
        sys.exit(f"FAIL: {what}: got {got!r}, want {want!r}")


def main():
    admin = connect("postgres")
    admin.cursor().execute(f"DROP DATABASE IF EXISTS {DB}")
    admin.cursor().execute(f"CREATE DATABASE {DB}")
    mon = connect(DB)
    cur = mon.cursor()
    checks = 0
    try:
        cur.execute("CREATE EXTENSION pg_coord")
        cur.execute("CREATE TABLE effects (job bigint, step text, pid integer)")

        # ---- kill round
        cur.execute("SELECT coord.enqueue(%s, '{}')", (QUEUE,))
        job = cur.fetchone()[0]
        p = spawn("2", "kill")
        expect_line(p, "stopped", "kill round, first handler")
        p.send_signal(signal.SIGKILL)
        p.wait()
        check(cur, f"SELECT string_agg(step, ',' ORDER BY step) FROM effects WHERE job = {job}", "one,two",
              "steps 1 and 2 were done before the kill")
        q = spawn("0", "none")
        expect_line(q, "complete True", "kill round, re-run")
        q.wait()
        check(cur, f"SELECT string_agg(step || ':' || n, ',' ORDER BY step) FROM "
                   f"(SELECT step, count(*) AS n FROM effects WHERE job = {job} GROUP BY step) s",
              "one:1,three:1,two:1", "each step's side effect happened once")
        check(cur, f"SELECT string_agg(name || ':' || attempt, ',' ORDER BY step_no) FROM coord.job_steps WHERE job_id = {job}",
              "one:1,two:1,three:2", "steps 1 and 2 recorded by attempt 1, step 3 by attempt 2")
        check(cur, f"SELECT state || ' ' || (SELECT string_agg(k, ',' ORDER BY k) FROM jsonb_object_keys(result) k) "
                   f"FROM coord.jobs WHERE id = {job}", "done one,three,two", "the job is done with the three results")
        check(cur, f"SELECT count(DISTINCT (result->>'pid')) FROM coord.job_steps WHERE job_id = {job}", 2,
              "the re-run read steps 1 and 2 as the killed handler recorded them")
        checks += 5

        # ---- zombie round
        cur.execute("SELECT coord.enqueue(%s, '{}')", (QUEUE,))
        job = cur.fetchone()[0]
        z = spawn("1", "stop")
        expect_line(z, "stopped", "zombie round, first handler")
        q = spawn("0", "none")      # claims once the zombie's lease has passed
        expect_line(q, "complete True", "zombie round, second handler")
        q.wait()
        z.send_signal(signal.SIGCONT)
        expect_line(z, "refused", "the resumed zombie's step_done")
        expect_line(z, "complete False", "the resumed zombie's complete")
        z.wait()
        check(cur, f"SELECT string_agg(step || ':' || n, ',' ORDER BY step) FROM "
                   f"(SELECT step, count(*) AS n FROM effects WHERE job = {job} GROUP BY step) s",
              "one:1,three:1,two:1", "the zombie's side effect rolled back: each step once")
        check(cur, f"SELECT string_agg(name || ':' || attempt, ',' ORDER BY step_no) FROM coord.job_steps WHERE job_id = {job}",
              "one:1,two:2,three:2", "the zombie recorded no step after it lost its claim")
        checks += 4
    finally:
        mon.close()
        admin.cursor().execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        admin.close()
    print(f"steps_kill: {checks} checks passed; a handler SIGKILLed after step 2 re-ran without redoing steps 1 "
          "and 2 and did step 3 once; a stopped zombie resumed after losing its lease recorded nothing and "
          "rolled its side effect back")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "handler":
        import psycopg2.extras  # noqa: F401
        handler(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        import psycopg2.extras  # noqa: F401
        main()
