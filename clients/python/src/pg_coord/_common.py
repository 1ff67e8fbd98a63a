"""What the sync and the asyncio flavours share: the SQL they send, the
checks of enqueue's options, the extension check, the data classes, and
the Client's and the Worker's logic that waits for nothing (ClientBase,
WorkerBase): each flavour keeps only its I/O, its locks and its waits."""
from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import random
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from .errors import ClaimLost, ConnectionLost, CoordError, ExtensionMissing, VersionMismatch, translate

log = logging.getLogger("pg_coord")

# Extension versions this library speaks to (pg_extension.extversion).
# the oldest pg_coord whose SQL this library calls; later versions keep those
# calls working (an update never changes a released call), so they serve too
MIN_VERSION = "0.4.0"

Seconds = Union[int, float, datetime.timedelta]

# coord.enqueue's named arguments, with the type each is cast to: names come
# from this table only, never from the caller, so they are safe to splice.
ENQUEUE_OPTIONS: Dict[str, str] = {
    "run_at": "timestamptz",
    "priority": "integer",
    "key": "text",
    "host": "text",
    "max_attempts": "integer",
    "group_key": "text",
    "limit_key": "text",
    "max_snoozes": "integer",
    "expires_at": "timestamptz",
    "after": "bigint[]",
    "on_parent_failure": "text",
    "batch": "bigint",
    "trace": "text",
}


# -- trace context (W3C traceparent), through OpenTelemetry when it is importable --------
# (propagate, context) of the opentelemetry API, False when it is not
# installed, None until first needed; an optional dependency, never required.
_OTEL: Any = None


def _otel() -> Any:
    global _OTEL
    if _OTEL is None:
        try:
            from opentelemetry import context, propagate
            _OTEL = (propagate, context)
        except ImportError:
            _OTEL = False
    return _OTEL


def current_traceparent() -> Optional[str]:
    """The traceparent of OpenTelemetry's current context (its configured
    propagator's), or None: no OpenTelemetry, or no span recording."""
    api = _otel()
    if not api:
        return None
    carrier: Dict[str, str] = {}
    api[0].inject(carrier)
    tp = carrier.get("traceparent")
    # only what coord.enqueue accepts: a custom propagator's other forms are left out
    return tp if isinstance(tp, str) and len(tp) == 55 else None


@contextlib.contextmanager
def trace_context(trace: Optional[str]) -> Iterator[None]:
    """Runs the block in the context extracted from a job's traceparent
    (OpenTelemetry's attach/detach), so spans the handler starts continue
    the producer's trace; nothing without OpenTelemetry or a trace."""
    api = _otel() if trace else None
    if not api:
        yield
        return
    token = api[1].attach(api[0].extract({"traceparent": trace}))
    try:
        yield
    finally:
        api[1].detach(token)

# The extension's version, and the result columns of coord.complete_and_claim
# and coord.fail_and_claim where they exist (NULL where not): their OUT or
# TABLE columns, or the attributes of the composite type they return.
_RESULT_COLUMNS = (
    "(SELECT COALESCE("
    " (SELECT pg_catalog.array_agg(a.n ORDER BY a.o) FROM ROWS FROM (pg_catalog.unnest(p.proargnames),"
    "   pg_catalog.unnest(p.proargmodes)) WITH ORDINALITY AS a(n, m, o) WHERE a.m IN ('o', 't', 'b')),"
    " (SELECT pg_catalog.array_agg(t.attname::text ORDER BY t.attnum) FROM pg_catalog.pg_attribute t"
    "   JOIN pg_catalog.pg_type y ON y.typrelid = t.attrelid"
    "   WHERE y.oid = p.prorettype AND t.attnum > 0 AND NOT t.attisdropped))"
    " FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace s ON s.oid = p.pronamespace"
    " WHERE s.nspname = 'coord' AND p.proname = '{}' LIMIT 1)")
