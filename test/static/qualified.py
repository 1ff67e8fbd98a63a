#!/usr/bin/env python3
"""Static check: SQL text inside C string literals in src/ names every type,
cast and collation with its schema (pg_catalog. or coord.).

Owner-run statements pin search_path to pg_catalog, pg_temp (common.c), and
this check is the second wall: an unqualified "::jsonb" or COLLATE "C" would
be resolved through whatever search_path is in force.  It fails, naming the
file and line, on
  - a cast "::type" whose type is not schema-qualified,
  - COLLATE not followed by pg_catalog.,
  - CAST(... AS type) with an unqualified type,
  - a typed literal such as  interval '1 hour'  or  jsonb '{}'.
Adjacent literals are joined first, as the C compiler joins them.
Prints "qualified: N literals checked, 0 unqualified" and exits 0, or lists
the offenders and exits 1.
"""
import re
import sys
import pathlib

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
# src/ and its family folders (src/jobs/, ...)
files = sorted((root / "src").rglob("*.c")) + sorted((root / "src").rglob("*.h"))

# C string literals, with escapes; comments and char literals skipped.
token = re.compile(r'//[^\n]*|/\*.*?\*/|\'(?:\\.|[^\\\'])*\'|"((?:\\.|[^\\"\n])*)"', re.S)
SQL_HINT = re.compile(r'\b(SELECT|INSERT|UPDATE|DELETE|FROM|WHERE|RETURNING|VALUES|ORDER BY)\b')
Q = r'(?:pg_catalog|coord)\.'
TYPES = r'(?:jsonb|json|text|interval|timestamptz|timestamp|bigint|int8|integer|int4|int|smallint|int2|boolean|bool|numeric|date|name|oid|regclass|bytea|inet|varchar|char|float8|float4|real)'
rules = [
    ("unqualified cast", re.compile(r'::\s*(?!' + Q + r')(?:"[^"]*"|[A-Za-z_][A-Za-z0-9_]*)')),
    ("unqualified collation", re.compile(r'\bCOLLATE\s+(?!' + Q + r')', re.I)),
    ("unqualified CAST type", re.compile(r'\bCAST\s*\((?:[^()]|\([^()]*\))*?\bAS\s+(?!' + Q + r')[A-Za-z_"]', re.I)),
    ("typed literal", re.compile(r'(?<![.\w])' + TYPES + r"\s+'", re.I)),
]

checked = 0
bad = []
for f in files:
    src = f.read_text()
    # join adjacent literals: a run of literals separated by whitespace only
    pos = 0
    run, run_line, last_end = [], None, None
    def flush():
        global checked
        if run:
            text = "".join(run)
            if SQL_HINT.search(text):
                checked += 1
                for what, rx in rules:
                    for m in rx.finditer(text):
                        bad.append(f"{f.relative_to(root)}:{run_line}: {what}: ...{text[max(0, m.start()-30):m.end()+20]}...")
    for m in token.finditer(src):
        if m.group(1) is None:
            flush(); run = []; continue
        between = src[last_end:m.start()] if last_end is not None else "x"
        if run and between.strip() == "":
            run.append(m.group(1))
        else:
            flush()
            run = [m.group(1)]
            run_line = src.count("\n", 0, m.start()) + 1
        last_end = m.end()
    flush()

if bad:
    print("\n".join(bad))
    print(f"qualified: {checked} statement literals checked, {len(bad)} unqualified")
    sys.exit(1)
print(f"qualified: {checked} statement literals checked, 0 unqualified")
