#!/usr/bin/env python3
"""Static check: released SQL scripts are frozen, and the tree says
consistently whether its version is released.

sql/released.sha256 lists, by SHA-256, every released install and update
script (and the upgrade test's copies of released state).  This fails when
  - a listed file is missing or its checksum differs (a released script was
    edited: later changes belong in the next version's update script);
  - a script under sql/ of a released version is not listed (every
    pg_coord--V.sql and pg_coord--A--B.sql whose target version is at or
    below the newest released one);
  - the control file's default_version is older than the newest release.
The control file's version is either
  - in development (newer than every release): an update script leads to
    it from the newest release, META.json.in's release_status is not
    stable, and CHANGELOG.md's first heading is "## V (unreleased)"; or
  - the newest release (tools/release.sh freeze made it): its install
    script is the fragments of sql/parts/ (the Makefile's SQL_FRAGMENTS)
    as they were at the release, so a later SQL change fails here until the
    next version is opened (tools/release.sh open NEXT); release_status is
    stable, and the first heading is "## V (YYYY-MM-DD)".
Prints one summary line last; exit 0 = pass.
"""
import hashlib
import json
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
released_tree = dev == newest
if version(dev) < version(newest):
    problems.append(f"default_version {dev} is older than the newest release {newest}")
for path in sorted((root / "sql").glob("pg_coord--*.sql")):
    m = re.fullmatch(r"pg_coord--(?:(\d+\.\d+\.\d+)--)?(\d+\.\d+\.\d+)\.sql", path.name)
    if not m:
        problems.append(f"{path.name}: not a script name pg_coord knows")
        continue
    target = m.group(2)
    rel = str(path.relative_to(root))
    if version(target) <= version(newest) and rel not in listed:
        problems.append(f"{rel}: a script of released version {target} is not in sql/released.sha256")
if not released_tree and not (root / f"sql/pg_coord--{newest}--{dev}.sql").is_file():
    problems.append(f"no update script sql/pg_coord--{newest}--{dev}.sql from the newest release")

# META.json.in's release_status and CHANGELOG.md's first heading
status = json.loads((root / "META.json.in").read_text()).get("release_status", "stable")
heading = re.search(r"^## (\S+) \(([^)]*)\)", (root / "CHANGELOG.md").read_text(), re.M)
if released_tree:
    if status != "stable":
        problems.append(f"{dev} is released: META.json.in's release_status is {status!r}, not 'stable'")
    if not heading or heading.group(1) != dev or not re.fullmatch(r"\d{4}-\d\d-\d\d", heading.group(2)):
        problems.append(f"{dev} is released: CHANGELOG.md's first heading is not '## {dev} (YYYY-MM-DD)'")
    # the fragments as the Makefile joins them must still be the released script
    mk = (root / "Makefile").read_text()
    m = re.search(r"^SQL_FRAGMENTS\s*=((?:.*\\\n)*.*)$", mk, re.M)
    parts = m.group(1).replace("\\\n", " ").split() if m else []
    built = b"".join((root / f).read_bytes() for f in parts if (root / f).is_file())
    if not parts or any(not (root / f).is_file() for f in parts):
        problems.append("the Makefile's SQL_FRAGMENTS cannot be read, or name a missing file")
    elif built != (root / f"sql/pg_coord--{dev}.sql").read_bytes():
        problems.append(f"sql/parts/ no longer make the released sql/pg_coord--{dev}.sql: SQL changes "
                        f"after a release belong to the next version (tools/release.sh open NEXT)")
else:
    if status == "stable":
        problems.append(f"{dev} is in development: META.json.in's release_status must not be 'stable'")
    if not heading or heading.group(1) != dev or heading.group(2) != "unreleased":
        problems.append(f"{dev} is in development: CHANGELOG.md's first heading is not '## {dev} (unreleased)'")

for p in problems:
    print(p)
print(f"released: {len(listed)} frozen files, newest release {newest}, "
      f"{'the tree is release ' + dev if released_tree else 'in development ' + dev}, {len(problems)} problems")
sys.exit(1 if problems else 0)
