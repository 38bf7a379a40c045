#!/usr/bin/env python3
"""Writes tests/corpus/SOURCES.md from the notes kept beside the corpus files
(tests/corpus/<kind>/_notes.toml: where each file came from, how far to trust it, what a person
reads from it) and from tests/corpus/expected.toml (what burnin makes of it, which
tests/corpus.rs asserts). Run it after adding a file to the corpus:

    python3 scripts/corpus-sources.py
"""

import glob
import os
import tomllib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "corpus")


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def figures(fig):
    parts = []
    for key, value in fig.items():
        if isinstance(value, dict):
            inner = ", ".join(
                f"{k} {v}" for k, v in value.items() if not isinstance(v, (dict, list))
            )
            parts.append(f"{key}: {inner}")
        else:
            parts.append(f"{key} {value}")
    return "; ".join(parts)


def main():
    with open(os.path.join(ROOT, "expected.toml"), "rb") as f:
        expected = tomllib.load(f)
    out = [
        "# The corpus: real outputs written by others",
        "",
        "Every file under `tests/corpus/<kind>/` is a tool's output as somebody else published it",
        "(GitHub issues and pull requests, other projects' test data, vendor and cloud guides),",
        "copied byte for byte, with only the edits its row names (a shell prompt, a quote marker,",
        "the `# source:` line of a shared fixture). `tests/corpus.rs` reads every file as",
        "`burnin parse` does and holds burnin to `expected.toml`: the kind, the figures (a person's",
        "own reading of the text where the notes give one, `read_by_a_person` there), the checks,",
        "and the verdict of every phase of the shipped plan that reads that kind.",
        "",
        "Trust: **verbatim** (the whole output), **partial** (an excerpt, cut where the source",
        "was), **unknown-repo** (public text whose repository the search index did not name; its",
        "lookup id is in the notes). Health is the collector's reading of the text, before burnin",
        "judged it. This file is written by `scripts/corpus-sources.py` from the notes",
        "(`<kind>/_notes.toml`) and `expected.toml`.",
        "",
    ]
    for notes_path in sorted(glob.glob(os.path.join(ROOT, "*", "_notes.toml"))):
        kind = os.path.basename(os.path.dirname(notes_path))
        with open(notes_path, "rb") as f:
            notes = tomllib.load(f).get("file", [])
        out += [f"## {kind} ({len(notes)} files)", ""]
        out += [
            "| file | source | trust | health | what a person reads | burnin's verdicts |",
            "|---|---|---|---|---|---|",
        ]
        for e in sorted(notes, key=lambda e: e["name"]):
            rel = f"{kind}/{e['name']}"
            want = expected.get(rel, {})
            verdicts = ", ".join(f"{p} {v}" for p, v in want.get("verdicts", {}).items())
            if not verdicts:
                verdicts = "not read" if "error" in want else "(telemetry: see expected.toml)"
            source = e.get("source", "")
            if e.get("url"):
                source = f"[{source}]({e['url']})"
            read = "; ".join(
                x for x in [cell(e.get("why", "")), cell(figures(e.get("figures", {})))] if x
            )
            edits = e.get("edits", "")
            trust = e.get("trust", "")
            if edits and edits != "none":
                trust = f"{trust} (edits: {cell(edits)})"
            out.append(
                f"| `{rel}` | {cell(source)} | {cell(trust)} | {e.get('health', '')} | "
                f"{read} | {verdicts} |"
            )
        out.append("")
    with open(os.path.join(ROOT, "SOURCES.md"), "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
