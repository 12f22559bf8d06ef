#!/usr/bin/env bash
# refusals.sh LIB — start-up refuses what would silently not protect the job:
# a tmpfs spill dir is refused with a warning (the job runs on anon memory),
# a bad config is one line naming file/line/key and exit status 78 with no
# files created, SPILLWAY_ON_ERROR=continue runs the job anyway, and an
# unsafe directory (world-writable, a symlink) is refused.
set -euo pipefail
lib=$1
work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-refuse.XXXXXX)
shm=$(mktemp -d /dev/shm/spillway-refuse.XXXXXX)
trap 'rm -rf "$work" "$shm"' EXIT
fail() { echo "refusals: $*"; exit 1; }

# tmpfs refused, job still runs.
err=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$shm/spill" SPILLWAY_THRESHOLD=1MiB \
      /usr/bin/python3 -c 'b = bytearray(8 << 20); print(len(b))' 2>&1 >/dev/null)
grep -q "tmpfs" <<<"$err" || fail "no tmpfs warning: $err"
# forced tmpfs is allowed
cat > "$work/tmpfs.toml" <<EOF2
[spill]
dir = "$shm/forced"
allow_tmpfs = true
EOF2
env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$work/tmpfs.toml" /bin/true || fail "allow_tmpfs did not start"

# Bad configs: syntax, unknown key, wrong type, impossible size.
check_bad() {
  local name=$1 text=$2 expect=$3
  printf '%s\n' "$text" > "$work/$name.toml"
  local status=0 out
  out=$(env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$work/$name.toml" SPILLWAY_DIR="$work/never" \
        /bin/echo should-not-run 2>&1) || status=$?
  [ "$status" = 78 ] || fail "$name: exit status $status, want 78 ($out)"
  [ "$(wc -l <<<"$out")" = 1 ] || fail "$name: more than one line: $out"
  grep -q "$work/$name.toml" <<<"$out" || fail "$name: file not named: $out"
  grep -q -- "$expect" <<<"$out" || fail "$name: '$expect' missing: $out"
  [ ! -e "$work/never" ] || fail "$name: the spill dir was created despite the bad config"
}
check_bad syntax 'threshold = "64MiB' 'syntax error'
check_bad unknown $'threshold = "64MiB"\nthreshhold = "1GiB"' "key 'threshhold'"
check_bad type $'[spill]\ndir = 5' "key 'spill.dir'"
check_bad size 'threshold = "12 parsecs"' "key 'threshold'"
check_bad tiny 'threshold = "1KiB"' "at least"
grep -q ":2:" <<<"$(env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$work/unknown.toml" /bin/true 2>&1 || true)" \
  || fail "the line number of the bad key is not reported"

# SPILLWAY_ON_ERROR=continue runs the job unprotected but still says why.
out=$(env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$work/syntax.toml" SPILLWAY_ON_ERROR=continue \
      /bin/echo ran 2>&1) || fail "continue mode did not run the job"
grep -q "^ran$" <<<"$out" && grep -q "WITHOUT" <<<"$out" || fail "continue mode output: $out"

# Unsafe directories.
mkdir -m 0777 "$work/open"
out=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$work/open" /bin/true 2>&1) && fail "world-writable dir accepted"
grep -q "writable by others" <<<"$out" || fail "world-writable dir: $out"
mkdir -m 0700 "$work/real"; ln -s "$work/real" "$work/link"
out=$(env LD_PRELOAD="$lib" SPILLWAY_DIR="$work/link" /bin/true 2>&1) && fail "symlinked dir accepted"
grep -q "symlink" <<<"$out" || fail "symlink dir: $out"
# A fresh directory is created private.
env LD_PRELOAD="$lib" SPILLWAY_DIR="$work/fresh/spill" /bin/true
[ "$(stat -c %a "$work/fresh/spill")" = 700 ] || fail "spill dir not created 0700"
echo "refusals: ok"
