// readahead_window.cpp — see readahead_window.h.
#include "os/readahead_window.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace spillway {

namespace {
// The first number in a small sysfs file, or -1.
long read_number(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *end = nullptr;
    long v = strtol(buf, &end, 10);
    return end == buf ? -1 : v;
}
} // namespace

uint64_t read_ahead_kb_of_dev(dev_t dev, const char *sysfs) {
    char path[256];
    unsigned ma = major(dev), mi = minor(dev);
    // A whole disk (loop, virtio, nvme namespace) has queue/ itself; a
    // partition's directory sits inside its disk's ("..", resolved after
    // the /sys/dev/block symlink); a filesystem on no block device (tmpfs,
    // overlay's upper dir is on one, btrfs uses an anonymous device) may
    // still have a bdi under its number.
    const char *tries[] = {"%s/dev/block/%u:%u/queue/read_ahead_kb",
                           "%s/dev/block/%u:%u/../queue/read_ahead_kb",
                           "%s/class/bdi/%u:%u/read_ahead_kb"};
    for (const char *fmt : tries) {
        snprintf(path, sizeof path, fmt, sysfs, ma, mi);
        long v = read_number(path);
        if (v >= 0) return (uint64_t)v;
    }
    return 0;
}

uint64_t read_ahead_kb_of_fd(int fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) return 0;
    return read_ahead_kb_of_dev(st.st_dev, "/sys");
}

} // namespace spillway
