#!/usr/bin/env bash
# python_sites.sh LIB — Python call sites end to end with PyTorch: two
# tensors from the same native operator (torch.empty) on different Python
# lines are two sites, so
#  1. with no rule, run one learns the scatter site is random (the profile
#     names its Python frames, and `spillway sites` prints them); run two
#     places it in memory from its first byte;
#  2. a rule naming the scatter buffer's Python line, as `spillway sites`
#     prints it, puts it in memory and the dataset on disk (and the stats
#     file names the frame);
#  3. a native frame's name pasted from `spillway sites` matches too.
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
cli=$(realpath -s "$2")
here=$(cd "$(dirname "$0")" && pwd)
prog=$here/python_sites.py
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-pysites.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "python_sites: $*"; exit 1; }
DISK=1 MEMORY=2
line=$(grep -n "# the scatter site" "$prog" | cut -d: -f1)
run() { env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$1" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 "$prog"; }

# Tiering off: what is checked is where a run PLACES each buffer; the
# controller would promote the scatter buffer within a second, mid-run.
cat > "$dir/learn.toml" <<EOF2
[spill]
dir = "$dir/spill"
[tiering]
enabled = false
[profile]
file = "$dir/profile.toml"
EOF2
out=$(run "$dir/learn.toml")
[ "$out" = "dataset=$DISK scatter=$DISK" ] || fail "first learning run: $out"
[ -f "$dir/profile.toml" ] || fail "no profile written"
grep -q "python python_sites.py:make_scatter_buffer:$line" "$dir/profile.toml" \
    || fail "profile does not name the Python frame: $(cat "$dir/profile.toml")"
out=$(run "$dir/learn.toml")
[ "$out" = "dataset=$DISK scatter=$MEMORY" ] || fail "second learning run: $out"
echo "learning: ok (second run: $out)"

# What `spillway sites` prints for the random site, pasted into a rule.
sites=$("$cli" sites --frames 1 "$dir/profile.toml")
# A here-string, not echo | grep -q: grep -q exits at its first match and
# the echo writing the next line dies of SIGPIPE, which pipefail reports.
grep -q "random .*python python_sites.py:make_scatter_buffer:" <<<"$sites" \
    || fail "spillway sites does not show the Python frame: $sites"
frame=$(echo "$sites" | grep -o "python python_sites.py:make_scatter_buffer:[0-9]*" | head -1)
[ "${frame#python }" = "python_sites.py:make_scatter_buffer:$line" ] || fail "unexpected frame text: $frame"
cat > "$dir/pasted.toml" <<EOF2
[spill]
dir = "$dir/spill"
[stats]
file = "$dir/rules-stats.jsonl"
[[rule]]
python = "${frame#python }"
policy = "memory"
EOF2
out=$(run "$dir/pasted.toml")
[ "$out" = "dataset=$DISK scatter=$MEMORY" ] || fail "rule pasted from spillway sites (${frame#python }): $out"
grep -q "\"python python_sites.py:make_scatter_buffer:$line\"" "$dir/rules-stats.jsonl" \
    || fail "stats do not name the Python frame: $(cat "$dir/rules-stats.jsonl")"
echo "rule from spillway sites: ok (python = \"${frame#python }\")"

# A native frame name as `spillway sites` prints it, pasted into a rule's
# match, matches too; in Debian's stripped libc10 the caller of
# c10::alloc_cpu has no symbol of its own, so its name is flagged "?".
all=$("$cli" sites --frames 0 "$dir/profile.toml")
name=$(printf '%s\n' "$all" | /usr/bin/python3 -c '
import sys
for line in sys.stdin:
    for f in line.rstrip("\n").split(" <- "):
        mod, _, name = f.partition(" ")
        if mod.startswith("libc10.so") and name.endswith("?"):
            print(name); sys.exit(0)
sys.exit(1)') || fail "no libc10 frame flagged as a guessed name: $all"
cat > "$dir/native.toml" <<EOF2
[spill]
dir = "$dir/spill"
[[rule]]
match = "$name"
policy = "memory"
EOF2
out=$(run "$dir/native.toml")
[ "$out" = "dataset=$MEMORY scatter=$MEMORY" ] || fail "rule with the native name pasted from spillway sites ($name): $out"
echo "native rule from spillway sites: ok (match = \"${name:0:60}...\")"
