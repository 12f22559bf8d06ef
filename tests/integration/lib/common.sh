# common.sh — shared plumbing for run.sh: messages, one-line fatal errors,
# the run's scratch directory and the cleanup that runs on every exit.
# Proves nothing itself; sourced by run.sh before anything else.

say() { printf '[integration] %s\n' "$*" >&2; }

# die MESSAGE: one line saying what was wrong and what to do, then exit 2.
die() {
    printf 'integration: error: %s\n' "$*" >&2
    exit 2
}

# Cleanup actions run in reverse order of registration at exit.
CLEANUP_ACTIONS=()
on_exit() { CLEANUP_ACTIONS+=("$1"); }

run_cleanup() {
    local i
    for ((i = ${#CLEANUP_ACTIONS[@]} - 1; i >= 0; i--)); do
        eval "${CLEANUP_ACTIONS[$i]}" || true
    done
    CLEANUP_ACTIONS=()
}

install_cleanup_trap() {
    trap 'rc=$?; run_cleanup; exit $rc' EXIT
    trap 'say "interrupted; cleaning up"; exit 130' INT TERM
}

# make_workdir: the run's scratch directory on a disk filesystem (spill
# directories must not be tmpfs): SPILLWAY_TEST_TMP (tools/spill-device.sh),
# else /var/tmp; removed at exit.
make_workdir() {
    local base=${SPILLWAY_TEST_TMP:-/var/tmp}
    WORK=$(mktemp -d "$base/spillway-int.XXXXXX") || die "cannot create a scratch dir under $base; check that it exists and is writable"
    chmod 0700 "$WORK"
    on_exit "rm -rf '$WORK'"
}

# json_field FILE PATH: prints the value at a dotted PATH (e.g. regions.disk)
# in the first JSON line of FILE, or "missing".
json_field() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
try:
    with open(sys.argv[1]) as f:
        value = json.loads(f.readline())
    for key in sys.argv[2].split("."):
        value = value[key]
    print(value)
except (OSError, ValueError, KeyError, TypeError):
    print("missing")
PY
}

# mib BYTES: whole MiB, for messages.
mib() { echo $(( ${1:-0} / 1048576 )); }
