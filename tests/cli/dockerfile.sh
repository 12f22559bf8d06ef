#!/usr/bin/env bash
# dockerfile.sh BUILD_ROOT SOURCE_ROOT — builds config/examples/Dockerfile
# without a registry and runs the result: the context is a `meson install
# --destdir` tree, the "training image" a minimal one imported from the
# host's own libraries (`docker import`, nothing is pulled). Uses a running
# Docker daemon, or (as root) starts one without networking for the test and
# stops it again; skipped (77) when neither is possible.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
build=$1
root=$2
# The docker.io client; /usr/local/bin may hold a different, newer one.
docker=/usr/bin/docker
[ -x "$docker" ] || docker=$(command -v docker) || { echo "dockerfile: SKIP: no docker client (install docker.io)"; exit 77; }
make_scratch
tag="spillway-cli-test-$$"
our_daemon=""
cleanup() {
    "$docker" rmi -f "$tag-base:1" "$tag:1" >/dev/null 2>&1
    if [ -n "$our_daemon" ]; then
        kill "$our_daemon" 2>/dev/null
        for _ in $(seq 60); do kill -0 "$our_daemon" 2>/dev/null || break; sleep 0.5; done
    fi
    rm -rf "$SCRATCH"
}
trap cleanup EXIT
if ! "$docker" info >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v dockerd >/dev/null; then
        echo "dockerfile: SKIP: no Docker daemon answers and none can be started here"; exit 77
    fi
    setsid dockerd --bridge=none --iptables=false >"$SCRATCH/dockerd.log" 2>&1 </dev/null &
    our_daemon=$!
    for _ in $(seq 60); do "$docker" info >/dev/null 2>&1 && break; sleep 0.5; done
    "$docker" info >/dev/null 2>&1 || fail "dockerd did not come up: $(tail -3 "$SCRATCH/dockerd.log")"
fi

# The build context: an install tree plus the config.
ctx="$SCRATCH/context"
meson install -C "$build" --destdir "$ctx" --no-rebuild >"$SCRATCH/install.log" 2>&1 \
    || fail "meson install failed: $(tail -5 "$SCRATCH/install.log")"
read -r prefix libdir < <(meson introspect --buildoptions "$build" | /usr/bin/python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["libdir"])')
[ "$prefix" = /usr/local ] || { echo "dockerfile: SKIP: the Dockerfile expects prefix /usr/local, the build has $prefix"; exit 77; }
cp "$root/config/examples/pytorch-training.toml" "$ctx/spillway.toml"

# A minimal "training image": /bin/sh, true, and every library the tool and
# the shim need, copied from the host (same glibc as the build).
base="$SCRATCH/rootfs"
mkdir -p "$base"/{usr/bin,usr/lib/x86_64-linux-gnu,usr/lib64,etc,tmp,var/tmp,proc,sys,dev}
ln -s usr/bin "$base/bin"; ln -s usr/lib "$base/lib"; ln -s usr/lib64 "$base/lib64"
chmod 1777 "$base/tmp" "$base/var/tmp"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$base/etc/passwd"
cp -L /bin/sh /bin/true "$base/usr/bin/"
for object in /bin/sh /bin/true "$ctx$prefix/bin/spillway" "$ctx$prefix/$libdir/libspillway.so.0"; do
    ldd "$object" | awk '/=> \// {print $1, $3} /ld-linux/ && !/=>/ {print "ld", $1}'
done | sort -u | while read -r soname path; do
    if [ "$soname" = ld ]; then
        cp -L "$path" "$base/usr/lib/x86_64-linux-gnu/$(basename "$path")"
        ln -sf "../lib/x86_64-linux-gnu/$(basename "$path")" "$base/usr/lib64/$(basename "$path")"
    else
        cp -L "$path" "$base/usr/lib/x86_64-linux-gnu/$soname"
    fi
done
tar -C "$base" --numeric-owner -c . | "$docker" import - "$tag-base:1" >/dev/null || fail "docker import of the base failed"

DOCKER_BUILDKIT=0 "$docker" build -q -f "$root/config/examples/Dockerfile" \
    --build-arg TRAINING_IMAGE="$tag-base:1" --build-arg INSTALL_RUNTIME_DEPS=0 \
    -t "$tag:1" "$ctx" >"$SCRATCH/build.log" 2>&1 || fail "docker build failed: $(tail -5 "$SCRATCH/build.log")"

drun() { "$docker" run --rm --network none "$@"; }
out=$(drun --entrypoint /usr/local/bin/spillway "$tag:1" check 2>&1); expect_status 0 $? "spillway check in the image"
expect_contains "$out" "spillway check: valid" "check in the image"
out=$(drun "$tag:1" sh -c 'echo "$LD_PRELOAD"' 2>&1); expect_status 0 $? "spillway run in the image"
expect_contains "$out" "$prefix/$libdir/libspillway.so" "the image preloads the shim"
drun "$tag:1" sh -c 'exit 3' >/dev/null 2>&1; expect_status 3 $? "exit status through the entrypoint"
echo "dockerfile: ok"
