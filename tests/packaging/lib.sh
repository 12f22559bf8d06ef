# lib.sh — shared by the packaging tests (tests/packaging/run.sh runs them):
# one-line failures, a scratch directory on disk, the Docker daemon, and the
# clean Debian 12 root the .deb and the wheel are installed into.

PKG_TESTS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DOCKER=/usr/bin/docker # the docker.io client; /usr/local/bin may hold another
dk() { "$DOCKER" "$@"; }

fail() {
    printf 'FAIL (%s): %s\n' "$(basename "$0")" "$*" >&2
    exit 1
}
say() { printf '  %s: %s\n' "$(basename "$0" .sh)" "$*"; }

make_scratch() {
    SCRATCH=$(mktemp -d /var/tmp/spillway-pkgtest.XXXXXX) || fail "cannot create a scratch dir under /var/tmp"
    trap 'cleanup_scratch' EXIT
}
CLEANUPS=()
on_exit() { CLEANUPS+=("$1"); }
cleanup_scratch() {
    local c
    for c in "${CLEANUPS[@]}"; do eval "$c" || true; done
    rm -rf "$SCRATCH"
}

# The packages under test, from dist/ (tools/package.sh made them).
find_packages() {
    local dist=$1
    DEB=$(ls "$dist"/spillway_*_amd64.deb 2>/dev/null | head -1)
    WHEEL=$(ls "$dist"/spillway-*.whl 2>/dev/null | head -1)
    [ -n "$DEB" ] || fail "no spillway_*_amd64.deb in $dist: run bash tools/package.sh"
    [ -n "$WHEEL" ] || fail "no spillway-*.whl in $dist: run bash tools/package.sh"
}

# root_packages DEB — what the clean Debian 12 root holds (deb.sh and
# wheel_container.sh share it): the .deb's Depends, package names only
# ("libc6 (>= 2.34)" -> libc6, "python3:any" -> python3, first of any
# alternatives), python3-numpy for the job and python3-venv for the wheel.
root_packages() {
    dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/:any//; s/ //g' | grep -v '^$'
    echo python3-numpy
    echo python3-venv
}

# A shared daemon may be running: use it, never stop it. Else start one as
# the project's rules say, and leave it running for the others.
ensure_docker() {
    [ -x "$DOCKER" ] || DOCKER=$(command -v docker) || fail "no docker client: install docker.io"
    dk info >/dev/null 2>&1 && return 0
    command -v dockerd >/dev/null || fail "no Docker daemon answers and dockerd is not installed: install docker.io"
    # At normal priority even when a niced job starts it (test-all.sh makes
    # the Debian root in the background): the containers inherit it.
    setsid nice -n $((-$(nice))) ionice -c 2 -n 4 dockerd --bridge=none --iptables=false >/var/tmp/dockerd.log 2>&1 </dev/null &
    local i
    for ((i = 0; i < 60; i++)); do
        dk info >/dev/null 2>&1 && return 0
        sleep 1
    done
    fail "dockerd did not answer within 60 s; see /var/tmp/dockerd.log"
}

# "measure: status=N peak=BYTES oom_kills=N seconds=S" (measure.sh) -> the
# named fields as shell variables M_status, M_peak, M_oom_kills, M_seconds.
parse_measure() {
    local line
    line=$(grep '^measure: ' <<<"$1" | tail -1)
    [ -n "$line" ] || fail "no measure line in: $(tail -3 <<<"$1")"
    local kv
    for kv in ${line#measure: }; do
        printf -v "M_${kv%%=*}" '%s' "${kv#*=}"
    done
}
mib() { echo $(($1 >> 20)); }
