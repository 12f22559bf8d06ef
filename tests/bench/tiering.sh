#!/usr/bin/env bash
# tiering.sh — figures of adaptive tiering (shim/tiering.h), printed, never
# asserted. Needs root and cgroup v1 or v2 (a cgroup named
# spillway-tiering-bench-PID is created and removed).
#
#   A: first-run job (2 GiB dataset filled in order, then 256 MiB scatter
#      buffer written at random) in a 1 GiB cgroup, tiering on
#   B: the same job unconstrained (no limit): the scatter phase's baseline
#   C: the scatter phase in the 1 GiB cgroup with tiering off (fewer writes)
#   G: the growth job (600 MiB memory region, then 640 MiB of small mallocs)
#      in a 1 GiB cgroup: demotion figures
# A and B alternate (A B A B ...). The disk's floor (random 4 KiB O_DIRECT
# read latency, sequential read bandwidth) is measured in the same run.
#
# Usage: tests/bench/tiering.sh BUILD_DIR [ROUNDS] [SPILL_DIR]
set -euo pipefail
build=$(realpath "${1:?usage: tiering.sh BUILD_DIR [ROUNDS] [SPILL_DIR]}")
rounds=${2:-3}
spill=${3:-/var/tmp/spillway-tiering-bench}
job=$build/tests/control/tiering_job
[ -x "$job" ] || { echo "tiering.sh: $job missing; build it with ninja -C $build tests/control/tiering_job" >&2; exit 2; }
mkdir -p "$spill"
out=$(mktemp -d /tmp/spillway-tiering-bench.XXXXXX)
if [ -d /sys/fs/cgroup/memory ]; then
    cg=/sys/fs/cgroup/memory/spillway-tiering-bench-$$
    limit_file=memory.limit_in_bytes
else
    cg=/sys/fs/cgroup/spillway-tiering-bench-$$
    limit_file=memory.max
fi
cleanup() { rmdir "$cg" 2>/dev/null || true; rm -rf "$out" "$spill"; }
trap cleanup EXIT
mkdir "$cg"
echo $((1 << 30)) >"$cg/$limit_file"

# run NAME LIMITED(0/1) [ENV...] -- ARGS: stdout to $out/NAME.out, log to .log, stats to .jsonl
run() {
    local name=$1 limited=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local cmd="exec env SPILLWAY_DIR=$spill SPILLWAY_THRESHOLD=1MiB SPILLWAY_LOG=info SPILLWAY_STATS=$out/$name.jsonl ${envs[*]} $job $*"
    rm -f "$out/$name.jsonl"
    if [ "$limited" = 1 ]; then
        sh -c "echo \$\$ >$cg/cgroup.procs; $cmd" >"$out/$name.out" 2>"$out/$name.log" || echo "exit=$?" >>"$out/$name.out"
    else
        sh -c "$cmd" >"$out/$name.out" 2>"$out/$name.log" || echo "exit=$?" >>"$out/$name.out"
    fi
}
key() { sed -n "s/^$2=//p" "$out/$1.out" | head -1; }

echo "== disk floor (spill dir $spill)"
/usr/bin/python3 - "$spill" <<'PY'
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

echo "== first run: 2 GiB dataset + 256 MiB scatter (20 M random writes), A = 1 GiB cgroup with tiering, B = unconstrained"
for r in $(seq 1 "$rounds"); do
    run "A$r" 1 -- first-run 2048 256 20
    run "B$r" 0 -- first-run 2048 256 20
    echo "round $r: A scatter $(key A$r scatter_ms) ms (promoted $(key A$r promoted_after_ms) ms after the random phase began, intact=$(key A$r intact)); B scatter $(key B$r scatter_ms) ms"
done
/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def key(name, k):
    for line in open(f"{out}/{name}.out"):
        if line.startswith(k + "="):
            return float(line.split("=", 1)[1])
    return float("nan")
ratios = [key(f"A{r}", "scatter_ms") / key(f"B{r}", "scatter_ms") for r in range(1, rounds + 1)]
print(f"scatter phase, constrained with tiering / unconstrained: ratios {[round(x, 2) for x in ratios]}, median {statistics.median(ratios):.2f}")
print(f"phase start -> promoted (as the job saw it): median {statistics.median(key(f'A{r}', 'promoted_after_ms') for r in range(1, rounds + 1)):.0f} ms")
moves, cpu = [], []
for r in range(1, rounds + 1):
    for line in open(f"{out}/A{r}.log"):
        m = re.search(r"promoted (\d+) MiB .*random phase for ([\d.]+) s.*memory allocated in (\d+) ms, moved in (\d+) ms \((\d+) ms/GiB\), writers paused at most ([\d.]+) ms; in memory ([\d.]+) s after", line)
        if m: moves.append(m.groups())
    s = json.loads(open(f"{out}/A{r}.jsonl").readline())
    cpu.append(s["tiering"]["controller_cpu_us"] / 1000)
    wall = key(f"A{r}", "fill_ms") + key(f"A{r}", "scatter_ms")
for mib, since, alloc, ms, per, pause, done in moves:
    print(f"promotion: {mib} MiB, started {float(since)*1000:.0f} ms after the detector's random verdict, memory allocated in {alloc} ms, moved in {ms} ms ({per} ms/GiB), longest writer pause {pause} ms, in memory {float(done)*1000:.0f} ms after the verdict")
print(f"controller CPU per run (A): {[round(c, 1) for c in cpu]} ms")
PY

echo "== the same scatter phase in the 1 GiB cgroup with tiering off (2 M writes, not 20 M)"
off=$out/off.toml
printf '[tiering]\nenabled = false\n' >"$off"
run C 1 SPILLWAY_CONFIG=$off -- first-run 2048 256 2
echo "C: 2 M writes took $(key C scatter_ms) ms (A: 20 M writes took $(key A1 scatter_ms) ms); backing at the end $(key C scatter_backing_end)"

echo "== growth: 600 MiB memory region, then 640 MiB of small mallocs at 300 MiB/s, 1 GiB cgroup"
run G 1 -- growth 600 640 300
cat "$out/G.out"
grep -o 'demoted.*' "$out/G.log" || echo "(no demotion logged)"
/usr/bin/python3 -c "import json,sys; s=json.loads(open(sys.argv[1]).readline()); print('stats:', s['tiering'])" "$out/G.jsonl" 2>/dev/null || true
