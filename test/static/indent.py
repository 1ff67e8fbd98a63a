#!/usr/bin/env python3
"""Static check: the C files are in PostgreSQL's layout, i.e. `make indent`
(tools/pgindent.py: pg_bsd_indent 2.1.1 with typedefs.list) would change
none of them.

Enforced only once the tree has been reindented: while the file
.indent-enforced does not exist at the root, the check passes and says so
(the reindent commit creates the file).  When enforced it fails, naming each
file the reindent would change; it fails too when pg_bsd_indent is missing
(test/run.sh installs Debian's pg-bsd-indent when .indent-enforced exists).
Another version of pg_bsd_indent (a newer Debian's, in make test-matrix's
chroots) lays code out a little differently: there the check passes without
checking, and says so.
"""
import pathlib
import shutil
import subprocess
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
tool = root / "tools" / "pgindent.py"
sys.path.insert(0, str(tool.parent))
import pgindent  # noqa: E402  (INDENT_VERSION, indent_version)

if not (root / ".indent-enforced").exists():
    print("indent: not enforced yet (no .indent-enforced at the root; "
          "the reindent commit creates it)")
    sys.exit(0)

prog = shutil.which("pg_bsd_indent")
if prog is None:
    print("indent: pg_bsd_indent not found (Debian: pg-bsd-indent; make indent installs it)")
    sys.exit(1)
version = pgindent.indent_version(prog)
if version != pgindent.INDENT_VERSION:
    print(f"indent: not checked: pg_bsd_indent {version} here, the layout is "
          f"{pgindent.INDENT_VERSION}'s")
    sys.exit(0)

res = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True)
sys.stdout.write(res.stdout)
sys.stdout.write(res.stderr)
if res.returncode != 0:
    print("indent: FAILED: run make indent (and make typedefs first if a typedef was added)")
    sys.exit(1)
print("indent: " + res.stderr.strip().splitlines()[-1].split(": ", 1)[1].replace("0 would change", "none would change"))
