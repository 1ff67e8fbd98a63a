#!/usr/bin/env python3
"""Runs the SQL examples of the manual: every ```sql fenced block of
README.md and docs/**/*.md, in page order, in one psql session per page,
against a fresh database where `CREATE EXTENSION pg_coord CASCADE` is done,
as a superuser, with ON_ERROR_STOP.  Session state carries from block to
block on a page.  Markers, HTML comments on the line(s) directly before a
fence:

  <!-- example: skip -->          not run
  <!-- example: error 55000 -->   the block must fail, and its first error
                                  must have exactly this SQLSTATE; the page
                                  goes on (the block runs with ON_ERROR_STOP
                                  off, so statements after the failing one
                                  still run: end the block with it)
  <!-- example: setup
  CREATE ROLE app_user LOGIN;
  -->                             hidden SQL run just before the next block

Every block (and setup) must end its last statement (a `;` or a psql
meta-command such as \\gset): psql would otherwise glue it to the next one.
An unknown marker, a marker not directly before a ```sql fence, or an
unterminated fence (of any language) fails the page without running it.

Every ```python block needs a marker of its own: `<!-- example: run -->`
runs it, after the page's SQL, with Debian's python3 (psycopg2 and
psycopg 3 are there, and the tree's clients/python as pg_coord) in a fresh
database of its own (PGDATABASE), and it
must exit 0 within the page's time (end it with an assert of what it
shows); `<!-- example: skip -->` says why not in the text around it (a
fragment, a second host, the quick start's own test).

    test/docs/examples.py [PAGE...]     pages relative to the repository root
                                        (default: README.md and docs/**/*.md)
    test/docs/examples.py --check [PAGE...]   parse only, no server
    test/docs/examples.py --self-test   the runner on test/docs/cases/*.md, whose
                                        first lines say what must come of each

Connects with the PG* environment (make test's private cluster), as a
superuser; each page gets the database coord_docs_examples, dropped after.
Prints one TAP line per page ("ok 1 - README.md (13 blocks, 2 skipped)",
"not ok 2 - docs/x.md:41: ERROR 22023: ... (block at docs/x.md:38)"), then
a summary; exits 1 if any page failed.
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
DB = "coord_docs_examples"
PAGE_TIMEOUT = int(os.environ.get("COORD_DOCS_PAGE_TIMEOUT", "120"))
END = "@@pg_coord-docs-examples-end@@"
# Debian's python3 has psycopg2 and psycopg 3, whatever python3 comes first on PATH
PYTHON = os.environ.get("COORD_DOCS_PYTHON", "/usr/bin/python3")

FENCE_OPEN = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARKER_START = re.compile(r"^\s*<!--\s*example\b")
MARKER = re.compile(r"^\s*<!--\s*example:\s*(?P<body>.*)$")
SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")
# psql -f reports "psql:FILE:LINE: ERROR:  22023: message" (VERBOSITY verbose),
# and its own errors as "psql:FILE:LINE: error: ..."
PSQL_ERROR = re.compile(r"^psql:(?P<file>.*?):(?P<line>\d+): (?:(?P<sev>ERROR|FATAL|PANIC):\s+"
                        r"(?P<state>[0-9A-Z]{5}): (?P<msg>.*)|error: (?P<client>.*))$")


class PageError(Exception):
    """A page the runner cannot run: bad marker, unterminated fence."""

    def __init__(self, line, msg):
        super().__init__(msg)
        self.line = line
        self.msg = msg


class Block:
    def __init__(self, line, lines):
        self.line = line            # 1-based line of the opening fence
        self.lines = lines          # [(md_line, text)] of the content
        self.skip = False
        self.error = None           # expected SQLSTATE
        self.setup = []             # [(md_line, text)] hidden SQL
        self.lang = "sql"


def terminated(lines):
    """Whether the last statement of lines is complete: it ends with `;`
    (a trailing -- comment aside) or is a psql meta-command."""
    for _, text in reversed(lines):
        s = text.strip()
        if not s or s.startswith("--"):
            continue
        if s.startswith("\\") or re.search(r"\\g\w*(\s.*)?$", s):
            return True
        return strip_comment(s).endswith(";")
    return True                     # nothing but comments


def strip_comment(s):
    """s without a trailing -- comment (one outside quotes), right-stripped."""
    quote = None
    for k, c in enumerate(s):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif s.startswith("--", k):
            return s[:k].rstrip()
    return s.rstrip()


def parse_marker(page_lines, i):
    """The marker starting at page_lines[i]: (kind, arg, setup_lines, next_i)."""
    start = i + 1
    m = MARKER.match(page_lines[i])
    if not m:
        raise PageError(start, "malformed example marker (want <!-- example: skip|error SQLSTATE|setup ... -->)")
    body = m.group("body")
    text = []
    if "-->" in body:
        text.append((start, body[:body.index("-->")]))
        if body[body.index("-->") + 3:].strip():
            raise PageError(start, "text after the example marker's -->")
        nxt = i + 1
    else:
        text.append((start, body))
        j = i + 1
        while j < len(page_lines) and "-->" not in page_lines[j]:
            text.append((j + 1, page_lines[j]))
            j += 1
        if j == len(page_lines):
            raise PageError(start, "unterminated example marker (no -->)")
        tail = page_lines[j]
        if tail[tail.index("-->") + 3:].strip():
            raise PageError(j + 1, "text after the example marker's -->")
        text.append((j + 1, tail[:tail.index("-->")]))
        nxt = j + 1
    first = text[0][1].strip()
    word, _, rest = first.partition(" ")
    if word in ("skip", "run"):
        if rest.strip() or any(t.strip() for _, t in text[1:]):
            raise PageError(start, f"example: {word} takes nothing after it")
        return word, None, None, nxt
    if word == "error":
        state = rest.strip()
        if not SQLSTATE.match(state) or any(t.strip() for _, t in text[1:]):
            raise PageError(start, f"example: error needs one SQLSTATE (5 characters), not {rest.strip()!r}")
        return "error", state, None, nxt
    if word == "setup":
        sql = [(text[0][0], rest)] + text[1:]
        sql = [(n, t) for n, t in sql if t.strip()]
        if not sql:
            raise PageError(start, "example: setup without SQL")
        if not terminated(sql):
            raise PageError(start, "the setup's last statement does not end with ';'")
        return "setup", None, sql, nxt
    raise PageError(start, f"unknown example marker {word!r} (known: skip, error SQLSTATE, setup, run)")


def parse_page(text):
    """The ```sql blocks of a page with their markers; raises PageError."""
    page_lines = text.split("\n")
    blocks = []
    pending = []                    # markers waiting for their fence
    i = 0
    while i < len(page_lines):
        line = page_lines[i]
        if MARKER_START.match(line):
            pending.append(parse_marker(page_lines, i) + (i + 1,))
            i = pending[-1][3]
            if i >= len(page_lines) or not (MARKER_START.match(page_lines[i]) or FENCE_OPEN.match(page_lines[i])):
                raise PageError(pending[-1][4], "example marker not directly before a ```sql fence")
            continue
        m = FENCE_OPEN.match(line)
        if m and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
            fence, indent = m.group("fence"), len(m.group("indent").expandtabs())
            lang = m.group("info").strip().split(" ")[0].lower()
            content = []
            j = i + 1
            while j < len(page_lines):
                close = page_lines[j].strip()
                if close and set(close) == {fence[0]} and len(close) >= len(fence):
                    break
                t = page_lines[j].expandtabs()
                n = len(t) - len(t.lstrip(" "))
                content.append((j + 1, t[min(n, indent):]))
                j += 1
            if j == len(page_lines):
                raise PageError(i + 1, f"unterminated {fence} fence")
            if lang == "python":
                kinds = [p[0] for p in pending]
                if kinds not in (["run"], ["skip"]):
                    raise PageError(i + 1, "a ```python block needs one marker: <!-- example: run --> "
                                           "or <!-- example: skip -->")
                b = Block(i + 1, content)
                b.lang, b.skip = "python", kinds == ["skip"]
                blocks.append(b)
            elif lang == "sql":
                b = Block(i + 1, content)
                for kind, arg, sql, _, mline in pending:
                    if kind == "run":
                        raise PageError(mline, "example: run is for ```python blocks (sql blocks run anyway)")
                    if kind == "skip":
                        b.skip = True
                    elif kind == "error":
                        if b.error:
                            raise PageError(mline, "two example: error markers on one block")
                        b.error = arg
                    else:
                        b.setup += sql
                if b.skip and b.error:
                    raise PageError(b.line, "a block cannot be both example: skip and example: error")
                if not b.skip and not terminated(b.lines):
                    raise PageError(b.line, "the block's last statement does not end with ';' "
                                            "(psql would run it with the next block)")
                blocks.append(b)
            elif pending:
                raise PageError(pending[0][4], f"example marker before a ```{lang or '(no language)'} fence, "
                                               "which is not run")
            pending = []
            i = j + 1
            continue
        i += 1
    return blocks


