// zero_extents.h — dirty pages of a disk region that hold only zeros are not
// written back: their range of the file becomes unwritten extents again
// (os/zero_range.h says why and how).
//
// Measured (tests/bench/zero_fill.c, a 488 MiB region zeroed and then
// filled in a 384 MiB cgroup): the zeros cost 450-570 MiB more read, 488 MiB
// more written and 0.9-2.0 s against the same fill unzeroed; kernel swap
// keeps an all-zero page in a bitmap instead of writing it (Linux 6.12+).
//
// Method: the writeback pass (writeback.h), before it asks the kernel to
// write, looks at each disk region's file range in units of kUnit: a unit
// with a dirty page, every page in page cache and only zeros (read from
// the page cache, never the disk) is a candidate. Consecutive candidates,
// up to kMaxRun, are checked again and zeroed while the region is held as
// a move holds it (rehome.h hold_region_for) and the range maps the file
// nowhere (move_tracked.h TrackedMover::zero_units): a store that came
// after the first check waits, and the second check sees the bytes every
// earlier store left.
//
// Invariants: no store is ever lost, and nothing is zeroed that the check
// did not read as zero under the hold; without userfaultfd for kernel
// faults (uffd.h Level::full) nothing is zeroed; only on ext4, the one
// filesystem whose zero_range keeps the blocks reserved (os/zero_range.h),
// and only over extents never written (a unit whose zeros were written back
// and dirtied again is written again); a unit with a
// page not in page cache is left to writeback (its bytes on disk are not
// known without reading them); a thread blocked in an O_DIRECT read into
// the run makes it wait for the next pass (the device would write into
// pages the zeroing dropped).
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

struct Region;

constexpr size_t kZeroUnit = size_t(2) << 20;
constexpr size_t kZeroMaxRun = size_t(16) << 20; // an access waits for at most one run's check and zeroing

// A disk region as a writeback pass snapshotted it: r is compared under the
// large lock before use, never dereferenced otherwise; fd is a descriptor
// of its file (the pass's dup), mapped at [start, start+len) from file_off.
struct ZeroCandidate {
    Region *r;
    uintptr_t start;
    size_t len;
    int fd;
    uint64_t file_off;
};

// Makes the dirty all-zero units of the given regions unwritten extents.
// Returns the bytes zeroed, counted in the exit stats (stats_on_zeroed)
// run by run.
uint64_t zero_dirty_units(const ZeroCandidate *regions, unsigned n);

void zero_extents_after_fork_child();

// For tests: forget that this process could not zero (no userfaultfd, a
// filesystem without the call).
void zero_extents_forget();

} // namespace spillway
