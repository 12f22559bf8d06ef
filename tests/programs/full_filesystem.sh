#!/usr/bin/env bash
# full_filesystem.sh LIB — the spill directory sits on a small loop-mounted
# ext4 image; a job that needs more than it holds gets a logged fallback
# ("could not reserve") and finishes correctly: never SIGBUS, never a crash.
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-fullfs.XXXXXX)
mnt="$work/mnt"
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rm -rf "$work"; }
trap cleanup EXIT
truncate -s 48M "$work/fs.img"
mkfs.ext4 -q -F "$work/fs.img"
mkdir -p "$mnt"
mount -o loop "$work/fs.img" "$mnt"
mkdir -m 0700 "$mnt/spill"
cat > "$work/job.py" <<'PY'
import numpy as np
arrays = []
for i in range(8):                       # 8 x 16 MiB = 128 MiB > 48 MiB disk
    a = np.empty(4 << 20, dtype=np.float32)
    a[:] = i
    arrays.append(a)
print(sum(float(a.sum()) for a in arrays))
PY
status=0
out=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$mnt/spill" SPILLWAY_THRESHOLD=1MiB \
      /usr/bin/python3 "$work/job.py" 2>"$work/err") || status=$?
if [ "$status" -ne 0 ]; then echo "job failed with status $status (135 = SIGBUS):"; cat "$work/err"; exit 1; fi
[ "$out" = "$(/usr/bin/python3 "$work/job.py")" ] || { echo "wrong result: $out"; exit 1; }
grep -q "could not reserve" "$work/err" || { echo "no fallback warning was logged:"; cat "$work/err"; exit 1; }
grep -q "no_space" "$work/err" || { echo "the warning does not name the reason:"; cat "$work/err"; exit 1; }
[ -z "$(ls -A "$mnt/spill")" ] || { echo "spill dir not empty"; exit 1; }
echo "full_filesystem: ok ($(grep -c 'could not reserve' "$work/err") fallbacks logged)"
