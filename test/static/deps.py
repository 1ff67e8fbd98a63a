#!/usr/bin/env python3
"""Static check: who may call whom, read from the built objects with nm, and
how large a source file may grow.

A family is a folder of src/ (src/jobs/, ...: a family of files) or one file
at the top of src/ (a single-file concern, by its name: locks.c, ...);
FAMILIES lists them all.  Each undefined symbol of an object that another
object of src/ defines is an edge:
  - between two families, ALLOWED says, per family, which other families it
    may reference;
  - inside a family, FILE_ORDER orders its files, lowest first, and a file
    may reference only files before it (so a circle inside a family fails
    too);
  - a file of PLAIN_C (plain C, built alone by its harness) references no
    other file at all.
A family's internal header (src/<family>/<x>_int.h) is included by the
family's own files only.  coord-agent (agent/, one program) is held the same
way: AGENT_ORDER orders its files, lowest first, and a file may reference
only files before it (a circle between two files fails as such); a lower
file that must reach up gets callbacks from the upper one (db.c's
DbCallbacks, from agent.c).  An edge a rule does not allow is a violation; a
rule not yet enforced (ENFORCED False for a family, or an edge listed in
ORDER_PENDING: the refactoring that makes it true has not landed) has its
violations printed as pending, and they do not fail the check: flip it, or
remove the edge, in the commit that makes it hold.

Sizes: no .c or .h file of src/ (and its folders) or agent/ is over CEILING
lines, but for those OVER_CEILING names until they are split.

Run after make (make test builds first); objects missing or older than their
source fail the check.

  test/static/deps.py [ROOT]            check; last line the summary
  test/static/deps.py [ROOT] --report   every edge between families and
                                        inside them, then the violations of
                                        every rule, enforced or not; never
                                        fails on a violation
  test/static/deps.py [ROOT] --all      check every rule as if enforced
"""
import glob
import os
import pathlib
import re
import subprocess
import sys

# family -> where it lives: "name/" a folder of src/, "name.c" one file at
# the top of src/
FAMILIES = {
    "common":     "common/",        # infrastructure: SPI, owner switch, locks, args, time zones
    "locks":      "locks.c",
    "requests":   "requests.c",
    "jobs":       "jobs/",          # the queue: jobs.c, jobs_claim.c, ...
    "schedules":  "schedules/",     # schedules.c and its cron parser (cron.c)
    "apps":       "apps/",          # apps.c, apps_grid.c, ...
    "tick":       "tick.c",         # coord.tick: knows every concern, on purpose
    "election":   "election.c",     # leader election: campaign, leader, resign
    "leases":     "leases.c",       # lease locks: rows with a TTL
    "init":       "pg_coord.c",     # _PG_init: one init call per concern
    "partitions": "partitions/",    # partition groups
    "semaphores": "semaphores.c",   # counting semaphores
    "metrics":    "metrics.c",      # coord.metrics' per-queue part and counters
    "workflows":  "workflows/",     # job dependencies, flows, batches, durable steps (the queue reaches them through hooks)
}

EVERYTHING = set(FAMILIES)
# family -> the other families it may reference (itself always)
ALLOWED = {
    "common":    set(),                 # infrastructure names no concern
    "locks":     {"common"},
    "requests":  {"common"},
    "jobs":      {"common", "requests", "partitions"},  # never its clients: hooks
    "schedules": {"common", "jobs"},    # never apps: tick.c calls both
    "apps":      {"common", "jobs"},
    "election":  {"common"},
    "leases":    {"common"},
    "tick":      EVERYTHING,
    "init":      EVERYTHING,
    "partitions": {"common"},
    "semaphores": {"common"},
    "metrics":   {"common"},
    "workflows": {"common", "jobs"},   # the queue calls it only through hooks, tick.c its tick
}
# Every rule holds since issue 15 (the queue calls schedules and apps only
# through the finish hooks they register, and tick.c calls every concern's
# tick); a rule that a refactoring is about to make true may be switched off
# here until it lands.
ENFORCED = {fam: True for fam in FAMILIES}

