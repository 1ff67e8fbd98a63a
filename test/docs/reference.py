#!/usr/bin/env python3
"""docs/reference.md against the catalog of the installed pg_coord, so the
reference cannot drift: every function (each overload), view, table and
setting of the extension has its entry, and nothing that does not exist has
one.  An entry is a `### coord.NAME` heading (settings and tables: a row of
the tables under `## Settings` and `## Tables`) whose lines give:

  `coord.NAME(ARGUMENTS) → RESULT`   one line per overload, ARGUMENTS and
                                     RESULT exactly as pg_get_function_arguments
                                     and pg_get_function_result print them
  Columns: `name type`, ...          a view's (or a composite type's) columns
                                     in order, types as format_type prints them
  Role: `coord_worker`, ...          the roles granted EXECUTE (a view: SELECT,
                                     on the view or on some of its columns)
                                     directly, in backquotes; `none` when no
                                     role is; text in parentheses is a remark
  Errors: ...                        every function: the errors it raises
                                     (not TODO, which --skeleton writes)

It needs the catalog, so it runs against a server (the PG* environment, a
superuser: make test's cluster), in a database of its own with the
extension created: the settings exist only in the loaded library
(DefineCustom*Variable in src/), not in any SQL script; the argument lists
are the catalog's canonical text (type names, default expressions), which
parsing sql/pg_coord--*.sql would have to reproduce; and the grants are
computed by loops over name lists in sql/parts/grants.sql.

    test/docs/reference.py              check; TAP "ok 1 - docs/reference.md ..."
    test/docs/reference.py --skeleton   print an entry to start from for every
                                        object without one (--all: for every object)
"""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = pathlib.Path("docs/reference.md")
DB = "coord_docs_reference"

CATALOG = r"""
LOAD 'pg_coord';
WITH members AS (
  SELECT d.classid, d.objid FROM pg_catalog.pg_depend AS d
   WHERE d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
     AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'pg_coord')
     AND d.deptype = 'e'),
grantees AS (
  SELECT a.grantee, a.privilege_type, r.oid AS relid, NULL::pg_catalog.oid AS procid
    FROM pg_catalog.pg_class AS r, pg_catalog.aclexplode(r.relacl) AS a
  UNION ALL
  SELECT a.grantee, a.privilege_type, att.attrelid, NULL
    FROM pg_catalog.pg_attribute AS att, pg_catalog.aclexplode(att.attacl) AS a
  UNION ALL
  SELECT a.grantee, a.privilege_type, NULL, p.oid
    FROM pg_catalog.pg_proc AS p,
         pg_catalog.aclexplode(COALESCE(p.proacl, pg_catalog.acldefault('f', p.proowner))) AS a),
rels AS (
  SELECT c.oid, c.relname, c.relkind, c.relowner FROM pg_catalog.pg_class AS c
   WHERE c.oid IN (SELECT objid FROM members WHERE classid = 'pg_catalog.pg_class'::pg_catalog.regclass)
      OR c.oid IN (SELECT t.typrelid FROM pg_catalog.pg_type AS t
                    WHERE t.oid IN (SELECT objid FROM members WHERE classid = 'pg_catalog.pg_type'::pg_catalog.regclass)))
SELECT pg_catalog.json_build_object(
  'functions', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
       'name', p.proname,
       'args', pg_catalog.pg_get_function_arguments(p.oid),
       'result', pg_catalog.pg_get_function_result(p.oid),
       'comment', pg_catalog.obj_description(p.oid, 'pg_proc'),
       'roles', (SELECT COALESCE(pg_catalog.json_agg(DISTINCT CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                                                                ELSE g.grantee::pg_catalog.regrole::text END), '[]')
                   FROM grantees AS g
                  WHERE g.procid = p.oid AND g.privilege_type = 'EXECUTE' AND g.grantee <> p.proowner))
       ORDER BY p.proname, pg_catalog.pg_get_function_arguments(p.oid))
     FROM pg_catalog.pg_proc AS p
    WHERE p.oid IN (SELECT objid FROM members WHERE classid = 'pg_catalog.pg_proc'::pg_catalog.regclass)),
  'relations', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
       'name', r.relname,
       'kind', r.relkind,
       'comment', COALESCE(pg_catalog.obj_description(r.oid, 'pg_class'),
                           (SELECT pg_catalog.obj_description(t.oid, 'pg_type')
                              FROM pg_catalog.pg_type AS t WHERE t.typrelid = r.oid)),
       'columns', (SELECT pg_catalog.json_agg(pg_catalog.quote_ident(a.attname) OPERATOR(pg_catalog.||) ' '
                                              OPERATOR(pg_catalog.||) pg_catalog.format_type(a.atttypid, a.atttypmod)
                                              ORDER BY a.attnum)
                     FROM pg_catalog.pg_attribute AS a
                    WHERE a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped),
       'roles', (SELECT COALESCE(pg_catalog.json_agg(DISTINCT CASE WHEN g.grantee = 0 THEN 'PUBLIC'
                                                                ELSE g.grantee::pg_catalog.regrole::text END), '[]')
                   FROM grantees AS g
                  WHERE g.relid = r.oid AND g.privilege_type = 'SELECT' AND g.grantee <> r.relowner))
       ORDER BY r.relkind, r.relname)
     FROM rels AS r WHERE r.relkind IN ('v', 'r', 'c')),
  'settings', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
       'name', s.name, 'type', s.vartype, 'unit', s.unit, 'default', s.boot_val,
       'min', s.min_val, 'max', s.max_val, 'context', s.context, 'comment', s.short_desc)
       ORDER BY s.name)
     FROM pg_catalog.pg_settings AS s WHERE s.name LIKE 'coord.%'))
"""

