#!/usr/bin/env python3
"""List every error pg_coord raises: each ereport(ERROR ...) of src/ with its
SQLSTATE, message and hint, grouped by SQLSTATE (for docs/operations/
troubleshooting.md and docs/reference.md).

    python3 tools/errcodes.py [ROOT]            # a table per SQLSTATE
    python3 tools/errcodes.py --codes [ROOT]    # the SQLSTATEs only, counted

The SQLSTATE of an ERRCODE_ name comes from PostgreSQL's errcodes.txt
(`pg_config --sharedir`/errcodes.txt is not installed, so the server
headers' utils/errcodes.h is read instead).
"""
import os
import re
import subprocess
import sys
from collections import defaultdict


def errcode_table():
    inc = subprocess.run(["pg_config", "--includedir-server"], capture_output=True,
                         text=True, check=True).stdout.strip()
    table = {}
    with open(os.path.join(inc, "utils", "errcodes.h")) as f:
        for line in f:
            m = re.match(r"#define (ERRCODE_\w+)\s+MAKE_SQLSTATE\('(.)','(.)','(.)','(.)','(.)'\)", line)
            if m:
                table[m.group(1)] = "".join(m.group(i) for i in range(2, 7))
    return table


def c_strings(text):
    """The format string: the concatenated C string literals of a call's first argument."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i + 1:j])
            i = j + 1
            continue
        if c.isalpha() or c == "_":  # a macro between literals: INT64_FORMAT
            j = i
            while j < len(text) and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append("%" + text[i:j] if text[i:j].endswith("FORMAT") else "")
            i = j
            continue
        if c == "'":
            i += 3 if text[i + 1] != "\\" else 4
            continue
        if c == ",":
            break
        i += 1
    return "".join(out).replace('\\"', '"')


def calls(block, name):
    """Arguments of name(...) in block, parentheses balanced."""
    res = []
    for m in re.finditer(r"\b" + name + r"\(", block):
        i, depth = m.end(), 1
        while i < len(block) and depth:
            if block[i] == "(":
                depth += 1
            elif block[i] == ")":
                depth -= 1
            elif block[i] in "\"'":  # skip string and character literals
                q, i = block[i], i + 1
                while block[i] != q:
                    i += 2 if block[i] == "\\" else 1
            i += 1
        res.append(block[m.end():i - 1])
    return res


def ereports(root):
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        for fn in sorted(files):
            if not fn.endswith(".c"):
                continue
            path = os.path.join(dirpath, fn)
            src = open(path).read()
            for m in re.finditer(r"\bereport\(\s*(ERROR|FATAL|WARNING|NOTICE)\s*,", src):
                level = m.group(1)
                i, depth = m.end(), 1
                while depth and i < len(src):
                    if src[i] == "(":
                        depth += 1
                    elif src[i] == ")":
                        depth -= 1
                    elif src[i] == '"':  # skip string literals
                        i += 1
                        while src[i] != '"':
                            i += 2 if src[i] == "\\" else 1
                    i += 1
                block = src[m.end():i - 1]
                code = calls(block, "errcode")
                msg = calls(block, "errmsg")
                hint = calls(block, "errhint")
                detail = calls(block, "errdetail")
                line = src.count("\n", 0, m.start()) + 1
                yield dict(file=os.path.relpath(path, root), line=line, level=level,
                           code=code[0].strip() if code else "(none)",
                           msg=c_strings(msg[0]) if msg else "",
                           hint=c_strings(hint[0]) if hint else "",
                           detail=c_strings(detail[0]) if detail else "")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = args[0] if args else "."
    table = errcode_table()
    groups = defaultdict(list)
    for e in ereports(root):
        groups[e["code"]].append(e)
    order = sorted(groups, key=lambda c: table.get(c, "ZZZZZ" + c))
    if "--codes" in sys.argv:
        for c in order:
            print(f"{table.get(c, '?????')} {c} {len(groups[c])}")
        return
    for c in order:
        print(f"## {table.get(c, '?????')} {c} ({len(groups[c])})")
        for e in groups[c]:
            more = "".join(f"\n    {k}: {e[k]}" for k in ("detail", "hint") if e[k])
            print(f"- {e['level']} {e['msg']}  [{e['file']}:{e['line']}]{more}")
        print()


if __name__ == "__main__":
    main()
