#!/usr/bin/env bash
# faults.sh LIB FAULTPROG SECCOMP_FAIL — fault injection under the shim. Each
# case must end in a logged fallback or a clean error (exit 0, or exit 78 with
# one config-error line where start-up cannot proceed), never a crash or SIGBUS.
#   reservation errors  ENOSPC/EDQUOT/EIO from fallocate (seccomp, syscall level)
#   O_TMPFILE, memfd_create, MAP_SHARED mmap and mremap failing (seccomp)
#   a real loop-mounted ext4 filling up while regions are live
#   EMFILE after start-up and a tiny ulimit -n at start-up
#   the process's map count (vm.max_map_count) exhausted; ulimit -v
#   the spill directory removed / made read-only (as a non-root user) mid-run
#   the config file deleted before an exec'ed child starts
# HARDENING_SYSCTL=1 also lowers the global vm.max_map_count for one run
# (restored on exit; off by default: other jobs share the machine).
set -uo pipefail
lib=$1 prog=$2 sfail=$3
work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-faults.XXXXXX)
chmod 0755 "$work"
mnt="$work/mnt"
orig_maxmap=$(cat /proc/sys/vm/max_map_count)
cleanup() {
  mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
  [ "$(cat /proc/sys/vm/max_map_count)" = "$orig_maxmap" ] || echo "$orig_maxmap" > /proc/sys/vm/max_map_count
  rm -rf "$work"
}
trap cleanup EXIT
failed=0 passed=0
bad() { echo "faults: FAIL: $*"; failed=$((failed + 1)); }
ok() { echo "faults: ok: $*"; passed=$((passed + 1)); }

# case NAME EXPECT_STATUS EXPECT_LOG_REGEX [ENV=...] -- COMMAND...
case_() {
  local name=$1 want=$2 regex=$3; shift 3
  local envs=() ; while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local spill="$work/spill-$name"; mkdir -p -m 0700 "$spill"
  local status=0
  env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB SPILLWAY_DIR="$spill" "${envs[@]}" "$@" \
    >"$work/$name.out" 2>"$work/$name.err" || status=$?
  if [ $status -ge 128 ]; then
    bad "$name: killed by signal $((status - 128)) ($( [ $status = 135 ] && echo SIGBUS))"; tail -n 5 "$work/$name.err"; return
  fi
  if ! [[ " $want " == *" $status "* ]]; then
    bad "$name: exit status $status, want one of: $want"; tail -n 8 "$work/$name.err" "$work/$name.out"; return
  fi
  if [ -n "$regex" ] && ! grep -qE "$regex" "$work/$name.err"; then
    bad "$name: no log line matching /$regex/:"; tail -n 8 "$work/$name.err"; return
  fi
  if [ -d "$spill" ] && [ -n "$(ls -A "$spill")" ]; then bad "$name: spill files left: $(ls -A "$spill")"; return; fi
  ok "$name ($(grep -h backings "$work/$name.out" | tail -1 | sed 's/.*backings: //'); $(grep -cE 'spillway' "$work/$name.err") log lines)"
}

# Reservation failures at the system-call level.
case_ reserve-enospc 0 'could not reserve.*no_space' -- "$sfail" reserve=ENOSPC -- "$prog" work
case_ reserve-edquot 0 'could not reserve.*quota' -- "$sfail" reserve=EDQUOT -- "$prog" work
case_ reserve-eio 0 'could not reserve.*io_error' -- "$sfail" reserve=EIO -- "$prog" work
case_ tmpfile-eio 0 'could not reserve' -- "$sfail" tmpfile=EIO -- "$prog" work
case_ mapshared-enomem 0 'could not reserve' -- "$sfail" mapshared=ENOMEM -- "$prog" work
case_ memfd-emfile 0 'memfd region .* failed' SPILLWAY_POLICY=memory -- "$sfail" memfd=EMFILE -- "$prog" work
case_ mremap-enomem-anon 0 '' SPILLWAY_POLICY=anon -- "$sfail" mremap=ENOMEM -- "$prog" work
case_ mremap-enomem-disk 0 '' -- "$sfail" mremap=ENOMEM -- "$prog" work
# The /dev/shm redirect reserves with the raw syscall too: it must stay in /dev/shm, logged.
cat > "$work/shm.py" <<'PY'
import mmap, os
from multiprocessing import shared_memory
s = shared_memory.SharedMemory(create=True, size=80 << 20)
s.buf[:] = b'\x07' * len(s.buf)
assert s.buf[12345] == 7
s.close(); s.unlink()
print("shm ok")
PY
case_ shm-reserve-enospc 0 'stays in /dev/shm' -- "$sfail" reserve=ENOSPC -- /usr/bin/python3 "$work/shm.py"

