#!/usr/bin/env python3
"""Writes typedefs.list (`make typedefs`): every typedef name pg_coord's C
code uses, one a line, sorted (C locale) and unique, for tools/pgindent.py.

The names come from the DWARF debug info of the built objects (`objdump
--dwarf=info`, DW_TAG_typedef): the extension's src/*.o and src/*/*.o (its
family folders), the agent's agent/*.o, and the plain-C harnesses
test/*/*.c (cron, apps periods, partition assignment) compiled here with -g.
Debug info has every typedef a translation unit uses, so the list holds
PostgreSQL's, libpq's and libc's names as well as ours; names starting
with "_" (libc's internals) are left out.  Typedefs of our own that no
object uses yet are added from the sources (`typedef ... Name;`, `typedef
... (*Name) (...)`, `typedef ... Name (...)`): only the declarators after
the type, never a struct's members (a member `void (*open) (...)` of a
typedef'd struct is no typedef).

The list is made for PostgreSQL PG_MAJOR's headers (another major version
has other typedefs); test/static/typedefs.py checks that typedefs.list is
what this tool computes (--check), so that it cannot drift.

  tools/typedefs.py [OBJECT...]     default: src/*.o, src/*/*.o and agent/*.o
                                    that have their .c beside them (run make
                                    first)
  tools/typedefs.py --check         change nothing; print how typedefs.list
                                    differs from what it should be, exit 1 if
                                    it does
"""
import glob
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIST = ROOT / "typedefs.list"
PG_MAJOR = "15"
HARNESSES = "test/*/*.c"
SOURCES = ["src/*.c", "src/*.h", "src/*/*.c", "src/*/*.h", "agent/*.c", "agent/*.h", HARNESSES]
# the flags test/*/run.sh give test/harness.sh for the sources they build
HARNESS_FLAGS = ["-DCOORD_ASSIGN_STANDALONE"]


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


def strip_code(src):
    """src without comments, string and character literals."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  " ", src, flags=re.S)


def split_top(text, sep):
    """text split at each sep outside parentheses and brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def declarator_name(decl):
    """The name a typedef's declarator declares: "(*Name) (...)",
    "Name (...)", "*Name", "Name[4]"."""
    decl = re.sub(r"\[[^]]*\]", " ", decl)
    fn = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)", decl)
    if fn:
        return fn.group(1)
    if "(" in decl:
        decl = decl[:decl.index("(")]
    ids = re.findall(r"[A-Za-z_]\w*", decl)
    return ids[-1] if ids else None


def source_typedefs(files):
    names = set()
    for f in files:
        src = strip_code(pathlib.Path(f).read_text())
        for m in re.finditer(r"\btypedef\b", src):
            # the declaration up to its ";", the braces of a struct, union
            # or enum body (members and all) left out
            depth, i, outside = 0, m.end(), []
            while i < len(src) and not (src[i] == ";" and depth == 0):
                if src[i] == "{":
                    depth += 1
                elif src[i] == "}":
                    depth -= 1
                elif depth == 0:
                    outside.append(src[i])
                i += 1
            decls = split_top("".join(outside), ",")
            # the first declarator follows the type; "struct X X" -> X
            for d in decls:
                name = declarator_name(d)
                if name:
                    names.add(name)
    return names


def compute(objects):
    """The sorted names typedefs.list should hold."""
    with tempfile.TemporaryDirectory() as tmp:
        # the harnesses are built only by test/*/run.sh, into temp dirs
        for c in sorted(glob.glob(str(ROOT / HARNESSES))):
            p = pathlib.Path(c)
            o = pathlib.Path(tmp) / f"{p.parent.name}_{p.stem}.o"
            subprocess.run(["cc", "-g", "-std=c99", "-c", "-I" + str(ROOT / "src")]
                           + HARNESS_FLAGS + ["-o", str(o), c], check=True)
            objects = objects + [str(o)]
        names = dwarf_typedefs(objects)
    names |= source_typedefs(p for g in SOURCES for p in sorted(glob.glob(str(ROOT / g))))
    return sorted((n for n in names if not n.startswith("_")), key=lambda s: s.encode())


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    # an object without its source is a leftover of a file moved or removed
    objects = args or sorted(
        o for d in ("src", "src/*", "agent") for o in glob.glob(str(ROOT / d / "*.o"))
        if pathlib.Path(o).with_suffix(".c").exists())
    if not objects:
        sys.exit("typedefs: no objects (run make first)")
    names = compute(objects)
    text = "".join(n + "\n" for n in names)
    if check:
        have = LIST.read_text().splitlines() if LIST.exists() else []
        if have == names:
            print(f"typedefs: typedefs.list holds the {len(names)} names it should")
            return
        missing = sorted(set(names) - set(have), key=lambda s: s.encode())
        extra = sorted(set(have) - set(names), key=lambda s: s.encode())
        for n in missing:
            print(f"typedefs: missing from typedefs.list: {n}")
        for n in extra:
            print(f"typedefs: in typedefs.list but no typedef: {n}")
        if not missing and not extra:
            print("typedefs: typedefs.list is not sorted (C locale) and unique")
        print("typedefs: FAILED: run make typedefs and commit typedefs.list")
        sys.exit(1)
    LIST.write_text(text)
    print(f"typedefs: {len(names)} names from {len(objects)} objects and the "
          f"sources into typedefs.list")


if __name__ == "__main__":
    main()
