#!/usr/bin/env bash
# closed_fds.sh LIB PROGRAM — a program that closes every descriptor from 3
# up and opens files of its own keeps them intact under the shim
# (closed_fds.c, shim/common/fd_policy.h), on disk regions with call sites
# named, also after a second and third clean-up that make libunwind replace
# its pipe; libunwind's pipe then sits on 512 and 513, and the shim's other
# descriptors sit high.
set -euo pipefail
lib=$1 prog=$2
fail() { echo "closed_fds.sh: FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-closedfds.XXXXXX)
trap 'rm -rf "$dir"' EXIT
mkdir -m 0700 "$dir/spill" "$dir/files"
status=0
timeout -s KILL 60 env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir/spill" SPILLWAY_THRESHOLD=1MiB SPILLWAY_POLICY=disk \
    SPILLWAY_STATS="$dir/stats.json" "$prog" "$dir/files" >"$dir/out" 2>"$dir/err" || status=$?
cat "$dir/out"
[ "$status" = 0 ] || { cat "$dir/err" >&2; fail "the program exited with status $status"; }
# The shim's own descriptors, in a process that keeps them: none below 512
# (its spill directory, spill files, pagemap reader, libunwind's pipe). The
# descriptors a bare run of the same program has (inherited) are left out.
fds() { # fds [env...]: "number target" of the low descriptors of a python process
  env "$@" /usr/bin/python3 -c '
import os, time
a = bytearray(16 << 20)
time.sleep(0.3)
for fd in sorted(int(f) for f in os.listdir("/proc/self/fd")):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if 3 <= fd < 512:
        print(fd, target.split("[")[0])'
}
bare=$(fds)
shim=$(fds LD_PRELOAD="$lib" SPILLWAY_DIR="$dir/spill" SPILLWAY_THRESHOLD=1MiB SPILLWAY_POLICY=disk)
low=$(comm -13 <(sort <<<"$bare") <(sort <<<"$shim") | grep -v '^$' || true)
[ -z "$low" ] || fail "the shim holds low descriptors: $low"
echo "closed_fds: ok"
