// cachestat.h — the cachestat(2) system call (Linux 6.5), which Debian 12's
// headers predate: page-cache residency of a file range in one call.
//
// Invariant: the one copy of its ABI (struct layouts and syscall number,
// from <linux/mman.h> of 6.5) in the project; callers fall back to mincore
// when it fails (ENOSYS on older kernels).
#pragma once

#include <cstdint>

namespace spillway {

struct CachestatRange {
    uint64_t off, len; // len 0: from off to the end of the file
};
struct Cachestat {
    uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};
constexpr long kSysCachestat = 451; // the same on every architecture

// 0, or -1 with errno set (ENOSYS: the kernel predates it).
int cachestat(int fd, const CachestatRange &range, Cachestat &out);

} // namespace spillway
