"""Typed exceptions: every database error the library meets is raised as a
CoordError (or a subclass) carrying the SQLSTATE and the server's message,
never as a bare psycopg error."""
from __future__ import annotations

from typing import Optional

import psycopg

__all__ = [
    "CoordError",
    "PermissionDenied",
    "ExtensionMissing",
    "VersionMismatch",
    "ConnectionLost",
    "CoordTimeout",
    "ClaimLost",
    "RetryAfter",
    "translate",
]


class CoordError(Exception):
    """A pg_coord call failed. ``sqlstate`` is the five-character SQLSTATE
    (None only when no server answered at all), ``message`` the server's
    primary message; ``detail`` and ``hint`` its other fields, if any."""

    def __init__(self, message: str, sqlstate: Optional[str] = None,
                 detail: Optional[str] = None, hint: Optional[str] = None) -> None:
        super().__init__(f"{sqlstate}: {message}" if sqlstate else message)
        self.message = message
        self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint


class PermissionDenied(CoordError):
    """SQLSTATE 42501: the role lacks a privilege (grant it coord_worker,
    coord_monitor or coord_admin, see docs/operations/roles.md)."""


class ExtensionMissing(CoordError):
    """pg_coord is not installed in the database (SQLSTATE 42704 when the
    library's own check finds no pg_extension row; 3F000 when a call found
    no schema coord)."""


class VersionMismatch(CoordError):
    """The installed extension is older than this library needs (SQLSTATE
    0A000, raised by the library's check at connect; or 42883 when a call
    found a coord function missing).  installed is its version (None when
    only the missing function told), minimum the oldest this library takes."""

    def __init__(self, message: str, installed: Optional[str], minimum: str,
                 sqlstate: str = "0A000", detail: Optional[str] = None) -> None:
        super().__init__(message, sqlstate, detail,
                         hint="ALTER EXTENSION pg_coord UPDATE, or use the client of that version")
        self.installed = installed
        self.minimum = minimum


class ConnectionLost(CoordError):
    """The connection dropped (a class 08 or 57P0x SQLSTATE, or 08006 when
    the socket just closed). Session-scoped things went with it: session
    locks, permits, leadership, session-bound claims."""


class CoordTimeout(CoordError, TimeoutError):
    """A lock, permit, election or lease was not had within the timeout."""


class ClaimLost(CoordError):
    """The job's claim is no longer the caller's (its lease passed and the
    job was claimed again, or it was cancelled): nothing it reports counts."""


class RetryAfter(Exception):
    """Raise from a handler to snooze the job: ``coord.fail(id, token, error,
    retry_after => seconds, pause_key => pause_key)``. Uses up no attempt
    (it counts a snooze); with ``pause_key`` the job's limit_key is paused for
    every worker (the HTTP 429 case)."""

    def __init__(self, seconds: float, pause_key: bool = False, message: Optional[str] = None) -> None:
        super().__init__(message or f"retry after {seconds:g} s")
        self.seconds = float(seconds)
        self.pause_key = bool(pause_key)


_LOST_STATES = ("57P01", "57P02", "57P03")
_LOST_MESSAGES = (("terminating connection due to administrator command", "57P01"),
                  ("terminating connection due to crash of another server process", "57P02"),
                  ("the database system is shutting down", "57P03"))


def translate(exc: BaseException) -> CoordError:
    """The typed exception for a psycopg error (or a CoordError unchanged)."""
    if isinstance(exc, CoordError):
        return exc
    if not isinstance(exc, psycopg.Error):
        return CoordError(str(exc))
    diag = exc.diag
    sqlstate = exc.sqlstate or diag.sqlstate
    message = diag.message_primary or str(exc).strip() or type(exc).__name__
    detail, hint = diag.message_detail, diag.message_hint
    if sqlstate == "42501":
        return PermissionDenied(message, sqlstate, detail, hint)
    if sqlstate == "3F000" and "coord" in message:
        return ExtensionMissing(message, sqlstate, detail, hint)
    if sqlstate == "42883" and "coord." in message:
        # the schema is there, one of its functions is not: an older pg_coord
        from ._common import MIN_VERSION
        return VersionMismatch(message, None, MIN_VERSION, sqlstate, detail)
    if (sqlstate and (sqlstate.startswith("08") or sqlstate in _LOST_STATES)) or (
            sqlstate is None and isinstance(exc, psycopg.OperationalError)):
        if sqlstate is None:
            # libpq's text: "consuming input failed: <the server's message>\nserver closed ..."
            message = message.strip().splitlines()[0] if message.strip() else message
            for prefix in ("consuming input failed: ", "sending query failed: ", "sending query and params failed: "):
                if message.startswith(prefix):
                    message = message[len(prefix):]
            for text, state in _LOST_MESSAGES:
                if text in message:
                    sqlstate = state
        return ConnectionLost(message, sqlstate or "08006", detail, hint)
    if sqlstate is None and isinstance(exc, psycopg.InterfaceError) and "closed" in message:
        return ConnectionLost(message, "08003", detail, hint)
    return CoordError(message, sqlstate, detail, hint)
