"""What the sync and the asyncio flavours share: the SQL they send, the
checks of enqueue's options, the extension check, and the data classes."""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from .errors import ExtensionMissing, VersionMismatch

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
    if not one_commit_usable(columns):
        return None
    assert columns is not None
    counted = next(c for c in COUNTED_NAMES if c in columns)
    # a boolean column says it; a state column is NULL when the finish did not count
    counted_expr = f'"{counted}"' if counted in ("completed", "counted", "ok", "done") else f'"{counted}" IS NOT NULL'
    counted_expr = f"pg_catalog.bool_and({counted_expr})"
    finish = ("%s, %s, %s::jsonb" if function == "complete_and_claim"
              else "%s, %s, %s::text, %s::interval, pause_key => %s")
    args = [finish, "n => {n}", "session_bound => true" if session_bound else "lease => %s::interval"]
    if host is not None:
        args.append("host => %s")
    return (f"SELECT {counted_expr}, {CLAIM_AGG} FILTER (WHERE id IS NOT NULL)"
            f" FROM coord.{function}({', '.join(args)})")


def one_commit_single_sql(function: str, columns: Optional[Sequence[str]], session_bound: bool,
                          host: Optional[str]) -> Optional[str]:
    """one_commit_sql's statement claiming one job, the concurrency=1
    worker's every statement: no aggregate (json_agg's Agg node cost the
    server more per job than the rest of the statement's output), still two
    values a row for psycopg to load (nine plain columns cost the client as
    much). Rows of whether the finish counted, then the job as one JSON array
    of CLAIM_COLUMNS (its id null when none was claimed)."""
    if not one_commit_usable(columns):
        return None
    assert columns is not None
    counted = next(c for c in COUNTED_NAMES if c in columns)
    counted_expr = f'"{counted}"' if counted in ("completed", "counted", "ok", "done") else f'"{counted}" IS NOT NULL'
    finish = ("%s, %s, %s::jsonb" if function == "complete_and_claim"
              else "%s, %s, %s::text, %s::interval, pause_key => %s")
    args = [finish, "n => 1", "session_bound => true" if session_bound else "lease => %s::interval"]
    if host is not None:
        args.append("host => %s")
    return (f"SELECT {counted_expr}, pg_catalog.json_build_array({CLAIM_COLUMNS})"
            f" FROM coord.{function}({', '.join(args)})")

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
