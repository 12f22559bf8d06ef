#!/usr/bin/env bash
# phases_smoke.sh LIB PHASES — the phase benchmark on small sizes: the floor,
# a baseline run (fallocated MAP_SHARED file) and a run under the shim must
# each finish, print their lines, and read back every row as written (phases
# exits 1 otherwise). Timings are printed, never judged.
set -euo pipefail
lib=$1 phases=$2
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-phases-smoke.XXXXXX)
trap 'rm -rf "$dir"' EXIT
out=$("$phases" floor --file "$dir/floor" --size 16M --reads 200)
echo "$out"
grep -q '^FLOOR lat_med_us=[0-9.]* ' <<<"$out" || { echo "phases_smoke: no FLOOR line" >&2; exit 1; }
[ ! -e "$dir/floor" ] || { echo "phases_smoke: floor left its file behind" >&2; exit 1; }
lat=$(sed -n 's/.*lat_med_us=\([^ ]*\).*/\1/p' <<<"$out")
for variant in baseline shim; do
  if [ $variant = baseline ]; then
    out=$("$phases" run --size 32M --rows 3000 --batch 100 --lat-us "$lat" --label $variant --baseline --dir "$dir")
  else
    out=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB \
          "$phases" run --size 32M --rows 3000 --batch 100 --lat-us "$lat" --label $variant)
  fi
  echo "$out"
  n=$(grep -c "^PHASE label=$variant phase=" <<<"$out" || true)
  [ "$n" = 4 ] || { echo "phases_smoke: $variant printed $n phase lines, expected 4" >&2; exit 1; }
done
left=$(find "$dir" -mindepth 1 | head -3)
[ -z "$left" ] || { echo "phases_smoke: files left in the spill directory: $left" >&2; exit 1; }
echo "phases_smoke: ok"
