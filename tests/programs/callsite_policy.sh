#!/usr/bin/env bash
# callsite_policy.sh LIB PROGRAM — per-call-site placement end to end:
#  1. rules: the sequential site lands on disk, the scatter site in memory;
#  2. learning: without rules, run one finds the scatter site random and
#     writes the profile; run two places it in memory from its first byte;
#  3. under a cgroup limit smaller than the scatter region, the learned
#     random site falls back to disk with one loud warning.
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
prog=$(realpath -s "$2")
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../tools/lib/cgroup.sh"
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-sites.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "callsite_policy: $*"; exit 1; }
DISK=1 MEMORY=2

cat > "$dir/rules.toml" <<EOF2
[spill]
dir = "$dir/spill"
[[rule]]
match = "scatter_*"
policy = "memory"
access = "random"
[[rule]]
match = "sequential_fill"
policy = "disk"
EOF2
out=$(env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$dir/rules.toml" "$prog")
[ "$out" = "sequential=$DISK scatter=$MEMORY" ] || fail "with rules: $out"
echo "rules: ok ($out)"

# Tiering off: what is checked is where a run PLACES each buffer; the
# controller would promote the scatter buffer within a second, mid-run.
cat > "$dir/learn.toml" <<EOF2
[spill]
dir = "$dir/spill"
[tiering]
enabled = false
[profile]
file = "$dir/profile.toml"
[stats]
file = "$dir/stats.jsonl"
EOF2
out=$(env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$dir/learn.toml" "$prog")
[ "$out" = "sequential=$DISK scatter=$DISK" ] || fail "first learning run: $out"
[ -f "$dir/profile.toml" ] || fail "no profile written"
grep -q 'access = "random"' "$dir/profile.toml" || fail "scatter site not learned: $(cat "$dir/profile.toml")"
grep -q 'scatter_add' "$dir/profile.toml" || fail "profile does not name the frames: $(cat "$dir/profile.toml")"
grep -q '"access":"random"' "$dir/stats.jsonl" || fail "stats do not report the site's access class"
out=$(env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$dir/learn.toml" "$prog")
[ "$out" = "sequential=$DISK scatter=$MEMORY" ] || fail "second learning run: $out"
echo "learning: ok (second run: $out)"

cgroup_run $((384 << 20)) result env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$dir/learn.toml" \
    "$prog" 2000 > "$dir/limited.out" 2> "$dir/limited.err" || true
read -r status peak oom <<<"$result"
[ "$status" = 0 ] || fail "under the limit: exit $status ($(cat "$dir/limited.err"))"
[ "$(cat "$dir/limited.out")" = "sequential=$DISK scatter=$DISK" ] || fail "under the limit: $(cat "$dir/limited.out")"
grep -q "went to disk because the cgroup has no headroom" "$dir/limited.err" \
    || fail "no loud warning under the limit: $(cat "$dir/limited.err")"
echo "no headroom: ok (scatter site on disk with a warning, peak $((peak >> 20)) MiB)"
