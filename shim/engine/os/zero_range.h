// zero_range.h — what the page cache says about a file range's zeros, and
// making a range zero without writing it.
//
// Why: a program that zeroes a buffer it is about to fill (XGBoost's
// DMatrix: `data_.resize(n)` value-initialises 488 MiB) dirties every page
// of a disk region with zeros. Written back, they turn the file's unwritten
// extents into written ones, and the next store into each evicted page reads
// it from disk first, only to overwrite it (tests/bench/JOBS.md, "The DMatrix
// phase"). FALLOC_FL_ZERO_RANGE instead turns the range back into unwritten
// extents: the blocks stay reserved (a full disk still cannot raise SIGBUS),
// the pages leave the page cache unwritten (ext4; XFS and btrfs write them
// first), and the next store maps a zero page without a read.
//
// Invariant: neither changes a byte of what the file reads as; cached_zero
// reads only pages it found in page cache.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

// Whether every page of fd's [off, off+len) is in page cache and holds only
// zeros: 1 yes, 0 no (a page not cached, a byte not zero, the kernel would
// have to wait), -errno when the file cannot be asked (-EOPNOTSUPP: tmpfs
// has no RWF_NOWAIT reads; -ENOSYS: no cachestat(2), before Linux 6.5).
// Each step is read only after cachestat(2) found all of its pages cached;
// a read of a page not cached would start read-ahead (RWF_NOWAIT does not
// prevent it: it reads a hole's zeros into the page cache, and starts I/O
// for data), so the disk is read only when a page is evicted between the
// two calls, and then at most the kernel's first read-ahead window. Reads
// through scratch (kZeroScratch bytes, 8-aligned: the caller's, since
// engine threads have small stacks and no allocation may happen here).
constexpr size_t kZeroScratch = size_t(64) << 10;
int cached_zero(int fd, uint64_t off, size_t len, unsigned char *scratch);

// fallocate(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE): 0, or -errno
// (-EOPNOTSUPP: the filesystem has no such call, tmpfs for one).
// Safe for the caller's bytes only where zero_range_keeps_reservation, and
// over extents that hold no data on disk (os/extents.h), or whose data on
// disk is what the page cache holds: ext4 drops the range's pages first and
// converts its extents after, and a conversion that fails (a written
// extent split on a full disk) would leave the old bytes on disk readable.
int zero_range(int fd, uint64_t off, size_t len);

// Whether fd's filesystem keeps a range's blocks through zero_range: ext4
// converts the extents in place. XFS punches the range and allocates it
// again (a full disk in between leaves a hole, and a store into a hole of
// a shared mapping on a full disk raises SIGBUS: the reservation was the
// point); btrfs copies on write; tmpfs has no such call. Overlay answers
// for itself, not for the filesystem under it: no.
bool zero_range_keeps_reservation(int fd);

} // namespace spillway
