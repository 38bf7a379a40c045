#!/usr/bin/env python3
"""The largest files and functions of src/ (issue 27's guides: files past ~800 lines and
functions past ~120 are exceptions, each with its reason in docs/sizes.md).

A function is counted from its `fn` line to the closing brace at the same indent, in the code
before a file's first `#[cfg(test)]`. Usage: scripts/sizes.py [SRC_DIR] [--all]"""
import os
import re
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
root = args[0] if args else "src"
show_all = "--all" in sys.argv
files, fns = [], []
for dirpath, _, names in os.walk(root):
    for name in names:
        if not name.endswith(".rs"):
            continue
        path = os.path.join(dirpath, name)
        lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
        count = len(lines) - 1 if lines[-1] == "" else len(lines)
        rel = os.path.relpath(path, root)
        files.append((count, rel))
        # Unit tests are not counted: the module starts at a line `mod tests {`.
        cut = next((i for i, l in enumerate(lines) if l == "mod tests {"), len(lines))
        for i in range(cut):
            m = re.match(r"^(\s*)(pub(\([^)]*\))? )?(async )?(const )?(unsafe )?fn (\w+)", lines[i])
            if not m:
                continue
            indent, j = m.group(1), i + 1
            while j < cut and lines[j] != indent + "}":
                j += 1
            if j < cut:
                fns.append((j - i + 1, f"{rel}::{m.group(7)}"))
files.sort(reverse=True)
fns.sort(reverse=True)
print("largest files:", ", ".join(f"{p} {n}" for n, p in files[:5]))
print("largest functions:", ", ".join(f"{p} {n}" for n, p in fns[:5]))
print(f"files past 800 lines: {sum(n > 800 for n, _ in files)}; functions past 120 lines: {sum(n > 120 for n, _ in fns)}")
if show_all:
    for n, p in files:
        if n > 800:
            print(f"  file {n:5} {p}")
    for n, p in fns:
        if n > 120:
            print(f"  fn   {n:5} {p}")
