#!/usr/bin/env python3
"""SECURITY.md against the catalog of the installed pg_coord: every function
and view that a role is granted (EXECUTE, or SELECT on the view or on some of
its columns) is named in SECURITY.md, so a new grant cannot ship without the
security page saying who gets it and why.  A name counts when it appears in
backquotes, bare (`claim`) or qualified (`coord.claim`, `coord.claim(...)`),
or is covered by a pattern in backquotes (`purge_*`).  Objects granted to no
role (internal functions, tables) need no mention.

Runs against a server like reference.py (whose catalog query it uses):
    test/docs/security.py        TAP "ok 1 - SECURITY.md ..."
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import reference  # noqa: E402

DOC = pathlib.Path("SECURITY.md")
SPAN = re.compile(r"`([^`]*)`")
NAME = re.compile(r"^(?:coord\.)?(?P<name>[a-z_][a-z0-9_]*\*?)(?:\(.*\))?$")


def named(text):
    """The names SECURITY.md mentions in backquotes, and its patterns."""
    names, patterns = set(), []
    for span in SPAN.findall(text):
        for part in re.split(r"[,\s]+", span.strip()):
            m = NAME.match(part)
            if not m:
                continue
            n = m.group("name")
            if n.endswith("*"):
                patterns.append(n[:-1])
            else:
                names.add(n)
    return names, patterns


def missing(cat, text):
    names, patterns = named(text)
    out = []
    granted = [("function", f["name"], f["roles"]) for f in cat["functions"]]
    granted += [("view", r["name"], r["roles"]) for r in cat["relations"] if r["kind"] == "v"]
    for kind, name, roles in granted:
        roles = [r for r in roles if r != "PUBLIC"] if roles else []
        if not roles:
            continue
        if name in names or any(name.startswith(p) for p in patterns):
            continue
        out.append(f"{kind} coord.{name} is granted to {', '.join(sorted(roles))} "
                   f"but {DOC} does not name it")
    return sorted(set(out))


def main():
    root = pathlib.Path(__file__).resolve().parents[2]
    text = (root / DOC).read_text(encoding="utf-8")
    cat = reference.catalog()
    problems = missing(cat, text)
    if problems:
        print(f"not ok 1 - {DOC}: {len(problems)} granted object(s) not named")
        for p in problems:
            print(f"#   {p}")
        return 1
    n = len([f for f in cat["functions"] if f["roles"]]) + \
        len([r for r in cat["relations"] if r["kind"] == "v" and r["roles"]])
    print(f"ok 1 - {DOC} names every granted object ({n} functions and views)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
