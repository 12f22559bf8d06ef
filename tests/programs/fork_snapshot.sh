#!/usr/bin/env bash
# fork_snapshot.sh LIB PROGRAM — the fork snapshot (fork_snapshot.c), on
# disk and memory regions: a child sees its regions as they were at the
# fork when the parent overwrites or frees one, and the parent's region is
# shared again with every byte it wrote (also while a thread writes it, and
# at once after a child's exec, after 200 forks in a row, and after 100
# children alive at once; and while a
# thread reads into it, where no read may fail when the shim's log says the
# re-share was blocked, as a memfd region's is with userfaultfd). Exits 1
# when any mode failed; 99 (a broken
# test: meson reports an error) when the program fails without the shim or
# ends otherwise.
set -euo pipefail
lib=$1 prog=$2
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-snapshot.XXXXXX)
trap 'rm -rf "$dir"' EXIT
bad=0
# Without the shim first: the program itself must pass.
modes="overwrite free reshare exec busy many reads crowd"
for mode in $modes; do
  "$prog" $mode || { echo "fork_snapshot.sh: the program fails without the shim ($mode): a broken test" >&2; exit 99; }
done
for policy in disk memory; do
  for mode in $modes; do
    status=0
    timeout -s KILL 60 env LD_PRELOAD="$lib" SPILLWAY_DIR="$dir" SPILLWAY_THRESHOLD=1MiB SPILLWAY_POLICY=$policy \
        SPILLWAY_LOG=debug "$prog" $mode >"$dir/out" 2>"$dir/log" || status=$?
    cat "$dir/out"
    grep 'fork snapshot' "$dir/log" || true
    if [[ $mode == reads && $status == 0 ]] && grep -q 'shared again in .* (blocked)' "$dir/log" &&
        ! grep -q ' 0 of [0-9]* reads into the region failed with EFAULT, 0 came back short' "$dir/out"; then
      echo "reads ($policy regions): a read failed although the re-share was blocked"
      status=1
    fi
    case $status in
      0) echo "$mode ($policy regions): as it should be" ;;
      1) echo "$mode ($policy regions): FAILED"; bad=1 ;;
      *) echo "fork_snapshot.sh: $mode ($policy regions): status $status" >&2; exit 99 ;;
    esac
  done
done
exit $bad
