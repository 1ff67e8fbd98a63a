#!/usr/bin/env python3
"""pg_coord's pgindent: PostgreSQL's layout for our C files (`make indent`).

Runs pg_bsd_indent 2.1.1 (Debian package pg-bsd-indent; the indent that
PostgreSQL's own pgindent drives up to PostgreSQL 15) with PostgreSQL's
options, the typedef names of typedefs.list at the repository root (`make
typedefs` regenerates it), and a little text processing before and after
that pg_bsd_indent needs for our code:

  before  a block comment opened by "/* ---" (our section rules, "/* ----------
          periods ---------- */", or an indented table between two rules)
          gets a leading dash and a marker, so that pg_bsd_indent leaves it
          as it is, as it does every comment that starts with a dash (an
          indented one would be refilled into a paragraph);
  after   the marker goes again;
          a return type alone on its line before a function's name keeps one
          space before its "*" ("Hold *"), where pg_bsd_indent aligns it
          with tabs when the type is a typedef name;
          two comments run together on one line ("*//*") get a tab between.

A file pg_bsd_indent reports an error for is left unchanged (and the run
fails): usually an #if sequence whose branches, read together, do not balance.

  tools/pgindent.py [FILE...]          reindent in place (default: every file
                                       of DEFAULT_FILES)
  tools/pgindent.py --check [FILE...]  change nothing; name each file the
                                       reindent would change, exit 1 if any
  tools/pgindent.py --diff [FILE...]   change nothing; print the unified diff

Environment: PG_BSD_INDENT (the program; default pg_bsd_indent on PATH).
"""
import argparse
import difflib
import glob
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_FILES = ["src/*.c", "src/*.h", "src/*/*.c", "src/*/*.h", "agent/*.c", "agent/*.h", "test/cron/*.c", "test/parts/*.c"]
TYPEDEFS = ROOT / "typedefs.list"
INDENT_VERSION = "2.1.1"

# PostgreSQL's layout (pgindent up to 15): 4-column indent with tabs of 4,
# lines of 79, declarations' names in column 12 (-di12), braces on their own
# lines (-bl, -nce), a blank line after declarations and around functions
# (-bad -bap -bbb), comments at column 33 for #else/#endif (-cp33), case
# labels half an indent in (-cli1), the return type on its own line (the
# default -psl), continuation lines aligned with the open parenthesis
# (-lp -lpl), no .indent.pro (-npro), and -tpg: PostgreSQL's tab rules.
INDENT_OPTS = ["-bad", "-bap", "-bbb", "-bc", "-bl", "-cli1", "-cp33", "-cdb",
               "-nce", "-d0", "-di12", "-nfc1", "-i4", "-l79", "-lp", "-lpl",
               "-nip", "-npro", "-sac", "-tpg", "-ts4"]

# typedef names of typedefs.list not to give pg_bsd_indent: names that our
# code also uses as ordinary identifiers, where a type name would turn an
# expression into a declaration ("a * b").  None today: "text" is a variable
# in src/schedules/cron.c, but leaving it out lays out every "text *"
# parameter as "text * path"; the variable's lines come out right either way.
NOT_TYPEDEFS = set()


def indent_program():
    prog = os.environ.get("PG_BSD_INDENT") or shutil.which("pg_bsd_indent")
    if not prog:
        sys.exit("pgindent: pg_bsd_indent not found (Debian: apt-get install "
                 "pg-bsd-indent; `make indent` installs it)")
    return prog


def indent_version(prog):
    out = subprocess.run([prog, "--version"], capture_output=True, text=True)
    m = re.search(r"pg_bsd_indent (\S+)", out.stdout + out.stderr)
    return m.group(1) if m else None


# A comment that starts with a dash is one pg_bsd_indent leaves alone; ours
# start "/* ---", so they get a dash and this marker for the run.
DASH_MARK = "/*-pgcoord-indent-"


def pre(src):
    return src.replace("/* ---", DASH_MARK + "---")


def post(src):
    src = src.replace(DASH_MARK, "/* ")
    # "Hold\t   *" (a typedef'd return type alone on its line) -> "Hold *"
    src = re.sub(r"^([A-Za-z_]\S*(?:[ \t]+[A-Za-z_]\S*)*)[ \t]+(\*+)$", r"\1 \2",
                 src, flags=re.M)
    src = re.sub(r"\*/(/\*.*\*/)$", "*/\t\\1", src, flags=re.M)
    return src


def reindent(prog, typedefs_file, path):
    """Returns the reindented text of path, or raises RuntimeError."""
    src = path.read_text()
    res = subprocess.run([prog] + INDENT_OPTS + ["-U" + typedefs_file],
                         input=pre(src), capture_output=True, text=True)
    # pg_bsd_indent writes its errors and warnings into the output, as
    # comments "/**INDENT** Error@LINE: ..."; such output is not kept
    notes = re.findall(r"/\*\*INDENT\*\* (.*?)\s*\*/", res.stdout)
    if res.returncode != 0 or notes or res.stderr.strip():
        raise RuntimeError("; ".join(notes) or res.stderr.strip()
                           or f"exit status {res.returncode}")
    return src, post(res.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--diff", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()

    prog = indent_program()
    version = indent_version(prog)
    if version != INDENT_VERSION:
        print(f"pgindent: warning: {prog} is version {version}, not "
              f"{INDENT_VERSION}: its layout may differ", file=sys.stderr)
    if not TYPEDEFS.exists():
        sys.exit(f"pgindent: {TYPEDEFS} is missing (make typedefs)")

    if args.files:
        files = [pathlib.Path(f).resolve() for f in args.files]
    else:
        files = sorted(pathlib.Path(p) for g in DEFAULT_FILES
                       for p in glob.glob(str(ROOT / g)))

    names = [n for n in TYPEDEFS.read_text().split() if n not in NOT_TYPEDEFS]
    changed, errors = [], []
    with tempfile.NamedTemporaryFile("w", prefix="pgindent-typedefs.",
                                     suffix=".list") as tf:
        tf.write("\n".join(names) + "\n")
        tf.flush()
        for path in files:
            rel = os.path.relpath(path, ROOT) if ROOT in path.parents else str(path)
            try:
                old, new = reindent(prog, tf.name, path)
            except RuntimeError as e:
                errors.append(f"{rel}: {e}")
                continue
            if old == new:
                continue
            changed.append(rel)
            if args.diff:
                sys.stdout.writelines(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True),
                    "a/" + rel, "b/" + rel))
            elif not args.check:
                path.write_text(new)

    for e in errors:
        print(f"pgindent: {e} (file left unchanged)", file=sys.stderr)
    if args.check:
        for rel in changed:
            print(f"{rel}: not indented (make indent)")
    what = "would change" if (args.check or args.diff) else "changed"
    print(f"pgindent: {len(files)} files, {len(changed)} {what}"
          + (f", {len(errors)} failed" if errors else ""), file=sys.stderr)
    if errors or (args.check and changed):
        sys.exit(1)


if __name__ == "__main__":
    main()
