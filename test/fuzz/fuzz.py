"""Fuzz target: every coord.* function, called with random and hostile
arguments, on the private cluster test/fuzz/fuzz.sh starts.

The functions are discovered from pg_proc at run time (name, argument types
and names, defaults, variadic), so a function added later is covered without
touching this file.  Worker threads, one connection each, share a budget of
calls; two of them are superusers in the UTF-8 database, one is an ordinary
role, and one works in a SQL_ASCII database where text may carry bytes that
are not UTF-8.  Locks, requests and claims taken by one are wanted by the
others, so calls block on each other; statement_timeout and lock_timeout
bound every wait.

Calls come as: a sweep (each catalogued hostile value of each argument with
the other arguments valid), random calls (all arguments valid, all but one,
or each one anything; by position, by name, defaults left out), calls in
transactions with savepoints ending in ROLLBACK, COMMIT or PREPARE
TRANSACTION, in PL/pgSQL exception blocks, several in one statement, through
cursors, and around them SET of the coord.* settings, DISCARD ALL and
pg_advisory_unlock_all().

One more connection is a role that is only a member of coord_worker, with a
hostile search_path: its own schema first, holding look-alikes of the
functions and operators pg_coord's statements use, and temporary domains
named after catalog types (jsonb, text, int8, timestamptz, interval, ...)
whose CHECK calls a trap.  The trap records current_user in a table and,
when it runs as anyone but that role, warns and tries ALTER ROLE ...
SUPERUSER.  At the end nothing may have run as another role, and the role
must have gained no attribute or membership.  Some calls of every
connection go through a PARALLEL SAFE wrapper under force_parallel_mode, so
that they run in a parallel worker: there every function that changes
state or takes locks must refuse with 25000 (never succeed, never XX000).

Every call ends in success or an ERROR with a SQLSTATE.  A failure is:
  - an ERROR of class XX (internal error: elog, can't-happen paths),
  - a broken expectation: a writer that did not refuse parallel mode; an
    array argument with a NULL element that was not refused with class 22
    (coord.grid: 22004); a trap that ran as another role,
  - a lost connection (backend crash, server restart),
  - a statement that outlives statement_timeout by far and ignores cancel.
The wrapper also searches the server log for crashes and assertion failures.

Environment: FUZZ_CALLS (budget), FUZZ_SEED, FUZZ_DB, FUZZ_ASCII_DB (empty:
none), FUZZ_THREADS, FUZZ_STATEMENT_TIMEOUT, FUZZ_LOCK_TIMEOUT, FUZZ_HANG
(seconds before a statement counts as hung), FUZZ_SECONDS (time cap),
FUZZ_FAILFILE (where failing statements are written in full), FUZZ_VERBOSE,
FUZZ_SWEEP_SHARE (share of calls taken from the sweep while it lasts).
Also: fuzz.py scan-valgrind DIR  (reports of valgrind logs with pg_coord frames).
"""
import collections
import os
import random
import re
import sys
import threading
import time

import psycopg2
import psycopg2.errorcodes
import psycopg2.extensions

# Results and messages of the SQL_ASCII database may hold any byte.
psycopg2.extensions.encodings["SQL_ASCII"] = "latin-1"
# Results stay text, except integers and booleans: Python's datetime has no
# year 4713 BC or infinity, and json.loads no 10,000 levels of nesting.
_RAW = psycopg2.extensions.new_type((114, 3802, 1082, 1083, 1114, 1184, 1186, 1266, 1700),
                                    "FUZZ_RAW", lambda v, cur: v)
psycopg2.extensions.register_type(_RAW)
psycopg2.extensions.register_type(psycopg2.extensions.new_array_type(
    (199, 3807, 1182, 1183, 1115, 1185, 1187, 1270, 1231), "FUZZ_RAW_ARRAY", _RAW))

ENV = os.environ
BUDGET = int(ENV.get("FUZZ_CALLS", "20000"))
SEED = int(ENV.get("FUZZ_SEED") or random.SystemRandom().randrange(1, 10**9))
DB = ENV.get("FUZZ_DB", "fuzzdb")
ASCII_DB = ENV.get("FUZZ_ASCII_DB", "fuzzdb_ascii")
THREADS = int(ENV.get("FUZZ_THREADS", "4"))
STMT_TIMEOUT = ENV.get("FUZZ_STATEMENT_TIMEOUT", "5s")
LOCK_TIMEOUT = ENV.get("FUZZ_LOCK_TIMEOUT", "2s")
HANG = float(ENV.get("FUZZ_HANG", "30"))
SECONDS = float(ENV.get("FUZZ_SECONDS", "0"))
FAILFILE = ENV.get("FUZZ_FAILFILE", f"/tmp/pg_coord-fuzz-failures-{SEED}.sql")
VERBOSE = ENV.get("FUZZ_VERBOSE", "") not in ("", "0")
ROLE = "coord_fuzz"           # the ordinary (non-superuser) role
HOSTILE = "coord_fuzz_hostile"  # only a member of coord_worker, with a hostile search_path
HOSTILE_SCHEMA = "fz_hostile"
TRAP_TABLE = "public.coord_fuzz_trap"
# catalog types the statement texts use; each gets a temporary domain in the hostile session
TRAP_TYPES = ["jsonb", "json", "text", "int8", "int4", "int2", "bool", "timestamptz", "timestamp",
              "interval", "float8", "numeric", "name", "oid", "varchar", "bytea", "inet", "regclass",
              "tid", "xid", "char"]
# look-alike operators: (name, left type, right type, result type)
TRAP_OPERATORS = [(op, t, t, "bool") for op in ("=", "<>", "<", "<=", ">", ">=")
                  for t in ("int8", "int4", "text", "timestamptz", "interval", "jsonb", "bool")] + [
    ("+", "timestamptz", "interval", "timestamptz"), ("-", "timestamptz", "interval", "timestamptz"),
    ("-", "timestamptz", "timestamptz", "interval"), ("+", "int8", "int8", "int8"),
    ("+", "int4", "int4", "int4"), ("-", "int8", "int8", "int8"), ("*", "interval", "float8", "interval"),
    ("||", "text", "text", "text"), ("->>", "jsonb", "text", "text"), ("->", "jsonb", "text", "jsonb"),
    ("?", "jsonb", "text", "bool"), ("@>", "jsonb", "jsonb", "bool"), ("||", "jsonb", "jsonb", "jsonb")]
# look-alike functions: (name, argument types, result type)
TRAP_FUNCTIONS = [("now", [], "timestamptz"), ("clock_timestamp", [], "timestamptz"),
                  ("statement_timestamp", [], "timestamptz"), ("transaction_timestamp", [], "timestamptz"),
                  ("pg_backend_pid", [], "int4"), ("length", ["text"], "int4"), ("lower", ["text"], "text"),
                  ("upper", ["text"], "text"), ("left", ["text", "int4"], "text"),
                  ("concat", ["text", "text"], "text"), ("format", ["text"], "text"),
                  ("to_jsonb", ["text"], "jsonb"), ("jsonb_build_object", ["text", "text"], "jsonb"),
                  ("jsonb_typeof", ["jsonb"], "text"),
                  ("hashtext", ["text"], "int4"), ("date_trunc", ["text", "timestamptz"], "timestamptz"),
                  ("txid_current", [], "int8"), ("pg_current_xact_id", [], "xid8"),
                  ("current_setting", ["text"], "text"), ("set_config", ["text", "text", "bool"], "text"),
                  ("pg_notify", ["text", "text"], "void"), ("nextval", ["regclass"], "int8"),
                  ("abs", ["int8"], "int8"), ("array_length", ["anyarray", "int4"], "int4"),
                  ("cardinality", ["anyarray"], "int4")]
# PARALLEL UNSAFE functions that are no writers (grid; the internals of coord.claim,
# which refuse any call from outside its statement with 55000); every other
# PARALLEL UNSAFE function changes state or takes locks and must refuse parallel mode
PARALLEL_READERS = {"grid", "claim_free", "claim_take"}
# Share of the calls that go through the sweep (each catalogued hostile value
# of each argument, the other arguments valid) until it is exhausted.
SWEEP_SHARE = float(ENV.get("FUZZ_SWEEP_SHARE", "0.5"))

MB = 1024 * 1024


# ----------------------------------------------------------------- literals

class Sql(bytes):
    """A ready SQL fragment (an expression), not a value to quote."""


def lit(v):
    """A string or bytes value as a SQL string literal (standard_conforming_strings)."""
    if isinstance(v, str):
        v = v.encode("utf-8", "surrogatepass")
    v = v.replace(b"\x00", b"")          # libpq strings end at NUL
    return b"'" + v.replace(b"'", b"''") + b"'"


def cast(expr, typ):
    return b"CAST(" + expr + b" AS " + typ.encode() + b")"


def render(v, typ, r):
    """v: None, str, bytes, int, bool, Sql, or list (array).  Returns SQL bytes."""
    if isinstance(v, Sql):
        e = bytes(v)
    elif v is None:
        e = b"NULL"
    elif isinstance(v, bool):
        e = b"true" if v else b"false"
    elif isinstance(v, int):
        e = lit(str(v))
    elif isinstance(v, list):
        e = lit(array_text(v))
    else:
        e = lit(v)
    if r.random() < 0.02 and not isinstance(v, Sql):
        return e                          # untyped: let overload resolution try
    return cast(e, typ)


