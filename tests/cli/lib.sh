# lib.sh — shared by the cli test scripts: one-line failures, expectations
# on exit status and output, and a private scratch directory on disk
# (spill directories must not be tmpfs) removed at exit.

fail() {
    printf 'FAIL (%s): %s\n' "$(basename "$0")" "$*" >&2
    exit 1
}

# expect_status WANT GOT WHAT
expect_status() {
    [ "$1" = "$2" ] || fail "$3: exit status $2, expected $1"
}

# expect_contains TEXT NEEDLE WHAT
expect_contains() {
    case "$1" in
    *"$2"*) ;;
    *) fail "$3: expected to find '$2' in: $1" ;;
    esac
}

# expect_lines N TEXT WHAT
expect_lines() {
    local n
    n=$(printf '%s' "$2" | grep -c '' || true)
    [ "$n" = "$1" ] || fail "$3: expected $1 line(s), got $n: $2"
}

make_scratch() {
    SCRATCH=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-cli-test.XXXXXX) || fail "cannot create a scratch dir under ${SPILLWAY_TEST_TMP:-/var/tmp}"
    trap 'rm -rf "$SCRATCH"' EXIT
}

# write_region_job FILE: writes a Python job to FILE that holds a 16 MiB
# bytearray (a disk region at a 1 MiB threshold), writes its pid to its
# first argument, and runs until its second exists (60 s at most); with a
# third argument "random" it keeps touching the bytes at random meanwhile.
write_region_job() {
    cat >"$1" <<'PY'
import os, random, sys, time
b = bytearray(16 << 20)
for i in range(0, len(b), 4096): b[i] = 1
open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
touch = sys.argv[3:] == ["random"]
deadline = time.time() + 60
while not os.path.exists(sys.argv[2]) and time.time() < deadline:
    if touch:
        for _ in range(500): b[random.randrange(len(b))] += 1
    time.sleep(0.02 if touch else 0.05)
PY
}
