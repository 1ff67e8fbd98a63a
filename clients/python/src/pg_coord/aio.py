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
import signal
import threading
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

import psycopg
from psycopg.types.json import Jsonb

from . import _common
from ._common import Outcome, ParentResult, Result, Seconds, encode_result, error_text, interval
from .errors import (ConnectionLost, CoordError, CoordTimeout, ExtensionMissing, PermissionDenied, RetryAfter,
                     VersionMismatch, translate)

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
        return _common.checked_columns(await cur.fetchone())
    except psycopg.Error as e:
        await conn.close()
        raise translate(e) from e
    except CoordError:
        await conn.close()
        raise


class Client(_common.ClientBase["psycopg.AsyncConnection[Any]"]):
    """pg_coord.Client for asyncio: ``client = await Client.connect(conninfo)``
    or ``async with Client(conninfo) as client``."""

    def __init__(self, conninfo: str = "", *, prepare_threshold: Optional[int] = 5,
                 application_name: str = "pg_coord", **connect_kwargs: Any) -> None:
        super().__init__(conninfo, prepare_threshold, application_name, connect_kwargs)
        self._lock = asyncio.Lock()

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
        if self._reopen():
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
        query, params = _common.join_query(group, member, weight, options)
        return list(await self._value(query, params) or [])

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
            if self._can_release(conn):
                try:
                    await self._execute(query, params)
                except CoordError:
                    pass
            raise
        self._check_held(conn, session)
        await self._execute(query, params)


class Job(_common.JobBase):
    """A claimed job, as an async handler sees it (methods are coroutines)."""

    def __init__(self, worker: "Worker", row: Tuple[Any, ...]) -> None:
        super().__init__(worker, row, asyncio.Event())
        self._worker: "Worker"
        self.cancelled: asyncio.Event

    async def progress(self, progress: Dict[str, Any]) -> bool:
        return bool(await self._worker._job_value(_common.PROGRESS_SQL, self._progress_params(progress)))

    async def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """A durable step; ``fn`` may be a plain function or return an awaitable."""
        done = await self._worker._job_value(_common.STEP_SQL, self._step_params(name))
        if done is not None:
            return done
        result = fn()
        if inspect.isawaitable(result):
            result = await result
        result = _common.step_result(result)
        if not await self._worker._job_value(_common.STEP_DONE_SQL, self._step_done_params(name, result)):
            raise self._step_lost(name)
        return result

    async def parent_results(self) -> List[ParentResult]:
        rows = await self._worker._job_rows(_common.PARENT_RESULTS_SQL, (self.id, self.token))
        return [ParentResult(*r) for r in rows]


# the handler's type (WorkerBase's handler argument): a coroutine function, or a
# plain function (run in a thread)
AsyncHandler = Callable[[Job], Union[Awaitable[Any], Any]]


