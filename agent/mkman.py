#!/usr/bin/env python3
"""Writes a man page, coord-agent(1) or coordctl(1), from its docs page
(docs/coord-agent.md, docs/coordctl.md), so that the two never disagree.

    python3 agent/mkman.py docs/coord-agent.md > agent/coord-agent.1.in   (make -C agent man)
    python3 agent/mkman.py docs/coordctl.md > agent/coordctl.1.in

The page is written in the small Markdown subset this knows: a
"# coord-agent(1)" title, "## NAME" headings, paragraphs, `code`, **bold**, *italic*, [links](page.md)
(only their text is printed, in italics), indented code
blocks, "1. " lists, "term" lines followed by ": definition" lines, and
pipe tables (rendered with tbl).  Anything else is an error here rather
than a silently broken page.  The output says "@VERSION@" where the
version goes; agent/Makefile fills it in from pg_coord.control.
Test: test/static/manpage.py regenerates the page and compares.
"""
import re
import sys

HEADER = """'\\" t
.\\" {name}(1): generated from docs/{name}.md by
.\\" agent/mkman.py (make -C agent man); edit docs/{name}.md, not this file.
.TH {NAME} 1 "" "pg_coord @VERSION@" "pg_coord"
.\\" identifiers are not hyphenated, nor the lines stretched around them
.nh
.ad l
"""

CHARS = {"\u2014": "\\(em", "\u2013": "\\(en", "\u00d7": "\\(mu", "\u2026": "\\&...", "\u2192": "\\(->"}


def title(page):
    """The program the page documents: NAME of its "# NAME(1)" title."""
    m = re.search(r"^# ([a-z][a-z-]*)\(1\)$", page, re.M)
    if m is None:
        raise SystemExit("mkman: the page has no '# NAME(1)' title")
    return m.group(1)


def section(page):
    """The lines of the page, without its title."""
    lines = page.split("\n")
    start = lines.index("# %s(1)" % title(page))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("# ")), len(lines))
    return lines[start + 1:end]


def roff_chars(s, literal):
    """Escapes text for roff: backslashes, non-ASCII, and (literal) hyphens."""
    s = s.replace("\\", "\\e")
    if literal:
        s = s.replace("-", "\\-")
    for k, v in CHARS.items():
        s = s.replace(k, v)
    bad = [c for c in s if ord(c) > 126]
    if bad:
        raise SystemExit("mkman: no roff spelling for %r" % bad[0])
    return s


def inline(text):
    """`code`, **bold**, *italic* to font escapes, links to their text; the rest escaped."""
    text = re.sub(r"\[([^\]]+)\]\([^)\s]+\)",
                  lambda m: m.group(1) if re.search(r"[*`]", m.group(1)) else "*%s*" % m.group(1), text)
    codes = []

    def stash(m):
        codes.append("\\fB" + roff_chars(m.group(1), True) + "\\fR")
        return "\x00%d\x00" % (len(codes) - 1)

    s = roff_chars(re.sub(r"`([^`]+)`", stash, text), False)
    s = re.sub(r"\*\*(.+?)\*\*", r"\\fB\1\\fR", s)
    s = re.sub(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])", r"\\fI\1\\fR", s)
    # an asterisk left over (PG* variables) is printed as it is
    s = re.sub("\x00(\\d+)\x00", lambda m: codes[int(m.group(1))], s)
    # code inside bold: one bold run, not a roman gap after the code
    return s.replace("\\fB\\fB", "\\fB").replace("\\fR\\fR", "\\fR")


def fill(text, width=78):
    """Breaks filled text into source lines; no line may start a request."""
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = cur + " " + word if cur else word
    if cur:
        lines.append(cur)
    return ["\\&" + l if l[:1] in (".", "'") else l for l in lines]


def blocks(lines):
    """Blank-line separated blocks; an indented code block stays whole."""
    block = []
    for l in lines:
        if l.strip() == "":
            if block:
                yield block
                block = []
        else:
            block.append(l)
    if block:
        yield block


def split_row(l):
    cells = l.strip()
    if not (cells.startswith("|") and cells.endswith("|")):
        raise SystemExit("mkman: table row not in pipes: " + l[:60])
    # a | inside `code` would split a cell: the page has none, so refuse it
    parts = [c.strip() for c in cells[1:-1].split("|")]
    if any(p.count("`") % 2 for p in parts):
        raise SystemExit("mkman: '|' inside code in a table row: " + l[:60])
    return parts


def table(block):
    head = split_row(block[0])
    if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", block[1].strip()):
        raise SystemExit("mkman: table without a separator line: " + block[0][:60])
    rows = [split_row(l) for l in block[2:]]
    n = len(head)
    if any(len(r) != n for r in rows):
        raise SystemExit("mkman: table row with a different number of cells: " + block[0][:60])
    out = [".PP", ".TS", "tab(@);", " ".join(["lb"] * n), " ".join(["lx"] * n) + "."]
    out.append("@".join(inline(h) for h in head))
    out.append("_")
    for r in rows:
        cells = []
        for c in r:
            cells.append("T{\n" + "\n".join(fill(inline(c))) + "\nT}")
        out.append("@".join(cells))
    out.append(".TE")
    return out


def convert(readme):
    name = title(readme)
    out = [HEADER.format(name=name, NAME=name.upper()).rstrip("\n")]
    for block in blocks(section(readme)):
        first = block[0]
        if first.startswith("## "):
            if len(block) != 1:
                raise SystemExit("mkman: a heading needs a blank line after it: " + first)
            out.append(".SH " + roff_chars(first[3:].strip(), False))
        elif all(l.startswith("    ") for l in block):
            out += [".PP", ".RS 4", ".nf"]
            out += ["\\&" + roff_chars(l[4:], True) for l in block]
            out += [".fi", ".RE"]
        elif first.startswith("|"):
            out += table(block)
        elif len(block) > 1 and block[1].startswith(": "):
            # the tag of .TP is one source line, however long
            tag = inline(first)
            out += [".TP", "\\&" + tag if tag[:1] in (".", "'") else tag]
            body = [block[1][2:]] + [l[2:] if l.startswith("  ") else l for l in block[2:]]
            out += fill(inline(" ".join(body)))
        elif re.match(r"\d+\. ", first):
            items = []
            for l in block:
                m = re.match(r"(\d+)\. (.*)", l)
                if m:
                    items.append([m.group(1), m.group(2)])
                else:
                    items[-1][1] += " " + l.strip()
            for num, text in items:
                out.append(".IP %s. 4" % num)
                out += fill(inline(text))
        elif any(l.startswith("    ") for l in block) or any(l.startswith(("- ", "* ", "> ")) for l in block):
            raise SystemExit("mkman: a block mkman does not know (list or mixed code): " + first[:60])
        else:
            out.append(".PP")
            out += fill(inline(" ".join(l.strip() for l in block)))
    return "\n".join(out) + "\n"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "docs/coord-agent.md"
    with open(path, encoding="utf-8") as f:
        sys.stdout.write(convert(f.read()))


if __name__ == "__main__":
    main()
