"""What the sync and the asyncio flavours share: the SQL they send, the
checks of enqueue's options, the extension check, and the data classes."""
from __future__ import annotations

import datetime
import json
import os
import socket
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from psycopg import sql
from psycopg.types.json import Jsonb

from .errors import ExtensionMissing, VersionMismatch

# Extension versions this library speaks to (pg_extension.extversion).
SUPPORTED_VERSIONS: Tuple[str, ...] = ("0.4.0",)

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
}

CHECK_SQL = (
    "SELECT (SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'pg_coord'),"
    " EXISTS (SELECT FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
    "         WHERE n.nspname = 'coord' AND p.proname = 'complete_and_claim'),"
    " EXISTS (SELECT FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace"
    "         WHERE n.nspname = 'coord' AND p.proname = 'fail_and_claim'),"
    " pg_catalog.current_database()"
)

CLAIM_COLUMNS = "id, queue, payload, attempt, token, lease_until, key, group_key, host, run_at"


def interval(value: Optional[Seconds]) -> Optional[datetime.timedelta]:
    """Seconds (or a timedelta) as a timedelta, psycopg's interval."""
    if value is None or isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(seconds=float(value))


def seconds(value: Seconds) -> float:
    return value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)


def check_extension(row: Optional[Tuple[Any, ...]],
                    supported: Sequence[str] = SUPPORTED_VERSIONS) -> Tuple[bool, bool]:
    """Raises unless pg_coord is installed at a supported version; returns
    whether coord.complete_and_claim and coord.fail_and_claim exist."""
    assert row is not None
    version, has_cac, has_fac, db = row
    if version is None:
        raise ExtensionMissing(f"extension pg_coord is not installed in database {db}", "42704",
                               hint="CREATE EXTENSION pg_coord (as a superuser); see docs/install.md")
    if version not in supported:
        raise VersionMismatch(
            f"pg_coord {version} is installed in database {db}; this library supports "
            f"{', '.join(supported)}", version, tuple(supported))
    return bool(has_cac), bool(has_fac)


def enqueue_query(queue: str, payload: Any, options: Mapping[str, Any]) -> Tuple[sql.Composed, List[Any]]:
    """``SELECT coord.enqueue(...)`` with named arguments for the options given."""
    parts: List[sql.Composable] = [sql.SQL("%s::text")]
    params: List[Any] = [queue]
    if payload is not None:
        parts.append(sql.SQL("%s::jsonb"))
        params.append(Jsonb(payload))
    for name, value in options.items():
        cast = ENQUEUE_OPTIONS.get(name)
        if cast is None:
            raise TypeError(f"enqueue() got an unknown option {name!r}; "
                            f"known: {', '.join(ENQUEUE_OPTIONS)}")
        if value is None:
            continue
        if cast == "timestamptz" and isinstance(value, (int, float, datetime.timedelta)):
            # a delay from now, on the server's clock
            parts.append(sql.SQL("{} => pg_catalog.now() + %s::interval").format(sql.Identifier(name)))
            params.append(interval(value))
            continue
        parts.append(sql.SQL("{} => %s::" + cast).format(sql.Identifier(name)))
        params.append(list(value) if cast == "bigint[]" else value)
    return sql.SQL("SELECT coord.enqueue({})").format(sql.SQL(", ").join(parts)), params


def encode_result(value: Any) -> Optional[Jsonb]:
    """A handler's result as jsonb (None: SQL NULL); raises TypeError when it
    is not JSON-able, before anything is sent."""
    if value is None:
        return None
    json.dumps(value)
    return Jsonb(value)


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
