# loopfs.sh — small real ext4 filesystems on loop devices, for scenarios that
# need a spill directory that fills up or whose used blocks can be counted.
# Each is unmounted at exit (the loop device detaches with it).

# make_loop_fs NAME SIZE_MIB: sets LOOP_MNT to the mount point; its
# subdirectory "spill" (0700, empty) is the spill directory to use. Not for
# use in $(...): the unmount must be registered in this shell.
make_loop_fs() {
    local name=$1 size=$2
    local img="$WORK/$name.ext4" mnt="$WORK/$name.mnt"
    truncate -s "${size}M" "$img" || die "cannot create $img; check free space under $(dirname "$WORK")"
    mkfs.ext4 -q -F -m 0 -E nodiscard "$img" || die "mkfs.ext4 on $img failed; install e2fsprogs"
    mkdir -p "$mnt"
    mount -o loop "$img" "$mnt" || die "mounting $img on a loop device failed; run as root on a kernel with loop support"
    on_exit "remove_containers; umount '$mnt' || umount -l '$mnt'"
    mkdir -m 0700 "$mnt/spill"
    LOOP_MNT=$mnt
}

# fs_used_kib DIR: KiB in use on DIR's filesystem.
fs_used_kib() { df -k --output=used "$1" | tail -n 1 | tr -d ' '; }

# fs_avail_kib DIR: KiB available on DIR's filesystem.
fs_avail_kib() { df -k --output=avail "$1" | tail -n 1 | tr -d ' '; }

# dir_is_empty DIR: 0 when DIR has no entries at all (hidden ones included).
dir_is_empty() { [ -z "$(find "$1" -mindepth 1 -print -quit)" ]; }
