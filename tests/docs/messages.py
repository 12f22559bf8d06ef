#!/usr/bin/python3
"""messages.py SOURCE_ROOT [--list] — every warning and error message the
shim (shim/) or the tool (tools/cli/) can print must be explained in
docs/troubleshooting.md.

A message is found at its call site, by the function that prints it or
carries it to the printer (the sinks below). Its key is the longest run of
fixed text in it (literals joined, printf conversions and concatenated
values cut out, whitespace collapsed): docs/troubleshooting.md must contain
that text verbatim (whitespace collapsed too). A new message without docs,
or a reworded one whose docs were not updated, fails with its file:line.
--list prints every message found with its key, for writing the docs.
"""
import os
import re
import sys

# Every run of fixed text at least this long must be in the docs: the
# message as printed, with its values replaced by words. A message with no
# such run is checked by its longest run, if that has at least SHORT_KEY
# characters ("%s" alone, "(" are no message).
MIN_KEY = 12
SHORT_KEY = 6
# A returned string is a message only with a run this long (not a name).
MIN_RETURNED = 20

# Calls whose LAST argument is the message: the tool's one-line failures,
# usage errors and warnings (tools/cli/cli.h), and the config reader's
# fail(node, key, what) (shim/common/config.cpp), a piece of fixed text of
# a message assembled without libstdc++ (say(), env_overrides.cpp).
LAST_ARG_CALLS = {"fail", "usage_error", "warn", "config_error", "say"}
# Calls whose SECOND argument is a printf format: the shim's logger (SPW_LOG_AT
# with its level chosen at run time, log_repeats.h).
FORMAT_CALLS = {"SPW_LOG", "SPW_LOG_AT"}
# Assignments that carry a message to one of the printers above (reason:
# size_text.cpp's, a part of the size message).
MESSAGE_VARIABLES = {"why_unusable", "error", "error_", "note", "e", "what", "reason"}
# Buffers a message's part is formatted into (snprintf's first argument):
# also the reasons and messages the front's rules write without libstdc++
# (spill_dir_check.cpp's why, start_verdict.cpp's message).
MESSAGE_BUFFERS = {"remedy", "why", "message"}
# Functions that return their message to a printer: the config reader
# (shim's and the tool's check of log.file). Matched by file name, so the
# check survives files moving between folders.
RETURNS_MESSAGES = {"config.cpp", "check.cpp"}
# Streams to stderr, or a line being composed for it.
STREAMS = {"cerr", "line"}
# A summary or status line the tool prints: only the ones saying something
# went wrong or is missing are messages.
NOTICE = re.compile(r"could not|cannot|no stats|cut short|no process|no live snapshot|unreadable")
# Files whose strings never reach a user: a file's residency error is
# shown as "?" (explained by `spillway stat`'s warning), never printed. (The
# JSON reader, nlohmann-json, reports nothing: a line it cannot read is
# counted, "N line(s) could not be read".)
IGNORED_FILES = {"file_residency.cpp"}

PRINTF = re.compile(r"%[-+ #0-9.*]*(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspn%]")


def tokenize(text):
    """C++ tokens without comments: (kind, value, line). kind: str, id, op."""
    out, i, line, n = [], 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c == '"' or (c == "R" and text.startswith('R"', i)):
            if c == "R":  # raw string: R"delim( ... )delim"
                k = text.find("(", i + 2)
                end = ")" + text[i + 2:k] + '"'
                j = text.find(end, k)
                out.append(("str", text[k + 1:j], line))
                line += text.count("\n", i, j)
                i = j + len(end)
                continue
            j, buf = i + 1, []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    e = text[j + 1]
                    buf.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'"}.get(e, "\\" + e))
                    j += 2
                else:
                    buf.append(text[j])
                    j += 1
            out.append(("str", "".join(buf), line))
            i = j + 1
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append(("op", "char", line))
            i = j + 1
        elif c.isalnum() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            out.append(("id", text[i:j], line))
            i = j
        else:
            two = text[i:i + 2]
            if two in ("<<", "::", "->", "&&", "||", "==", "!=", "+=", "<=", ">="):
                out.append(("op", two, line))
                i += 2
            else:
                out.append(("op", c, line))
                i += 1
    return out


def call_args(tokens, open_at):
    """The top-level arguments of the call whose '(' is tokens[open_at]."""
    depth, args, cur = 0, [], []
    for k in range(open_at, len(tokens)):
        kind, v, _ = tokens[k]
        if kind == "op" and v in "([{":
            depth += 1
            if depth == 1:
                continue
        elif kind == "op" and v in ")]}":
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args
        elif kind == "op" and v == "," and depth == 1:
            args.append(cur)
            cur = []
            continue
        cur.append(tokens[k])
    return args


