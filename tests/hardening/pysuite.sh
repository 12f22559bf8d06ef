#!/usr/bin/env bash
# pysuite.sh LIB SUITE [quick|full] — a Python library's own test suite
# (Debian ships them in the library's package: python3-numpy, python3-pandas;
# pytest and hypothesis from python3-pytest/python3-hypothesis, installed with
# apt if missing, as is the library) run without the shim and with
# LD_PRELOAD=LIB twice: SPILLWAY_THRESHOLD=1MiB, and 64KiB so that most
# arrays become spill-file regions (numpy's realloc of a growing buffer,
# its 64-byte aligned allocations and its madvise(MADV_HUGEPAGE) on arrays
# of 4 MiB and more then all land on regions). Each run has a private
# SPILLWAY_DIR on disk, its own TMPDIR, and (the shim's runs) a stats file,
# which makes the engine name every call site, through the process's exit.
# Each shim run must exit as pytest does when only test cases fail (0 or 1:
# a crash at exit, after the results were written, is a failure), write
# its stats line, fail exactly the test cases the bare run fails, run
# every case the bare run ran and skip no case the bare run did not; its
# spill directory must be empty afterwards. A case failing only under the
# shim whose module also fails it under libmimalloc.so.2 alone (no shim: the
# heap layout of the shim's small path) is named as such and not counted.
# SUITE_TESTS="path ..." (paths under the library's directory) replaces the
# mode's list, to look at a few.
#   numpy quick (CI, default): core (multiarray, numeric, shape_base,
#          memmap, mem_policy), lib io/format, fft and linalg without numpy's
#          'slow' marker and without test_mem_policy's test_new_policy (that
#          one reruns all of numpy.core and numpy.ma under a custom allocator:
#          several minutes; full mode runs it). ~25 s of CPU per run.
#   numpy full: every numpy test, 'slow' ones included (tens of minutes per run).
#   pandas quick (CI): reshape (merge, concat, pivot, ...), algos, pickle,
#          sort_values and rolling windows, without the slow, network and db
#          markers. ~35 s of CPU per run.
#   pandas full: every pandas test but those three markers (about an hour per run).
# The three runs go concurrently (they are compared by test case, not timed).
# numpy: --available-memory bounds its requires_memory tests (quick 2GB,
# full 3GB); without it numpy sizes them from MemAvailable and one run took 17 GiB.
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
suite=$2
here=$(cd "$(dirname "$0")" && pwd)
mode=${3:-${HARDENING_MODE:-quick}}
py=/usr/bin/python3
case $suite in
  numpy) package=python3-numpy probe_file=core/tests/test_multiarray.py ;;
  pandas) package=python3-pandas probe_file=tests/test_algos.py ;;
  *) echo "pysuite.sh: unknown suite '$suite' (numpy or pandas)" >&2; exit 2 ;;
esac
lib_dir=/usr/lib/python3/dist-packages/$suite
have_deps() { $py -c "import pytest, hypothesis, $suite" 2>/dev/null; }
if ! have_deps; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
       -o DPkg::Lock::Timeout=300 python3-pytest python3-hypothesis "$package") >/dev/null 2>&1 || true
  fi
  have_deps || { echo "$suite: python3-pytest, python3-hypothesis or $package is not installed; SKIP"; exit 77; }
fi
if [ ! -e "$lib_dir/$probe_file" ]; then
  echo "$suite: $lib_dir has no tests ($package ships them in Debian 12); SKIP"; exit 77
fi

case $suite-$mode in
  numpy-full) targets=(.) select=() extra=(--available-memory=3GB) ;;
  numpy-*)
    targets=(core/tests/test_multiarray.py core/tests/test_numeric.py core/tests/test_shape_base.py
             core/tests/test_memmap.py core/tests/test_mem_policy.py
             lib/tests/test_io.py lib/tests/test_format.py fft linalg)
    select=(-m 'not slow' --deselect core/tests/test_mem_policy.py::test_new_policy)
    extra=(--available-memory=2GB) ;;
  pandas-full) targets=(tests) select=(-m 'not slow and not network and not db') extra=() ;;
  pandas-*)
    targets=(tests/reshape tests/test_algos.py tests/io/test_pickle.py
             tests/frame/methods/test_sort_values.py tests/window/test_rolling.py)
    select=(-m 'not slow and not network and not db') extra=() ;;
esac
[ -z "${SUITE_TESTS:-}" ] || read -r -a targets <<< "$SUITE_TESTS"
targets=("${targets[@]/#/$lib_dir/}")

