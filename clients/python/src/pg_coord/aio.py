"""pg_coord.aio: the same names as pg_coord, for asyncio (psycopg's
AsyncConnection). Methods are coroutines; context managers are ``async
with``; ``Worker.run()`` is awaited and handlers are ``async def`` (a plain
function runs in a thread, via asyncio.to_thread). The worker is the sync
one's design on one event loop: a claim loop task and one task per running
handler, ``concurrency`` at most."""
from __future__ import annotations

import asyncio
import inspect
import logging
import random
import signal
import threading
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from . import _common
from ._common import Outcome, ParentResult, Result, Seconds, encode_result, error_text, interval, seconds
from .errors import (ClaimLost, ConnectionLost, CoordError, CoordTimeout, ExtensionMissing, PermissionDenied,
                     RetryAfter, VersionMismatch, translate)
from .worker import _lost, _one_commit_fits

__all__ = ["Client", "Worker", "Job", "Result", "ParentResult", "RetryAfter", "connect"]

log = logging.getLogger("pg_coord")


async def connect(conninfo: str = "", *, prepare_threshold: Optional[int] = 5,
                  application_name: str = "pg_coord", **kwargs: Any) -> "psycopg.AsyncConnection[Any]":
    try:
        conn: psycopg.AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
            conninfo, autocommit=True, prepare_threshold=prepare_threshold,
            application_name=application_name, **kwargs)
    except psycopg.Error as e:
        raise translate(e) from e
    return conn


async def _checked(conn: "psycopg.AsyncConnection[Any]") -> Tuple[Optional[Sequence[str]], Optional[Sequence[str]]]:
    """Checks the extension; the result columns of complete_and_claim and
    fail_and_claim where the library reads them (else None)."""
    try:
        cur = await conn.execute(_common.CHECK_SQL)
        row = await cur.fetchone()
        cac, fac = _common.check_extension(row, _common.MIN_VERSION)
        assert row is not None
        cac_cols, fac_cols = _common.one_commit_columns(row)
        return (cac_cols if cac else None), (fac_cols if fac else None)
    except psycopg.Error as e:
        await conn.close()
        raise translate(e) from e
    except CoordError:
        await conn.close()
        raise


