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
import random
import select
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from . import _common
from ._common import Outcome, ParentResult, Seconds, encode_result, error_text, interval, seconds
from .client import connect
from .errors import ClaimLost, ConnectionLost, CoordError, ExtensionMissing, PermissionDenied, RetryAfter, \
    VersionMismatch, translate

__all__ = ["Worker", "Job"]

log = logging.getLogger("pg_coord")

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
        return bool(self._worker._job_value("SELECT coord.progress(%s, %s, %s::jsonb)",
                                            (self.id, self.token, Jsonb(progress))))

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A durable step: the result an earlier attempt recorded for
        ``name``, or ``fn()``'s, recorded now (coord.step / coord.step_done).
        ClaimLost when the claim is gone (nothing recorded)."""
        done = self._worker._job_value("SELECT coord.step(%s, %s, %s::text)", (self.id, self.token, name))
        if done is not None:
            return done
        result = fn()
        if result is None:
            result = True   # a step's result is never null (null reads back as "not done")
        if not self._worker._job_value("SELECT coord.step_done(%s, %s, %s::text, %s::jsonb)",
                                       (self.id, self.token, name, Jsonb(result))):
            self.cancelled.set()
            raise ClaimLost(f"job {self.id}: the claim is no longer ours; step {name} not recorded", "55000")
        return result

    def parent_results(self) -> List[ParentResult]:
        """coord.parent_results: each parent's id, end state and result."""
        rows = self._worker._job_rows(
            "SELECT parent_id, state, result FROM coord.parent_results(%s, %s) ORDER BY parent_id",
            (self.id, self.token))
        return [ParentResult(*r) for r in rows]

    def in_commit(self, query: str, params: Optional[Sequence[Any]] = None) -> None:
        """Runs ``query`` in the transaction that completes the job, before
        coord.complete; rolled back when the completion does not count (the
        claim was lost). Writes made so happen exactly once per job."""
        self._in_commit.append((query, params))


