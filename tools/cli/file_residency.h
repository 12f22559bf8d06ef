// file_residency.h — how much of a file is in the page cache, measured.
//
// Invariant: residency is measured, never assumed: cachestat(2) (Linux
// 6.5+, syscall 451) answers from the page cache's own counters and also
// knows the dirty pages; where it is missing (ENOSYS) a read-only mapping
// and mincore(2) count resident pages. Neither faults a page in.
#pragma once

#include <cstdint>
#include <string>

namespace spillway::cli {

struct Residency {
    bool known = false;
    uint64_t resident = 0;   // bytes in the page cache
    bool dirty_known = false;
    uint64_t dirty = 0;      // bytes not yet written back (cachestat only)
    const char *method = ""; // "cachestat" or "mincore"
    std::string error;       // when !known
};

enum class ResidencyMethod { best, mincore_only };

// fd must be readable; size is the file's size in bytes.
Residency measure_residency(int fd, uint64_t size, ResidencyMethod method = ResidencyMethod::best);

} // namespace spillway::cli
