#!/usr/bin/env bash
# closed_stdio.sh LIB PROBE — a program started with stdin/stdout/stderr closed must
# not find the shim's own descriptors in those slots (found by CPython's
# test_subprocess: test_swap_std_fds_with_one_closed). Bug 9 in
# /work/notes/hardening-shim-bugs.md.
set -uo pipefail
lib=$1 probe=$2
dir=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-stdio.XXXXXX); trap 'rm -rf "$dir"' EXIT
status=0
for n in 0 1 2; do
  # fd 9 carries the answer out; slot n is closed when the shimmed probe starts.
  plain=$(bash -c "exec $n>&-; exec '$probe' $n" 9>&1)
  target=$(bash -c "exec $n>&-; exec env LD_PRELOAD='$lib' SPILLWAY_DIR='$dir/spill' '$probe' $n" 9>&1)
  if [ "$plain" != closed ]; then echo "closed_stdio: note: fd $n not closed even without the shim ($plain)"
  elif [ "$target" != closed ]; then
    echo "closed_stdio: FAIL: with fd $n closed at exec, the shim put '$target' in slot $n"; status=1
  else echo "closed_stdio: ok: fd $n stays closed"; fi
done
# The CPython symptom: stdout closed -> 'init_sys_streams ... Is a directory'.
err=$(bash -c "exec 1>&-; env LD_PRELOAD='$lib' SPILLWAY_DIR='$dir/spill' /usr/bin/python3 -c 'pass'" 2>&1) || {
  echo "closed_stdio: FAIL: python3 with stdout closed did not start: $(head -3 <<<"$err")"; status=1; }
exit $status
