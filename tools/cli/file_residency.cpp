// file_residency.cpp — see file_residency.h.
#include "file_residency.h"

#include "cachestat.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace spillway::cli {

namespace {

bool by_cachestat(int fd, Residency &r, int &err) {
    CachestatRange range{0, 0}; // len 0: from off to the end of the file
    Cachestat cs{};
    if (cachestat(fd, range, cs) != 0) {
        err = errno;
        return false;
    }
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    r.known = r.dirty_known = true;
    r.resident = cs.nr_cache * page;
    r.dirty = cs.nr_dirty * page;
    r.method = "cachestat";
    return true;
}

void by_mincore(int fd, uint64_t size, Residency &r) {
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    // A window at a time, so a huge file never needs a huge mapping.
    constexpr uint64_t kWindow = 1ull << 30;
    std::vector<unsigned char> vec(kWindow / page);
    uint64_t resident_pages = 0;
    for (uint64_t off = 0; off < size; off += kWindow) {
        uint64_t len = size - off < kWindow ? size - off : kWindow;
        void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, (off_t)off);
        if (m == MAP_FAILED) {
            r.error = std::string("cannot map it to measure (") + strerror(errno) + ")";
            return;
        }
        int rc = mincore(m, len, vec.data());
        int err = errno;
        munmap(m, len);
        if (rc != 0) {
            r.error = std::string("mincore failed (") + strerror(err) + ")";
            return;
        }
        uint64_t pages = (len + page - 1) / page;
        for (uint64_t i = 0; i < pages; i++) resident_pages += vec[i] & 1;
    }
    r.known = true;
    r.resident = resident_pages * page;
    r.method = "mincore";
}

} // namespace

Residency measure_residency(int fd, uint64_t size, ResidencyMethod method) {
    Residency r;
    int err = 0;
    if (method == ResidencyMethod::best && by_cachestat(fd, r, err)) return r;
    if (size == 0) {
        r.known = true;
        r.method = "empty";
        return r;
    }
    by_mincore(fd, size, r);
    return r;
}

} // namespace spillway::cli
