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

// Whether asking fd's filesystem costs about one extent walk: ext4 and XFS.
// Not btrfs: with the scattered dirty pages of a random writer over its
// fallocated extents, its FIEMAP walks delayed allocation and the ordered
// extents range by range (btrfs_count_range_bits, btrfs_find_delalloc_in_range):
// a promotion of 64 MiB that xz -9 wrote at random spent 30 s of CPU in it,
// every access to the region waiting (tests/programs/real_programs.sh timed
// out). Elsewhere a caller plans as if every page held data.
bool extents_cheap_to_ask(int fd);
// For tests: answer false everywhere (the plan without extents, on ext4).
void extents_assume_costly_for_tests(bool costly);

} // namespace spillway
