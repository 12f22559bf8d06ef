#!/usr/bin/env bash
# shm_torch.sh LIB — PyTorch's own sharing under the shim: share_memory_()
# of a 256 MiB tensor and torch.multiprocessing with both sharing strategies
# (file_descriptor, file_system) pass the tensor between processes correctly,
# with the segment redirected to the spill directory, and nothing is left
# behind in /dev/shm or the spill directory.
set -euo pipefail
lib=$1
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-shm.XXXXXX)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/job.py" <<'PY'
import os, sys, torch
import torch.multiprocessing as mp

def child(t, q):
    q.put(float(t[1000]))
    t[7] = 42.0

def main():
    strategy = sys.argv[1]
    mp.set_sharing_strategy(strategy)
    t = torch.full((64 * 1024 * 1024,), 3.0)   # 256 MiB
    t.share_memory_()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(t, q))
    p.start()
    seen = q.get(timeout=120)
    p.join(120)
    assert p.exitcode == 0, p.exitcode
    assert seen == 3.0, seen
    assert float(t[7]) == 42.0, "the child's write did not reach the parent"
    print(strategy, "ok")

if __name__ == "__main__":
    main()
PY
for strategy in file_descriptor file_system; do
    out=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir/spill" SPILLWAY_LOG=info \
          /usr/bin/python3 "$dir/job.py" "$strategy" 2>"$dir/err") || { cat "$dir/err"; exit 1; }
    [ "$out" = "$strategy ok" ] || { echo "shm_torch: $strategy: $out"; cat "$dir/err"; exit 1; }
    grep -q "redirected to $dir/spill/spillway-shm-torch_" "$dir/err" \
        || { echo "shm_torch: $strategy: the segment was not redirected"; cat "$dir/err"; exit 1; }
    left=$(ls -A "$dir/spill")
    [ -z "$left" ] || { echo "shm_torch: $strategy left files: $left"; exit 1; }
    echo "$strategy: ok"
done