class Worker:
    """Runs ``handler(job)`` for the jobs of ``queue``; see the module doc."""

    def __init__(self, conninfo: str, queue: str, handler: Handler, concurrency: int = 1,
                 session_bound: bool = True, batch: int = 10, *,
                 lease: Seconds = 300, heartbeat_every: Optional[Seconds] = None,
                 host: Optional[str] = None, poll_interval: Seconds = 5.0,
                 watch_after: Seconds = 0.05, pooler: bool = False,
                 prepare_threshold: Optional[int] = 5, max_backoff: Seconds = 30.0,
                 max_reconnects: Optional[int] = None, handle_signals: bool = True,
                 burst: bool = False, name: Optional[str] = None,
                 use_complete_and_claim: Optional[bool] = None) -> None:
        if concurrency < 1 or batch < 1:
            raise ValueError("concurrency and batch must be at least 1")
        if pooler and session_bound:
            raise ValueError("a transaction pooler needs lease claims: session_bound=False")
        self.conninfo = conninfo
        self.queue = queue
        self.handler = handler
        self.concurrency = concurrency
        self.session_bound = session_bound
        self.batch = batch
        self.lease = interval(lease)
        self.heartbeat_every = seconds(heartbeat_every) if heartbeat_every is not None else seconds(lease) / 3
        self.host = host
        self.poll_interval = seconds(poll_interval)
        self.watch_after = seconds(watch_after)
        self.pooler = pooler
        self.prepare_threshold = None if pooler else prepare_threshold
        self.max_backoff = seconds(max_backoff)
        self.max_reconnects = max_reconnects
        self.handle_signals = handle_signals
        self.burst = burst
        self.name = name or _common.default_name()
        self.use_complete_and_claim = use_complete_and_claim
        self.channel = f"coord:{queue}"
        self._claim_sql = _common.claim_sql(session_bound, host)
        #: how many jobs this worker finished (complete counted) and failed
        self.completed = 0
        self.failed = 0
        self._lock = threading.RLock()       # the connection, and transactions on it
        self._state = threading.Lock()       # _outcomes, _held
        self._conn: Optional[psycopg.Connection[Any]] = None
        self._cur: Optional[psycopg.Cursor[Any]] = None
        self._has_cac = False                # coord.complete_and_claim is there (and wanted)
        self._has_fac = False                # coord.fail_and_claim
        self._cac_sql: Optional[str] = None  # their statements (_common.one_commit_sql)
        self._fac_sql: Optional[str] = None
        self._cac1_sql: Optional[str] = None  # theirs claiming one job (_common.one_commit_single_sql)
        self._fac1_sql: Optional[str] = None
        self._one_sql: Dict[Tuple[str, int], str] = {}   # theirs with n written in
        self._held: Dict[int, Job] = {}      # claimed and not yet reported
        self._running = 0                    # handlers running
        self._outcomes: List[Tuple[Job, Outcome]] = []
        self._first_outcome = 0.0            # when _outcomes last became non-empty
        self._sleeping = False               # the loop waits in select (handlers wake it)
        self._lingering = False              # ... for the running handlers (wake it at the last)
        self._stopping = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._notified = True
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
            for sig, h in old.items():
                signal.signal(sig, h)
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
                if not isinstance(e, ConnectionLost):
                    raise       # not the network's doing: retrying would not help
                failures += 1
                if self.max_reconnects is not None and failures > self.max_reconnects:
                    raise
                if self._stopping.is_set() and not self._held_by_lease():
                    return
                delay = backoff * (0.5 + random.random())
                log.warning("pg_coord worker %s: %s; reconnecting in %.1f s (try %d)",
                            self.name, e, delay, failures)
                self._sleep(delay)
                backoff = min(backoff * 2, self.max_backoff)

    def _connect(self) -> None:
        conn = connect(self.conninfo, prepare_threshold=self.prepare_threshold,
                       application_name=f"pg_coord worker {self.queue}")
        try:
            row = conn.execute(_common.CHECK_SQL).fetchone()
            cac, fac = _common.check_extension(row, _common.MIN_VERSION)
            use = self.use_complete_and_claim is not False
            self._has_cac, self._has_fac = cac and use, fac and use
            assert row is not None
            cac_cols, fac_cols = _common.one_commit_columns(row)
            self._cac_sql = _common.one_commit_sql("complete_and_claim", cac_cols, self.session_bound,
                                                   self.host) if self._has_cac else None
            self._fac_sql = _common.one_commit_sql("fail_and_claim", fac_cols, self.session_bound,
                                                   self.host) if self._has_fac else None
            self._cac1_sql = _common.one_commit_single_sql("complete_and_claim", cac_cols, self.session_bound,
                                                           self.host) if self._has_cac else None
            self._fac1_sql = _common.one_commit_single_sql("fail_and_claim", fac_cols, self.session_bound,
                                                           self.host) if self._has_fac else None
            conn.add_notify_handler(self._on_notify)
            if not self.pooler:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        except psycopg.Error as e:
            conn.close()
            raise translate(e) from e
        except CoordError:
            conn.close()
            raise
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
            for job in list(self._held.values()):
                job._watched = False
                if self.session_bound:
                    job._lost = True
                    job.cancelled.set()
                    if job._finished:
                        del self._held[job.id]
            self._outcomes = [(j, o) for j, o in self._outcomes if not j._lost]

    def _held_by_lease(self) -> bool:
        return any(not j._lost for j in self._held.values())

    # -- statements for the handlers (progress, steps, parents) ----------------------
    def _exec(self, query: Any, params: Optional[Sequence[Any]] = None) -> "psycopg.Cursor[Any]":
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed:
                raise ConnectionLost("the worker's connection is down", "08003")
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
        idle_until = 0.0
        drained = False     # the last claim found the queue with nothing due (burst)
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
            want = 0
            if not stopping and not linger and free > 0 and (self._notified or now >= idle_until):
                want = min(self.batch, free)
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
                if want and not more:
                    # idle: until the next due time, a NOTIFY or the poll
                    wait = self.poll_interval if due is None else max(0.05, min(self.poll_interval, due))
                    idle_until = time.monotonic() + wait
                    drained = due is None
                elif want:
                    drained = False
                continue
            if (stopping or (self.burst and drained)) and not self._held:
                return
            # watch long jobs, heartbeat leases
            now = time.monotonic()
            watch = [j for j in list(self._held.values())
                     if not j._watched and j._started and now - j._started >= self.watch_after]
            if watch:
                self._watch(watch)
            if not self.session_bound and now >= next_heartbeat:
                self._heartbeat()
                next_heartbeat = now + self.heartbeat_every
            deadlines = [next_heartbeat if not self.session_bound else now + 3600]
            if linger:
                deadlines.append(self._first_outcome + _LINGER)
            elif not stopping and free > 0:
                deadlines.append(idle_until)
            pending = [j._started + self.watch_after for j in self._held.values() if not j._watched and j._started]
            deadlines.extend(pending)
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
            conn = self._conn
            if conn is None or conn.closed:
                raise ConnectionLost("the worker's connection is down", "08003")
            try:
                rows: List[Tuple[Any, ...]] = []
                claimed = False
                if len(outcomes) == 1 and n >= 1 and _one_commit_fits(outcomes[0], self._has_cac, self._has_fac):
                    rows = self._one_commit(conn, outcomes[0], n)
                    claimed = True
                else:
                    self._report(conn, outcomes)
                if n and not claimed:
                    row = self._cursor(conn).execute(self._claim_sql, _common.claim_params(
                        self.queue, n, self.session_bound, self.lease, self.host)).fetchone()
                    rows = (row[0] if row is not None else None) or []
                due: Optional[float] = None
                if n and not rows:
                    r = self._cursor(conn).execute("SELECT EXTRACT(EPOCH FROM coord.next_due(%s) - pg_catalog.now())",
                                     (self.queue,)).fetchone()
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
        if o.kind == "complete":
            template, single, params = self._cac_sql, self._cac1_sql, [job.id, job.token, o.result]
        else:
            template, single, params = (self._fac_sql, self._fac1_sql,
                                        [job.id, job.token, o.error, interval(o.retry_after), o.pause_key])
        if not self.session_bound:
            params.append(self.lease)
        if self.host is not None:
            params.append(self.host)
        if n == 1 and single is not None:
            # whether the finish counted, the job as an array (null id: none)
            rows = self._cursor(conn).execute(single, params).fetchall()
            self._tally(job, o, bool(rows[0][0]) if rows else True)
            return [r[1] for r in rows if r[1][0] is not None]
        assert template is not None
        query = self._one_sql.get((template, n))
        if query is None:
            query = self._one_sql[(template, n)] = _common.with_n(template, n)
        row = self._cursor(conn).execute(query, params).fetchone()
        # whether the finish counted, the jobs claimed (_common.one_commit_sql)
        self._tally(job, o, bool(row[0]) if row is not None else True)
        return (row[1] if row is not None else None) or []

    def _report(self, conn: "psycopg.Connection[Any]", outcomes: List[Tuple[Job, Outcome]]) -> None:
        """coord.complete / coord.fail for each outcome; completions without
        in_commit statements in one statement when there are several."""
        plain = [(j, o) for j, o in outcomes if o.kind == "complete" and not j._in_commit]
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
                    res = {int(k): v for k, v in ((row[0] if row is not None else None) or {}).items()}
                for j, o in plain:
                    c = res.get(j.id)
                    self._tally(j, o, None if c is None and j.id in res else bool(c))
                outcomes = [(j, o) for j, o in outcomes if not (o.kind == "complete" and not j._in_commit)]
            except psycopg.Error as e:
                if _lost(e, conn):
                    raise       # else one of them was refused: report them one by one
        for j, o in outcomes:
            try:
                self._tally(j, o, self._report_one(conn, j, o))
            except psycopg.Error as e:
                if _lost(e, conn):
                    raise
                # refused (a result over 1 MB, a retry_after over coord.max_retry_after,
                # an in_commit statement's error): the job fails with the reason
                log.warning("pg_coord worker %s: job %s: its %s was refused: %s", self.name, j.id, o.kind, e)
                o = Outcome("fail", error=f"{o.kind} refused: {error_text(e)}")
                self._tally(j, o, self._report_one(conn, j, o))

    def _report_one(self, conn: "psycopg.Connection[Any]", j: Job, o: Outcome) -> bool:
        """Reports one outcome; whether it counted."""
        if o.kind == "complete" and j._in_commit:
            ok = False
            with conn.transaction():
                for q, p in j._in_commit:
                    conn.execute(q, p)
                row = conn.execute("SELECT coord.complete(%s, %s, %s::jsonb)", (j.id, j.token, o.result)).fetchone()
                ok = bool(row and row[0])
                if not ok:
                    raise _Rollback()       # the claim was lost: its writes go too
            return ok
        if o.kind == "complete":
            # the boolean straight from the result (text 't'/'f'): no row made
            res = self._cursor(conn).execute("SELECT coord.complete(%s, %s, %s::jsonb)",
                                             (j.id, j.token, o.result)).pgresult
            return res is not None and res.ntuples > 0 and res.get_value(0, 0) == b"t"
        row = conn.execute("SELECT coord.fail(%s, %s, %s::text, %s::interval, %s::boolean)",
                           (j.id, j.token, o.error, interval(o.retry_after), o.pause_key)).fetchone()
        return bool(row and row[0] is not None)

    def _tally(self, job: Job, o: Outcome, counted: Optional[bool]) -> None:
        """Counts a reported outcome (counted None: counted by the caller)."""
        if counted is None:
            pass
        elif not counted:
            log.warning("pg_coord worker %s: job %s: the claim was no longer ours (cancelled or lease lost); "
                        "its %s did not count", self.name, job.id, o.kind)
        elif o.kind == "complete":
            self.completed += 1
        else:
            self.failed += 1
        if job._watched and not self.pooler and self._conn is not None:
            self._conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(f"coord:job:{job.id}")))

    # -- watching, heartbeats, notifications ----------------------------------------------------
    def _watch(self, jobs: List[Job]) -> None:
        with self._lock:
            conn = self._live()
            try:
                if not self.pooler:
                    conn.execute(sql.SQL("; ").join(
                        sql.SQL("LISTEN {}").format(sql.Identifier(f"coord:job:{j.id}")) for j in jobs))
                for j in jobs:
                    j._watched = True
            except psycopg.Error as e:
                raise translate(e) from e
            self._heartbeat_jobs(conn, jobs)

    def _heartbeat(self) -> None:
        jobs = [j for j in list(self._held.values()) if not j._lost]
        if jobs:
            with self._lock:
                self._heartbeat_jobs(self._live(), jobs)

    def _heartbeat_jobs(self, conn: "psycopg.Connection[Any]", jobs: List[Job]) -> None:
        """One heartbeat of each job (the lease's for lease claims); a NULL
        answer (cancelled, claim lost) sets job.cancelled."""
        try:
            rows = conn.execute(
                "SELECT t.id, coord.heartbeat(t.id, t.token, %s) FROM ROWS FROM (pg_catalog.unnest(%s::bigint[]),"
                " pg_catalog.unnest(%s::bigint[])) AS t(id, token)", (None if self.session_bound else self.lease,
                                                                     [j.id for j in jobs], [j.token for j in jobs])).fetchall()
        except psycopg.Error as e:
            raise translate(e) from e
        alive = dict(rows)
        for j in jobs:
            if alive.get(j.id) is None:
                j.cancelled.set()

    def _on_notify(self, n: psycopg.Notify) -> None:
        if n.channel == self.channel:
            self._notified = True
        elif n.channel.startswith("coord:job:") and n.payload == "cancel":
            job = self._held.get(int(n.channel[10:]))
            if job is not None:
                job.cancelled.set()

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

    def _live(self) -> "psycopg.Connection[Any]":
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("the worker's connection is down", "08003")
        return conn

    def _read_notifies(self, conn: "psycopg.Connection[Any]") -> None:
        """Reads what the socket has and dispatches its notifications."""
        with self._lock:
            if self._conn is not conn or conn.closed:
                return
            pg = conn.pgconn
            try:
                pg.consume_input()
            except psycopg.Error as e:
                raise translate(e) from e
            except Exception as e:
                raise ConnectionLost(str(e), "08006") from e
            if pg.status != psycopg.pq.ConnStatus.OK:
                raise ConnectionLost("the server closed the connection", "08006")
            while True:
                pgn = pg.notifies()
                if pgn is None:
                    break
                self._on_notify(psycopg.Notify(pgn.relname.decode(), pgn.extra.decode(), pgn.be_pid))

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


def _lost(e: psycopg.Error, conn: Any) -> bool:
    return isinstance(translate(e), ConnectionLost) or bool(conn.broken)


def _one_commit_fits(item: Tuple[Any, Outcome], cac: bool, fac: bool) -> bool:
    job, o = item
    return not job._in_commit and (cac if o.kind == "complete" else fac)
