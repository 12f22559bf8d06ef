#!/usr/bin/env bash
# report_browser.sh SPILLWAY PNG — the HTML page of `spillway report -o`
# opened in a real browser (Debian's chromium, headless): a job that
# outgrows a 128 MiB memory cgroup (v1 or v2) is recorded under `spillway
# run --record`, its page must load without a console error, the DOM the
# browser built must hold the charts (SVG polylines, the limit line, the
# job's exit) and a screenshot is written to PNG (docs/cli.md's picture comes
# from here: tests/cli/report-example.png is a copy of one).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
png=$2
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || fail "chromium is not installed; run tools/setup-deps.sh (it installs Debian's chromium)"
make_scratch
py=/usr/bin/python3

if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
    cg=/sys/fs/cgroup/spillway-cli-report-$$
    mkdir "$cg" || fail "cannot create cgroup $cg (needs root)"
    echo $((128 << 20)) > "$cg/memory.max"
else
    cg=/sys/fs/cgroup/memory/spillway-cli-report-$$
    mkdir "$cg" || fail "cannot create cgroup $cg (needs root)"
    echo $((128 << 20)) > "$cg/memory.limit_in_bytes"
fi
trap 'rm -rf "$SCRATCH"; rmdir "$cg" 2>/dev/null' EXIT

job='b = bytearray(384 << 20)
for i in range(0, len(b), 4096): b[i] = 7
print(sum(b[::4096]))'
bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" \
    "$spillway" run -q --record "$SCRATCH/run.jsonl" --record-interval 0.2 --dir "$SCRATCH/spill" \
    --threshold 1MiB -- "$py" -c "$job" > "$SCRATCH/job.out"
expect_status 0 $? "the recorded job under a 128 MiB limit"
"$spillway" report "$SCRATCH/run.jsonl" -o "$SCRATCH/report.html"
expect_status 0 $? "spillway report -o"

flags=(--headless --no-sandbox --disable-gpu --no-first-run --enable-logging=stderr --v=0)
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$SCRATCH/report.html" \
    > "$SCRATCH/dom.html" 2> "$SCRATCH/browser.err"
expect_status 0 $? "chromium --dump-dom (stderr: $(tail -3 "$SCRATCH/browser.err" | tr '\n' ' '))"
if grep -E 'CONSOLE|Uncaught|SyntaxError' "$SCRATCH/browser.err"; then
    fail "the page logged a console error in chromium (lines above)"
fi
dom=$(cat "$SCRATCH/dom.html")
expect_contains "$dom" "<svg" "the DOM chromium built"
expect_contains "$dom" "<polyline" "the DOM chromium built"
expect_contains "$dom" "limit 128MiB" "the limit line's legend"
expect_contains "$dom" "exit status 0" "the job's exit"
expect_contains "$dom" "disk" "a disk region of the job"

timeout 120 "$browser" "${flags[@]}" --window-size=1100,1500 --screenshot="$png" \
    "file://$SCRATCH/report.html" > /dev/null 2>> "$SCRATCH/browser.err"
expect_status 0 $? "chromium --screenshot"
[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$png is not a PNG"
[ "$(stat -c %s "$png")" -gt 20000 ] || fail "$png is too small to hold the charts"
echo "ok: the report renders in chromium; screenshot $png"
