#!/usr/bin/env python3
"""Static check: typedefs.list (the typedef names tools/pgindent.py gives
pg_bsd_indent) is exactly what `make typedefs` (tools/typedefs.py) computes
from the built objects and the sources: a typedef added without the list
updated, or a name left in the list that is no typedef any more, fails.

The list is made for PostgreSQL tools/typedefs.py's PG_MAJOR (other majors'
headers have other typedefs): with another pg_config (make test-matrix's
chroots) only our own typedefs, read from the sources, are checked to be in
the list.  Run after make (make test builds first); no objects fail.
"""
import glob
import pathlib
import subprocess
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
tool = root / "tools" / "typedefs.py"
sys.path.insert(0, str(tool.parent))
import typedefs  # noqa: E402  (PG_MAJOR, SOURCES, source_typedefs)

try:
    version = subprocess.run(["pg_config", "--version"], capture_output=True,
                             text=True).stdout.split()[1]
except (OSError, IndexError):
    version = "?"
if version.split(".")[0] != typedefs.PG_MAJOR:
    have = set((root / "typedefs.list").read_text().split())
    ours = typedefs.source_typedefs(
        p for g in typedefs.SOURCES for p in sorted(glob.glob(str(root / g))))
    missing = sorted(ours - have, key=lambda s: s.encode())
    for n in missing:
        print(f"typedefs: missing from typedefs.list: {n}")
    if missing:
        print("typedefs: FAILED: run make typedefs (on PostgreSQL "
              f"{typedefs.PG_MAJOR}) and commit typedefs.list")
        sys.exit(1)
    print(f"typedefs: only our {len(ours)} checked: PostgreSQL {version} here, "
          f"the list is {typedefs.PG_MAJOR}'s")
    sys.exit(0)

res = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
sys.stdout.write(res.stdout)
sys.stdout.write(res.stderr)
sys.exit(res.returncode)
