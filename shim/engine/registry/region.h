// region.h — what the shim knows about one large allocation, and the
// registry of live regions.
//
// Invariants:
//  * A Region is filled in by the thread that creates it before anyone else
//    can see it (large.h region_record); it is linked into the registry and
//    published in the arena only while holding the large lock
//    (large_lock()), and unlinked, unpublished and deleted only while
//    holding it. Its mutable fields are written under that lock, or are
//    atomics (below).
//  * The arena slot table points at a region only while it is fully mapped;
//    free() claims a region by setting Region::freed (an exchange: a second
//    free of the same pointer finds it set and is reported); the slot is
//    cleared when the region is retired. The recycle cache (recycle.h) may
//    instead hand a freed region to a new owner, clearing freed under the
//    large lock.
//  * Region objects come from mimalloc directly (mi_*), never from the
//    interposed malloc, so the large path cannot recurse into itself.
#pragma once

#include "registry/placement.h"

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <mutex>

namespace spillway {

struct CallSite;

struct Region {
    uintptr_t start = 0;
    size_t size = 0;    // bytes the caller asked for
    size_t map_len = 0; // bytes mapped (page multiple); malloc_usable_size
    size_t va_len = 0;  // bytes of arena held (granule multiple)
    Backing backing = Backing::none;
    SpillFile *file = nullptr; // disk and memory backings
    uint64_t file_off = 0;
    // A pool range this region was moved away from (rehome.cpp). It stays
    // reserved until the region is retired: punching it can take tens of
    // seconds (ext4 discarding 128 MiB took 40 s, measured) and must be done
    // before the region's addresses, which name that range, are reused.
    SpillFile *left_pool = nullptr;
    uint64_t left_pool_off = 0;
    size_t left_pool_len = 0;
    // The fork generation whose children may still map left_pool's range
    // (a snapshot moved to a file of its own, rehome_spill_snapshot): the
    // retirement waits for them as for snapshot_gen. 0: none.
    uint64_t left_gen = 0;
    // A fork snapshot of it once had to move to disk under memory pressure
    // (rehome_spill_snapshot): this process forks while it writes the
    // region, so a promotion needs room for its copies too (tiering.h).
    bool snapshot_spilled = false;
    // The parent wrote at least kForkWrittenMin of it while a fork's
    // children kept a snapshot (found when it was shared again): the same
    // rule for promotions, before any pressure (a promoted region the next
    // fork freezes in memory is memfd the children keep, unreclaimable).
    bool fork_written = false;
    CallSite *site = nullptr;
    bool is_private = false; // mapped MAP_PRIVATE (a fork child's view, or a parent's snapshot): never write back
    // The fork generation at which the parent made this region private
    // (large/fork_snapshot.h): its file is frozen until no child of that
    // generation or a later one is left. 0: not a parent's snapshot.
    uint64_t snapshot_gen = 0;
    // The madvise advice in force (MADV_NORMAL == 0). Atomic: the detector
    // re-advises under the large lock while spillway_spill re-applies it after
    // a move without that lock; either value is a valid advice.
    std::atomic<int> advice{0};
    bool advice_pinned = false; // set at creation: a flag or rule named the access (policy.h)
    // A block zone's chunk (kFlagObjectBlocks: CPython's object arenas): it
    // has no call site, and the detector chains the chunks as one site's
    // buffers (a pass over a list's objects crosses one every 32 MiB).
    bool object_blocks = false;
    std::atomic<uint8_t> phase{0};           // detector's verdict: 0 undecided, 1 sequential, 2 random
    std::atomic<uint64_t> phase_since_ns{0}; // CLOCK_MONOTONIC when that verdict began
    std::atomic<uint32_t> fault_rate{0};     // pages newly faulted in per second over the last tick
    std::atomic<bool> moving{false}; // a move (rehome.h) is under way or being checked: probes keep off
    std::atomic<uint32_t> pins{0}; // threads resizing or retiring it: the tiering mover keeps off
    uint64_t born_ns = 0; // CLOCK_MONOTONIC at allocation: the sampler waits a little
    // Taken over from the recycle cache: pages mapped before born_ns may be
    // the last owner's, so the sampler's first look is no evidence of access.
    bool reused = false;
    std::atomic<bool> freed{false};  // set once by free(): a second free is reported
    // Aware code released its page cache (spillway_release_page_cache): it
    // manages the cache itself, so the detector no longer reads it ahead.
    std::atomic<bool> cache_managed{false};
    Region *prev = nullptr, *next = nullptr; // registry (live list)
    Region *queue_next = nullptr;             // reaper queue
};

// A region's placement as one value, and storing the one a backing returned.
inline Placement placement_of(const Region *r) { return {r->backing, r->file, r->file_off}; }
inline void set_placement(Region *r, const Placement &p) {
    r->backing = p.backing;
    r->file = p.file;
    r->file_off = p.file_off;
}

// Sets r's madvise advice (MADV_NORMAL / SEQUENTIAL / RANDOM) if it changed;
// anonymous regions keep the kernel's default. Advice is part of placement:
// readahead is 8 MiB on the spill disk here.
void advise_region(Region *r, int advice);

// True while fork's prepare turns the parent's shared regions private
// (large/fork_snapshot.h). A pin (tiering/rehome.h) is not taken meanwhile,
// so no resize starts on a region being remapped; prepare leaves a region
// pinned before it alone. seq_cst against Region::pins.
extern std::atomic<bool> g_fork_privatising;

// The large-path lock: arena space, the live list, file bookkeeping.
std::mutex &large_lock();
// Fork child (fork_safety.cpp's sequence): the large lock, re-initialised
// (whoever held it is gone, or is the forking thread, frozen).
void registry_after_fork_child();

void registry_link(Region *r);   // caller holds large_lock
void registry_unlink(Region *r); // caller holds large_lock
Region *registry_first();        // caller holds large_lock; walk with ->next
size_t registry_count();

Region *region_new();
void region_delete(Region *r);

} // namespace spillway