# family (a folder) -> its files (stems), lowest first: each references only
# files before it.  Every .c of the folder is listed, and nothing else.
FILE_ORDER = {
    "common":     ["common_args", "common_tz", "common_spi", "common_lock", "common"],
    "jobs":       ["jobs_common", "jobs_limits", "jobs_limits_sql", "jobs_finish", "jobs_enqueue", "jobs_control", "jobs_claim_row", "jobs_claim", "jobs", "jobs_next"],
    "schedules":  ["cron", "schedules"],
    "apps":       ["apps_periods", "apps_graph", "apps_alerts", "apps", "apps_define", "apps_rerun", "apps_grid", "apps_tick"],
    "partitions": ["partitions_assign", "partitions_sync", "partitions"],
    "workflows":  ["workflows_steps", "workflows", "workflows_batch"],
}
# Plain C99, each built alone by its harness (test/cron, test/apps,
# test/parts): they reference no other file of src/.
PLAIN_C = {"cron", "apps_periods", "partitions_assign"}
# Edges inside a family that climb FILE_ORDER today: the circles of issue
# 25, each from an init or callback dispatcher in a family's lowest file.
# Pending, not failing, until its circle-breaking stage removes them; it
# takes each out of this list as it goes (a listed edge that no longer
# exists fails, so that the list ends empty).
ORDER_PENDING: set = set()   # every circle inside a family is broken

# coord-agent's files (agent/*.c, stems), lowest first: each references only
# files before it.  util: logging, clocks, buffers; config: the allow-list;
# db: the session (DbCallbacks from agent.c for the statements that open it
# and for the loop's wake-ups); protocol: every statement, through db_run;
# child: the child processes; status: "coord-agent status"; agent: the
# loop; main: the command line.  coordctl (agent/coordctl.h) shares util
# and cli (connecting, errors, tables) with coord-agent; coordctl_query:
# its subcommands' helpers; coordctl_metrics: the Prometheus renderer that
# serve's GET /metrics calls too; serve*: the dashboard; coordctl: the
# dispatcher.  Every .c of agent/ is listed, and nothing else; one a line.
AGENT_ORDER = [
    "util",
    "cli",
    "config",
    "db",
    "protocol",
    "child",
    "status",
    "agent",
    "main",
    "coordctl_query",
    "coordctl_metrics",
    "coordctl_jobs",
    "coordctl_queues",
    "coordctl_views",
    "serve_html",
    "serve_pages",
    "serve",
    "coordctl",
]

# No source file over this many lines (pgvector's largest file is 1,433):
# a file that grows past it is split along its sections.
CEILING = 1400
# Files over CEILING today, until the split stage of issue 25 splits them
# (each leaves this list in the commit that splits it; a listed file under
# the ceiling fails, so that the list ends empty).
OVER_CEILING: set = set()   # every file is under the ceiling

args = [a for a in sys.argv[1:] if not a.startswith("--")]
report = "--report" in sys.argv
enforce_all = "--all" in sys.argv
root = pathlib.Path(args[0] if args else ".")
src = root / "src"


def fail(msg):
    print(f"deps: {msg}")
    sys.exit(1)


def rel(p):
    return os.path.relpath(p, root)


def family(path):
    """The family of a file of src/ (by its folder, or its name at the top)."""
    p = pathlib.Path(path)
    parent = os.path.relpath(p.parent, src)
    for fam, where in FAMILIES.items():
        if where.endswith("/") and parent == where[:-1]:
            return fam
        if parent == "." and p.stem == pathlib.Path(where).stem:
            return fam
    return None


def stem(path):
    return pathlib.Path(path).stem


