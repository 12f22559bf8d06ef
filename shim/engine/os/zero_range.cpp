// zero_range.cpp — see zero_range.h.
#include "os/zero_range.h"

#include "cachestat.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/uio.h>
#include <sys/vfs.h>

namespace spillway {

namespace {
bool all_zero(const unsigned char *p, size_t n) {
    // Word at a time: the buffer is aligned and n a multiple of 8 (pages).
    const uint64_t *w = (const uint64_t *)p;
    uint64_t any = 0;
    for (size_t i = 0; i < n / 8; i++) {
        any |= w[i];
        if ((i & 511) == 511 && any) return false;
    }
    for (size_t i = n / 8 * 8; i < n; i++) any |= p[i];
    return any == 0;
}
} // namespace

int cached_zero(int fd, uint64_t off, size_t len, unsigned char *buf) {
    static const uint64_t page = 4096;
    // The first step one page (most data ends the check there: a pass asks
    // of every dirty unit), then steps small enough to stay in the cache.
    size_t step = page;
    while (len) {
        size_t want = len < step ? len : step;
        step = kZeroScratch;
        Cachestat cs{};
        if (cachestat(fd, CachestatRange{off, want}, cs) != 0) return -errno;
        if (cs.nr_cache * page < want) return 0;
        iovec iov = {buf, want};
        ssize_t got = preadv2(fd, &iov, 1, (off_t)off, RWF_NOWAIT);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0 && errno == EOPNOTSUPP) return -EOPNOTSUPP;
        // A short read: a page left the page cache meanwhile (or the file ends).
        if (got != (ssize_t)want || !all_zero(buf, want)) return 0;
        off += want;
        len -= want;
    }
    return 1;
}

bool zero_range_keeps_reservation(int fd) {
    constexpr long kExt4Magic = 0xEF53; // EXT4_SUPER_MAGIC (ext2 and ext3 files have no extents to reserve)
    struct statfs s;
    return fstatfs(fd, &s) == 0 && s.f_type == kExt4Magic;
}

int zero_range(int fd, uint64_t off, size_t len) {
    for (;;) {
        if (fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0) return 0;
        if (errno != EINTR) return -errno;
    }
}

} // namespace spillway