CHECK_SQL = (
    "SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord'), "
    + _RESULT_COLUMNS.format("complete_and_claim") + ", " + _RESULT_COLUMNS.format("fail_and_claim")
    + ", pg_catalog.current_database()"
)
# a one-commit function is used only when its result has the claim's columns
# and says whether the finish counted (DESIGN 3.10: "the README documents its shape")
COUNTED_NAMES = ("completed", "counted", "ok", "done", "state", "new_state", "fail_state")


def one_commit_usable(columns: Optional[Sequence[str]]) -> bool:
    if not columns:
        return False
    return all(c in columns for c in CLAIM_NAMES) and any(c in columns for c in COUNTED_NAMES)


def _one_commit_call(function: str, columns: Optional[Sequence[str]], session_bound: bool,
                     host: Optional[str], n: str) -> Optional[Tuple[str, str]]:
    """What one_commit_sql and one_commit_single_sql share: the expression
    (of one result row) saying whether the finish counted, and the call of
    coord.<function> claiming n jobs; None when its result's columns are
    not what the library reads."""
    if not one_commit_usable(columns):
        return None
    assert columns is not None
    counted = next(c for c in COUNTED_NAMES if c in columns)
    # a boolean column says it; a state column is NULL when the finish did not count
    counted_expr = f'"{counted}"' if counted in ("completed", "counted", "ok", "done") else f'"{counted}" IS NOT NULL'
    finish = ("%s, %s, %s::jsonb" if function == "complete_and_claim"
              else "%s, %s, %s::text, %s::interval, pause_key => %s")
    args = [finish, f"n => {n}", "session_bound => true" if session_bound else "lease => %s::interval"]
    if host is not None:
        args.append("host => %s")
    return counted_expr, f"coord.{function}({', '.join(args)})"


def one_commit_sql(function: str, columns: Optional[Sequence[str]], session_bound: bool,
                   host: Optional[str]) -> Optional[str]:
    """The worker's statement of coord.complete_and_claim / fail_and_claim
    (``function``), made once at connect from the columns its result has
    (None when the library cannot read it). One row of two values: whether
    the finish counted (its column of the result, the same in every row),
    and the jobs claimed as CLAIM_AGG makes them (NULL when none). Fixed
    places, so no row needs the cursor's description. Parameters: id, token,
    result (complete) or error, retry_after, pause_key (fail), then
    claim_params' lease and host; n is written in (with_n)."""
    parts = _one_commit_call(function, columns, session_bound, host, "{n}")
    if parts is None:
        return None
    counted_expr, call = parts
    return f"SELECT pg_catalog.bool_and({counted_expr}), {CLAIM_AGG} FILTER (WHERE id IS NOT NULL) FROM {call}"


def one_commit_single_sql(function: str, columns: Optional[Sequence[str]], session_bound: bool,
                          host: Optional[str]) -> Optional[str]:
    """one_commit_sql's statement claiming one job, the concurrency=1
    worker's every statement: no aggregate (json_agg's Agg node cost the
    server more per job than the rest of the statement's output), still two
    values a row for psycopg to load (nine plain columns cost the client as
    much). Rows of whether the finish counted, then the job as one JSON array
    of CLAIM_COLUMNS (its id null when none was claimed)."""
    parts = _one_commit_call(function, columns, session_bound, host, "1")
    if parts is None:
        return None
    counted_expr, call = parts
    return f"SELECT {counted_expr}, pg_catalog.json_build_array({CLAIM_COLUMNS}) FROM {call}"

# The claim's columns a Job is made of, in this order; times as epoch
# seconds (a float loads far faster than a timestamptz; Job turns them into
# datetimes when read). The worker reads the jobs claimed as one JSON array
# of arrays (CLAIM_AGG): one value for the whole claim, which json.loads
# parses, is much cheaper for psycopg than nine values a row.
CLAIM_NAMES = ("id", "payload", "attempt", "token", "lease_until", "key", "group_key", "host", "run_at", "trace")
CLAIM_COLUMNS = ("id, payload, attempt, token, pg_catalog.date_part('epoch', lease_until), key, group_key, host,"
                 " pg_catalog.date_part('epoch', run_at), trace")