def statement(tokens, start):
    out = []
    for k in range(start, len(tokens)):
        if tokens[k][0] == "op" and tokens[k][1] == ";":
            break
        out.append(tokens[k])
    return out


def segments(tokens, printf):
    """Runs of fixed text: adjacent literals joined; anything else cuts."""
    runs, cur = [], None
    for kind, v, _ in tokens:
        if kind == "str":
            cur = (cur or "") + v
        else:
            if cur is not None:
                runs.append(cur)
            cur = None
    if cur is not None:
        runs.append(cur)
    out = []
    for r in runs:
        out.extend(PRINTF.split(r) if printf else [r])
    return [" ".join(s.split()) for s in out if s.strip()]


def keys_of(segs):
    keys = [s for s in segs if len(s) >= MIN_KEY]
    if keys:
        return keys
    best = max(segs, key=len, default="")
    return [best] if len(best) >= SHORT_KEY else []


def messages(root):
    found, seen = [], set()  # (file, line, key, whole)
    dirs = [os.path.join(root, "shim"), os.path.join(root, "tools", "cli")]
    for top in dirs:
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith((".cpp", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if name in IGNORED_FILES:
                    continue
                with open(path, encoding="utf-8") as f:
                    toks = tokenize(f.read())
                for k, (kind, v, line) in enumerate(toks):
                    nxt = toks[k + 1] if k + 1 < len(toks) else ("", "", 0)
                    prev = toks[k - 1] if k else ("", "", 0)
                    part, printf = None, False
                    if kind == "id" and nxt[1] == "(" and v in FORMAT_CALLS:
                        args = call_args(toks, k + 1)
                        part, printf = (args[1] if len(args) > 1 else []), True
                    elif kind == "id" and nxt[1] == "(" and v in LAST_ARG_CALLS and prev[1] not in ("bool", "int", "void", "static"):
                        args = call_args(toks, k + 1)
                        part = args[-1] if args else []
                    elif kind == "id" and v in MESSAGE_VARIABLES and nxt[1] == "=" :
                        part = statement(toks, k + 2)
                    elif kind == "id" and v in STREAMS and nxt[1] == "<<" and prev[1] in (";", "{", "}", "::", ")"):
                        part = statement(toks, k + 2)
                    elif kind == "id" and v == "kLine" and nxt[1] == "[":
                        part = statement(toks, k + 1)
                    elif kind == "id" and v == "push_back" and nxt[1] == "(":
                        part = call_args(toks, k + 1)[0]
                        if not any(t[0] == "str" and NOTICE.search(t[1]) for t in part):
                            part = None
                    elif kind == "id" and v == "snprintf" and nxt[1] == "(":
                        args = call_args(toks, k + 1)
                        if args and [t[1] for t in args[0]] and args[0][-1][1] in MESSAGE_BUFFERS:
                            part, printf = args[2], True
                    elif kind == "id" and v == "return" and name in RETURNS_MESSAGES:
                        part = statement(toks, k + 1)
                    if part is None:
                        continue
                    segs = segments(part, printf)
                    if v == "return" and max(map(len, segs), default=0) < MIN_RETURNED:
                        continue
                    for key in keys_of(segs):
                        if (rel, line, key) not in seen:
                            seen.add((rel, line, key))
                            found.append((rel, line, key, " | ".join(segs)))
    return found


def normalise(text):
    return " ".join(text.split())


def main():
    root = sys.argv[1]
    found = messages(root)
    if "--list" in sys.argv:
        for rel, line, key, whole in found:
            print(f"{rel}:{line}: [{key}]  {whole}")
        return 0
    doc_path = os.path.join(root, "docs", "troubleshooting.md")
    with open(doc_path, encoding="utf-8") as f:
        doc = normalise(f.read())
    missing = [(rel, line, key) for rel, line, key, _ in found if key not in doc]
    for rel, line, key in missing:
        print(f"messages: {rel}:{line}: not in docs/troubleshooting.md: \"{key}\"")
    sites = len({(rel, line) for rel, line, _, _ in found})
    if sites < 100:  # the extraction itself broke: there are far more
        print(f"messages: only {sites} messages found under shim/ and tools/cli/; the extraction is broken")
        return 1
    print(f"messages: {sites} call sites, {len(found)} pieces of fixed text, {len(missing)} not in docs/troubleshooting.md")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
