#!/usr/bin/env bash
# binding_audit.sh LIB CXX_PROGRAM C_MAIN CXX_LIBRARY — under the shim, no
# symbol of the allocator surface (the malloc family, its other names,
# operator new/delete: everything libmimalloc.so.2 exports that is not mi_*)
# may bind to libmimalloc.so.2, in a C program that imports torch (python3),
# a C++ program and a C program that dlopens a C++ library. Reads the
# dynamic loader's own record (LD_DEBUG=bindings) and prints the count for
# each; fails on any. Also checks that the audit saw the C++ libraries bind
# operator new at all (to the shim), so it cannot pass by seeing nothing.
set -euo pipefail
lib=$1 cxx_prog=$2 c_main=$3 cxx_lib=$4
work=$(mktemp -d /tmp/spillway-binding-audit.XXXXXX)
spill=$(mktemp -d "${SPILLWAY_TEST_TMP:-/var/tmp}"/spillway-binding-audit.XXXXXX)
trap 'rm -rf "$work" "$spill"' EXIT
failed=0

audit() {
    local name=$1; shift
    rm -f "$work"/b.*
    local status=0
    env LD_DEBUG=bindings LD_DEBUG_OUTPUT="$work/b" LD_PRELOAD="$lib" SPILLWAY_DIR="$spill" \
        SPILLWAY_THRESHOLD=1MiB "$@" >"$work/out" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        cat "$work/out" >&2
        echo "binding_audit.sh: FAIL: $name exited with $status" >&2
        failed=1
        return
    fi
    cat "$work"/b.* > "$work/all"
    local bad to_shim
    bad=$(grep -E 'to [^ ]*libmimalloc\.so[^ ]* .*symbol `' "$work/all" | grep -vcE 'symbol `_?mi_' || true)
    to_shim=$(grep -cE 'to [^ ]*libspillway\.so[^ ]* .*symbol `_Znwm'"'" "$work/all" || true)
    echo "$name: $bad allocator bindings to libmimalloc.so.2 ($to_shim bindings of operator new to the shim)"
    if [ "$bad" -ne 0 ]; then
        grep -E 'to [^ ]*libmimalloc\.so[^ ]* .*symbol `' "$work/all" | grep -vE 'symbol `_?mi_' |
            sed 's/^ *[0-9]*:[[:space:]]*//' | sort | uniq -c | sort -rn | head -20 >&2
        failed=1
    fi
    if [ "$to_shim" -eq 0 ]; then
        echo "binding_audit.sh: FAIL: $name: no binding of operator new to the shim was recorded" >&2
        failed=1
    fi
}

audit "python3 -c 'import torch'" /usr/bin/python3 -c 'import torch; torch.zeros(1 << 20).sum()'
audit "C++ program" "$cxx_prog"
audit "C program dlopening a C++ library" "$c_main" "$cxx_lib"
exit $failed
