#!/usr/bin/env python3
"""Writes typedefs.list (`make typedefs`): every typedef name pg_coord's C
code uses, one a line, sorted (C locale) and unique, for tools/pgindent.py.

The names come from the DWARF debug info of the built objects (`objdump
--dwarf=info`, DW_TAG_typedef): the extension's src/*.o and src/*/*.o (its
family folders), the agent's agent/*.o, and test/cron/cron_test.c compiled
here with -g.  Debug info has every typedef a translation unit uses, so the
list holds PostgreSQL's, libpq's and libc's names as well as ours; names
starting with "_" (libc's internals) are left out.  Typedefs of our own that no object uses yet are
added from the sources (`typedef ... Name;` and `typedef ... (*Name) (...)`).

  tools/typedefs.py [OBJECT...]     default: src/*.o, src/*/*.o and agent/*.o
                                    that have their .c beside them (run make
                                    first)
"""
import glob
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ["src/*.c", "src/*.h", "src/*/*.c", "src/*/*.h", "agent/*.c", "agent/*.h", "test/cron/*.c"]


def dwarf_typedefs(objects):
    out = subprocess.run(["objdump", "--dwarf=info"] + objects,
                         capture_output=True, text=True, check=True).stdout
    names, in_typedef = set(), False
    for line in out.splitlines():
        if "DW_TAG_" in line:
            in_typedef = "DW_TAG_typedef" in line
        elif in_typedef and "DW_AT_name" in line:
            # "DW_AT_name : Oid" or "DW_AT_name : (indirect string, offset: 0x58d): size_t"
            names.add(line.rsplit(":", 1)[1].strip())
            in_typedef = False
    return names


def source_typedefs(files):
    names = set()
    for f in files:
        src = re.sub(r"/\*.*?\*/", " ", pathlib.Path(f).read_text(), flags=re.S)
        for m in re.finditer(r"\btypedef\b([^;{]*(?:\{(?:[^{}]|\{[^{}]*\})*\})?[^;]*);", src):
            decl = m.group(1)
            fn = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", decl)
            name = fn.group(1) if fn else re.search(r"([A-Za-z_]\w*)\s*(?:\[[^]]*\])?\s*$", decl)
            names.add(name if isinstance(name, str) else name.group(1))
    return names


def main():
    # an object without its source is a leftover of a file moved or removed
    objects = sys.argv[1:] or sorted(
        o for d in ("src", "src/*", "agent") for o in glob.glob(str(ROOT / d / "*.o"))
        if pathlib.Path(o).with_suffix(".c").exists())
    if not objects:
        sys.exit("typedefs: no objects (run make first)")
    with tempfile.TemporaryDirectory() as tmp:
        # the cron harness is built only by test/cron/run.sh, into a temp dir
        for c in sorted(glob.glob(str(ROOT / "test/cron/*.c"))):
            o = pathlib.Path(tmp) / (pathlib.Path(c).stem + ".o")
            subprocess.run(["cc", "-g", "-std=c99", "-c", "-I" + str(ROOT / "src"),
                            "-o", str(o), c], check=True)
            objects.append(str(o))
        names = dwarf_typedefs(objects)
    names |= source_typedefs(p for g in SOURCES for p in glob.glob(str(ROOT / g)))
    names = sorted((n for n in names if not n.startswith("_")),
                   key=lambda s: s.encode())
    (ROOT / "typedefs.list").write_text("".join(n + "\n" for n in names))
    print(f"typedefs: {len(names)} names from {len(objects)} objects and the "
          f"sources into typedefs.list")


if __name__ == "__main__":
    main()