sources = sorted(glob.glob(str(src / "*.c")) + glob.glob(str(src / "*" / "*.c")))
if not sources:
    fail(f"no src/*.c under {root}")
objects = []
for c in sources:
    o = c[:-2] + ".o"
    if not os.path.exists(o):
        fail(f"{rel(o)} is missing: run make first")
    if os.path.getmtime(o) < os.path.getmtime(c):
        fail(f"{rel(o)} is older than its source: run make first")
    objects.append(o)

agent_sources = sorted(glob.glob(str(root / "agent" / "*.c")))
agent_objects = []
for c in agent_sources:
    o = c[:-2] + ".o"
    if not os.path.exists(o):
        fail(f"{rel(o)} is missing: run make first")
    if os.path.getmtime(o) < os.path.getmtime(c):
        fail(f"{rel(o)} is older than its source: run make first")
    agent_objects.append(o)
if sorted(AGENT_ORDER) != sorted(stem(c) for c in agent_sources):
    fail(f"AGENT_ORDER lists {', '.join(AGENT_ORDER)}; agent/ holds "
         f"{', '.join(stem(c) for c in agent_sources) or 'no .c'}: make them agree")

unknown = [rel(c) for c in sources if family(c) is None]
if unknown:
    fail(f"in no family: {', '.join(unknown)}: a new folder or top-level file goes into "
         "FAMILIES (and ALLOWED, ENFORCED) in test/static/deps.py")
for fam, where in FAMILIES.items():
    if not where.endswith("/"):
        continue
    have = sorted(stem(c) for c in sources if family(c) == fam)
    want = FILE_ORDER.get(fam)
    if want is None:
        fail(f"src/{where} has no FILE_ORDER in test/static/deps.py")
    if sorted(want) != have:
        fail(f"FILE_ORDER[{fam!r}] lists {', '.join(want)}; src/{where} holds "
             f"{', '.join(have) or 'no .c'}: make them agree")
rank = {f: i for fam, files in FILE_ORDER.items() for i, f in enumerate(files)}