# A real filesystem filling while regions are live (reserved: no SIGBUS).
truncate -s 96M "$work/fs.img"
mkfs.ext4 -q -F "$work/fs.img"
mkdir -p "$mnt" && mount -o loop "$work/fs.img" "$mnt"
mkdir -m 0700 "$mnt/spill"
status=0
env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB SPILLWAY_DIR="$mnt/spill" "$prog" fill-live "$mnt/filler" \
  >"$work/fill.out" 2>"$work/fill.err" || status=$?
if [ $status != 0 ]; then bad "fill-live: status $status (135 = SIGBUS)"; tail -n 5 "$work/fill.err"
elif ! grep -q 'no_space' "$work/fill.err"; then bad "fill-live: no no_space fallback logged"; tail -n 5 "$work/fill.err"
elif [ -n "$(ls -A "$mnt/spill")" ]; then bad "fill-live: spill files left"
else ok "fill-live ($(grep -c 'could not reserve' "$work/fill.err") fallbacks logged; $(grep backings "$work/fill.out" | sed 's/.*backings: //'))"; fi
umount "$mnt"

# Descriptors: exhausted after start-up (dedicated files need one each).
printf '[spill]\ndedicated_min = "1MiB"\n' > "$work/dedicated.toml"
case_ emfile 0 'too_many_files' SPILLWAY_CONFIG="$work/dedicated.toml" -- bash -c "ulimit -n 128; exec '$prog' emfile"
# ... and at start-up: the spill directory cannot even be opened.
case_ nofile-4 "0 78" "" -- bash -c "ulimit -n 4; exec '$prog' work"
grep -q 'config error' "$work/nofile-4.err" && echo "  (nofile-4: start-up refused: $(head -1 "$work/nofile-4.err"))"

# Mappings: this process's map count exhausted, then allocations.
case_ maxmap 0 '' -- "$prog" maxmap
if [ "${HARDENING_SYSCTL:-0}" = 1 ]; then
  echo 3000 > /proc/sys/vm/max_map_count
  case_ maxmap-sysctl 0 '' -- "$prog" maxmap
  echo "$orig_maxmap" > /proc/sys/vm/max_map_count
fi
# Address space: ulimit -v too small for the arena (not routing, logged), and a roomier one.
# The arena is reserved in steps as regions need it, so a 2 GB address-space
# limit no longer stops routing: the job's regions still go to disk.
case_ ulimit-v-2g 0 '' -- bash -c "ulimit -v 2000000; exec '$prog' work"
grep -qE 'disk=[1-9]' "$work/ulimit-v-2g.out" || bad "ulimit-v-2g: no region went to disk: $(grep -h backings "$work/ulimit-v-2g.out")"
case_ ulimit-v-64g 0 '' -- bash -c "ulimit -v 64000000; exec '$prog' work"

# The spill directory removed mid-run.
case_ rmdir 0 'could not reserve' SPILLWAY_CONFIG="$work/dedicated.toml" -- "$prog" rmdir
# ... made read-only mid-run, by its (non-root) owner.
if command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
  ro="$work/ro"; mkdir -m 0700 "$ro"; chown nobody "$ro"; cp "$work/dedicated.toml" "$work/ded2.toml"; chmod 644 "$work/ded2.toml"
  status=0
  setpriv --reuid=nobody --regid=nogroup --clear-groups env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB \
    SPILLWAY_DIR="$ro/spill" SPILLWAY_CONFIG="$work/ded2.toml" "$prog" readonly >"$work/ro.out" 2>"$work/ro.err" || status=$?
  if [ $status != 0 ]; then bad "readonly: status $status"; tail -n 5 "$work/ro.err"
  elif ! grep -q 'could not reserve' "$work/ro.err"; then bad "readonly: no fallback logged"; tail -n 5 "$work/ro.err" "$work/ro.out"
  else ok "readonly ($(grep backings "$work/ro.out" | sed 's/.*backings: //'))"; fi
fi

# The config file deleted between start-up and an exec'ed child.
printf 'threshold = "1MiB"\n' > "$work/gone.toml"
case_ config-gone 0 "exec'ed child status" SPILLWAY_CONFIG="$work/gone.toml" -- "$prog" config-gone
child=$(grep -o "exec'ed child status [0-9]*" "$work/config-gone.err" | awk '{print $4}')
if [ "$child" = 78 ]; then
  grep -q "config error: $work/gone.toml: cannot read" "$work/config-gone.err" \
    && echo "  (config-gone: the exec'ed child refused to start, exit 78, one line naming the file: clean error by design)" \
    || bad "config-gone: exec'ed child exited 78 without the expected one-line error"
elif [ "$child" != 0 ]; then bad "config-gone: exec'ed child status $child"; fi

echo "faults: $passed passed, $failed failed"
[ $failed = 0 ]