class Worker(_common.WorkerBase[Job, "psycopg.AsyncConnection[Any]"]):
    """pg_coord.Worker for asyncio: ``await worker.run()``; the same
    arguments and behaviour as the sync Worker (docs/clients/python.md)."""

    def _init_flavour(self) -> None:
        self._lock: Optional[asyncio.Lock] = None
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._event: Optional[asyncio.Event] = None
        self._loop_ref: Optional[asyncio.AbstractEventLoop] = None
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
            for handled in installed:
                self._loop_ref.remove_signal_handler(handled)
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
                failures += 1
                if self._gives_up(e, failures):
                    raise
                if self._stopping.is_set() and not self._held_by_lease():
                    return
                await self._wait_event(self._reconnect_delay(e, failures, backoff))
                backoff = min(backoff * 2, self.max_backoff)

    async def _connect(self) -> None:
        conn = await connect(self.conninfo, prepare_threshold=self.prepare_threshold,
                             application_name=self._connection_name())
        self._use_columns(*await _checked(conn))
        try:
            conn.add_notify_handler(self._on_notify)
            if not self.pooler:
                await conn.execute(_common.listen_sql([self.channel]))
        except psycopg.Error as e:
            await conn.close()
            raise translate(e) from e
        self._conn = conn
        self._notified = True

    async def _lost_connection(self) -> None:
        if self._conn is not None:
            await self._conn.close()
        self._drop_holds()

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
        self._idle_until, self._drained = 0.0, False
        next_heartbeat = time.monotonic() + self.heartbeat_every
        while True:
            now = time.monotonic()
            outcomes, self._outcomes = self._outcomes, []
            stopping = self._stopping.is_set()
            free = self.concurrency - self._running
            want = self._want(now, stopping, free)
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
                self._claimed(want, more, due)
                continue
            if self._done(stopping):
                return
            now = time.monotonic()
            watch = self._to_watch(now)
            if watch:
                await self._watch(watch)
            if not self.session_bound and now >= next_heartbeat:
                jobs = self._to_heartbeat()
                if jobs:
                    assert self._lock is not None
                    async with self._lock:
                        await self._heartbeat_jobs(self._live(), jobs)
                next_heartbeat = now + self.heartbeat_every
            deadlines = self._deadlines(now, next_heartbeat)
            if not stopping and free > 0:
                deadlines.append(self._idle_until)
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
                if len(outcomes) == 1 and n >= 1 and _common.one_commit_fits(outcomes[0], self._has_cac,
                                                                             self._has_fac):
                    rows = await self._one_commit(conn, outcomes[0], n)
                    claimed = True
                else:
                    await self._report(conn, outcomes)
                if n and not claimed:
                    cur = await conn.execute(self._claim_sql, self._claim_params(n))
                    row = await cur.fetchone()
                    rows = (row[0] if row is not None else None) or []
                due: Optional[float] = None
                if n and not rows:
                    cur = await conn.execute(_common.NEXT_DUE_SQL, (self.queue,))
                    r = await cur.fetchone()
                    due = None if r is None or r[0] is None else float(r[0])
                return rows, len(rows) > 0, due
            except psycopg.Error as e:
                raise translate(e) from e

    async def _one_commit(self, conn: "psycopg.AsyncConnection[Any]", item: Tuple[Job, Outcome],
                          n: int) -> List[Tuple[Any, ...]]:
        job, o = item
        query, params, single = self._one_commit_statement(item, n)
        cur = await conn.execute(query, params)
        if single:
            # whether the finish counted, the job as an array (null id: none)
            rows = await cur.fetchall()
            await self._tally(job, o, bool(rows[0][0]) if rows else True)
            return [r[1] for r in rows if r[1][0] is not None]
        row = await cur.fetchone()
        # whether the finish counted, the jobs claimed (_common.one_commit_sql)
        await self._tally(job, o, bool(row[0]) if row is not None else True)
        return (row[1] if row is not None else None) or []

    async def _report(self, conn: "psycopg.AsyncConnection[Any]", outcomes: List[Tuple[Job, Outcome]]) -> None:
        plain, rest = _common.plain_completions(outcomes)
        if len(plain) > 1:
            try:
                cur = await conn.execute(_common.COMPLETE_SQL, (_common.jobs_json(
                    [(j.id, j.token, o.result) for j, o in plain]),))
                row = await cur.fetchone()
                res = _common.completed_by_id(row[0] if row is not None else None)
                for j, o in plain:
                    await self._tally(j, o, bool(res.get(j.id)))
                outcomes = rest
            except psycopg.Error as e:
                if _common.lost(e, conn):
                    raise
        for j, o in outcomes:
            try:
                await self._tally(j, o, await self._report_one(conn, j, o))
            except psycopg.Error as e:
                if _common.lost(e, conn):
                    raise
                o = self._refused(j, o, e)
                await self._tally(j, o, await self._report_one(conn, j, o))

    async def _report_one(self, conn: "psycopg.AsyncConnection[Any]", j: Job, o: Outcome) -> bool:
        if o.kind == "complete" and j._in_commit:
            ok = False
            async with conn.transaction():
                for q, p in j._in_commit:
                    await conn.execute(q, p)
                cur = await conn.execute(_common.COMPLETE_ONE_SQL, _common.finish_params(j, o))
                row = await cur.fetchone()
                ok = bool(row and row[0])
                if not ok:
                    raise psycopg.Rollback()
            return ok
        cur = await conn.execute(_common.COMPLETE_ONE_SQL if o.kind == "complete" else _common.FAIL_ONE_SQL,
                                 _common.finish_params(j, o))
        row = await cur.fetchone()
        return bool(row and row[0]) if o.kind == "complete" else bool(row and row[0] is not None)

    async def _tally(self, job: Job, o: Outcome, counted: bool) -> None:
        unlisten = self._count(job, o, counted)
        if unlisten is not None and self._conn is not None:
            await self._conn.execute(unlisten)

    async def _watch(self, jobs: List[Job]) -> None:
        assert self._lock is not None
        async with self._lock:
            conn = self._live()
            try:
                if not self.pooler:
                    await conn.execute(_common.listen_sql([_common.job_channel(j.id) for j in jobs]))
                await self._heartbeat_jobs(conn, jobs)
            except psycopg.Error as e:
                raise translate(e) from e
        for j in jobs:
            j._watched = True

    async def _heartbeat_jobs(self, conn: "psycopg.AsyncConnection[Any]", jobs: List[Job]) -> None:
        try:
            cur = await conn.execute(_common.HEARTBEAT_SQL, self._heartbeat_params(jobs))
            rows = await cur.fetchall()
        except psycopg.Error as e:
            raise translate(e) from e
        self._heartbeaten(jobs, rows)

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
            _common.read_notifies(conn.pgconn, self._on_notify)
