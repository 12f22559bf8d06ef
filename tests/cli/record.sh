#!/usr/bin/env bash
# record.sh SPILLWAY — `spillway run --record`: a real job sampled into JSON
# lines (head, samples naming its pid, rank, disk region, with its page
# cache where the kernel has cachestat, and cgroup, the shim's exit stats,
# the end line with the status passed through), every line valid JSON;
# `spillway report` sums it up, and with -o draws it as a self-contained
# HTML page; a bad record path stops the run before the command runs;
# report refuses a file that is no recording.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
make_scratch
spill="$SCRATCH/spill"
py=/usr/bin/python3
rec="$SCRATCH/run.jsonl"

job='import random, time
b = bytearray(16 << 20)
for i in range(0, len(b), 4096): b[i] = 1
end = time.time() + 1.5
while time.time() < end:
    for _ in range(500): b[random.randrange(len(b))] += 1
    time.sleep(0.02)
raise SystemExit(3)'
RANK=5 "$spillway" run -q --record "$rec" --record-interval 0.2 --dir "$spill" --threshold 1MiB -- "$py" -c "$job"
expect_status 3 $? "the job's status through --record"

"$py" - "$rec" <<'PY' || fail "the recording does not hold what it should (see above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]  # every line must parse
head, end = lines[0], lines[-1]
assert head["spillway_record"] == 1 and head["interval_s"] == 0.2, head
assert head["command"][0] == "/usr/bin/python3", head
assert end["exit"]["status"] == 3 and end["exit"]["signal"] == 0, end
samples = [l for l in lines if "t" in l]
assert len(samples) >= 3, f"{len(samples)} samples in 1.5 s at 0.2 s"
ts = [s["t"] for s in samples]
assert ts == sorted(ts) and len(set(ts)) == len(ts), ts
seen = [p for s in samples for p in s["processes"] if p["regions"]]
assert seen, "no sample shows the job's region"
p = max(seen, key=lambda p: p["regions"][0]["resident"])
assert p["rank"] == "5" and p["comm"] == "python3", p
r = p["regions"][0]
assert r["backing"] == "disk" and r["len"] >= 16 << 20 and 0 < r["resident"] <= r["len"], r
assert r["phase"] in ("undecided", "random", "sequential") and r["advice"], r
# A disk region's resident is its page cache as the shim measured it
# (cachestat, Linux 6.5+) or, mapped pages counted too, the larger; its
# Rss is "mapped". Without cachestat no cache figure is written.
import ctypes, tempfile
libc = ctypes.CDLL(None, use_errno=True)
with tempfile.TemporaryFile() as f:
    rng, out = (ctypes.c_uint64 * 2)(0, 0), (ctypes.c_uint64 * 5)()
    have_cachestat = libc.syscall(451, f.fileno(), ctypes.byref(rng), ctypes.byref(out), 0) == 0 or ctypes.get_errno() != 38
recorded = [r for p in seen for r in p["regions"]]
for r in recorded:
    assert 0 <= r["mapped"] <= r["len"], r
    if "cached" in r:
        assert r["resident"] == max(r["cached"], r["mapped"]) and r["dirty"] <= r["cached"] <= r["len"], r
    else:
        assert r["resident"] == r["mapped"] and "dirty" not in r, r
assert any("cached" in r for r in recorded) == have_cachestat, (have_cachestat, recorded)
cg = [s for s in samples if s["processes"]][-1]["cgroups"]  # the cgroups of the processes seen
assert cg and cg[0]["usage"] > 0 and cg[0]["version"] in (1, 2), cg
# One job, one cgroup: an exiting process's v1 /proc/PID/cgroup names the root.
names = {c["name"] for s in samples for c in s["cgroups"]}
assert len(names) == 1, f"the job's one process was put in {sorted(names)}"
stats = [l["stats"] for l in lines if "stats" in l]
assert len(stats) == 1 and stats[0]["pid"] == p["pid"], stats
PY
pid=$("$py" -c 'import json,sys; print([l for l in map(json.loads, open(sys.argv[1])) if "stats" in l][0]["stats"]["pid"])' "$rec")

out=$("$spillway" report "$rec"); expect_status 0 $? "report"
expect_contains "$out" "spillway report: /usr/bin/python3 -c" "report head"
expect_contains "$out" "ended after" "report end"
expect_contains "$out" "with status 3" "report status"
printf '%s\n' "$out" | grep -qE "^cgroup /.* \(v[12]\): peak [0-9.]+[KMGT]?i?B" || fail "no cgroup peak in: $out"
printf '%s\n' "$out" | grep -qE "^  $pid +5 +python3 +[0-9.]+[KMG]iB +16.0MiB " || fail "no line for pid $pid, rank 5: $out"
expect_contains "$out" "by phase" "phase table"