def array_text(items):
    """Python list (nested lists for more dimensions) -> array literal, as bytes."""
    out = []
    for x in items:
        if isinstance(x, list):
            out.append(array_text(x))
        elif x is None:
            out.append(b"NULL")
        else:
            if isinstance(x, bool):
                x = "true" if x else "false"
            if not isinstance(x, bytes):
                x = str(x).encode("utf-8", "surrogatepass")
            out.append(b'"' + x.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"')
    return b"{" + b",".join(out) + b"}"


# -------------------------------------------------------------- generators

C0 = [chr(c) for c in range(1, 32)] + ["\x7f"]
C1 = [chr(c) for c in range(0x80, 0xA0)]
ODD = ["\u00a0", "\u200b", "\u202e", "\ufeff", "\uffff", "\u2028", "e\u0301", "é", "ß",
       "😀", "🚀", "\U0010ffff", "\u0301", "Ω"]
BAD_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\xc0\xaf", b"\xe0\x80\xaf", b"\x80", b"\xbf",
            b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xc3\x28"]
INJECT = ["'; DROP TABLE coord.job; --", "\\", "\\\\", "'", "''", '"', "%s%n%x%p", "$1",
          "${x}", "$$", "$fz$", "*", "?", "%", "_", "\\x00", "\\u0000", "NULL", "null",
          "DEFAULT", "E'\\xff'", "');SELECT pg_sleep(10);--", "<script>", "{", "}", "[", "]",
          "{\"a\":1}", "a,b", "{a,b}", "(", ")", "\\N"]


RAW_USED = threading.Event()   # good enough as a flag: only the SQL_ASCII worker resets and reads it


class Ctx:
    """Per-thread generation state (the values seen so far are shared)."""

    def __init__(self, r, ascii_db):
        self.r = r
        self.ascii = ascii_db
        self.small = False           # inside an array: no megabyte elements
        self.valid = False           # this argument: a value the function should accept
        self.held = []               # paths this session holds (session locks it got)
        self.owned = []              # request keys this session owns
        self.pairs = []              # (job id, token) pairs for this call
        self.args = {}               # argument name -> Python value, for the call being built


class Pools:
    """Values that reach deeper code: ids and tokens the server handed out."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ids = [1, 2, 3]
        self.tokens = [1, 2]
        self.fence_tokens = [1]
        self.pids = [0, 1]
        self.pairs = [(1, 1)]
        self.batches = [1]

    def add(self, name, v, cap=200):
        if v is None:
            return
        with self.lock:
            lst = getattr(self, name)
            lst.append(v)
            if len(lst) > cap:
                del lst[: len(lst) - cap]

    def pick(self, name, r):
        with self.lock:
            lst = getattr(self, name)
            return r.choice(lst) if lst else 0


POOLS = Pools()

SEGS = ["a", "b", "c"]


def valid_path(r):
    return "/f/" + "/".join(r.choice(SEGS) for _ in range(r.randint(1, 3)))


def raw(r, prefix=b"/"):
    """A byte string that is not valid UTF-8 (only the SQL_ASCII database takes it)."""
    RAW_USED.set()
    b = prefix + r.choice([b"a", b"f/", b""]) + r.choice(BAD_UTF8)
    if r.random() < 0.3:
        b += bytes(r.randrange(0x80, 0x100) for _ in range(r.randint(1, 40)))
    if r.random() < 0.1:
        b = prefix + b"\xff" * r.choice([1023, 1024, 2048, 5000])
    return b


def hostile_text(c):
    r = c.r
    x = r.random()
    if x < 0.05:
        return None
    if x < 0.09:
        return r.choice(["", " ", "  ", "\t", "\n"])
    if x < 0.13:
        return r.choice(C0) + r.choice(["", "a", "/a"]) + r.choice(C0 + C1)
    if x < 0.18:
        return r.choice(INJECT)
    if x < 0.24:
        return "".join(r.choice(ODD) for _ in range(r.randint(1, 8)))
    if x < 0.27 and not c.small:
        # long and huge, sent from here or built by the server
        n = r.choice([255, 256, 1023, 1024, 1025, 2047, 2048, 2049, 8192, 65536, MB, MB + 1])
        if r.random() < 0.5:
            return Sql(b"repeat(" + lit(r.choice("ax/é")) + b", %d)" % n)
        return r.choice("ax") * n
    if x < 0.30:
        # invalid UTF-8: in the UTF-8 database only through the server (22021)
        if c.ascii:
            return raw(r, b"")
        return Sql(b"convert_from(decode(" + lit(r.choice(["ff", "c0af", "80", "eda080", "f4908080"])) +
                   b", 'hex'), 'UTF8')")
    if x < 0.33:
        # not invalid, but bytes >= 0x80 decoded as LATIN1 (C1 controls and more)
        return Sql(b"convert_from(decode(" + lit(r.choice(["ff", "80", "9f", "85", "a0", "c0af"])) +
                   b", 'hex'), 'LATIN1')")
    if x < 0.36 and c.ascii:
        return raw(r, b"")
    if x < 0.40:
        return r.choice(CRONS_BAD + CRONS_OK)
    if x < 0.45:
        return pick(c, HOSTILE_PATHS)
    return "".join(r.choice("abcxyz0123-_.:/ ") for _ in range(r.randint(1, 12)))


def pick(c, lst):
    """A random element; inside arrays (c.small) none of the huge ones."""
    for _ in range(10):
        v = c.r.choice(lst)
        if not c.small or v is None or len(v) < 70000:
            return v
    return lst[0]


def hostile_paths_list():
    return [
        "", " ", "/", "//", "///", "a//b", "/a//b", "/a/", "/f/a/", "../", "/..", "/.", "/a/./b",
        "/a/../b", "/...", "/a/...", "a", "a/b", "\\a", "/a\\b", "/a b", "/ ", "/\t", "/a\nb",
        "/\x7f", "/\u0085", "/\u009f", "/\u00a0", "/😀", "/😀/🚀", "/\u200b", "/\u202e", "/\ufeff",
        "/\uffff", "/é", "/e\u0301", "/'", '/"', "/a'; DROP TABLE coord.job; --", "/%s%n%x",
        "/${x}", "/*", "/?", " /a", "/a ",
        "/" + "a" * 1023, "/" + "a" * 1024, "/" + "a" * 1021 + "é", "/" + "a" * 1022 + "é",
        "/" + "a" * 1020 + "😀", "/" + "a" * 1021 + "😀",
        "/x" * 63 + "/y", "/x" * 64, "/x" * 65, "/x" * 1000, "/" * 1024, "/" + "a" * MB,
        "/a" * 512, "/a" * 513, "/a/" + "b/" * 62 + "c", "/" + "/".join(["é"] * 64),
        "/f", "/f/a", "/f/a/b/c/d", "/F/A", "/a/" + "\u00ad",
    ] + ["/" + ch for ch in C0] + ["/a/" + ch for ch in C1] + ["/a" + ch + "b" for ch in C0[::5]]


HOSTILE_PATHS = hostile_paths_list()
HOSTILE_KEYS = ["", " ", "x" * 1024, "x" * 1025, "x" * 2047, "x" * 2048, "x" * 2049,
                "é" * 1024, "x" * 2047 + "é", "x" * 2046 + "é", "😀" * 512, "k\x01",
                "k\n", "k\x7f", "k\u0085", "k'", "k\\", "/f/a", "x" * MB]
HOSTILE_NAMES = ["", " ", "q" * 48, "q" * 49, "é" * 24, "é" * 25, "q q", "q/é", "..", ".",
                 "/", ":", "-", "_", "Q-_.:/", "q\n", "q\x00x", "q'", "q%", "q*", "Ω",
                 "q" * MB, "q\t", "q\x7f", "😀"]


def path_gen(c):
    r = c.r
    x = r.random()
    if x < 0.55:
        return valid_path(r)
    if x < 0.62 and c.ascii:
        return raw(r)
    if x < 0.85:
        return pick(c, HOSTILE_PATHS)
    return hostile_text(c)


def key_gen(c):
    r = c.r
    x = r.random()
    if x < 0.55:
        return r.choice(["k0", "k1", "k2", "k3", "https://example.org/p/1", "md5:" + "0" * 32])
    if x < 0.6 and c.ascii:
        return raw(r, b"k")
    if x < 0.8:
        return pick(c, HOSTILE_KEYS)
    return hostile_text(c)


def name_gen(c):
    """Queue and host names: 1-48 bytes of letters, digits and _ - . : /."""
    r = c.r
    x = r.random()
    if x < 0.6:
        return r.choice(["q0", "q1", "q2", "apps", "events", "h0", "h1", "a-b.c:d/e_f"])
    if x < 0.65 and c.ascii:
        return raw(r, b"q")
    if x < 0.85:
        return pick(c, HOSTILE_NAMES)
    return hostile_text(c)


def sname_gen(c):
    """Schedule and app names."""
    r = c.r
    if r.random() < 0.6:
        return r.choice(["s0", "s1", "s2", "a0", "a1", "a2", "nightly"])
    return r.choice([key_gen(c), name_gen(c), hostile_text(c)])


CRONS_OK = ["* * * * *", "*/5 * * * *", "30 2 * * mon-fri", "0 0 1 1 *", "59 23 31 12 *",
            "0 0 29 2 *", "0 0 30 2 *", "0 0 31 2 *", "0 0 31 4,6,9,11 *", "@hourly", "@daily",
            "@weekly", "@monthly", "@yearly", "@annually", "0 0 * * 0", "0 0 * * 7", "0 0 13 * fri",
            "0-59/7 0-23/5 1-31/3 1-12/2 0-6/4", "*/1 */1 */1 */1 */1", "0 0 1 jan-dec/3 *",
            "0 0 * * sun-sat", "5,10,15 1-3 * * *", "0 0 29 2 mon", "0 12 * * MON", "0 0 1 JAN *",
            " * * * * * ", "*\t*\t*\t*\t*", "0 0 31 * *"]
CRONS_BAD = ["61 * * * *", "60 * * * *", "*/0 * * * *", "*/-1 * * * *", "@reboot", "@every 5m",
             "@", "@@hourly", "", " ", "* * * *", "* * * * * *", "* * * * * * *",
             " ".join(["*"] * 1000), "1-0 * * * *", "5-1 * * * *", "0-59/60 * * * *",
             "*/100000000000 * * * *", "99999999999999999999 * * * *", "-1 * * * *",
             "1,,2 * * * *", ",* * * * *", "*, * * * *", "* * 0 * *", "* * 32 * *", "* * * 13 *",
             "* * * 0 *", "* * * * 8", "* * * * -1", "a b c d e", "* * * * mon-", "* * * * -mon",
             "L * * * *", "? * * * *", "0/5 * * * *", "5/0 * * * *", "1-2-3 * * * *",
             "2147483648 * * * *", "4294967296 * * * *", "0000000000000000000000001 * * * *",
             ",".join(str(i) for i in range(60)) * 50 + " * * * *", "* * * * *\n", "*\x00 * * * *",
             "* * * janu *", "* * * * monday", "* * * jan-feb-mar *", "*/ * * * *", "/5 * * * *",
             "1- * * * *", "-5 * * * *", "* * * * 0-7", "* * * * 7-0", "0 0 30-31 2 *",
             "*/2147483647 * * * *", "0 0 1-31/2147483647 * *", "*-* * * * *", "**/5 * * * *",
             "0 0 ** * *", "é * * * *", "\u0660 * * * *", "１ * * * *", "  ", "@hourly x",
             "0 0 1 1 * 2026"]


def cron_gen(c):
    r = c.r
    x = r.random()
    if x < 0.35:
        return r.choice(CRONS_OK)
    if x < 0.85:
        return r.choice(CRONS_BAD)
    if x < 0.95:
        # random five fields from the grammar's pieces
        def field():
            p = r.choice(["*", str(r.randint(-2, 70)), "%d-%d" % (r.randint(-1, 60), r.randint(-1, 60)),
                          "*/%d" % r.randint(-1, 100), "%d/%d" % (r.randint(0, 60), r.randint(0, 9)),
                          r.choice(["jan", "dec", "sun", "sat", "mon-fri", "feb-jan"])])
            if r.random() < 0.2:
                p += "," + field()
            return p
        return " ".join(field() for _ in range(r.choice([5, 5, 5, 4, 6])))
    return hostile_text(c)


def starts_gen(c):
    r = c.r
    if r.random() < 0.6:
        return r.choice(["hourly", "daily", "weekly", "monthly", "yearly", None])
    return r.choice(["Hourly", "HOURLY", "minutely", "", " hourly", "hourly ", "@hourly", "0 * * * *",
                     "secondly", "quarterly", hostile_text(c)])


INTERVALS_OK = ["0", "1 microsecond", "10 milliseconds", "9 milliseconds", "9999 microseconds",
                "1 second", "2 seconds", "5 seconds", "1 minute", "1 hour", "1 day", "7 days",
                "30 days", "1 month", "1 year", "-1 second", "-1 microsecond", "-1 day", "-5 minutes",
                "1 month -30 days", "-1 month 31 days", "1 day -86400 seconds", "1000000 years",
                "-1000000 years", "178000000 years", "-178000000 years", "2147483647 days",
                "-2147483648 days", "2147483647 months", "-2147483648 months", "2562047788 hours",
                "-2562047788 hours", "@ 1 minute ago", "P1Y2M3DT4H5M6S", "PT0.000001S",
                "00:00:00.000001", "-00:00:00.000001", "0.5 seconds", "1e-6 seconds",
                "178000000 years 2147483647 days 2562047788:00:54.775807",
                "-178000000 years -2147483648 days -2562047788:00:54.775808", "100 years",
                "24 hours", "0.001 ms", "1 week", "9223372036854 milliseconds"]
INTERVALS_BAD = ["infinity", "-infinity", "NaN", "", "abc", "1e300 seconds", "9999999999 years",
                 "178000000 years 12 months", "2147483648 days", "1 fortnight", "5", "-", "P", "@"]


def interval_gen(c):
    r = c.r
    x = r.random()
    if x < 0.12:
        return None
    if x < 0.25:
        return r.choice(["1 second", "100 milliseconds", "0", "1 minute", "5 minutes"])
    if x < 0.85:
        return r.choice(INTERVALS_OK)
    if x < 0.95:
        return r.choice(INTERVALS_BAD)
    return Sql(r.choice([b"make_interval(secs => 1e-7)", b"'1 month'::interval * 2147483647",
                         b"'-1 microsecond'::interval * 1e18", b"justify_hours('-1 hour'::interval)",
                         b"clock_timestamp() - now()"]))


TIMES = ["infinity", "-infinity", "4713-01-01 00:00:00+00 BC", "4714-11-24 00:00:00+00 BC",
         "294276-12-31 23:59:59.999999+00", "294276-12-31 23:00:00+00", "294277-01-01", "epoch",
         "now", "today", "tomorrow", "yesterday", "2000-02-29", "1999-12-31 23:59:59.999999",
         "2026-03-08 02:30 America/New_York", "2026-10-25 01:30 Europe/Berlin", "1970-01-01",
         "0001-01-01", "10000-01-01", "2038-01-19 03:14:08+00", "", "garbage", "2026-02-30",
         "2026-12-31 23:59:60", "J2451187", "allballs"]


def time_gen(c):
    r = c.r
    x = r.random()
    if x < 0.12:
        return None
    if x < 0.45:
        return Sql(r.choice([b"now()", b"now() + '1 second'", b"now() - '1 hour'::interval",
                             b"now() + '100 years'", b"now() - '1 day'", b"clock_timestamp()",
                             b"now() + '1 minute'", b"now() - '10 years'::interval",
                             b"date_trunc('hour', now())", b"date_trunc('month', now())"]))
    return r.choice(TIMES)


INTS = [0, 1, -1, 2, 3, 10, 100, 1000, 65535, MB, 2147483647, -2147483648, 2147483646, -2147483647]
BIGS = [0, 1, -1, 2, 2147483647, 2147483648, -2147483649, 9223372036854775807,
        -9223372036854775808, 9223372036854775806, 4294967296]


def int_gen(c, name, typ):
    r = c.r
    x = r.random()
    if x < 0.08:
        return None
    if x < 0.11:
        return r.choice(["2147483648", "-2147483649", "9223372036854775808", "1e3", "0x10", " 1 ",
                         "one", "", "NaN", "1.5"])            # rejected on input
    if name == "pid" and x < 0.6:
        return POOLS.pick("pids", r)
    if name in ("id", "ids") and x < 0.7:
        return POOLS.pick("ids", r)
    if name in ("token", "tokens") and x < 0.7:
        return POOLS.pick("fence_tokens" if r.random() < 0.3 else "tokens", r)
    if name == "n" and x < 0.7:
        return r.choice([1, 1, 2, 5, 10, 100, 0, -1])
    if name in ("partition", "partitions") and x < 0.7:
        return r.choice([0, 1, 2, 3, -1, 7])
    if name == "max_attempts" and x < 0.6:
        return r.choice([1, 2, 3, 25, 0, -1])
    if typ == "bigint":
        return r.choice(BIGS + INTS) if x < 0.75 else r.randint(-2**63, 2**63 - 1)
    if typ == "smallint":
        return r.choice([0, 1, -1, 32767, -32768, 32768])
    return r.choice(INTS) if x < 0.8 else r.randint(-2**31, 2**31 - 1)


JSON_OK = ["{}", "[]", "null", "1", "-0", "1e308", "\"s\"", "true", "{\"a\": 1}", "{\"to\": \"a@example.org\"}",
           "{\"n\": 1, \"n\": 2}", "{\"\": \"\"}", "[1, [2, [3]]]", "{\"a\": null}", "\"\\u00e9\"",
           "123456789012345678901234567890", "{\"event\": \"heartbeat\"}", "{\"k\": \"é😀\"}",
           "{\"__proto__\": 1}", "{\"a0\": \"hourly\"}", "{\"a0\": \"daily\", \"a1\": \"hourly\"}",
           "{\"a0\": \"bogus\"}", "{\"a0\": 1}", "{\"\": \"hourly\"}", "[\"a0\"]", "{\"s0\": \"weekly\"}",
           "{\"a0\": null}", "{\"a0\": [\"hourly\"]}"]
JSON_BAD = ["", "{", "}", "{\"a\":}", "[1,]", "NaN", "Infinity", "\"\\u0000\"", "{'a': 1}", "1e1000000",
            "\"\\ud800\"", "tru", "{\"a\" 1}", "/* */ {}", "{}{}"]


def jsonb_gen(c, name):
    r = c.r
    x = r.random()
    if x < 0.08:
        return None
    if x < 0.65:
        if name == "depends" and r.random() < 0.6:
            return r.choice(JSON_OK[-9:] + ["{}"])
        return r.choice(JSON_OK)
    if x < 0.8:
        return r.choice(JSON_BAD)
    if x < 0.84:
        # deep nesting: parsed up to the stack limit (54001 beyond)
        d = r.choice([100, 1000, 5000, 10000, 100000])
        return Sql(b"repeat('[', %d) || repeat(']', %d)" % (d, d))
    if x < 0.9 and not c.small:
        # around the 1 MB payload limit
        n = r.choice([MB - 16, MB - 9, MB - 8, MB, MB + 1, 2 * MB, 16 * MB])
        if r.random() < 0.7:
            return Sql(b"jsonb_build_object('x', repeat('a', %d))" % n)
        return '{"x": "' + "a" * n + '"}'
    if x < 0.94:
        k = r.choice([1000, 100000])
        return Sql(b"(SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, %d) i)" % k)
    return Sql(b"to_jsonb(" + render(hostile_text(c), "text", r) + b")")


def bool_gen(c):
    r = c.r
    x = r.random()
    if x < 0.1:
        return None
    if x < 0.14:
        return r.choice(["yes", "off", "t", "0", "maybe", "", "2"])
    return r.random() < 0.5


def array_gen(c, elem, name, elemgen):
    c.small = True
    try:
        return array_gen1(c, elem, name, elemgen)
    finally:
        c.small = False


def array_gen1(c, elem, name, elemgen):
    r = c.r
    x = r.random()
    if x < 0.08:
        return None
    if x < 0.14:
        return []
    if x < 0.2:
        return [None] * r.randint(1, 3)
    if x < 0.6:
        return [elemgen() for _ in range(r.randint(1, 5))]
    if x < 0.7:
        return [[elemgen(), elemgen()], [elemgen(), elemgen()]]       # two dimensions
    if x < 0.75:
        return Sql(b"'[5:6]={" + b"NULL,NULL" + b"}'")                # lower bound 5
    if x < 0.8:
        return [elemgen() for _ in range(r.choice([1000, 10000]))]
    if x < 0.85:
        return Sql(b"(SELECT array_agg(NULL::text) FROM generate_series(1, 100000))")
    if x < 0.9:
        return Sql(b"'{{{{{{1}}}}}}'")                                 # six dimensions
    return [elemgen() if r.random() < 0.7 else None for _ in range(r.randint(1, 8))]


JSON_SMALL = ["{}", "{\"n\": 1}", "{\"to\": \"a@example.org\"}", "[1, 2]", "{\"event\": \"heartbeat\"}"]
FLOWS = ['[{"name": "a", "queue": "q0"}, {"name": "b", "queue": "q0", "after": ["a"]}]',
         '[{"name": "a", "queue": "q0"}, {"name": "b", "queue": "q1", "after": ["a"]}, '
         '{"name": "c", "queue": "q1", "after": ["a"]}, {"name": "d", "queue": "q2", "after": ["b", "c"], '
         '"on_parent_failure": "run"}]',
         '[{"name": "a", "queue": "q0", "after": [ID]}]',
         '[{"name": "a", "queue": "q0", "after": ["b"]}, {"name": "b", "queue": "q0", "after": ["a"]}]']
TEXT_TYPES = ("text", "character varying", "name", "character", "citext")
VALID_INTERVALS = {
    "lease": ["1 second", "5 seconds", "1 minute", "5 minutes", None],
    "timeout": [None, "0", "50 milliseconds", "200 milliseconds", "1 second"],
    "every": ["10 milliseconds", "1 second", "5 seconds", "1 minute", "1 hour", "1 day"],
    "stale_after": [None, "0", "1 second", "1 hour"],
    "retry_after": [None, "1 second", "1 minute"],
    "older_than": [None, "0", "1 second", "1 day", "7 days"],
}
VALID_TIMES = {
    "run_at": [None, b"now()", b"now() + '1 second'", b"now() - '1 minute'::interval"],
    "starts_at": [None, b"now()", b"now() - '1 hour'::interval", "2026-01-01"],
    "now": [b"now()", b"now() + '1 hour'", b"now() + '1 day'", b"now() + '40 days'"],
    "from": [b"now() - '1 day'::interval", b"now() - '1 hour'::interval", b"date_trunc('day', now())"],
    "to": [b"now()", b"now() + '1 hour'", b"now() + '1 day'"],
    "catchup_from": [None, b"now() - '1 day'::interval", b"now() - '3 hours'::interval"],
    "started": [b"(SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())", b"now()"],
    "after": [None, b"now()", "2026-02-28 23:59:59+00", "2024-02-29 00:00:00+00"],
}


def valid_value(c, typ, name):
    """A value the function should accept, so calls reach the code behind the checks."""
    r = c.r
    if typ.endswith("[]"):
        elem = typ[:-2]
        if name == "ids":
            return [p[0] for p in c.pairs]
        if name == "tokens":
            return [p[1] for p in c.pairs]
        if name == "paths":
            return [valid_path(r) for _ in range(r.randint(1, 4))]
        if name == "payloads":
            return [r.choice(JSON_SMALL) for _ in range(r.randint(1, 5))]
        if name == "apps":
            return r.choice([None, ["a0"], ["a0", "a1"]])
        if name == "after":
            # parents: jobs the server handed out (live, finished or purged)
            return r.choice([None, [POOLS.pick("ids", r)],
                             [POOLS.pick("ids", r) for _ in range(r.randint(1, 4))]])
        return [plain(lambda: valid_value(c, elem, name)) for _ in range(r.randint(0, 3))]
    if typ in TEXT_TYPES:
        if name == "path":
            return r.choice(c.held) if c.held and r.random() < 0.5 else valid_path(r)
        if name == "key":
            return r.choice(c.owned) if c.owned and r.random() < 0.5 else r.choice(["k0", "k1", "k2", "k3"])
        if name == "group_key":
            return r.choice([None, "g0", "g1"])
        if name in ("queue", "callback_queue"):
            return r.choice(["q0", "q1", "q2", "apps"])
        if name == "host":
            return r.choice([None, None, "h0", "h1"])
        if name in ("name", "app"):
            return r.choice(["s0", "s1", "s2", "a0", "a1", "a2"])
        if name in ("cron", "schedule"):
            return r.choice(CRONS_OK)
        if name == "starts":
            return r.choice(["hourly", "daily", "weekly", "monthly", "yearly", None])
        if name == "on_parent_failure":
            return r.choice(["cancel", "run"])
        if name == "on":
            return r.choice([None, "success", "complete"])
        if name == "step":
            return r.choice(["s0", "s1", "s2"])
        return r.choice(["boom", "SMTP 451", "", None])
    if typ in ("integer", "bigint", "smallint"):
        if name == "id":
            return c.pairs[0][0] if c.pairs else POOLS.pick("ids", r)
        if name == "token":
            return c.pairs[0][1] if c.pairs else POOLS.pick("tokens", r)
        if name == "pid":
            return POOLS.pick("pids", r)
        if name == "batch":
            return r.choice([None, POOLS.pick("batches", r)])
        return {"n": r.randint(1, 10), "priority": r.randint(-3, 3), "max_attempts": r.randint(1, 5),
                "partition": r.randint(0, 3), "partitions": r.choice([None, 4])}.get(name, r.randint(0, 10))
    if typ == "boolean":
        return r.random() < (0.25 if name == "wait" else 0.5)
    if typ == "interval":
        return r.choice(VALID_INTERVALS.get(name, ["1 second", "1 minute"]))
    if typ in ("timestamp with time zone", "timestamp without time zone", "date"):
        v = r.choice(VALID_TIMES.get(name, [None, b"now()"]))
        return Sql(v) if isinstance(v, bytes) else v
    if typ in ("jsonb", "json"):
        if name == "depends":
            return r.choice(["{}", "{\"a0\": \"hourly\"}", "{\"a1\": \"hourly\", \"a2\": \"daily\"}"])
        if name == "nodes":
            # a flow: a chain, a diamond, a parent by id, or a cycle (22023)
            return r.choice(FLOWS).replace("ID", str(POOLS.pick("ids", r)))
        return r.choice(JSON_SMALL)
    return scalar(c, typ, name)


def value_for(c, typ, name):
    """A Python/SQL value for one argument of type typ named name."""
    r = c.r
    name = (name or "").lower()
    if c.valid:
        return valid_value(c, typ, name)
    if typ.endswith("[]"):
        elem = typ[:-2]
        if elem in ("bigint", "integer", "smallint"):
            v = array_gen(c, elem, name, lambda: int_gen(c, name, elem))
            if isinstance(v, list) and name in ("ids", "tokens") and r.random() < 0.5:
                v = [POOLS.pick(name, r) for _ in range(r.randint(0, 6))]
            return v
        if elem == "text" and name in ("paths", "path"):
            return array_gen(c, elem, name, lambda: plain(lambda: path_gen(c)))
        return array_gen(c, elem, name, lambda: scalar_plain(c, elem, name))
    return scalar(c, typ, name)


def scalar_plain(c, typ, name):
    """Like scalar, but never an SQL expression (an array element)."""
    return plain(lambda: scalar(c, typ, name))


def plain(gen):
    for _ in range(5):
        v = gen()
        if not isinstance(v, Sql):
            return v
    return None


def scalar(c, typ, name):
    r = c.r
    if typ in TEXT_TYPES:
        if r.random() < 0.06:
            return None
        if c.ascii and r.random() < 0.2:
            return raw(r, {"path": b"/f/", "key": b"k", "queue": b"q", "host": b"h"}.get(name, b""))
        if name in ("path",):
            return path_gen(c)
        if name in ("key", "group_key", "url"):
            return key_gen(c)
        if name in ("queue", "host"):
            return name_gen(c)
        if name in ("name", "app", "apps"):
            return sname_gen(c)
        if name in ("cron", "schedule"):
            return cron_gen(c)
        if name == "starts":
            return starts_gen(c)
        return hostile_text(c)
    if typ in ("integer", "bigint", "smallint"):
        return int_gen(c, name, typ)
    if typ == "boolean":
        return bool_gen(c)
    if typ == "interval":
        return interval_gen(c)
    if typ in ("timestamp with time zone", "timestamp without time zone", "date"):
        return time_gen(c)
    if typ in ("jsonb", "json"):
        return jsonb_gen(c, name)
    if typ in ("numeric", "double precision", "real"):
        return r.choice([0, 1, -1, "NaN", "Infinity", "-Infinity", "1e308", "1e-308", "0.5", None])
    if typ == "bytea":
        return r.choice([None, Sql(b"'\\xff00'::bytea"), Sql(b"''::bytea"), "\\x" + "00" * 100])
    if typ == "uuid":
        return r.choice([None, "00000000-0000-0000-0000-000000000000", "not-a-uuid"])
    if typ in ("oid", "regclass", "regproc"):
        return r.choice([None, 0, 1, 4294967295])
    # an unknown type: NULL, or a text that must be rejected or accepted on input
    return r.choice([None, None, "", "0", hostile_text(c)])


# -------------------------------------------------------------- discovery

DISCOVER = """
SELECT p.oid, p.proname, p.prokind, p.proretset, p.proisstrict, p.provariadic <> 0,
       p.pronargs, p.pronargdefaults,
       ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, o)
             ORDER BY o),
       p.proargnames, p.proargmodes::text[], format_type(p.prorettype, NULL),
       pg_get_function_identity_arguments(p.oid), p.proparallel
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'coord'
ORDER BY p.proname, p.oid
"""

UNCALLABLE = {"internal", "trigger", "event_trigger", "language_handler", "fdw_handler",
              "index_am_handler", "tsm_handler", "table_am_handler", "cstring"}


class Func:
    def __init__(self, row):
        (self.oid, self.name, self.kind, self.retset, self.strict, self.variadic, nargs, ndef,
         self.types, names, modes, self.rettype, ident, self.parallel) = row
        self.writer = self.parallel == "u" and self.name not in PARALLEL_READERS
        short = {"timestamp with time zone": "timestamptz", "timestamp without time zone": "timestamp",
                 "boolean": "bool", "integer": "int", "character varying": "varchar"}
        self.sig = f"coord.{self.name}({', '.join(short.get(t, t) for t in self.types)})"
        if modes:
            names = [n for n, m in zip(names or [], modes) if m in ("i", "b", "v")]
        names = list(names or [])
        names += [""] * (nargs - len(names))
        self.names = names[:nargs]
        self.nreq = nargs - ndef
        self.nargs = nargs
        self.skip = None
        if self.kind not in ("f", "p"):
            self.skip = f"prokind {self.kind}"
        elif self.rettype in ("trigger", "event_trigger") or UNCALLABLE & set(self.types):
            self.skip = f"pseudo-type ({self.rettype} {self.types})"


def discover(conn):
    cur = conn.cursor()
    cur.execute(DISCOVER)
    return [Func(row) for row in cur.fetchall()]


# -------------------------------------------------------------- call building

def build_call(c, f, fixed=None):
    """A statement calling f; at most MAX_STMT bytes (bigger ones test the parser, not us)."""
    for _ in range(10):
        sql = build_call1(c, f, fixed)
        if len(sql) <= MAX_STMT:
            return sql
    return sql[:0] + b"SELECT coord." + ident(f.name) + b"(" + b", ".join(
        b"NULL::" + t.encode() for t in f.types[:f.nreq]) + b")"


MAX_STMT = 24 * MB


def build_call1(c, f, fixed=None):
    """fixed: (argument index, value) for the sweep; then every other argument is valid."""
    r = c.r
    args = []                         # list of (name or None, sql)
    form = r.random()
    # all arguments valid, all but one, or each one anything
    mode = r.random()
    bad = r.randrange(f.nargs) if f.nargs else -1
    if fixed:
        mode, bad = 0.5, fixed[0]
        form = r.choice([0.0, 0.5])           # every argument, by position or by name
    with POOLS.lock:
        pool = list(POOLS.pairs)
    c.pairs = r.sample(pool, min(len(pool), r.choice([1, 1, 2, 4])))
    c.args = {}
    # how many of the trailing defaults to give
    k = f.nargs if (form < 0.45 or f.nreq == f.nargs) else r.randint(f.nreq, f.nargs)
    named_ok = all(f.names[: f.nargs])
    for i in range(f.nargs):
        typ, name = f.types[i], f.names[i]
        if f.variadic and i == f.nargs - 1 and r.random() < 0.5 and typ.endswith("[]"):
            # spread the variadic array's elements
            elem = typ[:-2]
            for _ in range(r.randint(0, 4)):
                args.append((None, render(scalar(c, elem, name), elem, r)))
            continue
        c.valid = mode < 0.35 or (mode < 0.7 and i != bad)
        v = fixed[1] if fixed and i == bad else value_for(c, typ, name)
        c.valid = False
        c.args[name] = v
        sql = render(v, typ, r)
        if f.variadic and i == f.nargs - 1:
            sql = b"VARIADIC " + sql
        args.append((name, sql, i))
    if fixed:
        parts = [a[1] if form < 0.45 or not named_ok else named(a) for a in args]
    elif form < 0.45 or not named_ok:
        parts = [a[1] for a in args[:max(k, f.nreq)]] if not f.variadic else [a[1] for a in args]
    elif form < 0.8:
        # named notation, defaults left out at random, in any order
        chosen = [a for a in args if len(a) < 3 or a[2] < f.nreq or r.random() < 0.6]
        r.shuffle(chosen)
        parts = [named(a) for a in chosen]
    else:
        # positional first, named after
        j = r.randint(0, f.nreq)
        rest = [a for a in args[j:] if len(a) < 3 or a[2] < f.nreq or r.random() < 0.6]
        r.shuffle(rest)
        parts = [a[1] for a in args[:j]] + [named(a) for a in rest]
    call = b"coord." + ident(f.name) + b"(" + b", ".join(parts) + b")"
    if f.kind == "p":
        return b"CALL " + call
    s = r.random()
    if s < 0.55:
        return b"SELECT * FROM " + call
    if s < 0.92:
        return b"SELECT " + call
    if s < 0.97:
        return b"SELECT " + call + b" FROM generate_series(1, %d)" % r.choice([2, 3, 10])
    return b"SELECT count(*) FROM (SELECT " + call + b") s"


def named(a):
    if len(a) < 3 or not a[0]:
        return a[1]
    return ident(a[0]) + b" => " + a[1]


def ident(name):
    return b'"' + name.replace('"', '""').encode() + b'"'



# -------------------------------------------------------------- the sweep

def sweep_values(typ, name, ascii_db):
    """Every hostile value of the catalogue for one argument (the others stay valid)."""
    name = (name or "").lower()
    if typ.endswith("[]"):
        elem = typ[:-2]
        ok = {"bigint": 1, "integer": 1, "smallint": 1, "text": "/f/a", "jsonb": "{}", "boolean": True}.get(elem, None)
        bad = {"text": HOSTILE_PATHS[:12] if name == "paths" else ["", " ", "x" * 2049, "q" * 49],
               "jsonb": ["null", "[]", "1"]}.get(elem, [-1, 0, 9223372036854775807, -9223372036854775808])
        vals = [None, [], [None], [ok, None], [[ok, ok], [ok, ok]], [[ok], [ok, ok]],
                Sql(b"'[5:6]={NULL,NULL}'"), Sql(b"'[-2147483648:-2147483647]={NULL,NULL}'"),
                Sql(b"'{{{{{{1}}}}}}'"), [ok] * 10000, Sql(b"(SELECT array_agg(NULL::text) FROM generate_series(1, 100000))")]
        vals += [[ok, b] for b in bad] + [[b] for b in bad]
        return vals
    if typ in TEXT_TYPES:
        base = {"path": HOSTILE_PATHS, "key": HOSTILE_KEYS, "group_key": HOSTILE_KEYS, "url": HOSTILE_KEYS,
                "queue": HOSTILE_NAMES, "host": HOSTILE_NAMES, "name": HOSTILE_NAMES + HOSTILE_KEYS[:8],
                "app": HOSTILE_NAMES, "cron": CRONS_OK + CRONS_BAD, "schedule": CRONS_OK + CRONS_BAD,
                "starts": ["hourly", "daily", "weekly", "monthly", "yearly", "Hourly", "minutely", "",
                           " hourly", "@hourly", "0 * * * *", "x" * MB]}.get(name)
        if base is None:
            base = INJECT + ["", " ", "x" * 2049, "x" * MB, "é😀", "\x01\x7f\u0085"]
        vals = [None] + list(base)
        vals += [Sql(b"convert_from(decode('" + h + b"', 'hex'), 'LATIN1')") for h in (b"ff", b"85", b"9f")]
        vals.append(Sql(b"repeat('/a', 524288)"))
        if ascii_db:
            pre = {"path": b"/f/", "key": b"k", "queue": b"q", "host": b"h"}.get(name, b"")
            vals += [pre + b for b in BAD_UTF8] + [pre + b"\xff" * 1025, pre + bytes(range(0x80, 0x100))]
        return vals
    if typ in ("integer", "smallint"):
        return [None, "2147483648", "-2147483649", "NaN", ""] + INTS
    if typ == "bigint":
        return [None, "9223372036854775808", "-9223372036854775809", ""] + BIGS + INTS[-4:]
    if typ == "boolean":
        return [None, True, False, "maybe"]
    if typ == "interval":
        return [None] + INTERVALS_OK + INTERVALS_BAD
    if typ in ("timestamp with time zone", "timestamp without time zone", "date"):
        return [None] + TIMES + [Sql(b"now() + '1 microsecond'"), Sql(b"now() - '178000000 years'::interval")]
    if typ in ("jsonb", "json"):
        return [None] + JSON_OK + JSON_BAD + [
            Sql(b"repeat('[', %d) || repeat(']', %d)" % (d, d)) for d in (100, 1000, 10000, 100000)] + [
            Sql(b"jsonb_build_object('x', repeat('a', %d))" % n) for n in (MB - 16, MB - 8, MB, MB + 1, 16 * MB)] + [
            Sql(b"(SELECT jsonb_object_agg('k' || i, i) FROM generate_series(1, 100000) i)")]
    return [None, "", "0"]


def build_sweep(funcs, ascii_db, r):
    items = []
    for f in funcs:
        if f.skip:
            continue
        for i in range(f.nargs):
            items += [(f, i, v) for v in sweep_values(f.types[i], f.names[i], ascii_db)]
    r.shuffle(items)
    return items


class Sweep:
    """Items shared by the workers of one database kind."""

    def __init__(self, items):
        self.items = items
        self.lock = threading.Lock()
        self.total = len(items)

    def pop(self):
        with self.lock:
            return self.items.pop() if self.items else None

# -------------------------------------------------------------- statistics

class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = 0
        self.taken = 0
        self.per = collections.defaultdict(collections.Counter)   # label -> Counter(sqlstate|'ok')
        self.failures = []
        self.crashes = 0
        self.hangs = 0
        self.messages = {}                                       # (label, sqlstate) -> a message
        self.seconds = collections.Counter()                     # label -> time spent in calls
        self.timeouts = []                                       # (label, statement) of some 57014s

    def take(self):
        with self.lock:
            if self.taken >= BUDGET or STOP.is_set():
                return False
            self.taken += 1
            return True

    def give_back(self):
        with self.lock:
            self.taken -= 1

    def record(self, label, outcome, msg=None, is_call=True):
        with self.lock:
            if is_call:
                self.calls += 1
            self.per[label][outcome] += 1
            if msg and (label, outcome) not in self.messages:
                self.messages[(label, outcome)] = msg

    def fail(self, kind, label, sql, detail):
        with self.lock:
            self.failures.append((kind, label, sql, detail))
            if kind == "crash":
                self.crashes += 1
            if kind == "hang":
                self.hangs += 1
        short = sql if len(sql) <= 400 else sql[:400] + f"... [{len(sql)} bytes]"
        print(f"FAILURE {kind}: {label}\n  statement: {short}\n  {detail}", flush=True)
        with open(FAILFILE, "a", encoding="utf-8", errors="replace") as fh:
            fh.write(f"-- {kind}: {label}: {detail}\n{sql};\n")


STATS = Stats()
STOP = threading.Event()


def sql_text(b):
    return b.decode("utf-8", "replace")


# -------------------------------------------------------------- workers

SESSION_SETUP = ("SET statement_timeout = '{st}'; SET lock_timeout = '{lt}'; "
                 "SET client_min_messages = warning; SET idle_in_transaction_session_timeout = '60s'")


class Worker(threading.Thread):
    def __init__(self, idx, dbname, user, ascii_db, funcs, gucs):
        super().__init__(daemon=True, name=f"fuzz-{idx}")
        self.hostile = user == HOSTILE
        self.idx = idx
        self.dbname = dbname
        self.user = user
        self.ascii = ascii_db
        self.funcs = [f for f in funcs if not f.skip]
        self.sigs = {f.sig for f in self.funcs}
        self.raw_calls = 0
        self.calls = 0
        self.sweep = None            # a Sweep, set by main
        self.sweep_calls = 0
        self.gucs = gucs
        self.r = random.Random(SEED * 1000 + idx)
        self.c = Ctx(self.r, ascii_db)
        self.conn = None
        self.pid = None
        self.current = None          # (sql, started, label) while a statement runs
        self.watchdog_killed = False
        self.in_txn = False
        self.gid = 0
        self.connect()

    def connect(self, wait=0.0):
        deadline = time.monotonic() + wait
        while True:
            try:
                self.conn = psycopg2.connect(dbname=self.dbname, user=self.user,
                                             application_name=f"coord-fuzz-{self.idx}")
                break
            except psycopg2.OperationalError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)
        self.conn.autocommit = True
        if self.ascii:
            self.conn.set_client_encoding("SQL_ASCII")
        cur = self.conn.cursor()
        cur.execute(SESSION_SETUP.format(st=STMT_TIMEOUT, lt=LOCK_TIMEOUT))
        self.hostile_setup()
        cur.execute("SELECT pg_catalog.pg_backend_pid()")
        self.pid = cur.fetchone()[0]
        POOLS.add("pids", self.pid)
        self.in_txn = False
        self.c.held, self.c.owned = [], []      # a new session holds nothing

    def hostile_setup(self):
        """The hostile session: temporary domains named after catalog types, whose CHECK
        calls the trap, and a search_path with look-alikes first (again after DISCARD ALL)."""
        if not self.hostile:
            return
        cur = self.conn.cursor()
        for t in TRAP_TYPES:
            cur.execute(f'CREATE DOMAIN pg_temp."{t}" AS pg_catalog."{t}" '
                        f"CHECK ({HOSTILE_SCHEMA}.trap('domain {t}'))")
        cur.execute(f"SET search_path = pg_temp, {HOSTILE_SCHEMA}, pg_catalog, public")

    # one statement; returns (ok, sqlstate, message, rows)
    def execute(self, sql, label=""):
        cur = self.conn.cursor()
        self.current = (sql, time.monotonic(), label)
        try:
            cur.execute(sql)
            rows = None
            if cur.description:
                try:
                    rows = (cur.description, cur.fetchmany(50))
                except Exception:           # a result Python cannot represent: the call succeeded
                    rows = None
            return True, "ok", None, rows
        except psycopg2.Error as e:
            return False, e.pgcode, (e.pgerror or str(e)).strip(), None
        except UnicodeDecodeError as e:           # a result we cannot decode: the call succeeded
            return True, "ok", str(e), None
        finally:
            self.current = None
            for n in self.conn.notices:
                if "FUZZ-TRAP ran as" in n:
                    STATS.fail("privilege", label or "statement", sql_text(sql),
                               "a trap of the caller's ran as another role: " + n.strip())
            del self.conn.notices[:]

    def lost(self):
        return self.conn.closed != 0

    def run_one(self, label, sql, is_call=True):
        self.calls += is_call
        t = time.monotonic()
        ok, state, msg, rows = self.execute(sql, label)
        STATS.seconds[label] += time.monotonic() - t
        if ok:
            STATS.record(label, "ok", is_call=is_call)
            if rows:
                self.harvest(label, rows)
            return True, state
        if state is None or state in ("57P02", "57P01", "57P03", "08006", "08003") or self.lost():
            if self.watchdog_killed:
                STATS.record(label, "terminated(hang)", msg, is_call=is_call)
                self.watchdog_killed = False
            else:
                STATS.record(label, "LOST", msg, is_call=is_call)
                STATS.fail("crash", label, sql_text(sql),
                           f"connection lost (pid {self.pid}, sqlstate {state}): {msg}")
            self.reconnect()
            return False, "LOST"
        STATS.record(label, state, msg, is_call=is_call)
        if state == "57014" and len(STATS.timeouts) < 10:
            STATS.timeouts.append((label, sql_text(sql)))
        if state.startswith("XX"):
            STATS.fail("internal", label, sql_text(sql), f"SQLSTATE {state}: {msg}")
        return False, state

    def reconnect(self):
        try:
            self.conn.close()
        except Exception:
            pass
        try:
            self.connect(wait=60)
        except psycopg2.OperationalError as e:
            print(f"fuzz: cannot reconnect after a lost connection, stopping: {e}", flush=True)
            STOP.set()
            raise SystemExit(1)

    def harvest(self, label, rows):
        desc, data = rows
        cols = [d.name for d in desc]
        c = self.c
        fname = label.split("(")[0]
        first = data[0][0] if data and data[0] else None
        path, key = c.args.get("path"), c.args.get("key")
        if fname in ("coord.lock", "coord.try_lock") and first is True and isinstance(path, str):
            c.held = (c.held + [path])[-20:]
        elif fname == "coord.lock_first" and isinstance(first, str):
            c.held = (c.held + [first])[-20:]
        elif fname == "coord.unlock" and isinstance(path, str) and path in c.held:
            c.held.remove(path)
        elif fname == "coord.unlock_all":
            c.held = []
        elif fname == "coord.request" and first is True and isinstance(key, str):
            c.owned = (c.owned + [key])[-20:]
        elif fname in ("coord.release", "coord.mark_queued", "coord.mark_done") and key in c.owned:
            c.owned.remove(key)
        if "id" in cols and "token" in cols:
            i, t = cols.index("id"), cols.index("token")
            for row in data:
                POOLS.add("pairs", (row[i], row[t]))
        for row in data:
            for name, v in zip(cols, row):
                if not isinstance(v, int) or isinstance(v, bool):
                    continue
                if name == "id" or label.startswith(("coord.enqueue", "coord.schedule")):
                    POOLS.add("ids", v)
                elif name == "token":
                    POOLS.add("tokens", v)
                elif label.startswith("coord.fence("):
                    POOLS.add("fence_tokens", v)
                elif label.startswith("coord.open_batch("):
                    POOLS.add("batches", v)

    def call_sweep(self):
        item = self.sweep.pop() if self.sweep else None
        if item is None:
            return False
        f, i, v = item
        if self.ascii:
            RAW_USED.clear()
        sql = build_call(self.c, f, (i, v))
        if self.ascii and (RAW_USED.is_set() or isinstance(v, bytes) and not isinstance(v, Sql)):
            self.raw_calls += 1
        self.sweep_calls += 1
        ok, st = self.run_one(f.sig, sql)
        # an array argument with a NULL element (the others valid) is a data exception
        if (isinstance(v, list) and None in v and not any(isinstance(x, list) for x in v)
                and not self.in_txn and st not in ("LOST", "57014", "55P03")):
            want = "22004" if f.name == "grid" else "22"
            if not st.startswith(want):
                STATS.fail("expectation", f.sig, sql_text(sql),
                           f"a NULL array element gave {st}, not {want if len(want) == 5 else 'class 22'}")
        return ok, st

    def call_parallel(self):
        """A call through a PARALLEL SAFE wrapper under force_parallel_mode: it runs in a
        parallel worker, where a writer must refuse with 25000."""
        f = self.r.choice(self.funcs)
        call = build_call(self.c, f)
        if len(call) > MB or call.startswith(b"CALL "):
            return self.run_one(f.sig, call)
        ok, st = self.run_one("[SET parallel]", b"SET " + PARALLEL_GUC.encode() + b" = on", is_call=False)
        if not ok:
            return ok, st
        sql = b"SELECT public.coord_fuzz_parallel(" + lit(call) + b")"
        label = "[parallel] " + f.sig
        ok, st = self.run_one(label, sql)
        if st != "LOST":
            self.run_one("[RESET parallel]", b"RESET " + PARALLEL_GUC.encode(), is_call=False)
        # argument errors come first (class 22, 42, 54); never success or anything else
        if f.writer and st != "LOST" and not (st == "25000" or st[:2] in ("22", "42", "54") or
                                             st in ("57014", "55P03")):
            STATS.fail("expectation", label, sql_text(call),
                       f"a writer in a parallel worker gave {st}, not 25000")
        return ok, st

    def call_random(self):
        if not self.ascii and not self.in_txn and self.r.random() < 0.04:
            return self.call_parallel()
        if self.sweep and self.r.random() < SWEEP_SHARE:
            res = self.call_sweep()
            if res:
                return res
        f = self.r.choice(self.funcs)
        if self.ascii:
            RAW_USED.clear()
        sql = build_call(self.c, f)
        if self.ascii and RAW_USED.is_set():
            self.raw_calls += 1
        return self.run_one(f.sig, sql)

    def side_action(self):
        """Hostile things around the calls: settings, DISCARD ALL, views."""
        r = self.r
        x = r.random()
        if x < 0.45 and self.gucs:
            g = r.choice(self.gucs)
            v = r.choice(["on", "off", "0", "-1", "1", "1s", "1ms", "7d", "1 year", "2147483647",
                          "-2147483648", "99999999999", "abc", "", "1000000 years", "default"])
            local = b"LOCAL " if self.in_txn and r.random() < 0.5 else b""
            sql = b"SET " + local + g.encode() + b" = " + (b"DEFAULT" if v == "default" else lit(v))
            self.run_one(f"[SET {g}]", sql, is_call=False)
        elif x < 0.55:
            self.run_one("[pg_advisory_unlock_all()]", b"SELECT pg_advisory_unlock_all()", is_call=False)
        elif x < 0.6 and not self.in_txn:
            ok, _ = self.run_one("[DISCARD ALL]", b"DISCARD ALL", is_call=False)
            self.execute(SESSION_SETUP.format(st=STMT_TIMEOUT, lt=LOCK_TIMEOUT).encode())
            if ok:
                self.hostile_setup()
        else:
            view = r.choice(VIEWS) if VIEWS else None
            if view:
                self.run_one(f"[view coord.{view}]", b"SELECT * FROM coord." + ident(view) + b" LIMIT 100",
                             is_call=False)

    def cleanup(self):
        """Let go of what this session holds now and then, so others are not blocked for good."""
        if self.r.random() < 0.5 and "coord.unlock_all()" in self.sigs and STATS.take():
            self.run_one("coord.unlock_all()", b"SELECT coord.unlock_all()")
        for k in ["k0", "k1", "k2", "k3"] + self.c.owned:
            if self.r.random() < 0.3 and "coord.release(text)" in self.sigs and STATS.take():
                self.run_one("coord.release(text)", b"SELECT coord.release(" + lit(k) + b"::text)")

    def do_block(self):
        """A call inside a PL/pgSQL exception block that is rolled back most of the time."""
        f = self.r.choice(self.funcs)
        call = build_call(self.c, f)
        if call.startswith(b"CALL "):
            body = call
        else:
            body = b"PERFORM * FROM (" + call + b") s"
        tag = b"$fz%d$" % self.r.randrange(10**9)
        if tag in body or len(body) > 2 * MB:      # PL/pgSQL scans megabytes slowly: not our code
            return self.run_one(f.sig, call)
        boom = b"RAISE EXCEPTION USING ERRCODE = 'P0001';" if self.r.random() < 0.7 else b""
        sql = (b"DO " + tag + b" BEGIN BEGIN " + body + b"; " + boom +
               b" EXCEPTION WHEN OTHERS THEN IF SQLSTATE <> 'P0001' THEN RAISE; END IF;"
               b" END; END " + tag)
        return self.run_one(f.sig, sql)

    def composed(self):
        """Several pg_coord calls in one statement, value-per-call SRFs stopped early, cursors."""
        r, c = self.r, self.c
        q = lit(r.choice(["q0", "q1", "q2"])) + b"::text"
        p = lit(valid_path(r)) + b"::text"
        k = lit(r.choice(["k0", "k1", "k2", "k3"])) + b"::text"
        n = b"%d" % r.choice([1, 2, 5, 50])
        forms = [
            b"SELECT coord.complete(c.id, c.token) FROM coord.claim(" + q + b", " + n + b") c",
            b"SELECT coord.fail(c.id, c.token, 'x', " + r.choice([b"NULL", b"'1 second'", b"'-1 second'"]) +
            b"::interval) FROM coord.claim(" + q + b", " + n + b", session_bound => true) c",
            b"SELECT coord.heartbeat(c.id, c.token, '1 minute'), coord.complete(c.id, c.token, '{}') "
            b"FROM coord.claim(" + q + b", " + n + b", lease => '1 second') c",
            b"SELECT coord.cancel(c.id), coord.complete(c.id, c.token) FROM coord.claim(" + q + b", " + n + b") c",
            b"SELECT coord.claim(" + q + b", " + n + b") LIMIT 1",
            b"SELECT coord.claim(" + q + b", " + n + b", session_bound => true), generate_series(1, 3) LIMIT 2",
            b"SELECT coord.enqueue_many(" + q + b", ARRAY['{}', '{}', '{}']::jsonb[]) LIMIT 1",
            b"SELECT coord.enqueue(" + q + b", jsonb_build_object('i', i)) FROM generate_series(1, " + n + b") i",
            b"SELECT coord.grid() LIMIT 1",
            b"SELECT coord.lock(" + p + b"), coord.fence(" + p + b"), coord.fence_ok(" + p + b", coord.fence(" + p +
            b")), coord.unlock(" + p + b")",
            b"SELECT coord.xact_lock(" + p + b"), coord.fence(" + p + b")",
            b"SELECT coord.lock(" + p + b", '0'), coord.lock(" + p + b", '0', true), coord.unlock_all()",
            b"SELECT coord.request(" + k + b", false), coord.mark_queued(" + k + b", " + q + b")",
            b"SELECT coord.request(" + k + b", false), coord.mark_queued(" + k + b"), coord.mark_done(" + k + b")",
            b"SELECT coord.request(" + k + b", false), coord.release(" + k + b"), coord.release(" + k + b")",
            b"SELECT coord.try_lock(x) FROM coord.lock_first(ARRAY[" + p + b", '/f/b']) x",
            b"SELECT coord.mark_queued(" + k + b", " + q + b") FROM (SELECT coord.request(" + k + b", false)) s",
            b"SELECT coord.complete_many(array_agg(c.id), array_agg(c.token)) FROM coord.claim(" + q + b", " + n + b") c",
            b"SELECT coord.job_state(c.id), coord.job_claimed(c.id), coord.retry(c.id) FROM coord.claim(" + q + b", " + n + b") c",
            b"SELECT coord.tick(), coord.tick(now() + '1 day')",
            b"WITH c AS (SELECT * FROM coord.claim(" + q + b", " + n + b")) "
            b"SELECT coord.complete(c.id, c.token), coord.complete(c.id, c.token) FROM c",
        ]
        i = r.randrange(len(forms) + 1)
        if i < len(forms):
            return self.run_one(f"[composed {i}]", forms[i])
        # a cursor over a set-returning call, fetched a bit at a time with other calls in between
        srfs = [f for f in self.funcs if f.retset]
        if not srfs:
            return
        f = r.choice(srfs)
        stmt = build_call(c, f)
        hold = r.random() < 0.3
        ok, st = self.run_one("[BEGIN]", b"BEGIN", is_call=False)
        if not ok:
            return
        self.in_txn = True
        ok, st = self.run_one(f.sig, b"DECLARE fzc NO SCROLL CURSOR " + (b"WITH HOLD " if hold else b"") +
                              b"FOR " + stmt)
        if ok:
            for _ in range(r.randint(1, 3)):
                ok, st = self.run_one("[FETCH]", b"FETCH %d FROM fzc" % r.choice([1, 2]), is_call=False)
                if not ok:
                    break
                if STATS.take():
                    ok, st = self.call_random()
                if st == "LOST" or not ok:
                    break
        self.in_txn = False
        fin = r.choice([b"COMMIT", b"ROLLBACK"])
        ok, st = self.run_one("[" + fin.decode() + "]", fin, is_call=False)
        if ok and hold and fin == b"COMMIT":
            self.run_one("[FETCH]", b"FETCH ALL FROM fzc", is_call=False)
            self.run_one("[CLOSE]", b"CLOSE fzc", is_call=False)

    def txn_episode(self):
        """BEGIN, a few calls under savepoints, then ROLLBACK, COMMIT or PREPARE TRANSACTION."""
        r = self.r
        iso = r.choice([b"", b"", b" ISOLATION LEVEL REPEATABLE READ", b" ISOLATION LEVEL SERIALIZABLE",
                        b" READ ONLY"])
        ok, st = self.run_one("[BEGIN]", b"BEGIN" + iso, is_call=False)
        if not ok:
            return
        self.in_txn = True
        use_sp = r.random() < 0.8
        for i in range(r.randint(1, 6)):
            if not STATS.take():
                break
            if use_sp:
                self.run_one("[SAVEPOINT]", b"SAVEPOINT sp%d" % i, is_call=False)
            ok, st = self.call_random()
            if st == "LOST":
                return
            if r.random() < 0.1:
                self.side_action()
            if use_sp and (not ok or r.random() < 0.3):
                ok2, st2 = self.run_one("[ROLLBACK TO SAVEPOINT]", b"ROLLBACK TO SAVEPOINT sp%d" % i,
                                        is_call=False)
                if st2 == "LOST":
                    return
            elif not ok:
                break
        self.in_txn = False
        x = r.random()
        if x < 0.55:
            self.run_one("[ROLLBACK]", b"ROLLBACK", is_call=False)
        elif x < 0.85:
            self.run_one("[COMMIT]", b"COMMIT", is_call=False)
        else:
            self.gid += 1
            gid = b"'fz-%d-%d-%d'" % (SEED, self.idx, self.gid)
            ok, st = self.run_one("[PREPARE TRANSACTION]", b"PREPARE TRANSACTION " + gid, is_call=False)
            if ok:
                fin = b"COMMIT PREPARED " if r.random() < 0.5 else b"ROLLBACK PREPARED "
                self.run_one("[" + fin.decode().strip() + "]", fin + gid, is_call=False)
            elif self.conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                self.run_one("[ROLLBACK]", b"ROLLBACK", is_call=False)

    def run(self):
        try:
            n = 0
            while not STOP.is_set():
                if SECONDS and time.monotonic() - T0 > SECONDS:
                    STOP.set()
                    break
                x = self.r.random()
                n += 1
                if n % 40 == 0:
                    self.cleanup()
                    continue
                if x < 0.03:
                    self.side_action()
                    continue
                if not STATS.take():
                    break
                if x < 0.07:
                    STATS.give_back()          # the episode takes its own calls
                    self.txn_episode()
                elif x < 0.11:
                    self.do_block()
                elif x < 0.15:
                    self.composed()
                else:
                    self.call_random()
                if self.conn.get_transaction_status() not in (psycopg2.extensions.TRANSACTION_STATUS_IDLE,
                                                             psycopg2.extensions.TRANSACTION_STATUS_UNKNOWN):
                    self.execute(b"ROLLBACK")
        except SystemExit:
            pass
        except Exception as e:  # a bug of ours, not of the server: say so loudly
            import traceback
            traceback.print_exc()
            STATS.fail("fuzzer", "fuzz.py", "", f"worker {self.idx}: {e!r}")
            STOP.set()


class Watchdog(threading.Thread):
    """Cancels, then terminates, a statement that outlives statement_timeout by far."""

    def __init__(self, workers):
        super().__init__(daemon=True, name="watchdog")
        self.workers = workers
        self.conn = psycopg2.connect(dbname=DB, application_name="coord-fuzz-watchdog")
        self.conn.autocommit = True

    def run(self):
        flagged = {}                 # worker -> (start of the statement, 1 cancelled / 2 terminated)
        while not STOP.is_set() or any(w.is_alive() for w in self.workers):
            time.sleep(1)
            for w in self.workers:
                cur = w.current
                if not cur:
                    continue
                sql, started, label = cur
                age = time.monotonic() - started
                state = flagged.get(w.idx)
                if (state is None or state[0] != started) and age > HANG:
                    flagged[w.idx] = (started, 1)
                    STATS.fail("hang", f"{label} (connection {w.idx}, pid {w.pid})", sql_text(sql),
                               f"still running after {age:.0f} s (statement_timeout {STMT_TIMEOUT}); cancelling")
                    self.signal("pg_cancel_backend", w.pid)
                elif state and state[0] == started and state[1] == 1 and age > HANG + 10:
                    flagged[w.idx] = (started, 2)
                    w.watchdog_killed = True
                    print(f"fuzz: pid {w.pid} ignored the cancel; terminating it", flush=True)
                    self.signal("pg_terminate_backend", w.pid)

    def signal(self, fn, pid):
        try:
            self.conn.cursor().execute(f"SELECT {fn}(%s)", (pid,))
        except psycopg2.Error:
            try:
                self.conn = psycopg2.connect(dbname=DB, application_name="coord-fuzz-watchdog")
                self.conn.autocommit = True
                self.conn.cursor().execute(f"SELECT {fn}(%s)", (pid,))
            except psycopg2.Error:
                pass


# -------------------------------------------------------------- main

VIEWS = []
T0 = time.monotonic()


def admin(dbname):
    conn = psycopg2.connect(dbname=dbname, application_name="coord-fuzz-admin")
    conn.autocommit = True
    return conn


def setup():
    global VIEWS
    a = admin(DB)
    cur = a.cursor()
    cur.execute("SELECT pg_postmaster_start_time(), (SELECT setting FROM pg_settings WHERE name = 'server_version')")
    start_time, version = cur.fetchone()
    # an ordinary role; a member of coord_worker and coord_monitor where those exist
    cur.execute(f"SELECT 1 FROM pg_roles WHERE rolname = '{ROLE}'")
    if not cur.fetchone():
        cur.execute(f"CREATE ROLE {ROLE} LOGIN")
    cur.execute("SELECT rolname FROM pg_roles WHERE rolname IN ('coord_worker', 'coord_monitor')")
    for (g,) in cur.fetchall():
        cur.execute(f"GRANT {g} TO {ROLE}")
    setup_hostile(cur)
    funcs = discover(a)
    cur.execute("SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'coord' AND c.relkind IN ('v', 'm') ORDER BY 1")
    VIEWS = [v for (v,) in cur.fetchall()]
    cur.execute("SELECT coord.path_key('/f')")        # loads the library, so its GUCs show
    cur.execute("SELECT name FROM pg_settings WHERE name LIKE 'coord.%' ORDER BY 1")
    gucs = [g for (g,) in cur.fetchall()]
    cur.execute("SELECT pid FROM pg_stat_activity")
    for (p,) in cur.fetchall():
        POOLS.add("pids", p)
    return a, start_time, version, funcs, gucs


PARALLEL_GUC = "force_parallel_mode"


def setup_hostile(cur):
    """The hostile role, its schema of look-alikes, the trap and its table; the
    PARALLEL SAFE wrapper for calls in parallel workers."""
    global PARALLEL_GUC
    cur.execute("SELECT pg_catalog.current_setting('server_version_num')::int")
    if cur.fetchone()[0] >= 160000:
        PARALLEL_GUC = "debug_parallel_query"
    cur.execute("CREATE OR REPLACE FUNCTION public.coord_fuzz_parallel(q pg_catalog.text) "
                "RETURNS pg_catalog.int4 LANGUAGE plpgsql PARALLEL SAFE AS "
                "$f$ BEGIN EXECUTE q; RETURN 1; END $f$")
    cur.execute(f"SELECT 1 FROM pg_roles WHERE rolname = '{HOSTILE}'")
    if not cur.fetchone():
        cur.execute(f"CREATE ROLE {HOSTILE} LOGIN")
    cur.execute(f"GRANT coord_worker TO {HOSTILE}")
    cur.execute(f"DROP SCHEMA IF EXISTS {HOSTILE_SCHEMA} CASCADE")
    cur.execute(f"DROP TABLE IF EXISTS {TRAP_TABLE}")
    cur.execute(f"CREATE TABLE {TRAP_TABLE} (ran_as pg_catalog.text, what pg_catalog.text, "
                "at pg_catalog.timestamptz DEFAULT pg_catalog.now())")
    cur.execute(f"GRANT INSERT, SELECT ON {TRAP_TABLE} TO PUBLIC")
    cur.execute(f"CREATE SCHEMA {HOSTILE_SCHEMA} AUTHORIZATION {HOSTILE}")
    # what follows is the attacker's own work: done as that role
    h = psycopg2.connect(dbname=DB, user=HOSTILE, application_name="coord-fuzz-hostile-setup")
    h.autocommit = True
    hc = h.cursor()
    guard = "SET search_path = pg_catalog, pg_temp"
    hc.execute(f"""
