#!/usr/bin/env bash
# phases_smoke.sh LIB PHASES — the phase benchmark on small sizes: the floor,
# baseline runs (fallocated MAP_SHARED file, with no advice and under
# MADV_RANDOM) and a run under the shim must
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
args=(run --size 32M --rows 3000 --batch 100 --lat-us "$lat" --limit 8M)
for variant in baseline baseline-random shim; do
  if [ $variant = baseline ]; then
    out=$("$phases" "${args[@]}" --label $variant --baseline --dir "$dir")
  elif [ $variant = baseline-random ]; then
    out=$("$phases" "${args[@]}" --label $variant --baseline --advice random --dir "$dir")
  else
    out=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB "$phases" "${args[@]}" --label $variant)
  fi
  echo "$out"
  n=$(grep -c "^PHASE label=$variant phase=" <<<"$out" || true)
  [ "$n" = 4 ] || { echo "phases_smoke: $variant printed $n phase lines, expected 4" >&2; exit 1; }
  # the gather's floor: 3/4 of 32M cannot be resident in 8M, no slack term.
  # 3000 random 1 KiB rows of 32M lie in 8192 x (1 - e^(-3000/8192)) = 2,513
  # distinct pages on average (standard deviation about 25): between 2,400
  # and 3,000 pages of 0.75 x lat each
  for g in gather1 gather2; do
    f=$(sed -n "s/^PHASE label=$variant phase=$g .*floor_s=\([^ ]*\).*/\1/p" <<<"$out")
    awk -v f="$f" -v lat="$lat" 'BEGIN { u = 0.75 * lat / 1e6; exit !(f >= 2400 * u * 0.999 && f <= 3000 * u * 1.001) }' ||
      { echo "phases_smoke: $variant $g floor_s=$f, expected 0.75 x the distinct pages x $lat us" >&2; exit 1; }
  done
done
left=$(find "$dir" -mindepth 1 | head -3)
[ -z "$left" ] || { echo "phases_smoke: files left in the spill directory: $left" >&2; exit 1; }
echo "phases_smoke: ok"