work=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-$suite.XXXXXX)
trap 'rm -rf "$work"' EXIT
run() { # run NAME [env...]: one pytest run in $work/NAME, junit xml in $work/NAME.xml,
  # its exit status in $work/NAME.status
  local name=$1 status=0; shift
  mkdir -m 0700 "$work/$name" "$work/$name.spill"
  # The shim's variables are given to env after /usr/bin/time, so time itself
  # runs bare and its figures are pytest's own.
  ( cd "$work/$name" && /usr/bin/time -f "$name: %e s wall, %U s user, %S s sys, max RSS %M KiB" \
      env "$@" SPILLWAY_DIR="$work/$name.spill" TMPDIR="$work/$name" PYTHONDONTWRITEBYTECODE=1 \
      timeout 3600 $py -m pytest -p no:cacheprovider -q -rfE --rootdir="$lib_dir" \
        "${extra[@]}" --junit-xml="$work/$name.xml" "${select[@]}" "${targets[@]}"
  ) >"$work/$name.log" 2>&1 || status=$?
  echo "$status" > "$work/$name.status"
}
cases() { # cases XML: one line per test case: STATE classname.name (STATE: pass|fail|skip)
  $py "$here/junit_cases.py" "$1"
}

rerun() { # rerun NAME IDS [env...]: the modules of the cases in IDS again; failures in $work/NAME-rerun.fail
  local name=$1 ids=$2; shift 2
  mapfile -t nodes < <($py - "$lib_dir" "$ids" <<'PY'
import os, sys
root = sys.argv[1]
modules = set()
for line in open(sys.argv[2]):  # classname.name[param]: the longest prefix that is a file
    parts = line.strip().partition('[')[0].split('.')
    for i in range(len(parts) - 1, 0, -1):
        path = os.path.join(root, '/'.join(parts[:i]) + '.py')
        if os.path.exists(path):
            modules.add(path)
            break
print('\n'.join(sorted(modules)))
PY
)
  : > "$work/$name-rerun.fail"
  [ ${#nodes[@]} -gt 0 ] || return 0
  mkdir -p -m 0700 "$work/$name-rerun" "$work/$name-rerun.spill"
  ( cd "$work/$name-rerun" && env "$@" SPILLWAY_DIR="$work/$name-rerun.spill" TMPDIR="$work/$name-rerun" \
      PYTHONDONTWRITEBYTECODE=1 timeout 1800 $py -m pytest -p no:cacheprovider -q --rootdir="$lib_dir" \
      "${extra[@]}" --junit-xml="$work/$name-rerun.xml" "${select[@]}" "${nodes[@]}" ) >"$work/$name-rerun.log" 2>&1 || true
  cases "$work/$name-rerun.xml" | awk '$1 == "fail" { print $2 }' | sort > "$work/$name-rerun.fail"
}
mimalloc=$(ls /usr/lib/x86_64-linux-gnu/libmimalloc.so.2 2>/dev/null || ldd "$lib" | awk '/libmimalloc/ { print $3 }')
declare -A thresholds=([shim1m]=1MiB [shim64k]=64KiB)
shim_env=(LD_PRELOAD="$lib" SPILLWAY_LOG=warn)
# The premise, checked first: under each shim setting a numpy array just above
# the threshold lives in a spill file of that run's directory (else the shim
# runs would silently test nothing).
for t in 1MiB 64KiB; do
  mkdir -m 0700 "$work/probe-$t"
  env "${shim_env[@]}" SPILLWAY_THRESHOLD=$t SPILLWAY_DIR="$work/probe-$t" $py - "$work/probe-$t" "$t" <<'PY' ||
import sys, numpy as np
spill, t = sys.argv[1], sys.argv[2]
n = {'1MiB': 1 << 20, '64KiB': 64 << 10}[t] + 4096
a = np.ones(n, dtype=np.uint8)
p = a.ctypes.data
for line in open('/proc/self/maps'):
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split('-'))
    if lo <= p < hi:
        where = f[5] if len(f) > 5 else '(anonymous)'
        sys.exit(0 if where.startswith(spill + '/') else
                 f"a {n}-byte numpy array under SPILLWAY_THRESHOLD={t} is in {where}, not a spill file of {spill}")
sys.exit(f"the numpy array at {p:#x} is in no mapping")
PY
  { echo "$suite: FAIL: the shim did not place a numpy array (LD_PRELOAD=$lib)"; exit 1; }
done
run plain &
run shim1m "${shim_env[@]}" SPILLWAY_THRESHOLD=${thresholds[shim1m]} SPILLWAY_STATS="$work/shim1m.stats" &
run shim64k "${shim_env[@]}" SPILLWAY_THRESHOLD=${thresholds[shim64k]} SPILLWAY_STATS="$work/shim64k.stats" &
wait
status=0
excused=0
echo "$suite ($mode): ${#targets[@]} test paths ${select[*]}"
for name in plain shim1m shim64k; do
  cases "$work/$name.xml" | sort -k2 > "$work/$name.cases"
  echo "--- $name: $(grep -E ' in [0-9.]+s( |$)' "$work/$name.log" | tail -1)"
  grep -E '^(plain|shim1m|shim64k): .* wall' "$work/$name.log" || true
done
# pytest exits 0 (all passed) or 1 (some failed) when it ran to its end;
# anything else (a signal at exit after the results were written: 139, a
# timeout: 124) is a failure the result files cannot show.
for name in plain shim1m shim64k; do
  st=$(cat "$work/$name.status")
  case $st in 0|1) ;; *)
    echo "$suite: FAIL: $name's pytest exited with status $st (0 or 1 expected; 139 is SIGSEGV)"
    grep -E 'Fatal Python error|Segmentation fault|spillway\[[0-9]+\]' "$work/$name.log" | head -5 || true
    status=1 ;;
  esac
