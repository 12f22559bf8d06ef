#!/usr/bin/env bash
# kill9.sh LIB — kill -9 in the middle of a spilling run leaves the spill
# directory empty: every spill file is unnamed (O_TMPFILE), so the kernel
# frees it with the last descriptor.
set -euo pipefail
lib=$1
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-kill9.XXXXXX)
trap 'rm -rf "$dir"' EXIT
env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB /usr/bin/python3 -c '
import numpy as np, time, sys
keep = []
for i in range(64):
    a = np.ones(2 << 20, dtype=np.float32); keep.append(a)
print("spilling", flush=True)
time.sleep(60)
' > "$dir.out" &
pid=$!
for _ in $(seq 100); do grep -q spilling "$dir.out" 2>/dev/null && break; sleep 0.1; done
grep -q spilling "$dir.out" || { echo "kill9: the job never started spilling"; kill -9 $pid; exit 1; }
used=$(du -sk "$dir" | cut -f1)
kill -9 $pid; wait $pid 2>/dev/null || true
rm -f "$dir.out"
left=$(ls -A "$dir")
[ -z "$left" ] || { echo "kill9: files left behind: $left"; exit 1; }
echo "kill9: ok (spill dir empty after kill -9)"
