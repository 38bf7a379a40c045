#!/usr/bin/env python3
"""The largest files and functions of the crate, counted as a reader meets them: unit tests and
the files under tests/ and benches/ included (issue 40). The guides: a file past ~800 lines or a
function past ~120 is an exception with its reason in docs/sizes.md; no file past 1000 lines and
no function past 200 (tests/architecture.rs holds both).

A function is counted from its `fn` line to the closing brace at the same indent.
Usage: scripts/sizes.py [DIR ...] [--all]   (default: src tests benches)"""
import os
import re
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
roots = args or ["src", "tests", "benches"]
show_all = "--all" in sys.argv
files, fns = [], []
FN = re.compile(r"^(\s*)(pub(\([^)]*\))? )?(async )?(const )?(unsafe )?fn (\w+)")
for root in roots:
    for dirpath, _, names in os.walk(root):
        for name in sorted(names):
            if not name.endswith(".rs"):
                continue
            path = os.path.join(dirpath, name)
            lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
            count = len(lines) - 1 if lines[-1] == "" else len(lines)
            rel = os.path.relpath(path, root if len(roots) == 1 else ".")
            files.append((count, rel))
            for i, line in enumerate(lines):
                m = FN.match(line)
                if not m or line.rstrip().endswith(";"):
                    continue
                indent, j = m.group(1), i + 1
                while j < len(lines) and lines[j] != indent + "}":
                    j += 1
                if j < len(lines):
                    fns.append((j - i + 1, f"{rel}::{m.group(7)}"))
files.sort(reverse=True)
fns.sort(reverse=True)
print("largest files:", ", ".join(f"{p} {n}" for n, p in files[:5]))
print("largest functions:", ", ".join(f"{p} {n}" for n, p in fns[:5]))
print(
    f"files past 800 lines: {sum(n > 800 for n, _ in files)} (past 1000: {sum(n > 1000 for n, _ in files)}); "
    f"functions past 120 lines: {sum(n > 120 for n, _ in fns)} (past 200: {sum(n > 200 for n, _ in fns)})"
)
if show_all:
    for n, p in files:
        if n > 800:
            print(f"  file {n:5} {p}")
    for n, p in fns:
        if n > 120:
            print(f"  fn   {n:5} {p}")