done
# The stats line of pytest's own process: written at its exit, through the
# engine's call-site naming (a crash there once lost it, and the process).
for name in shim1m shim64k; do
  grep -q '"cmd":"[^"]*-m pytest' "$work/$name.stats" 2>/dev/null ||
    { echo "$suite: FAIL: $name: no stats line from pytest's process in $work/$name.stats"; status=1; }
done
of() { awk -v s="$1" '$1 == s { print $2 }' "$2"; }   # of STATE FILE: the ids in STATE
of fail "$work/plain.cases" > "$work/plain.fail"
of skip "$work/plain.cases" > "$work/plain.skip"
awk '{ print $2 }' "$work/plain.cases" > "$work/plain.all"
for name in shim1m shim64k; do
  of fail "$work/$name.cases" > "$work/$name.fail"
  of skip "$work/$name.cases" > "$work/$name.skip"
  awk '{ print $2 }' "$work/$name.cases" > "$work/$name.all"
  if grep -q '<no junit' "$work/plain.fail" "$work/$name.fail"; then
    echo "$suite: FAIL: $name or plain produced no results"; tail -30 "$work/$name.log"; status=1; continue
  fi
  new=$(comm -13 "$work/plain.fail" "$work/$name.fail")
  if [ -n "$new" ]; then
    # The shim's small path is mimalloc, so heap addresses differ from glibc's,
    # and a numpy test whose result depends on them (numpy picks a SIMD or a
    # scalar loop by where its operands lie) can fail for that alone. The
    # modules of such cases are rerun under libmimalloc.so.2 alone, without
    # the shim: a case that fails there too is named here, and is not ours.
    echo "$new" > "$work/$name.new"
    rerun "$name-mimalloc" "$work/$name.new" LD_PRELOAD="$mimalloc"
    layout=$(comm -12 <(echo "$new") "$work/$name-mimalloc-rerun.fail")
    if [ -n "$layout" ]; then
      echo "$suite: note: failing under the shim ($name) and under plain mimalloc (LD_PRELOAD=$mimalloc) too, not ours:"
      echo "$layout" | sed 's/^/  /'
      new=$(comm -23 <(echo "$new") <(echo "$layout"))
      excused=$((excused + $(echo "$layout" | wc -l)))
    fi
  fi
  if [ -n "$new" ]; then
    echo "$suite: FAIL: test cases that fail only under the shim ($name):"; echo "$new" | sed 's/^/  /'
    sed -n '/= FAILURES =/,/short test summary/p' "$work/$name.log" | head -150
    status=1
  fi
  missing=$(comm -23 "$work/plain.all" "$work/$name.all")
  if [ -n "$missing" ]; then
    echo "$suite: FAIL: test cases the bare run ran and $name did not (a crash?):"
    echo "$missing" | head -20 | sed 's/^/  /'; tail -20 "$work/$name.log"; status=1
  fi
  skipped=$(comm -13 "$work/plain.skip" "$work/$name.skip")
  if [ -n "$skipped" ]; then
    echo "$suite: FAIL: test cases skipped only under the shim ($name):"; echo "$skipped" | sed 's/^/  /'; status=1
  fi
  gone=$(comm -23 "$work/plain.fail" "$work/$name.fail")
  [ -z "$gone" ] || { echo "$suite: note: failing only WITHOUT the shim ($name; flaky?):"; echo "$gone" | sed 's/^/  /'; }
  if grep -qE 'Fatal Python error|Segmentation fault|Bus error|spillway\[[0-9]+\]: error' "$work/$name.log"; then
    echo "$suite: FAIL: $name: crash or shim error:"
    grep -E -A10 'Fatal Python error|Segmentation fault|Bus error|spillway\[[0-9]+\]: error' "$work/$name.log" | head -40; status=1
  fi
  left=$(find "$work/$name.spill" -mindepth 1 | head -5)
  [ -z "$left" ] || { echo "$suite: FAIL: $name left spill files behind: $left"; status=1; }
done
if [ -s "$work/plain.fail" ]; then
  echo "--- failing without the shim too (not ours):"; sed 's/^/  /' "$work/plain.fail"
fi
[ $status = 0 ] && echo "$suite: ok ($(wc -l < "$work/plain.all") test cases; the same $(wc -l < "$work/plain.fail") failures with and without the shim; $excused failing under plain mimalloc too)"
exit $status
