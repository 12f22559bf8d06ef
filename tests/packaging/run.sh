#!/usr/bin/env bash
# run.sh [--dist DIR | --build-only | --after-build STATUS] — the packaging
# suite (tools/test-all.sh runs it): builds both packages with
# tools/package.sh, unless --dist names a directory that already holds them,
# then tests them as users meet them:
#   contents.sh         what the .deb and the wheel hold; lintian; spillway(1)
#   wheel.sh            pip install --no-index into venvs here; the numpy job
#                       in a memory cgroup through the venv's `spillway run`
#   deb.sh              dpkg -i into a clean Debian 12 root (debootstrap,
#                       docker import, no network); the numpy job under a
#                       container memory limit, bare and with `spillway run`
#   wheel_container.sh  the wheel in that root; Debian's libraries removed
# The Debian root the last two share (root.sh) is made in the background
# from the moment the .deb is built: while the wheel compiles and the first
# two tests run.
# The suite in two halves, for a caller that overlaps the compiles with
# other work (test-all.sh runs the first niced beside the meson suites):
#   --build-only          the packages and the Debian root, nothing tested;
#                         exit status 0 when the packages were built
#   --after-build STATUS  the tests, on dist/ as the first half left it;
#                         STATUS is that half's exit status (counted as the
#                         package build's test, as a whole run counts it)
# One line per test as it ends (its own lines above it), then
# "packaging: N passed, M failed"; non-zero exit when anything failed.
# Needs root (cgroups, debootstrap, Docker). The Debian root is cached under
# /var/tmp/spillway-debian-root; SPILLWAY_PKGTEST_FRESH=1 drops that cache
# first, to run from nothing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../.." && pwd)
dist="" half=whole build_status=""
usage="usage: run.sh [--dist DIR | --build-only | --after-build STATUS]"
while [ $# -gt 0 ]; do
    case $1 in
        --dist) dist=$(cd "$2" && pwd) || { echo "packaging: --dist $2 is not a directory"; exit 2; }; shift 2 ;;
        --build-only) half=build; shift ;;
        --after-build)
            [[ "${2:-}" =~ ^[0-9]+$ ]] || { echo "packaging: --after-build needs the build half's exit status ($usage)"; exit 2; }
            half=tests build_status=$2; shift 2 ;;
        *) echo "packaging: unknown argument $1 ($usage)"; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "packaging: run as root (memory cgroups, debootstrap, Docker)"; exit 2; }

passed=0 failed=0
started=$SECONDS
if [ "$half" = tests ]; then
    export SPILLWAY_PKGTEST_FRESH=0 # the first half dropped the cache and made the root
elif [ "${SPILLWAY_PKGTEST_FRESH:-0}" = 1 ]; then
    # From nothing: the cached Debian roots go once, here; the tests then
    # share the one the first of them makes.
    . "$here/lib.sh"
    . "$here/debian_root.sh"
    drop_debian_roots
    export SPILLWAY_PKGTEST_FRESH=0
fi
# The clean Debian root of deb.sh and wheel_container.sh (root.sh) needs
# only the .deb: it is made in the background from when the .deb is built,
# so a debootstrap from nothing overlaps the wheel's compile and the tests
# that need no root. Niced: the compile is the longer path.
root_log=$(mktemp /var/tmp/spillway-pkgtest-root.XXXXXX)
root_pid=""
start_root() {
    nice -n 10 bash "$here/root.sh" "$1" >"$root_log" 2>&1 &
    root_pid=$!
}
wait_root() {
    [ -n "$root_pid" ] || return 0
    local t0=$SECONDS status=0
    wait "$root_pid" || status=$?
    root_pid=""
    sed 's/^/  /' "$root_log"
    # On failure deb.sh makes the root itself, and says why if it cannot.
    [ "$status" = 0 ] || echo "packaging: preparing the Debian root in the background failed (status $status); deb.sh tries again"
    [ $((SECONDS - t0)) -gt 0 ] && echo "packaging: waited $((SECONDS - t0)) s for the Debian root"
    return 0
}
trap 'wait_root >/dev/null; rm -f "$root_log"' EXIT

if [ "$half" = tests ]; then
    # The first half ran before (its output is above this in the caller's log).
    if [ "$build_status" = 0 ]; then
        passed=$((passed + 1))
    else
        echo "packaging: tools/package.sh failed (status $build_status); nothing to test"
        echo "packaging: 0 passed, 1 failed"
        exit 1
    fi
    dist=$source_root/dist
elif [ -z "$dist" ]; then
    echo "packaging: building both packages (tools/package.sh)"
    # Read here, not in a pipeline's subshell, so the root's job is this
    # shell's to wait for. Its "building the Debian package… done" line:
    # the .deb is in dist/.
    exec {package_out}< <(bash "$source_root/tools/package.sh" 2>&1)
    package_pid=$!
    while IFS= read -r line <&"$package_out"; do
        printf '  %s\n' "$line"
        [[ "$line" == "building the Debian package"*"… done, "* ]] && start_root "$source_root/dist"
    done
    exec {package_out}<&-
    if wait "$package_pid"; then
        passed=$((passed + 1))
    else
        echo "packaging: tools/package.sh failed; nothing to test"
        echo "packaging: 0 passed, 1 failed"
        exit 1
    fi
    dist=$source_root/dist
else
    start_root "$dist"
fi
if [ "$half" = build ]; then
    wait_root
    echo "packaging: both packages built and the Debian root made ($((SECONDS - started)) s); the tests come after"
    exit 0
fi

for t in contents wheel deb wheel_container; do
    [ "$t" = deb ] && wait_root
    t0=$SECONDS
    case $t in
        contents | wheel) args=("$dist" "$source_root") ;;
        *) args=("$dist") ;;
    esac
    if bash "$here/$t.sh" "${args[@]}" 2>&1 | sed -u 's/^/  /'; [ "${PIPESTATUS[0]}" = 0 ]; then
        echo "packaging: $t passed, $((SECONDS - t0)) s"
        passed=$((passed + 1))
    else
        echo "packaging: $t FAILED, $((SECONDS - t0)) s"
        failed=$((failed + 1))
    fi
done
echo "packaging: $passed passed, $failed failed ($((SECONDS - started)) s)"
[ "$failed" = 0 ]
