#!/usr/bin/env bash
# tiering.sh — figures of adaptive tiering (shim/engine/tiering/tiering.h), printed, never
# asserted. Needs root and cgroup v1 or v2 (a cgroup named
# spillway-tiering-bench-PID is created and removed).
#
#   A: first-run job (2 GiB dataset filled in order, then 256 MiB scatter
#      buffer written at random) in a 1 GiB cgroup, tiering on
#   B: the same job unconstrained (no limit): the scatter phase's baseline
#   C: the scatter phase in the 1 GiB cgroup with tiering off (fewer writes)
#   G: the growth job (600 MiB memory region, then 640 MiB of small mallocs)
#      in a 1 GiB cgroup: demotion figures; then again with the spill dir on
#      a loop-mounted ext4 (direct I/O to an image file) at read_ahead_kb
#      128 and 8192 (needs losetup and mkfs.ext4; skipped without them)
# A and B alternate (A B A B ...). With TIERING_BASELINE=OTHER_BUILD_DIR a
# run of A under that build comes first in each round (A0 A B ...), for a
# before/after from one run. The disk's floor (random 4 KiB O_DIRECT read
# latency, sequential read bandwidth) is measured in the same run.
# TIERING_C=0 skips C (it takes minutes). TIERING_TAG names the cgroup,
# spill and loop directories (default tiering-bench; each gets the PID too).
#
# Usage: tests/bench/tiering.sh BUILD_DIR [ROUNDS] [SPILL_DIR]
set -euo pipefail
build=$(realpath "${1:?usage: tiering.sh BUILD_DIR [ROUNDS] [SPILL_DIR]}")
rounds=${2:-3}
tag=${TIERING_TAG:-tiering-bench}
spill=${3:-/var/tmp/spillway-$tag-$$}
job=$build/tests/control/tiering_job
[ -x "$job" ] || { echo "tiering.sh: $job missing; build it with ninja -C $build tests/control/tiering_job" >&2; exit 2; }
base_job=
if [ -n "${TIERING_BASELINE:-}" ]; then
    base_job=$(realpath "$TIERING_BASELINE")/tests/control/tiering_job
    [ -x "$base_job" ] || { echo "tiering.sh: $base_job missing; build it in the baseline's build dir" >&2; exit 2; }
fi
mkdir -p "$spill"
out=$(mktemp -d /tmp/spillway-tiering-bench.XXXXXX)
if [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/spillway-$tag-$$
    limit_file=memory.limit_in_bytes
else
    cg=/sys/fs/cgroup/spillway-$tag-$$
    limit_file=memory.max
fi
loop_dev= loop_mnt=/tmp/spillway-$tag-loop-$$ loop_img=/var/tmp/spillway-$tag-loop-$$.img
cleanup() {
    if [ -n "$loop_dev" ]; then umount "$loop_mnt" 2>/dev/null || true; losetup -d "$loop_dev" 2>/dev/null || true; fi
    rm -rf "$loop_mnt" "$loop_img"
    rmdir "$cg" 2>/dev/null || true; rm -rf "$out" "$spill"
}
trap cleanup EXIT
mkdir "$cg"
echo $((1 << 30)) >"$cg/$limit_file"

# run NAME LIMITED(0/1) [ENV...] -- ARGS: stdout to $out/NAME.out, log to .log, stats to .jsonl
run() {
    local name=$1 limited=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local cmd="exec env SPILLWAY_DIR=${run_spill:-$spill} SPILLWAY_THRESHOLD=1MiB SPILLWAY_LOG=info SPILLWAY_STATS=$out/$name.jsonl ${envs[*]} ${run_job:-$job} $*"
    rm -f "$out/$name.jsonl"
    if [ "$limited" = 1 ]; then
        sh -c "echo \$\$ >$cg/cgroup.procs; $cmd" >"$out/$name.out" 2>"$out/$name.log" || echo "exit=$?" >>"$out/$name.out"
    else
        sh -c "$cmd" >"$out/$name.out" 2>"$out/$name.log" || echo "exit=$?" >>"$out/$name.out"
    fi
}
key() { sed -n "s/^$2=//p" "$out/$1.out" | head -1; }

floor() { # DIR: the disk's floor there
/usr/bin/python3 - "$1" <<'PY'
import mmap, os, random, statistics, sys, time
path = os.path.join(sys.argv[1], "floor.bin")
size = 1 << 30
with open(path, "wb") as f:
    block = os.urandom(1 << 20)
    for _ in range(size >> 20):
        f.write(block)
    f.flush(); os.fsync(f.fileno())
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 8 << 20)
lat = []
for _ in range(2000):
    off = random.randrange(size >> 12) << 12
    t = time.perf_counter(); os.preadv(fd, [memoryview(buf)[:4096]], off); lat.append(time.perf_counter() - t)
t = time.perf_counter(); off = 0
while off < size:
    off += os.preadv(fd, [buf], off)
seq = size / (time.perf_counter() - t)
os.close(fd); os.unlink(path)
print(f"random 4 KiB O_DIRECT read: median {statistics.median(lat)*1e6:.0f} us, p90 {sorted(lat)[1800]*1e6:.0f} us")
print(f"sequential read (8 MiB O_DIRECT): {seq/1e9:.2f} GB/s")
PY
}
echo "== disk floor (spill dir $spill)"
floor "$spill"

