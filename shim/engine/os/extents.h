// extents.h — which parts of a file range hold data on disk (FIEMAP).
//
// Why: an extent allocated by fallocate(2) and never written back is
// "unwritten": it reads as zeros without a disk read. A promotion copies a
// page of it by skipping it (rehome.h plan_disk_copy); the writeback pass
// zeroes a range in place only over such extents (zero_range.h).
//
// Invariant: never FIEMAP_FLAG_SYNC (it writes dirty pages back: exactly
// the cost both callers avoid); the answer is the filesystem's at the time
// of the call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace spillway {

struct Extent {
    size_t off = 0, len = 0; // relative to the range asked, clipped to it
};

// The extents of fd's [at, at+n) that hold data on disk (written, or
// delayed-allocation), sorted, into out. False when the filesystem cannot
// say (no FIEMAP).
bool written_extents(int fd, uint64_t at, size_t n, std::vector<Extent> &out);

} // namespace spillway