# date_part's float8 is EXTRACT(...)::float8's value (both the exact
# microseconds over 1e6, rounded once) without EXTRACT's numeric arithmetic.
CLAIM_AGG = f"pg_catalog.json_agg(pg_catalog.json_build_array({CLAIM_COLUMNS}))"


def claim_sql(session_bound: bool, host: Optional[str]) -> str:
    """The worker's claim, with only the arguments it needs: one row, the
    jobs claimed as CLAIM_AGG makes them (NULL when none)."""
    args = ["%s", "%s", "session_bound => true" if session_bound else "lease => %s::interval"]
    if host is not None:
        args.append("host => %s")
    return f"SELECT {CLAIM_AGG} FROM coord.claim({', '.join(args)})"


def claim_params(queue: str, n: int, session_bound: bool, lease: Optional[datetime.timedelta],
                 host: Optional[str]) -> List[Any]:
    params: List[Any] = [queue, n]
    if not session_bound:
        params.append(lease)
    if host is not None:
        params.append(host)
    return params


def as_datetime(value: Any) -> Optional[datetime.datetime]:
    if value is None or isinstance(value, datetime.datetime):
        return value
    return datetime.datetime.fromtimestamp(float(value), datetime.timezone.utc)


def interval(value: Optional[Seconds]) -> Optional[datetime.timedelta]:
    """Seconds (or a timedelta) as a timedelta, psycopg's interval."""
    if value is None or isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(seconds=float(value))


def seconds(value: Seconds) -> float:
    return value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)


def version_key(version: str) -> Tuple[int, ...]:
    """'0.4.0' as (0, 4, 0); a part that is not a number counts as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def check_extension(row: Optional[Tuple[Any, ...]],
                    minimum: str = MIN_VERSION) -> Tuple[bool, bool]:
    """Raises unless pg_coord is installed at minimum or later; returns
    whether coord.complete_and_claim and coord.fail_and_claim exist with a
    result this library reads (one_commit_columns gives their columns)."""
    assert row is not None
    version, cac_columns, fac_columns, db = row
    if version is None:
        raise ExtensionMissing(f"extension pg_coord is not installed in database {db}", "42704",
                               hint="CREATE EXTENSION pg_coord (as a superuser); see docs/install.md")
    if version_key(version) < version_key(minimum):
        raise VersionMismatch(
            f"pg_coord {version} is installed in database {db}; this library needs "
            f"{minimum} or later", version, minimum)
    return one_commit_usable(cac_columns), one_commit_usable(fac_columns)


def one_commit_columns(row: Tuple[Any, ...]) -> Tuple[Optional[Sequence[str]], Optional[Sequence[str]]]:
    """The result columns of coord.complete_and_claim and fail_and_claim
    from CHECK_SQL's row (None where absent)."""
    return row[1], row[2]


def checked_columns(row: Optional[Tuple[Any, ...]]) -> Tuple[Optional[Sequence[str]], Optional[Sequence[str]]]:
    """CHECK_SQL's row checked (check_extension raises); the result columns
    of complete_and_claim and fail_and_claim where the library reads them
    (else None)."""
    cac, fac = check_extension(row, MIN_VERSION)
    assert row is not None
    cac_cols, fac_cols = one_commit_columns(row)
    return (cac_cols if cac else None), (fac_cols if fac else None)


_ENQUEUE_SQL: Dict[Tuple[Any, ...], str] = {}


