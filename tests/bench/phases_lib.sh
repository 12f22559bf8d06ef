# phases_lib.sh — sourced by phases.sh and torch_phases.sh: a loop-mounted
# ext4 spill filesystem whose read_ahead_kb a benchmark may set (never the
# host disk's), and memory cgroups (v1, or v2 when /sys/fs/cgroup is
# cgroup2). Everything is named spillway-phasebench-<pid>-* and removed by
# lib_cleanup, which the caller runs from its EXIT trap. SPILLWAY_BENCH_TAG
# adds a word to the name (a shared machine's convention: whose cgroups).

LIB_TAG=spillway-phasebench${SPILLWAY_BENCH_TAG:+-$SPILLWAY_BENCH_TAG}-$$
LIB_IMG=""; LIB_MNT=""; LIB_LOOP=""; LIB_DEV=""; LIB_RA_OLD=""; LIB_ZRAM=""

lib_log() { printf '[%s %s] %s\n' "${0##*/}" "$(date +%H:%M:%S)" "$*" >&2; }

# lib_loopfs BYTES [MOUNT_OPTIONS]: an ext4 image of BYTES under /var/tmp on a
# loop device with direct I/O (its reads reach the disk, not the host page
# cache twice), mounted with MOUNT_OPTIONS, by default discard (deleted files
# give their blocks back to the image). Measured (jobs.sh, graph job): with
# discard, the close of a freed 512 MiB spill file sent a discard that the
# loop device turned into a hole punch in the image, and every read of the
# spill filesystem waited behind it: the job sat 60 s in filemap_read_folio.
# Sets LIB_MNT, LIB_LOOP (/dev/loopN) and LIB_DEV (loopN).
lib_loopfs() {
    local bytes=$1 options=${2:-discard}
    LIB_IMG=/var/tmp/$LIB_TAG.img
    LIB_MNT=/var/tmp/$LIB_TAG.mnt
    truncate -s "$bytes" "$LIB_IMG"
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$LIB_IMG"
    LIB_LOOP=$(losetup --direct-io=on --find --show "$LIB_IMG")
    LIB_DEV=${LIB_LOOP#/dev/}
    mkdir -p "$LIB_MNT"
    mount -o "$options" "$LIB_LOOP" "$LIB_MNT"
    chmod 0700 "$LIB_MNT"
    LIB_RA_OLD=$(cat "/sys/block/$LIB_DEV/queue/read_ahead_kb")
    local dio; dio=$(cat "/sys/block/$LIB_DEV/loop/dio" 2>/dev/null || echo ?)
    [ "$dio" = 1 ] || lib_log "warning: $LIB_LOOP has dio=$dio: its reads may be served by the host page cache"
    lib_log "spill filesystem: $LIB_MNT on $LIB_LOOP (image $LIB_IMG, $((bytes >> 20)) MiB, dio=$dio, $options)"
}

# lib_zramfs BYTES: an ext4 filesystem on a new zram device (compressed
# RAM, lz4), mounted with discard. A disk with no I/O wait whose memory is
# the kernel's, not the job's cgroup's; but compressing and decompressing
# run on the machine's CPUs, the job's own 2 cores here, so it is not free:
# it tells what depends on the device's latency from what depends on the
# bytes moved (jobs.sh --device zram). Discard is not optional: zram frees a
# discarded block, and without it every spill file ever written would stay
# in RAM. Sets LIB_MNT, LIB_DEV (zramN) and LIB_ZRAM (N).
lib_zramfs() {
    local bytes=$1
    [ -w /sys/class/zram-control/hot_add ] ||
        { lib_log "this kernel has no zram (CONFIG_ZRAM): use the loop device (--device loop)"; return 1; }
    LIB_ZRAM=$(cat /sys/class/zram-control/hot_add)
    LIB_DEV=zram$LIB_ZRAM
    if grep -qw lz4 "/sys/block/$LIB_DEV/comp_algorithm"; then echo lz4 > "/sys/block/$LIB_DEV/comp_algorithm"; fi
    echo "$bytes" > "/sys/block/$LIB_DEV/disksize"
    LIB_MNT=/var/tmp/$LIB_TAG.mnt
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard "/dev/$LIB_DEV"
    mkdir -p "$LIB_MNT"
    mount -o discard "/dev/$LIB_DEV" "$LIB_MNT"
    chmod 0700 "$LIB_MNT"
    LIB_RA_OLD=$(cat "/sys/block/$LIB_DEV/queue/read_ahead_kb")
    lib_log "spill filesystem: $LIB_MNT on /dev/$LIB_DEV (zram, $(sed 's/.*\[\(.*\)\].*/\1/' "/sys/block/$LIB_DEV/comp_algorithm"), $((bytes >> 20)) MiB, discard)"
}

# lib_zram_used: MiB of RAM the zram device holds now (its mm_stat's mem_used_total)
lib_zram_used() { awk '{ printf "%.0f", $3 / 1048576 }' "/sys/block/$LIB_DEV/mm_stat"; }

lib_set_ra() { echo "$1" > "/sys/block/$LIB_DEV/queue/read_ahead_kb"; }

lib_cgroup_fs() { [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && echo v2 || echo v1; }

# lib_cgroup NAME LIMIT_BYTES [swap]: prints the path of a new memory cgroup
# (no swap either, so swap cannot hide the limit). LIMIT_BYTES 0: no limit.
# "swap": the cgroup may swap without bound beyond its limit (v1:
# memory.memsw.limit_in_bytes left unlimited; v2: memory.swap.max "max"),
# as Docker's --memory-swap -1 gives; swap must then be enabled by the caller.
lib_cgroup() {
    local name=$1 limit=$2 swap=${3:-} cg
    if [ "$(lib_cgroup_fs)" = v2 ]; then
        cg=/sys/fs/cgroup/$LIB_TAG-$name
        mkdir "$cg"
        if [ "$limit" != 0 ]; then
            echo "$limit" > "$cg/memory.max"
            [ -f "$cg/memory.swap.max" ] && echo "$([ "$swap" = swap ] && echo max || echo 0)" > "$cg/memory.swap.max"
        fi
    else
        cg=/sys/fs/cgroup/memory/$LIB_TAG-$name
        mkdir "$cg"
        if [ "$limit" != 0 ]; then
            echo "$limit" > "$cg/memory.limit_in_bytes"
            [ "$swap" != swap ] && [ -f "$cg/memory.memsw.limit_in_bytes" ] && echo "$limit" > "$cg/memory.memsw.limit_in_bytes"
        fi
    fi
    echo "$cg"
}

# lib_in_cgroup CG COMMAND...: runs COMMAND inside CG
lib_in_cgroup() {
    local cg=$1; shift
    bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}

lib_rm_cgroup() {
    local i
    for i in $(seq 50); do rmdir "$1" 2>/dev/null && return 0; [ -d "$1" ] || return 0; sleep 0.1; done
    lib_log "could not remove cgroup $1"
}

lib_cleanup() {
    local cg pid
    # lib_cgroup runs in $(...): its cgroups are found by name, not remembered
    for cg in /sys/fs/cgroup/memory/$LIB_TAG-* /sys/fs/cgroup/$LIB_TAG-*; do
        [ -d "$cg" ] || continue
        for pid in $(cat "$cg/cgroup.procs" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
        lib_rm_cgroup "$cg"
    done
    if [ -n "$LIB_DEV" ] && [ -n "$LIB_RA_OLD" ] && [ -e "/sys/block/$LIB_DEV/queue/read_ahead_kb" ]; then
        echo "$LIB_RA_OLD" > "/sys/block/$LIB_DEV/queue/read_ahead_kb" || true
    fi
    if [ -n "$LIB_MNT" ] && mountpoint -q "$LIB_MNT"; then umount "$LIB_MNT" || umount -l "$LIB_MNT" || true; fi
    [ -n "$LIB_MNT" ] && rmdir "$LIB_MNT" 2>/dev/null || true
    [ -n "$LIB_LOOP" ] && losetup -d "$LIB_LOOP" 2>/dev/null || true
    if [ -n "$LIB_ZRAM" ]; then
        echo 1 > "/sys/block/zram$LIB_ZRAM/reset" 2>/dev/null || true
        echo "$LIB_ZRAM" > /sys/class/zram-control/hot_remove 2>/dev/null || lib_log "could not remove /dev/zram$LIB_ZRAM"
    fi
    [ -n "$LIB_IMG" ] && rm -f "$LIB_IMG"
    return 0
}

# lib_build ROOT BUILD TARGET...: the shim (both its libraries) and the named bench programs only
lib_build() {
    local root=$1 build=$2; shift 2
    if [ ! -f "$build/build.ninja" ]; then meson setup "$build" "$root" --buildtype=release >/dev/null; fi
    ninja -C "$build" shim/libspillway.so.0 shim/libspillway_engine.so "$@" >&2
}

# lib_get KEY LINE: the value of KEY=VALUE in LINE
lib_get() { sed -n "s/.*[[:space:]]$1=\([^ ]*\).*/\1/p" <<<" $2"; }
