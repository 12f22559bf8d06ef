#!/usr/bin/env bash
# deb.sh DIST — the Debian package as a user meets it. It is installed with
# dpkg into a clean Debian 12 root (debootstrap, `docker import`) holding
# only the package's Depends and python3-numpy (and python3-venv, for
# wheel_container.sh, which shares the root): nothing is bind-mounted from
# the host's /usr and the containers have no network, so the package must
# bring everything else. Then an unmodified numpy job with a 1 GiB dataset
# runs under a 512 MiB container limit (swap included): bare, it must be
# OOM-killed; under `spillway run` it must complete with the result of the
# unconstrained run.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$PKG_TESTS/debian_root.sh"
dist=$1
find_packages "$dist"
make_scratch
ensure_docker

limit=512m
rows=$(((1 << 30) / 4096)) # 1 GiB of float32 rows of 1024
# The Depends line's packages, numpy and venv (lib.sh's root_packages).
debian_root_image $(root_packages "$DEB")
say "clean Debian 12 root $ROOT_IMAGE (from $ROOT_FROM, ${ROOT_SECONDS} s)"

name=spillway-pkgtest-$$
installed=spillway-pkgtest-deb:$$
on_exit "dk rm -f $name >/dev/null 2>&1; dk rmi -f $installed >/dev/null 2>&1"
out=$(dk run --name "$name" --network none -v "$DEB:/tmp/spillway.deb:ro" "$ROOT_IMAGE" \
      dpkg -i /tmp/spillway.deb 2>&1) || fail "dpkg -i $(basename "$DEB") failed in the clean root: $(tail -2 <<<"$out")"
dk commit "$name" "$installed" >/dev/null || fail "docker commit of the installed root failed"
dk rm "$name" >/dev/null
say "dpkg -i $(basename "$DEB"): ok"

run_in() {
    dk run --rm --network none -e HOME=/root \
        -v "$PKG_TESTS/numpy_job.py:/job/numpy_job.py:ro" -v "$PKG_TESTS/measure.sh:/job/measure.sh:ro" "$@"
}

# Everything where the package says it is, found with no path given.
libdir=/usr/lib/x86_64-linux-gnu
out=$(run_in "$installed" sh -c "
    set -e
    for f in /usr/bin/spillway $libdir/libspillway.so $libdir/libspillway.so.0 $libdir/libspillway_engine.so \
             /usr/include/spillway.h $libdir/pkgconfig/spillway.pc /usr/share/man/man1/spillway.1.gz \
             /usr/share/spillway/spillway.toml /usr/share/spillway/examples/pytorch-training.toml \
             /usr/share/spillway/examples/graph-build.toml /usr/lib/python3/dist-packages/spillway/__init__.py; do
        test -e \$f || { echo \"missing \$f\"; exit 1; }
    done
    echo version \$(spillway --version)
    spillway check /usr/share/spillway/spillway.toml >/dev/null && echo check ok
    echo preload \$(spillway run -q -- sh -c 'echo \$LD_PRELOAD')
    python3 -c 'import spillway; print(\"helper\", spillway.__file__, spillway.library_path())'
    # As a Dockerfile's ENV LD_PRELOAD would: the stable path, no tool.
    LD_PRELOAD=$libdir/libspillway.so SPILLWAY_THRESHOLD=1MiB python3 -c '
import numpy, spillway
a = numpy.ones(4 << 20)
print(\"ld_preload active\", spillway.is_active(), \"backing\", spillway.backing(a))'
" 2>&1) || fail "the installed package is incomplete: $out"
grep -qx "version spillway $(dpkg-deb -f "$DEB" Version)" <<<"$out" ||
    fail "spillway --version does not say $(dpkg-deb -f "$DEB" Version): $out"
grep -qx "check ok" <<<"$out" || fail "spillway check of the installed reference config failed: $out"
grep -qx "preload $libdir/libspillway.so" <<<"$out" || fail "spillway run does not preload $libdir/libspillway.so: $out"
grep -qx "helper /usr/lib/python3/dist-packages/spillway/__init__.py $libdir/libspillway.so" <<<"$out" ||
    fail "python3's spillway helper is not the package's, or does not find the library: $out"
grep -qx "ld_preload active True backing disk" <<<"$out" ||
    fail "LD_PRELOAD=$libdir/libspillway.so does not route a 32 MiB array to disk: $out"
say "files, tool, helper and LD_PRELOAD=$libdir/libspillway.so: ok"

# The job: unconstrained (the reference), bare under the limit, under spillway.
job=(python3 /job/numpy_job.py "$rows")
reference_out=$(run_in "$installed" /job/measure.sh "${job[@]}" 2>&1)
parse_measure "$reference_out"
[ "$M_status" = 0 ] || fail "the unconstrained job failed (status $M_status): $reference_out"
reference=$(grep '^rows=' <<<"$reference_out")
printf -v row_ref '%-26s %6s %9s %8s  %s' "unconstrained" "$M_status" "$(mib "$M_peak") MiB" "$M_seconds s" "$reference"

bare_out=$(run_in --memory "$limit" --memory-swap "$limit" "$installed" /job/measure.sh "${job[@]}" 2>&1)
parse_measure "$bare_out"
printf -v row_bare '%-26s %6s %9s %8s  %s' "$limit, without spillway" "$M_status" "$(mib "$M_peak") MiB" "$M_seconds s" "$(grep '^rows=' <<<"$bare_out" || echo "(no result)")"
[ "$M_status" = 137 ] && [ "${M_oom_kills:-0}" -ge 1 ] ||
    fail "without spillway the job was not OOM-killed under $limit (status $M_status, OOM kills $M_oom_kills): the test proves nothing; $bare_out"

with_out=$(run_in --memory "$limit" --memory-swap "$limit" "$installed" /job/measure.sh spillway run -- "${job[@]}" 2>&1)
parse_measure "$with_out"
result=$(grep '^rows=' <<<"$with_out")
printf -v row_with '%-26s %6s %9s %8s  %s' "$limit, spillway run" "$M_status" "$(mib "$M_peak") MiB" "$M_seconds s" "${result:-(no result)}"
echo "  deb: numpy job, 1 GiB dataset, in the clean root:"
printf '    %-26s %6s %9s %8s  %s\n' "" status peak time result
printf '    %s\n' "$row_ref" "$row_bare" "$row_with"
[ "$M_status" = 0 ] || fail "under spillway run the job failed (status $M_status): $with_out"
[ "$result" = "$reference" ] || fail "under spillway run the result differs: '$result', expected '$reference'"
grep -q 'spillway:   disk .*region' <<<"$with_out" || fail "spillway run printed no disk regions: $with_out"
echo "deb: ok"