SIGNATURE = re.compile(r"^`coord\.(?P<name>\w+)\((?P<args>.*)\) → (?P<result>[^`]+)`\s*$")
HEADING = re.compile(r"^(?P<level>#{2,3}) +(?P<text>.*?)\s*$")
ENTRY = re.compile(r"^`?coord\.(?P<name>\w+)`?$")
ROW = re.compile(r"^\|\s*`coord\.(?P<name>\w+)`\s*\|")
SPAN = re.compile(r"`([^`]*)`")


def psql(*args):
    return subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *args],
                          capture_output=True, text=True)


def catalog():
    r = psql("-d", "postgres", "-c", "SET client_min_messages = warning",
             "-c", f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)", "-c", f"CREATE DATABASE {DB}")
    if r.returncode != 0:
        raise SystemExit(f"reference: cannot make database {DB}: {r.stderr.strip()}")
    try:
        r = psql("-d", DB, "-c", "CREATE EXTENSION pg_coord CASCADE")
        if r.returncode == 0:
            r = psql("-d", DB, "-At", "-c", CATALOG)
        if r.returncode != 0:
            raise SystemExit(f"reference: cannot read the catalog: {r.stderr.strip()}")
        cat = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        psql("-d", "postgres", "-c", "SET client_min_messages = warning",
             "-c", f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    return {k: v or [] for k, v in cat.items()}


def parse(text):
    """The reference's entries: {name: entry}, settings rows, table rows,
    and problems of form."""
    entries, settings, tables, problems = {}, {}, {}, []
    section, entry = "", None
    for n, line in enumerate(text.split("\n"), 1):
        h = HEADING.match(line)
        if h:
            entry = None
            if h.group("level") == "##":
                section = h.group("text")
                continue
            e = ENTRY.match(h.group("text"))
            if not e:
                continue
            name = e.group("name")
            if section == "Settings":
                settings.setdefault("coord." + name, n)
                continue
            if name in entries:
                problems.append(f"{DOC}:{n}: a second entry for coord.{name} "
                                f"(the first at line {entries[name]['line']})")
                continue
            entry = entries[name] = {"line": n, "signatures": [], "columns": None,
                                     "roles": None, "errors": False}
            continue
        row = ROW.match(line)
        if row and section in ("Settings", "Tables"):
            target = settings if section == "Settings" else tables
            key = ("coord." if section == "Settings" else "") + row.group("name")
            if key in target:
                problems.append(f"{DOC}:{n}: a second row for {key}")
            target.setdefault(key, n)
            continue
        sig = SIGNATURE.match(line)
        if sig:
            if entry is None or sig.group("name") != name:
                problems.append(f"{DOC}:{n}: signature of coord.{sig.group('name')} outside its "
                                f"### coord.{sig.group('name')} entry")
                continue
            entry["signatures"].append((n, sig.group("args"), sig.group("result")))
            continue
        if entry is None:
            continue
        if line.startswith("Columns:"):
            entry["columns"] = (n, SPAN.findall(line))
        elif line.startswith("Role:") or line.startswith("Roles:"):
            bare = re.sub(r"\([^()]*\)", "", line)     # (remarks) name no grantee
            entry["roles"] = (n, {r for r in SPAN.findall(bare) if re.fullmatch(r"coord_\w+|PUBLIC", r)})
        elif line.startswith("Errors:"):
            entry["errors"] = "TODO" not in line
    return entries, settings, tables, problems


def fmt_roles(roles):
    return ", ".join(f"`{r}`" for r in sorted(roles)) or "none"


def check(cat, text):
    entries, settings, tables, problems = parse(text)
    funcs = {}
    for f in cat["functions"]:
        funcs.setdefault(f["name"], []).append(f)
    rels = {r["name"]: r for r in cat["relations"]}
    views = {k: r for k, r in rels.items() if r["kind"] in ("v", "c")}

    for name, fs in sorted(funcs.items()):
        e = entries.get(name)
        if e is None:
            problems.append(f"coord.{name} has no entry in {DOC} "
                            f"(test/docs/reference.py --skeleton prints one to start from)")
            continue
        have = {(a, r) for _, a, r in e["signatures"]}
        want = {(f["args"], f["result"]) for f in fs}
        for f in fs:
            if (f["args"], f["result"]) not in have:
                problems.append(f"{DOC}:{e['line']}: coord.{name} lacks the line "
                                f"`coord.{name}({f['args']}) → {f['result']}`")
        for n, a, r in e["signatures"]:
            if (a, r) not in want:
                problems.append(f"{DOC}:{n}: `coord.{name}({a}) → {r}` is no function of pg_coord "
                                f"(its overloads: " + "; ".join(f"({f['args']}) → {f['result']}" for f in fs) + ")")
        roles = set().union(*(set(f["roles"]) for f in fs))
        if e["roles"] is None:
            problems.append(f"{DOC}:{e['line']}: coord.{name} has no Role: line (granted: {fmt_roles(roles)})")
        elif e["roles"][1] != roles:
            problems.append(f"{DOC}:{e['roles'][0]}: coord.{name}'s Role: line names {fmt_roles(e['roles'][1])}, "
                            f"but EXECUTE is granted to {fmt_roles(roles)}")
        if not e["errors"]:
            problems.append(f"{DOC}:{e['line']}: coord.{name} has no Errors: line (or one that says TODO)")
        if e["columns"] is not None:
            problems.append(f"{DOC}:{e['columns'][0]}: coord.{name} is a function: no Columns: line")

    for name, v in sorted(views.items()):
        e = entries.get(name)
        what = "view" if v["kind"] == "v" else "type"
        if e is None:
            problems.append(f"{what} coord.{name} has no entry in {DOC}")
            continue
        if e["columns"] is None:
            problems.append(f"{DOC}:{e['line']}: {what} coord.{name} has no Columns: line "
                            f"(Columns: " + ", ".join(f"`{c}`" for c in v["columns"]) + ")")
        elif e["columns"][1] != v["columns"]:
            problems.append(f"{DOC}:{e['columns'][0]}: the columns of {what} coord.{name} differ: the catalog has "
                            + ", ".join(f"`{c}`" for c in v["columns"]))
        if v["kind"] == "v":
            if e["roles"] is None:
                problems.append(f"{DOC}:{e['line']}: view coord.{name} has no Role: line "
                                f"(granted: {fmt_roles(v['roles'])})")
            elif e["roles"][1] != set(v["roles"]):
                problems.append(f"{DOC}:{e['roles'][0]}: view coord.{name}'s Role: line names "
                                f"{fmt_roles(e['roles'][1])}, but SELECT is granted to {fmt_roles(v['roles'])}")
        if e["signatures"]:
            problems.append(f"{DOC}:{e['signatures'][0][0]}: coord.{name} is a {what}, not a function")

    for name, e in sorted(entries.items()):
        if name not in funcs and name not in views:
            problems.append(f"{DOC}:{e['line']}: coord.{name} is no function, view or type of pg_coord")

    have_settings = {s["name"] for s in cat["settings"]}
    for s in sorted(have_settings - set(settings)):
        problems.append(f"setting {s} has no row under ## Settings in {DOC}")
    for s in sorted(set(settings) - have_settings):
        problems.append(f"{DOC}:{settings[s]}: setting {s} does not exist")

    have_tables = {k for k, r in rels.items() if r["kind"] == "r"}
    for t in sorted(have_tables - set(tables)):
        problems.append(f"table coord.{t} has no row under ## Tables in {DOC}")
    for t in sorted(set(tables) - have_tables):
        problems.append(f"{DOC}:{tables[t]}: table coord.{t} does not exist")
    return problems


def skeleton(cat, text, everything):
    entries, settings, tables, _ = parse(text)
    out = []
    funcs = {}
    for f in cat["functions"]:
        funcs.setdefault(f["name"], []).append(f)
    for name, fs in sorted(funcs.items()):
        if not everything and name in entries:
            continue
        out.append(f"### coord.{name}\n")
        out += [f"`coord.{name}({f['args']}) → {f['result']}`" for f in fs]
        out.append("")
        out += sorted({f["comment"] or "TODO: what it does" for f in fs})
        out.append(f"\nRole: {fmt_roles(set().union(*(set(f['roles']) for f in fs)))}.\n")
        out.append("Errors: TODO.\n")
    for r in cat["relations"]:
        if r["kind"] in ("v", "c") and (everything or r["name"] not in entries):
            out.append(f"### coord.{r['name']}\n")
            out.append((r["comment"] or "TODO") + "\n")
            out.append("Columns: " + ", ".join(f"`{c}`" for c in r["columns"]) + "\n")
            if r["kind"] == "v":
                out.append(f"Role: {fmt_roles(r['roles'])}.\n")
    rows = [f"| `coord.{r['name']}` | {r['comment'] or 'TODO'} |" for r in cat["relations"]
            if r["kind"] == "r" and (everything or r["name"] not in tables)]
    if rows:
        out += ["## Tables\n", "| table | what it holds |", "|---|---|"] + rows + [""]
    rows = []
    for s in cat["settings"]:
        if everything or s["name"] not in settings:
            default = s["default"] + (f" {s['unit']}" if s["unit"] else "")
            rows.append(f"| `{s['name']}` | {s['type']}, default {default} | {s['context']} | {s['comment']} |")
    if rows:
        out += ["## Settings\n", "| setting | type, default | who sets it | what it does |", "|---|---|---|---|"]
        out += rows + [""]
    return "\n".join(out)


def main(argv):
    os.chdir(ROOT)
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    cat = catalog()
    if "--skeleton" in argv:
        print(skeleton(cat, text, "--all" in argv))
        return 0
    if not text:
        print(f"not ok 1 - {DOC} does not exist")
        return 1
    problems = check(cat, text)
    nf = len(cat["functions"])
    nv = len([r for r in cat["relations"] if r["kind"] == "v"])
    ns = len(cat["settings"])
    if problems:
        print(f"not ok 1 - {DOC}: {len(problems)} problem{'s' if len(problems) > 1 else ''}")
        for p in problems:
            print(f"#   {p}")
        return 1
    print(f"ok 1 - {DOC}: {nf} functions, {nv} views, {ns} settings and "
          f"{len([r for r in cat['relations'] if r['kind'] == 'r'])} tables, as in the catalog")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
