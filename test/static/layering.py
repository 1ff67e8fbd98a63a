#!/usr/bin/env python3
"""Static check: the dependency story the headers tell holds in the objects.

The job queue (jobs.o, jobs_claim.o, jobs_finish.o, jobs_common.o) refers
to no symbol that schedules.o or apps.o defines (it calls their finish hooks
through the registry, jobs.h), and schedules.o to none that apps.o defines;
only tick.c knows every concern with work in time.  jobs_int.h is included
by the queue's files only.  Reads `nm` of the built objects (make test
builds them first).

    python3 test/static/layering.py [ROOT]
"""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
src = root / "src"
FAMILY = ["jobs", "jobs_claim", "jobs_finish", "jobs_common"]
# (who, may not refer to what any of these define)
RULES = [(f, ["schedules", "apps"]) for f in FAMILY] + [("schedules", ["apps"])]


def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, str(obj)], check=True, capture_output=True, text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


problems = []
names = {n for r in RULES for n in [r[0], *r[1]]}
missing = [n for n in sorted(names) if not (src / (n + ".o")).exists()]
if missing:
    print("objects not built (run make first): " + ", ".join(n + ".o" for n in missing))
    sys.exit(1)
defined = {n: nm(src / (n + ".o"), "--defined-only", "-g") for n in names}
checked = 0
for who, others in RULES:
    undefined = nm(src / (who + ".o"), "-u")
    for other in others:
        checked += 1
        for sym in sorted(undefined & defined[other]):
            problems.append(f"{who}.o refers to {sym}, which {other}.o defines")

include = re.compile(r'^\s*#\s*include\s+"jobs_int\.h"', re.M)
for f in sorted(src.glob("*.[ch]")):
    if f.stem in FAMILY or f.name == "jobs_int.h":
        continue
    if include.search(f.read_text()):
        problems.append(f"{f.name} includes jobs_int.h, which only the queue's files may")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"layering: {checked} object pairs checked, no reference against the layering")
