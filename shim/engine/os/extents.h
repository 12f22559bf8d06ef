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

struct fiemap; // <linux/fiemap.h>

namespace spillway {

struct Extent {
    size_t off = 0, len = 0; // relative to the range asked, clipped to it
};

// The extents of fd's [at, at+n) that hold data on disk (written, or
// delayed-allocation), sorted, into out. False when the filesystem cannot
// say (no FIEMAP, or an answer that does not move past where it was asked).
bool written_extents(int fd, uint64_t at, size_t n, std::vector<Extent> &out);

// Whether asking fd's filesystem costs about one extent walk: ext4 and XFS.
// Not btrfs: asked from an offset in a fallocated file dirtied at random
// while its writeback runs, its FIEMAP answered with 128 extents that all
// ended at that offset (asked from page 16256: pages 15992 to 16256), so a
// walk asked the same again until the writeback moved on: a promotion of
// the 64 MiB table xz -9 wrote at random spent 30.2 s of CPU there, every
// access to the table waiting (tests/programs/real_programs.sh timed out).
// written_extents now stops such a walk (false: cannot tell), and btrfs
// answers dirty pages over fallocated extents as data anyway. Elsewhere a
// caller plans as if every page held data.
bool extents_cheap_to_ask(int fd);
// For tests: answer false everywhere (the plan without extents, on ext4).
void extents_assume_costly_for_tests(bool costly);
// For tests: written_extents asks answer instead of the FS_IOC_FIEMAP ioctl
// (an answer no filesystem here gives on demand, as btrfs's that does not
// move forward); nullptr asks the filesystem again.
using FiemapAnswer = int (*)(int fd, struct fiemap *request);
void extents_answer_with_for_tests(FiemapAnswer answer);

} // namespace spillway
