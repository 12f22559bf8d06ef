#!/usr/bin/env bash
# run.sh [--dist DIR] — the packaging suite (tools/test-all.sh runs it):
# builds both packages with tools/package.sh, unless --dist names a
# directory that already holds them, then tests them as users meet them:
#   contents.sh         what the .deb and the wheel hold; lintian; spillway(1)
#   wheel.sh            pip install --no-index into venvs here; the numpy job
#                       in a memory cgroup through the venv's `spillway run`
#   deb.sh              dpkg -i into a clean Debian 12 root (debootstrap,
#                       docker import, no network); the numpy job under a
#                       container memory limit, bare and with `spillway run`
#   wheel_container.sh  the wheel in that root; Debian's libraries removed
# One line per test as it ends (its own lines above it), then
# "packaging: N passed, M failed"; non-zero exit when anything failed.
# Needs root (cgroups, debootstrap, Docker). The Debian root is cached under
# /var/tmp/spillway-debian-root; SPILLWAY_PKGTEST_FRESH=1 drops that cache
# first, to run from nothing.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$here/../.." && pwd)
dist=""
while [ $# -gt 0 ]; do
    case $1 in
        --dist) dist=$(cd "$2" && pwd) || { echo "packaging: --dist $2 is not a directory"; exit 2; }; shift 2 ;;
        *) echo "packaging: unknown argument $1 (usage: run.sh [--dist DIR])"; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "packaging: run as root (memory cgroups, debootstrap, Docker)"; exit 2; }

passed=0 failed=0
started=$SECONDS
if [ "${SPILLWAY_PKGTEST_FRESH:-0}" = 1 ]; then
    # From nothing: the cached Debian roots go once, here; the tests then
    # share the one the first of them makes.
    . "$here/lib.sh"
    . "$here/debian_root.sh"
    drop_debian_roots
    export SPILLWAY_PKGTEST_FRESH=0
fi
if [ -z "$dist" ]; then
    echo "packaging: building both packages (tools/package.sh)"
    if bash "$source_root/tools/package.sh" 2>&1 | sed -u 's/^/  /'; [ "${PIPESTATUS[0]}" = 0 ]; then
        passed=$((passed + 1))
    else
        echo "packaging: tools/package.sh failed; nothing to test"
        echo "packaging: 0 passed, 1 failed"
        exit 1
    fi
    dist=$source_root/dist
fi

for t in contents wheel deb wheel_container; do
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
