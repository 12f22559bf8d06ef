#!/usr/bin/env bash
# spill_dir_users.sh LIB — the default spill directory is per user, as two
# users (root and nobody): a second user's job runs with the defaults after
# the first user's; a default directory someone else pre-created (another
# owner, open mode, a symlink) is refused and the job spills to a fresh
# private directory (one warning, exit 0, removed at exit); a child that
# changes uid under an inherited SPILLWAY_DIR does the same; a bad directory
# the user named still stops the job with exit 78; a config's cached
# verdict (shim/common/verdict_cache.h) is per user: one found in a
# directory another user made is not trusted. Runs in a private mount
# namespace with its own /var/tmp, so the machine's /var/tmp is untouched.
set -euo pipefail
lib=$1
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
  echo "spill_dir_users: needs root, unshare and setpriv (two users); SKIP"; exit 77
fi
# Scripts and logs on /dev/shm; the namespace's /var/tmp (a disk directory)
# hides everything under the real /var/tmp.
work=$(mktemp -d /dev/shm/spillway-users.XXXXXX)
vartmp=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-users.XXXXXX)
trap 'rm -rf "$work" "$vartmp"' EXIT
chmod 0755 "$work"
chmod 1777 "$vartmp"
cat > "$work/job.py" <<'PY'
# Allocates 8 MiB (a region at a 1 MiB threshold); exit 0 if it is on disk.
import ctypes, sys
backing = ctypes.CDLL(None).spillway_backing
backing.argtypes = [ctypes.c_void_p]
b = bytearray(8 << 20)
b[-1] = 1
sys.exit(0 if backing(ctypes.addressof(ctypes.c_char.from_buffer(b))) == 1 else 3)
PY
cat > "$work/parent.py" <<'PY'
# A root job whose child runs as nobody (subprocess.run(user=...)).
import subprocess, sys
r = subprocess.run([sys.executable, sys.argv[1]], user="nobody", group="nogroup",
                   extra_groups=[], stderr=subprocess.PIPE, text=True)
sys.stderr.write(r.stderr)
sys.exit(r.returncode)
PY
chmod 0644 "$work/job.py" "$work/parent.py"
# The shim (and the engine it loads from its own directory) from /dev/shm:
# a build under /var/tmp would be hidden by the namespace's /var/tmp.
cp "$(readlink -f "$lib")" "$work/libspillway.so.0"
cp "$(dirname "$(readlink -f "$lib")")/libspillway_engine.so" "$work/"
chmod 0755 "$work/libspillway.so.0" "$work/libspillway_engine.so"
lib=$work/libspillway.so.0

unshare --mount --propagation private bash -s "$lib" "$work" "$vartmp" <<'INNER'
set -euo pipefail
lib=$1 work=$2 vartmp=$3
mount --bind "$vartmp" /var/tmp
fail() { echo "spill_dir_users: $*"; exit 1; }
nobody_uid=$(id -u nobody)
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
shim() { env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB "$@"; }
# run NAME CMD...: runs CMD, keeps stderr in $work/NAME.err, prints the status
run() { local name=$1; shift; local st=0; "$@" 2>"$work/$name.err" || st=$?; echo "$st"; }
warnings() { grep -c "spillway" "$work/$1.err" || true; }
owner_mode() { stat -c '%u %a' "$1"; }

# 1. root, then nobody, both with the defaults.
st=$(run root shim /usr/bin/python3 "$work/job.py")
[ "$st" = 0 ] || fail "root's default job: status $st: $(cat "$work/root.err")"
[ "$(warnings root)" = 0 ] || fail "root's default job warned: $(cat "$work/root.err")"
[ "$(owner_mode /var/tmp/spillway-0)" = "0 700" ] || fail "root's dir: $(owner_mode /var/tmp/spillway-0)"
st=$(run nobody as_nobody env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB /usr/bin/python3 "$work/job.py")
[ "$st" = 0 ] || fail "nobody's default job after root's: status $st: $(cat "$work/nobody.err")"
[ "$(warnings nobody)" = 0 ] || fail "nobody's default job warned: $(cat "$work/nobody.err")"
[ "$(owner_mode /var/tmp/spillway-$nobody_uid)" = "$nobody_uid 700" ] || fail "nobody's dir"
echo "two users with the defaults: root and nobody both spill to disk, no warning"

