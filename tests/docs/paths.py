#!/usr/bin/env python3
# paths.py ROOT — every file the user's documentation points at exists.
# Checks README.md and docs/*.md: relative Markdown links ([text](target),
# anchors stripped) and repository paths written in code spans
# (`shim/engine/large/large.cpp`, `tools/demo.sh`, `tests/bench/jobs.sh`).
# A tree that moves files (issue 27 moved 70) leaves stale names behind
# that no reader can follow; this names each, with its line.
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
docs = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
top_dirs = ("shim/", "tools/", "tests/", "config/", "docs/", "debian/", ".ci/")
link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
span = re.compile(r"`([^`\s]+)`")
bad = []
for doc in docs:
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        for target in link.findall(line):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            path = target.split("#")[0]
            if path and not (doc.parent / path).exists():
                bad.append(f"{doc.relative_to(root)}:{number}: link to {target}: no such file")
        for text in span.findall(line):
            if not text.startswith(top_dirs) or any(c in text for c in "*<>{}$"):
                continue  # not a repository path, or a pattern
            path = text.rstrip("/.,:;").split(":")[0]
            if not (root / path).exists():
                bad.append(f"{doc.relative_to(root)}:{number}: `{text}`: no such file in the tree")
for b in bad:
    print(b)
if bad:
    print(f"paths: {len(bad)} references to files that do not exist; fix the path or the text")
    sys.exit(1)
print(f"paths: every link and repository path in {len(docs)} documents exists")