def enqueue_query(queue: str, payload: Any, options: Mapping[str, Any]) -> Tuple[str, List[Any]]:
    """``SELECT coord.enqueue(...)`` with named arguments for the options
    given (the text is made once per combination of options). Without a
    trace option, OpenTelemetry's current traceparent when there is one
    (trace=None: none)."""
    if "trace" not in options and _otel():
        tp = current_traceparent()
        if tp is not None:
            options = {**options, "trace": tp}
    shape: List[Any] = [payload is not None]
    params: List[Any] = [queue]
    if payload is not None:
        params.append(json.dumps(payload))
    for name, value in options.items():
        cast = ENQUEUE_OPTIONS.get(name)
        if cast is None:
            raise TypeError(f"enqueue() got an unknown option {name!r}; "
                            f"known: {', '.join(ENQUEUE_OPTIONS)}")
        if value is None:
            continue
        delay = cast == "timestamptz" and isinstance(value, (int, float, datetime.timedelta))
        shape.append((name, delay))
        params.append(interval(value) if delay else list(value) if cast == "bigint[]" else value)
    key = tuple(shape)
    query = _ENQUEUE_SQL.get(key)
    if query is None:
        parts = ["%s::text"] + (["%s::jsonb"] if payload is not None else [])
        for name, delay in shape[1:]:
            # names come from ENQUEUE_OPTIONS only; "key" and friends quoted all the same
            parts.append(f'"{name}" => pg_catalog.now() + %s::interval' if delay
                         else f'"{name}" => %s::{ENQUEUE_OPTIONS[name]}')
        query = _ENQUEUE_SQL[key] = f"SELECT coord.enqueue({', '.join(parts)})"
    return query, params


# Several completions in one statement: one JSON parameter (jobs_json) rather
# than three arrays, whose literals psycopg builds and quotes slowly in
# Python; one value back, {"<id>": counted, ...}.
COMPLETE_SQL = ("SELECT pg_catalog.json_object_agg(e.i, coord.complete(e.i, e.t, e.r))"
                " FROM pg_catalog.jsonb_to_recordset(%s::jsonb) AS e(i bigint, t bigint, r jsonb)")
# The same without results: coord.complete_many (how many counted).
COMPLETE_MANY_SQL = "SELECT coord.complete_many(%s::bigint[], %s::bigint[])"


def with_n(template: str, n: int) -> str:
    """one_commit_sql's statement claiming n jobs (n written in: one
    parameter less to send, and a worker uses few values of n)."""
    return template.replace("n => {n}", f"n => {int(n)}")


