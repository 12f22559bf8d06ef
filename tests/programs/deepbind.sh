#!/usr/bin/env bash
# deepbind.sh LIB PROGRAM SONAME — a library opened with RTLD_DEEPBIND shares
# the process's allocator under the shim: PROGRAM runs clean (exit 0), bare
# and under the shim, and the shim says once, at info level, who asked.
set -euo pipefail
# Absolute: a relative path would name nothing once the script changes
# directory, and LD_PRELOAD would then load no shim, silently.
lib=$(realpath -s "$1")
prog=$(realpath -s "$2")
soname=$3
here=$(cd "$(dirname "$0")" && pwd)
unset LD_LIBRARY_PATH # the bare name must be found through PROGRAM's own RUNPATH
"$prog" "$soname" >/dev/null
err=$(mktemp /tmp/spillway-deepbind.XXXXXX)
trap 'rm -f "$err"' EXIT
status=0
# anon: the crossing is the same for every backing, and disk I/O would only slow it
SPILLWAY_POLICY=anon SPILLWAY_LOG=info bash "$here/under_shim.sh" "$lib" "$prog" "$soname" 2>"$err" || status=$?
if [ "$status" -ne 0 ]; then
    cat "$err" >&2
    echo "deepbind.sh: FAIL: exit status $status under the shim (139 = SIGSEGV)" >&2
    exit 1
fi
lines=$(grep -c 'RTLD_DEEPBIND' "$err" || true)
if [ "$lines" -ne 1 ] || ! grep 'RTLD_DEEPBIND' "$err" | grep -q "$(basename "$prog").*$soname"; then
    cat "$err" >&2
    echo "deepbind.sh: FAIL: expected one info line naming $(basename "$prog") and $soname, got $lines" >&2
    exit 1
fi
grep 'RTLD_DEEPBIND' "$err"
echo "deepbind.sh: exit 0 under the shim, one info line"
