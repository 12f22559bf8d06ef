#!/usr/bin/env bash
# package.sh — builds spillway's two packages into dist/, from this tree (a
# clean clone is enough; as root it installs the Debian build tools it needs):
#   dist/spillway_<version>_amd64.deb   dpkg-buildpackage with debian/ (and the
#                                       -dbgsym package beside it), checked by lintian
#   dist/spillway-<version>-<tags>.whl  meson-python (pyproject.toml)
# Both are built from a copy of the tree (git's files, committed or not) in
# dist/.build (removed when both are made), so the tree itself gets no build
# products. One line per step; the tools' output goes to dist/package.log,
# which a failure names.
# Usage: bash tools/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dist=$root/dist
work=$dist/.build
log=$dist/package.log
started=$(date +%s)

build_tools=(
    build-essential dpkg-dev debhelper dh-python lintian
    meson ninja-build pkg-config python3 python3-mesonpy python3-pip
    libmimalloc-dev libunwind-dev libtomlplusplus-dev nlohmann-json3-dev
)

step_started=0
step() {
    printf '%s… ' "$1"
    step_started=$(date +%s)
    printf '\n== %s\n' "$1" >>"$log"
}
done_step() {
    echo "done, $(($(date +%s) - step_started)) s${1:+ ($1)}"
}
fail() {
    echo "failed"
    local last
    last=$(grep -v '^\s*$' "$log" | tail -1 | cut -c1-200)
    echo "package.sh: $1; the log is $log (its last line: $last)" >&2
    exit 1
}

mkdir -p "$dist"
rm -rf "$work" "$dist"/spillway_*.deb "$dist"/spillway-dbgsym_*.deb "$dist"/spillway-*.whl "$dist"/lintian.txt
mkdir -p "$work"
: >"$log"

version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -1)
changelog_version=$(sed -n '1s/^spillway (\([^)]*\)).*/\1/p' debian/changelog)
[ -n "$version" ] || { echo "package.sh: no version : '...' line in meson.build" >&2; exit 1; }
[ "$version" = "$changelog_version" ] || {
    echo "package.sh: meson.build says version $version, debian/changelog says $changelog_version: add a changelog entry for $version (dch -v $version)" >&2
    exit 1
}

step "installing the build tools"
missing=()
for p in "${build_tools[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "failed"; echo "package.sh: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2; exit 1; }
    export DEBIAN_FRONTEND=noninteractive
    { apt-get -o DPkg::Lock::Timeout=900 update -q &&
      apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${missing[@]}"; } >>"$log" 2>&1 ||
        fail "apt-get could not install ${missing[*]}"
    done_step "${#missing[@]} installed"
else
    done_step "all present"
fi

step "copying the source tree"
src=$work/spillway-$version
mkdir -p "$src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked and untracked-but-not-ignored files, as they are on disk.
    git -C "$root" ls-files -z --cached --others --exclude-standard |
        tar -C "$root" --null -T - --ignore-failed-read -cf - 2>>"$log" | tar -C "$src" -xf - ||
        fail "copying the tree failed"
else
    tar -C "$root" --exclude=./dist --exclude='./build*' -cf - . | tar -C "$src" -xf - ||
        fail "copying the tree failed"
fi
done_step "$(find "$src" -type f | wc -l) files"

step "building the Debian package (dpkg-buildpackage)"
jobs=$(nproc)
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -b -us -uc) >>"$log" 2>&1 || fail "dpkg-buildpackage failed"
deb=$work/spillway_${version}_amd64.deb
[ -f "$deb" ] || fail "dpkg-buildpackage made no $(basename "$deb")"
cp "$deb" "$dist/"
cp "$work"/spillway-dbgsym_"${version}"_amd64.*deb "$dist/" 2>/dev/null || true
deb=$dist/$(basename "$deb")
done_step "$(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"

step "checking it with lintian"
lintian --no-tag-display-limit --info --show-overrides "$deb" >"$dist/lintian.txt" 2>>"$log" || true
cat "$dist/lintian.txt" >>"$log"
errors=$(grep -c '^E: ' "$dist/lintian.txt" || true)
warnings=$(grep -c '^W: ' "$dist/lintian.txt" || true)
infos=$(grep -c '^I: ' "$dist/lintian.txt" || true)
overridden=$(grep -c '^O: ' "$dist/lintian.txt" || true)
[ "$errors" = 0 ] || fail "lintian found $errors error(s) in $(basename "$deb") (dist/lintian.txt lists them)"
done_step "$errors errors, $warnings warnings, $infos notes, $overridden overridden (debian/spillway.lintian-overrides says why): dist/lintian.txt"

step "building the wheel (meson-python)"
# No index and no user pip config: everything comes from Debian's packages.
# As many compile jobs as the .deb's (parallel=$(nproc)), not ninja's
# default of two more than the CPUs.
(cd "$src" && env -u PIP_FIND_LINKS -u PIP_INDEX_URL PIP_CONFIG_FILE=/dev/null \
    /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index \
    --config-settings builddir="$work/wheel-build" --config-settings compile-args=-j$jobs \
    -w "$work/wheel" .) >>"$log" 2>&1 ||
    fail "building the wheel failed"
built=$(ls "$work"/wheel/spillway-"$version"-*.whl 2>/dev/null | head -1)
[ -n "$built" ] || fail "pip made no spillway-$version-*.whl"
# meson-python 0.12 stores every member uncompressed: deflate them (the
# RECORD hashes are of the contents, and each member keeps its mode).
/usr/bin/python3 - "$built" "$work/deflated.whl" <<'PY' >>"$log" 2>&1 || fail "recompressing the wheel failed"
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as dst:
    for info in src.infolist():
        data = src.read(info)
        info.compress_type = zipfile.ZIP_DEFLATED
        dst.writestr(info, data)
PY
whl=$dist/$(basename "$built")
mv "$work/deflated.whl" "$whl"
done_step "$(basename "$whl"), $(du -k "$whl" | cut -f1) KiB"

# The copy and its build directories (about 130 MB) go once both packages
# are made; a failure above leaves them for the log's reader.
rm -rf "$work"
echo "packages in $dist, $(($(date +%s) - started)) s in all:"
ls -l "$deb" "$whl" | awk '{printf "  %-45s %8d bytes\n", $NF, $5}' | sed "s|$dist/||"
