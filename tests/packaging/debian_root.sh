# debian_root.sh — sourced after lib.sh. debian_root_image PACKAGE... makes
# ROOT_IMAGE, a Docker image of a clean Debian 12 root: debootstrap
# --variant=minbase from Debian's registry, with PACKAGE... and their
# dependencies (debootstrap resolves them), imported with `docker import`.
# The containers run with --network none, so everything a test installs
# there must be in this root already.
#
# The root's tarball is cached under /var/tmp/spillway-debian-root, keyed
# by a hash of what makes it (suite, mirror, variant, package list), so a
# machine debootstraps once per package list. SPILLWAY_PKGTEST_FRESH=1
# drops the cache first: the tests must pass from nothing too.
# Sets ROOT_IMAGE, ROOT_FROM (debootstrap, tarball or image) and ROOT_SECONDS.

DEBIAN_SUITE=bookworm
DEBIAN_MIRROR=http://deb.debian.org/debian
ROOT_CACHE=/var/tmp/spillway-debian-root
ROOT_REPOSITORY=spillway-pkgtest-root

debian_root_image() {
    local started=$SECONDS packages key tarball
    packages=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
    key=$(printf 'v1 %s %s minbase %s' "$DEBIAN_SUITE" "$DEBIAN_MIRROR" "$packages" | sha256sum | cut -c1-16)
    ROOT_IMAGE=$ROOT_REPOSITORY:$key
    tarball=$ROOT_CACHE/$key.tar
    if [ "${SPILLWAY_PKGTEST_FRESH:-0}" = 1 ]; then
        rm -f "$tarball"
        dk rmi -f "$ROOT_IMAGE" >/dev/null 2>&1
    fi
    if [ -f "$tarball" ] && dk image inspect "$ROOT_IMAGE" >/dev/null 2>&1; then
        ROOT_FROM=image
    else
        if [ -f "$tarball" ]; then
            ROOT_FROM=tarball
        else
            ROOT_FROM=debootstrap
            make_debian_root "$packages" "$tarball"
        fi
        dk import "$tarball" "$ROOT_IMAGE" >/dev/null || fail "docker import of $tarball failed"
    fi
    touch "$tarball" # pruning below goes by last use
    # Roots of other package lists unused for 14 days, and their images,
    # are leftovers (another checkout may still use a recent one).
    find "$ROOT_CACHE" -maxdepth 1 -name '*.tar' -mtime +14 -delete 2>/dev/null
    local tag
    for tag in $(dk images --format '{{.Tag}}' "$ROOT_REPOSITORY"); do
        [ -f "$ROOT_CACHE/$tag.tar" ] || dk rmi -f "$ROOT_REPOSITORY:$tag" >/dev/null 2>&1
    done
    ROOT_SECONDS=$((SECONDS - started))
}

# drop_debian_roots — every cached root and its image: a run from nothing.
drop_debian_roots() {
    rm -f "$ROOT_CACHE"/*.tar
    local tag
    for tag in $(dk images --format '{{.Tag}}' "$ROOT_REPOSITORY" 2>/dev/null); do
        dk rmi -f "$ROOT_REPOSITORY:$tag" >/dev/null 2>&1
    done
}

# make_debian_root PACKAGES(comma-separated) TARBALL
make_debian_root() {
    local packages=$1 tarball=$2 root=$SCRATCH/debian-root log=$SCRATCH/debootstrap.log
    if ! command -v debootstrap >/dev/null; then
        [ "$(id -u)" = 0 ] || fail "debootstrap is not installed: apt-get install debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends \
            debootstrap >"$SCRATCH/apt.log" 2>&1 || fail "apt-get install debootstrap failed: $(tail -1 "$SCRATCH/apt.log")"
    fi
    # Three tries: a mirror's passing error should not fail the suite.
    local try
    for try in 1 2 3; do
        rm -rf "$root"
        debootstrap --variant=minbase --include="$packages" "$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" >>"$log" 2>&1 && break
        [ $try = 3 ] && fail "debootstrap of Debian $DEBIAN_SUITE from $DEBIAN_MIRROR failed 3 times (is it reachable?): $(tail -1 "$log")"
        echo "debootstrap failed (try $try of 3): $(tail -1 "$log"); again in $((try * 15)) s"
        sleep $((try * 15))
    done
    # The downloaded .debs are not part of an installed system.
    rm -f "$root"/var/cache/apt/archives/*.deb
    mkdir -p "$ROOT_CACHE"
    tar -C "$root" --numeric-owner -cf "$tarball.$$" . || fail "cannot write $tarball.$$"
    mv "$tarball.$$" "$tarball"
    rm -rf "$root"
}