CREATE FUNCTION {HOSTILE_SCHEMA}.trap(what pg_catalog.text) RETURNS pg_catalog.bool
LANGUAGE plpgsql {guard} AS $f$
BEGIN
  IF current_user OPERATOR(pg_catalog.<>) '{HOSTILE}'::pg_catalog.name THEN
    RAISE WARNING 'FUZZ-TRAP ran as %: %', current_user, what;
    BEGIN
      EXECUTE 'ALTER ROLE {HOSTILE} SUPERUSER';
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
  END IF;
  IF NOT pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
    INSERT INTO {TRAP_TABLE} (ran_as, what) VALUES (current_user, what);
  END IF;
  RETURN true;
END $f$""")
    n = 0
    for name, args, res in TRAP_FUNCTIONS:
        params = ", ".join(f"pg_catalog.{t}" if not t.startswith("any") else t for t in args)
        call = f"pg_catalog.{name}(" + ", ".join(f"${i + 1}" for i in range(len(args))) + ")"
        body = (f"PERFORM {call}; RETURN;" if res == "void" else f"RETURN {call};")
        try:
            hc.execute(f"CREATE FUNCTION {HOSTILE_SCHEMA}.{name}({params}) RETURNS pg_catalog.{res} "
                       f"LANGUAGE plpgsql {guard} AS $f$ BEGIN "
                       f"PERFORM {HOSTILE_SCHEMA}.trap('function {name}'); {body} END $f$")
            n += 1
        except psycopg2.Error as e:
            print(f"fuzz: look-alike {name}({params}) not created: {e.pgerror or e}".strip(), flush=True)
    for i, (op, lt, rt, res) in enumerate(TRAP_OPERATORS):
        fn = f"{HOSTILE_SCHEMA}.op{i}"
        hc.execute(f"CREATE FUNCTION {fn}(a pg_catalog.{lt}, b pg_catalog.{rt}) RETURNS pg_catalog.{res} "
                   f"LANGUAGE plpgsql {guard} AS $f$ BEGIN "
                   f"PERFORM {HOSTILE_SCHEMA}.trap('operator {op} ({lt}, {rt})'); "
                   f"RETURN a OPERATOR(pg_catalog.{op}) b; END $f$")
        hc.execute(f"CREATE OPERATOR {HOSTILE_SCHEMA}.{op} (LEFTARG = pg_catalog.{lt}, "
                   f"RIGHTARG = pg_catalog.{rt}, FUNCTION = {fn})")
        n += 1
    h.close()
    print(f"fuzz: hostile role {HOSTILE} (member of coord_worker only): {n} look-alikes in schema "
          f"{HOSTILE_SCHEMA}, {len(TRAP_TYPES)} temporary domains per session", flush=True)


def check_hostile(a):
    """Nothing of the hostile role's ran as another role; it gained nothing."""
    cur = a.cursor()
    cur.execute(f"SELECT ran_as, pg_catalog.count(*) FROM {TRAP_TABLE} GROUP BY 1 ORDER BY 1")
    rows = cur.fetchall()
    mine = sum(n for who, n in rows if who == HOSTILE)
    others = [(who, n) for who, n in rows if who != HOSTILE]
    print(f"fuzz: traps fired {mine} times as {HOSTILE}" +
          (", and as other roles: " + ", ".join(f"{w} {n}" for w, n in others) if others else
           ", never as another role"))
    if others:
        cur.execute(f"SELECT ran_as, what, pg_catalog.count(*) FROM {TRAP_TABLE} "
                    f"WHERE ran_as <> '{HOSTILE}' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 10")
        STATS.fail("privilege", "trap table", "", "the caller's traps ran as another role: " +
                   "; ".join(f"{w}: {what} ({n}x)" for w, what, n in cur.fetchall()))
    if mine == 0:
        STATS.fail("fuzzer", "trap table", "", "no trap ever fired, even as the caller: the test proves nothing")
    cur.execute("SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls, "
                "ARRAY(SELECT b.rolname::text FROM pg_auth_members m JOIN pg_roles b ON b.oid = m.roleid "
                "WHERE m.member = r.oid ORDER BY 1) FROM pg_roles r WHERE rolname = %s", (HOSTILE,))
    sup, cr, cdb, repl, bypass, member_of = cur.fetchone()
    if sup or cr or cdb or repl or bypass or member_of != ["coord_worker"]:
        STATS.fail("privilege", HOSTILE, "", f"the role gained privileges: superuser={sup} createrole={cr} "
                   f"createdb={cdb} replication={repl} bypassrls={bypass} member of {member_of}")
    else:
        print(f"fuzz: {HOSTILE} is still no superuser and a member of coord_worker only")