def nm(obj, *opts):
    out = subprocess.run(["nm", *opts, obj], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


def references(objs):
    """(object, symbol, defining object) for each undefined symbol of an
    object that another of objs defines."""
    defined = {}        # global symbol -> object that defines it
    for o in objs:
        for f in nm(o, "--defined-only", "--extern-only"):
            defined.setdefault(f[-1], o)
    refs = []
    for o in objs:
        for f in nm(o, "--undefined-only"):
            d = defined.get(f[-1])
            if d is not None and d != o:
                refs.append((o, f[-1], d))
    return refs


edges = references(objects)
agent_edges = references(agent_objects)     # the agent is a program apart


# A family's internal header (src/<family>/<x>_int.h) is included by that
# family's files only.  An include resolves beside the including file first,
# then in src/ (-Isrc).
include_violations = []
for f in sorted(src.rglob("*.[ch]")):
    for m in re.finditer(r'^\s*#\s*include\s+"([\w/]*_int\.h)"', f.read_text(), re.M):
        h = f.parent / m.group(1)
        if not h.exists():
            h = src / m.group(1)
        owner, mine = family(h), family(f)
        if owner is not None and mine != owner:
            include_violations.append(f"{rel(f)} includes {m.group(1)}, which only the "
                                      f"{owner} family may")

violations, pending = [], []
order_seen = set()
for o, sym, d in edges:
    a, b = family(o), family(d)
    line = f"{rel(o)} -> {sym} -> {rel(d)}"
    if stem(o) in PLAIN_C:
        violations.append(f"{line}  ({stem(o)}.c is plain C, built alone: it references nothing)")
    elif a == b:
        if rank[stem(d)] < rank[stem(o)]:
            continue
        pair = (stem(o), stem(d))
        line += f"  ({stem(o)}.c may not reference {stem(d)}.c, after it in FILE_ORDER[{a!r}])"
        if pair in ORDER_PENDING:
            order_seen.add(pair)
        (pending if pair in ORDER_PENDING and not enforce_all else violations).append(line)
    elif b not in ALLOWED[a]:
        line += f"  ({a} may not reference {b})"
        (violations if enforce_all or ENFORCED[a] else pending).append(line)
# the agent: a file references only files before it in AGENT_ORDER
agent_rank = {f: i for i, f in enumerate(AGENT_ORDER)}
agent_pairs = {(stem(o), stem(d)) for o, _, d in agent_edges}
for o, sym, d in agent_edges:
    a, b = stem(o), stem(d)
    if agent_rank[b] < agent_rank[a]:
        continue
    why = (f"a circle: {b}.c references {a}.c too" if (b, a) in agent_pairs
           else "after it in AGENT_ORDER")
    violations.append(f"{rel(o)} -> {sym} -> {rel(d)}  ({a}.c may not reference {b}.c, {why}; "
                      "a lower file reaches up through callbacks the upper one installs)")
for pair in sorted(ORDER_PENDING - order_seen):
    violations.append(f"{pair[0]}.c no longer references {pair[1]}.c: take the pair out of "
                      "ORDER_PENDING in test/static/deps.py")

# sizes
size_violations, over = [], []
for f in sorted(glob.glob(str(src / "**" / "*.[ch]"), recursive=True)
                + glob.glob(str(root / "agent" / "*.[ch]"))):
    n = len(pathlib.Path(f).read_text().splitlines())
    name = rel(f)
    if n > CEILING and name in OVER_CEILING:
        over.append(f"{name} ({n} lines)")
    elif n > CEILING:
        size_violations.append(f"{name} has {n} lines, over the ceiling of {CEILING}: split it "
                               "along its sections")
    elif name in OVER_CEILING:
        size_violations.append(f"{name} has {n} lines, no longer over the ceiling: take it out "
                               "of OVER_CEILING in test/static/deps.py")
for name in sorted(OVER_CEILING):
    if not (root / name).exists():
        size_violations.append(f"{name} is gone: take it out of OVER_CEILING in test/static/deps.py")

if report:
    print("edges between families (object -> symbol -> defining object):")
    for o, sym, d in sorted(edges):
        if family(o) != family(d):
            print(f"  {rel(o)} -> {sym} -> {rel(d)}")
    print("edges inside families (object -> symbol -> defining object):")
    for o, sym, d in sorted(edges):
        if family(o) == family(d):
            print(f"  {rel(o)} -> {sym} -> {rel(d)}")
    print("edges inside agent/ (object -> symbol -> defining object):")
    for o, sym, d in sorted(agent_edges):
        print(f"  {rel(o)} -> {sym} -> {rel(d)}")
    print("violations (every rule, enforced or not):")
    for line in sorted(violations + pending + include_violations) or ["none"]:
        print(f"  {line}")
    print(f"over the ceiling of {CEILING} lines (OVER_CEILING):")
    for line in over + size_violations or ["none"]:
        print(f"  {line}")
    print(f"deps: {len(objects) + len(agent_objects)} objects, "
          f"{len(edges) + len(agent_edges)} cross-object references, "
          f"{len(violations) + len(pending) + len(include_violations)} violations (report only)")
    sys.exit(0)

if pending:
    print("pending (rules not yet enforced; see ENFORCED and ORDER_PENDING):")
    for line in pending:
        print(f"  {line}")
if over:
    print(f"over the ceiling of {CEILING} lines until they are split (OVER_CEILING): "
          + ", ".join(over))
violations += include_violations + size_violations
if violations:
    print("violations:")
    for line in violations:
        print(f"  {line}")
print(f"deps: {len(objects) + len(agent_objects)} objects, "
      f"{len(edges) + len(agent_edges)} cross-object references, "
      f"{len(violations)} violations" + (f", {len(pending)} pending" if pending else ""))
sys.exit(1 if violations else 0)
