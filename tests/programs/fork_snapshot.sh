#!/usr/bin/env bash
# fork_snapshot.sh LIB PROGRAM — a fork child sees its inherited regions as
# they were at the fork (fork_snapshot.c), on disk and memory regions, when
# the parent overwrites a region after the fork and when it frees one.
# Exits 1 when any child saw the parent's later bytes: a KNOWN DEFECT, so
# meson runs it with should_fail (docs/limitations.md, "fork"). Exit 99 (a
# broken test: meson reports an error whatever should_fail says) when the
# program fails without the shim or ends otherwise.
set -euo pipefail
lib=$1 prog=$2
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-snapshot.XXXXXX)
trap 'rm -rf "$dir"' EXIT
bad=0
# Without the shim first: the program itself must pass.
for mode in overwrite free; do
  "$prog" $mode || { echo "fork_snapshot.sh: the program fails without the shim ($mode): a broken test" >&2; exit 99; }
done
for policy in disk memory; do
  for mode in overwrite free; do
    status=0
    timeout -s KILL 60 env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB SPILLWAY_POLICY=$policy \
        "$prog" $mode || status=$?
    case $status in
      0) echo "$mode ($policy regions): the child saw the snapshot" ;;
      1) echo "$mode ($policy regions): the child saw the parent's later bytes"; bad=1 ;;
      *) echo "fork_snapshot.sh: $mode ($policy regions): status $status" >&2; exit 99 ;;
    esac
  done
done
exit $bad
