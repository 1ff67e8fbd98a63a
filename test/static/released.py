#!/usr/bin/env python3
"""Static check: released SQL scripts are frozen.

sql/released.sha256 lists, by SHA-256, every released install and update
script (and the upgrade test's copies of released state).  This fails when
  - a listed file is missing or its checksum differs (a released script was
    edited: later changes belong in the next version's update script);
  - a script under sql/ of a released version is not listed (every
    pg_coord--V.sql and pg_coord--A--B.sql whose target version is at or
    below the newest released one);
  - the control file's default_version is a released version (the version
    in development must be newer than every release);
  - an update script of the version in development is missing, from the
    newest release to it.
Prints one summary line last; exit 0 = pass.
"""
import hashlib
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
problems = []
listed = {}
for line in (root / "sql/released.sha256").read_text().splitlines():
    if not line.strip() or line.startswith("#"):
        continue
    digest, name = line.split(None, 1)
    listed[name.strip()] = digest


def version(v):
    return tuple(int(x) for x in v.split("."))


for name, digest in listed.items():
    path = root / name
    if not path.is_file():
        problems.append(f"{name}: listed as released but missing")
    elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        problems.append(f"{name}: a released file was changed (its SHA-256 is not the released one)")

released = set()
for name in listed:
    m = re.fullmatch(r"(?:.*/)?pg_coord--(\d+\.\d+\.\d+)\.sql", name)
    if m:
        released.add(m.group(1))
newest = max(released, key=version)
control = (root / "pg_coord.control").read_text()
dev = re.search(r"^default_version\s*=\s*'([^']+)'", control, re.M).group(1)
if version(dev) <= version(newest):
    problems.append(f"default_version {dev} is not newer than the newest release {newest}")
for path in sorted((root / "sql").glob("pg_coord--*.sql")):
    m = re.fullmatch(r"pg_coord--(?:(\d+\.\d+\.\d+)--)?(\d+\.\d+\.\d+)\.sql", path.name)
    if not m:
        problems.append(f"{path.name}: not a script name pg_coord knows")
        continue
    target = m.group(2)
    rel = str(path.relative_to(root))
    if version(target) <= version(newest) and rel not in listed:
        problems.append(f"{rel}: a script of released version {target} is not in sql/released.sha256")
if not (root / f"sql/pg_coord--{newest}--{dev}.sql").is_file():
    problems.append(f"no update script sql/pg_coord--{newest}--{dev}.sql from the newest release")

for p in problems:
    print(p)
print(f"released: {len(listed)} frozen files, newest release {newest}, in development {dev}, "
      f"{len(problems)} problems")
sys.exit(1 if problems else 0)
