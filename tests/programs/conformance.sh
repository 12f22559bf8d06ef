#!/usr/bin/env bash
# conformance.sh LIB PROGRAM — runs PROGRAM bare, then under the shim (via
# under_shim.sh: 1 MiB threshold, a private spill directory), and requires
# both runs to succeed with identical output.
set -euo pipefail
lib=$1 prog=$2
here=$(dirname "$0")
bare=$("$prog") || { echo "conformance.sh: '$prog' fails bare:"; echo "$bare"; exit 1; }
shim=$(SPILLWAY_THRESHOLD=1MiB bash "$here/under_shim.sh" "$lib" "$prog") || {
  echo "conformance.sh: '$prog' fails under the shim:"; echo "$shim"; exit 1; }
if [ "$bare" != "$shim" ]; then
  echo "conformance.sh: results differ (bare, then under the shim):"
  diff <(echo "$bare") <(echo "$shim") || true
  exit 1
fi
echo "$shim"
