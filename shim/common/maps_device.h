// maps_device.h — the device number /proc/PID/maps shows for a file, to find
// a file among a process's mappings by device and inode.
//
// Invariant: stat's st_dev, except where a filesystem gives a file a device
// apart from its superblock's: btrfs gives each subvolume an anonymous
// device of its own, which stat shows, while maps shows the superblock's,
// as /proc/self/mountinfo does for the file's mount. Compared by st_dev
// alone, a mapped file on btrfs was never found mapped (has_live_mapping
// said 0, and release by path evicted pages a process was using).
// A filesystem on a block device (major number not 0) is answered from
// st_dev without a look at mountinfo.
#pragma once

#include <sys/types.h>

namespace spillway {

// dirfd, path and flags as statx(2) takes them (fd, "", AT_EMPTY_PATH for
// an open file); st_dev: stat's device for the same file, the answer when
// mountinfo cannot tell.
dev_t maps_device(int dirfd, const char *path, int flags, dev_t st_dev);

} // namespace spillway
