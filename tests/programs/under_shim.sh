#!/usr/bin/env bash
# under_shim.sh LIB COMMAND... — runs COMMAND with LIB preloaded, a 1 MiB
# threshold and a fresh private spill directory on disk, then checks that
# the directory is empty again (spill files are unnamed: nothing may leak).
set -euo pipefail
lib=$1; shift
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
status=0
env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD="${SPILLWAY_THRESHOLD:-1MiB}" "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "under_shim.sh: '$*' exited with $status" >&2
  exit "$status"
fi
left=$(find "$dir" -mindepth 1 | head -5)
if [ -n "$left" ]; then
  echo "under_shim.sh: spill directory not empty after '$*': $left" >&2
  exit 1
fi
