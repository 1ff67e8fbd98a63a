#!/usr/bin/env python3
"""Static check: who may call whom, read from the built objects with nm.

Every object src/X.o (whose src/X.c exists) belongs to one family of
FAMILIES; each undefined symbol of an object that another object of src/
defines is an edge between their families.  ALLOWED says, per family, which
other families it may reference; an edge it does not allow is a violation.
A family whose rule is not yet enforced (ENFORCED False: the refactoring
that makes it true has not landed) has its violations printed as pending,
and they do not fail the check: flip it to True in the commit that makes it
hold.  Run after make (make test builds first); objects missing or older
than their source fail the check.

  test/static/deps.py [ROOT]            check; last line the summary
  test/static/deps.py [ROOT] --report   every edge between families, then the
                                        violations of every rule, enforced or
                                        not; never fails on a violation
  test/static/deps.py [ROOT] --all      check every rule as if enforced
"""
import glob
import os
import pathlib
import re
import subprocess
import sys

# family -> the object names (without .o) that belong to it
FAMILIES = {
    "common":    r"common\w*",          # infrastructure: SPI, owner switch, locks, args, time zones (common_tz)
    "cron":      r"cron",               # the cron parser (also built alone by test/cron)
    "locks":     r"locks\w*",
    "requests":  r"requests\w*",
    "jobs":      r"jobs\w*",            # the queue: jobs.c, jobs_claim.c, ...
    "schedules": r"schedules\w*",
    "apps":      r"apps\w*",            # apps.c, apps_grid.c
    "tick":      r"tick",               # coord.tick: knows every concern, on purpose
    "election":  r"election",           # leader election: campaign, leader, resign
    "leases":    r"leases\w*",          # lease locks: rows with a TTL
    "init":      r"pg_coord",           # _PG_init: one init call per concern
    "partitions": r"partitions\w*",    # partition groups (partitions_assign.c also built alone)
    "semaphores": r"semaphores",        # counting semaphores
}

EVERYTHING = set(FAMILIES)
# family -> the other families it may reference (itself always)
ALLOWED = {
    "common":    set(),                 # infrastructure names no concern
    "cron":      set(),
    "locks":     {"common"},
    "requests":  {"common"},
    "jobs":      {"common", "requests", "partitions"},  # never its clients: hooks
    "schedules": {"common", "cron", "jobs"},        # never apps: tick.c calls both
    "apps":      {"common", "jobs"},
    "election":  {"common"},
    "leases":    {"common"},
    "tick":      EVERYTHING,
    "init":      EVERYTHING,
    "partitions": {"common"},
    "semaphores": {"common"},
}
# Every rule holds since issue 15 (the queue calls schedules and apps only
# through the finish hooks they register, and tick.c calls every concern's
# tick); a rule that a refactoring is about to make true may be switched off
# here until it lands.
ENFORCED = {fam: True for fam in FAMILIES}

args = [a for a in sys.argv[1:] if not a.startswith("--")]
report = "--report" in sys.argv
enforce_all = "--all" in sys.argv
root = pathlib.Path(args[0] if args else ".")


def fail(msg):
    print(f"deps: {msg}")
    sys.exit(1)


def family(obj):
    name = pathlib.Path(obj).stem
    for fam, rx in FAMILIES.items():
        if re.fullmatch(rx, name):
            return fam
    return None


sources = sorted(glob.glob(str(root / "src" / "*.c")) + glob.glob(str(root / "src" / "*" / "*.c")))
if not sources:
    fail(f"no src/*.c under {root}")
objects = []
for c in sources:
    o = c[:-2] + ".o"
    if not os.path.exists(o):
        fail(f"{os.path.relpath(o, root)} is missing: run make first")
    if os.path.getmtime(o) < os.path.getmtime(c):
        fail(f"{os.path.relpath(o, root)} is older than its source: run make first")
    objects.append(o)

unknown = [os.path.relpath(o, root) for o in objects if family(o) is None]
if unknown:
    fail(f"in no family: {', '.join(unknown)}: add them to FAMILIES (and ALLOWED, ENFORCED)"
         " in test/static/deps.py")


def nm(obj, *opts):
    out = subprocess.run(["nm", *opts, obj], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines() if line.strip()]


defined = {}            # global symbol -> object that defines it
for o in objects:
    for f in nm(o, "--defined-only", "--extern-only"):
        defined.setdefault(f[-1], o)

edges = []              # (object, symbol, defining object)
for o in objects:
    for f in nm(o, "--undefined-only"):
        d = defined.get(f[-1])
        if d is not None and d != o:
            edges.append((o, f[-1], d))


def rel(o):
    return os.path.relpath(o, root)


# A family's internal header (src/<family>_int.h) is included by that
# family's files only.
include_violations = []
for f in sorted((root / "src").rglob("*.[ch]")):
    text = f.read_text()
    for m in re.finditer(r'^\s*#\s*include\s+"(?:\w+/)?(\w+)_int\.h"', text, re.M):
        owner = family(m.group(1))
        mine = family(f.with_suffix(".o")) if f.suffix == ".c" else family(f.stem.replace("_int", ""))
        if owner is not None and mine != owner:
            include_violations.append(f"{rel(f)} includes {m.group(1)}_int.h, "
                                      f"which only the {owner} family may")


violations, pending = [], []
for o, sym, d in edges:
    a, b = family(o), family(d)
    if a == b or b in ALLOWED[a]:
        continue
    line = f"{rel(o)} -> {sym} -> {rel(d)}  ({a} may not reference {b})"
    (violations if enforce_all or ENFORCED[a] else pending).append(line)

if report:
    print("edges between families (object -> symbol -> defining object):")
    for o, sym, d in sorted(edges):
        if family(o) != family(d):
            print(f"  {rel(o)} -> {sym} -> {rel(d)}")
    print("violations (every rule, enforced or not):")
    for line in sorted(violations + pending) or ["  none"]:
        print(f"  {line}" if line != "  none" else line)
    print(f"deps: {len(objects)} objects, {len(edges)} cross-object references, "
          f"{len(violations) + len(pending)} violations (report only)")
    sys.exit(0)

if pending:
    print("pending (rules not yet enforced; see ENFORCED):")
    for line in pending:
        print(f"  {line}")
violations += include_violations
if violations:
    print("violations:")
    for line in violations:
        print(f"  {line}")
print(f"deps: {len(objects)} objects, {len(edges)} cross-object references, "
      f"{len(violations)} violations" + (f", {len(pending)} pending" if pending else ""))
sys.exit(1 if violations else 0)
