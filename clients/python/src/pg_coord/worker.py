"""pg_coord.Worker: a claim loop on one connection feeding a pool of handler
threads.

Design (docs/clients/python.md, "How the worker works"):

- One connection per Worker, opened by ``run()``: it LISTENs on
  "coord:<queue>" before its first claim, claims at most ``min(batch, free
  slots)`` jobs at a time (so no claimed job waits for a slot), reports what
  the handlers returned, heartbeats lease claims, and reads notifications.
  Session-bound claims belong to this session, so everything about a job
  (complete, fail, progress, steps) goes through it, under one lock.
- ``concurrency`` handler threads take jobs from one queue (a
  SimpleQueue: no future per job) and run ``handler(job)``; a handler that
  finishes hands its outcome back, and wakes the loop (a self-pipe) only
  when the loop sleeps. While other handlers still run, the loop waits up
  to ``_LINGER`` after the first outcome for more (waking when the last
  handler returns), so that fast handlers' outcomes are reported, and their
  slots claimed again, in one statement each rather than in several. With
  ``concurrency=1`` the handler runs in run()'s own thread (no hand-off per
  job) and a watchdog thread serves a job that runs past ``watch_after``.
- Finishing and claiming go through one function, ``_finish_and_claim``: one
  job finished and more wanted is one call of ``coord.complete_and_claim`` /
  ``coord.fail_and_claim`` when the extension has them (checked in pg_proc at
  connect; its statement, made then, names the columns it reads, so that
  no row needs the cursor's description), else ``coord.complete`` /
  ``coord.fail`` then ``coord.claim``. Several plain completions go in one
  statement (``coord.complete_many`` when none has a result).
- Idle, the loop sleeps until ``coord.next_due(queue)`` (at most
  ``poll_interval``) or a NOTIFY on its queue's channel.
- A job that runs longer than ``watch_after`` seconds is watched: LISTEN on
  "coord:job:<id>" and one heartbeat (which catches a cancel that committed
  before the LISTEN); a NOTIFY "cancel" or a NULL heartbeat sets
  ``job.cancelled``. Lease claims are heartbeaten every ``heartbeat_every``
  seconds (a third of the lease by default).
- A dropped connection is opened again with exponential backoff (logged at
  WARNING each time; ``max_reconnects`` bounds it). Session-bound jobs held
  then are lost (the server made them claimable at once): their handlers see
  ``job.cancelled`` and their outcomes are dropped. Lease jobs go on, and are
  reported on the new connection with their tokens.
- SIGTERM or SIGINT (when run() runs in the main thread), or ``stop()``:
  no more claims, the held jobs finish and are reported, run() returns.
"""
from __future__ import annotations

import logging
import os
import queue as queue_mod
import select
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import psycopg

from . import _common
from ._common import Outcome, ParentResult, encode_result, error_text
from .client import _checked, connect
from .errors import CoordError, ExtensionMissing, PermissionDenied, RetryAfter, VersionMismatch, translate

__all__ = ["Worker", "Job"]

log = logging.getLogger("pg_coord")

# the handler's type (WorkerBase's handler argument)
Handler = Callable[["Job"], Any]

# How long the loop waits, after a handler's outcome, for the other running
# handlers' outcomes before reporting (seconds): about a commit's time, so
# that outcomes coming close together share a statement, and a slow job's
# outcome waits no longer than that.
_LINGER = 0.002


class Job(_common.JobBase):
    """A claimed job, as the handler sees it."""

    def __init__(self, worker: "Worker", row: Tuple[Any, ...]) -> None:
        super().__init__(worker, row, threading.Event())
        self._worker: "Worker"
        self.cancelled: threading.Event

    def progress(self, progress: Dict[str, Any]) -> bool:
        """coord.progress: shown in coord.jobs.progress, sent on
        "coord:job:<id>"; False when the claim is no longer this worker's."""
        return bool(self._worker._job_value(_common.PROGRESS_SQL, self._progress_params(progress)))

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A durable step: the result an earlier attempt recorded for
        ``name``, or ``fn()``'s, recorded now (coord.step / coord.step_done).
        ClaimLost when the claim is gone (nothing recorded)."""
        done = self._worker._job_value(_common.STEP_SQL, self._step_params(name))
        if done is not None:
            return done
        result = _common.step_result(fn())
        if not self._worker._job_value(_common.STEP_DONE_SQL, self._step_done_params(name, result)):
            raise self._step_lost(name)
        return result

    def parent_results(self) -> List[ParentResult]:
        """coord.parent_results: each parent's id, end state and result."""
        rows = self._worker._job_rows(_common.PARENT_RESULTS_SQL, (self.id, self.token))
        return [ParentResult(*r) for r in rows]