def flow_nodes(nodes: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """enqueue_flow's nodes, those without a trace given OpenTelemetry's
    current traceparent when there is one."""
    tp = current_traceparent() if _otel() else None
    if tp is None:
        return list(nodes)
    return [n if "trace" in n else {**n, "trace": tp} for n in nodes]


def jobs_json(items: Sequence[Tuple[int, int, Optional[str]]]) -> str:
    """[{"i": id, "t": token, "r": result}, ...] for COMPLETE_SQL, from
    results already JSON text (encode_result; None: no "r", SQL NULL)."""
    return "[" + ",".join(f'{{"i":{i},"t":{t},"r":{r}}}' if r is not None else f'{{"i":{i},"t":{t}}}'
                          for i, t, r in items) + "]"


def bigint_array(values: Sequence[int]) -> str:
    """An int list as a bigint[] literal (sent as text, cast in the statement)."""
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def encode_result(value: Any) -> Optional[str]:
    """A handler's result as JSON text, sent as ``%s::jsonb`` (None: SQL
    NULL); raises TypeError when it is not JSON-able, before anything is sent."""
    if value is None:
        return None
    return json.dumps(value)


# The statements of a job's finish one at a time, its handler's, its
# heartbeats, and the worker's look at the next due time.
COMPLETE_ONE_SQL = "SELECT coord.complete(%s, %s, %s::jsonb)"
FAIL_ONE_SQL = "SELECT coord.fail(%s, %s, %s::text, %s::interval, %s::boolean)"
PROGRESS_SQL = "SELECT coord.progress(%s, %s, %s::jsonb)"
STEP_SQL = "SELECT coord.step(%s, %s, %s::text)"
STEP_DONE_SQL = "SELECT coord.step_done(%s, %s, %s::text, %s::jsonb)"
PARENT_RESULTS_SQL = "SELECT parent_id, state, result FROM coord.parent_results(%s, %s) ORDER BY parent_id"
HEARTBEAT_SQL = ("SELECT t.id, coord.heartbeat(t.id, t.token, %s) FROM ROWS FROM (pg_catalog.unnest(%s::bigint[]),"
                 " pg_catalog.unnest(%s::bigint[])) AS t(id, token)")
NEXT_DUE_SQL = "SELECT EXTRACT(EPOCH FROM coord.next_due(%s) - pg_catalog.now())"


def listen_sql(channels: Sequence[str], command: str = "LISTEN") -> sql.Composed:
    """LISTEN (or UNLISTEN) on the channels, one statement."""
    return sql.SQL("; ").join(sql.SQL(command + " {}").format(sql.Identifier(c)) for c in channels)


def job_channel(id: int) -> str:
    return f"coord:job:{id}"


def read_notifies(pg: Any, on_notify: Callable[[psycopg.Notify], None]) -> None:
    """Reads what the connection's socket has (pg: its pgconn) and hands its
    notifications to on_notify; ConnectionLost when the server closed it."""
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
        on_notify(psycopg.Notify(pgn.relname.decode(), pgn.extra.decode(), pgn.be_pid))


def lost(e: psycopg.Error, conn: Any) -> bool:
    """Whether e (met on conn) means the connection is gone."""
    return isinstance(translate(e), ConnectionLost) or bool(conn.broken)


def join_query(group: str, member: str, weight: float, options: Mapping[str, Any]) -> Tuple[str, List[Any]]:
    """``SELECT coord.join(...)`` with the named options given (meta,
    segments, assignor); TypeError for any other."""
    extra = "".join(f", {k} => %s" for k in options if k in ("meta", "segments", "assignor"))
    params: List[Any] = [group, member, float(weight)]
    for k, v in options.items():
        if k not in ("meta", "segments", "assignor"):
            raise TypeError(f"join() got an unknown option {k!r}")
        params.append(Jsonb(v) if k == "meta" else v)
    return f"SELECT coord.join(%s::text, %s::text, %s::double precision{extra})", params


def error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:60000]


def default_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Result:
    """What ``await_result`` returns: ``state`` is ``done``, ``dead`` or
    ``cancelled``, or None when the timeout passed first; ``result`` a done
    job's result, ``error`` the last error of one that died or was cancelled."""
    state: Optional[str]
    result: Any
    error: Optional[str]

    @property
    def timed_out(self) -> bool:
        return self.state is None


class ParentResult(NamedTuple):
    parent_id: int
    state: str
    result: Any


@dataclass
class Outcome:
    """How a handler ended, waiting to be reported: kind is complete or fail."""
    kind: str
    result: Any = None
    error: Optional[str] = None
    retry_after: Optional[float] = None
    pause_key: bool = False


class JobBase:
    """What a claimed job is, for the sync and the async Worker alike: its
    claim's columns, and the bookkeeping the worker keeps on it.  cancelled
    is the flavour's event (threading.Event or asyncio.Event)."""

    def __init__(self, worker: Any, row: Tuple[Any, ...], cancelled: Any) -> None:
        (self.id, self.payload, self.attempt, self.token, self._lease_until,
         self.key, self.group_key, self.host, self._run_at, self.trace) = row
        #: self.trace: the W3C traceparent the job was enqueued with, or None
        self.queue: str = worker.queue
        self._worker = worker
        #: set when the job is cancelled, or its claim is lost (a NOTIFY
        #: "cancel" on "coord:job:<id>", a heartbeat answering NULL, or the
        #: session of a session-bound claim ending): stop and return.
        self.cancelled = cancelled
        self._in_commit: List[Tuple[str, Optional[Sequence[Any]]]] = []
        self._started = 0.0
        self._watched = False
        self._lost = False
        self._finished = False

    def __repr__(self) -> str:
        return f"<Job {self.queue}#{self.id} attempt {self.attempt}>"

    @property
    def lease_until(self) -> Optional[datetime.datetime]:
        """The end of a lease claim; None for a session-bound one."""
        return as_datetime(self._lease_until)

    @property
    def run_at(self) -> Optional[datetime.datetime]:
        """When the job became due."""
        return as_datetime(self._run_at)

    def in_commit(self, query: str, params: Optional[Sequence[Any]] = None) -> None:
        """Runs ``query`` in the transaction that completes the job, before
        coord.complete; rolled back when the completion does not count (the
        claim was lost). Writes made so happen exactly once per job."""
        self._in_commit.append((query, params))

    def _progress_params(self, progress: Dict[str, Any]) -> Tuple[Any, ...]:
        return (self.id, self.token, Jsonb(progress))

    def _step_params(self, name: str) -> Tuple[Any, ...]:
        return (self.id, self.token, name)

    def _step_done_params(self, name: str, result: Any) -> Tuple[Any, ...]:
        return (self.id, self.token, name, Jsonb(result))

    def _step_lost(self, name: str) -> ClaimLost:
        """step_done found the claim gone: the job is cancelled; the error to raise."""
        self.cancelled.set()
        return ClaimLost(f"job {self.id}: the claim is no longer ours; step {name} not recorded", "55000")


