#!/usr/bin/env python3
"""Static check: SPI is entered, left and its errors reported one way.

Every statement pg_coord runs goes between CoordSpiBegin and CoordSpiEnd
(SPI_connect and the owner switch, and back), and an SPI result code is
reported only through CoordSpiCheck / CoordSpiError (common.h describes the
style).  Outside src/common_spi.c, which defines them, this check fails,
naming the file and line, on
  - a call of SPI_connect, SPI_finish, CoordBecomeOwner or CoordRestoreUser,
  - SPI_result_code_string (an error message of its own style),
  - an SPI result compared by hand:  != SPI_OK_...  or  == SPI_OK_... .
Comments are skipped.  PENDING lists the files whose sites are still hand
paired (they are converted when the parts of issue 15 are merged); remove
them from it as they are converted.
Prints "spi_style: N files checked, 0 offences" and exits 0, or lists the
offences and exits 1.
"""
import fnmatch
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
files = sorted((root / "src").glob("*.c"))

DEFINES = {"common_spi.c"}
PENDING = ["jobs*.c", "apps*.c", "schedules*.c", "tick.c"]

comment = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
rules = [
    ("hand-paired SPI or owner switch (use CoordSpiBegin/CoordSpiEnd)",
     re.compile(r'\b(SPI_connect|SPI_finish|CoordBecomeOwner|CoordRestoreUser)\s*\(')),
    ("SPI error of its own style (use CoordSpiCheck/CoordSpiError)",
     re.compile(r'\bSPI_result_code_string\s*\(')),
    ("SPI result compared by hand (use CoordSpiCheck)",
     re.compile(r'[!=]=\s*SPI_OK_\w+|\bSPI_OK_\w+\s*[!=]=')),
]

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
            bad.append(f"{f.relative_to(root)}:{line}: {what}: {m.group(0).strip()}")

if bad:
    print("\n".join(bad))
    print(f"spi_style: {checked} files checked, {len(bad)} offences")
    sys.exit(1)
print(f"spi_style: {checked} files checked, 0 offences")
