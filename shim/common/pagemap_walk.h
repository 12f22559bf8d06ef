// pagemap_walk.h — one walk over a range with the PAGEMAP_SCAN ioctl
// (pagemap_scan.h): ask, hand each returned run of pages to the caller,
// resume at walk_end, until the range is done.
//
// Why one copy: the kernel answers at most vec_len runs per call and says
// where it stopped (walk_end), so every caller needs the same loop around
// the ioctl; the engine's access detector, its userfaultfd scan and the
// `spillway` tool each had their own, and a mistake in one (resuming at
// the wrong place, looping forever when the kernel makes no progress)
// would have been fixed in one only.
//
// Invariant: header only, libc only, and no allocation: the caller gives
// the buffer the kernel fills (the engine's sampler calls this inside the
// shim, where an allocation could recurse into malloc). Runs reach the
// caller in address order, each at most once.
#pragma once

#include "pagemap_scan.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sys/ioctl.h>

namespace spillway::pagemap {

// What to ask of the kernel: the range [start, end) (page-aligned), which
// pages to return (category_mask: all of these categories; anyof_mask: at
// least one of these, unless 0), which categories to report on each run
// (return_mask), and PM_SCAN_* flags.
struct ScanRequest {
    uint64_t start = 0, end = 0;
    uint64_t category_mask = 0, return_mask = 0, anyof_mask = 0;
    uint64_t flags = 0;
};

// Pages in one run.
inline uint64_t run_pages(const PageRegion &run) { return (run.end - run.start) / 4096; }

// Walks the request with `buffer` (room for `capacity` runs, reused by
// each ioctl) and calls on_run(const PageRegion &) for every run; on_run
// returns false to end the walk there (its caller's list is full).
// Returns 0 when the range was walked or on_run ended it, else -errno
// (errno set too): ENOTTY or EINVAL is a kernel without PAGEMAP_SCAN
// (before 6.7), EIO a kernel that made no progress (never looped on).
template <typename OnRun>
int walk_runs(int pagemap_fd, const ScanRequest &request, PageRegion *buffer, uint64_t capacity, OnRun &&on_run) {
    for (uint64_t at = request.start; at < request.end;) {
        ScanArg arg;
        memset(&arg, 0, sizeof arg);
        arg.size = sizeof arg;
        arg.flags = request.flags;
        arg.start = at;
        arg.end = request.end;
        arg.vec = (uint64_t)(uintptr_t)buffer;
        arg.vec_len = capacity;
        arg.category_mask = request.category_mask;
        arg.category_anyof_mask = request.anyof_mask;
        arg.return_mask = request.return_mask;
        long got = ioctl(pagemap_fd, kScanIoctl, &arg);
        if (got < 0) return -errno;
        for (long i = 0; i < got; i++) {
            const PageRegion &run = buffer[i];
            if (!on_run(run)) return 0;
        }
        if (arg.walk_end <= at) {
            errno = EIO;
            return -EIO;
        }
        at = arg.walk_end;
    }
    return 0;
}

// Whether a walk's error means the ioctl is missing (a kernel before 6.7),
// so the caller should read pagemap's 8-byte entries instead.
inline bool scan_missing(int walk_result) { return walk_result == -ENOTTY || walk_result == -EINVAL; }

} // namespace spillway::pagemap
