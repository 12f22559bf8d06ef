#!/usr/bin/env bash
# fuzz.sh SRCROOT OUTDIR [SECONDS|build] — builds the two libFuzzer targets with
# Debian's clang (-fsanitize=fuzzer,address,undefined), replays every saved
# regression input (tests/hardening/regressions/*), then fuzzes each target
# for SECONDS (CI: 20; e.g. 3600 for a soak) from the seed corpus in
# tests/hardening/corpus/. A crash, leak, timeout or abort is a failure; the
# input is copied to OUTDIR/found-*/ and its path printed: save it under
# regressions/<target>/ and report it.
# "build" in place of SECONDS builds the targets only (test-all.sh does so
# in the background, beside the first suites); a later run reuses them.
set -uo pipefail
src=$1 out=$2 secs=${3:-20}
here="$src/tests/hardening"
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cxx" ]; then echo "fuzz: clang++ not installed (apt-get install clang); SKIP"; exit 77; fi
mkdir -p "$out/obj"
# -DNDEBUG as in the shipped (release, b_ndebug=if-release) build: toml++
# 3.3's internal assertions are compiled out there (one of them fires on
# regressions/config/toml-parse-key-assert; see the notes).
inc=(-I"$src/shim/common" -std=c++20 -D_GNU_SOURCE -DNDEBUG -g -O1)
sanitize=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
# Every file of shim/common (the spillway_common and spillway_log
# libraries): a list by hand missed the files start-up added to it. Each
# is compiled once for both targets (fuzzer-no-link: instrumented for
# coverage, no main), on every core: a file compiles only when newer than
# its object.
common=("$src"/shim/common/*.cpp)
compile_one() { # compile_one SOURCE OBJECT
  [ -f "$2" ] && [ ! "$1" -nt "$2" ] && [ ! "$0" -nt "$2" ] && return 0
  "$cxx" "${inc[@]}" "${sanitize[@]}" -fsanitize=fuzzer-no-link -c "$1" -o "$2.tmp" && mv "$2.tmp" "$2"
}
export -f compile_one; export cxx; export inc_list="${inc[*]}" sanitize_list="${sanitize[*]}"
objects=()
for f in "${common[@]}" "$here/fuzz_config.cpp" "$here/fuzz_size_glob.cpp"; do
  objects+=("$out/obj/$(basename "$f" .cpp).o")
done
if ! printf '%s\n' "${common[@]}" "$here/fuzz_config.cpp" "$here/fuzz_size_glob.cpp" |
     xargs -P "$(nproc)" -I{} bash -c 'inc=($inc_list); sanitize=($sanitize_list); compile_one "$1" "$2/obj/$(basename "$1" .cpp).o"' "$0" {} "$out"; then
  echo "fuzz: FAIL: could not compile the fuzz targets' sources with $cxx"; exit 1
fi
link() { # link NAME: the target's own object and shim/common's
  local bin="$out/$1" o newest
  newest=$(ls -t "$out/obj/$1.o" "${objects[@]:0:${#common[@]}}" | head -1)
  if [ ! -x "$bin" ] || [ "$newest" -nt "$bin" ]; then
    echo "fuzz: linking $1"
    "$cxx" "${sanitize[@]}" -fsanitize=fuzzer "$out/obj/$1.o" "${objects[@]:0:${#common[@]}}" -o "$bin" ||
      { echo "fuzz: FAIL: could not link $1"; return 1; }
  fi
}
link fuzz_config || exit 1
link fuzz_size_glob || exit 1
[ "$secs" = build ] && exit 0
# fuzz_target BIN CORPUS: replays BIN's saved regressions, then fuzzes it for
# SECONDS; prints its lines and returns 1 on a failure.
fuzz_target() {
  local bin=$1 corpus=$2 status=0 work rc runs found f
  # Regressions: every saved input must now run clean.
  if compgen -G "$here/regressions/$corpus/*" >/dev/null; then
    if ! "$out/$bin" -runs=0 "$here/regressions/$corpus/"* >"$out/$bin.regress.log" 2>&1; then
      echo "fuzz: FAIL: $bin: a saved regression input still fails:"; grep -E 'ERROR|SUMMARY|Running:' "$out/$bin.regress.log" | tail -8
      status=1
    fi
  fi
  work="$out/corpus-$corpus"; mkdir -p "$work" "$out/found-$corpus"
  rm -f "$out/found-$corpus/"*
  # Fork mode keeps fuzzing after a crash, so one known bug does not hide others.
  "$out/$bin" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
     -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=4096 \
     -artifact_prefix="$out/found-$corpus/" "$work" "$here/corpus/$corpus" \
     >"$out/$bin.log" 2>&1
  rc=$?
  # Its last status line, "#69578: cov: ... exec/s 3388 ..." (fork mode
  # prints no colon after exec/s).
  runs=$(sed -nE 's/^#([0-9]+):.* exec\/s:? ([0-9]+).*/\1 inputs, \2 per second/p' "$out/$bin.log" | tail -1)
  found=$(ls "$out/found-$corpus" 2>/dev/null | wc -l)
  if [ "$found" != 0 ] || { [ $rc != 0 ] && ! grep -q 'DONE' "$out/$bin.log"; }; then
    echo "fuzz: FAIL: $bin (exit $rc, $found inputs saved in $out/found-$corpus/):"
    for f in "$out/found-$corpus/"*; do
      [ -e "$f" ] || continue
      echo "  $f: $(head -c 80 "$f" | od -An -c | tr -s ' ' | head -2 | tr '\n' ' ')"
      "$out/$bin" "$f" 2>&1 | grep -E 'runtime error|ERROR: Address|Assertion|#[4-9] .* in spillway' | head -3 | sed 's/^/    /'
    done
    status=1
  else
    echo "fuzz: ok: $bin, ${secs} s (${runs:-?}), corpus $(ls "$work" | wc -l) entries"
  fi
  return $status
}
# The two targets fuzz at once, each in its own process (fork mode: one
# fuzzing child each), so each has a core of this 2-core machine for its
# SECONDS, as when they ran one after the other, in half the wall time.
# Each one's lines are printed after both end, in a fixed order.
status=0
pids=()
for t in fuzz_config:config fuzz_size_glob:size_glob; do
  fuzz_target "${t%%:*}" "${t##*:}" >"$out/${t%%:*}.result" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
done
for t in fuzz_config fuzz_size_glob; do cat "$out/$t.result"; done
exit $status
