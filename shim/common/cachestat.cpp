// cachestat.cpp — see cachestat.h.
#include "cachestat.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace spillway {

int cachestat(int fd, const CachestatRange &range, Cachestat &out) {
    CachestatRange r = range;
    return (int)syscall(kSysCachestat, fd, &r, &out, 0);
}

} // namespace spillway
