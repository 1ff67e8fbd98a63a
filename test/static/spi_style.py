#!/usr/bin/env python3
"""Static check: SPI is entered, left and its errors reported one way.

Every statement pg_coord runs goes between CoordSpiBegin and CoordSpiEnd
(SPI_connect and the owner switch, and back), and an SPI result code is
reported only through CoordSpiCheck / CoordSpiError (common.h describes the
style).  Outside src/common/common_spi.c, which defines them, this check
fails, naming the file and line, on
  - a call of SPI_connect, SPI_finish, CoordBecomeOwner or CoordRestoreUser,
  - SPI_result_code_string (an error message of its own style),
  - an SPI result compared by hand:  != SPI_OK_...  or  == SPI_OK_... .
  - CoordSpiConnectAsCaller / CoordSpiFinishAsCaller (SPI without the owner
    switch) outside the functions in AS_CALLER, which say in common.h why
    they run as the caller,
  - AtEOXact_GUC right after CoordSpiEnd: a GUC nest level opened inside
    the switch must be popped before it, since the switch's own pop takes
    every level above it too,
  - a statement executed by hand (SPI_execute_plan, SPI_execp, SPI_execute
    and its kin): a statement is one call of CoordExec, CoordExecLimit,
    CoordExecReadOnly, CoordExecPlan or CoordExecEach (common.h), which
    plan once, check the result code and return the row count; the
    functions in BY_HAND only (coord.cron_install's two one-off statements,
    run as the caller against pg_cron's schema: nothing to save a plan of).
Comments are skipped.  PENDING lists files still exempt (none since issue
15 was merged).
Prints "spi_style: N files checked, 0 offences" and exits 0, or lists the
offences and exits 1.
"""
import fnmatch
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
files = sorted((root / "src").rglob("*.c"))        # family folders too

DEFINES = {"common_spi.c"}
PENDING = []
# file -> the functions allowed SPI as the caller (see common.h)
AS_CALLER = {"jobs_claim.c": {"GroupFree"}, "jobs_limits.c": {"LimitDecideKey"}, "tick.c": {"coord_cron_install"}}
# file -> the functions allowed a statement by hand
BY_HAND = {"tick.c": {"coord_cron_install"}}

comment = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
rules = [
    ("hand-paired SPI or owner switch (use CoordSpiBegin/CoordSpiEnd)",
     re.compile(r'\b(SPI_connect|SPI_finish|CoordBecomeOwner|CoordRestoreUser)\s*\(')),
    ("SPI error of its own style (use CoordSpiCheck/CoordSpiError)",
     re.compile(r'\bSPI_result_code_string\s*\(')),
    ("SPI result compared by hand (use CoordSpiCheck)",
     re.compile(r'[!=]=\s*SPI_OK_\w+|\bSPI_OK_\w+\s*[!=]=')),
    ("GUC nest level popped after CoordSpiEnd (pop it first)",
     re.compile(r'\bCoordSpiEnd\s*\([^;]*\);\s*AtEOXact_GUC\b')),
]
by_hand = re.compile(r'\b(SPI_execute\w*|SPI_execp)\s*\(')
as_caller = re.compile(r'\b(CoordSpiConnectAsCaller|CoordSpiFinishAsCaller)\s*\(')
# a function definition's name: at the start of a line, followed by "(" and,
# after its parameters, a line that is just "{"
func_def = re.compile(r'^(\w+)\s*\([^;{]*?\)\s*\n\{', re.M)


def function_at(src, pos):
    name = None
    for m in func_def.finditer(src, 0, pos):
        name = m.group(1)
    return name

checked = 0
bad = []
for f in files:
    if f.name in DEFINES or any(fnmatch.fnmatch(f.name, p) for p in PENDING):
        continue
    checked += 1
    # blank comments out, keeping line numbers
    src = comment.sub(lambda m: re.sub(r'[^\n]', ' ', m.group(0)), f.read_text())
    for what, rx in rules:
        for m in rx.finditer(src):
            line = src.count("\n", 0, m.start()) + 1
            bad.append(f"{f.relative_to(root)}:{line}: {what}: {' '.join(m.group(0).split())}")
    for m in as_caller.finditer(src):
        fn = function_at(src, m.start())
        if fn not in AS_CALLER.get(f.name, set()):
            line = src.count("\n", 0, m.start()) + 1
            bad.append(f"{f.relative_to(root)}:{line}: SPI as the caller outside "
                       f"{sorted(AS_CALLER.get(f.name, set())) or 'AS_CALLER'} "
                       f"(in {fn}; use CoordSpiBegin/CoordSpiEnd): {m.group(0).strip()}")

    for m in by_hand.finditer(src):
        fn = function_at(src, m.start())
        if fn not in BY_HAND.get(f.name, set()):
            line = src.count("\n", 0, m.start()) + 1
            bad.append(f"{f.relative_to(root)}:{line}: statement executed by hand "
                       f"(in {fn}; use CoordExec and its kin): {m.group(0).strip()}")

if bad:
    print("\n".join(bad))
    print(f"spi_style: {checked} files checked, {len(bad)} offences")
    sys.exit(1)
print(f"spi_style: {checked} files checked, 0 offences")