echo "== first run: 2 GiB dataset + 256 MiB scatter (20 M random writes), A = 1 GiB cgroup with tiering, B = unconstrained${base_job:+, A0 = A under $TIERING_BASELINE}"
for r in $(seq 1 "$rounds"); do
    line="round $r:"
    if [ -n "$base_job" ]; then
        run_job=$base_job run "A0$r" 1 -- first-run 2048 256 20
        line="$line A0 scatter $(key A0$r scatter_ms) ms (promoted $(key A0$r promoted_after_ms) ms after the random phase began, intact=$(key A0$r intact));"
    fi
    run "A$r" 1 -- first-run 2048 256 20
    run "B$r" 0 -- first-run 2048 256 20
    echo "$line A scatter $(key A$r scatter_ms) ms (promoted $(key A$r promoted_after_ms) ms after the random phase began, intact=$(key A$r intact)); B scatter $(key B$r scatter_ms) ms"
done
/usr/bin/python3 - "$out" "$rounds" "${base_job:+A0}" <<'PY'
import json, re, statistics, sys
out, rounds, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def key(name, k):
    try:
        for line in open(f"{out}/{name}.out"):
            if line.startswith(k + "="):
                return float(line.split("=", 1)[1])
    except OSError:
        pass
    return float("nan")
def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")
# Each figure of a promotion's log line, by its words (older builds log fewer).
fields = {
    "decided_s": r"random phase for ([\d.]+) s",
    "paged_out_ms": r"paged out in (\d+) ms",
    "alloc_ms": r"memory allocated in (\d+) ms",
    "move_ms": r"moved in (\d+) ms",
    "ms_per_gib": r"\((\d+) ms/GiB",
    "first_copy_ms": r"first copy (\d+) ms",
    "readonly_ms": r"and remap (\d+) ms",
    "cpu_ms": r"; (\d+) ms on CPU\)",
    "claim_ms": r"memfd and claim in (\d+) ms",
    "checks_ms": r"after (\d+) ms of locks and checks",
    "pause_ms": r"(?:writers|accesses) paused at most ([\d.]+) ms",
    "verdict_to_memory_s": r"in memory ([\d.]+) s after",
}
def promotions(name):
    got = []
    try:
        for line in open(f"{out}/{name}.log"):
            if "tiering: promoted" not in line:
                continue
            g = {}
            for k, rx in fields.items():
                m = re.search(rx, line)
                g[k] = float(m.group(1)) if m else float("nan")
            got.append(g)
    except OSError:
        pass
    return got
