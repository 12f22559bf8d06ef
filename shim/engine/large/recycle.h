// recycle.h — freed regions kept mapped for a moment, so that an allocation
// of the same size takes one over instead of mapping a new range.
//
// Why: a job that allocates, fills and frees the same large temporaries in a
// loop (numpy's `a = b * 2`) paid, for each cycle, a fresh mapping whose
// every page faulted in again (tens of microseconds per 4 KiB fault on this
// VM), a punch and a re-reservation: a 16 MiB cycle took ~100 ms under the
// shim against under 1 ms with bare mimalloc, which keeps its memory mapped.
//
// Invariants:
//  * Only disk regions of this process's own files are kept (page cache:
//    reclaimable under the memory limit, so keeping one cannot get the job
//    killed), never a private (fork child) mapping, a region over a named
//    file, or one a move left a pool range behind; at most kRecycleSlots
//    regions and kRecycleMaxBytes together (an eighth of the cgroup's
//    memory limit if that is less), each for at most kRecycleIdleNs after
//    its free.
//  * A cached region stays registered and published, with freed set: a
//    second free of its pointer is still reported, and every background
//    thread skips it as it skips any freed region. Cache state is guarded
//    by the large lock; recycle_take hands a region to exactly one caller,
//    who clears freed under that same lock.
//  * A taken region exposes its last owner's bytes: the large path zeroes
//    it unless the request was a plain malloc (large.h).
//  * Regions leave the cache only to the reaper (reaper_submit), never
//    while the large lock is held; reaper_drain empties the cache first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spillway {

struct Region;

constexpr int kRecycleSlots = 4;
constexpr size_t kRecycleMaxBytes = size_t(512) << 20;
constexpr uint64_t kRecycleIdleNs = 1000000000ull; // 1 s

void recycle_init(); // registers the trim with the reaper
// After free() claimed r (freed set): true if the cache keeps it; false and
// the caller retires it as before.
bool recycle_keep(Region *r);
// Caller holds the large lock: a cached region of exactly map_len bytes
// whose start is aligned to align, removed from the cache, or nullptr.
Region *recycle_take(size_t map_len, size_t align);
// Gives back (to the reaper) the regions idle longer than kRecycleIdleNs,
// or every one when all; returns whether any remain cached.
bool recycle_trim(bool all);
size_t recycle_count();   // regions cached now
uint64_t recycle_reuses(); // allocations served from the cache so far
// For tests: the memory limit that caps the cache is read again at the next
// free (it is read once per process otherwise).
void recycle_read_limit_again_for_tests();
// Fork child (after reaper_after_fork_child): the cached regions are the
// parent's file ranges, now private: retired at once if trusted, else
// forgotten (they stay mapped, as the untrusted child's regions do).
void recycle_after_fork_child(bool trusted);

} // namespace spillway
