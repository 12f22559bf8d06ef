#!/usr/bin/env bash
# wheel.sh DIST SOURCE_ROOT — the wheel as a user meets it, on this machine:
# `pip install --no-index` into fresh venvs, then the venv's `spillway run`
# runs an unmodified numpy job with a 1 GiB dataset in a 512 MiB memory
# cgroup (tools/lib/cgroup.sh) and completes with the unconstrained result,
# where the bare job is OOM-killed. The installed wheel must not lean on a
# build tree: its tool and helper find the library inside the venv, and no
# installed file names the tree the wheel was built from.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
dist=$1
source_root=$2
find_packages "$dist"
make_scratch
. "$source_root/tools/lib/cgroup.sh"
export CGROUP_TAG=pkgtest

limit=$((512 << 20))
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'; }
rows=$(((1 << 30) / 4096))
version=$(basename "$WHEEL" | cut -d- -f2)
# No index, no user pip config: the wheel alone.
pip_install() {
    env -u PIP_FIND_LINKS -u PIP_INDEX_URL PIP_CONFIG_FILE=/dev/null "$1/bin/pip" install -q --no-index "$WHEEL" \
        >"$SCRATCH/pip.log" 2>&1 || fail "pip install --no-index $(basename "$WHEEL") failed: $(tail -2 "$SCRATCH/pip.log")"
}
# The user's world: no SPILLWAY_LIBRARY, a cwd outside any tree.
cd / || fail "cannot cd /"
user=(env -u SPILLWAY_LIBRARY -u LD_PRELOAD -u PYTHONPATH)

# 1. An isolated venv: the console script, the helper, `python -m spillway`.
venv=$SCRATCH/venv
/usr/bin/python3 -m venv "$venv" || fail "python3 -m venv failed (install python3-venv)"
pip_install "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
out=$("${user[@]}" "$venv/bin/spillway" --version 2>&1)
[ "$out" = "spillway $version" ] || fail "the venv's spillway --version says '$out', expected 'spillway $version'"
out=$("${user[@]}" "$venv/bin/python" -m spillway --version 2>&1)
[ "$out" = "spillway $version" ] || fail "python -m spillway --version says '$out'"
out=$("${user[@]}" "$venv/bin/spillway" run -q -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
[ "$out" = "$site/spillway/_lib/libspillway.so.0" ] || fail "the venv's spillway run preloads '$out', expected the wheel's $site/spillway/_lib/libspillway.so.0"
out=$("${user[@]}" "$venv/bin/python" -c 'import spillway; print(spillway.__file__); print(spillway.library_path())' 2>&1)
[ "$out" = "$site/spillway/__init__.py
$site/spillway/_lib/libspillway.so.0" ] || fail "import spillway in the venv: expected the wheel's module and library, got: $out"
# The helper's reference API, under the venv's tool.
out=$("${user[@]}" "$venv/bin/spillway" run -q --threshold 1MiB -- "$venv/bin/python" -c '
import spillway
print(spillway.is_active(), spillway.is_tensor_spilling_enabled(), callable(spillway.share_memory))' 2>&1)
[ "$out" = "True True True" ] || fail "under the venv's spillway run, the helper does not see the shim: $out"
err=$("${user[@]}" "$venv/bin/spillway" run --threshold 1MiB -- "$venv/bin/python" -c 'b = bytearray(8 << 20)' 2>&1 >/dev/null)
grep -q 'disk        1 region' <<<"$err" || fail "the wheel's shim did not put an 8 MiB bytearray on disk: $err"
for f in "$site"/spillway/_bin/spillway "$site"/spillway/_lib/*; do
    runpath=$(readelf -d "$f" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
    case "$runpath" in "" | '$ORIGIN/') ;; *) fail "$(basename "$f") in the wheel has RUNPATH $runpath" ;; esac
done
leaks=$(grep -rl -e "$source_root" -e "$dist/.build" "$site/spillway" 2>/dev/null)
[ -z "$leaks" ] || fail "installed wheel files name the build tree: $leaks"
say "console script, python -m spillway, import spillway, the bundled shim: ok (venv $venv)"

# 2. The numpy job, with Debian's numpy seen from a venv (--system-site-packages).
jobvenv=$SCRATCH/jobvenv
/usr/bin/python3 -m venv --system-site-packages "$jobvenv" || fail "python3 -m venv --system-site-packages failed"
pip_install "$jobvenv"
job=("$jobvenv/bin/python" "$PKG_TESTS/numpy_job.py" "$rows")
# The reference in a cgroup too (no limit), for its peak.
t0=$EPOCHREALTIME
cgroup_run 0 ref "${user[@]}" "${job[@]}" >"$SCRATCH/ref.out" 2>"$SCRATCH/ref.err"
t_ref=$(elapsed "$t0")
read -r ref_status ref_peak ref_oom <<<"$ref"
reference=$(cat "$SCRATCH/ref.out")
[ "$ref_status" = 0 ] || fail "the unconstrained job failed (status $ref_status): $reference"
t0=$EPOCHREALTIME
cgroup_run "$limit" bare "${user[@]}" "${job[@]}" >/dev/null 2>&1
t_bare=$(elapsed "$t0")
read -r bare_status bare_peak bare_oom <<<"$bare"
t0=$EPOCHREALTIME
cgroup_run "$limit" with "${user[@]}" "$jobvenv/bin/spillway" run -- "${job[@]}" >"$SCRATCH/with.out" 2>"$SCRATCH/with.err"
t_with=$(elapsed "$t0")
read -r with_status with_peak with_oom <<<"$with"
result=$(cat "$SCRATCH/with.out")
echo "  wheel: numpy job, 1 GiB dataset, venv's spillway run, memory cgroup:"
printf '    %-26s %6s %9s %6s  %s\n' "" status peak time result \
    unconstrained "$ref_status" "$(mib "$ref_peak") MiB" "$t_ref s" "$reference" \
    "512 MiB, without spillway" "$bare_status" "$(mib "$bare_peak") MiB" "$t_bare s" "(OOM kills $bare_oom)" \
    "512 MiB, spillway run" "$with_status" "$(mib "$with_peak") MiB" "$t_with s" "$result"
[ "$bare_status" != 0 ] && [ "$bare_oom" -ge 1 ] ||
    fail "without spillway the job was not OOM-killed in 512 MiB (status $bare_status): the test proves nothing"
[ "$with_status" = 0 ] || fail "under the venv's spillway run the job failed (status $with_status): $(tail -3 "$SCRATCH/with.err")"
[ "$result" = "$reference" ] || fail "under the venv's spillway run the result is '$result', expected '$reference'"
grep -q 'spillway:   disk .*region' "$SCRATCH/with.err" || fail "the venv's spillway run placed no disk region: $(cat "$SCRATCH/with.err")"
echo "wheel: ok"