# 2. An attacker (root here) pre-creates nobody's default in three ways.
precreate() {
  rm -rf "/var/tmp/spillway-$nobody_uid" /var/tmp/decoy
  case $1 in
    owner) mkdir -m 0700 "/var/tmp/spillway-$nobody_uid" ;;
    mode) mkdir -m 0777 "/var/tmp/spillway-$nobody_uid"; chmod 0777 "/var/tmp/spillway-$nobody_uid"
          chown nobody "/var/tmp/spillway-$nobody_uid" ;;
    symlink) mkdir -m 0700 /var/tmp/decoy; chown nobody /var/tmp/decoy
             ln -s /var/tmp/decoy "/var/tmp/spillway-$nobody_uid" ;;
  esac
}
for how in owner mode symlink; do
  precreate $how
  st=$(run "pre-$how" as_nobody env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB /usr/bin/python3 "$work/job.py")
  [ "$st" = 0 ] || fail "pre-created ($how): status $st, want 0 on a private dir: $(cat "$work/pre-$how.err")"
  [ "$(warnings "pre-$how")" = 1 ] || fail "pre-created ($how): want one warning: $(cat "$work/pre-$how.err")"
  grep -q "refused.*private directory" "$work/pre-$how.err" || fail "pre-created ($how): $(cat "$work/pre-$how.err")"
  left=$(find /var/tmp -maxdepth 1 -name "spillway-$nobody_uid.*")
  [ -z "$left" ] || fail "pre-created ($how): private directory left behind: $left"
  [ -z "$(ls -A /var/tmp/decoy 2>/dev/null)" ] || fail "pre-created ($how): wrote into the decoy"
  echo "pre-created default ($how): refused, spilled to a private directory, one warning"
done
rm -rf "/var/tmp/spillway-$nobody_uid" /var/tmp/decoy

# 3. A child that changes uid under an inherited SPILLWAY_DIR.
mkdir -m 0700 /var/tmp/rootspill
st=$(run setuid shim SPILLWAY_DIR=/var/tmp/rootspill /usr/bin/python3 "$work/parent.py" "$work/job.py")
[ "$st" = 0 ] || fail "child after a uid change: status $st: $(cat "$work/setuid.err")"
[ "$(warnings setuid)" = 1 ] || fail "child after a uid change: want one warning: $(cat "$work/setuid.err")"
grep -q "owned by uid 0" "$work/setuid.err" || fail "child after a uid change: $(cat "$work/setuid.err")"
# ... also when the inherited directory is inside one this uid may not enter.
mkdir -m 0700 /var/tmp/rootonly
st=$(run setuid2 shim SPILLWAY_DIR=/var/tmp/rootonly/spill /usr/bin/python3 "$work/parent.py" "$work/job.py")
[ "$st" = 0 ] || fail "child after a uid change, locked dir: status $st: $(cat "$work/setuid2.err")"
[ "$(warnings setuid2)" = 1 ] || fail "child after a uid change, locked dir: $(cat "$work/setuid2.err")"
echo "child after a uid change: spilled to a private directory, one warning"

# 4. A bad directory the user named is still theirs to fix: exit 78.
ln -s /var/tmp/rootspill /var/tmp/rootlink
st=$(run named shim SPILLWAY_DIR=/var/tmp/rootlink /bin/true)
[ "$st" = 78 ] || fail "a symlink named by SPILLWAY_DIR: status $st, want 78"
[ "$(wc -l < "$work/named.err")" = 1 ] || fail "exit 78 with more than one line: $(cat "$work/named.err")"
grep -q "anonymous" "$work/named.err" && fail "contradicting messages: $(cat "$work/named.err")"
echo "a bad SPILLWAY_DIR: one line, exit 78"

# 5. A config's verdict, cached per user: root's second run needs no engine;
#    the same cache file, put by root in a directory it made for nobody, is
#    not trusted (nor written) by nobody's job; nobody's own cache is.
rm -rf "/var/tmp/spillway-$nobody_uid"
printf 'threshold = "2MiB"\n' >"$work/job.toml"
chmod 0644 "$work/job.toml"
engine_at_start() { # USER-PREFIX...: 1 if the engine was mapped before main, else 0
  "$@" env LD_PRELOAD="$lib" SPILLWAY_CONFIG="$work/job.toml" cat /proc/self/maps | grep -c libspillway_engine || true
}
[ "$(engine_at_start)" -ge 1 ] || fail "root's first run of a config: not judged by the engine"
[ "$(engine_at_start)" = 0 ] || fail "root's second run of the same config: the engine was loaded"
mkdir -m 0755 "/var/tmp/spillway-$nobody_uid"
cp -p /var/tmp/spillway-0/.spillway-verdicts "/var/tmp/spillway-$nobody_uid/"
chmod 0644 "/var/tmp/spillway-$nobody_uid/.spillway-verdicts"
before=$(md5sum < "/var/tmp/spillway-$nobody_uid/.spillway-verdicts")
[ "$(engine_at_start as_nobody)" -ge 1 ] || fail "nobody trusted a verdict cached in a directory root made"
[ "$(engine_at_start as_nobody)" -ge 1 ] || fail "nobody trusted a verdict cached in a directory root made (2nd run)"
[ "$(md5sum < "/var/tmp/spillway-$nobody_uid/.spillway-verdicts")" = "$before" ] || fail "nobody wrote into root's cache"
rm -rf "/var/tmp/spillway-$nobody_uid"
[ "$(engine_at_start as_nobody)" -ge 1 ] || fail "nobody's first run of the config: not judged by the engine"
[ "$(engine_at_start as_nobody)" = 0 ] || fail "nobody's second run: its own cached verdict was not used"
[ "$(stat -c '%u %a' "/var/tmp/spillway-$nobody_uid/.spillway-verdicts")" = "$nobody_uid 600" ] || fail "nobody's cache"
echo "config verdicts: cached per user; one in a directory another user made is not trusted"
INNER
