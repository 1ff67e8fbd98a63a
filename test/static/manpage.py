#!/usr/bin/env python3
"""Static check: the man page agent/coord-agent.1.in is what agent/mkman.py
makes of docs/coord-agent.md today (so the two agree; likewise
agent/coordctl.1.in of docs/coordctl.md, every subcommand and option of
coordctl's --help documented there), every
long option of coord-agent's --help is documented there, the EXIT STATUS
list names every status main.c returns, every exit() of agent/*.c and the
STATUS_ codes of coord_agent.h, and groff (when installed) renders the page
without a warning.

Prints "manpage: ..." last and exits 0, or says what differs and exits 1
(after an edit of docs/coord-agent.md: make -C agent man).
"""
import difflib
import importlib.util
import pathlib
import re
import shutil
import subprocess
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
problems = []

spec = importlib.util.spec_from_file_location("mkman", root / "agent" / "mkman.py")
mkman = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mkman)

readme = (root / "docs" / "coord-agent.md").read_text(encoding="utf-8")
want = mkman.convert(readme)
page_path = root / "agent" / "coord-agent.1.in"
have = page_path.read_text(encoding="utf-8") if page_path.exists() else ""
if want != have:
    diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(),
                                     "agent/coord-agent.1.in", "from docs/coord-agent.md", lineterm="", n=1))
    problems.append("agent/coord-agent.1.in differs from docs/coord-agent.md "
                    "(run: make -C agent man):\n  " + "\n  ".join(diff[:40]))

# every --option of the usage text is in the section's OPTIONS
section = "\n".join(mkman.section(readme))
main_c = (root / "agent" / "main.c").read_text(encoding="utf-8")
usage = main_c[main_c.index("usage(FILE *out)"):main_c.index("DEFAULT_CONFIG_PATH);")]
options = sorted(set(re.findall(r"--[a-z][a-z-]+", usage)))
for opt in options:
    if "`" + opt not in section:
        problems.append("--help lists %s, which docs/coord-agent.md does not document" % opt)

# every exit status the program returns is listed under EXIT STATUS
exits = section[section.index("## EXIT STATUS"):section.index("## SIGNALS")]
listed = set(re.findall(r"^`(\d+)`$", exits, re.M))
returned = set()
for path in sorted((root / "agent").glob("*.c")):
    src = path.read_text(encoding="utf-8")
    returned |= set(re.findall(r"\breturn (\d+);", src)) if path.name == "main.c" else set()
    returned |= set(re.findall(r"\bexit\((\d+)\)", src))
header = (root / "agent" / "coord_agent.h").read_text(encoding="utf-8")
returned |= set(re.findall(r"#define STATUS_\w+\s+(\d+)", header))
for code in sorted(returned - listed):
    problems.append("exit status %s is returned but not listed under EXIT STATUS" % code)

rendered = "groff not installed: rendering not checked"
if shutil.which("groff"):
    page = have.replace("@VERSION@", "0.0.0")
    r = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-ww", "-z"], input=page,
                       capture_output=True, text=True)
    # man renders one long page; groff -z alone has 66-line pages, where a
    # table cell can straddle a page end: that warning does not apply
    warnings = [l for l in r.stderr.splitlines()
                if l.strip() and "table text block will not fit on one page" not in l]
    if r.returncode != 0 or warnings:
        problems.append("groff warns about agent/coord-agent.1.in:\n  " + "\n  ".join(warnings)[:2000])
    rendered = "groff renders it without a warning"

# coordctl(1): agent/coordctl.1.in is what mkman.py makes of docs/coordctl.md,
# and every subcommand and long option of coordctl's --help is documented
ctl_doc = (root / "docs" / "coordctl.md").read_text(encoding="utf-8")
ctl_want = mkman.convert(ctl_doc)
ctl_path = root / "agent" / "coordctl.1.in"
ctl_have = ctl_path.read_text(encoding="utf-8") if ctl_path.exists() else ""
if ctl_want != ctl_have:
    problems.append("agent/coordctl.1.in differs from docs/coordctl.md (run: make -C agent man)")
ctl_c = (root / "agent" / "coordctl.c").read_text(encoding="utf-8")
ctl_section = "\n".join(mkman.section(ctl_doc))
for sub in re.findall(r'^\t\{"([a-z]+)", \w+, "', ctl_c, re.M):
    if "`" + sub + " " not in ctl_section and "`" + sub + "`" not in ctl_section:
        problems.append("coordctl's subcommand %s is not documented in docs/coordctl.md" % sub)
for opt in sorted(set(re.findall(r"--[a-z][a-z-]+", ctl_c[ctl_c.index("usage(FILE *out)"):]))):
    if "`" + opt not in ctl_section:
        problems.append("coordctl --help lists %s, which docs/coordctl.md does not document" % opt)
if shutil.which("groff"):
    r = subprocess.run(["groff", "-t", "-man", "-Tutf8", "-ww", "-z"], input=ctl_have.replace("@VERSION@", "0.0.0"),
                       capture_output=True, text=True)
    warnings = [l for l in r.stderr.splitlines()
                if l.strip() and "table text block will not fit on one page" not in l]
    if r.returncode != 0 or warnings:
        problems.append("groff warns about agent/coordctl.1.in:\n  " + "\n  ".join(warnings)[:2000])

if problems:
    for p in problems:
        print("manpage: " + p)
    print("manpage: %d problems" % len(problems))
    sys.exit(1)
print("manpage: agent/coord-agent.1.in agrees with docs/coord-agent.md (%d lines), %d options of --help "
      "documented, exit statuses %s listed, %s; agent/coordctl.1.in agrees with docs/coordctl.md "
      "(%d lines)" % (len(have.splitlines()), len(options), ", ".join(sorted(listed)), rendered,
                     len(ctl_have.splitlines())))