class Client:
    """pg_coord.Client for asyncio: ``client = await Client.connect(conninfo)``
    or ``async with Client(conninfo) as client``."""

    def __init__(self, conninfo: str = "", *, prepare_threshold: Optional[int] = 5,
                 application_name: str = "pg_coord", **connect_kwargs: Any) -> None:
        self._conninfo = conninfo
        self._kwargs = dict(connect_kwargs, prepare_threshold=prepare_threshold,
                            application_name=application_name)
        self._lock = asyncio.Lock()
        self._conn: Optional[psycopg.AsyncConnection[Any]] = None
        self._closed = False

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> "Client":
        c = cls(conninfo, **kwargs)
        await c._open()
        return c

    async def _open(self) -> "psycopg.AsyncConnection[Any]":
        conn = await connect(self._conninfo, **self._kwargs)
        await _checked(conn)
        self._conn = conn
        return conn

    async def connection(self) -> "psycopg.AsyncConnection[Any]":
        if self._closed:
            raise CoordError("the client is closed", "08003")
        if self._conn is None or self._conn.closed:
            await self._open()
        assert self._conn is not None
        return self._conn

    async def _execute(self, query: Any, params: Optional[Sequence[Any]] = None) -> "psycopg.AsyncCursor[Any]":
        async with self._lock:
            conn = await self.connection()
            try:
                return await conn.execute(query, params)
            except psycopg.Error as e:
                err = translate(e)
                if isinstance(err, ConnectionLost) or conn.broken:
                    await conn.close()
                raise err from e

    async def _value(self, query: Any, params: Optional[Sequence[Any]] = None) -> Any:
        row = await (await self._execute(query, params)).fetchone()
        return None if row is None else row[0]

    async def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            await self._conn.close()

    async def __aenter__(self) -> "Client":
        await self.connection()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def enqueue(self, queue: str, payload: Any = None, **options: Any) -> int:
        query, params = _common.enqueue_query(queue, payload, options)
        return int(await self._value(query, params))

    async def enqueue_flow(self, nodes: Sequence[Dict[str, Any]]) -> Dict[str, int]:
        ids = await self._value("SELECT coord.enqueue_flow(%s::jsonb)", (Jsonb(_common.flow_nodes(nodes)),))
        return {k: int(v) for k, v in ids.items()}

    async def await_result(self, id: int, timeout: Optional[Seconds] = None) -> Result:
        cur = await self._execute("SELECT state, result, error FROM coord.await(%s::bigint, %s::interval)",
                                  (id, interval(timeout)))
        row = await cur.fetchone()
        assert row is not None
        return Result(row[0], row[1], row[2])

    async def cancel(self, id: int) -> bool:
        return bool(await self._value("SELECT coord.cancel(%s::bigint)", (id,)))

    async def job_state(self, id: int) -> Optional[str]:
        state: Optional[str] = await self._value("SELECT coord.job_state(%s::bigint)", (id,))
        return state

    @asynccontextmanager
    async def lock(self, path: str, timeout: Optional[Seconds] = None, shared: bool = False) -> AsyncIterator[None]:
        if not await self._value("SELECT coord.lock(%s::text, %s::interval, %s::boolean)",
                                 (path, interval(timeout), shared)):
            raise CoordTimeout(f"lock {path} not taken within {timeout} s")
        async with self._release("SELECT coord.unlock(%s::text, %s::boolean)", (path, shared)):
            yield

    @asynccontextmanager
    async def campaign(self, election: str, value: Optional[str] = None,
                       timeout: Optional[Seconds] = None) -> AsyncIterator[int]:
        term = await self._value("SELECT coord.campaign(%s::text, %s::text, %s::interval)",
                                 (election, value, interval(timeout)))
        if term is None:
            raise CoordTimeout(f"election {election} not won within {timeout} s")
        async with self._release("SELECT coord.resign(%s::text)", (election,)):
            yield int(term)

    @asynccontextmanager
    async def semaphore(self, path: str, permits: int, timeout: Optional[Seconds] = None) -> AsyncIterator[int]:
        permit = await self._value("SELECT coord.acquire_permit(%s::text, %s::integer, %s::interval)",
                                   (path, permits, interval(timeout)))
        if permit is None:
            raise CoordTimeout(f"no permit of {path} within {timeout} s")
        async with self._release("SELECT coord.release_permit(%s::text)", (path,)):
            yield int(permit)

    @asynccontextmanager
    async def lease_lock(self, path: str, ttl: Seconds, holder: Optional[str] = None) -> AsyncIterator[int]:
        token = await self._value("SELECT coord.lease_lock(%s::text, %s::interval, %s::text)",
                                  (path, interval(ttl), holder))
        if token is None:
            raise CoordTimeout(f"lease {path} is held by another")
        async with self._release("SELECT coord.lease_unlock(%s::text, %s::bigint)", (path, token), session=False):
            yield int(token)

    async def renew(self, path: str, token: int, ttl: Seconds) -> bool:
        return await self._value("SELECT coord.renew(%s::text, %s::bigint, %s::interval)",
                                 (path, token, interval(ttl))) is not None

    async def join(self, group: str, member: str, weight: float = 1.0, **options: Any) -> List[int]:
        extra = "".join(f", {k} => %s" for k in options if k in ("meta", "segments", "assignor"))
        params: List[Any] = [group, member, float(weight)]
        for k, v in options.items():
            if k not in ("meta", "segments", "assignor"):
                raise TypeError(f"join() got an unknown option {k!r}")
            params.append(Jsonb(v) if k == "meta" else v)
        owned = await self._value(f"SELECT coord.join(%s::text, %s::text, %s::double precision{extra})", params)
        return list(owned or [])

    async def owned(self, group: str) -> List[int]:
        return list(await self._value("SELECT coord.owned(%s::text)", (group,)) or [])

    async def leave(self, group: str) -> bool:
        return bool(await self._value("SELECT coord.leave(%s::text)", (group,)))

    @asynccontextmanager
    async def _release(self, query: str, params: Sequence[Any], session: bool = True) -> AsyncIterator[None]:
        conn = self._conn
        try:
            yield
        except BaseException:
            if self._conn is conn and conn is not None and not conn.closed:
                try:
                    await self._execute(query, params)
                except CoordError:
                    pass
            raise
        if session and (conn is None or conn.closed or conn is not self._conn):
            raise ConnectionLost("the connection dropped while the block ran; the hold went with it", "08006")
        await self._execute(query, params)