class Worker(_common.WorkerBase[Job, "psycopg.Connection[Any]"]):
    """Runs ``handler(job)`` for the jobs of ``queue``; see the module doc."""

    def _init_flavour(self) -> None:
        self._lock = threading.RLock()       # the connection, and transactions on it
        self._state = threading.Lock()       # _outcomes, _held
        self._cur: Optional[psycopg.Cursor[Any]] = None
        self._first_outcome = 0.0            # when _outcomes last became non-empty
        self._sleeping = False               # the loop waits in select (handlers wake it)
        self._lingering = False              # ... for the running handlers (wake it at the last)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._pool: Optional["queue_mod.SimpleQueue[Optional[Job]]"] = None
        self._threads: List[threading.Thread] = []
        self._inline_job: Optional[Job] = None
        self._watchdog_stop = threading.Event()

    # -- public -----------------------------------------------------------------
    def stop(self) -> None:
        """Stop claiming; run() returns once the held jobs are finished and
        reported. Safe from any thread and from a signal handler."""
        self._stopping.set()
        self._wake()

    def run(self) -> None:
        """Blocks until stop(), SIGTERM or SIGINT (or, with burst=True, until
        the queue has nothing due). Raises PermissionDenied,
        ExtensionMissing, VersionMismatch at once; ConnectionLost once
        ``max_reconnects`` reconnects in a row failed."""
        old: Dict[signal.Signals, Any] = {}
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, self._on_signal)
        watchdog = None
        if self.concurrency == 1:
            # one handler at a time runs in this thread (no hand-off per job);
            # a watchdog thread serves the job once it runs past watch_after
            self._inline_job = None
            self._watchdog_stop = threading.Event()
            watchdog = threading.Thread(target=self._watchdog, name=f"pg_coord-{self.queue}-watch", daemon=True)
            watchdog.start()
        else:
            self._pool = queue_mod.SimpleQueue()
            self._threads = [threading.Thread(target=self._handler_thread, args=(self._pool,),
                                              name=f"pg_coord-{self.queue}_{i}", daemon=True)
                             for i in range(self.concurrency)]
            for t in self._threads:
                t.start()
        try:
            self._supervise()
        finally:
            if watchdog is not None:
                self._watchdog_stop.set()
                watchdog.join()
            for job in list(self._held.values()):
                job.cancelled.set()
            if self._pool is not None:
                for _ in self._threads:
                    self._pool.put(None)
                for t in self._threads:
                    t.join()
                self._pool, self._threads = None, []
            for restored, h in old.items():
                signal.signal(restored, h)
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _on_signal(self, signum: int, frame: Any) -> None:
        log.info("pg_coord worker %s: signal %d, draining", self.name, signum)
        self.stop()

    # -- connection and reconnects -------------------------------------------------
    def _supervise(self) -> None:
        failures = 0
        backoff = 0.1
        while True:
            try:
                self._connect()
                failures, backoff = 0, 0.1
                self._loop()
                return
            except (PermissionDenied, ExtensionMissing, VersionMismatch):
                raise
            except CoordError as e:
                self._lost_connection()
                failures += 1
                if self._gives_up(e, failures):
                    raise       # not the network's doing (retrying would not help), or too many
                if self._stopping.is_set() and not self._held_by_lease():
                    return
                self._sleep(self._reconnect_delay(e, failures, backoff))
                backoff = min(backoff * 2, self.max_backoff)

    def _connect(self) -> None:
        conn = connect(self.conninfo, prepare_threshold=self.prepare_threshold,
                       application_name=self._connection_name())
        self._use_columns(*_checked(conn))
        try:
            conn.add_notify_handler(self._on_notify)
            if not self.pooler:
                conn.execute(_common.listen_sql([self.channel]))
        except psycopg.Error as e:
            conn.close()
            raise translate(e) from e
        with self._lock:
            self._conn = conn
            # the loop's statements go through one cursor: its adapters are
            # looked up once, not at every statement (as conn.execute would)
            self._cur = conn.cursor()
            self._notified = True

    def _lost_connection(self) -> None:
        """After a drop: session-bound holds are gone; lease ones stay ours."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
        with self._state:
            self._drop_holds()

    # -- statements for the handlers (progress, steps, parents) ----------------------
    def _exec(self, query: Any, params: Optional[Sequence[Any]] = None) -> "psycopg.Cursor[Any]":
        with self._lock:
            conn = self._live()
            try:
                return conn.execute(query, params)
            except psycopg.Error as e:
                raise translate(e) from e

    def _job_value(self, query: str, params: Sequence[Any]) -> Any:
        row = self._exec(query, params).fetchone()
        return None if row is None else row[0]

    def _job_rows(self, query: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]:
        return self._exec(query, params).fetchall()

    # -- the loop ------------------------------------------------------------------------
    def _loop(self) -> None:
        self._idle_until, self._drained = 0.0, False
        next_heartbeat = time.monotonic() + self.heartbeat_every
        while True:
            now = time.monotonic()
            stopping = self._stopping.is_set()
            with self._state:
                running = self._running
                # handlers still running, the first outcome fresh: wait for theirs
                linger = (self._outcomes and running and not stopping
                          and now < self._first_outcome + _LINGER)
                self._lingering = bool(linger)
                if linger:
                    outcomes = []
                else:
                    outcomes, self._outcomes = self._outcomes, []
            free = self.concurrency - running
            want = 0 if linger else self._want(now, stopping, free)
            if outcomes or want:
                self._notified = False
                try:
                    jobs, more, due = self._finish_and_claim(outcomes, want)
                except CoordError:
                    with self._state:   # reported again after a reconnect (lease claims)
                        self._outcomes = outcomes + self._outcomes
                    raise
                if outcomes:
                    with self._state:
                        for job, outcome in outcomes:
                            self._held.pop(job.id, None)
                if jobs:
                    self._start([Job(self, row) for row in jobs])
                self._claimed(want, more, due)
                continue
            if self._done(stopping):
                return
            # watch long jobs, heartbeat leases
            now = time.monotonic()
            watch = self._to_watch(now)
            if watch:
                self._watch(watch)
            if not self.session_bound and now >= next_heartbeat:
                self._heartbeat()
                next_heartbeat = now + self.heartbeat_every
            deadlines = self._deadlines(now, next_heartbeat)
            if linger:
                deadlines.append(self._first_outcome + _LINGER)
            elif not stopping and free > 0:
                deadlines.append(self._idle_until)
            self._wait(max(0.0, min(deadlines) - time.monotonic()), bool(linger))

    def _start(self, jobs: List[Job]) -> None:
        now = time.monotonic()
        with self._state:
            for job in jobs:
                job._started = now
                self._held[job.id] = job
            self._running += len(jobs)
        if self._pool is None:
            for job in jobs:        # concurrency=1: claims are of one job
                self._inline_job = job
                try:
                    self._run_handler(job)
                finally:
                    self._inline_job = None
        else:
            for job in jobs:
                self._pool.put(job)

    def _handler_thread(self, jobs: "queue_mod.SimpleQueue[Optional[Job]]") -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            self._run_handler(job)

    def _run_handler(self, job: Job) -> None:
        try:
            if job.trace is not None and _common._otel():
                with _common.trace_context(job.trace):
                    result = self.handler(job)
            else:
                result = self.handler(job)
            outcome = Outcome("complete", result=encode_result(result))
        except RetryAfter as e:
            outcome = Outcome("fail", error=str(e), retry_after=e.seconds, pause_key=e.pause_key)
        except BaseException as e:  # noqa: B902 - a handler's any failure fails the job
            if not isinstance(e, Exception):
                log.error("pg_coord worker %s: job %s: %r", self.name, job.id, e)
            else:
                log.warning("pg_coord worker %s: job %s failed: %s", self.name, job.id, e,
                            exc_info=log.isEnabledFor(logging.DEBUG))
            outcome = Outcome("fail", error=error_text(e))
        with self._state:
            self._running -= 1
            job._finished = True
            if job._lost:
                self._held.pop(job.id, None)
            else:
                if not self._outcomes:
                    self._first_outcome = time.monotonic()
                self._outcomes.append((job, outcome))
            # the loop reads _outcomes before it sleeps (_wait): wake it only
            # when it sleeps, and when it lingers only for the last handler
            wake = self._sleeping and (not self._lingering or self._running == 0)
            if wake:
                self._sleeping = False
        if wake:
            self._wake()

    # -- one round of finishing and claiming -------------------------------------------------
    def _finish_and_claim(self, outcomes: List[Tuple[Job, Outcome]],
                          n: int) -> Tuple[List[Tuple[Any, ...]], bool, Optional[float]]:
        """Reports ``outcomes`` and claims up to ``n`` jobs: (claimed rows,
        whether any came, seconds until coord.next_due when none came)."""
        with self._lock:
            conn = self._live()
            try:
                rows: List[Tuple[Any, ...]] = []
                claimed = False
                if len(outcomes) == 1 and n >= 1 and _common.one_commit_fits(outcomes[0], self._has_cac,
                                                                             self._has_fac):
                    rows = self._one_commit(conn, outcomes[0], n)
                    claimed = True
                else:
                    self._report(conn, outcomes)
                if n and not claimed:
                    row = self._cursor(conn).execute(self._claim_sql, self._claim_params(n)).fetchone()
                    rows = (row[0] if row is not None else None) or []
                due: Optional[float] = None
                if n and not rows:
                    r = self._cursor(conn).execute(_common.NEXT_DUE_SQL, (self.queue,)).fetchone()
                    due = None if r is None or r[0] is None else float(r[0])
                # a claim that found nothing marks the session idle on the
                # queue's channel (so enqueues NOTIFY it): idle only after one
                return rows, len(rows) > 0, due
            except psycopg.Error as e:
                raise translate(e) from e

    def _one_commit(self, conn: "psycopg.Connection[Any]", item: Tuple[Job, Outcome],
                    n: int) -> List[Tuple[Any, ...]]:
        """coord.complete_and_claim / coord.fail_and_claim: one statement, one commit."""
        job, o = item
        query, params, single = self._one_commit_statement(item, n)
        if single:
            # whether the finish counted, the job as an array (null id: none)
            rows = self._cursor(conn).execute(query, params).fetchall()
            self._tally(job, o, bool(rows[0][0]) if rows else True)
            return [r[1] for r in rows if r[1][0] is not None]
        row = self._cursor(conn).execute(query, params).fetchone()
        # whether the finish counted, the jobs claimed (_common.one_commit_sql)
        self._tally(job, o, bool(row[0]) if row is not None else True)
        return (row[1] if row is not None else None) or []

    def _report(self, conn: "psycopg.Connection[Any]", outcomes: List[Tuple[Job, Outcome]]) -> None:
        """coord.complete / coord.fail for each outcome; completions without
        in_commit statements in one statement when there are several."""
        plain, rest = _common.plain_completions(outcomes)
        if len(plain) > 1:
            try:
                ids, tokens = [j.id for j, _ in plain], [j.token for j, _ in plain]
                res: Dict[int, Optional[bool]]
                if all(o.result is None for _, o in plain):
                    # no results: coord.complete_many, which says how many counted
                    row = self._cursor(conn).execute(_common.COMPLETE_MANY_SQL, (_common.bigint_array(ids),
                                                                   _common.bigint_array(tokens))).fetchone()
                    counted = int(row[0]) if row is not None and row[0] is not None else 0
                    if counted == len(plain):
                        res = dict.fromkeys(ids, True)
                    else:   # it does not say which: count them, log once
                        log.warning("pg_coord worker %s: %d of %d jobs' claims were no longer ours (cancelled or"
                                    " lease lost); their completions did not count", self.name,
                                    len(plain) - counted, len(plain))
                        self.completed += counted
                        res = dict.fromkeys(ids, None)
                else:
                    row = self._cursor(conn).execute(_common.COMPLETE_SQL, (_common.jobs_json(
                        [(j.id, j.token, o.result) for j, o in plain]),)).fetchone()
                    res = _common.completed_by_id(row[0] if row is not None else None)
                for j, o in plain:
                    c = res.get(j.id)
                    self._tally(j, o, None if c is None and j.id in res else bool(c))
                outcomes = rest
            except psycopg.Error as e:
                if _common.lost(e, conn):
                    raise       # else one of them was refused: report them one by one
        for j, o in outcomes:
            try:
                self._tally(j, o, self._report_one(conn, j, o))
            except psycopg.Error as e:
                if _common.lost(e, conn):
                    raise
                o = self._refused(j, o, e)
                self._tally(j, o, self._report_one(conn, j, o))

    def _report_one(self, conn: "psycopg.Connection[Any]", j: Job, o: Outcome) -> bool:
        """Reports one outcome; whether it counted."""
        if o.kind == "complete" and j._in_commit:
            ok = False
            with conn.transaction():
                for q, p in j._in_commit:
                    conn.execute(q, p)
                row = conn.execute(_common.COMPLETE_ONE_SQL, _common.finish_params(j, o)).fetchone()
                ok = bool(row and row[0])
                if not ok:
                    raise _Rollback()       # the claim was lost: its writes go too
            return ok
        if o.kind == "complete":
            # the boolean straight from the result (text 't'/'f'): no row made
            res = self._cursor(conn).execute(_common.COMPLETE_ONE_SQL, _common.finish_params(j, o)).pgresult
            return res is not None and res.ntuples > 0 and res.get_value(0, 0) == b"t"
        row = conn.execute(_common.FAIL_ONE_SQL, _common.finish_params(j, o)).fetchone()
        return bool(row and row[0] is not None)

    def _tally(self, job: Job, o: Outcome, counted: Optional[bool]) -> None:
        """Counts a reported outcome (counted None: counted by the caller)."""
        unlisten = self._count(job, o, counted)
        if unlisten is not None and self._conn is not None:
            self._conn.execute(unlisten)

    # -- watching, heartbeats, notifications ----------------------------------------------------
    def _watch(self, jobs: List[Job]) -> None:
        with self._lock:
            conn = self._live()
            try:
                if not self.pooler:
                    conn.execute(_common.listen_sql([_common.job_channel(j.id) for j in jobs]))
                for j in jobs:
                    j._watched = True
            except psycopg.Error as e:
                raise translate(e) from e
            self._heartbeat_jobs(conn, jobs)

    def _heartbeat(self) -> None:
        jobs = self._to_heartbeat()
        if jobs:
            with self._lock:
                self._heartbeat_jobs(self._live(), jobs)

    def _heartbeat_jobs(self, conn: "psycopg.Connection[Any]", jobs: List[Job]) -> None:
        """One heartbeat of each job (the lease's for lease claims); a NULL
        answer (cancelled, claim lost) sets job.cancelled."""
        try:
            rows = conn.execute(_common.HEARTBEAT_SQL, self._heartbeat_params(jobs)).fetchall()
        except psycopg.Error as e:
            raise translate(e) from e
        self._heartbeaten(jobs, rows)

    def _watchdog(self) -> None:
        """concurrency=1: the handler runs in run()'s thread; this thread
        looks every watch_after seconds whether it runs long, and then serves
        it as the loop would: LISTEN on its channel, heartbeats, the socket."""
        while not self._watchdog_stop.wait(self.watch_after):
            job = self._inline_job
            if job is None or job._finished or time.monotonic() - job._started < self.watch_after:
                continue
            try:
                self._serve_long(job)
            except CoordError as e:
                log.debug("pg_coord worker %s: watching job %s: %s", self.name, job.id, e)
                if self.session_bound:
                    job.cancelled.set()
                while self._inline_job is job and not self._watchdog_stop.wait(self.watch_after):
                    pass

    def _serve_long(self, job: Job) -> None:
        with self._lock:
            if job._finished or self._inline_job is not job:
                return
            self._watch([job])
        next_heartbeat = time.monotonic() + self.heartbeat_every
        while self._inline_job is job and not job._finished and not self._watchdog_stop.is_set():
            if not self.session_bound and time.monotonic() >= next_heartbeat:
                with self._lock:
                    if job._finished:
                        return
                    self._heartbeat_jobs(self._live(), [job])
                next_heartbeat = time.monotonic() + self.heartbeat_every
            conn = self._conn
            if conn is None or self.pooler:
                self._watchdog_stop.wait(min(0.2, max(0.0, next_heartbeat - time.monotonic())))
                continue
            ready, _, _ = select.select([conn.pgconn.socket], [], [],
                                       min(0.2, max(0.0, next_heartbeat - time.monotonic())))
            if ready:
                self._read_notifies(conn)

    def _cursor(self, conn: "psycopg.Connection[Any]") -> "psycopg.Cursor[Any]":
        """The loop's cursor on ``conn`` (under self._lock)."""
        cur = self._cur
        if cur is None or cur.connection is not conn:
            cur = self._cur = conn.cursor()
        return cur

    def _read_notifies(self, conn: "psycopg.Connection[Any]") -> None:
        """Reads what the socket has and dispatches its notifications."""
        with self._lock:
            if self._conn is not conn or conn.closed:
                return
            _common.read_notifies(conn.pgconn, self._on_notify)

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    def _sleep(self, timeout: float) -> None:
        """Sleeps, waking early for stop()."""
        deadline = time.monotonic() + timeout
        while not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            select.select([self._wake_r], [], [], left)
            self._drain_wake()

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _wait(self, timeout: float, lingering: bool = False) -> None:
        """Waits for a handler, a notification, stop() or the timeout."""
        conn = self._conn
        fds: List[int] = [self._wake_r]
        if conn is not None and not self.pooler:
            fds.append(conn.pgconn.socket)
        with self._state:
            # an outcome that came since the loop looked: no sleep (lingering,
            # only the last handler's)
            if self._outcomes and (not lingering or self._running == 0):
                return
            self._sleeping = True
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            ready = []
        with self._state:
            self._sleeping = False
        if self._wake_r in ready:
            self._drain_wake()
        if len(fds) > 1 and fds[1] in ready and conn is not None:
            self._read_notifies(conn)


class _Rollback(psycopg.Rollback):
    pass
