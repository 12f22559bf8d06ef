#!/usr/bin/env bash
# cpython.sh LIB [quick|full] — CPython's own regression tests (Debian's
# libpython3.11-testsuite) run twice, without and with LD_PRELOAD=LIB
# (SPILLWAY_THRESHOLD=1MiB, a private SPILLWAY_DIR on disk, and the
# interpreter's object arenas in the shim's disk chunks: [python] arenas =
# "always", so every small object of the suite lives there). They must fail
# exactly the same test cases: a case that also fails without the shim is
# not ours, nor one that passes when run again alone under the shim. The
# spill directory must be empty afterwards.
#   quick (CI, default): a memory-heavy subset, ~1-2 min per run on 2 cores
#   full:  adds test_io, test_subprocess, test_multiprocessing_forkserver and
#          test_bigmem with -M 2G (several minutes and GiBs of spill)
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
here=$(cd "$(dirname "$0")" && pwd)
mode=${2:-${HARDENING_MODE:-quick}}
py=/usr/bin/python3
if ! $py -c 'import test.support' 2>/dev/null || [ ! -e /usr/lib/python3.11/test/test_array.py ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpython3.11-testsuite) >/dev/null 2>&1 || true
  fi
  if [ ! -e /usr/lib/python3.11/test/test_array.py ]; then
    echo "cpython: libpython3.11-testsuite is not installed; SKIP"; exit 77
  fi
fi
tests=(test_array test_bytes test_mmap test_bigmem test_struct test_hashlib test_pickle
       test_zlib test_lzma test_memoryview test_bz2 test_subprocess)
memlimit=()
if [ "$mode" = full ]; then
  tests+=(test_io test_multiprocessing_forkserver test_multiprocessing_spawn test_json test_re)
  memlimit=(-M 2G)
fi
work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-cpython.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -m 0700 "$work/spill"
printf '[python]\narenas = "always"\n' > "$work/arenas.toml"
run() { # run NAME [env...]
  local name=$1; shift
  ( cd "$work" && env "$@" TMPDIR="$work" timeout 900 $py -m test -j2 --timeout 600 \
      "${memlimit[@]}" --junit-xml "$work/$name.xml" "${tests[@]}" ) >"$work/$name.log" 2>&1 || true
}
failures() { # prints one failing test case id per line
  $py "$here/junit_cases.py" "$1" | sed -n 's/^fail //p'
}
summary() { grep -E '^(== Tests result|Total tests|Total duration|[0-9]+ tests? (OK|failed|skipped|altered)|.*crashed)' "$1" || true; }

t0=$SECONDS
run plain
t1=$SECONDS
run shim LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB SPILLWAY_DIR="$work/spill" SPILLWAY_CONFIG="$work/arenas.toml"
t2=$SECONDS
failures "$work/plain.xml" | sort > "$work/plain.fail"
failures "$work/shim.xml" | sort > "$work/shim.fail"
echo "cpython ($mode): ${#tests[@]} test modules; without shim $((t1-t0)) s, with shim $((t2-t1)) s"
echo "--- without the shim:"; summary "$work/plain.log"
echo "--- with the shim:"; summary "$work/shim.log"
status=0
if grep -q '<no junit' "$work/shim.fail" "$work/plain.fail"; then
  echo "cpython: FAIL: a run produced no results"; tail -30 "$work/shim.log"; status=1
fi
new=$(comm -13 "$work/plain.fail" "$work/shim.fail")
# A case that failed only under the shim runs again under the shim, alone:
# it counts when it fails again (or cannot be run). A case that then passes
# failed on the machine's timing (test_subprocess on two loaded cores), and
# is named, not counted.
recheck() { # recheck CASE: 0 when it passes alone under the shim
  local id=${1#None.} mod
  mod=$(echo "$id" | cut -d. -f2) # test.test_x.Class.method -> test_x
  rm -f "$work/recheck.xml"
  ( cd "$work" && env LD_PRELOAD="$lib" SPILLWAY_THRESHOLD=1MiB SPILLWAY_DIR="$work/spill" \
      SPILLWAY_CONFIG="$work/arenas.toml" TMPDIR="$work" \
      timeout 600 $py -m test --timeout 300 --junit-xml "$work/recheck.xml" --match "$id" "$mod" ) >"$work/recheck.log" 2>&1 || true
  $py - "$work/recheck.xml" "$id" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    cases = [tc for tc in ET.parse(sys.argv[1]).getroot().iter('testcase') if sys.argv[2] in (tc.get('name'), f"{tc.get('classname')}.{tc.get('name')}")]
except Exception:
    sys.exit(1)
sys.exit(0 if cases and all(tc.find('failure') is None and tc.find('error') is None for tc in cases) else 1)
PY
}
if [ -n "$new" ]; then
  confirmed=""
  while read -r c; do
    if recheck "$c"; then echo "cpython: note: $c failed under the shim, then passed run again alone under it (not counted)"
    else confirmed+="$c"$'\n'; fi
  done <<<"$new"
  new=${confirmed%$'\n'}
fi
if [ -n "$new" ]; then
  echo "cpython: FAIL: test cases that fail only under the shim:"; echo "$new" | sed 's/^/  /'
  grep -E -B2 -A25 '^(FAIL|ERROR):' "$work/shim.log" | head -150
  status=1
fi
gone=$(comm -23 "$work/plain.fail" "$work/shim.fail")
[ -z "$gone" ] || { echo "cpython: note: failing only WITHOUT the shim (flaky?):"; echo "$gone" | sed 's/^/  /'; }
# Crashes or fatal signals in a worker are failures even if junit lost them.
if grep -qE 'crashed|Fatal Python error|Segmentation fault|Bus error' "$work/shim.log" &&
   ! grep -qE 'crashed|Fatal Python error|Segmentation fault|Bus error' "$work/plain.log"; then
  echo "cpython: FAIL: a worker crashed only under the shim"; grep -E -A10 'crashed|Fatal Python error' "$work/shim.log" | head -40; status=1
fi
left=$(find "$work/spill" -mindepth 1 | head -5)
[ -z "$left" ] || { echo "cpython: FAIL: spill files left behind: $left"; status=1; }
[ $status = 0 ] && echo "cpython: ok (same failures with and without the shim: $(wc -l < "$work/shim.fail"))"
exit $status
