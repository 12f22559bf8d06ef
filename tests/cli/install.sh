#!/usr/bin/env bash
# install.sh BUILD_ROOT — `meson install --destdir` puts every piece where
# it belongs (tool, library, header, pkg-config file, reference config), and
# the INSTALLED tool finds the INSTALLED library (relative to itself, so a
# destdir tree or a moved prefix works) and routes through it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
build=$1
make_scratch
dest="$SCRATCH/dest"

meson install -C "$build" --destdir "$dest" --no-rebuild >"$SCRATCH/install.log" 2>&1 \
    || fail "meson install --destdir failed: $(tail -5 "$SCRATCH/install.log")"
read -r prefix bindir libdir includedir datadir < <(meson introspect --buildoptions "$build" | /usr/bin/python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["bindir"], o["libdir"], o["includedir"], o["datadir"])')
root="$dest$prefix"
for f in "$bindir/spillway" "$libdir/libspillway.so" "$libdir/libspillway.so.0" "$includedir/spillway.h" \
         "$libdir/pkgconfig/spillway.pc" "$datadir/spillway/spillway.toml" \
         "$datadir/spillway/examples/pytorch-training.toml" "$datadir/spillway/examples/graph-build.toml"; do
    [ -e "$root/$f" ] || fail "meson install did not install $prefix/$f (under $dest)"
done
[ -x "$root/$bindir/spillway" ] || fail "the installed tool is not executable"
grep -q -- "-lspillway" "$root/$libdir/pkgconfig/spillway.pc" || fail "spillway.pc does not link -lspillway"

installed="$root/$bindir/spillway"
out=$(env -u SPILLWAY_LIBRARY "$installed" run -q --dir "$SCRATCH/spill" -- sh -c 'echo "$LD_PRELOAD"')
expect_status 0 $? "installed tool run"
expect_contains "$out" "$root/$libdir/libspillway.so" "installed tool finds the installed library"
err=$(env -u SPILLWAY_LIBRARY "$installed" run --dir "$SCRATCH/spill" --threshold 1MiB -- \
      /usr/bin/python3 -c 'b = bytearray(4 << 20)' 2>&1 >/dev/null)
expect_contains "$err" "disk        1 region" "the installed library routes"
"$installed" check "$root/$datadir/spillway/spillway.toml" >/dev/null || fail "the installed reference config does not pass check"
echo "install: ok"