# The same recording as one self-contained HTML page: it parses (tags
# balanced, as HTML and as XML), names no URL and loads no script, and its
# charts hold one point per sample for the cgroup and the job's region.
page="$SCRATCH/report.html"
out=$("$spillway" report "$rec" -o "$page" 2>&1); expect_status 0 $? "report -o"
[ -z "$out" ] || fail "report -o printed: $out"
[ -s "$page" ] && [ ! -e "$page.tmp" ] || fail "report -o left no page (or its temporary) at $page"
"$py" - "$rec" "$page" "$pid" <<'PY' || fail "the HTML report does not hold what it should (see above)"
import json, re, sys
from html.parser import HTMLParser
rec, page, pid = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
void = {"meta", "br", "img", "input", "hr", "link"}
class Check(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.tags = []
    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in void: self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
c = Check(); c.feed(page); c.close()
assert not c.stack, f"unclosed: {c.stack}"
assert not re.search(r"https?://|<script|<link|@import|url\(", page), "the page refers to something outside itself"
samples = [l for l in map(json.loads, open(rec)) if "t" in l]
lines = [(t, a) for t, a in c.tags if t == "polyline"]
usage = [a for t, a in lines if a["data-series"] == "usage"]
with_cg = [s for s in samples if any(g["known"] for g in s["cgroups"])]
assert usage and len(usage[0]["points"].split()) == len(with_cg), (len(usage), len(with_cg))
region = [a for t, a in lines if a["data-series"].endswith(" disk 16.0MiB resident")]
with_region = [s for s in samples if any(p["regions"] for p in s["processes"])]
assert region and len(region[0]["points"].split()) == len(with_region), (region, len(with_region))
assert f"pid {pid} python3 rank 5" in page, "no chart for the job's process"
assert "exit status 3 at " in page and "time since start (s)" in page, "no exit marker or time axis"
PY
xmllint --noout "$page" 2>/dev/null || [ $? = 127 ] || fail "the HTML report is not well-formed XML: $(xmllint --noout "$page" 2>&1 | head -3)"
err=$("$spillway" report "$rec" -o "$SCRATCH/no/such/dir/r.html" 2>&1); expect_status 1 $? "report -o to an unwritable path"
expect_lines 1 "$err" "report -o to an unwritable path"
expect_contains "$err" "choose a writable path" "report -o to an unwritable path"
"$spillway" report "$rec" -o 2>/dev/null; expect_status 2 $? "report -o without a file name"

# A daemonising double fork: the grandchild's parent exits at once, so the
# grandchild leaves the job's process tree before the first sample. `run`
# adopts the job's orphans while recording (a subreaper): its region is in
# the recording, and it is reaped (no zombie left behind).
orphan='import os, time
if os.fork() == 0:
    if os.fork() == 0:
        b = bytearray(16 << 20)
        for i in range(0, len(b), 4096): b[i] = 1
        time.sleep(1.5)
        os._exit(0)
    os._exit(0)
time.sleep(2)'
"$spillway" run -q --record "$SCRATCH/orphan.jsonl" --record-interval 0.2 --dir "$spill" --threshold 1MiB -- "$py" -c "$orphan"
expect_status 0 $? "the double-forking job"
"$py" - "$SCRATCH/orphan.jsonl" <<'PY' || fail "the orphaned grandchild is not in the recording (see above)"
import json, sys
samples = [l for l in map(json.loads, open(sys.argv[1])) if "t" in l]
seen = [s for s in samples if any(p["regions"] for p in s["processes"])]
assert len(seen) >= 2, f"{len(seen)} of {len(samples)} samples show the orphan's 16 MiB region"
PY

# A record path that cannot be written stops the run before the command runs.
err=$("$spillway" run -q --record "$SCRATCH/no/such/dir/r.jsonl" --dir "$spill" -- touch "$SCRATCH/ran" 2>&1)
expect_status 1 $? "unwritable record path"
expect_lines 1 "$err" "unwritable record path message"
expect_contains "$err" "cannot write the record file" "unwritable record path message"
[ ! -e "$SCRATCH/ran" ] || fail "the command ran although the record file could not be written"
"$spillway" run -q --record "$rec" --record-interval 0 -- true 2>/dev/null; expect_status 2 $? "--record-interval 0"

echo '{"pid":1}' >"$SCRATCH/not-a-record"
err=$("$spillway" report "$SCRATCH/not-a-record" 2>&1); expect_status 1 $? "report on a stats file"
expect_contains "$err" "is not a recording" "report on a stats file"
"$spillway" report 2>/dev/null; expect_status 2 $? "report without a file"
echo "record: ok"
