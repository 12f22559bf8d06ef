#!/usr/bin/env bash
# root.sh DIST — makes the clean Debian 12 root deb.sh and wheel_container.sh
# install into (debian_root.sh: debootstrap or the cache, docker import),
# for the .deb in DIST, and starts the Docker daemon if none answers. run.sh
# runs it in the background as soon as tools/package.sh has built the .deb,
# so that a root made from nothing is made while the wheel compiles; the
# tests then find the image made. Only the .deb is needed here.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$PKG_TESTS/debian_root.sh"
DEB=$(ls "$1"/spillway_*_amd64.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || fail "no spillway_*_amd64.deb in $1: run bash tools/package.sh"
make_scratch
ensure_docker
debian_root_image $(root_packages "$DEB")
say "clean Debian 12 root $ROOT_IMAGE (from $ROOT_FROM, ${ROOT_SECONDS} s)"