def psql(*args, **kw):
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *args],
                          capture_output=True, text=True, **kw)


def fresh_db():
    r = psql("-d", "postgres", "-c", "SET client_min_messages = warning",
             "-c", f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)", "-c", f"CREATE DATABASE {DB}")
    if r.returncode == 0:
        r = psql("-d", DB, "-c", "SET client_min_messages = warning",
                 "-c", "CREATE EXTENSION pg_coord CASCADE")
    if r.returncode != 0:
        raise RuntimeError(f"cannot make the database {DB}: {r.stderr.strip()}")


def drop_db():
    psql("-d", "postgres", "-c", "SET client_min_messages = warning",
         "-c", f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")


def run_page(page, blocks):
    """Runs a page's blocks; returns None or the failure's description."""
    script = ["\\set VERBOSITY verbose", "\\set SHOW_CONTEXT never", "\\pset pager off"]
    origin = [None] * len(script)   # script line -> (block, md line)

    def emit(b, lines):
        for n, t in lines:
            script.append(t)
            origin.append((b, n))

    def meta(text):
        script.append(text)
        origin.append(None)

    for b in blocks:
        if b.lang != "sql":
            continue
        emit(b, b.setup)
        if b.skip:
            continue
        if b.error:
            meta("\\set ON_ERROR_STOP off")
            emit(b, b.lines)
            meta("\\set ON_ERROR_STOP on")
        else:
            emit(b, b.lines)
    meta(f"\\echo {END}")

    fresh_db()
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".sql", prefix="coord_docs_", delete=False) as f:
            f.write("\n".join(script) + "\n")
            path = f.name
        try:
            r = psql("-d", DB, "-f", path, timeout=PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"{page}: timed out after {PAGE_TIMEOUT} s"
        finally:
            os.unlink(path)
    finally:
        drop_db()

    errors = []                     # (script line, sqlstate, message)
    for line in r.stderr.splitlines():
        m = PSQL_ERROR.match(line)
        if m and m.group("file") == path:
            errors.append((int(m.group("line")), m.group("state") or "psql",
                           m.group("msg") if m.group("msg") is not None else m.group("client")))
    seen = set()
    for n, state, msg in errors:
        o = origin[n - 1] if 0 < n <= len(origin) else None
        if o is None:
            return f"{page}: psql error outside any block: {state}: {msg}"
        b, md = o
        where = f"{page}:{md}"
        block_at = f"(block at {page}:{b.line})"
        in_setup = any(md == sn for sn, _ in b.setup) and md < b.line
        if b.error and not in_setup:
            if b in seen:
                continue            # only a block's first error counts
            seen.add(b)
            if state != b.error:
                return f"{where}: ERROR {state}: {msg}, expected SQLSTATE {b.error} {block_at}"
            continue
        what = "setup of the block" if in_setup else "ERROR"
        hint = (" (an earlier block left a failed transaction open: end it with ROLLBACK)"
                if state == "25P02" else "")
        return f"{where}: {what} {state}: {msg} {block_at}{hint}"
    if END not in r.stdout:
        tail = " | ".join(r.stderr.strip().splitlines()[-3:])
        return f"{page}: psql stopped before the end of the page (exit {r.returncode}): {tail}"
    for b in blocks:
        if b.error and not b.skip and b not in seen:
            return f"{page}:{b.line}: the block ran without an error, expected SQLSTATE {b.error}"
    for b in blocks:
        if b.lang == "python" and not b.skip:
            err = run_python(page, b)
            if err:
                return err
    return None


def run_python(page, b):
    """Runs a ```python block in a fresh database; None or the failure."""
    fresh_db()
    try:
        # the Python client of the tree (clients/python) is importable as pg_coord
        path = [str(ROOT / "clients" / "python" / "src")] + [p for p in [os.environ.get("PYTHONPATH")] if p]
        env = dict(os.environ, PGDATABASE=DB, PYTHONPATH=os.pathsep.join(path))
        try:
            # not in the tree's root, where python would import pg_coord.so as a module
            with tempfile.TemporaryDirectory() as cwd:
                r = subprocess.run([PYTHON, "-c", "\n".join(t for _, t in b.lines)], env=env, cwd=cwd,
                                   capture_output=True, text=True, timeout=PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return f"{page}:{b.line}: the python block timed out after {PAGE_TIMEOUT} s"
    finally:
        drop_db()
    if r.returncode != 0:
        tail = " | ".join(r.stderr.strip().splitlines()[-3:])
        return f"{page}:{b.line}: the python block exited {r.returncode}: {tail}"
    return None


def pages(args):
    if args:
        return [pathlib.Path(a) for a in args]
    found = [pathlib.Path("README.md")] if (ROOT / "README.md").exists() else []
    found += sorted(p.relative_to(ROOT) for p in (ROOT / "docs").rglob("*.md"))
    return found


def outcome(page, check_only=False):
    """(None, blocks, skipped) when the page passes, else (failure, ...)."""
    try:
        blocks = parse_page(page.read_text(encoding="utf-8"))
    except PageError as e:
        return f"{page}:{e.line}: {e.msg}", 0, 0
    except OSError as e:
        return f"{page}: {e}", 0, 0
    try:
        err = None if check_only else run_page(page, blocks)
    except RuntimeError as e:       # the fresh database could not be made
        err = f"{page}: {e}"
    return err, len(blocks), sum(b.skip for b in blocks)


def self_test():
    """The runner on test/docs/cases/*.md, each of which says on its first
    line what must come of it: <!-- expect: ok --> or <!-- expect: fail TEXT -->
    (TEXT a part of the failure's description)."""
    cases = sorted((ROOT / "test/docs/cases").glob("*.md"))
    failed = 0
    for k, case in enumerate(cases, 1):
        page = case.relative_to(ROOT)
        m = re.match(r"<!-- expect: (ok|fail (.*)) -->", case.read_text(encoding="utf-8"))
        if not m:
            print(f"not ok {k} - self-test {page}: no <!-- expect: ok|fail TEXT --> on its first line")
            failed += 1
            continue
        err, _, _ = outcome(page)
        good = err is None if m.group(1) == "ok" else (err is not None and m.group(2) in err)
        if good:
            print(f"ok {k} - self-test {page}: {err or 'passes'}")
        else:
            failed += 1
            print(f"not ok {k} - self-test {page}: expected {m.group(1)}, got {err or 'a pass'}")
    print(f"1..{len(cases)}")
    print(f"examples self-test: {len(cases)} cases, {failed} not as expected")
    return 1 if failed else 0


def main(argv):
    check_only = "--check" in argv
    args = [a for a in argv if a not in ("--check", "--self-test")]
    os.chdir(ROOT)
    if not check_only:
        r = psql("-d", "postgres", "-At", "-c", "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if r.returncode != 0 or r.stdout.strip() != "t":
            print(f"examples: need a superuser connection (PG* environment): {r.stderr.strip() or 'not superuser'}")
            return 1
    if "--self-test" in argv:
        return self_test()
    failed = 0
    plist = pages(args)
    total_blocks = 0
    for k, page in enumerate(plist, 1):
        err, nblocks, skipped = outcome(page, check_only)
        total_blocks += nblocks
        if err:
            print(f"not ok {k} - {err}")
            failed += 1
        else:
            print(f"ok {k} - {page} ({nblocks} blocks, {skipped} skipped"
                  f"{', not run' if check_only else ''})")
    print(f"1..{len(plist)}")
    print(f"examples: {len(plist)} pages, {total_blocks} blocks, {failed} pages failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