def step_result(result: Any) -> Any:
    """What a step records and returns for fn's result: a step's result is
    never null (null reads back as "not done"), so None is True."""
    return True if result is None else result


J = TypeVar("J", bound=JobBase)
C = TypeVar("C", bound="psycopg.BaseConnection[Any]")


def finish_params(job: JobBase, o: Outcome) -> List[Any]:
    """The finish's parameters: COMPLETE_ONE_SQL's, FAIL_ONE_SQL's, and the
    first ones of one_commit_sql's."""
    if o.kind == "complete":
        return [job.id, job.token, o.result]
    return [job.id, job.token, o.error, interval(o.retry_after), o.pause_key]


def one_commit_fits(item: Tuple[JobBase, Outcome], cac: bool, fac: bool) -> bool:
    job, o = item
    return not job._in_commit and (cac if o.kind == "complete" else fac)


def plain_completions(outcomes: List[Tuple[J, Outcome]]) -> Tuple[List[Tuple[J, Outcome]], List[Tuple[J, Outcome]]]:
    """The completions without in_commit statements (which may share a
    statement), and the rest."""
    plain = [(j, o) for j, o in outcomes if o.kind == "complete" and not j._in_commit]
    return plain, [(j, o) for j, o in outcomes if not (o.kind == "complete" and not j._in_commit)]


def completed_by_id(value: Any) -> Dict[int, Any]:
    """COMPLETE_SQL's value (None: no row) as {id: counted}."""
    return {int(k): v for k, v in (value or {}).items()}


class ClientBase(Generic[C]):
    """What the sync and the async Client share: the connection's options,
    and the checks around it; the flavours open it, and run statements."""

    def __init__(self, conninfo: str, prepare_threshold: Optional[int], application_name: str,
                 connect_kwargs: Dict[str, Any]) -> None:
        self._conninfo = conninfo
        self._kwargs = dict(connect_kwargs, prepare_threshold=prepare_threshold,
                            application_name=application_name)
        self._conn: Optional[C] = None
        self._closed = False

    def _reopen(self) -> bool:
        """Whether the connection must be opened (again); CoordError once closed."""
        if self._closed:
            raise CoordError("the client is closed", "08003")
        return self._conn is None or self._conn.closed

    def _can_release(self, conn: Optional[C]) -> bool:
        """After a block that raised: whether the connection it held on is
        still this client's and open (else nothing to release)."""
        return self._conn is conn and conn is not None and not conn.closed

    def _check_held(self, conn: Optional[C], session: bool) -> None:
        """After a block that ended normally: ConnectionLost when a session
        hold went with the connection while it ran."""
        if session and (conn is None or conn.closed or conn is not self._conn):
            raise ConnectionLost("the connection dropped while the block ran; the hold went with it", "08006")