class Job(_common.JobBase):
    """A claimed job, as an async handler sees it (methods are coroutines)."""

    def __init__(self, worker: "Worker", row: Tuple[Any, ...]) -> None:
        super().__init__(worker, row, asyncio.Event())
        self._worker: "Worker"
        self.cancelled: asyncio.Event

    async def progress(self, progress: Dict[str, Any]) -> bool:
        return bool(await self._worker._job_value("SELECT coord.progress(%s, %s, %s::jsonb)",
                                                  (self.id, self.token, Jsonb(progress))))

    async def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A durable step; ``fn`` may be a plain function or return an awaitable."""
        done = await self._worker._job_value("SELECT coord.step(%s, %s, %s::text)", (self.id, self.token, name))
        if done is not None:
            return done
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            result = True
        if not await self._worker._job_value("SELECT coord.step_done(%s, %s, %s::text, %s::jsonb)",
                                             (self.id, self.token, name, Jsonb(result))):
            self.cancelled.set()
            raise ClaimLost(f"job {self.id}: the claim is no longer ours; step {name} not recorded", "55000")
        return result

    async def parent_results(self) -> List[ParentResult]:
        rows = await self._worker._job_rows(
            "SELECT parent_id, state, result FROM coord.parent_results(%s, %s) ORDER BY parent_id",
            (self.id, self.token))
        return [ParentResult(*r) for r in rows]

    def in_commit(self, query: str, params: Optional[Sequence[Any]] = None) -> None:
        self._in_commit.append((query, params))


AsyncHandler = Callable[[Job], Union[Awaitable[Any], Any]]


class Worker:
    """pg_coord.Worker for asyncio: ``await worker.run()``; the same
    arguments and behaviour as the sync Worker (docs/clients/python.md)."""

    def __init__(self, conninfo: str, queue: str, handler: AsyncHandler, concurrency: int = 1,
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
        self.conninfo, self.queue, self.handler = conninfo, queue, handler
        self.concurrency, self.session_bound, self.batch = concurrency, session_bound, batch
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
        self.completed = 0
        self.failed = 0
        self._lock: Optional[asyncio.Lock] = None
        self._conn: Optional[psycopg.AsyncConnection[Any]] = None
        self._has_cac = self._has_fac = False
        self._cac_sql: Optional[str] = None     # their statements (_common.one_commit_sql)
        self._fac_sql: Optional[str] = None
        self._cac1_sql: Optional[str] = None    # theirs claiming one job (_common.one_commit_single_sql)
        self._fac1_sql: Optional[str] = None
        self._one_sql: Dict[Tuple[str, int], str] = {}   # theirs with n written in
        self._held: Dict[int, Job] = {}
        self._running = 0
        self._outcomes: List[Tuple[Job, Outcome]] = []
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._stopping = threading.Event()
        self._event: Optional[asyncio.Event] = None
        self._loop_ref: Optional[asyncio.AbstractEventLoop] = None
        self._notified = True
        self._wanted = 0

    def stop(self) -> None:
        """Stop claiming; run() returns once the held jobs are reported. Safe
        from any thread."""
        self._stopping.set()
        self._wake()

    def _wake(self) -> None:
        loop, ev = self._loop_ref, self._event
        if loop is None or ev is None:
            return
        try:
            if asyncio.get_running_loop() is loop:
                ev.set()
                return
        except RuntimeError:
            pass
        loop.call_soon_threadsafe(ev.set)

    async def run(self) -> None:
        self._loop_ref = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._lock = asyncio.Lock()
        installed: List[signal.Signals] = []
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    self._loop_ref.add_signal_handler(sig, self.stop)
                    installed.append(sig)
                except (NotImplementedError, RuntimeError):
                    pass
        try:
            await self._supervise()
        finally:
            for job in list(self._held.values()):
                job.cancelled.set()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            for sig in installed:
                self._loop_ref.remove_signal_handler(sig)
            if self._conn is not None:
                await self._conn.close()
                self._conn = None

    async def _supervise(self) -> None:
        failures, backoff = 0, 0.1
        while True:
            try:
                await self._connect()
                failures, backoff = 0, 0.1
                await self._loop()
                return
            except (PermissionDenied, ExtensionMissing, VersionMismatch):
                raise
            except CoordError as e:
                await self._lost_connection()
                if not isinstance(e, ConnectionLost):
                    raise
                failures += 1
                if self.max_reconnects is not None and failures > self.max_reconnects:
                    raise
                if self._stopping.is_set() and not any(not j._lost for j in self._held.values()):
                    return
                delay = backoff * (0.5 + random.random())
                log.warning("pg_coord worker %s: %s; reconnecting in %.1f s (try %d)", self.name, e, delay, failures)
                await self._wait_event(delay)
                backoff = min(backoff * 2, self.max_backoff)

    async def _connect(self) -> None:
        conn = await connect(self.conninfo, prepare_threshold=self.prepare_threshold,
                             application_name=f"pg_coord worker {self.queue}")
        cac_cols, fac_cols = await _checked(conn)
        use = self.use_complete_and_claim is not False
        self._cac_sql = _common.one_commit_sql("complete_and_claim", cac_cols, self.session_bound,
                                               self.host) if use else None
        self._fac_sql = _common.one_commit_sql("fail_and_claim", fac_cols, self.session_bound,
                                               self.host) if use else None
        self._has_cac, self._has_fac = self._cac_sql is not None, self._fac_sql is not None
        self._cac1_sql = _common.one_commit_single_sql("complete_and_claim", cac_cols, self.session_bound,
                                                       self.host) if self._has_cac else None
        self._fac1_sql = _common.one_commit_single_sql("fail_and_claim", fac_cols, self.session_bound,
                                                       self.host) if self._has_fac else None
        try:
            conn.add_notify_handler(self._on_notify)
            if not self.pooler:
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        except psycopg.Error as e:
            await conn.close()
            raise translate(e) from e
        self._conn = conn
        self._notified = True

    async def _lost_connection(self) -> None:
        if self._conn is not None:
            await self._conn.close()
        for job in list(self._held.values()):
            job._watched = False
            if self.session_bound:
                job._lost = True
                job.cancelled.set()
                if job._finished:
                    del self._held[job.id]
        self._outcomes = [(j, o) for j, o in self._outcomes if not j._lost]

    def _live(self) -> "psycopg.AsyncConnection[Any]":
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("the worker's connection is down", "08003")
        return conn

    async def _job_value(self, query: str, params: Sequence[Any]) -> Any:
        rows = await self._job_rows(query, params)
        return rows[0][0] if rows else None

    async def _job_rows(self, query: str, params: Sequence[Any]) -> List[Tuple[Any, ...]]:
        assert self._lock is not None
        self._wanted += 1       # the loop, waiting on the socket, gives the connection way
        self._wake()
        try:
            async with self._lock:
                try:
                    cur = await self._live().execute(query, params)
                    return await cur.fetchall()
                except psycopg.Error as e:
                    raise translate(e) from e
        finally:
            self._wanted -= 1

    async def _loop(self) -> None:
        idle_until = 0.0
        drained = False
        next_heartbeat = time.monotonic() + self.heartbeat_every
        while True:
            now = time.monotonic()
            outcomes, self._outcomes = self._outcomes, []
            stopping = self._stopping.is_set()
            free = self.concurrency - self._running
            want = 0
            if not stopping and free > 0 and (self._notified or now >= idle_until):
                want = min(self.batch, free)
            if outcomes or want:
                self._notified = False
                try:
                    rows, more, due = await self._finish_and_claim(outcomes, want)
                except CoordError:
                    self._outcomes = outcomes + self._outcomes
                    raise
                for job, _ in outcomes:
                    self._held.pop(job.id, None)
                for row in rows:
                    self._start(Job(self, row))
                if want and not more:
                    wait = self.poll_interval if due is None else max(0.05, min(self.poll_interval, due))
                    idle_until = time.monotonic() + wait
                    drained = due is None
                elif want:
                    drained = False
                continue
            if (stopping or (self.burst and drained)) and not self._held:
                return
            now = time.monotonic()
            watch = [j for j in list(self._held.values())
                     if not j._watched and j._started and now - j._started >= self.watch_after]
            if watch:
                await self._watch(watch)
            if not self.session_bound and now >= next_heartbeat:
                jobs = [j for j in self._held.values() if not j._lost]
                if jobs:
                    assert self._lock is not None
                    async with self._lock:
                        await self._heartbeat_jobs(self._live(), jobs)
                next_heartbeat = now + self.heartbeat_every
            deadlines = [next_heartbeat if not self.session_bound else now + 3600]
            if not stopping and free > 0:
                deadlines.append(idle_until)
            deadlines.extend(j._started + self.watch_after for j in self._held.values()
                             if not j._watched and j._started)
            await self._wait(max(0.0, min(deadlines) - time.monotonic()))

    def _start(self, job: Job) -> None:
        job._started = time.monotonic()
        self._held[job.id] = job
        self._running += 1
        task = asyncio.get_running_loop().create_task(self._run_handler(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_handler(self, job: Job) -> None:
        try:
            # the job's task has its own contextvars: the attach stays in it
            # (and asyncio.to_thread carries it to the thread)
            with _common.trace_context(job.trace):
                if inspect.iscoroutinefunction(self.handler):
                    result = await self.handler(job)
                else:
                    result = await asyncio.to_thread(self.handler, job)
                    if inspect.isawaitable(result):
                        result = await result
            outcome = Outcome("complete", result=encode_result(result))
        except RetryAfter as e:
            outcome = Outcome("fail", error=str(e), retry_after=e.seconds, pause_key=e.pause_key)
        except Exception as e:
            log.warning("pg_coord worker %s: job %s failed: %s", self.name, job.id, e)
            outcome = Outcome("fail", error=error_text(e))
        except asyncio.CancelledError:
            outcome = Outcome("fail", error="CancelledError: the handler's task was cancelled")
        self._running -= 1
        job._finished = True
        if job._lost:
            self._held.pop(job.id, None)
        else:
            self._outcomes.append((job, outcome))
        self._wake()

    async def _finish_and_claim(self, outcomes: List[Tuple[Job, Outcome]],
                                n: int) -> Tuple[List[Tuple[Any, ...]], bool, Optional[float]]:
        """The one place a job is finished and more are claimed (see the sync Worker)."""
        assert self._lock is not None
        async with self._lock:
            conn = self._live()
            try:
                rows: List[Tuple[Any, ...]] = []
                claimed = False
                if len(outcomes) == 1 and n >= 1 and _one_commit_fits(outcomes[0], self._has_cac, self._has_fac):
                    rows = await self._one_commit(conn, outcomes[0], n)
                    claimed = True
                else:
                    await self._report(conn, outcomes)
                if n and not claimed:
                    cur = await conn.execute(self._claim_sql, _common.claim_params(
                        self.queue, n, self.session_bound, self.lease, self.host))
                    row = await cur.fetchone()
                    rows = (row[0] if row is not None else None) or []
                due: Optional[float] = None
                if n and not rows:
                    cur = await conn.execute("SELECT EXTRACT(EPOCH FROM coord.next_due(%s) - pg_catalog.now())",
                                             (self.queue,))
                    r = await cur.fetchone()
                    due = None if r is None or r[0] is None else float(r[0])
                return rows, len(rows) > 0, due
            except psycopg.Error as e:
                raise translate(e) from e

    async def _one_commit(self, conn: "psycopg.AsyncConnection[Any]", item: Tuple[Job, Outcome],
                          n: int) -> List[Tuple[Any, ...]]:
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
            cur = await conn.execute(single, params)
            rows = await cur.fetchall()
            await self._tally(job, o, bool(rows[0][0]) if rows else True)
            return [r[1] for r in rows if r[1][0] is not None]
        assert template is not None
        query = self._one_sql.get((template, n))
        if query is None:
            query = self._one_sql[(template, n)] = _common.with_n(template, n)
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
        # whether the finish counted, the jobs claimed (_common.one_commit_sql)
        await self._tally(job, o, bool(row[0]) if row is not None else True)
        return (row[1] if row is not None else None) or []

    async def _report(self, conn: "psycopg.AsyncConnection[Any]", outcomes: List[Tuple[Job, Outcome]]) -> None:
        plain = [(j, o) for j, o in outcomes if o.kind == "complete" and not j._in_commit]
        if len(plain) > 1:
            try:
                cur = await conn.execute(_common.COMPLETE_SQL, (_common.jobs_json(
                    [(j.id, j.token, o.result) for j, o in plain]),))
                row = await cur.fetchone()
                res = {int(k): v for k, v in ((row[0] if row is not None else None) or {}).items()}
                for j, o in plain:
                    await self._tally(j, o, bool(res.get(j.id)))
                outcomes = [(j, o) for j, o in outcomes if not (o.kind == "complete" and not j._in_commit)]
            except psycopg.Error as e:
                if _lost(e, conn):
                    raise
        for j, o in outcomes:
            try:
                await self._tally(j, o, await self._report_one(conn, j, o))
            except psycopg.Error as e:
                if _lost(e, conn):
                    raise
                log.warning("pg_coord worker %s: job %s: its %s was refused: %s", self.name, j.id, o.kind, e)
                o = Outcome("fail", error=f"{o.kind} refused: {error_text(e)}")
                await self._tally(j, o, await self._report_one(conn, j, o))

    async def _report_one(self, conn: "psycopg.AsyncConnection[Any]", j: Job, o: Outcome) -> bool:
        if o.kind == "complete" and j._in_commit:
            ok = False
            async with conn.transaction():
                for q, p in j._in_commit:
                    await conn.execute(q, p)
                cur = await conn.execute("SELECT coord.complete(%s, %s, %s::jsonb)", (j.id, j.token, o.result))
                row = await cur.fetchone()
                ok = bool(row and row[0])
                if not ok:
                    raise psycopg.Rollback()
            return ok
        if o.kind == "complete":
            cur = await conn.execute("SELECT coord.complete(%s, %s, %s::jsonb)", (j.id, j.token, o.result))
        else:
            cur = await conn.execute("SELECT coord.fail(%s, %s, %s::text, %s::interval, %s::boolean)",
                                     (j.id, j.token, o.error, interval(o.retry_after), o.pause_key))
        row = await cur.fetchone()
        return bool(row and row[0]) if o.kind == "complete" else bool(row and row[0] is not None)

    async def _tally(self, job: Job, o: Outcome, counted: bool) -> None:
        if not counted:
            log.warning("pg_coord worker %s: job %s: the claim was no longer ours; its %s did not count",
                        self.name, job.id, o.kind)
        elif o.kind == "complete":
            self.completed += 1
        else:
            self.failed += 1
        if job._watched and not self.pooler and self._conn is not None:
            await self._conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(f"coord:job:{job.id}")))

    async def _watch(self, jobs: List[Job]) -> None:
        assert self._lock is not None
        async with self._lock:
            conn = self._live()
            try:
                if not self.pooler:
                    await conn.execute(sql.SQL("; ").join(
                        sql.SQL("LISTEN {}").format(sql.Identifier(f"coord:job:{j.id}")) for j in jobs))
                await self._heartbeat_jobs(conn, jobs)
            except psycopg.Error as e:
                raise translate(e) from e
        for j in jobs:
            j._watched = True

    async def _heartbeat_jobs(self, conn: "psycopg.AsyncConnection[Any]", jobs: List[Job]) -> None:
        try:
            cur = await conn.execute(
                "SELECT t.id, coord.heartbeat(t.id, t.token, %s) FROM ROWS FROM (pg_catalog.unnest(%s::bigint[]),"
                " pg_catalog.unnest(%s::bigint[])) AS t(id, token)",
                (None if self.session_bound else self.lease, [j.id for j in jobs], [j.token for j in jobs]))
            alive = dict(await cur.fetchall())
        except psycopg.Error as e:
            raise translate(e) from e
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

    async def _wait_event(self, timeout: float) -> None:
        assert self._event is not None
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        self._event.clear()

    async def _wait(self, timeout: float) -> None:
        """Waits for a handler, a notification, stop() or the timeout. It
        holds the connection while it watches its socket (psycopg's own waits
        use the same event loop reader), and gives it up as soon as a handler
        asks for it."""
        assert self._lock is not None
        conn = self._conn
        if conn is None or self.pooler or conn.closed:
            await self._wait_event(timeout)
            return
        loop = asyncio.get_running_loop()
        async with self._lock:
            if self._wanted or conn is not self._conn or conn.closed:
                return
            fd = conn.pgconn.socket
            readable = [False]

            def on_readable() -> None:
                readable[0] = True
                self._wake()
            loop.add_reader(fd, on_readable)
            try:
                await self._wait_event(timeout)
            finally:
                loop.remove_reader(fd)
            if not readable[0]:
                return
            pg = conn.pgconn
            try:
                pg.consume_input()
            except psycopg.Error as e:
                raise translate(e) from e
            if pg.status != psycopg.pq.ConnStatus.OK:
                raise ConnectionLost("the server closed the connection", "08006")
            while True:
                pgn = pg.notifies()
                if pgn is None:
                    break
                self._on_notify(psycopg.Notify(pgn.relname.decode(), pgn.extra.decode(), pgn.be_pid))
