// maps_device.cpp — see maps_device.h.
#include "maps_device.h"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace spillway {

dev_t maps_device(int dirfd, const char *path, int flags, dev_t st_dev) {
    if (major(st_dev) != 0) return st_dev; // a block device's filesystem: one device
    struct statx sx;
    if (statx(dirfd, path, flags, STATX_MNT_ID, &sx) != 0 || !(sx.stx_mask & STATX_MNT_ID)) return st_dev;
    FILE *mounts = fopen("/proc/self/mountinfo", "re");
    if (!mounts) return st_dev;
    dev_t found = st_dev; // a mount of another namespace (a container's fd): not listed here
    char line[512];       // "ID PARENT MAJOR:MINOR ROOT ..."; the fields read come first
    bool at_line_start = true; // a line longer than the buffer comes in pieces
    while (fgets(line, sizeof line, mounts)) {
        bool piece_starts_line = at_line_start;
        at_line_start = strchr(line, '\n') != nullptr;
        if (!piece_starts_line) continue;
        unsigned long long id = 0;
        unsigned maj = 0, min = 0;
        if (sscanf(line, "%llu %*u %u:%u", &id, &maj, &min) == 3 && id == sx.stx_mnt_id) {
            found = makedev(maj, min);
            break;
        }
    }
    fclose(mounts);
    return found;
}

} // namespace spillway
