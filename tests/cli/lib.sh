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
