#!/usr/bin/env python3
"""Fail when library code under src/ repeats a block of code.

A block is MIN_LINES (8) or more consecutive code lines, compared after stripping
surrounding whitespace. A code line is a logical line: a line joined with the following ones
until its parentheses and square brackets balance, so a signature or call the formatter
splits over several lines counts once (and the check does not depend on the line width).
Blank lines, comment lines (//, ///, //!, /* ... */) and lines made only of brackets and
punctuation (`}`, `});`, `],`) are not code lines: they neither count nor break a block. Test code is skipped: files named tests.rs, anything
under a tests/ directory, and the item following `#[cfg(test)]` (a `mod tests { ... }` or
any other item).

Usage: scripts/check_duplicates.py [ROOT] (default: the repository's src/). Prints every
repeated block with all the places it occurs and exits 1, or prints a one-line summary and
exits 0. Dependency-free (standard library only).
"""

import os
import re
import sys
from collections import defaultdict

MIN_LINES = 8
PUNCT_ONLY = re.compile(r"^[\s{}()\[\];,.]*$")


def strip_strings(line):
    """The line with string and char literals emptied (for counting braces)."""
    out, i, n = [], 0, len(line)
    while i < n:
        c = line[i]
        if c == '"':
            i += 1
            while i < n and line[i] != '"':
                i += 2 if line[i] == "\\" else 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", line[i : i + 4] + "  "):
            m = re.match(r"'(\\.[^']*|[^\\'])'", line[i:])
            i += len(m.group(0)) if m else 1
            out.append("''")
        elif line.startswith("//", i):
            break
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(path):
    """(line number, stripped text) of the code lines of a Rust file outside test items."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    kept = []
    skip_item = False  # inside the item after #[cfg(test)]
    depth = 0  # brace depth inside that item
    in_block_comment = False
    pending, open_ = None, 0  # a logical line being joined, and its unbalanced ( and [
    for no, raw in enumerate(lines, 1):
        s = raw.strip()
        if in_block_comment:
            if "*/" in s:
                in_block_comment = False
            continue
        if s.startswith("/*"):
            in_block_comment = "*/" not in s
            continue
        if s.startswith("#[cfg(test)]"):
            skip_item, depth = True, 0
            continue
        if skip_item:
            code = strip_strings(s)
            depth += code.count("{") - code.count("}")
            if depth <= 0 and ("}" in code or code.endswith(";")):
                skip_item = False
            continue
        if not s or s.startswith("//") or PUNCT_ONLY.match(s) and not pending:
            continue
        code = strip_strings(s)
        if pending:
            pending[1] += " " + s
        else:
            pending = [no, s]
        open_ += code.count("(") + code.count("[") - code.count(")") - code.count("]")
        if open_ <= 0:
            kept.append(tuple(pending))
            pending, open_ = None, 0
    if pending:
        kept.append(tuple(pending))
    return kept


def rust_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "tests")
        for name in sorted(filenames):
            if name.endswith(".rs") and name != "tests.rs":
                yield os.path.join(dirpath, name)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "src")
    root = os.path.normpath(root)
    files = {p: code_lines(p) for p in rust_files(root)}
    windows = defaultdict(list)  # block text -> [(file, index of first code line)]
    for path, kept in files.items():
        for i in range(len(kept) - MIN_LINES + 1):
            windows[tuple(t for _, t in kept[i : i + MIN_LINES])].append((path, i))
    # Grow each repeated window into the longest block shared by the same places.
    seen, reports = set(), []
    for _key, places in windows.items():
        if len(places) < 2 or places[0] in seen:
            continue
        length = MIN_LINES
        while (
            all(i + length < len(files[p]) for p, i in places)
            and len({files[p][i + length][1] for p, i in places}) == 1
        ):
            length += 1
        for p, i in places:
            for k in range(length - MIN_LINES + 1):
                seen.add((p, i + k))
        where = [f"{os.path.relpath(p)}:{files[p][i][0]}-{files[p][i + length - 1][0]}" for p, i in places]
        reports.append((length, where, files[places[0][0]][places[0][1]][1]))
    nfiles = len(files)
    if not reports:
        print(f"no repeated block of {MIN_LINES}+ code lines in {nfiles} files under {os.path.relpath(root)}")
        return 0
    for length, where, first in sorted(reports, key=lambda r: r[1]):
        print(f"repeated block of {length} code lines (first: {first!r}):")
        for w in where:
            print(f"  {w}")
    print(
        f"{len(reports)} repeated block(s) under {os.path.relpath(root)}: share them (a function, a macro, a table) instead"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
