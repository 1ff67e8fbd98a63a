"""pg_coord.Client: enqueue, flows, await, cancel, and the coordination
recipes as context managers, on one psycopg 3 connection (autocommit)."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import psycopg
from psycopg.types.json import Jsonb

from . import _common
from ._common import Result, Seconds, interval
from .errors import ConnectionLost, CoordError, CoordTimeout, translate

__all__ = ["Client", "connect"]


def connect(conninfo: str = "", *, prepare_threshold: Optional[int] = 5,
            application_name: str = "pg_coord", **kwargs: Any) -> "psycopg.Connection[Any]":
    """A psycopg connection in autocommit mode (errors translated)."""
    try:
        conn = psycopg.Connection.connect(conninfo, autocommit=True,
                                          prepare_threshold=prepare_threshold,
                                          application_name=application_name, **kwargs)
    except psycopg.Error as e:
        raise translate(e) from e
    return conn


def _checked(conn: "psycopg.Connection[Any]") -> Tuple[Optional[Sequence[str]], Optional[Sequence[str]]]:
    """Checks the extension (closing conn when that fails); the result
    columns of complete_and_claim and fail_and_claim where the library reads
    them (else None)."""
    try:
        return _common.checked_columns(conn.execute(_common.CHECK_SQL).fetchone())
    except psycopg.Error as e:
        conn.close()
        raise translate(e) from e
    except CoordError:
        conn.close()
        raise


class Client(_common.ClientBase["psycopg.Connection[Any]"]):
    """A connection to a database with pg_coord.

    ``conninfo`` is a libpq connection string or URI ("" means the PG*
    environment). ``prepare_threshold=None`` is for PgBouncer before 1.21 in
    transaction mode (docs/operations/poolers.md). The connection is opened
    at once, its extension checked (ExtensionMissing, VersionMismatch), and
    opened again by the next call after it dropped: the call that met the
    drop raised ConnectionLost, and whatever the session held (locks,
    permits, leadership, memberships) went with it.
    """

    def __init__(self, conninfo: str = "", *, prepare_threshold: Optional[int] = 5,
                 application_name: str = "pg_coord", **connect_kwargs: Any) -> None:
        super().__init__(conninfo, prepare_threshold, application_name, connect_kwargs)
        self._lock = threading.RLock()
        self._open()

    # -- connection -------------------------------------------------------
    def _open(self) -> psycopg.Connection[Any]:
        conn = connect(self._conninfo, **self._kwargs)
        _checked(conn)
        self._conn = conn
        return conn

    @property
    def connection(self) -> "psycopg.Connection[Any]":
        """The underlying psycopg connection (autocommit), reopened if it dropped."""
        if self._reopen():
            self._open()
        assert self._conn is not None
        return self._conn

    def _execute(self, query: Any, params: Optional[Sequence[Any]] = None) -> "psycopg.Cursor[Any]":
        with self._lock:
            conn = self.connection
            try:
                return conn.execute(query, params)
            except psycopg.Error as e:
                err = translate(e)
                if isinstance(err, ConnectionLost) or conn.broken:
                    conn.close()
                raise err from e

    def _value(self, query: Any, params: Optional[Sequence[Any]] = None) -> Any:
        row = self._execute(query, params).fetchone()
        return None if row is None else row[0]

    def close(self) -> None:
        self._closed = True
        if self._conn is not None:
            self._conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- jobs ---------------------------------------------------------------
    def enqueue(self, queue: str, payload: Any = None, **options: Any) -> int:
        """coord.enqueue: the job's id. ``options`` are enqueue's named
        arguments: run_at, priority, key, host, max_attempts, group_key,
        limit_key, max_snoozes, expires_at, after, on_parent_failure, batch,
        trace (run_at and expires_at also take seconds or a timedelta from
        now; trace, a W3C traceparent, defaults to OpenTelemetry's current
        one when OpenTelemetry is installed)."""
        query, params = _common.enqueue_query(queue, payload, options)
        # the id straight from the result (text): no row made (psycopg's
        # fetchone costs about as much as the rest of this method)
        res = self._execute(query, params).pgresult
        value = res.get_value(0, 0) if res is not None and res.ntuples else None
        if value is None:
            raise CoordError("coord.enqueue returned no id", "XX000")
        return int(value)

    def enqueue_flow(self, nodes: Sequence[Dict[str, Any]]) -> Dict[str, int]:
        """coord.enqueue_flow: a graph of jobs, all or nothing; {name: id}."""
        ids = self._value("SELECT coord.enqueue_flow(%s::jsonb)", (Jsonb(_common.flow_nodes(nodes)),))
        return {k: int(v) for k, v in ids.items()}

    def await_result(self, id: int, timeout: Optional[Seconds] = None) -> Result:
        """coord.await: waits until the job finished; Result(state, result,
        error), state None when ``timeout`` (seconds) passed first."""
        row = self._execute("SELECT state, result, error FROM coord.await(%s::bigint, %s::interval)",
                            (id, interval(timeout))).fetchone()
        assert row is not None
        return Result(row[0], row[1], row[2])

    def cancel(self, id: int) -> bool:
        """coord.cancel: true if the job was cancelled (it had not finished)."""
        return bool(self._value("SELECT coord.cancel(%s::bigint)", (id,)))

    def job_state(self, id: int) -> Optional[str]:
        state: Optional[str] = self._value("SELECT coord.job_state(%s::bigint)", (id,))
        return state

    # -- coordination recipes ---------------------------------------------------
    @contextmanager
    def lock(self, path: str, timeout: Optional[Seconds] = None, shared: bool = False) -> Iterator[None]:
        """coord.lock for the block, coord.unlock after it (also when it
        raised). CoordTimeout when not had within ``timeout`` seconds."""
        if not self._value("SELECT coord.lock(%s::text, %s::interval, %s::boolean)",
                           (path, interval(timeout), shared)):
            raise CoordTimeout(f"lock {path} not taken within {timeout} s")
        with self._release("SELECT coord.unlock(%s::text, %s::boolean)", (path, shared)):
            yield

    @contextmanager
    def campaign(self, election: str, value: Optional[str] = None,
                 timeout: Optional[Seconds] = None) -> Iterator[int]:
        """coord.campaign: yields the term once this session leads;
        coord.resign after the block."""
        term = self._value("SELECT coord.campaign(%s::text, %s::text, %s::interval)",
                           (election, value, interval(timeout)))
        if term is None:
            raise CoordTimeout(f"election {election} not won within {timeout} s")
        with self._release("SELECT coord.resign(%s::text)", (election,)):
            yield int(term)

    @contextmanager
    def semaphore(self, path: str, permits: int, timeout: Optional[Seconds] = None) -> Iterator[int]:
        """coord.acquire_permit: yields the permit's number;
        coord.release_permit after the block."""
        permit = self._value("SELECT coord.acquire_permit(%s::text, %s::integer, %s::interval)",
                             (path, permits, interval(timeout)))
        if permit is None:
            raise CoordTimeout(f"no permit of {path} within {timeout} s")
        with self._release("SELECT coord.release_permit(%s::text)", (path,)):
            yield int(permit)

    @contextmanager
    def lease_lock(self, path: str, ttl: Seconds, holder: Optional[str] = None) -> Iterator[int]:
        """coord.lease_lock (works through transaction poolers): yields the
        token; coord.lease_unlock after the block. CoordTimeout when another
        lease is live. The block must end within ``ttl``, or call
        ``client.renew(path, token, ttl)``."""
        token = self._value("SELECT coord.lease_lock(%s::text, %s::interval, %s::text)",
                            (path, interval(ttl), holder))
        if token is None:
            raise CoordTimeout(f"lease {path} is held by another")
        with self._release("SELECT coord.lease_unlock(%s::text, %s::bigint)", (path, token), session=False):
            yield int(token)

    def renew(self, path: str, token: int, ttl: Seconds) -> bool:
        return self._value("SELECT coord.renew(%s::text, %s::bigint, %s::interval)",
                           (path, token, interval(ttl))) is not None

    def join(self, group: str, member: str, weight: float = 1.0, **options: Any) -> List[int]:
        """coord.join: this session's membership (weight, meta, segments,
        assignor by name); the segments it owns now."""
        query, params = _common.join_query(group, member, weight, options)
        return list(self._value(query, params) or [])

    def owned(self, group: str) -> List[int]:
        return list(self._value("SELECT coord.owned(%s::text)", (group,)) or [])

    def leave(self, group: str) -> bool:
        return bool(self._value("SELECT coord.leave(%s::text)", (group,)))

    @contextmanager
    def _release(self, query: str, params: Sequence[Any], session: bool = True) -> Iterator[None]:
        """Runs the release after the block. When the block raised, its
        exception wins; when the connection dropped, the server let the
        session's hold go already (a lease runs out by itself), and a block
        that ended normally gets ConnectionLost: it may have run unprotected."""
        conn = self._conn
        try:
            yield
        except BaseException:
            if self._can_release(conn):
                try:
                    self._execute(query, params)
                except CoordError:
                    pass
            raise
        self._check_held(conn, session)
        self._execute(query, params)
