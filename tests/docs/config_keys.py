#!/usr/bin/python3
"""config_keys.py SOURCE_ROOT — docs/configuration.md documents every key of
the reference config (config/spillway.toml), each in a table row of its own
(| `table.key` | default | ...) whose second column shows the key's default, every [[rule]] key, and
every SPILLWAY_* environment variable the shim or the tool reads.

The reference config itself is checked against the shim's parser and
defaults by tests/cli/check.sh; this keeps the docs in step with it.
"""
import os
import re
import sys


def reference_keys(path):
    """{dotted key: default text} from the reference config. A key shown
    only commented out (spill.dir, whose default depends on the uid) has
    the commented value; rule keys (#   key = ...) have None."""
    keys, table, in_example = {}, "", False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# [[rule]]"):  # the commented example rules
                in_example = True
            elif m := re.match(r"^\[([a-z_]+)\]\s*$", line):
                table = m.group(1) + "."
            elif m := re.match(r"^#?\s?([a-z_]+) = (.+?)\s*$", line) if not in_example else None:
                keys.setdefault(table + m.group(1), m.group(2))
            elif m := re.match(r"^#   ([a-z_]+)\s+= ", line):
                keys["rule." + m.group(1)] = None
    return keys


def main():
    root = sys.argv[1]
    keys = reference_keys(os.path.join(root, "config", "spillway.toml"))
    with open(os.path.join(root, "docs", "configuration.md"), encoding="utf-8") as f:
        doc = f.read()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z_.]+)` \|.*$", doc, re.M)}
    failed = 0
    for key, default in keys.items():
        row = rows.get(key)
        if row is None:
            print(f"config_keys: {key} (config/spillway.toml) has no row | `{key}` | in docs/configuration.md")
            failed += 1
        elif default is not None and default not in row.split("|")[2]:
            print(f"config_keys: the row of {key} in docs/configuration.md does not show its default {default} in its second column")
            failed += 1
    for key in rows:
        if key not in keys:
            print(f"config_keys: docs/configuration.md documents {key}, which config/spillway.toml does not have")
            failed += 1
    env = set()
    for top in ("shim", os.path.join("tools", "cli")):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith((".cpp", ".h")):
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        env.update(re.findall(r'"(SPILLWAY_[A-Z_]+)', f.read()))
    for var in sorted(env):
        if f"| `{var}` |" not in doc:
            print(f"config_keys: the environment variable {var} has no row in docs/configuration.md")
            failed += 1
    if len(keys) < 20 or len(env) < 5:
        print(f"config_keys: only {len(keys)} keys and {len(env)} variables found; the extraction is broken")
        return 1
    print(f"config_keys: {len(keys)} keys and {len(env)} environment variables, {failed} not documented")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
