# build.sh — what the containers run: the shim under test (given, or built
# here with meson) and the scenario programs (C compiled on the host with
# gcc, Python copied as is), staged read-only into $WORK/prog.

# resolve_shim [PATH]: sets SHIM to a real file (symlinks resolved, as the
# file itself is bind-mounted into containers), and ENGINE to the
# libspillway_engine.so beside it, which the shim loads from its own
# directory (shim/front/engine_loader.h).
resolve_shim() {
    local given=${1:-${SPILLWAY_SHIM:-}}
    if [ -z "$given" ]; then
        local build=${SPILLWAY_INT_BUILD:-$REPO/build-integration}
        if [ ! -f "$build/build.ninja" ]; then
            say "configuring $build with meson"
            meson setup "$build" "$REPO" --buildtype=release -Dtests=false >"$WORK/meson-setup.log" 2>&1 \
                || die "meson setup $build failed; see the output of: meson setup $build $REPO"
        fi
        say "building the shim in $build"
        meson compile -C "$build" shim/spillway:shared_library shim/spillway_engine:shared_library \
            >"$WORK/build.log" 2>&1 \
            || die "building the shim failed; run: meson compile -C $build shim/spillway:shared_library shim/spillway_engine:shared_library"
        given="$build/shim/libspillway.so"
    fi
    [ -e "$given" ] || die "shim $given does not exist; pass the path to libspillway.so or build it"
    SHIM=$(readlink -f "$given")
    ENGINE=$(dirname "$SHIM")/libspillway_engine.so
    [ -f "$ENGINE" ] || die "$ENGINE does not exist; build it beside the shim (meson compile shim/spillway_engine:shared_library)"
    # The shim must load: a broken library would fail every "with" run for
    # the wrong reason.
    LD_PRELOAD="$SHIM" /usr/bin/true || die "$SHIM does not preload cleanly into /usr/bin/true; rebuild it"
}

# build_programs: compiles every programs/*.c into $WORK/prog and copies the
# Python programs next to them.
build_programs() {
    PROG="$WORK/prog"
    mkdir -p "$PROG"
    local src
    for src in "$HERE"/programs/*.c; do
        gcc -O2 -Wall -Wextra -o "$PROG/$(basename "$src" .c)" "$src" -ldl \
            || die "gcc failed on $src; fix the compile error above"
    done
    cp "$HERE"/programs/*.py "$PROG/"
    # The colleague's Python helper (scenario 4), when it exists.
    HELPER_DIR=""
    if [ -f "$REPO/tools/python/spillway/__init__.py" ]; then
        HELPER_DIR="$REPO/tools/python"
    fi
}