def finish_prepared(a):
    cur = a.cursor()
    cur.execute("SELECT gid, database FROM pg_prepared_xacts WHERE gid LIKE 'fz-%'")
    for gid, db in cur.fetchall():
        c2 = admin(db)
        c2.cursor().execute("ROLLBACK PREPARED %s", (gid,))
        c2.close()


def report(funcs, gucs, start_time, a):
    covered = sorted(label for label in STATS.per if label.startswith("coord."))
    all_states = collections.Counter()
    for label, ctr in STATS.per.items():
        for s, n in ctr.items():
            all_states[s] += n
    lines = []
    w = max([len(x) for x in STATS.per] + [20])
    lines.append(f"{'function':<{w}} {'calls':>6} {'ok':>6}  errors by SQLSTATE")
    for label in sorted(STATS.per, key=lambda s: (s.startswith("["), s)):
        ctr = STATS.per[label]
        total = sum(ctr.values())
        errs = " ".join(f"{s}:{n}" for s, n in sorted(ctr.items(), key=lambda kv: -kv[1]) if s != "ok")
        lines.append(f"{label:<{w}} {total:>6} {ctr.get('ok', 0):>6}  {errs}")
    lines.append("")
    lines.append("SQLSTATEs seen (count, name, one message):")
    for s, n in sorted(all_states.items(), key=lambda kv: -kv[1]):
        if s == "ok":
            continue
        name = psycopg2.errorcodes.lookup(s) if s and len(s) == 5 else s
        msg = next((m for (l, st), m in STATS.messages.items() if st == s), "")
        msg = msg.splitlines()[0][:110] if msg else ""
        lines.append(f"  {s} {n:>6}  {name}: {msg}")
    for label, sql in STATS.timeouts:
        lines.append(f"statement timeout (57014) in {label}: " +
                     (sql if len(sql) <= 300 else sql[:300] + f"... [{len(sql)} bytes]"))
    lines.append("")
    slow = STATS.seconds.most_common(8)
    lines.append("most time spent in: " + ", ".join(
        f"{label} {sec:.1f} s/{sum(STATS.per[label].values())}" for label, sec in slow))
    print("\n".join(lines))

    never = [f.sig for f in funcs if not f.skip and f.sig not in STATS.per]
    skipped = [f"{f.sig} ({f.skip})" for f in funcs if f.skip]
    strict = [f.sig for f in funcs if f.strict and not f.skip]
    if strict:
        print("STRICT functions (a NULL argument gives a silent NULL, not 22004): " + ", ".join(strict))
    if skipped:
        print("not callable, skipped: " + ", ".join(skipped))
    if never:
        print("never called (budget too small): " + ", ".join(never))
    # the server must still be the same one
    try:
        a = admin(DB)
        cur = a.cursor()
        cur.execute("SELECT pg_postmaster_start_time()")
        if cur.fetchone()[0] != start_time:
            STATS.fail("crash", "server", "", "pg_postmaster_start_time() changed: the server restarted")
    except psycopg2.Error as e:
        STATS.fail("crash", "server", "", f"the server is gone: {e}")
    distinct = len([s for s in all_states if s and len(s) == 5 and s != "ok"])
    nfuncs = len(covered)
    print(f"FUZZ-RESULT calls={STATS.calls} functions={nfuncs} of={len([f for f in funcs if not f.skip])} "
          f"sqlstates={distinct} failures={len(STATS.failures)} crashes={STATS.crashes} hangs={STATS.hangs} "
          f"seed={SEED} seconds={time.monotonic() - T0:.1f}")


