#!/usr/bin/env bash
# contents.sh DIST SOURCE_ROOT — what the two packages hold, read from the
# files themselves: the .deb's paths and Depends, lintian's verdict (no
# error), the manual page (renders without warnings, names every command of
# `spillway --help`), the wheel's members and entry point; and that the
# tool's table of system libraries (tools/cli/system_libraries.h) covers
# every library the shim needs or dlopens, and the .deb depends on each.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
dist=$1
source_root=$2
find_packages "$dist"
make_scratch

# The .deb's files.
root=$SCRATCH/deb
dpkg-deb -x "$DEB" "$root" || fail "dpkg-deb -x $(basename "$DEB") failed"
libdir=usr/lib/x86_64-linux-gnu
for f in usr/bin/spillway $libdir/libspillway.so $libdir/libspillway.so.0 $libdir/libspillway_engine.so \
         usr/include/spillway.h $libdir/pkgconfig/spillway.pc usr/share/man/man1/spillway.1.gz \
         usr/share/spillway/spillway.toml usr/share/spillway/examples/pytorch-training.toml \
         usr/share/spillway/examples/graph-build.toml usr/share/doc/spillway/copyright \
         usr/lib/python3/dist-packages/spillway/__init__.py usr/lib/python3/dist-packages/spillway/_install_paths.py; do
    [ -e "$root/$f" ] || fail "the .deb has no /$f"
done
[ "$(readlink "$root/$libdir/libspillway.so")" = libspillway.so.0 ] || fail "/$libdir/libspillway.so is not a link to libspillway.so.0"
grep -qx "LIBDIR = \"/$libdir\"" "$root/usr/lib/python3/dist-packages/spillway/_install_paths.py" ||
    fail "the helper's _install_paths.py does not name /$libdir"
for f in "$root"/usr/bin/spillway "$root/$libdir"/libspillway*.so*; do
    readelf -d "$f" | grep -qE 'RPATH|RUNPATH' && fail "$(basename "$f") in the .deb has an RPATH/RUNPATH"
done
depends=$(dpkg-deb -f "$DEB" Depends)
say "the .deb's files are where users look: ok (Depends: $depends)"

# The table of system libraries against the shim's NEEDED and dlopen names.
table=$(sed -n 's/^ *{"\(lib[^"]*\)", "\([^"]*\)", .*/\1 \2/p' "$source_root/tools/cli/system_libraries.h")
[ -n "$table" ] || fail "no entries read from tools/cli/system_libraries.h"
# glibc's, the compiler's and the shim's own need no package of their own.
ours='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|libgcc_s\.so\.1|libstdc\+\+\.so\.6|libspillway.*|ld-linux.*)$'
needed=$(readelf -d "$root/$libdir/libspillway.so.0" "$root/$libdir/libspillway_engine.so" |
         sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
dlopened=$(grep -rhoE '"lib[A-Za-z0-9_+-]+\.so\.[0-9]+"' "$source_root/shim" | tr -d '"')
for soname in $(printf '%s\n' $needed $dlopened | sort -u | grep -vE "$ours"); do
    package=$(awk -v s="$soname" '$1 == s {print $2}' <<<"$table")
    [ -n "$package" ] || fail "the shim needs $soname, which tools/cli/system_libraries.h does not list"
    grep -qE "(^|, )$package( |,|$)" <<<"$depends" || fail "the .deb does not depend on $package (for $soname)"
done
say "system_libraries.h covers $(printf '%s ' $needed $dlopened | tr ' ' '\n' | sort -u | grep -vE "$ours" | paste -sd' '), the .deb depends on their packages: ok"

# lintian, run here again: no error.
if command -v lintian >/dev/null; then
    lintian "$DEB" >"$SCRATCH/lintian.txt" 2>&1
    errors=$(grep -c '^E: ' "$SCRATCH/lintian.txt")
    [ "$errors" = 0 ] || fail "lintian reports $errors error(s): $(grep '^E: ' "$SCRATCH/lintian.txt" | head -3)"
    say "lintian: 0 errors, $(grep -c '^W: ' "$SCRATCH/lintian.txt") warnings"
else
    fail "lintian is not installed (tools/package.sh installs it)"
fi

# The manual page.
warnings=$(man --warnings -l "$root/usr/share/man/man1/spillway.1.gz" 2>&1 >/dev/null)
[ -z "$warnings" ] || fail "spillway(1) renders with warnings: $warnings"
page=$(MANWIDTH=200 man -l "$root/usr/share/man/man1/spillway.1.gz" 2>/dev/null | col -b)
commands=$("$root/usr/bin/spillway" --help | awk '/^commands:/ {on = 1; next} on && /^  [a-z]/ {print $1} on && /^$/ {on = 0}')
[ -n "$commands" ] || fail "no commands read from spillway --help"
for c in $commands; do
    grep -qE "^ *spillway $c( |$)" <<<"$page" || fail "spillway(1) has no synopsis line for 'spillway $c'"
done
version=$(dpkg-deb -f "$DEB" Version)
grep -q "spillway $version" <<<"$page" || fail "spillway(1) does not say version $version"
say "spillway(1): no warnings, every command ($(echo $commands)): ok"

# The wheel's members.
members=$(unzip -Z1 "$WHEEL") || fail "cannot list $(basename "$WHEEL")"
for m in spillway/__init__.py spillway/_cli.py spillway/_locate.py spillway/__main__.py \
         spillway/_lib/libspillway.so.0 spillway/_lib/libspillway_engine.so spillway/_bin/spillway \
         spillway/share/spillway.toml spillway/share/examples/pytorch-training.toml; do
    grep -qx "$m" <<<"$members" || fail "the wheel has no $m"
done
grep -q '_install_paths' <<<"$members" && fail "the wheel holds _install_paths.py: its helper would look outside the wheel"
entry=$(unzip -p "$WHEEL" '*.dist-info/entry_points.txt')
grep -qx 'spillway = spillway._cli:main' <<<"$entry" || fail "the wheel's console script is not spillway = spillway._cli:main: $entry"
[ "$(unzip -Z "$WHEEL" spillway/_bin/spillway | cut -c1-10)" = "-rwxr-xr-x" ] || fail "the wheel's tool is not executable"
say "wheel members and console script: ok ($(basename "$WHEEL"))"
echo "contents: ok"