class WorkerBase(Generic[J, C]):
    """What the sync and the async Worker share: their options, checked and
    kept here; the jobs held and the outcomes to report; the statements made
    at connect; the bookkeeping of claims, reports, reconnects and
    notifications, which waits for nothing. Each flavour adds its locks,
    its waits and how handlers run (_init_flavour, called last here)."""

    def __init__(self, conninfo: str, queue: str, handler: Callable[[J], Any], concurrency: int = 1,
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
        self.name = name or default_name()
        self.use_complete_and_claim = use_complete_and_claim
        self.channel = f"coord:{queue}"
        self._claim_sql = claim_sql(session_bound, host)
        #: how many jobs this worker finished (complete counted) and failed
        self.completed = 0
        self.failed = 0
        self._conn: Optional[C] = None
        self._has_cac = False                # coord.complete_and_claim is there (and wanted)
        self._has_fac = False                # coord.fail_and_claim
        self._cac_sql: Optional[str] = None  # their statements (one_commit_sql)
        self._fac_sql: Optional[str] = None
        self._cac1_sql: Optional[str] = None  # theirs claiming one job (one_commit_single_sql)
        self._fac1_sql: Optional[str] = None
        self._one_sql: Dict[Tuple[str, int], str] = {}   # theirs with n written in
        self._held: Dict[int, J] = {}        # claimed and not yet reported
        self._running = 0                    # handlers running
        self._outcomes: List[Tuple[J, Outcome]] = []
        self._stopping = threading.Event()
        self._notified = True
        self._idle_until = 0.0               # the loop claims again then (or at a NOTIFY)
        self._drained = False                # the last claim found the queue with nothing due (burst)
        self._init_flavour()

    def _init_flavour(self) -> None:
        raise NotImplementedError

    # -- connect, reconnect --------------------------------------------------------
    def _connection_name(self) -> str:
        return f"pg_coord worker {self.queue}"

    def _use_columns(self, cac_cols: Optional[Sequence[str]], fac_cols: Optional[Sequence[str]]) -> None:
        """The one-commit statements, from the result columns the check
        found (checked_columns: None where the library cannot use it)."""
        use = self.use_complete_and_claim is not False
        self._has_cac, self._has_fac = cac_cols is not None and use, fac_cols is not None and use
        self._cac_sql = one_commit_sql("complete_and_claim", cac_cols, self.session_bound,
                                       self.host) if self._has_cac else None
        self._fac_sql = one_commit_sql("fail_and_claim", fac_cols, self.session_bound,
                                       self.host) if self._has_fac else None
        self._cac1_sql = one_commit_single_sql("complete_and_claim", cac_cols, self.session_bound,
                                               self.host) if self._has_cac else None
        self._fac1_sql = one_commit_single_sql("fail_and_claim", fac_cols, self.session_bound,
                                               self.host) if self._has_fac else None

    def _drop_holds(self) -> None:
        """After a drop: session-bound holds are gone; lease ones stay ours."""
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

    def _gives_up(self, e: CoordError, failures: int) -> bool:
        """Whether the failures-th failure in a row (e) ends run(): not the
        network's doing (retrying would not help), or max_reconnects spent."""
        return not isinstance(e, ConnectionLost) or (self.max_reconnects is not None
                                                     and failures > self.max_reconnects)

    def _reconnect_delay(self, e: CoordError, failures: int, backoff: float) -> float:
        delay = backoff * (0.5 + random.random())
        log.warning("pg_coord worker %s: %s; reconnecting in %.1f s (try %d)", self.name, e, delay, failures)
        return delay

    def _live(self) -> C:
        conn = self._conn
        if conn is None or conn.closed:
            raise ConnectionLost("the worker's connection is down", "08003")
        return conn

    # -- the loop's decisions --------------------------------------------------------
    def _want(self, now: float, stopping: bool, free: int) -> int:
        """How many jobs to claim: none when stopping or no slot is free, or
        while idle (until _idle_until or a NOTIFY)."""
        if not stopping and free > 0 and (self._notified or now >= self._idle_until):
            return min(self.batch, free)
        return 0

    def _claimed(self, want: int, more: bool, due: Optional[float]) -> None:
        """After a claim of up to want jobs: idle, when none came, until the
        next due time, a NOTIFY or the poll."""
        if want and not more:
            wait = self.poll_interval if due is None else max(0.05, min(self.poll_interval, due))
            self._idle_until = time.monotonic() + wait
            self._drained = due is None
        elif want:
            self._drained = False

    def _done(self, stopping: bool) -> bool:
        """Whether run() returns: stopping, or in burst mode the queue drained, and no job held."""
        return (stopping or (self.burst and self._drained)) and not self._held

    def _to_watch(self, now: float) -> List[J]:
        """The held jobs that run past watch_after and are not watched yet."""
        return [j for j in list(self._held.values())
                if not j._watched and j._started and now - j._started >= self.watch_after]

    def _to_heartbeat(self) -> List[J]:
        return [j for j in list(self._held.values()) if not j._lost]

    def _deadlines(self, now: float, next_heartbeat: float) -> List[float]:
        """When the loop must look again, besides claims: the next heartbeat
        (lease claims), and when held jobs are to be watched."""
        deadlines = [next_heartbeat if not self.session_bound else now + 3600]
        deadlines.extend(j._started + self.watch_after for j in self._held.values()
                         if not j._watched and j._started)
        return deadlines

    # -- finishing and claiming ------------------------------------------------------
    def _claim_params(self, n: int) -> List[Any]:
        return claim_params(self.queue, n, self.session_bound, self.lease, self.host)

    def _one_commit_statement(self, item: Tuple[J, Outcome], n: int) -> Tuple[str, List[Any], bool]:
        """coord.complete_and_claim / fail_and_claim's statement for the
        outcome and n jobs, its parameters, and whether it is the single one
        (one_commit_single_sql: rows of whether the finish counted and a
        job) rather than one_commit_sql's one row."""
        job, o = item
        complete = o.kind == "complete"
        params = finish_params(job, o)
        if not self.session_bound:
            params.append(self.lease)
        if self.host is not None:
            params.append(self.host)
        single = self._cac1_sql if complete else self._fac1_sql
        if n == 1 and single is not None:
            return single, params, True
        template = self._cac_sql if complete else self._fac_sql
        assert template is not None
        query = self._one_sql.get((template, n))
        if query is None:
            query = self._one_sql[(template, n)] = with_n(template, n)
        return query, params, False

    def _count(self, job: J, o: Outcome, counted: Optional[bool]) -> Optional[sql.Composed]:
        """Counts a reported outcome (counted None: counted by the caller);
        the UNLISTEN to send for a watched job (else None)."""
        if counted is None:
            pass
        elif not counted:
            log.warning("pg_coord worker %s: job %s: the claim was no longer ours (cancelled or lease lost); "
                        "its %s did not count", self.name, job.id, o.kind)
        elif o.kind == "complete":
            self.completed += 1
        else:
            self.failed += 1
        if job._watched and not self.pooler:
            return listen_sql([job_channel(job.id)], "UNLISTEN")
        return None

    def _refused(self, job: J, o: Outcome, e: psycopg.Error) -> Outcome:
        """A finish the server refused (a result over 1 MB, a retry_after over
        coord.max_retry_after, an in_commit statement's error): the job fails
        with the reason."""
        log.warning("pg_coord worker %s: job %s: its %s was refused: %s", self.name, job.id, o.kind, e)
        return Outcome("fail", error=f"{o.kind} refused: {error_text(e)}")

    # -- watching, heartbeats, notifications ----------------------------------------
    def _heartbeat_params(self, jobs: List[J]) -> Tuple[Any, ...]:
        return (None if self.session_bound else self.lease, [j.id for j in jobs], [j.token for j in jobs])

    def _heartbeaten(self, jobs: List[J], rows: List[Tuple[Any, ...]]) -> None:
        """HEARTBEAT_SQL's rows: a NULL answer (cancelled, claim lost) sets job.cancelled."""
        alive = {r[0]: r[1] for r in rows}
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