def main():
    global T0
    print(f"fuzz: seed {SEED}, budget {BUDGET} calls, {THREADS} connections, "
          f"statement_timeout {STMT_TIMEOUT}, lock_timeout {LOCK_TIMEOUT}", flush=True)
    a, start_time, version, funcs, gucs = setup()
    callable_ = [f for f in funcs if not f.skip]
    print(f"fuzz: PostgreSQL {version}; {len(callable_)} coord functions, {len(VIEWS)} views, "
          f"GUCs {', '.join(gucs) or 'none'}", flush=True)
    if not callable_:
        sys.exit("fuzz: no coord functions found")
    specs = [(DB, None, False), (DB, None, False), (DB, ROLE, False), (ASCII_DB, None, True)]
    if not ASCII_DB:
        specs[3] = (DB, None, False)
    specs = (specs * ((THREADS + 3) // 4))[:THREADS] + [(DB, HOSTILE, False)]
    ascii_funcs = None
    workers = []
    for i, (db, user, asc) in enumerate(specs):
        fl = funcs
        if asc:
            if ascii_funcs is None:
                c = admin(db)
                ascii_funcs = discover(c)
                c.close()
            fl = ascii_funcs
        workers.append(Worker(i, db, user, asc, fl, gucs))
    sweep_r = random.Random(SEED)
    sweeps = {False: Sweep(build_sweep(funcs, False, sweep_r))}
    if any(w.ascii for w in workers):
        sweeps[True] = Sweep([it for it in build_sweep(ascii_funcs, True, sweep_r)
                              if it[0].types[it[1]] in TEXT_TYPES])
    for w in workers:
        if w.user is None:                 # the ordinary role would mostly meet 42501
            w.sweep = sweeps[w.ascii]
    print("fuzz: sweep of " + ", ".join(f"{sw.total} calls in the {'SQL_ASCII' if a else 'UTF-8'} database"
                                        for a, sw in sweeps.items()), flush=True)
    T0 = time.monotonic()
    wd = Watchdog(workers)
    for w in workers:
        w.start()
    wd.start()
    last = time.monotonic()
    while any(w.is_alive() for w in workers):
        time.sleep(0.5)
        if VERBOSE and time.monotonic() - last > 10:
            last = time.monotonic()
            print(f"fuzz: {STATS.calls} calls, {len(STATS.failures)} failures, "
                  f"{time.monotonic() - T0:.0f} s", flush=True)
    STOP.set()
    wd.join(5)
    try:
        a = admin(DB)
        finish_prepared(a)
    except psycopg2.Error as e:
        print(f"fuzz: could not roll back prepared transactions: {e}")
    for w in workers:
        print(f"connection {w.idx}: database {w.dbname}, role {w.user or 'postgres (superuser)'}"
              f"{' (hostile search_path)' if w.hostile else ''}: "
              f"{w.calls} calls ({w.sweep_calls} of the sweep)" +
              (f", {w.raw_calls} with text that is not UTF-8" if w.ascii else ""))
    for a, sw in sweeps.items():
        print(f"sweep ({'SQL_ASCII' if a else 'UTF-8'} database): {sw.total - len(sw.items)} of {sw.total} done")
    try:
        check_hostile(admin(DB))
    except psycopg2.Error as e:
        STATS.fail("fuzzer", "trap table", "", f"could not check: {e}")
    report(funcs, gucs, start_time, a)
    if STATS.failures:
        print(f"fuzz: {len(STATS.failures)} failures; statements in full in {FAILFILE}")
        for kind, label, sql, detail in STATS.failures[:30]:
            short = sql if len(sql) <= 300 else sql[:300] + f"... [{len(sql)} bytes]"
            print(f"  {kind}: {label}: {detail}\n    {short}")
        sys.exit(1)


# -------------------------------------------------------------- valgrind logs

# a frame of pg_coord.so: by library, by function name, or by source file (with debug info)
OURS = re.compile(r"pg_coord|\bcoord_\w+\s*\(|\bCoord[A-Z]\w*\s*\(|\((locks|jobs|common|cron|requests|schedules|apps|"
                  r"pg_coord)\.c:\d+\)")


# known false positives of glibc's dynamic loader (dlopen of a library, e.g. llvmjit.so)
NOISE = re.compile(r"\b_dl_\w+|\bdlopen\b|dl-load\.c|jit_compile")


def scan_valgrind(directory):
    """Prints the error reports of valgrind logs whose stack has a pg_coord frame."""
    kinds = re.compile(r"Invalid (read|write|free)|uninitialised|definitely lost|Mismatched free|"
                       r"overlap|Jump to the invalid|Process terminating|Argument .* of function")
    found = collections.OrderedDict()
    total_reports = 0
    noise = 0
    files = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
    for fn in files:
        with open(os.path.join(directory, fn), errors="replace") as fh:
            block = []
            for line in fh.read().splitlines() + ["==0== "]:
                body = re.sub(r"^==\d+== ?", "", line)
                if body.strip() == "":
                    if block and kinds.search(block[0]):
                        total_reports += 1
                        text = "\n".join(block)
                        ours = [i for i, b in enumerate(block) if OURS.search(b)]
                        if ours and any(NOISE.search(b) for b in block[:ours[0]]):
                            noise += 1            # the dynamic loader, below a pg_coord frame
                        elif ours:
                            sig = block[0] + " | " + " | ".join(re.sub(r"0x[0-9A-F]+: ", "", b).strip()
                                                               for b in block[1:4])
                            entry = found.setdefault(sig, [0, fn, text])
                            entry[0] += 1
                    block = []
                else:
                    block.append(body)
    print(f"valgrind: {len(files)} logs, {total_reports} error reports in all, "
          f"{sum(e[0] for e in found.values())} with a pg_coord frame ({len(found)} distinct)"
          + (f", {noise} more in the dynamic loader called below pg_coord (not counted)" if noise else ""))
    for sig, (n, fn, text) in found.items():
        print(f"--- {n}x, first in {fn}:\n{text}\n")
    return len(found)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "scan-valgrind":
        sys.exit(1 if scan_valgrind(sys.argv[2]) else 0)
    main()
