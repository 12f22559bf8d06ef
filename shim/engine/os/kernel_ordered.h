// kernel_ordered.h — marks what a move does to a live region's bytes while
// the program may be using them: the copy, and the swap of the mapping.
//
// What makes a move safe against the program's stores is the kernel, not a
// lock: userfaultfd's write-protect tracking re-copies every page written
// during the copy and holds accesses during the swap (move_tracked.h), or
// the region is read-only and writers wait in the fault handler (rehome.h).
// ThreadSanitizer cannot see either. It reports every byte a copy reads as
// a race with the writers (building those reports for 16 MiB pwrites made a
// 0.35 s unit test take 341 s), and a MAP_FIXED mmap as a write of the
// whole range. In a -fsanitize=thread build, a KernelOrdered scope hides
// the moving thread's own accesses from TSan (the program's threads are
// still checked against each other); in every other build it is empty.
//
// Invariant: a KernelOrdered scope holds only the copy of region bytes or
// the swap of their mapping; bookkeeping (locks, the registry, a region's
// fields) stays outside, so TSan keeps checking it.
#pragma once

#include <cstddef>
#include <sys/mman.h>
#include <sys/types.h>

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin(void);
extern "C" void __tsan_ignore_thread_end(void);
#endif

namespace spillway {

struct KernelOrdered {
#if defined(__SANITIZE_THREAD__)
    KernelOrdered() { __tsan_ignore_thread_begin(); }
    ~KernelOrdered() { __tsan_ignore_thread_end(); }
#else
    KernelOrdered() {} // user-provided: a scope that only marks is not an "unused variable"
#endif
    KernelOrdered(const KernelOrdered &) = delete;
    KernelOrdered &operator=(const KernelOrdered &) = delete;
};

// The swap: [at, at+len) of a live region mapped shared from fd at off, in
// place. MAP_FAILED (errno set) on failure, as mmap.
inline void *map_region_in_place(void *at, size_t len, int fd, off_t off) {
    KernelOrdered quiet;
    return mmap(at, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off);
}

} // namespace spillway