def controller_cpu_ms(name):
    try:
        return json.loads(open(f"{out}/{name}.jsonl").readline())["tiering"]["controller_cpu_us"] / 1000
    except (OSError, ValueError, KeyError):
        return float("nan")
for a in ([base] if base else []) + ["A"]:
    names = [f"{a}{r}" for r in range(1, rounds + 1)]
    ratios = [key(n, "scatter_ms") / key(f"B{r}", "scatter_ms") for r, n in enumerate(names, 1)]
    label = "A0 (baseline)" if a == base else "A"
    print(f"{label}: scatter phase, constrained with tiering / unconstrained (B of the same round): ratios {[round(x, 2) for x in ratios]}, median {med(ratios):.2f}")
    print(f"{label}: random phase start -> promoted (as the job saw it): {[key(n, 'promoted_after_ms') for n in names]} ms, median {med(key(n, 'promoted_after_ms') for n in names):.0f} ms")
    moves = [m for n in names for m in promotions(n)]
    for k in fields:
        vals = [m[k] for m in moves]
        print(f"{label}:   {k:20s} {[v for v in vals]} median {med(vals):.3g}")
    cpu = [controller_cpu_ms(n) for n in names]
    wall = [key(n, "fill_ms") + key(n, "scatter_ms") for n in names]
    print(f"{label}: controller CPU per run: {[round(c, 1) for c in cpu]} ms over {[round(w) for w in wall]} ms of fill + scatter ({med(c / w * 100 for c, w in zip(cpu, wall)):.2f}% of one CPU, median)")
PY

if [ "${TIERING_C:-1}" = 0 ]; then
    echo "== (C, the scatter phase with tiering off, skipped: TIERING_C=0)"
else
echo "== the same scatter phase in the 1 GiB cgroup with tiering off (2 M writes, not 20 M; minutes)"
off=$out/off.toml
printf '[tiering]\nenabled = false\n' >"$off"
run C 1 SPILLWAY_CONFIG=$off -- first-run 2048 256 2
echo "C: 2 M writes took $(key C scatter_ms) ms (A: 20 M writes took $(key A1 scatter_ms) ms); backing at the end $(key C scatter_backing_end)"
fi

growth() { # NAME SPILL_DIR [CHECK_PAGES]
    run_spill=$2 run "$1" 1 -- growth 600 640 300 "${3:-1}"
    echo "$1: $(tr '\n' ' ' <"$out/$1.out")"
    grep -o 'demoted.*' "$out/$1.log" || echo "(no demotion logged)"
    /usr/bin/python3 -c "import json,sys; s=json.loads(open(sys.argv[1]).readline()); t=s['tiering']; print('stats: moves', {k: v for k, v in t.items() if 'move' in k or 'demot' in k}, 'controller CPU', t['controller_cpu_us'] / 1000, 'ms')" "$out/$1.jsonl" 2>/dev/null || true
}
echo "== growth: 600 MiB memory region, then 640 MiB of small mallocs at 300 MiB/s, 1 GiB cgroup"
growth G "$spill"
if command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null; then
    truncate -s 2G "$loop_img"
    mkfs.ext4 -q -F "$loop_img"
    loop_dev=$(losetup --find --show --direct-io=on "$loop_img")
    mkdir -p "$loop_mnt"
    mount "$loop_dev" "$loop_mnt"
    mkdir -p "$loop_mnt/spill"
    ra=/sys/block/$(basename "$loop_dev")/queue/read_ahead_kb
    echo "== disk floor on the loop-mounted ext4 ($loop_mnt)"
    floor "$loop_mnt/spill"
    for kb in 128 8192; do
        echo "$kb" >"$ra"
        echo "== growth with the spill dir on a loop-mounted ext4 ($loop_dev, direct I/O to an image on the same disk), read_ahead_kb $(cat "$ra")"
        growth "G$kb" "$loop_mnt/spill" 64 # one word in 64 pages checked: page by page takes minutes here
    done
else
    echo "(no losetup or mkfs.ext4: the read_ahead_kb 128 / 8192 growth runs are skipped)"
fi
