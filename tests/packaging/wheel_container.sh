#!/usr/bin/env bash
# wheel_container.sh DIST — the wheel on a fresh Debian 12 (the clean root
# of deb.sh, without the .deb; no network, nothing from the host's /usr):
# `pip install --no-index` into a venv, then the venv's `spillway run`
# completes the numpy job under a 512 MiB container limit. The wheel relies
# on Debian's libmimalloc2.0 and libunwind8: with one removed, the tool says
# so in ONE line naming the package, instead of the loader's noise and a job
# that runs unprotected (mimalloc: exit 1; libunwind: a warning, the job runs).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$PKG_TESTS/debian_root.sh"
dist=$1
find_packages "$dist"
make_scratch
ensure_docker

limit=512m
rows=$(((1 << 30) / 4096))
# The same root as deb.sh (same package list, so the same cached image).
debian_root_image $(root_packages "$DEB")
say "clean Debian 12 root $ROOT_IMAGE (from $ROOT_FROM, ${ROOT_SECONDS} s)"

name=spillway-pkgtest-wheel-$$
installed=spillway-pkgtest-wheel:$$
on_exit "dk rm -f $name >/dev/null 2>&1; dk rmi -f $installed >/dev/null 2>&1"
wheel_in=/tmp/$(basename "$WHEEL")
# --system-site-packages: Debian's numpy is the job's numpy.
out=$(dk run --name "$name" --network none -v "$WHEEL:$wheel_in:ro" "$ROOT_IMAGE" sh -c "
    python3 -m venv --system-site-packages /venv && /venv/bin/pip install -q --no-index $wheel_in" 2>&1) ||
    fail "python3 -m venv and pip install --no-index of the wheel failed in the clean root: $(tail -2 <<<"$out")"
dk commit "$name" "$installed" >/dev/null || fail "docker commit of the venv failed"
dk rm "$name" >/dev/null
say "pip install --no-index $(basename "$WHEEL") in a venv: ok"

run_in() {
    dk run --rm --network none -e HOME=/root -w / \
        -v "$PKG_TESTS/numpy_job.py:/job/numpy_job.py:ro" -v "$PKG_TESTS/measure.sh:/job/measure.sh:ro" "$@"
}

job=(/venv/bin/python /job/numpy_job.py "$rows")
reference=$(run_in "$installed" "${job[@]}" 2>/dev/null)
[ -n "$reference" ] || fail "the unconstrained job printed nothing"
with_out=$(run_in --memory "$limit" --memory-swap "$limit" "$installed" /job/measure.sh /venv/bin/spillway run -- "${job[@]}" 2>&1)
parse_measure "$with_out"
result=$(grep '^rows=' <<<"$with_out")
say "numpy job, 1 GiB dataset, $limit limit, the venv's spillway run: status $M_status, peak $(mib "$M_peak") MiB, $M_seconds s, $result"
[ "$M_status" = 0 ] || fail "under the venv's spillway run the job failed (status $M_status): $with_out"
[ "$result" = "$reference" ] || fail "under the venv's spillway run the result is '$result', expected '$reference'"
grep -q 'spillway:   disk .*region' <<<"$with_out" || fail "the venv's spillway run placed no disk region: $with_out"

# Debian's libraries removed (nothing in this root depends on them).
out=$(run_in "$installed" sh -c '
    dpkg -r libmimalloc2.0 libunwind8 >/dev/null 2>&1 || { echo "dpkg -r failed"; exit 99; }
    /venv/bin/spillway run -- /venv/bin/python -c "print(\"the job ran\")" 2>/tmp/err; echo "status $?"
    cat /tmp/err' 2>&1)
expected="spillway run: libmimalloc.so.2 not found: install Debian's libmimalloc2.0 (apt-get install libmimalloc2.0)"
[ "$out" = "status 1
$expected" ] || fail "without libmimalloc2.0, expected exit 1 and the one line '$expected'; got: $out"
say "without libmimalloc2.0: one line, exit 1: ok"

out=$(run_in "$installed" sh -c '
    dpkg -r libunwind8 >/dev/null 2>&1 || { echo "dpkg -r failed"; exit 99; }
    /venv/bin/spillway run -q -- /venv/bin/python -c "print(\"the job ran\")" 2>/tmp/err; echo "status $?"
    cat /tmp/err' 2>&1)
expected="spillway run: warning: libunwind.so.8 not found: large allocations are placed without call sites: install Debian's libunwind8 (apt-get install libunwind8)"
[ "$out" = "the job ran
status 0
$expected" ] || fail "without libunwind8, expected the job to run with the one warning '$expected'; got: $out"
say "without libunwind8: the job runs, one warning: ok"
echo "wheel_container: ok"
