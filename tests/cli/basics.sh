#!/usr/bin/env bash
# basics.sh SPILLWAY — --version, --help of every subcommand, usage errors
# and their exit codes, and that the tool itself runs on glibc's allocator
# (neither libspillway nor libmimalloc is loaded into it).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1

out=$("$spillway" --version); expect_status 0 $? "--version"
expect_contains "$out" "spillway 0." "--version"

"$spillway" --help >/dev/null; expect_status 0 $? "--help"
out=$("$spillway" 2>/dev/null); expect_status 2 $? "no command"
for cmd in run check stat release sites; do
    out=$("$spillway" "$cmd" --help); expect_status 0 $? "$cmd --help"
    expect_contains "$out" "usage: spillway $cmd" "$cmd --help"
    expect_contains "$out" "exit status" "$cmd --help"
    out=$("$spillway" help "$cmd"); expect_status 0 $? "help $cmd"
    err=$("$spillway" "$cmd" --no-such-option 2>&1 >/dev/null); expect_status 2 $? "$cmd --no-such-option"
    expect_lines 1 "$err" "$cmd unknown option"
    expect_contains "$err" "spillway $cmd: unknown option --no-such-option" "$cmd unknown option"
done

err=$("$spillway" frobnicate 2>&1); expect_status 2 $? "unknown command"
expect_lines 1 "$err" "unknown command"
expect_contains "$err" "no command named 'frobnicate'" "unknown command"

err=$("$spillway" release 2>&1); expect_status 2 $? "release without a path"
expect_lines 1 "$err" "release without a path"
err=$("$spillway" run 2>&1); expect_status 2 $? "run without a command"
err=$("$spillway" run --threshold lots -- true 2>&1); expect_status 2 $? "run --threshold lots"
expect_lines 1 "$err" "run --threshold lots"
err=$("$spillway" run --dir relative/dir -- true 2>&1); expect_status 2 $? "run --dir relative"
err=$("$spillway" sites --frames many x 2>&1); expect_status 2 $? "sites --frames many"

# The tool must not run on the shim's allocators.
libs=$(ldd "$spillway") || fail "ldd $spillway failed"
case "$libs" in *libspillway*|*libmimalloc*) fail "the tool links an allocator it must not: $libs" ;; esac
echo "basics: ok"
