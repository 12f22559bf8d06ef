# image.sh — the suite's base image, built locally with `docker import` of a
# tiny root (no registry can be reached; nothing is ever pulled). Everything
# executable comes from the host's /usr, bind-mounted read-only at run time,
# so the root holds only merged-usr symlinks, passwd/group and empty dirs.

BASE_IMAGE=spillway-int-base:1

build_base_image() {
    if dk image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
        return 0
    fi
    local root="$WORK/rootfs"
    mkdir -p "$root"/{usr,etc,tmp,proc,sys,dev,var/tmp,root,prog,out,spill,harness,opt/spillway,helper}
    ln -s usr/bin "$root/bin"
    ln -s usr/lib "$root/lib"
    ln -s usr/lib64 "$root/lib64"
    ln -s usr/sbin "$root/sbin"
    chmod 1777 "$root/tmp" "$root/var/tmp"
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
    say "importing base image $BASE_IMAGE"
    tar -C "$root" --numeric-owner -c . | dk import - "$BASE_IMAGE" >/dev/null \
        || die "docker import of the base root failed; check the daemon log"
    rm -rf "$root"
}
